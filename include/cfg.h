/* cfg: the daemon's configuration. Precedence: flags > environment > file > defaults.
 * Every key is described once in a table (name, environment variable, type, range);
 * errors name the key and where it came from ("spotpool.yaml:12: workers: ..."). */
#ifndef SPOTPOOL_CFG_H
#define SPOTPOOL_CFG_H

#include "log.h"
#include "kube.h"
#include "spotpool.h"

#include <stdio.h>

#define CFG_DEFAULT_PATH "/etc/spotpool/spotpool.yaml"
/* The host-wide credentials file the systemd unit passes in as the credential
 * "tencentcloud"; read directly when not started by systemd (sudo spotpool run ...). */
#define CFG_DEFAULT_CREDENTIALS_PATH "/etc/spotpool/tencentcloud.yaml"

struct cfg {
	char *kubeconfig;          /* "" = $KUBECONFIG, in-cluster, or ~/.kube/config */
	struct strv namespaces;    /* empty = all */
	int resync_seconds;
	int workers;
	int launch_grace_seconds;  /* how long a launched, never-seen instance counts as live */
	int sold_out_seconds;      /* how long a sold-out offering is skipped before a probe */
	char *cluster_name;        /* "" = the kube-system namespace's UID, read at start-up */
	char *cvm_endpoint;        /* "" = https://cvm.<region>.tencentcloudapi.com/ */
	char *sts_endpoint;        /* "" = https://sts.tencentcloudapi.com/ */
	char *credentials_file;    /* "" = $CREDENTIALS_DIRECTORY/tencentcloud or environment */
	enum log_format log_format;
	enum log_level log_level;
	char *listen_address;      /* "" = no metrics/health endpoint */
	bool dry_run;
	bool nodes_disabled;       /* no Node cache (namespaced RBAC without nodes) */
	bool leader_elect;
	char *lease_name;
	char *lease_namespace;     /* "" = the service account's namespace, else "default" */
	char *notices_namespace;   /* "" = the service account's namespace in a cluster, else none */
	int lease_duration_seconds;
	int renew_deadline_seconds;
	int retry_period_seconds;
	int rate_describe_per_second;   /* DescribeInstances(Status) calls per second (rate.h) */
	int rate_run_per_second;        /* RunInstances */
	int rate_terminate_per_second;  /* TerminateInstances */
	int rate_follow_per_minute;     /* DescribeInstancesStatus follow budget (inv.h); 0: off */
	char *sources[32];         /* where each key's value came from, by table index */
};

/* One setting of `spotpool run`, from the one table in cfg.c: its key in the file
 * (dotted: "leaderElection.enabled"), environment variable and long flag without the
 * dashes (NULL when there is none), the flag's argument (NULL: a switch that sets
 * true), and one line of help. */
struct cfg_setting {
	const char *key, *env, *flag, *arg, *help;
};
/* The i-th setting, NULL past the last. */
const struct cfg_setting *cfg_setting(size_t i);
/* The setting whose flag is flag (without dashes), or NULL. */
const struct cfg_setting *cfg_setting_by_flag(const char *flag);
/* Writes the settings table for the documentation: format "man" is the roff of
 * spotpool(8)'s SETTINGS section, "tsv" one line per setting (key, env, flag, arg,
 * default, range, help; "-" for none). SP_EINVAL for another format. */
int cfg_print_settings(FILE *out, const char *format, struct sp_error *err);

void cfg_defaults(struct cfg *c);
void cfg_free(struct cfg *c);
/* Loads a YAML file; unknown keys and bad values are errors naming key and line. */
int cfg_load_file(struct cfg *c, const char *path, struct sp_error *err);
/* Applies SPOTPOOL_* (and KUBECONFIG) variables. An empty variable counts as unset and
 * leaves the file's (or default) value in place. */
int cfg_apply_env(struct cfg *c, struct sp_error *err);
/* Sets one key from text (a flag's argument); source is e.g. "--workers". When source is
 * a flag ("-..."), an empty list item (`--namespace ""`) is SP_EINVAL naming the flag. */
int cfg_set(struct cfg *c, const char *key, const char *value, const char *source, struct sp_error *err);
/* Checks relations between keys (e.g. the renew deadline below the lease duration). */
int cfg_validate(const struct cfg *c, struct sp_error *err);
/* The namespace whose SpotNotices count for every pool (notices.h): noticesNamespace
 * when set, else in a cluster the service account's (kube->sa_namespace), else NULL:
 * none. Never a kubeconfig context's namespace nor "default": whoever may create
 * SpotNotices there could doom every pool's instances. */
const char *cfg_notices_namespace(const struct cfg *c, const struct kube_config *kube);
/* A cluster name as a tag value: 1..POOL_CLUSTER_NAME_MAX characters of [A-Za-z0-9._-]. */
bool cfg_cluster_name_valid(const char *name);
/* The file the default credentials come from, so that `run` under systemd and
 * `sudo spotpool run --check-config` agree: credentialsFile when set; else, started by
 * systemd (credentials_directory = $CREDENTIALS_DIRECTORY, not NULL),
 * credentials_directory/tencentcloud when it exists; else etc_path
 * NULL when environment_set (TENCENTCLOUD_SECRET_ID and _KEY are set: what the user set
 * beats a file found by default); else etc_path (CFG_DEFAULT_CREDENTIALS_PATH) when it
 * exists, readable or not (reading it then reports why); else NULL: the environment.
 * Owned by the caller. */
char *cfg_default_credentials_path(const struct cfg *c, const char *credentials_directory,
				   bool environment_set, const char *etc_path);
/* Where key's value came from ("default", "--workers", "spotpool.yaml:3", ...). */
const char *cfg_source(const struct cfg *c, const char *key);
/* Prints the effective configuration as YAML with each value's source. */
void cfg_print(const struct cfg *c, FILE *out);
/* A file holding secrets (what names it: "credentials file", "kubeconfig") must not be
 * accessible to group or others (mode & 077). Returns false and writes a warning naming
 * the file, its mode and the fix (chmod 600) into warn when it is; true otherwise,
 * including when the file cannot be examined (reading it reports that). */
bool cfg_file_private(const char *what, const char *path, char *warn, size_t n);

#endif
