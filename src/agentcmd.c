/* agentcmd: `spotpool agent`, the spot notice agent's command line: options, cluster
 * access, the metadata service over HTTP, signals (the rounds are src/agent.c's). */
#include "agent.h"
#include "cli.h"
#include "http.h"
#include "kube.h"
#include "log.h"
#include "stop.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A metadata answer must come well within one poll interval. */
#define METADATA_TIMEOUT_MS 1500
/* An apiserver call of the agent: long enough for a loaded apiserver, short enough that
 * a retry still lands inside a two-minute notice. */
#define AGENT_KUBE_TIMEOUT_MS 10000

static const char agent_usage[] =
	"Usage: spotpool agent [OPTIONS]\n"
	"\n"
	"Runs on a spot instance and reports Tencent's reclaim notice (about two minutes\n"
	"ahead) to the cluster, so that the controller launches the replacement and drains\n"
	"the node before the instance is gone (docs/notice-agent.md). Every interval it\n"
	"reads the instance metadata item spot/termination-time; on a notice it sets the\n"
	"condition SpotTerminating=True (message \"reclaim at <RFC3339 UTC>\") on its Node\n"
	"through nodes/status, once per notice, retrying failures with backoff; when the\n"
	"notice is withdrawn, or was while the agent was down (its Node is read back on\n"
	"start), it sets the condition False. On a host that is not a Node (no --node-name\n"
	"and no NODE_NAME) it creates a SpotNotice object instead. SIGTERM or SIGINT:\n"
	"exits 0 at once.\n"
	"\n"
	"Options:\n"
	"      --node-name NAME     the Node this host is (default: $NODE_NAME, set from the\n"
	"                           downward API in the DaemonSet); none: report SpotNotices\n"
	"      --namespace NS       where SpotNotices are created (default: the kubeconfig\n"
	"                           context's or the service account's namespace)\n"
	"      --metadata-url URL   the instance metadata (default " AGENT_METADATA_URL_DEFAULT ")\n"
	"      --interval SECONDS   between polls (default 2; 0.1 to 60)\n"
	"      --kubeconfig FILE    cluster access (default: $KUBECONFIG, the systemd credential\n"
	"                           \"kubeconfig\", the in-cluster service account, or ~/.kube/config)\n"
	"      --log-level LEVEL    error, warn, info (default) or debug\n"
	"      --log-format FMT     auto (journal under systemd, else plain), plain, json, journal\n"
	"  -h, --help               this text\n"
	"\n"
	"Exit status: 0 stopped by a signal; 1 the kubeconfig does not validate; 2 usage\n"
	"error.\n";

static struct stop agent_stop = {.fd = -1};

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_request(&agent_stop);
	http_abort_all();  /* a hanging metadata or apiserver call must not hold up the exit */
}

struct metadata_http {
	struct http_client *http;
	const char *base;
};

static int metadata_http_get(void *ctx, const char *item, long *ret_status, char **ret_body, struct sp_error *err)
{
	struct metadata_http *m = ctx;
	char *url = xasprintf("%s/%s", m->base, item);
	struct http_request req = {.method = "GET", .url = url, .timeout_ms = METADATA_TIMEOUT_MS,
				   .connect_timeout_ms = METADATA_TIMEOUT_MS, .max_response = AGENT_METADATA_MAX,
				   .cancel = &agent_stop};
	struct http_response resp;
	int r = http_do(m->http, &req, &resp, err);
	if (r == 0) {
		*ret_status = resp.status;
		*ret_body = xstrndup(resp.body.data ? resp.body.data : "", resp.body.len);
	}
	http_response_free(&resp);
	free(url);
	return r;
}

static bool dns_name(const char *s, size_t max, bool dots)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || (dots && s[i] == '.')))
			return false;
	return true;
}

struct agent_flags {
	const char *node_name, *namespace, *metadata_url, *kubeconfig;
	int64_t interval_ms;
	enum log_level level;
	enum log_format format;
};

enum { OPT_NODE = 1, OPT_NS, OPT_URL, OPT_INTERVAL, OPT_KUBECONFIG, OPT_LEVEL, OPT_FORMAT };

/* -1 to go on, else the exit status (--help, or a usage error). */
static int parse_flags(int argc, char **argv, struct agent_flags *f)
{
	static const struct option opts[] = {
		{"node-name", required_argument, NULL, OPT_NODE}, {"namespace", required_argument, NULL, OPT_NS},
		{"metadata-url", required_argument, NULL, OPT_URL}, {"interval", required_argument, NULL, OPT_INTERVAL},
		{"kubeconfig", required_argument, NULL, OPT_KUBECONFIG}, {"log-level", required_argument, NULL, OPT_LEVEL},
		{"log-format", required_argument, NULL, OPT_FORMAT}, {"help", no_argument, NULL, 'h'}, {0},
	};
	*f = (struct agent_flags){.metadata_url = AGENT_METADATA_URL_DEFAULT, .interval_ms = AGENT_INTERVAL_MS_DEFAULT,
				  .level = LOG_LVL_INFO, .format = LOG_FMT_AUTO, .node_name = getenv("NODE_NAME")};
	int c, idx;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, &idx)) != -1) {
		char *end = NULL;
		double seconds;
		switch (c) {
		case OPT_NODE: f->node_name = optarg; break;
		case OPT_NS: f->namespace = optarg; break;
		case OPT_URL: f->metadata_url = optarg; break;
		case OPT_KUBECONFIG: f->kubeconfig = optarg; break;
		case OPT_INTERVAL:
			errno = 0;
			seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(seconds) || seconds < 0.1 || seconds > 60)
				return cli_usage_error("agent", agent_usage, "--interval: \"%s\" is not a number of "
						       "seconds from 0.1 to 60", optarg);
			f->interval_ms = (int64_t)(seconds * 1000 + 0.5);
			break;
		case OPT_LEVEL:
			if (log_parse_level(optarg, &f->level) < 0)
				return cli_usage_error("agent", agent_usage, "--log-level: \"%s\" is not error, warn, "
						       "info or debug", optarg);
			break;
		case OPT_FORMAT:
			if (log_parse_format(optarg, &f->format) < 0)
				return cli_usage_error("agent", agent_usage, "--log-format: \"%s\" is not auto, plain, "
						       "json or journal", optarg);
			break;
		case 'h':
			fputs(agent_usage, stdout);
			return CLI_OK;
		default:
			return cli_getopt_error("agent", agent_usage, c, argv, opts);
		}
	}
	if (optind < argc)
		return cli_usage_error("agent", agent_usage, "unexpected argument \"%s\"", argv[optind]);
	if (f->node_name && !*f->node_name)
		f->node_name = NULL;  /* NODE_NAME="" is unset, like every empty variable */
	if (f->node_name && !dns_name(f->node_name, 253, true))
		return cli_usage_error("agent", agent_usage, "--node-name (or NODE_NAME): \"%s\" is not a Node name "
				       "(a DNS subdomain: a-z 0-9 - ., at most 253)", f->node_name);
	if (f->namespace && !dns_name(f->namespace, 63, false))
		return cli_usage_error("agent", agent_usage, "--namespace: \"%s\" is not a namespace name "
				       "(a DNS label: a-z 0-9 -, at most 63)", f->namespace);
	if (strncmp(f->metadata_url, "http://", 7) && strncmp(f->metadata_url, "https://", 8))
		return cli_usage_error("agent", agent_usage, "--metadata-url: \"%s\" is not an http:// or https:// URL",
				       f->metadata_url);
	return -1;
}

int cli_agent(int argc, char **argv)
{
	struct agent_flags f;
	int rc = parse_flags(argc, argv, &f);
	if (rc != -1)
		return rc;
	log_setup(f.format, f.level);
	struct sp_error err = {0};
	struct kube_config *kube = NULL;
	if (cli_load_kube(f.kubeconfig, &kube, &err) < 0) {
		fprintf(stderr, "spotpool agent: %s\n", log_redact(err.msg, sizeof(err.msg)));
		return CLI_EINPUT;
	}
	size_t base_len = strlen(f.metadata_url);
	while (f.metadata_url[base_len - 1] == '/')
		base_len--;
	char *base = xstrndup(f.metadata_url, base_len), host[256] = "";
	gethostname(host, sizeof(host) - 1);
	stop_init(&agent_stop);
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	struct kube_client *kc = kube_client_new(kube, "spotpool/" SPOTPOOL_VERSION " (agent)");
	kube_client_set_timeout(kc, AGENT_KUBE_TIMEOUT_MS);
	struct kube_api api = kube_client_api(kc);
	struct metadata_http md = {.http = http_client_new("spotpool/" SPOTPOOL_VERSION " (agent)"), .base = base};
	struct agent_options o = {
		.api = &api, .metadata = {.get = metadata_http_get, .ctx = &md}, .clock = sp_clock_system,
		.node_name = f.node_name, .namespace = f.namespace ? f.namespace : kube->namespace, .host = host,
		.interval_ms = f.interval_ms,
	};
	log_info("spotpool %s agent: metadata %s every %lld ms, cluster %s (%s), reporting on %s %s", SPOTPOOL_VERSION,
		 base, (long long)f.interval_ms, kube->server, kube->source, o.node_name ? "Node" : "SpotNotices in namespace",
		 o.node_name ? o.node_name : o.namespace);
	struct agent a;
	agent_init(&a, &o);
	agent_run(&a, &agent_stop);
	log_info("agent: stopping");
	http_client_free(md.http);
	kube_client_free(kc);
	kube_config_free(kube);
	free(base);
	stop_destroy(&agent_stop);  /* a signal from now on only sets its flag */
	return CLI_OK;
}
