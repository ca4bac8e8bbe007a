/* run: `spotpool run`: the controller process. */
#include "cli.h"
#include "creds.h"
#include "ctl.h"
#include "kube.h"
#include "log.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static const char run_usage[] =
	"Usage: spotpool run [OPTIONS]\n"
	"\n"
	"Runs the controller: watches Spotpool resources and keeps each pool's instances\n"
	"between minimum and maximum (or at replicas), refilling reclaimed spot instances.\n"
	"\n"
	"Options:\n"
	"      --kubeconfig FILE   cluster access (default: $KUBECONFIG, in-cluster service\n"
	"                          account, or ~/.kube/config)\n"
	"      --endpoint URL      CVM API endpoint (default https://cvm.<region>.tencentcloudapi.com/,\n"
	"                          or $SPOTPOOL_CVM_ENDPOINT)\n"
	"  -n, --namespace NS      watch only NS (repeatable; default: all namespaces)\n"
	"      --resync SECONDS    look at every pool at least this often (default 30)\n"
	"      --workers N         pools reconciled in parallel (default 2)\n"
	"      --dry-run           plan, log, write status and events, never change the cloud\n"
	"      --log-level LEVEL   error, warn, info (default) or debug\n"
	"      --log-format FMT    auto (default), plain, json or journal\n"
	"  -h, --help              this text\n"
	"\n"
	"Credentials for pools without spec.credentialsSecretRef: TENCENTCLOUD_SECRET_ID,\n"
	"TENCENTCLOUD_SECRET_KEY, optional TENCENTCLOUD_SESSION_TOKEN.\n";

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
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	return xasprintf("%s_%ld", host, (long)getpid());
}

int cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"kubeconfig", required_argument, NULL, 'k'}, {"endpoint", required_argument, NULL, 'E'},
		{"namespace", required_argument, NULL, 'n'}, {"resync", required_argument, NULL, 'r'},
		{"workers", required_argument, NULL, 'w'}, {"dry-run", no_argument, NULL, 'd'},
		{"log-level", required_argument, NULL, 'L'}, {"log-format", required_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'}, {0},
	};
	const char *kubeconfig = NULL, *endpoint = NULL;
	struct ctl_options opt = {.resync_seconds = 30, .workers = 2};
	enum log_level level = LOG_LVL_INFO;
	enum log_format format = LOG_FMT_AUTO;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		char *end = NULL;
		switch (c) {
		case 'k': kubeconfig = optarg; break;
		case 'E': endpoint = optarg; break;
		case 'n': strv_push(&opt.namespaces, optarg); break;
		case 'r': opt.resync_seconds = (int)strtol(optarg, &end, 10); break;
		case 'w': opt.workers = (int)strtol(optarg, &end, 10); break;
		case 'd': opt.dry_run = true; break;
		case 'L':
			if (log_parse_level(optarg, &level) < 0) {
				fprintf(stderr, "spotpool run: --log-level: unknown level \"%s\"\n", optarg);
				return CLI_EUSAGE;
			}
			break;
		case 'F':
			if (log_parse_format(optarg, &format) < 0) {
				fprintf(stderr, "spotpool run: --log-format: unknown format \"%s\"\n", optarg);
				return CLI_EUSAGE;
			}
			break;
		case 'h': fputs(run_usage, stdout); strv_clear(&opt.namespaces); return CLI_OK;
		default: fputs(run_usage, stderr); strv_clear(&opt.namespaces); return CLI_EUSAGE;
		}
		if (end && *end) {
			fprintf(stderr, "spotpool run: --%s: \"%s\" is not a number\n",
				c == 'r' ? "resync" : "workers", optarg);
			strv_clear(&opt.namespaces);
			return CLI_EUSAGE;
		}
	}
	if (optind < argc || opt.resync_seconds < 1 || opt.workers < 1 || opt.workers > 64) {
		fprintf(stderr, "spotpool run: %s\n", optind < argc ? "unexpected argument" :
			opt.resync_seconds < 1 ? "--resync must be at least 1 second" : "--workers must be 1..64");
		strv_clear(&opt.namespaces);
		return CLI_EUSAGE;
	}
	log_setup(format, level);

	struct sp_error err = {0};
	struct kube_config *kube = NULL;
	if (kube_config_load(kubeconfig, &kube, &err) < 0) {
		log_error("%s", err.msg);
		strv_clear(&opt.namespaces);
		return CLI_EUSAGE;
	}
	struct creds defaults = {0};
	if (creds_from_env(&defaults, NULL) < 0)
		log_info("no TENCENTCLOUD_SECRET_ID/KEY in the environment: pools must reference a Secret");
	char *identity = make_identity();
	opt.kube = kube;
	opt.cvm_endpoint = cli_cvm_endpoint(endpoint);
	opt.default_creds = &defaults;
	opt.identity = identity;

	install_signals();
	struct ctl *ctl = ctl_new(&opt);
	int rc = CLI_OK;
	if (ctl_start(ctl, &err) < 0) {
		log_error("%s", err.msg);
		rc = CLI_ECLOUD;
	} else {
		log_info("spotpool %s started as %s: cluster %s (%s), cloud %s%s", SPOTPOOL_VERSION, identity,
			 kube->server, kube->source, opt.cvm_endpoint ? opt.cvm_endpoint : "https://cvm.<region>.tencentcloudapi.com/",
			 opt.dry_run ? ", dry-run: the cloud is never changed" : "");
		int64_t next_resync = sp_mono_ms() + opt.resync_seconds * 1000LL;
		while (!stop_requested) {
			struct timespec ts = {0, 100 * 1000000};
			nanosleep(&ts, NULL);
			if (sp_mono_ms() >= next_resync) {
				ctl_resync(ctl);
				next_resync = sp_mono_ms() + opt.resync_seconds * 1000LL;
			}
		}
		log_info("stopping");
	}
	ctl_free(ctl);
	kube_config_free(kube);
	creds_clear(&defaults);
	free(identity);
	strv_clear(&opt.namespaces);
	return rc;
}
