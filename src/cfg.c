/* cfg: table-driven configuration keys. */
#include "cfg.h"
#include "buf.h"
#include "httpd.h"
#include "manifest.h"
#include "plan.h"
#include "soldout.h"
#include "pool.h"
#include "inv.h"
#include "rate.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum cfg_kind { CFG_STR, CFG_INT, CFG_BOOL, CFG_LIST, CFG_LEVEL, CFG_FORMAT };

struct cfg_key {
	struct cfg_setting doc;  /* key (dotted path in the file), env, flag, arg, help */
	enum cfg_kind kind;
	size_t offset;
	int lo, hi;         /* CFG_INT range */
};

/* The one table of settings: `run` builds its flags from it, and spotpool(8),
 * spotpool.yaml(5), conf/spotpool.yaml and `run --help` are checked against it
 * (tests/e2e/test_docs.sh). */
#define F(field) offsetof(struct cfg, field)
static const struct cfg_key keys[] = {
	{{"kubeconfig", "KUBECONFIG", "kubeconfig", "FILE",
	  "cluster access; \"\" = $CREDENTIALS_DIRECTORY/kubeconfig, in-cluster service account, ~/.kube/config"},
	 CFG_STR, F(kubeconfig), 0, 0},
	{{"namespaces", "SPOTPOOL_NAMESPACES", "namespace", "NS",
	  "namespaces watched (DNS-1123 labels; flag repeatable, variable comma-separated); empty = all"},
	 CFG_LIST, F(namespaces), 0, 0},
	{{"resyncSeconds", "SPOTPOOL_RESYNC_SECONDS", "resync", "SECONDS",
	  "every pool is looked at again this often (spread over half the period)"},
	 CFG_INT, F(resync_seconds), 1, 86400},
	{{"workers", "SPOTPOOL_WORKERS", "workers", "N", "pools reconciled in parallel"},
	 CFG_INT, F(workers), 1, 64},
	{{"launchGraceSeconds", "SPOTPOOL_LAUNCH_GRACE_SECONDS", "launch-grace", "SECONDS",
	  "how long a launched instance no lookup shows yet still counts as live"},
	 CFG_INT, F(launch_grace_seconds), 1, 3600},
	{{"soldOutSeconds", "SPOTPOOL_SOLD_OUT_SECONDS", "sold-out-seconds", "SECONDS",
	  "how long a sold-out offering (zone, type) is skipped before one probe launch"},
	 CFG_INT, F(sold_out_seconds), 1, 86400},
	{{"clusterName", "SPOTPOOL_CLUSTER_NAME", "cluster-name", "NAME",
	  "this cluster's identity tagged on launches (1-63 of A-Z a-z 0-9 . _ -); \"\" = kube-system UID"},
	 CFG_STR, F(cluster_name), 0, 0},
	{{"cvmEndpoint", "SPOTPOOL_CVM_ENDPOINT", "endpoint", "URL",
	  "CVM API endpoint (http:// or https://); \"\" = https://cvm.<region>.tencentcloudapi.com/"},
	 CFG_STR, F(cvm_endpoint), 0, 0},
	{{"stsEndpoint", "SPOTPOOL_STS_ENDPOINT", "sts-endpoint", "URL",
	  "STS API endpoint, asked which account credentials belong to; \"\" = https://sts.tencentcloudapi.com/"},
	 CFG_STR, F(sts_endpoint), 0, 0},
	{{"credentialsFile", "SPOTPOOL_CREDENTIALS_FILE", "credentials-file", "FILE",
	  "default Tencent Cloud credentials (secretId, secretKey, token) for pools naming no Secret"},
	 CFG_STR, F(credentials_file), 0, 0},
	{{"logFormat", "SPOTPOOL_LOG_FORMAT", "log-format", "FORMAT", "auto, plain, json or journal"},
	 CFG_FORMAT, F(log_format), 0, 0},
	{{"logLevel", "SPOTPOOL_LOG_LEVEL", "log-level", "LEVEL", "error, warn, info or debug"},
	 CFG_LEVEL, F(log_level), 0, 0},
	{{"listenAddress", "SPOTPOOL_LISTEN_ADDRESS", "listen", "HOST:PORT",
	  "/metrics, /healthz, /readyz on IPV4:PORT or [IPV6]:PORT; \"\" = off"},
	 CFG_STR, F(listen_address), 0, 0},
	{{"dryRun", "SPOTPOOL_DRY_RUN", "dry-run", NULL, "plan, log, write status and events; never change the cloud"},
	 CFG_BOOL, F(dry_run), 0, 0},
	{{"nodes.disabled", "SPOTPOOL_NODES_DISABLED", "no-nodes", NULL,
	  "read no Nodes: no node names or Ready in status, no deletion of gone instances' Nodes"},
	 CFG_BOOL, F(nodes_disabled), 0, 0},
	{{"leaderElection.enabled", "SPOTPOOL_LEADER_ELECT", "leader-elect", NULL,
	  "only the holder of a Lease acts (several replicas)"},
	 CFG_BOOL, F(leader_elect), 0, 0},
	{{"leaderElection.leaseName", "SPOTPOOL_LEASE_NAME", "lease-name", "NAME", "name of the Lease"},
	 CFG_STR, F(lease_name), 0, 0},
	{{"leaderElection.leaseNamespace", "SPOTPOOL_LEASE_NAMESPACE", "lease-namespace", "NS",
	  "namespace of the Lease; \"\" = the service account's, else default"},
	 CFG_STR, F(lease_namespace), 0, 0},
	{{"noticesNamespace", "SPOTPOOL_NOTICES_NAMESPACE", "notices-namespace", "NS",
	  "namespace whose SpotNotices count for every pool; \"\" = the service account's in a cluster, else none"},
	 CFG_STR, F(notices_namespace), 0, 0},
	{{"leaderElection.leaseDurationSeconds", NULL, NULL, NULL,
	  "how long a Lease stays valid without renewal"},
	 CFG_INT, F(lease_duration_seconds), 2, 3600},
	{{"leaderElection.renewDeadlineSeconds", NULL, NULL, NULL,
	  "how long the leader tries to renew before it stops acting (below leaseDurationSeconds)"},
	 CFG_INT, F(renew_deadline_seconds), 1, 3600},
	{{"leaderElection.retryPeriodSeconds", NULL, NULL, NULL,
	  "time between attempts to acquire or renew (below renewDeadlineSeconds)"},
	 CFG_INT, F(retry_period_seconds), 1, 600},
	{{"rateLimits.describePerSecond", "SPOTPOOL_RATE_DESCRIBE", "rate-describe", "N",
	  "DescribeInstances calls per second, per credentials and region"},
	 CFG_INT, F(rate_describe_per_second), 1, 1000},
	{{"rateLimits.runPerSecond", "SPOTPOOL_RATE_RUN", "rate-run", "N", "RunInstances calls per second"},
	 CFG_INT, F(rate_run_per_second), 1, 1000},
	{{"rateLimits.terminatePerSecond", "SPOTPOOL_RATE_TERMINATE", "rate-terminate", "N",
	  "TerminateInstances calls per second"},
	 CFG_INT, F(rate_terminate_per_second), 1, 1000},
	{{"rateLimits.followPerMinute", "SPOTPOOL_RATE_FOLLOW", "rate-follow", "N",
	  "DescribeInstancesStatus calls per minute following known instances by ID; 0 = off"},
	 CFG_INT, F(rate_follow_per_minute), 0, 2160},
};
#undef F
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

_Static_assert(N_KEYS <= sizeof(((struct cfg *)0)->sources) / sizeof(char *), "sources too small");

static void *field(struct cfg *c, const struct cfg_key *k)
{
	return (char *)c + k->offset;
}

static void set_source(struct cfg *c, size_t i, const char *source)
{
	free(c->sources[i]);
	c->sources[i] = xstrdup(source);
}

void cfg_defaults(struct cfg *c)
{
	*c = (struct cfg){
		.kubeconfig = xstrdup(""), .resync_seconds = 30, .workers = 2,
		.launch_grace_seconds = PLAN_LAUNCH_GRACE_DEFAULT_SECONDS,
		.sold_out_seconds = SOLDOUT_TTL_DEFAULT_MS / 1000, .cluster_name = xstrdup(""),
		.cvm_endpoint = xstrdup(""), .sts_endpoint = xstrdup(""),
		.credentials_file = xstrdup(""), .log_format = LOG_FMT_AUTO, .log_level = LOG_LVL_INFO,
		.listen_address = xstrdup("127.0.0.1:9464"), .lease_name = xstrdup("spotpool"),
		.lease_namespace = xstrdup(""), .notices_namespace = xstrdup(""), .lease_duration_seconds = 15,
		.renew_deadline_seconds = 10,
		.retry_period_seconds = 2, .rate_describe_per_second = RATE_DEFAULT_DESCRIBE,
		.rate_run_per_second = RATE_DEFAULT_RUN, .rate_terminate_per_second = RATE_DEFAULT_TERMINATE,
		.rate_follow_per_minute = INV_FOLLOW_CALLS_PER_MINUTE,
	};
	for (size_t i = 0; i < N_KEYS; i++)
		c->sources[i] = xstrdup("default");
}

void cfg_free(struct cfg *c)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		if (keys[i].kind == CFG_STR)
			free(*(char **)field(c, &keys[i]));
		free(c->sources[i]);
	}
	strv_clear(&c->namespaces);
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes"))
		*out = true;
	else if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no"))
		*out = false;
	else
		return SP_EINVAL;
	return 0;
}

/* Checks a string value of key k before it is set: what run would refuse later is
 * refused here, so --check-config and run agree and a flag's bad value is a usage error. */
static int check_string(const struct cfg_key *k, const char *value, const char *source, struct sp_error *err)
{
	const char *key = k->doc.key;
	if (!*value)
		return 0;  /* "" means the documented default for every string key */
	if (strcmp(key, "clusterName") == 0 && !cfg_cluster_name_valid(value))
		return sp_fail(err, SP_EINVAL, "%s: clusterName: must be 1 to %d characters of A-Z a-z 0-9 . _ - "
			       "(it is an instance tag value), got \"%.80s\"", source, POOL_CLUSTER_NAME_MAX, value);
	if (strcmp(key, "listenAddress") == 0) {
		struct sp_error e = {0};
		if (httpd_listen_address_check(value, &e) < 0)
			return sp_fail(err, SP_EINVAL, "%s: listenAddress: %s", source, e.msg);
	}
	if ((strcmp(key, "cvmEndpoint") == 0 || strcmp(key, "stsEndpoint") == 0) && strncmp(value, "http://", 7) != 0 &&
	    strncmp(value, "https://", 8) != 0)
		return sp_fail(err, SP_EINVAL, "%s: %s: must be an http:// or https:// URL, got \"%.80s\"",
			       source, key, value);
	if ((strcmp(key, "leaderElection.leaseNamespace") == 0 || strcmp(key, "noticesNamespace") == 0) &&
	    !pool_dns_label_valid(value))
		return sp_fail(err, SP_EINVAL, "%s: %s: must be a namespace name (a DNS-1123 label: 1 to 63 of "
			       "a-z 0-9 -, starting and ending with a letter or digit), got \"%.80s\"", source, key,
			       value);
	return 0;
}

/* Sets key i from text; the message names the source and key. */
static int set_text(struct cfg *c, size_t i, const char *value, const char *source, struct sp_error *err)
{
	const struct cfg_key *k = &keys[i];
	void *f = field(c, k);
	switch (k->kind) {
	case CFG_STR: {
		int r = check_string(k, value, source, err);
		if (r < 0)
			return r;
		free(*(char **)f);
		*(char **)f = xstrdup(value);
		break;
	}
	case CFG_INT: {
		char *end;
		errno = 0;
		long v = strtol(value, &end, 10);
		if (!errno && end != value && *end) {
			/* YAML writes whole numbers as 2.0 or 1e1 too (accepted before the text
			 * was kept for messages): one in range counts. */
			char *d_end;
			double d = strtod(value, &d_end);
			if (!*d_end && isfinite(d) && d == floor(d) && d >= k->lo && d <= k->hi) {
				v = (long)d;
				end = d_end;
			}
		}
		if (errno || end == value || *end || v < k->lo || v > k->hi)
			return sp_fail(err, SP_EINVAL, "%s: %s: must be an integer from %d to %d, got \"%.80s\"",
				       source, k->doc.key, k->lo, k->hi, value);
		*(int *)f = (int)v;
		break;
	}
	case CFG_BOOL:
		if (parse_bool(value, f) < 0)
			return sp_fail(err, SP_EINVAL, "%s: %s: must be true or false, got \"%.40s\"", source,
				       k->doc.key, value);
		break;
	case CFG_LIST: {
		/* On the command line an empty item is a slip, not a request to watch every
		 * namespace (that is leaving the flag out): `--namespace "$NS"` with NS unset. */
		if (source[0] == '-' && (!*value || *value == ',' || strstr(value, ",,") ||
					 value[strlen(value) - 1] == ','))
			return sp_fail(err, SP_EINVAL, "%s: %s: must name a namespace, got an empty value "
				       "(leave the flag out to watch all namespaces)", source, k->doc.key);
		struct strv items = {0};
		char *copy = xstrdup(value), *save = NULL;
		for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
			strv_push(&items, t);
		free(copy);
		for (size_t j = 0; j < items.n; j++) {
			if (pool_dns_label_valid(items.v[j]))
				continue;
			int r = sp_fail(err, SP_EINVAL, "%s: %s: \"%.80s\" is not a namespace name (a DNS-1123 "
					"label: 1 to 63 of a-z 0-9 -, starting and ending with a letter or digit)",
					source, k->doc.key, items.v[j]);
			strv_clear(&items);
			return r;
		}
		strv_clear(f);
		*(struct strv *)f = items;
		break;
	}
	case CFG_LEVEL:
		if (log_parse_level(value, f) < 0)
			return sp_fail(err, SP_EINVAL, "%s: %s: must be error, warn, info or debug, got \"%.40s\"",
				       source, k->doc.key, value);
		break;
	case CFG_FORMAT:
		if (log_parse_format(value, f) < 0)
			return sp_fail(err, SP_EINVAL, "%s: %s: must be auto, plain, json or journal, got \"%.40s\"",
				       source, k->doc.key, value);
		break;
	}
	set_source(c, i, source);
	return 0;
}

int cfg_set(struct cfg *c, const char *key, const char *value, const char *source, struct sp_error *err)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].doc.key, key) == 0)
			return set_text(c, i, value, source, err);
	return sp_fail(err, SP_EINVAL, "%s: unknown configuration key \"%s\"", source, key);
}

/* Turns a typed YAML value into the text set_text() takes, checking its type. */
static int value_text(const struct cfg_key *k, const cJSON *v, char **ret, const char *where,
		      struct sp_error *err)
{
	if (k->kind == CFG_LIST) {
		if (!cJSON_IsArray(v))
			return sp_fail(err, SP_EINVAL, "%s: %s: must be a list of strings", where, k->doc.key);
		struct buf b;
		buf_init(&b, 64 * 1024);
		const cJSON *it;
		cJSON_ArrayForEach(it, v) {
			if (!cJSON_IsString(it) || strpbrk(it->valuestring, ", ")) {
				buf_free(&b);
				return sp_fail(err, SP_EINVAL, "%s: %s: every item must be a namespace name", where,
					       k->doc.key);
			}
			if (buf_printf(&b, "%s%s", b.len ? "," : "", it->valuestring) < 0) {
				buf_free(&b);
				return sp_fail(err, SP_ETOOBIG, "%s: %s: too long", where, k->doc.key);
			}
		}
		*ret = buf_steal(&b);
		return 0;
	}
	if (k->kind == CFG_INT && cJSON_IsNumber(v)) {
		/* As written in the file (manifest.c keeps the text), so errors echo it. */
		*ret = v->valuestring ? xstrdup(v->valuestring) : xasprintf("%.17g", v->valuedouble);
		return 0;
	}
	if (k->kind == CFG_BOOL && cJSON_IsBool(v)) {
		*ret = xstrdup(cJSON_IsTrue(v) ? "true" : "false");
		return 0;
	}
	if (cJSON_IsString(v) && k->kind != CFG_INT && k->kind != CFG_BOOL) {
		*ret = xstrdup(v->valuestring);
		return 0;
	}
	static const char *const want[] = {"a string", "an integer", "true or false", "a list",
					   "a log level", "a log format"};
	return sp_fail(err, SP_EINVAL, "%s: %s: must be %s", where, k->doc.key, want[k->kind]);
}

/* True when path is a section holding keys ("leaderElection", "rateLimits"). */
static bool is_section(const char *path)
{
	size_t n = strlen(path);
	for (size_t i = 0; i < N_KEYS; i++)
		if (strncmp(keys[i].doc.key, path, n) == 0 && keys[i].doc.key[n] == '.')
			return true;
	return false;
}

/* "unknown key" with the nearest known key (or section) as a suggestion. */
static int unknown_key(const char *path, const char *where, struct sp_error *err)
{
	const char *names[N_KEYS + 2];
	size_t n = 0;
	for (size_t i = 0; i < N_KEYS; i++)
		names[n++] = keys[i].doc.key;
	if (!strchr(path, '.')) {
		names[n++] = "leaderElection";
		names[n++] = "rateLimits";
	}
	const char *near = sp_nearest(path, names, n);
	return sp_fail(err, SP_EINVAL, "%s: unknown key \"%.80s\"%s%s%s", where, path,
		       near ? " (did you mean \"" : " (the keys are listed in spotpool.yaml(5))",
		       near ? near : "", near ? "\"?)" : "");
}

static int load_object(struct cfg *c, const struct manifest_doc *doc, const cJSON *obj,
		       const char *prefix, struct sp_error *err)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, obj) {
		char *path = *prefix ? xasprintf("%s.%s", prefix, v->string) : xstrdup(v->string);
		char *where = xasprintf("%s:%d", doc->source, manifest_line_of(doc, path));
		int r = 0;
		if (is_section(path) && cJSON_IsObject(v)) {
			r = load_object(c, doc, v, path, err);
		} else {
			size_t i = 0;
			while (i < N_KEYS && strcmp(keys[i].doc.key, path) != 0)
				i++;
			char *text = NULL;
			if (i == N_KEYS)
				r = unknown_key(path, where, err);
			else if (cJSON_IsNull(v))
				r = 0;  /* "key:" with no value keeps the default */
			else if ((r = value_text(&keys[i], v, &text, where, err)) == 0)
				r = set_text(c, i, text, where, err);
			free(text);
		}
		free(where);
		free(path);
		if (r < 0)
			return r;
	}
	return 0;
}

int cfg_load_file(struct cfg *c, const char *path, struct sp_error *err)
{
	static const char what[] = "a mapping of configuration keys (workers: 2, ...; see spotpool.yaml(5))";
	struct manifest_set set = {0};
	int r = manifest_load_file(path, &set, err);
	const char *got = err ? strstr(err->msg, ": expected a mapping (") : NULL;
	got = got ? strstr(got, "), got ") : NULL;
	if (r == SP_EINVAL && got) {
		char kind[32];
		snprintf(kind, sizeof(kind), "%s", got + 7);
		r = sp_fail(err, SP_EINVAL, "%s: expected %s, got %s", path, what, kind);
	}
	if (r == 0 && set.n > 1)
		r = sp_fail(err, SP_EINVAL, "%s: expected one YAML document (%s), found %zu", path, what, set.n);
	/* An empty file (or only comments) sets nothing: `--config /dev/null` is the way to
	 * say "no file, not even /etc/spotpool/spotpool.yaml". */
	if (r == 0 && set.n == 1)
		r = load_object(c, &set.docs[0], set.docs[0].object, "", err);
	manifest_set_free(&set);
	return r;
}

int cfg_apply_env(struct cfg *c, struct sp_error *err)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const char *v = keys[i].doc.env ? getenv(keys[i].doc.env) : NULL;
		/* Empty means unset, as systemd's Environment=VAR= and an empty ConfigMap key
		 * intend: it must not quietly turn dryRun or leader election off, or widen the
		 * watch to all namespaces, over the file's value. */
		if (!v || !*v)
			continue;
		int r = set_text(c, i, v, keys[i].doc.env, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int cfg_validate(const struct cfg *c, struct sp_error *err)
{
	if (c->leader_elect && !(c->retry_period_seconds < c->renew_deadline_seconds &&
				 c->renew_deadline_seconds < c->lease_duration_seconds))
		return sp_fail(err, SP_EINVAL, "leaderElection: need retryPeriodSeconds (%d) < "
			       "renewDeadlineSeconds (%d) < leaseDurationSeconds (%d)",
			       c->retry_period_seconds, c->renew_deadline_seconds, c->lease_duration_seconds);
	if (c->leader_elect && !*c->lease_name)
		return sp_fail(err, SP_EINVAL, "leaderElection.leaseName: must not be empty");
	if (*c->cluster_name && !cfg_cluster_name_valid(c->cluster_name))
		return sp_fail(err, SP_EINVAL, "%s: clusterName: must be 1 to %d characters of A-Z a-z 0-9 . _ - "
			       "(it is an instance tag value), got \"%.80s\"", cfg_source(c, "clusterName"),
			       POOL_CLUSTER_NAME_MAX, c->cluster_name);
	return 0;
}

char *cfg_default_credentials_path(const struct cfg *c, const char *credentials_directory,
				   bool environment_set, const char *etc_path)
{
	if (*c->credentials_file)
		return xstrdup(c->credentials_file);
	if (credentials_directory) {
		char *path = xasprintf("%s/tencentcloud", credentials_directory);
		if (access(path, F_OK) == 0)
			return path;
		free(path);
		return NULL;
	}
	if (environment_set)
		return NULL;
	return etc_path && access(etc_path, F_OK) == 0 ? xstrdup(etc_path) : NULL;
}

const char *cfg_notices_namespace(const struct cfg *c, const struct kube_config *kube)
{
	if (*c->notices_namespace)
		return c->notices_namespace;
	return kube ? kube->sa_namespace : NULL;
}

bool cfg_cluster_name_valid(const char *s)
{
	size_t n = strlen(s);
	return n >= 1 && n <= POOL_CLUSTER_NAME_MAX &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

const char *cfg_source(const struct cfg *c, const char *key)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].doc.key, key) == 0)
			return c->sources[i];
	return "?";
}

static void print_value(const struct cfg *c, const struct cfg_key *k, FILE *out)
{
	const void *f = (const char *)c + k->offset;
	switch (k->kind) {
	case CFG_STR: fprintf(out, "\"%s\"", *(char *const *)f); break;
	case CFG_INT: fprintf(out, "%d", *(const int *)f); break;
	case CFG_BOOL: fprintf(out, "%s", *(const bool *)f ? "true" : "false"); break;
	case CFG_LEVEL: fprintf(out, "%s", log_level_name(*(const enum log_level *)f)); break;
	case CFG_FORMAT: fprintf(out, "%s", log_format_name(*(const enum log_format *)f)); break;
	case CFG_LIST: {
		const struct strv *l = f;
		fputc('[', out);
		for (size_t i = 0; i < l->n; i++)
			fprintf(out, "%s\"%s\"", i ? ", " : "", l->v[i]);
		fputc(']', out);
		break;
	}
	}
}

void cfg_print(const struct cfg *c, FILE *out)
{
	const char *section = NULL;  /* the key before's, when it was in one */
	for (size_t i = 0; i < N_KEYS; i++) {
		const char *name = keys[i].doc.key;
		const char *dot = strchr(name, '.');
		if (dot && !(section && strncmp(section, name, (size_t)(dot - name + 1)) == 0))
			fprintf(out, "%.*s:\n", (int)(dot - name), name);
		section = dot ? name : NULL;
		fprintf(out, "%s%s: ", dot ? "  " : "", dot ? dot + 1 : name);
		print_value(c, &keys[i], out);
		fprintf(out, "  # %s\n", c->sources[i]);
	}
}

bool cfg_file_private(const char *what, const char *path, char *warn, size_t n)
{
	struct stat st;
	if (!path || !*path || stat(path, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 077))
		return true;
	snprintf(warn, n, "%s %s is %s by group or others (mode %04o); restrict it: chmod 600 %s", what,
		 path, st.st_mode & 044 ? "readable" : "accessible", (unsigned)(st.st_mode & 07777), path);
	return false;
}

const struct cfg_setting *cfg_setting(size_t i)
{
	return i < N_KEYS ? &keys[i].doc : NULL;
}

const struct cfg_setting *cfg_setting_by_flag(const char *flag)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].doc.flag && strcmp(keys[i].doc.flag, flag) == 0)
			return &keys[i].doc;
	return NULL;
}

/* The default of key k as text, and its range or values ("1..64"); caller frees. */
static char *default_text(const struct cfg *d, const struct cfg_key *k)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	if (!f)
		abort();
	print_value(d, k, f);
	fclose(f);
	return text;
}

static char *range_text(const struct cfg_key *k)
{
	static const char *const what[] = {"string", "", "true or false", "list of namespaces",
					   "error, warn, info, debug", "auto, plain, json, journal"};
	return k->kind == CFG_INT ? xasprintf("%d..%d", k->lo, k->hi) : xstrdup(what[k->kind]);
}

/* Writes s escaped for roff: backslashes doubled, '-' as \- (flags are typed). */
static void roff_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

int cfg_print_settings(FILE *out, const char *format, struct sp_error *err)
{
	bool man = strcmp(format, "man") == 0;
	if (!man && strcmp(format, "tsv") != 0)
		return sp_fail(err, SP_EINVAL, "settings table format \"%s\": expected man or tsv", format);
	struct cfg d;
	cfg_defaults(&d);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct cfg_key *k = &keys[i];
		char *def = default_text(&d, k), *range = range_text(k);
		if (!man) {
			fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k->doc.key, k->doc.env ? k->doc.env : "-",
				k->doc.flag ? k->doc.flag : "-", k->doc.arg ? k->doc.arg : "-", def,
				*range ? range : "-", k->doc.help);
		} else {
			fputs(".TP\n.B ", out);
			roff_text(out, k->doc.key);
			fputs("\n", out);
			if (k->doc.flag) {
				fputs("Flag: \\fB\\-\\-", out);
				roff_text(out, k->doc.flag);
				fputs("\\fR", out);
				if (k->doc.arg) {
					fputs(" \\fI", out);
					roff_text(out, k->doc.arg);
					fputs("\\fR", out);
				}
				fputs(".\n", out);
			}
			if (k->doc.env) {
				fputs("Environment: \\fB", out);
				roff_text(out, k->doc.env);
				fputs("\\fR.\n", out);
			}
			if (!k->doc.flag && !k->doc.env)
				fputs("File only.\n", out);
			fputs("Default: ", out);
			roff_text(out, def);
			if (*range) {
				fputs("; ", out);
				roff_text(out, range);
			}
			fputs(".\n.br\n", out);
			/* Capitalised, with a full stop: a sentence. */
			char *help = xstrdup(k->doc.help);
			help[0] = (char)toupper((unsigned char)help[0]);
			roff_text(out, help);
			fputs(".\n", out);
			free(help);
		}
		free(def);
		free(range);
	}
	cfg_free(&d);
	return 0;
}
