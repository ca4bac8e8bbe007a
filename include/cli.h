/* cli: the spotpool subcommands, each parsing its own options.
 *
 * Every command takes -h/--help (usage on stdout, exit 0, nothing else done). A bad
 * flag, a missing argument or an unknown command prints what was wrong, the usage
 * line and a pointer to --help on stderr, and exits CLI_EUSAGE. */
#ifndef SPOTPOOL_CLI_H
#define SPOTPOOL_CLI_H

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Exit statuses shared by all subcommands, one per kind of outcome (docs/configuration.md
 * "Exit status" and every --help that lists them agree):
 *   0 success;
 *   1 invalid input: a manifest, configuration file or environment value, Secret,
 *     credentials file or kubeconfig that does not validate; nothing was called;
 *   2 usage error: the command line itself (unknown flag or command, missing or bad
 *     flag argument, stray argument, missing required -f); nothing was called;
 *   3 a cloud or cluster call failed or a check did not pass (DescribeInstances, the
 *     DryRun launch check, check-config's cluster connection), or the daemon could
 *     not start its own machinery (libcurl, threads): the input itself was valid. */
enum cli_exit {
	CLI_OK = 0,
	CLI_EINPUT = 1,   /* a manifest, config, Secret or credentials did not validate */
	CLI_EUSAGE = 2,   /* the command line itself: cli_usage_error() */
	CLI_ECLOUD = 3,   /* a cloud or cluster call failed, or a check did not pass */
};

int cli_dry_run(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_agent(int argc, char **argv);
/* Cluster access for run and agent: the flag's kubeconfig, else the systemd credential
 * "kubeconfig" ($CREDENTIALS_DIRECTORY), else kube_config_load's defaults. */
struct kube_config;
struct sp_error;
int cli_load_kube(const char *flag, struct kube_config **ret, struct sp_error *err);
/* Endpoint precedence: flag > SPOTPOOL_CVM_ENDPOINT > NULL (the real cloud). */
const char *cli_cvm_endpoint(const char *flag);

/* Reports a usage error and returns CLI_EUSAGE. cmd is "run", "dry-run", ... or "" for
 * the top level; usage's first line ("Usage: spotpool run [OPTIONS]") is repeated:
 *   spotpool run: unrecognized option '--bogus'
 *   Usage: spotpool run [OPTIONS]
 *   Try 'spotpool run --help' for more information. */
__attribute__((format(printf, 3, 4)))
static inline int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "spotpool%s%s: ", *cmd ? " " : "", cmd);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%.*s\nTry 'spotpool%s%s --help' for more information.\n",
		(int)strcspn(usage, "\n"), usage, *cmd ? " " : "", cmd);
	return CLI_EUSAGE;
}

/* The usage error for what getopt_long returned ('?' or ':') with options opts; the
 * option string must start with ':' and opterr be 0, so getopt itself prints nothing. */
static inline int cli_getopt_error(const char *cmd, const char *usage, int c, char *const *argv,
				   const struct option *opts)
{
	const char *arg = argv[optind - 1];
	bool is_long = strncmp(arg, "--", 2) == 0;
	int name_len = (int)strcspn(arg, "="), matches = 0;
	for (const struct option *o = opts; is_long && o->name; o++)
		matches += strncmp(o->name, arg + 2, (size_t)name_len - 2) == 0;
	if (c == ':' && (is_long || !optopt))
		return cli_usage_error(cmd, usage, "option '%s' requires an argument", arg);
	if (c == ':')
		return cli_usage_error(cmd, usage, "option requires an argument -- '%c'", optopt);
	if (is_long && optopt && arg[name_len])
		return cli_usage_error(cmd, usage, "option '%.*s' doesn't allow an argument", name_len, arg);
	if (is_long && matches > 1)
		return cli_usage_error(cmd, usage, "option '%.*s' is ambiguous", name_len, arg);
	if (is_long)
		return cli_usage_error(cmd, usage, "unrecognized option '%.*s'", name_len, arg);
	return cli_usage_error(cmd, usage, "invalid option -- '%c'", optopt);
}

#endif
