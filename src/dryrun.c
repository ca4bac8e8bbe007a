/* dryrun: `spotpool dry-run`: describe, plan and DryRun-check each pool from
 * manifests on disk, changing nothing. */
#include "cfg.h"
#include "cli.h"
#include "creds.h"
#include "cvm.h"
#include "log.h"
#include "manifest.h"
#include "observe.h"
#include "pass.h"
#include "status.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char dry_run_usage[] =
	"Usage: spotpool dry-run -f|--filename FILE [-f FILE ...] [-o|--output table|json]\n"
	"                        [--endpoint URL] [--timeout SECONDS] [--cluster-name NAME] [-v|--verbose]\n"
	"\n"
	"Shows what spotpool would do for each Spotpool in FILE (YAML or JSON, several\n"
	"documents allowed, '-' for standard input), changing nothing: it describes the\n"
	"pool's own instances (those tagged " POOL_TAG_KEY "=<namespace>/<name>, and\n"
	"of this cluster with --cluster-name), plans the pass as `spotpool run --dry-run`\n"
	"does (with the ledger and instances of the manifest's status, if any), prints\n"
	"its actions and asks the cloud to validate the launch it chose with\n"
	"RunInstances DryRun=true (parameters, quota and stock).\n"
	"\n"
	"Options:\n"
	"  -f, --filename FILE   manifest to read (repeatable)\n"
	"  -o, --output FORMAT   table (default) or json\n"
	"      --endpoint URL    CVM API endpoint (default https://cvm.<region>.tencentcloudapi.com/,\n"
	"                        or $SPOTPOOL_CVM_ENDPOINT)\n"
	"      --timeout SECONDS per-request timeout, 1..300 (default 15)\n"
	"      --cluster-name NAME  count only instances of this cluster (its cluster tag)\n"
	"                        and untagged ones (default $SPOTPOOL_CLUSTER_NAME; none: all)\n"
	"  -v, --verbose         log each API call to stderr (action, region, outcome,\n"
	"                        duration), successful ones included\n"
	"  -h, --help            this text\n"
	"\n"
	"Credentials, in the controller's order: the Secret named by credentialsSecretRef,\n"
	"read from the given files (never from a cluster; a Secret that is there but lacks\n"
	"secretId or secretKey, or has one empty or not base64, is an error), else the\n"
	"pool's inline secretId/secretKey, else TENCENTCLOUD_SECRET_ID,\n"
	"TENCENTCLOUD_SECRET_KEY and optional TENCENTCLOUD_SESSION_TOKEN.\n"
	"\n"
	"Input: at most 4 MiB per file, 64 levels of nesting and 100000 keys and list\n"
	"items per file. Every problem of every file and document is reported (file,\n"
	"document, name, field, line) before anything is called.\n"
	"\n"
	"Exit status: 0 plan computed and every check passed; 1 invalid manifest or\n"
	"unusable credentials (no API call was made); 2 usage error (a bad flag or\n"
	"argument, no -f); 3 a cloud call or a launch check failed.\n";

static const char *class_name(int code)
{
	switch (code) {
	case SP_EAUTH: return "auth";
	case SP_ECONFIG: return "config";
	case SP_ECAPACITY: return "capacity";
	case SP_ETHROTTLED: return "throttled";
	case SP_ENOTFOUND: return "gone";
	default: return "transient";
	}
}

static cJSON *error_json(const struct sp_error *e)
{
	cJSON *o = cJSON_CreateObject();
	char msg[SP_ERROR_MAX];
	snprintf(msg, sizeof(msg), "%s", e->msg);
	cJSON_AddStringToObject(o, "class", class_name(e->code));
	if (*e->reason)
		cJSON_AddStringToObject(o, "code", e->reason);
	cJSON_AddStringToObject(o, "message", log_redact(msg, sizeof(msg)));
	return o;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt);

/* The Spotpool document s was read from (for the file, document and line of a message). */
static const struct manifest_doc *pool_doc(const struct manifest_set *set, const struct pool_spec *s)
{
	for (size_t i = 0; i < set->n; i++) {
		const cJSON *o = set->docs[i].object;
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
		const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
		if (cJSON_IsString(name) && strcmp(name->valuestring, s->name) == 0 &&
		    strcmp(cJSON_IsString(ns) ? ns->valuestring : "default", s->namespace) == 0 &&
		    strcmp(str_or(o, "kind", ""), POOL_KIND) == 0)
			return &set->docs[i];
	}
	return NULL;
}

static bool env_has_credentials(void)
{
	const char *id = getenv("TENCENTCLOUD_SECRET_ID"), *key = getenv("TENCENTCLOUD_SECRET_KEY");
	return id && *id && key && *key;
}

/* The Secrets of the given files, for the pool named (its namespace is the Secret's). */
struct file_secrets {
	const struct manifest_set *set;
	const char *pool;
};

/* The Secret named by credentialsSecretRef, from the given files (observe.h's
 * secret_reader). A Secret that is there but unusable is an error; one that is not there
 * falls back to the environment. */
static int file_secret_read(void *ctx, const char *ns, const char *name, struct creds *out, struct sp_error *err)
{
	const struct file_secrets *f = ctx;
	static const char *const keys[] = {"secretId", "secretKey", "token"};
	char *v[3] = {0};
	int r = 0;
	for (size_t i = 0; i < 3 && r == 0; i++)
		r = manifest_secret_lookup(f->set, ns, name, keys[i], i == 2, &v[i], err);
	if (r == 0)
		creds_set(out, v[0], v[1], v[2], "secret (from the given files)");
	else if (r == SP_ENOTFOUND && env_has_credentials() && (r = creds_from_env(out, err)) == 0)
		fprintf(stderr, "spotpool dry-run: note: %s/%s: Secret %s/%s is not among the given files; "
			"using TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY\n", ns, f->pool, ns, name);
	else if (r == SP_ENOTFOUND)
		r = sp_fail(err, SP_EINVAL, "Secret %s/%s is not among the given files (dry-run reads "
			    "Secrets only from -f files, never from a cluster): add it with -f, or set "
			    "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY", ns, name);
	for (size_t i = 0; i < 3; i++)
		sp_secure_free(v[i]);
	if (r == 0 && strcmp(out->source, "environment") == 0)
		out->source = "environment (the Secret named by credentialsSecretRef is not among the files)";
	return r;
}

/* Credentials of every pool, before any call, in the controller's precedence
 * (observe_credentials; the environment stands for its default): a problem with one is
 * bad input (exit 1), reported with the others, and nothing is called. */
static void resolve_credentials(struct pool_spec *const *pools, size_t n, const struct manifest_set *set,
				struct creds *out, struct manifest_errors *errs)
{
	struct creds env = {0};
	struct sp_error env_err = {0};
	bool have_env = creds_from_env(&env, &env_err) == 0;
	for (size_t i = 0; i < n; i++) {
		const struct pool_spec *s = pools[i];
		struct file_secrets files = {.set = set, .pool = s->name};
		struct observe_creds_source src = {.dflt = have_env ? &env : NULL,
						   .secrets = {.read = file_secret_read, .ctx = &files},
						   .no_credentials = env_err.msg};
		struct sp_error err = {0};
		if (observe_credentials(s, s->namespace, s->name, &src, &out[i], &err) == 0)
			continue;
		const struct manifest_doc *d = pool_doc(set, s);
		char *msg = xasprintf("spec%s: %s", s->credentials_secret ? ".credentialsSecretRef" : "", err.msg);
		if (d)
			manifest_doc_error(errs, d, msg);
		else
			manifest_error(errs, msg);
		free(msg);
	}
	creds_clear(&env);
}

/* The tag listing, called directly (observe.h's inventory port): a dry-run has no
 * shared inventory. */
static int describe_tagged(void *ctx, const struct cvm_credentials *cred, const char *region, const char *owner,
			   bool unsettled, int64_t timeout_ms, struct pool_instance **ret, size_t *ret_n,
			   struct sp_error *err)
{
	(void)unsettled;
	(void)timeout_ms;
	return cvm_describe_tagged(ctx, cred, region, POOL_TAG_KEY, owner, ret, ret_n, err);
}

/* Runs the checks among acts (the launch check: RunInstances DryRun=true) and puts the
 * list into pool: "actions" (pass_action_line's lines) and what they add up to. */
static bool describe_actions(struct cvm_client *cvm, const struct cvm_credentials *view,
			     const struct pool_spec *s, const struct pass_actions *acts, cJSON *pool)
{
	cJSON_AddNumberToObject(pool, "observed", acts->live);
	cJSON_AddNumberToObject(pool, "target", acts->target);
	cJSON *lines = cJSON_AddArrayToObject(pool, "actions");
	cJSON *terminate = cJSON_CreateArray(), *cleanup = cJSON_CreateArray(), *check = NULL;
	int launch = 0;
	bool ok = true;
	for (size_t i = 0; i < acts->n; i++) {
		const struct pass_action *a = &acts->v[i];
		char line[1024];
		pass_action_line(a, line, sizeof(line));
		cJSON_AddItemToArray(lines, cJSON_CreateString(line));
		for (size_t j = 0; a->kind == PASS_WOULD_TERMINATE && j < a->ids.n; j++)
			cJSON_AddItemToArray(a->why == PASS_WHY_SCALE_DOWN ? terminate : cleanup,
					     cJSON_CreateString(a->ids.v[j]));
		if (a->kind != PASS_CHECK_LAUNCH)
			continue;
		struct cvm_launch l = {.spec = s, .count = a->count, .zone = a->zone,
				       .instance_type = a->instance_type, .dry_run = true};
		struct strv ids = {0};
		struct sp_error err = {0};
		int r = cvm_run_instances(cvm, view, &l, &ids, &err);
		strv_clear(&ids);
		launch = a->count;
		check = cJSON_CreateObject();
		cJSON_AddBoolToObject(check, "passed", r == 0);
		if (r < 0)
			cJSON_AddItemToObject(check, "error", error_json(&err));
		ok = ok && r == 0;
	}
	cJSON_AddNumberToObject(pool, "launch", launch);
	cJSON_AddItemToObject(pool, "terminate", terminate);
	cJSON_AddItemToObject(pool, "cleanup", cleanup);
	if (check)
		cJSON_AddItemToObject(pool, "launchCheck", check);
	return ok;
}

/* spec.autoscaling as written (the timers in the drainTimeout form), when present. */
static void add_autoscaling(cJSON *pool, const struct pool_autoscaling *a)
{
	if (!a->enabled)
		return;
	char unneeded[32], registration[32];
	pool_format_duration(a->unneeded_time, unneeded, sizeof(unneeded));
	pool_format_duration(a->registration_timeout, registration, sizeof(registration));
	cJSON *o = cJSON_AddObjectToObject(pool, "autoscaling");
	cJSON_AddBoolToObject(o, "pendingPods", a->pending_pods);
	cJSON_AddStringToObject(o, "scaleDownUnneededTime", unneeded);
	cJSON_AddStringToObject(o, "nodeRegistrationTimeout", registration);
}

/* spec.nodeTemplate, when not empty, with the kubelet flags that apply it at
 * registration (examples/bootstrap). */
static void add_node_template(cJSON *pool, const struct tmpl_node *t)
{
	if (!t->n_labels && !t->n_taints)
		return;
	cJSON *o = cJSON_AddObjectToObject(pool, "nodeTemplate");
	cJSON *labels = cJSON_AddObjectToObject(o, "labels");
	for (size_t i = 0; i < t->n_labels; i++)
		cJSON_AddStringToObject(labels, t->labels[i].key, t->labels[i].value);
	cJSON *taints = cJSON_AddArrayToObject(o, "taints");
	for (size_t i = 0; i < t->n_taints; i++) {
		cJSON *taint = cJSON_CreateObject();
		cJSON_AddStringToObject(taint, "key", t->taints[i].key);
		if (*t->taints[i].value)
			cJSON_AddStringToObject(taint, "value", t->taints[i].value);
		cJSON_AddStringToObject(taint, "effect", tmpl_effect_name(t->taints[i].effect));
		cJSON_AddItemToArray(taints, taint);
	}
	char *l = tmpl_kubelet_labels(t), *k = tmpl_kubelet_taints(t);
	char *flags = xasprintf("%s%s%s%s%s", *l ? "--node-labels=" : "", l, *l && *k ? " " : "",
				*k ? "--register-with-taints=" : "", k);
	cJSON_AddStringToObject(o, "kubeletFlags", flags);
	free(flags);
	free(l);
	free(k);
}

/* The action list pass_plan makes for the pool (what `run --dry-run` logs as "plan:"
 * lines), into pool; the checks it asks for are run. Returns false when a cloud call
 * or check failed. */
static bool dry_run_pool(struct cvm_client *cvm, const struct pool_spec *s, const cJSON *obj,
			 const struct creds *cred, const char *cluster, cJSON *pool)
{
	cJSON_AddStringToObject(pool, "namespace", s->namespace);
	cJSON_AddStringToObject(pool, "name", s->name);
	cJSON_AddStringToObject(pool, "region", s->region);
	cJSON_AddStringToObject(pool, "zone", s->zone);
	cJSON_AddStringToObject(pool, "instanceType", s->instance_type);
	cJSON_AddNumberToObject(pool, "minimum", s->minimum);
	cJSON_AddNumberToObject(pool, "maximum", s->maximum);
	if (s->has_replicas)
		cJSON_AddNumberToObject(pool, "replicas", s->replicas);
	cJSON_AddStringToObject(pool, "credentials", cred->source);
	add_autoscaling(pool, &s->autoscaling);
	add_node_template(pool, &s->node_template);

	/* Observed as the controller observes (the object's status, the cloud), without
	 * its caches: no Nodes, no SpotNotices, no sold-out memory (all offerings
	 * available), no account. */
	struct observation o = {.ns = s->namespace, .name = s->name, .spec = s, .now = sp_now(),
				.now_ms = sp_mono_ms()};
	observe_object(&o, obj, NULL);
	struct observe_ports ports = {.inv = {.read = describe_tagged, .ctx = cvm}, .cvm = cvm_client_api(cvm),
				      .clock = sp_clock_system};
	observe_pool(&o, obj, &ports, &(struct observe_options){.cluster_name = cluster, .creds = cred});
	bool ok = o.code == 0;
	if (!ok) {
		cJSON_AddItemToObject(pool, "error", error_json(&o.error));
	} else {
		struct pass_input in;
		observe_input(&o, obj, &in);
		in.spec_valid = true;
		in.active = true;
		in.dry_run = true;
		in.terminated = &(struct strv){0};
		struct pass_done done = {0};
		struct pass_actions acts;
		pass_plan(&in, &done, &acts);
		struct cvm_credentials view = creds_view(&o.creds);
		ok = describe_actions(cvm, &view, s, &acts, pool);
		cJSON *list = cJSON_AddArrayToObject(pool, "instances");
		for (size_t i = 0; i < o.n_instances; i++)
			cJSON_AddItemToArray(list, status_instance_json(&o.instances[i]));
		pass_actions_free(&acts);
		pass_done_free(&done);
	}
	observation_free(&o);
	return ok;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : dflt;
}

static int int_or(const cJSON *o, const char *key, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valueint : dflt;
}

static void print_ids(const char *verb, const cJSON *ids)
{
	if (cJSON_GetArraySize(ids) == 0)
		return;
	printf("  would terminate (%s):", verb);
	const cJSON *id;
	cJSON_ArrayForEach(id, ids)
		printf(" %s", id->valuestring);
	printf("\n");
}

static void print_details(const cJSON *p)
{
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(p, "error");
	const cJSON *check = cJSON_GetObjectItemCaseSensitive(p, "launchCheck");
	printf("%s/%s:\n", str_or(p, "namespace", ""), str_or(p, "name", ""));
	const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(p, "autoscaling");
	if (scaling)
		printf("  autoscaling: pendingPods %s, scaleDownUnneededTime %s, nodeRegistrationTimeout %s\n",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(scaling, "pendingPods")) ? "true" : "false",
		       str_or(scaling, "scaleDownUnneededTime", ""), str_or(scaling, "nodeRegistrationTimeout", ""));
	const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(p, "nodeTemplate");
	if (tmpl)
		printf("  node template (kubelet flags): %s\n", str_or(tmpl, "kubeletFlags", ""));
	if (error) {
		printf("  error: %s\n", str_or(error, "message", ""));
		return;
	}
	int launch = int_or(p, "launch", 0);
	if (launch > 0) {
		const cJSON *cerr = cJSON_GetObjectItemCaseSensitive(check, "error");
		printf("  would launch %d x %s in %s: launch check %s%s\n", launch,
		       str_or(p, "instanceType", ""), str_or(p, "zone", ""), cerr ? "FAILED: " : "passed",
		       cerr ? str_or(cerr, "message", "") : "");
	}
	const cJSON *line;
	cJSON_ArrayForEach(line, cJSON_GetObjectItemCaseSensitive(p, "actions"))
		printf("  plan: %s\n", line->valuestring);
	print_ids("scale down", cJSON_GetObjectItemCaseSensitive(p, "terminate"));
	print_ids("dead, cleanup", cJSON_GetObjectItemCaseSensitive(p, "cleanup"));
	if (launch == 0 && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "terminate")) == 0 &&
	    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "cleanup")) == 0)
		printf("  nothing to do: %d live instance(s), within [%d, %d]\n", int_or(p, "observed", 0),
		       int_or(p, "minimum", 0), int_or(p, "maximum", 0));
}

static void print_table(const cJSON *pools)
{
	printf("%-12s %-22s %-16s %-16s %4s %4s %8s %6s %6s %9s  %s\n", "NAMESPACE", "NAME",
	       "ZONE", "TYPE", "MIN", "MAX", "OBSERVED", "TARGET", "LAUNCH", "TERMINATE", "CHECK");
	const cJSON *p;
	cJSON_ArrayForEach(p, pools) {
		const cJSON *check = cJSON_GetObjectItemCaseSensitive(p, "launchCheck");
		bool failed = cJSON_GetObjectItemCaseSensitive(p, "error") != NULL;
		const char *verdict = failed ? "error" : !check ? "-" :
			cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(check, "passed")) ? "passed" : "failed";
		int terminate = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "terminate")) +
				cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "cleanup"));
		char observed[16] = "?", target[16] = "?";
		if (!failed) {
			snprintf(observed, sizeof(observed), "%d", int_or(p, "observed", 0));
			snprintf(target, sizeof(target), "%d", int_or(p, "target", 0));
		}
		printf("%-12s %-22s %-16s %-16s %4d %4d %8s %6s %6d %9d  %s\n",
		       str_or(p, "namespace", ""), str_or(p, "name", ""), str_or(p, "zone", ""),
		       str_or(p, "instanceType", ""), int_or(p, "minimum", 0), int_or(p, "maximum", 0),
		       observed, target, int_or(p, "launch", 0), terminate, verdict);
	}
	printf("\n");
	cJSON_ArrayForEach(p, pools)
		print_details(p);
}

const char *cli_cvm_endpoint(const char *flag)
{
	if (flag && *flag)
		return flag;
	const char *env = getenv("SPOTPOOL_CVM_ENDPOINT");
	return env && *env ? env : NULL;
}

/* Describes, plans and checks every pool (all valid, with credentials); prints the result. */
static int dry_run_pools(const char *endpoint, long timeout, const char *cluster, const struct manifest_set *set,
			 struct pool_spec *const *pools, const struct creds *creds, size_t n_pools,
			 const char *output)
{
	struct rate *rate = rate_new(&(struct rate_config){0});  /* Tencent's limits, less 10% */
	struct cvm_config cfg = {.endpoint = endpoint, .timeout_ms = timeout * 1000,
				 .user_agent = "spotpool/" SPOTPOOL_VERSION " (dry-run)", .rate = rate};
	struct cvm_client *cvm = cvm_client_new(&cfg);
	cJSON *root = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(root, "pools");
	int rc = CLI_OK;
	for (size_t i = 0; i < n_pools; i++) {
		cJSON *pool = cJSON_CreateObject();
		const struct manifest_doc *d = pool_doc(set, pools[i]);
		if (!dry_run_pool(cvm, pools[i], d ? d->object : NULL, &creds[i], cluster, pool))
			rc = CLI_ECLOUD;
		cJSON_AddItemToArray(arr, pool);
	}
	cvm_client_free(cvm);
	rate_free(rate);
	if (strcmp(output, "json") == 0) {
		char *text = cJSON_Print(root);
		puts(text);
		cJSON_free(text);
	} else {
		print_table(arr);
	}
	cJSON_Delete(root);
	return rc;
}

int cli_dry_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"filename", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
		{"endpoint", required_argument, NULL, 'E'}, {"timeout", required_argument, NULL, 'T'},
		{"cluster-name", required_argument, NULL, 'C'}, {"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'}, {0},
	};
	struct strv files = {0};
	const char *output = "table", *endpoint = NULL, *cluster = getenv("SPOTPOOL_CLUSTER_NAME");
	long timeout = 15;
	const char *timeout_text = NULL;
	int c, rc = CLI_OK;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': strv_push(&files, optarg); break;
		case 'o': output = optarg; break;
		case 'E': endpoint = optarg; break;
		case 'T': timeout_text = optarg; break;
		case 'C': cluster = optarg; break;
		case 'v': log_setup(LOG_FMT_PLAIN, LOG_LVL_DEBUG); break;
		case 'h': fputs(dry_run_usage, stdout); strv_clear(&files); return CLI_OK;
		default: strv_clear(&files); return cli_getopt_error("dry-run", dry_run_usage, c, argv, opts);
		}
	}
	bool bad_timeout = false;
	if (timeout_text) {
		char *end;
		errno = 0;
		timeout = strtol(timeout_text, &end, 10);
		bad_timeout = errno || end == timeout_text || *end || timeout < 1 || timeout > 300;
	}
	bool bad_cluster = cluster && *cluster && !cfg_cluster_name_valid(cluster);
	if (optind < argc || files.n == 0 || (strcmp(output, "table") && strcmp(output, "json")) || bad_timeout ||
	    bad_cluster) {
		strv_clear(&files);
		if (optind < argc)
			return cli_usage_error("dry-run", dry_run_usage, "unexpected argument \"%s\"", argv[optind]);
		if (bad_timeout)
			return cli_usage_error("dry-run", dry_run_usage, "--timeout: must be an integer from 1 "
					       "to 300 (seconds), got \"%.80s\"", timeout_text);
		if (bad_cluster)
			return cli_usage_error("dry-run", dry_run_usage, "--cluster-name: 1 to %d of A-Z a-z 0-9 . _ -, "
					       "got \"%.80s\"", POOL_CLUSTER_NAME_MAX, cluster);
		if (strcmp(output, "table") && strcmp(output, "json"))
			return cli_usage_error("dry-run", dry_run_usage, "--output: must be table or json, "
					       "got \"%.80s\"", output);
		return cli_usage_error("dry-run", dry_run_usage, "at least one -f FILE is required");
	}

	/* Every problem of every file, document and pool is found before any call. */
	struct manifest_set set = {0};
	struct manifest_errors errs = {0};
	struct pool_spec **pools = NULL;
	size_t n_pools = 0;
	for (size_t i = 0; i < files.n; i++) {
		struct sp_error err = {0};
		size_t before = set.n;
		if (manifest_load_file(files.v[i], &set, &err) < 0)
			manifest_error(&errs, err.msg);
		else if (set.n == before)
			manifest_error(&errs, (snprintf(err.msg, sizeof(err.msg), "%s: empty (no YAML "
					"document): expected Spotpool manifests (apiVersion " POOL_API_VERSION
					", kind Spotpool)", files.v[i]), err.msg));
	}
	if ((errs.n == 0 || set.n > 0) && manifest_pools_all(&set, &pools, &n_pools, &errs) == 0) {
		struct creds *creds = xcalloc(n_pools + 1, sizeof(*creds));
		resolve_credentials(pools, n_pools, &set, creds, &errs);
		if (errs.n == 0)
			rc = dry_run_pools(cli_cvm_endpoint(endpoint), timeout, cluster, &set, pools, creds, n_pools,
					   output);
		for (size_t i = 0; i < n_pools; i++) {
			creds_clear(&creds[i]);
			pool_spec_free(pools[i]);
		}
		free(creds);
		free(pools);
	}
	for (size_t i = 0; i < errs.n; i++) {
		char msg[SP_ERROR_MAX];
		snprintf(msg, sizeof(msg), "%s", errs.list.v[i]);
		fprintf(stderr, "spotpool dry-run: %s\n", log_redact(msg, sizeof(msg)));
	}
	if (errs.more)
		fprintf(stderr, "spotpool dry-run: ... and %zu more problem(s)\n", errs.more);
	if (errs.n > 0) {
		fprintf(stderr, "spotpool dry-run: %zu problem(s) found; nothing was called\n",
			errs.n + errs.more);
		rc = CLI_EINPUT;
	}
	manifest_errors_clear(&errs);
	manifest_set_free(&set);
	strv_clear(&files);
	return rc;
}

