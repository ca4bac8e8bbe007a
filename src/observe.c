/* observe: what a pass knows before it plans. A failed cloud read leaves the instances
 * unknown (never empty): the planner then keeps size and instances as last known. */
#include "observe.h"
#include "log.h"
#include "plan.h"
#include "pool.h"
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A log line about the observed pool. */
#define obs_log(o, level, action, code, ...) log_pool(level, (o)->ns, (o)->name, action, code, __VA_ARGS__)

static int observe_failed(struct observation *o, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int observe_failed(struct observation *o, int code, const char *fmt, ...)
{
	char raw[2 * SP_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	o->code = code;
	log_redact_copy(o->message, sizeof(o->message), raw);
	return code;
}

static int kube_secret_read(void *ctx, const char *ns, const char *name, struct creds *ret, struct sp_error *err)
{
	char *path = xasprintf("/api/v1/namespaces/%s/secrets/%s", ns, name);
	cJSON *secret = NULL;
	struct sp_error e = {0};
	int r = kube_api_get(ctx, path, &secret, &e);
	free(path);
	if (r < 0)
		return sp_fail(err, SP_EAUTH, "cannot read Secret %s/%s named by spec.credentialsSecretRef: %s", ns,
			       name, r == SP_ENOTFOUND ? "not found" : e.msg);
	/* An ID is no secret: not registered for redaction, unlike kube_secret_value's. */
	const char *id64 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(secret, "data"), "secretId"));
	char *id = id64 ? sp_base64_decode(id64, NULL) : NULL;
	char *key = kube_secret_value(secret, "secretKey");
	char *token = kube_secret_value(secret, "token");
	kube_secret_free(secret);
	if (id && key && *id && *key)
		creds_set(ret, id, key, token, "secret");
	else
		r = sp_fail(err, SP_EAUTH, "Secret %s/%s: key %s is %s", ns, name, !id || !*id ? "secretId" : "secretKey",
			    (!id || !key) ? "missing" : "empty");
	sp_secure_free(id);
	sp_secure_free(key);
	sp_secure_free(token);
	return r;
}

struct secret_reader observe_kube_secrets(struct kube_api *kube)
{
	return (struct secret_reader){.read = kube_secret_read, .ctx = kube};
}

int observe_credentials(const struct pool_spec *s, const char *ns, const char *name,
			const struct observe_creds_source *src, struct creds *ret, struct sp_error *err)
{
	const struct creds *d = src->dflt;
	switch (pass_credentials_source(s, d && d->secret_id)) {
	case PASS_CREDS_SECRET:
		if (!src->secrets.read)
			return sp_fail(err, SP_EAUTH, "Secret %s/%s named by spec.credentialsSecretRef: no Secrets "
				       "can be read", ns, s->credentials_secret);
		int r = src->secrets.read(src->secrets.ctx, ns, s->credentials_secret, ret, err);
		if (r < 0)
			return r;
		/* The values a pool's credentials hold are owned by the pool, whatever their
		 * source: an edited or rotated key forgets the old one, and so does the pool's
		 * deletion (ctl.c, on_deleted). */
		log_replace_secret(ns, name, "secretKey", ret->secret_key);
		log_replace_secret(ns, name, "token", ret->token);
		return 0;
	case PASS_CREDS_INLINE:
		creds_set(ret, s->secret_id, s->secret_key, NULL, "spec (inline; prefer credentialsSecretRef)");
		log_replace_secret(ns, name, "secretKey", s->secret_key);
		log_replace_secret(ns, name, "token", NULL);
		return 0;
	case PASS_CREDS_DEFAULT:
		creds_set(ret, d->secret_id, d->secret_key, d->token, d->source);
		log_forget_owner(ns, name);  /* the default's are registered for good */
		return 0;
	case PASS_CREDS_NONE: break;
	}
	return sp_fail(err, SP_EAUTH, "%s", src->no_credentials ? src->no_credentials : "no credentials");
}

void observe_object(struct observation *o, const cJSON *obj, struct answers *answers)
{
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
	free(o->owner);
	o->owner = pool_owner_tag(o->ns, o->name);
	const char *was_degraded = status_condition(status, "Degraded", "status");
	if (was_degraded && strcmp(was_degraded, "True") == 0) {
		const char *reason = status_condition(status, "Degraded", "reason");
		o->start_degraded_reason = xstrdup(reason ? reason : "Unknown");
	}
	o->launch_seq = status_launch_seq(status);
	o->has_found = status_ledger(status, &o->found);
	if (answers && o->has_found && !o->found.ids_known)
		o->found.ids_known = answers_recall(answers, o->owner, o->found.client_token, &o->found.instance_ids);
	else if (answers && !o->has_found)
		answers_forget(answers, o->owner);
	o->has_ledger = status_ledger(status, &o->ledger);
	if (o->has_ledger && o->found.ids_known && !o->ledger.ids_known) {
		o->ledger.ids_known = true;
		for (size_t i = 0; i < o->found.instance_ids.n; i++)
			strv_push(&o->ledger.instance_ids, o->found.instance_ids.v[i]);
	}
	status_recorded(status, &o->seen, &o->seen_live, &o->seen_zones, &o->seen_ips, &o->seen_nodes);
	const cJSON *deleted = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
								"deletionTimestamp");
	o->deleting = deleted != NULL;
	o->deleted_at = cJSON_IsString(deleted) ? sp_parse_time(deleted->valuestring) : 0;
	/* Anything but a settled, ready pool. */
	const char *ready = status_condition(status, "Ready", "status");
	o->unsettled = o->deleting || o->has_ledger || !ready || strcmp(ready, "True") != 0;
}

struct plan_where observe_where(const struct observation *o)
{
	return (struct plan_where){.known = o->instances, .n_known = o->n_instances, .seen = &o->seen,
				   .seen_zones = &o->seen_zones, .ledger = o->has_found ? &o->found : NULL,
				   .region = o->spec->region};
}

/* Lookups by ID of the recorded instances the listing lacks, each in the region it
 * lives in (one call per region: one in the normal case), merged when owned. */
static int confirm_ids(struct observation *o, const struct observe_ports *ports, const char *cluster,
		       const struct strv *confirm, struct sp_error *err)
{
	struct cvm_credentials view = creds_view(&o->creds);
	struct strv regions = {0}, *groups = NULL;
	struct plan_where w = observe_where(o);
	plan_by_region(&w, confirm, &regions, &groups);
	int r = 0;
	for (size_t k = 0; k < regions.n && r == 0; k++) {
		struct pool_instance *found = NULL;
		size_t n_found = 0;
		r = ports->cvm.describe_ids(ports->cvm.ctx, &view, regions.v[k], &groups[k], ports->until, &found,
					    &n_found, err);
		if (r == 0)
			plan_merge_owned(&o->instances, &o->n_instances, found, n_found, o->owner, cluster, &o->foreign);
		if (r == 0 && strcmp(regions.v[k], o->spec->region) != 0)
			obs_log(o, LOG_LVL_WARN, "region", NULL, "%zu recorded instance(s) live in region %s, not "
				"the pool's %s: looked up there (%zu found)", groups[k].n, regions.v[k],
				o->spec->region, n_found);
		free(found);
	}
	plan_by_region_free(&regions, groups);
	return r;
}

/* The owned instances: the listing, plus what lookups by ID show of the recorded
 * instances it lacks (the tag index lags). On failure nothing is known. */
static int observe_cloud(struct observation *o, const struct observe_ports *ports, const char *cluster)
{
	struct cvm_credentials view = creds_view(&o->creds);
	struct sp_error *err = &o->error;
	int r = ports->inv.read(ports->inv.ctx, &view, o->spec->region, o->owner, o->unsettled,
				OBSERVE_READ_TIMEOUT_MS, &o->instances, &o->n_instances, err);
	/* The account's listing also holds this pool name's instances of other clusters. */
	size_t kept = 0;
	for (size_t i = 0; r == 0 && i < o->n_instances; i++)
		if (plan_owns(&o->instances[i], o->owner, cluster))
			o->instances[kept++] = o->instances[i];
	if (r == 0)
		o->n_instances = kept;
	struct strv confirm = {0};
	if (r == 0)
		plan_ids_to_confirm(o->instances, o->n_instances, &o->seen, o->has_found ? &o->found : NULL, &confirm);
	if (r == 0 && confirm.n)
		r = confirm_ids(o, ports, cluster, &confirm, err);
	strv_clear(&confirm);
	for (size_t i = 0; i < o->foreign.n; i++)
		obs_log(o, LOG_LVL_WARN, "ownership", NULL, "recorded instance %s is not this pool's "
			"(another pool's or another cluster's tag): ignored, never touched", o->foreign.v[i]);
	if (r < 0) {
		free(o->instances);
		o->instances = NULL;
		o->n_instances = 0;
		return observe_failed(o, r, "cannot read the pool's instances from the cloud (size and instances "
				      "show the last known state): %s", err->msg);
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The Node of each .status.nodeDeletions entry, by name, as the Node cache has it. */
static void observe_deletion_nodes(struct observation *o, const cJSON *status, const struct node_reader *nodes)
{
	struct node_ref *refs = xcalloc(STATUS_MAX_NODE_DELETIONS, sizeof(*refs));
	size_t n = status_node_deletions(status, refs, STATUS_MAX_NODE_DELETIONS);
	o->deletion_refs = refs;
	o->deletion_nodes = xcalloc(n ? n : 1, sizeof(*o->deletion_nodes));
	o->n_deletion_nodes = n;
	for (size_t k = 0; k < n && nodes->get; k++)
		if (nodes->get(nodes->ctx, refs[k].name, &o->deletion_nodes[k]) != 0)
			memset(&o->deletion_nodes[k], 0, sizeof(o->deletion_nodes[k]));
}

/* The observed instances (node_match: a claim by ID with the private IP the cloud
 * reports, or by that IP alone), then the recorded ones not observed (by ID with the
 * recorded private IP, or by the recorded Node name and private IP for a Node that
 * declares no ID: a gone instance's address alone may be another's by now; an observed
 * one's Node is its instance's, which a second want of its ID would not get). */
struct node_want *observe_node_wants(const struct observation *o, size_t *ret_n)
{
	size_t n = o->n_instances + o->seen.n;
	struct node_want *want = xcalloc(n ? n : 1, sizeof(*want));
	const char **observed = xcalloc(o->n_instances ? o->n_instances : 1, sizeof(*observed));
	for (size_t i = 0; i < o->n_instances; i++) {
		want[i] = (struct node_want){.id = o->instances[i].id, .ip = o->instances[i].private_ip,
					     .launched = o->instances[i].created};
		observed[i] = o->instances[i].id;
	}
	qsort(observed, o->n_instances, sizeof(*observed), cmp_str);
	for (size_t i = 0; i < o->seen.n; i++) {
		const char *id = o->seen.v[i];
		if (!bsearch(&id, observed, o->n_instances, sizeof(*observed), cmp_str))
			want[o->n_instances + i] = (struct node_want){.id = id, .ip = o->seen_ips.v[i], .recorded = true,
								      .node = o->seen_nodes.v[i]};
	}
	free(observed);
	*ret_n = n;
	return want;
}

/* The Nodes of the pool's instances, as the Node cache has them (observe_node_wants). */
static void observe_nodes(struct observation *o, const cJSON *status, const struct node_reader *nodes)
{
	if (!nodes->find)
		return;
	size_t n;
	struct node_want *want = observe_node_wants(o, &n);
	o->nodes = xcalloc(n ? n : 1, sizeof(*o->nodes));
	enum node_by *by = xcalloc(n ? n : 1, sizeof(*by));
	char *pool = xasprintf("%s/%s", o->ns, o->name);
	int r = nodes->find(nodes->ctx, pool, want, n, o->nodes, by, &o->refused);
	if (r < 0) {
		free(o->nodes);
		o->nodes = NULL;
		node_refusals_clear(&o->refused);
		o->nodes_pending = r != SP_EFORBIDDEN;
	} else {
		observe_deletion_nodes(o, status, nodes);
	}
	o->n_nodes = o->n_instances;
	free(pool);
	free(by);
	free(want);
}

/* The reclaim deadlines SpotNotices announced for the observed instances. */
static void observe_notices(struct observation *o, const struct notice_reader *notices)
{
	if (!notices->find)
		return;
	const char **ids = xcalloc(o->n_instances ? o->n_instances : 1, sizeof(*ids));
	for (size_t i = 0; i < o->n_instances; i++)
		ids[i] = o->instances[i].id;
	o->notice_at = xcalloc(o->n_instances ? o->n_instances : 1, sizeof(*o->notice_at));
	o->n_notice_at = o->n_instances;
	char *pool = xasprintf("%s/%s", o->ns, o->name);
	o->notices_pending = notices->find(notices->ctx, pool, ids, o->n_instances, o->notice_at) < 0;
	free(pool);
	free(ids);
}

/* The account the credentials belong to, from the controller's memory, else asked of STS
 * (a failure asked again after a backoff). Unknown leaves o->account empty: the planner
 * then goes by what the cloud shows. */
static void learn_account(struct observation *o, const struct observe_ports *ports)
{
	if (!ports->accounts || !ports->cvm.caller_identity)
		return;
	char fp[ACCT_FP_MAX + 1];
	enum acct_state s = acct_get(ports->accounts, o->creds.secret_id, ports->clock.mono_ms(ports->clock.ctx), fp);
	if (s == ACCT_ASK) {
		struct cvm_credentials view = creds_view(&o->creds);
		char id[CVM_ACCOUNT_ID_MAX + 1];
		struct sp_error err = {0};
		int r = ports->cvm.caller_identity(ports->cvm.ctx, &view, o->spec->region, ports->until, id, &err);
		if (r < 0) {
			acct_failed(ports->accounts, o->creds.secret_id, ports->clock.mono_ms(ports->clock.ctx));
			obs_log(o, LOG_LVL_WARN, "account", err.reason, "cannot learn the credentials' account "
				"(STS GetCallerIdentity), the recorded instances decide meanwhile: %s", err.msg);
			return;
		}
		pass_account_fingerprint(id, fp);
		acct_learned(ports->accounts, o->creds.secret_id, fp);
		s = ACCT_KNOWN;
	}
	if (s == ACCT_KNOWN)
		snprintf(o->account, sizeof(o->account), "%s", fp);
}

static int credentials(struct observation *o, const struct observe_options *opt)
{
	o->insecure = pass_credentials_source(o->spec, true) == PASS_CREDS_INLINE;
	if (opt->creds) {
		creds_set(&o->creds, opt->creds->secret_id, opt->creds->secret_key, opt->creds->token,
			  opt->creds->source);
		return 0;
	}
	struct sp_error err = {0};
	int r = observe_credentials(o->spec, o->ns, o->name, &opt->source, &o->creds, &err);
	if (r < 0) {
		o->error = err;
		return observe_failed(o, r, "%s", err.msg);
	}
	return 0;
}

void observe_pool(struct observation *o, const cJSON *obj, const struct observe_ports *ports,
		  const struct observe_options *opt)
{
	if (credentials(o, opt) == 0 && observe_cloud(o, ports, opt->cluster_name) == 0) {
		pass_key_fingerprint(o->creds.secret_id, o->account_key);
		learn_account(o, ports);
		observe_nodes(o, cJSON_GetObjectItemCaseSensitive(obj, "status"), &ports->nodes);
		observe_notices(o, &ports->notices);
	}
	offer_build(o->spec, &o->offers);
	for (size_t i = 0; i < o->offers.n; i++) {
		struct soldout_key k = {.secret_id = o->creds.secret_id, .region = o->spec->region,
					.zone = o->offers.v[i].zone, .instance_type = o->offers.v[i].instance_type};
		o->probe_at[i] = INT64_MAX;
		o->offer_state[i] = ports->soldout ? soldout_peek(ports->soldout, &k, o->now_ms, &o->probe_at[i])
						   : OFFER_AVAILABLE;
	}
	o->soldout_ttl_ms = ports->soldout ? soldout_ttl(ports->soldout) : SOLDOUT_TTL_DEFAULT_MS;
}

void observe_input(const struct observation *o, const cJSON *obj, struct pass_input *in)
{
	*in = (struct pass_input){
		.ns = o->ns, .name = o->name, .spec = o->spec, .deleting = o->deleting, .deleted_at = o->deleted_at,
		.finalizer = pool_has_finalizer(obj), .old_status = cJSON_GetObjectItemCaseSensitive(obj, "status"),
		.generation = pool_json_int64(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "generation")),
		.start_degraded_reason = o->start_degraded_reason, .observe_code = o->code,
		.observe_message = o->message, .insecure_credentials = o->insecure,
		.plan = {
			.spec = o->spec, .instances = o->instances, .n_instances = o->n_instances,
			.seen = &o->seen, .seen_live = &o->seen_live, .foreign = &o->foreign,
			.ledger = o->has_found ? &o->found : NULL, .now = o->now, .deleting = o->deleting,
		},
		.ledger = o->has_ledger ? &o->ledger : NULL, .launch_seq = o->launch_seq,
		.offers = &o->offers, .offer_state = o->offer_state, .probe_at_ms = o->probe_at, .now_ms = o->now_ms,
		.soldout_ttl_ms = o->soldout_ttl_ms,
		.nodes = o->nodes, .n_nodes = o->n_nodes, .recorded_nodes = o->nodes ? o->nodes + o->n_nodes : NULL,
		.deletion_refs = o->deletion_refs, .deletion_nodes = o->deletion_nodes,
		.n_deletion_nodes = o->n_deletion_nodes,
		.refused = o->refused.v, .n_refused = o->refused.n,
		.nodes_pending = o->nodes_pending, .notice_at = o->notice_at,
		.n_notice_at = o->n_notice_at, .notices_pending = o->notices_pending,
		.account_key = *o->account_key ? o->account_key : NULL,
		.account = *o->account ? o->account : NULL,
	};
}

void observation_free(struct observation *o)
{
	plan_launch_clear(&o->found);
	plan_launch_clear(&o->ledger);
	creds_clear(&o->creds);
	free(o->instances);
	free(o->nodes);
	free(o->deletion_refs);
	free(o->deletion_nodes);
	node_refusals_clear(&o->refused);
	free(o->notice_at);
	strv_clear(&o->seen);
	strv_clear(&o->seen_live);
	strv_clear(&o->seen_zones);
	strv_clear(&o->seen_ips);
	strv_clear(&o->seen_nodes);
	strv_clear(&o->foreign);
	free(o->owner);
	free(o->start_degraded_reason);
}
