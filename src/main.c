/* main: the spotpool command line. */
#include "cli.h"
#include "http.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

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
	"  version    print the version\n"
	"  help       this text\n"
	"\n"
	"Examples:\n"
	"  spotpool dry-run -f pool.yaml\n"
	"  spotpool dry-run -f pools.yaml -o json --endpoint http://127.0.0.1:18555\n"
	"  spotpool run --kubeconfig ~/.kube/config\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return CLI_EUSAGE;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage, stdout);
		return CLI_OK;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("spotpool %s\n", SPOTPOOL_VERSION);
		return CLI_OK;
	}
	int (*sub)(int, char **) = !strcmp(cmd, "dry-run") ? cli_dry_run : !strcmp(cmd, "run") ? cli_run : NULL;
	if (!sub) {
		fprintf(stderr, "spotpool: unknown command \"%s\"\n\n%s", cmd, usage);
		return CLI_EUSAGE;
	}
	log_setup(LOG_FMT_AUTO, LOG_LVL_INFO);
	if (http_global_init() < 0) {
		fputs("spotpool: cannot initialise libcurl\n", stderr);
		return CLI_ECLOUD;
	}
	int rc = sub(argc - 1, argv + 1);
	http_global_cleanup();
	log_shutdown();
	return rc;
}
