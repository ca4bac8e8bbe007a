/* cli: the spotpool subcommands, each parsing its own options. */
#ifndef SPOTPOOL_CLI_H
#define SPOTPOOL_CLI_H

/* Exit codes shared by all subcommands. */
enum cli_exit {
	CLI_OK = 0,
	CLI_EUSAGE = 1,   /* bad flags, bad manifest or config: nothing was called */
	CLI_ECLOUD = 2,   /* a cloud or cluster call failed, or a check did not pass */
};

int cli_dry_run(int argc, char **argv);
int cli_run(int argc, char **argv);
/* Endpoint precedence: flag > SPOTPOOL_CVM_ENDPOINT > NULL (the real cloud). */
const char *cli_cvm_endpoint(const char *flag);

#endif
