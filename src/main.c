/* main: the spotpool command line. */
#include "cfg.h"
#include "cli.h"
#include "http.h"
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"Usage: spotpool COMMAND [OPTIONS]\n"
	"\n"
	"Keeps pools of Tencent Cloud GPU spot instances at a declared size. Pools are\n"
	"Kubernetes custom resources (kind Spotpool, apiVersion devops.jokerbai.com/v1).\n"
	"\n"
	"Commands:\n"
	"  run        run the controller against a cluster (spotpool run --help)\n"
	"  dry-run    show what would be done for manifests on disk, changing nothing\n"
	"             (spotpool dry-run --help)\n"
	"  agent      on a spot instance: report Tencent's reclaim notice to the cluster\n"
	"             (spotpool agent --help)\n"
	"  version    print the version\n"
	"  help       this text; `spotpool help COMMAND` is `spotpool COMMAND --help`\n"
	"\n"
	"Every command takes -h/--help.\n"
	"\n"
	"Examples:\n"
	"  spotpool dry-run -f pool.yaml\n"
	"  spotpool dry-run -f pools.yaml -o json --endpoint http://127.0.0.1:18555\n"
	"  spotpool run --kubeconfig ~/.kube/config\n"
	"\n"
	"Exit status: 0 success; 1 invalid input: a manifest, configuration, Secret or\n"
	"credentials that do not validate (nothing was called); 2 usage error: an unknown\n"
	"flag or command, a missing or bad flag argument, a stray argument; 3 a cloud or\n"
	"cluster call failed, or a check did not pass.\n";

static const char version_usage[] =
	"Usage: spotpool version\n"
	"\n"
	"Prints the version (\"spotpool X.Y.Z\").\n";

static int cmd_version(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(version_usage, stdout);
		return CLI_OK;
	}
	if (argc > 1)
		return cli_usage_error("version", version_usage, "unexpected argument \"%s\"", argv[1]);
	printf("spotpool %s\n", SPOTPOOL_VERSION);
	return CLI_OK;
}

static int cmd_help(int argc, char **argv);

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{"run", cli_run}, {"dry-run", cli_dry_run}, {"agent", cli_agent},
	{"version", cmd_version}, {"help", cmd_help},
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	if (argc == 1 || (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))) {
		fputs(usage, stdout);
		return CLI_OK;
	}
	if (argc > 2)
		return cli_usage_error("", usage, "unexpected argument \"%s\"", argv[2]);
	const struct command *c = find_command(argv[1]);
	if (!c)
		return cli_usage_error("", usage, "unknown command \"%s\"", argv[1]);
	char *sub_argv[] = {argv[1], "--help", NULL};
	return c->fn(2, sub_argv);
}

/* glibc's per-thread caches (tcache) keep up to 7 freed chunks of every small size in
 * each thread, where malloc_trim cannot give them back and where they pin the pages
 * around them: with them the idle controller had 3.3 MiB of private memory and 6.3-6.7
 * after 1,000 pools created and deleted, without them 2.7 and 2.7
 * (tests/e2e/test_churn.sh, BENCHMARKS.md "Churn").
 * Only GLIBC_TUNABLES at start turns them off, so `run` starts itself again once with
 * it (same PID; a tcache_count the user set wins). If that exec fails it runs as is. */
static void restart_without_tcache(char **argv)
{
	static const char setting[] = "glibc.malloc.tcache_count=0";
	const char *tunables = getenv("GLIBC_TUNABLES");
	if (tunables && strstr(tunables, "glibc.malloc.tcache_count"))
		return;
	/* The binary's own path, not /proc/self/exe: the process name (comm, what ps,
	 * pkill and systemd show) is the basename of the path executed. */
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || (size_t)n >= sizeof(self) - 1)
		return;
	self[n] = '\0';
	char *value = tunables && *tunables ? xasprintf("%s:%s", tunables, setting) : xstrdup(setting);
	setenv("GLIBC_TUNABLES", value, 1);
	free(value);
	execv(self, argv);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("", usage, "missing command");
	const char *cmd = argv[1];
	/* Hidden: the settings table of src/cfg.c for the man pages and their test
	 * (make man, tests/e2e/test_docs.sh): "man" (roff) or "tsv". */
	if (!strcmp(cmd, "--print-settings-table")) {
		struct sp_error err = {0};
		if (argc > 3 || cfg_print_settings(stdout, argc == 3 ? argv[2] : "tsv", &err) < 0)
			return cli_usage_error("", usage, "%s", argc > 3 ? "--print-settings-table [man|tsv]" : err.msg);
		return CLI_OK;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		cmd = "help";
	else if (!strcmp(cmd, "--version"))
		cmd = "version";
	const struct command *c = find_command(cmd);
	if (c && c->fn == cli_run)
		restart_without_tcache(argv);
	if (!c)
		return cli_usage_error("", usage, *cmd == '-' ? "unknown option \"%s\"" : "unknown command \"%s\"",
				       cmd);
	log_setup(LOG_FMT_AUTO, LOG_LVL_INFO);
	if (http_global_init() < 0) {
		fputs("spotpool: cannot initialise libcurl\n", stderr);
		return CLI_ECLOUD;
	}
	int rc = c->fn(argc - 1, argv + 1);
	http_global_cleanup();
	log_shutdown();
	return rc;
}
