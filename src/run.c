/* run: `spotpool run`, the controller daemon: configuration, signals, systemd
 * notification and watchdog, metrics and health, leader election. */
#include "cfg.h"
#include "cli.h"
#include "creds.h"
#include "ctl.h"
#include "http.h"
#include "httpd.h"
#include "kube.h"
#include "lease.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"
#include "rate.h"
#include "stop.h"

#include <getopt.h>
#include <malloc.h>
#include <stdint.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define STATUS_EVERY_MS 5000
#define MAIN_LOOP_STALL_MS 10000
/* The main loop's period until the initial list completes (readiness is noticed within
 * it), then at most MAIN_LOOP_IDLE_MS (the heartbeat) or until the next resync, status
 * or watchdog timer; a stop ends its wait at once. */
#define MAIN_LOOP_TICK_MS 100
#define MAIN_LOOP_IDLE_MS 1000

/* SIGTERM or SIGINT, or an identity refused for good: the main loop wakes at once. */
static struct stop daemon_stop = {.fd = -1};

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_request(&daemon_stop);
	http_abort_all();  /* a hanging CVM call must not hold up the exit */
}

static const char run_usage[] =
	"Usage: spotpool run [OPTIONS]\n"
	"\n"
	"Runs the controller: watches Spotpool resources and keeps each pool's instances\n"
	"between minimum and maximum (or at replicas), refilling reclaimed spot instances.\n"
	"Settings come from flags, then SPOTPOOL_* environment variables, then the\n"
	"configuration file, then defaults; spotpool(8) lists each setting's flag, variable\n"
	"and key, spotpool.yaml(5) the file (see also conf/spotpool.yaml).\n"
	"\n"
	"Options:\n"
	"      --config FILE          configuration file (default " CFG_DEFAULT_PATH " if present)\n"
	"      --check-config         validate and print the effective configuration, then exit\n"
	"      --kubeconfig FILE      cluster access (default: $KUBECONFIG, in-cluster service\n"
	"                             account, or ~/.kube/config)\n"
	"      --endpoint URL         CVM API endpoint (default https://cvm.<region>.tencentcloudapi.com/)\n"
	"      --sts-endpoint URL     STS API endpoint, asked which account credentials belong to\n"
	"                             (default https://sts.tencentcloudapi.com/)\n"
	"      --credentials-file F   YAML with secretId/secretKey[/token] for pools that name none\n"
	"  -n, --namespace NS         watch only NS (repeatable; default: all namespaces)\n"
	"      --resync SECONDS       look at every pool again this often, spread over the first\n"
	"                             half of the period (so within 1.5x SECONDS; default 30)\n"
	"      --workers N            pools reconciled in parallel (default 2)\n"
	"      --launch-grace SECONDS how long a launched instance that no lookup shows yet still\n"
	"                             counts as live before it is taken as never launched (default 60)\n"
	"      --sold-out-seconds SECONDS\n"
	"                             how long an offering (zone, type) that answered \"sold out\" is\n"
	"                             skipped before one probe launch tries it again (default 180;\n"
	"                             --sold-out-ttl is a deprecated alias)\n"
	"      --rate-describe N      DescribeInstances calls per second, per credentials and region\n"
	"                             (default 36: 90% of Tencent's limit of 40)\n"
	"      --rate-run N           RunInstances calls per second (default 9: 90% of 10)\n"
	"      --rate-terminate N     TerminateInstances calls per second (default 9: 90% of 10)\n"
	"      --rate-follow N        DescribeInstancesStatus calls per minute following known\n"
	"                             instances by ID between listings, so a reclaim is noticed\n"
	"                             within 10 s at 10,000 instances (default 600; 0 = off)\n"
	"      --cluster-name NAME    this cluster's identity, tagged on every launch: a pool counts\n"
	"                             only its own cluster's instances (1-63 of A-Z a-z 0-9 . _ -;\n"
	"                             default: the UID of the kube-system namespace, read at start-up)\n"
	"      --dry-run              plan, log, write status and events, never change the cloud\n"
	"      --no-nodes             read no Nodes: no node or ready per instance in status, no\n"
	"                             deletion of gone instances' Nodes (namespaced RBAC without nodes)\n"
	"      --listen HOST:PORT     /metrics, /healthz, /readyz (default 127.0.0.1:9464; \"\" = off)\n"
	"      --leader-elect         only the holder of a Lease acts (for several replicas)\n"
	"      --lease-name NAME      default spotpool\n"
	"      --lease-namespace NS   default: the service account's namespace, else default\n"
	"      --notices-namespace NS SpotNotices there count for every pool (default: the service\n"
	"                             account's namespace in a cluster, else none)\n"
	"      --log-level LEVEL      error, warn, info (default) or debug\n"
	"      --log-format FMT       auto (journal under systemd, else plain), plain, json, journal\n"
	"  -h, --help                 this text\n";

/* State shared with the health endpoints and the leader election thread. */
struct daemon {
	struct cfg cfg;
	struct ctl *ctl;
	struct lease *lease;
	struct kube_client *lease_kube; /* the election thread's */
	atomic_llong heartbeat_ms;
	/* This cluster's identity (ctl_options.cluster_name points here). Until it is known
	 * the controller acts on nothing: it stays inactive, as a standby does. */
	struct kube_config *kube;
	char cluster_name[POOL_CLUSTER_NAME_MAX + 1];
	atomic_bool identified;
	bool identity_failed;         /* a definitive refusal: stop, exit status 3 */
	int64_t next_identity_ms;     /* next attempt while not identified */
	int64_t identity_backoff_ms;
};

static bool daemon_alive(void *ud)
{
	struct daemon *d = ud;
	return sp_mono_ms() - atomic_load(&d->heartbeat_ms) < MAIN_LOOP_STALL_MS && ctl_healthy(d->ctl);
}

static bool daemon_ready(void *ud)
{
	struct daemon *d = ud;
	return daemon_alive(d) && ctl_synced(d->ctl) && (!d->lease || lease_healthy(d->lease)) &&
	       atomic_load(&d->identified);
}

static void on_leadership(void *ud, bool leading)
{
	struct daemon *d = ud;
	if (!leading)
		ctl_set_active_until(d->ctl, 0);
	metrics_set_leader(leading);
}

static void on_lease_renewed(void *ud, int64_t act_until_ms)
{
	struct daemon *d = ud;
	if (!atomic_load(&d->identified))
		return;
	ctl_set_active_until(d->ctl, act_until_ms);
}

struct flag_setting {
	const char *key;
	char *value;
	char source[40];
};

enum { OPT_CONFIG = 1, OPT_CHECK_CONFIG, OPT_SOLD_OUT_TTL, OPT_SETTING = 1000 }; /* above every short option */

/* getopt_long's options: one per setting of the cfg table that has a flag, and the
 * command's own (--config, --check-config, --help, the deprecated --sold-out-ttl). */
static struct option *run_options(void)
{
	size_t n = 0;
	while (cfg_setting(n))
		n++;
	struct option *o = xcalloc(n + 5, sizeof(*o)), *p = o;
	*p++ = (struct option){"config", required_argument, NULL, OPT_CONFIG};
	*p++ = (struct option){"check-config", no_argument, NULL, OPT_CHECK_CONFIG};
	*p++ = (struct option){"sold-out-ttl", required_argument, NULL, OPT_SOLD_OUT_TTL};
	*p++ = (struct option){"help", no_argument, NULL, 'h'};
	for (size_t i = 0; i < n; i++) {
		const struct cfg_setting *s = cfg_setting(i);
		if (s->flag)
			*p++ = (struct option){s->flag, s->arg ? required_argument : no_argument, NULL,
					       OPT_SETTING + (int)i};
	}
	return o;
}

static void add_flag(struct flag_setting **set, size_t *n, const char *key, const char *value,
		     const char *source)
{
	*set = xrealloc(*set, (*n + 1) * sizeof(**set));
	(*set)[*n] = (struct flag_setting){.key = key, .value = xstrdup(value)};
	snprintf((*set)[(*n)++].source, sizeof((*set)->source), "%s", source);
}

/* Flags are collected first and applied last: they win over environment and file.
 * Returns -1 to go on, else the exit status (--help, or a usage error). */
static int parse_flags(int argc, char **argv, struct flag_setting **ret, size_t *ret_n,
		       const char **config, bool *check_only)
{
	struct option *opts = run_options();
	struct flag_setting *set = NULL;
	size_t n = 0;
	struct strv namespaces = {0};
	int c, idx, rc = -1;
	optind = 1;
	opterr = 0;
	while (rc == -1 && (c = getopt_long(argc, argv, ":n:h", opts, &idx)) != -1) {
		if (c == OPT_CONFIG) {
			*config = optarg;
		} else if (c == OPT_CHECK_CONFIG) {
			*check_only = true;
		} else if (c == 'n' || (c >= OPT_SETTING && !strcmp(cfg_setting((size_t)(c - OPT_SETTING))->key,
									  "namespaces"))) {
			strv_push(&namespaces, optarg);
		} else if (c == OPT_SOLD_OUT_TTL) {
			log_warn("--sold-out-ttl is deprecated: use --sold-out-seconds");
			add_flag(&set, &n, "soldOutSeconds", optarg, "--sold-out-ttl");
		} else if (c >= OPT_SETTING) {
			const struct cfg_setting *s = cfg_setting((size_t)(c - OPT_SETTING));
			char source[40];
			snprintf(source, sizeof(source), "--%s", s->flag);
			add_flag(&set, &n, s->key, s->arg ? optarg : "true", source);
		} else if (c == 'h') {
			fputs(run_usage, stdout);
			rc = CLI_OK;
		} else {
			rc = cli_getopt_error("run", run_usage, c, argv, opts);
		}
	}
	if (rc == -1 && optind < argc)
		rc = cli_usage_error("run", run_usage, "unexpected argument \"%s\"", argv[optind]);
	if (namespaces.n) {
		struct buf joined;
		buf_init(&joined, 64 * 1024);
		for (size_t i = 0; i < namespaces.n; i++)
			buf_printf(&joined, "%s%s", i ? "," : "", namespaces.v[i]);
		add_flag(&set, &n, "namespaces", joined.data ? joined.data : "", "--namespace");
		buf_free(&joined);
		strv_clear(&namespaces);
	}
	free(opts);
	*ret = set;
	*ret_n = n;
	return rc;
}

/* Builds the effective configuration; prints the reason and returns false on error. */
static bool load_config(struct cfg *cfg, int argc, char **argv, bool *check_only, int *rc)
{
	struct flag_setting *flags = NULL;
	size_t n = 0;
	const char *config = NULL;
	cfg_defaults(cfg);
	*rc = parse_flags(argc, argv, &flags, &n, &config, check_only);
	struct sp_error err = {0};
	bool go_on = *rc == -1;
	int r = 0;
	if (go_on) {
		bool bad_flag = false;
		if (!config && access(CFG_DEFAULT_PATH, F_OK) == 0)
			config = CFG_DEFAULT_PATH;
		if (config)
			r = cfg_load_file(cfg, config, &err);
		if (r == 0)
			r = cfg_apply_env(cfg, &err);
		for (size_t i = 0; r == 0 && i < n; i++)
			bad_flag = (r = cfg_set(cfg, flags[i].key, flags[i].value, flags[i].source, &err)) < 0;
		if (r == 0)
			r = cfg_validate(cfg, &err);
		/* A flag's bad value is the command line's fault (--workers lots); the file, the
		 * environment and the settings taken together are input. */
		if (bad_flag) {
			*rc = cli_usage_error("run", run_usage, "%s", err.msg);
		} else if (r < 0) {
			fprintf(stderr, "spotpool run: %s\n", err.msg);
			*rc = CLI_EINPUT;
		} else {
			*rc = CLI_OK;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(flags[i].value);
	free(flags);
	return go_on && r == 0 && *rc == CLI_OK;
}

/* Default credentials: the configured file, a systemd credential, the environment, or
 * /etc/spotpool/tencentcloud.yaml outside systemd (cfg_default_credentials_path).
 * The file's path goes to ret_path (NULL: none) for --check-config. */
static int load_default_creds(const struct cfg *cfg, struct creds *out, char **ret_path, struct sp_error *err)
{
	const char *env_id = getenv("TENCENTCLOUD_SECRET_ID"), *env_key = getenv("TENCENTCLOUD_SECRET_KEY");
	char *path = cfg_default_credentials_path(cfg, getenv("CREDENTIALS_DIRECTORY"),
						  env_id && *env_id && env_key && *env_key,
						  CFG_DEFAULT_CREDENTIALS_PATH);
	int r = path ? creds_from_file(out, path, err) : 0;
	/* A file without credentials (the unit's `{}` default) stands for "none installed":
	 * use the environment. */
	if (r == SP_ENOTFOUND && !*cfg->credentials_file)
		r = 0;
	if (r < 0 && path && !*cfg->credentials_file && !getenv("CREDENTIALS_DIRECTORY") && geteuid() != 0)
		sp_error_prefix(err, "default credentials (%s is read when credentialsFile is unset and "
				"systemd passes none; run as root, or set credentialsFile): ", path);
	if (r == 0 && !out->secret_id && creds_from_env(out, NULL) < 0)
		log_info("no default Tencent Cloud credentials: every pool must set spec.credentialsSecretRef");
	if (r == 0 && out->secret_id && strcmp(out->source, "credentials file") == 0)
		*ret_path = path;
	else
		free(path);
	return r;
}

int cli_load_kube(const char *flag, struct kube_config **ret, struct sp_error *err)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	char *systemd_cred = dir ? xasprintf("%s/kubeconfig", dir) : NULL;
	const char *path = flag && *flag ? flag :
			   systemd_cred && access(systemd_cred, R_OK) == 0 ? systemd_cred : NULL;
	int r = kube_config_load(path, ret, err);
	free(systemd_cred);
	return r;
}

/* Without --cluster-name, this cluster's identity is the UID of its kube-system namespace
 * (set once at cluster creation, never reused). One attempt; 0 and the UID in d. */
static int read_cluster_uid(struct daemon *d, struct sp_error *err)
{
	struct kube_client *c = kube_client_new(d->kube, "spotpool/" SPOTPOOL_VERSION);
	kube_client_set_timeout(c, 5000);
	cJSON *ns = NULL;
	int r = kube_get(c, "/api/v1/namespaces/kube-system", &ns, err);
	kube_client_free(c);
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ns, "metadata"), "uid");
	char why[SP_ERROR_MAX];
	if (r == 0 && !(cJSON_IsString(uid) && cfg_cluster_name_valid(uid->valuestring)))
		r = sp_fail(err, SP_EPROTO, "it has no usable metadata.uid");
	if (r == 0) {
		snprintf(d->cluster_name, sizeof(d->cluster_name), "%s", uid->valuestring);
	} else {
		snprintf(why, sizeof(why), "%s%s", r == SP_EFORBIDDEN ? "forbidden (RBAC: get on namespaces, "
			 "resourceNames [kube-system]): " : "", log_redact(err->msg, sizeof(err->msg)));
		sp_fail(err, r, "cannot read this cluster's identity (the UID of the kube-system namespace): %s. "
			"Pass --cluster-name NAME (or SPOTPOOL_CLUSTER_NAME, clusterName), a name unique among "
			"the clusters sharing the cloud account; spotpool never acts without one", why);
	}
	cJSON_Delete(ns);
	return r;
}

/* A refusal that retrying cannot change (RBAC, no such namespace, no UID): stop. An
 * unauthenticated answer or a transient failure is retried: a rotated token or an
 * apiserver back up fixes it, and meanwhile nothing is done. */
static bool identity_refused(int r)
{
	return r == SP_EFORBIDDEN || r == SP_ENOTFOUND || r == SP_EPROTO;
}

/* Gets the identity, from the configuration or the cluster; false: a definitive refusal
 * (logged). Otherwise not identified yet is retried by retry_identity. */
static bool get_identity(struct daemon *d)
{
	struct sp_error err = {0};
	int r = 0;
	if (*d->cfg.cluster_name)
		snprintf(d->cluster_name, sizeof(d->cluster_name), "%s", d->cfg.cluster_name);
	else if ((r = read_cluster_uid(d, &err)) == 0)
		log_info("cluster name %s (the UID of the kube-system namespace)", d->cluster_name);
	if (r == 0) {
		atomic_store(&d->identified, true);
		return true;
	}
	if (identity_refused(r)) {
		log_error("%s", err.msg);
		return false;
	}
	d->identity_backoff_ms = d->identity_backoff_ms ? d->identity_backoff_ms * 2 : 1000;
	if (d->identity_backoff_ms > 5000)
		d->identity_backoff_ms = 5000;
	d->next_identity_ms = sp_mono_ms() + d->identity_backoff_ms;
	log_warn("%s (retrying in %lld s; nothing is done until then)", err.msg,
		 (long long)d->identity_backoff_ms / 1000);
	return true;
}

/* Main loop: while the identity is unknown, try again; once known, the controller acts
 * (at once without leader election, else at the next lease renewal). */
static void retry_identity(struct daemon *d, int64_t now)
{
	if (atomic_load(&d->identified) || now < d->next_identity_ms)
		return;
	if (!get_identity(d)) {
		d->identity_failed = true;
		stop_request(&daemon_stop);
	} else if (atomic_load(&d->identified) && !d->cfg.leader_elect) {
		ctl_set_active_until(d->ctl, INT64_MAX);
	}
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static char *make_identity(void)
{
	return lease_new_identity();
}

static void notify_status(struct daemon *d)
{
	size_t pools, instances;
	ctl_counts(d->ctl, &pools, &instances);
	const char *role = d->cfg.dry_run ? "dry-run" : !d->lease ? "active" :
			   lease_leading(d->lease) ? "leader" : "standby";
	sd_notifyf(0, "STATUS=%zu pool(s), %zu live instance(s), %s", pools, instances, role);
}

/* How long the main loop sleeps once ready: until the first of the n timers is due,
 * at most MAIN_LOOP_IDLE_MS and at least 1 ms. */
static int64_t main_loop_wait_ms(int64_t now, const int64_t *timers, size_t n)
{
	int64_t due = INT64_MAX;
	for (size_t i = 0; i < n; i++)
		due = timers[i] < due ? timers[i] : due;
	int64_t w = due - now;
	return w < 1 ? 1 : w > MAIN_LOOP_IDLE_MS ? MAIN_LOOP_IDLE_MS : w;
}

/* The main loop: resync timer, readiness, status and watchdog pings. */
static void main_loop(struct daemon *d)
{
	uint64_t watchdog_usec = 0;
	bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
	int64_t now = sp_mono_ms();
	int64_t next_resync = now + d->cfg.resync_seconds * 1000LL, next_status = now, next_ping = now;
	bool ready = false;
	int64_t wait_ms = MAIN_LOOP_TICK_MS;
	while (!stop_wait_ms(&daemon_stop, wait_ms)) {
		now = sp_mono_ms();
		atomic_store(&d->heartbeat_ms, now);
		retry_identity(d, now);
		if (!ready && ctl_synced(d->ctl)) {
			ready = true;
			sd_notify(0, "READY=1");
			log_info("initial list complete, ready");
		}
		if (now >= next_resync) {
			/* Spread over half the period: every pool is still looked at within
			 * 1.5 periods, and a thousand pools are not one burst of passes. */
			ctl_resync(d->ctl, d->cfg.resync_seconds * 1000LL / 2);
			next_resync = now + d->cfg.resync_seconds * 1000LL;
			/* Gives back the free pages inside malloc's heaps, not only above their
			 * top (M_TRIM_THRESHOLD): after a mass deletion the freed space is full
			 * of holes between the chunks that stay. 1,000 pools (170 pollers)
			 * created and deleted left 15-16 MiB of private memory (Pss_Anon) where
			 * the idle controller had 3 without it; with it, and nothing of the pools
			 * gone kept (ctl_resync drops their rate buckets just before), within 10%
			 * of the idle figure (tests/e2e/test_churn.sh, BENCHMARKS.md "Churn"). It
			 * took 0.04-2.3 ms (median 0.2) at up to 1,000 pools. */
			malloc_trim(0);
		}
		if (ready && now >= next_status) {
			notify_status(d);
			next_status = now + STATUS_EVERY_MS;
		}
		/* Ping only while healthy: a stuck informer or dead worker lets systemd restart us. */
		if (watchdog && now >= next_ping && daemon_alive(d)) {
			sd_notify(0, "WATCHDOG=1");
			next_ping = now + (int64_t)(watchdog_usec / 2000);
		}
		/* An unhealthy daemon does not ping; it looks again at the tick, so that a
		 * recovery pings at once. */
		const int64_t timers[] = {
			next_resync, next_status,
			!watchdog ? INT64_MAX : next_ping > now ? next_ping : now + MAIN_LOOP_TICK_MS,
			atomic_load(&d->identified) ? INT64_MAX : d->next_identity_ms,
		};
		wait_ms = ready ? main_loop_wait_ms(now, timers, sizeof(timers) / sizeof(timers[0]))
			: MAIN_LOOP_TICK_MS;
	}
}

static int serve(struct daemon *d, struct kube_config *kube, struct creds *defaults, char *identity)
{
	struct cfg *cfg = &d->cfg;
	struct ctl_options opt = {
		.kube = kube, .namespaces = cfg->namespaces, .resync_seconds = cfg->resync_seconds,
		.launch_grace_seconds = cfg->launch_grace_seconds, .cluster_name = d->cluster_name,
		.workers = cfg->workers, .cvm_endpoint = cli_cvm_endpoint(cfg->cvm_endpoint),
		.sts_endpoint = *cfg->sts_endpoint ? cfg->sts_endpoint : NULL,
		.dry_run = cfg->dry_run, .nodes = !cfg->nodes_disabled, .home_namespace = cfg_notices_namespace(cfg, kube),
		.default_creds = defaults, .identity = identity, .hooks = &metrics_ctl_hooks,
		.rate = {.describe_per_second = cfg->rate_describe_per_second, .run_per_second = cfg->rate_run_per_second,
			 .terminate_per_second = cfg->rate_terminate_per_second, .hooks = &metrics_rate_hooks},
		.sold_out_ttl_ms = (int64_t)cfg->sold_out_seconds * 1000,
		.follow_calls_per_minute = cfg->rate_follow_per_minute > 0 ? cfg->rate_follow_per_minute : -1,
	};
	struct sp_error err = {0};
	struct httpd *metrics = NULL;
	struct httpd_health health = {.alive = daemon_alive, .ready = daemon_ready, .userdata = d};
	d->ctl = ctl_new(&opt);
	atomic_store(&d->heartbeat_ms, sp_mono_ms());
	int port = 0, rc = CLI_OK;
	ctl_set_active_until(d->ctl, cfg->leader_elect || !atomic_load(&d->identified) ? 0 : INT64_MAX);
	metrics_set_leader(!cfg->leader_elect);
	/* The controller first: the health endpoints look at it from their own thread. */
	if (ctl_start(d->ctl, &err) < 0) {
		log_error("%s", err.msg);
		rc = CLI_ECLOUD;
		goto out;
	}
	/* An address that cannot be listened on is the configuration's (listenAddress). */
	if (*cfg->listen_address && httpd_serve(cfg->listen_address, &health, &metrics, &port, &err) < 0) {
		log_error("%s", err.msg);
		rc = CLI_EINPUT;
		goto out;
	}
	if (cfg->leader_elect) {
		d->lease_kube = kube_client_new(kube, "spotpool/" SPOTPOOL_VERSION " (leader-election)");
		kube_client_set_timeout(d->lease_kube, lease_request_timeout_ms(cfg->renew_deadline_seconds));
		struct lease_options lo = {
			.api = kube_client_api(d->lease_kube),
			.namespace = *cfg->lease_namespace ? cfg->lease_namespace : kube->namespace,
			.name = cfg->lease_name, .identity = identity,
			.duration_seconds = cfg->lease_duration_seconds,
			.renew_deadline_seconds = cfg->renew_deadline_seconds,
			.retry_period_seconds = cfg->retry_period_seconds, .on_change = on_leadership,
			.on_renew = on_lease_renewed, .userdata = d,
		};
		if (lease_start(&lo, &d->lease, &err) < 0) {
			log_error("%s", err.msg);
			rc = CLI_ECLOUD;
			goto out;
		}
	}
	log_info("spotpool %s started as %s: cluster %s (%s), cloud %s%s%s%s; cluster name %s", SPOTPOOL_VERSION,
		 identity, kube->server, kube->source, opt.cvm_endpoint ? opt.cvm_endpoint : "https://cvm.<region>.tencentcloudapi.com/",
		 cfg->leader_elect ? ", leader election on" : "", metrics ? ", metrics and health on " : "",
		 metrics ? cfg->listen_address : "", *d->cluster_name ? d->cluster_name : "not known yet");
	if (cfg->dry_run)
		log_warn("dry-run: plans are logged and written to status; the cloud is never changed");
	main_loop(d);
	if (d->identity_failed)
		rc = CLI_ECLOUD;
	sd_notify(0, "STOPPING=1");
	log_info("stopping");
out:
	/* Workers finish their passes while still leading; then the lease is released so
	 * a standby takes over at once; the health endpoints go before what they read. */
	ctl_stop(d->ctl);
	lease_stop(d->lease);
	kube_client_free(d->lease_kube);
	httpd_stop(metrics);
	ctl_free(d->ctl);
	metrics_reset();
	return rc;
}

/* Files holding secrets that group or others can read, one warning each. */
static void exposed_files(const struct cfg *cfg, const struct kube_config *kube, struct strv *ret)
{
	const char *what[] = {"credentials file", "kubeconfig"};
	const char *path[] = {cfg->credentials_file, strcmp(kube->source, "in-cluster") ? kube->source : NULL};
	char warn[1024];
	for (size_t i = 0; i < 2; i++)
		if (!cfg_file_private(what[i], path[i], warn, sizeof(warn)))
			strv_push(ret, warn);
}

/* check-config: can the cluster be reached with this configuration, does it accept the
 * credentials, and does it serve the Spotpool API? Writes the OK or FAILED reason. */
static bool check_cluster(struct kube_config *kube, char *msg, size_t n)
{
	struct kube_client *c = kube_client_new(kube, "spotpool/" SPOTPOOL_VERSION " (check-config)");
	kube_client_set_timeout(c, 10000);
	struct sp_error err = {0};
	cJSON *version = NULL, *group = NULL;
	int r = kube_get(c, "/version", &version, &err);
	if (r == 0)
		r = kube_get(c, "/apis/" POOL_API_VERSION, &group, &err);
	if (r == 0) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(version, "gitVersion");
		snprintf(msg, n, "OK (Kubernetes %s, %s served)", cJSON_IsString(v) ? v->valuestring : "?",
			 POOL_API_VERSION);
	} else if (r == SP_ENOTFOUND && version) {
		snprintf(msg, n, "FAILED: the API %s is not served: install the CRD "
			 "(kubectl apply -f crds/spotpool.yaml)", POOL_API_VERSION);
	} else {
		snprintf(msg, n, "FAILED: %s", log_redact(err.msg, sizeof(err.msg)));
	}
	cJSON_Delete(version);
	cJSON_Delete(group);
	kube_client_free(c);
	return r == 0;
}

/* --check-config: the effective configuration, the cluster connection, warnings. */
static int check_config(const struct cfg *cfg, struct kube_config *kube, const struct creds *defaults,
			const char *creds_path)
{
	char cluster[SP_ERROR_MAX + 128];
	bool ok = check_cluster(kube, cluster, sizeof(cluster));
	struct strv warnings = {0};
	exposed_files(cfg, kube, &warnings);
	/* run exits 1 when it cannot listen; a daemon already running holds the port,
	 * so here that is a warning, not a failure. */
	struct sp_error listen_err = {0};
	if (*cfg->listen_address && httpd_listen_try(cfg->listen_address, &listen_err) < 0)
		strv_push(&warnings, listen_err.msg);
	cfg_print(cfg, stdout);
	printf("# cluster: %s (from %s)\n# cluster connection: %s\n# default credentials: %s%s%s%s%s\n",
	       kube->server, kube->source, cluster,
	       defaults->secret_id ? defaults->source : "none (pools must reference a Secret)",
	       creds_path ? " " : "", creds_path ? creds_path : "",
	       defaults->secret_id ? ", secretKey [redacted]" : "", defaults->token ? ", token [redacted]" : "");
	for (size_t i = 0; i < warnings.n; i++)
		printf("# warning: %s\n", warnings.v[i]);
	printf("# configuration is valid%s\n", ok ? "" : ", but the cluster connection FAILED");
	strv_clear(&warnings);
	return ok ? CLI_OK : CLI_ECLOUD;
}

/* A controller runs for months, and its memory at rest should be what its pools need,
 * not the high-water mark of the last burst (a relist, a sweep of 10,000 instances, a
 * scrape). Buffers of 64 KiB and more are mapped and unmapped on their own, freed space
 * above 128 KiB goes back to the system, and two arenas serve every thread (it has a
 * handful and they rarely allocate at once). Before any thread starts. */
static void memory_policy(void)
{
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

int cli_run(int argc, char **argv)
{
	struct daemon d = {0};
	bool check_only = false;
	int rc;
	if (!load_config(&d.cfg, argc, argv, &check_only, &rc)) {
		cfg_free(&d.cfg);
		return rc;
	}
	log_setup(d.cfg.log_format, d.cfg.log_level);
	struct sp_error err = {0};
	struct kube_config *kube = NULL;
	struct creds defaults = {0};
	char *creds_path = NULL;
	if (load_default_creds(&d.cfg, &defaults, &creds_path, &err) < 0 || cli_load_kube(d.cfg.kubeconfig, &kube, &err) < 0) {
		fprintf(stderr, "spotpool run: %s\n", log_redact(err.msg, sizeof(err.msg)));
		rc = CLI_EINPUT;
	} else if (check_only) {
		rc = check_config(&d.cfg, kube, &defaults, creds_path);
	} else {
		struct strv warnings = {0};
		exposed_files(&d.cfg, kube, &warnings);
		for (size_t i = 0; i < warnings.n; i++)
			log_warn("%s", warnings.v[i]);
		strv_clear(&warnings);
		stop_init(&daemon_stop);
		install_signals();
		memory_policy();
		char *identity = make_identity();
		d.kube = kube;
		kube->hooks = metrics_kube_hooks;  /* before the first request (get_identity) */
		rc = get_identity(&d) ? serve(&d, kube, &defaults, identity) : CLI_ECLOUD;
		free(identity);
		stop_destroy(&daemon_stop);  /* a signal from now on only sets its flag */
	}
	free(creds_path);
	kube_config_free(kube);
	creds_clear(&defaults);
	cfg_free(&d.cfg);
	return rc;
}
