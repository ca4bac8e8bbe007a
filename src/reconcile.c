/* reconcile: one pass over one pool. Safety rules, in order:
 *  - only instances tagged with the pool's identity are counted or touched;
 *  - a tag listing is a hint: recorded instances it does not show are looked up by ID
 *    before the pool acts on their absence (plan.h);
 *  - a launch is recorded in .status.launch (ClientToken, count) BEFORE RunInstances is
 *    called; every status write (the ledger's and the rest) is guarded by
 *    resourceVersion: a conflict means someone (a spec edit, another leader) changed the
 *    pool, so the pass writes nothing more, reads the pool again and plans anew;
 *  - a launch whose outcome is unknown is repeated with the same token, never forgotten;
 *  - nothing is launched or terminated for a pool whose spec does not validate, and a
 *    deleted pool is cleaned up with its own credentials only: never with others';
 *  - a failed cloud read leaves size and instances as last known, never empty;
 *  - every cloud call, rate-limit wait and apiserver write of a pass ends with the
 *    leadership (the renew deadline, or a step-down): none starts or outlasts it. */
#include "reconcile.h"
#include "acct.h"
#include "log.h"
#include "evict.h"
#include "nodes.h"
#include "offer.h"
#include "plan.h"
#include "pass.h"
#include "pool.h"
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Reports event to the pass's hooks (reconcile_options.hooks), if it has them. */
#define REPORT(p, event, ...)                                                          \
	do {                                                                           \
		const struct reconcile_hooks *h_ = (p)->r->opt->hooks;                 \
		if (h_ && h_->event)                                                   \
			h_->event(h_->userdata, __VA_ARGS__);                          \
	} while (0)

/* Everything one pass knows about its pool: what it observed, and what its actions
 * changed (the object as last written, the ledger, the instances terminated). */
struct pass {
	struct reconciler *r;
	char *ns, *name;
	char *path;                  /* the object's API path */
	bool patched;                /* obj is what one of this pass's patches returned */
	char *owner;                 /* the pool's tag value */
	cJSON *obj;
	const cJSON *old_status;
	struct pool_spec *spec;      /* NULL when the spec does not validate (and not deleting) */
	bool spec_valid;
	char spec_error[SP_ERROR_MAX];
	bool deleting;
	int64_t deleted_at;          /* metadata.deletionTimestamp, epoch s (0: unknown) */
	/* Leading when the pass began: the one read that decided whether to observe. A pass
	 * may lose leadership midway (every action checks again), never gain it. */
	bool active;
	/* The wall time (s) and monotonic ms the pass observed at: every plan of the pass
	 * judges the observation (the launch grace, the sold-out memory) at that time. */
	int64_t now, now_ms;
	struct creds creds;
	char account_key[PASS_KEY_FP_LEN + 1];  /* the credentials' key fingerprint, "": none */
	char account[PASS_ACCOUNT_FP_LEN + 1];  /* their account's fingerprint, "": not learned */
	bool insecure;
	int observe_code;            /* < 0: credentials or the cloud could not be read */
	char observe_message[SP_ERROR_MAX];
	struct pool_instance *instances;  /* owned instances known this pass */
	size_t n_instances;
	struct strv seen, seen_live; /* recorded by earlier passes (.status.instances) */
	struct strv seen_zones;      /* the zone recorded with each of seen ("": none) */
	struct strv seen_ips;        /* seen's recorded private IPs, "" none */
	struct strv seen_nodes;      /* seen's recorded Node names, "" none */
	struct strv foreign;         /* recorded IDs that turned out not to be ours */
	struct strv terminated;      /* terminated by this pass */
	/* The Nodes of instances[0..n_nodes) and then of seen, NULL: unknown. */
	struct node_view *nodes;
	size_t n_nodes;
	struct node_refusals refused; /* the Node claims to them not honoured */
	/* The Node of each .status.nodeDeletions entry by name (name empty: none), NULL:
	 * unknown. */
	struct node_view *deletion_nodes;
	size_t n_deletion_nodes;
	bool nodes_pending;          /* Nodes are on but not listed yet */
	/* instances[i]'s SpotNotice deadline for i < n_notice_at (those observed before a
	 * sweep appended more), NULL: none read */
	int64_t *notice_at;
	size_t n_notice_at;
	bool notices_pending;        /* SpotNotices not listed yet */
	/* The pods of nodes[0..n_nodes) once PASS_LIST_PODS listed them, NULL before. */
	struct pass_pods *pods;
	struct plan_launch found;    /* the ledger as the pass found it */
	bool has_found;
	struct plan_launch ledger;   /* the ledger as the status says now */
	bool has_ledger;
	int64_t launch_seq;
	bool swept;
	char *start_degraded_reason;
	struct offer_list offers;
	enum offer_state offer_state[OFFER_MAX];
	int64_t probe_at[OFFER_MAX];
	/* A sold-out offering's probe this pass took and has not launched on yet: given
	 * back when the pass ends early (a conflict, leadership lost), not held for the
	 * probe lease against every pool of the account. */
	bool holding_probe;
	char probe_zone[POOL_ZONE_MAX + 1], probe_type[POOL_INSTANCE_TYPE_MAX + 1];
	struct pass_done done;
	/* The failure the pass ends with (pass_actions.degraded_*), NULL: none. */
	const char *degraded_reason;
	char degraded_message[SP_ERROR_MAX];
	struct reconcile_result *res;
};


static void pool_log(struct pass *p, enum log_level level, const char *action, const char *code,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void pool_log(struct pass *p, enum log_level level, const char *action, const char *code,
		     const char *fmt, ...)
{
	struct log_fields f = {.ns = p->ns, .pool = p->name, .action = action, .error_code = code};
	char *msg;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	log_fields_msg(level, &f, "%s/%s: %s", p->ns, p->name, msg);
	free(msg);
}

static int64_t now_ms(const struct pass *p)
{
	return p->r->clock.mono_ms(p->r->clock.ctx);
}

static int64_t now_s(const struct pass *p)
{
	return p->r->clock.now(p->r->clock.ctx);
}

/* Leadership can be lost mid-pass: every mutation checks it again just before acting. */
static int still_leading(struct pass *p)
{
	if (now_ms(p) < atomic_load(p->r->active_until_ms))
		return 0;
	pool_log(p, LOG_LVL_INFO, "leadership", NULL, "no longer the leader, not acting");
	return SP_ETRANSIENT;
}

static void emit_event(struct pass *p, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void emit_event(struct pass *p, const char *type, const char *reason, const char *fmt, ...)
{
	/* A deposed leader's events would describe actions it no longer takes (or that the
	 * new leader contradicts): record nothing; the log still has it. */
	if (now_ms(p) >= atomic_load(p->r->active_until_ms))
		return;
	char raw[2048], msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	log_redact_copy(msg, sizeof(msg), raw);
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(p->obj, "metadata");
	char now[32];
	sp_format_time(now_s(p), now);
	cJSON *ev = cJSON_CreateObject();
	cJSON *emd = cJSON_AddObjectToObject(ev, "metadata");
	char *gen_name = xasprintf("%s.", p->name);
	cJSON_AddStringToObject(emd, "generateName", gen_name);
	free(gen_name);
	cJSON_AddStringToObject(emd, "namespace", p->ns);
	cJSON *inv = cJSON_AddObjectToObject(ev, "involvedObject");
	cJSON_AddStringToObject(inv, "apiVersion", POOL_API_VERSION);
	cJSON_AddStringToObject(inv, "kind", POOL_KIND);
	cJSON_AddStringToObject(inv, "namespace", p->ns);
	cJSON_AddStringToObject(inv, "name", p->name);
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(md, "uid");
	if (cJSON_IsString(uid))
		cJSON_AddStringToObject(inv, "uid", uid->valuestring);
	cJSON_AddStringToObject(ev, "type", type);
	cJSON_AddStringToObject(ev, "reason", reason);
	cJSON_AddStringToObject(ev, "message", msg);
	cJSON_AddStringToObject(ev, "firstTimestamp", now);
	cJSON_AddStringToObject(ev, "lastTimestamp", now);
	cJSON_AddNumberToObject(ev, "count", 1);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(ev, "source"), "component", "spotpool");
	cJSON_AddStringToObject(ev, "reportingComponent", "spotpool");
	cJSON_AddStringToObject(ev, "reportingInstance",
				p->r->opt->identity ? p->r->opt->identity : "spotpool");
	char *path = xasprintf("/api/v1/namespaces/%s/events", p->ns);
	struct sp_error err = {0};
	if (p->r->kube.request(p->r->kube.ctx, "POST", path, NULL, ev, NULL, &err) < 0)
		pool_log(p, LOG_LVL_WARN, "event", err.reason, "cannot record event: %s", err.msg);
	free(path);
	cJSON_Delete(ev);
}


static void add_resource_version(cJSON *patch, const cJSON *obj)
{
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
	if (cJSON_IsString(rv)) {
		cJSON *md = cJSON_GetObjectItemCaseSensitive(patch, "metadata");
		if (!md)
			md = cJSON_AddObjectToObject(patch, "metadata");
		cJSON_AddStringToObject(md, "resourceVersion", rv->valuestring);
	}
}

/* Sends a merge patch carrying the resourceVersion this pass read (or last wrote): a
 * late write from a deposed leader, or one built on a pool that changed since, is then
 * a conflict instead of erasing what someone else recorded. The object the apiserver
 * returns replaces ours, so later steps see what was written. Takes patch. */
static int apply_patch(struct pass *p, const char *path, cJSON *patch, struct sp_error *err)
{
	add_resource_version(patch, p->obj);
	cJSON *updated = NULL;
	int r = kube_api_merge_patch(&p->r->kube, path, patch, &updated, err);
	cJSON_Delete(patch);
	if (r == 0) {
		cJSON_Delete(p->obj);
		p->obj = updated;
		p->old_status = cJSON_GetObjectItemCaseSensitive(p->obj, "status");
		p->patched = true;
	}
	return r;
}

static int set_finalizer(struct pass *p, bool present, struct sp_error *err)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(p->obj, "metadata");
	cJSON *patch = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(cJSON_AddObjectToObject(patch, "metadata"), "finalizers");
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(md, "finalizers"))
		if (cJSON_IsString(f) && strcmp(f->valuestring, POOL_FINALIZER) != 0)
			cJSON_AddItemToArray(list, cJSON_CreateString(f->valuestring));
	if (present)
		cJSON_AddItemToArray(list, cJSON_CreateString(POOL_FINALIZER));
	return apply_patch(p, p->path, patch, err);
}

/* Writes status; the launch -> Node Ready times it shows first go to the metric once
 * written (status_newly_ready). */
static int write_status(struct pass *p, const cJSON *status, struct sp_error *err)
{
	int64_t ready[64];
	size_t n_ready = status_newly_ready(p->old_status, status, ready, sizeof(ready) / sizeof(*ready));
	cJSON *patch = cJSON_CreateObject();
	cJSON_AddItemToObject(patch, "status", cJSON_Duplicate(status, true));
	char *path = xasprintf("%s/status", p->path);
	int r = apply_patch(p, path, patch, err);
	free(path);
	for (size_t i = 0; r == 0 && i < n_ready; i++)
		REPORT(p, node_ready, (double)ready[i]);
	return r;
}

static int observe_failed(struct pass *p, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int observe_failed(struct pass *p, int code, const char *fmt, ...)
{
	char raw[2 * SP_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	p->observe_code = code;
	log_redact_copy(p->observe_message, sizeof(p->observe_message), raw);
	return code;
}

/* The credentials of pass_credentials_source's choice. */
static int resolve_credentials(struct pass *p)
{
	const struct pool_spec *s = p->spec;
	const struct creds *d = p->r->opt->default_creds;
	switch (pass_credentials_source(s, d && d->secret_id)) {
	case PASS_CREDS_SECRET: break;
	case PASS_CREDS_INLINE:
		creds_set(&p->creds, s->secret_id, s->secret_key, NULL, "spec");
		/* The values a pool's credentials hold are owned by the pool, whatever their
		 * source: an edited or rotated key forgets the old one, and so does the
		 * pool's deletion (ctl.c, on_deleted). */
		log_replace_secret(p->ns, p->name, "secretKey", s->secret_key);
		log_replace_secret(p->ns, p->name, "token", NULL);
		p->insecure = true;
		return 0;
	case PASS_CREDS_DEFAULT:
		creds_set(&p->creds, d->secret_id, d->secret_key, d->token, d->source);
		log_forget_owner(p->ns, p->name);  /* the controller's own are registered for good */
		return 0;
	case PASS_CREDS_NONE:
		return observe_failed(p, SP_EAUTH, "no credentials: set spec.credentialsSecretRef, or give the "
				      "controller TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY");
	}
	char *path = xasprintf("/api/v1/namespaces/%s/secrets/%s", p->ns, s->credentials_secret);
	cJSON *secret = NULL;
	struct sp_error err = {0};
	int r = kube_api_get(&p->r->kube, path, &secret, &err);
	free(path);
	if (r < 0)
		return observe_failed(p, SP_EAUTH, "cannot read Secret %s/%s named by spec.credentialsSecretRef: %s",
				      p->ns, s->credentials_secret, r == SP_ENOTFOUND ? "not found" : err.msg);
	/* An ID is no secret: not registered for redaction, unlike kube_secret_value's. */
	const char *id64 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(secret, "data"), "secretId"));
	char *id = id64 ? sp_base64_decode(id64, NULL) : NULL;
	char *key = kube_secret_value(secret, "secretKey");
	char *token = kube_secret_value(secret, "token");
	kube_secret_free(secret);
	int rc = 0;
	if (id && key && *id && *key) {
		creds_set(&p->creds, id, key, token, "secret");
		log_replace_secret(p->ns, p->name, "secretKey", key);  /* owned by the pool, as above */
		log_replace_secret(p->ns, p->name, "token", token);
	} else {
		rc = observe_failed(p, SP_EAUTH, "Secret %s/%s: key %s is %s", p->ns, s->credentials_secret,
				    !id || !*id ? "secretId" : "secretKey", (!id || !key) ? "missing" : "empty");
	}
	sp_secure_free(id);
	sp_secure_free(key);
	sp_secure_free(token);
	return rc;
}

/* Whether the pool may need the inventory's fast cadence: anything but a settled,
 * ready pool. */
static bool unsettled(const struct pass *p)
{
	const char *ready = status_condition(p->old_status, "Ready", "status");
	return p->deleting || p->has_ledger || !ready || strcmp(ready, "True") != 0;
}

/* Where the pass's instances live (plan_by_region). */
static struct plan_where where(const struct pass *p)
{
	return (struct plan_where){.known = p->instances, .n_known = p->n_instances, .seen = &p->seen,
				   .seen_zones = &p->seen_zones, .ledger = p->has_found ? &p->found : NULL,
				   .region = p->spec->region};
}

/* Lookups by ID of the recorded instances the listing lacks, each in the region it
 * lives in (one call per region: one in the normal case), merged when owned. */
static int confirm_ids(struct pass *p, const struct strv *confirm, struct sp_error *err)
{
	struct cvm_credentials view = creds_view(&p->creds);
	struct strv regions = {0}, *groups = NULL;
	struct plan_where w = where(p);
	plan_by_region(&w, confirm, &regions, &groups);
	int r = 0;
	for (size_t k = 0; k < regions.n && r == 0; k++) {
		struct pool_instance *found = NULL;
		size_t n_found = 0;
		r = p->r->cvm.describe_ids(p->r->cvm.ctx, &view, regions.v[k], &groups[k], p->r->active_until_ms,
					   &found, &n_found, err);
		if (r == 0)
			plan_merge_owned(&p->instances, &p->n_instances, found, n_found, p->owner,
					 p->r->opt->cluster_name, &p->foreign);
		if (r == 0 && strcmp(regions.v[k], p->spec->region) != 0)
			pool_log(p, LOG_LVL_WARN, "region", NULL, "%zu recorded instance(s) live in region %s, not "
				 "the pool's %s: looked up there (%zu found)", groups[k].n, regions.v[k],
				 p->spec->region, n_found);
		free(found);
	}
	plan_by_region_free(&regions, groups);
	return r;
}

/* The owned instances: the shared inventory's listing, plus what lookups by ID show of
 * the recorded instances it lacks (the tag index lags). On failure nothing is known. */
static int observe_cloud(struct pass *p)
{
	struct cvm_credentials view = creds_view(&p->creds);
	struct sp_error err = {0};
	int r = p->r->inv.read(p->r->inv.ctx, &view, p->spec->region, p->owner, unsettled(p),
			       RECONCILE_READ_TIMEOUT_MS, &p->instances, &p->n_instances, &err);
	/* The account's listing also holds this pool name's instances of other clusters. */
	size_t kept = 0;
	for (size_t i = 0; r == 0 && i < p->n_instances; i++)
		if (plan_owns(&p->instances[i], p->owner, p->r->opt->cluster_name))
			p->instances[kept++] = p->instances[i];
	if (r == 0)
		p->n_instances = kept;
	struct strv confirm = {0};
	if (r == 0)
		plan_ids_to_confirm(p->instances, p->n_instances, &p->seen, p->has_found ? &p->found : NULL,
				    &confirm);
	if (r == 0 && confirm.n)
		r = confirm_ids(p, &confirm, &err);
	strv_clear(&confirm);
	for (size_t i = 0; i < p->foreign.n; i++)
		pool_log(p, LOG_LVL_WARN, "ownership", NULL, "recorded instance %s is not this pool's "
			 "(another pool's or another cluster's tag): ignored, never touched", p->foreign.v[i]);
	if (r < 0) {
		free(p->instances);
		p->instances = NULL;
		p->n_instances = 0;
		return observe_failed(p, r, "cannot read the pool's instances from the cloud (size and instances "
				      "show the last known state): %s", err.msg);
	}
	return 0;
}

static struct soldout_key offer_key(const struct pass *p, const char *zone, const char *type)
{
	return (struct soldout_key){.secret_id = p->creds.secret_id, .region = p->spec->region,
				    .zone = zone, .instance_type = type};
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The Node of each .status.nodeDeletions entry, by name, as the Node cache has it. */
static void observe_deletion_nodes(struct pass *p)
{
	struct node_ref refs[STATUS_MAX_NODE_DELETIONS];
	size_t n = status_node_deletions(p->old_status, refs, STATUS_MAX_NODE_DELETIONS);
	p->deletion_nodes = xcalloc(n ? n : 1, sizeof(*p->deletion_nodes));
	p->n_deletion_nodes = n;
	for (size_t k = 0; k < n && p->r->nodes.get; k++)
		if (p->r->nodes.get(p->r->nodes.ctx, refs[k].name, &p->deletion_nodes[k]) != 0)
			memset(&p->deletion_nodes[k], 0, sizeof(p->deletion_nodes[k]));
}

/* What the pass looks for Nodes of (n of them): the observed instances (node_match: a
 * claim by ID with the private IP the cloud reports, or by that IP alone), then the
 * recorded ones not observed (by ID with the recorded private IP, or by the recorded
 * Node name and private IP for a Node that declares no ID: a gone instance's address
 * alone may be another's by now; an observed one's Node is its instance's, which a
 * second want of its ID would not get). */
static struct node_want *node_wants(const struct pass *p, size_t *ret_n)
{
	size_t n = p->n_instances + p->seen.n;
	struct node_want *want = xcalloc(n ? n : 1, sizeof(*want));
	const char **observed = xcalloc(p->n_instances ? p->n_instances : 1, sizeof(*observed));
	for (size_t i = 0; i < p->n_instances; i++) {
		want[i] = (struct node_want){.id = p->instances[i].id, .ip = p->instances[i].private_ip,
					     .launched = p->instances[i].created};
		observed[i] = p->instances[i].id;
	}
	qsort(observed, p->n_instances, sizeof(*observed), cmp_str);
	for (size_t i = 0; i < p->seen.n; i++) {
		const char *id = p->seen.v[i];
		if (!bsearch(&id, observed, p->n_instances, sizeof(*observed), cmp_str))
			want[p->n_instances + i] = (struct node_want){.id = id, .ip = p->seen_ips.v[i], .recorded = true,
								      .node = p->seen_nodes.v[i]};
	}
	free(observed);
	*ret_n = n;
	return want;
}

/* The Nodes of the pool's instances, as the Node cache has them (node_wants). */
static void observe_nodes(struct pass *p)
{
	if (!p->r->nodes.find)
		return;
	size_t n;
	struct node_want *want = node_wants(p, &n);
	p->nodes = xcalloc(n ? n : 1, sizeof(*p->nodes));
	enum node_by *by = xcalloc(n ? n : 1, sizeof(*by));
	char *pool = xasprintf("%s/%s", p->ns, p->name);
	int r = p->r->nodes.find(p->r->nodes.ctx, pool, want, n, p->nodes, by, &p->refused);
	if (r < 0) {
		free(p->nodes);
		p->nodes = NULL;
		node_refusals_clear(&p->refused);
		p->nodes_pending = r != SP_EFORBIDDEN;
	} else {
		observe_deletion_nodes(p);
	}
	p->n_nodes = p->n_instances;
	free(pool);
	free(by);
	free(want);
}

/* The reclaim deadlines SpotNotices announced for the observed instances. */
static void observe_notices(struct pass *p)
{
	if (!p->r->notices.find)
		return;
	const char **ids = xcalloc(p->n_instances ? p->n_instances : 1, sizeof(*ids));
	for (size_t i = 0; i < p->n_instances; i++)
		ids[i] = p->instances[i].id;
	p->notice_at = xcalloc(p->n_instances ? p->n_instances : 1, sizeof(*p->notice_at));
	p->n_notice_at = p->n_instances;
	char *pool = xasprintf("%s/%s", p->ns, p->name);
	p->notices_pending = p->r->notices.find(p->r->notices.ctx, pool, ids, p->n_instances, p->notice_at) < 0;
	free(pool);
	free(ids);
}

/* The account the credentials belong to, from the controller's memory, else asked of STS
 * (a failure asked again after a backoff). Unknown leaves p->account empty: the planner
 * then goes by what the cloud shows. */
static void learn_account(struct pass *p)
{
	if (!p->r->accounts || !p->r->cvm.caller_identity)
		return;
	char fp[ACCT_FP_MAX + 1];
	enum acct_state s = acct_get(p->r->accounts, p->creds.secret_id, now_ms(p), fp);
	if (s == ACCT_ASK) {
		struct cvm_credentials view = creds_view(&p->creds);
		char id[CVM_ACCOUNT_ID_MAX + 1];
		struct sp_error err = {0};
		int r = p->r->cvm.caller_identity(p->r->cvm.ctx, &view, p->spec->region, p->r->active_until_ms, id, &err);
		if (r < 0) {
			acct_failed(p->r->accounts, p->creds.secret_id, now_ms(p));
			pool_log(p, LOG_LVL_WARN, "account", err.reason, "cannot learn the credentials' account "
				 "(STS GetCallerIdentity), the recorded instances decide meanwhile: %s", err.msg);
			return;
		}
		pass_account_fingerprint(id, fp);
		acct_learned(p->r->accounts, p->creds.secret_id, fp);
		s = ACCT_KNOWN;
	}
	if (s == ACCT_KNOWN)
		snprintf(p->account, sizeof(p->account), "%s", fp);
}

/* Everything the pass knows before it acts. */
static void observe(struct pass *p)
{
	if (resolve_credentials(p) == 0 && observe_cloud(p) == 0) {
		pass_key_fingerprint(p->creds.secret_id, p->account_key);
		learn_account(p);
		observe_nodes(p);
		observe_notices(p);
	}
	offer_build(p->spec, &p->offers);
	for (size_t i = 0; i < p->offers.n; i++) {
		struct soldout_key k = offer_key(p, p->offers.v[i].zone, p->offers.v[i].instance_type);
		p->probe_at[i] = INT64_MAX;
		p->offer_state[i] = soldout_peek(p->r->soldout, &k, p->now_ms, &p->probe_at[i]);
	}
}

/* Executors, one per action kind: each does what the action says and answers with 0 or
 * an SP_E* code (err says why). */

static int do_sweep(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)a;
	struct cvm_credentials view = creds_view(&p->creds);
	/* Ledgers record their offering's zone; older ones launched in the spec's (a spec
	 * that no longer validates has none: the whole region is listed). */
	const char *zone = *p->found.zone ? p->found.zone : p->spec->zone;
	char region[POOL_ZONE_MAX + 1];
	if (!pool_zone_region(zone, region, sizeof(region)))  /* in its zone's region (D3) */
		snprintf(region, sizeof(region), "%s", p->spec->region);
	struct pool_instance *found = NULL;
	size_t n_found = 0;
	int r = p->r->cvm.find_launched(p->r->cvm.ctx, &view, region, zone, p->found.client_token,
					p->r->active_until_ms, &found, &n_found, err);
	if (r < 0)
		return r;
	pool_log(p, LOG_LVL_INFO, "finalize", NULL, "launch %s of unknown outcome: %zu instance(s) carry "
		 "its token in a listing without a tag filter", p->found.client_token, n_found);
	plan_merge_owned(&p->instances, &p->n_instances, found, n_found, p->owner, p->r->opt->cluster_name,
			 &p->foreign);
	free(found);
	p->swept = true;
	return 0;
}

static int do_reclaimed(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)err;
	for (size_t i = 0; i < a->ids.n; i++) {
		REPORT(p, instance_reclaimed, p->ns, p->name);
		emit_event(p, "Warning", "InstanceReclaimed",
			   "instance %s is gone or dead without spotpool terminating it (spot reclaim, "
			   "failure, or terminated outside spotpool)", a->ids.v[i]);
	}
	return 0;
}

static int do_ledger(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	int r = write_status(p, a->status, err);
	if (r < 0)
		return r;
	if (p->has_ledger)
		plan_launch_clear(&p->ledger);
	p->has_ledger = a->has_ledger;
	p->ledger = a->ledger;
	p->ledger.instance_ids = (struct strv){0};
	for (size_t i = 0; i < a->ledger.instance_ids.n; i++)
		strv_push(&p->ledger.instance_ids, a->ledger.instance_ids.v[i]);
	p->launch_seq = a->launch_seq;
	return 0;
}

static int run_instances(struct pass *p, const struct pass_action *a, bool dry_run, struct strv *ids,
			 struct sp_error *err)
{
	struct cvm_credentials view = creds_view(&p->creds);
	struct cvm_launch l = {.spec = p->spec, .count = a->count,
			       .client_token = *a->ledger.client_token ? a->ledger.client_token : NULL,
			       .cluster = p->r->opt->cluster_name, .zone = a->zone,
			       .instance_type = a->instance_type, .dry_run = dry_run,
			       .until = p->r->active_until_ms};
	return p->r->cvm.run_instances(p->r->cvm.ctx, &view, &l, ids, err);
}

static int do_launch(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	struct strv ids = {0};
	int64_t started = now_ms(p);
	p->holding_probe = false;  /* from here the probe's outcome is the launch's */
	int r = run_instances(p, a, false, &ids, err);
	REPORT(p, launch_request, p->ns, p->name, r, err->reason);
	REPORT(p, offering_launch, a->zone, a->instance_type, r, err->reason);
	if (r < 0) {
		strv_clear(&ids);
		return r;
	}
	struct cvm_credentials view = creds_view(&p->creds);
	p->r->inv.note_mutation(p->r->inv.ctx, view.secret_id, p->spec->region, p->owner);
	p->ledger.ids_known = true;
	strv_clear(&p->ledger.instance_ids);
	for (size_t i = 0; i < ids.n; i++)
		strv_push(&p->ledger.instance_ids, ids.v[i]);
	/* A repeated token may have launched only now: the grace of IDs no lookup shows yet
	 * starts again. */
	if (!a->fresh)
		p->ledger.started = now_s(p);
	REPORT(p, instances_launched, p->ns, p->name, (int)ids.n);
	struct log_fields f = {.ns = p->ns, .pool = p->name, .action = "RunInstances",
			       .duration_ms = (long)(now_ms(p) - started), .has_duration = true};
	log_fields_msg(LOG_LVL_INFO, &f, "%s/%s: launch %s answered %zu instance(s)", p->ns, p->name,
		       a->ledger.client_token, ids.n);
	strv_clear(&ids);
	return 0;
}

static int do_check_launch(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	struct strv ids = {0};
	int r = run_instances(p, a, true, &ids, err);
	strv_clear(&ids);
	return r;
}

static int do_remember(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)a;
	(void)err;
	answers_remember(p->r->answers, p->owner, p->ledger.client_token, &p->ledger.instance_ids);
	return 0;
}

static int do_soldout(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	struct soldout_key k = offer_key(p, a->zone, a->instance_type);
	switch (a->kind) {
	case PASS_TAKE_PROBE:
		if (!soldout_probe(p->r->soldout, &k, now_ms(p)))
			return sp_fail(err, SP_ECAPACITY, "another pool holds the probe");
		p->holding_probe = true;
		snprintf(p->probe_zone, sizeof(p->probe_zone), "%s", a->zone);
		snprintf(p->probe_type, sizeof(p->probe_type), "%s", a->instance_type);
		return 0;
	case PASS_SOLDOUT_MARK: soldout_mark(p->r->soldout, &k, now_ms(p), 0); return 0;
	case PASS_SOLDOUT_FORGET: soldout_clear(p->r->soldout, &k); return 0;
	default:
		p->holding_probe = false;
		soldout_return_probe(p->r->soldout, &k);
		return 0;
	}
}

/* The pass ended before the probe it holds reached the cloud: given back. */
static void return_held_probe(struct pass *p)
{
	if (!p->holding_probe)
		return;
	struct pass_action a = {.kind = PASS_SOLDOUT_RETURN};
	snprintf(a.zone, sizeof(a.zone), "%s", p->probe_zone);
	snprintf(a.instance_type, sizeof(a.instance_type), "%s", p->probe_type);
	pool_log(p, LOG_LVL_DEBUG, "plan", NULL, "pass ended holding the probe of %s/%s: given back", a.zone,
		 a.instance_type);
	do_soldout(p, &a, NULL);
}

static int do_terminate(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	static const char *const what[] = {
		[PASS_WHY_NONE] = "", [PASS_WHY_SCALE_DOWN] = "scale down", [PASS_WHY_CLEANUP] = "dead instances",
		[PASS_WHY_NOTICE] = "reclaim notice",
		[PASS_WHY_DELETION] = "pool deleted",
	};
	/* Each where it lives: a NotFound in another region would pass for "already gone". */
	struct cvm_credentials view = creds_view(&p->creds);
	struct strv regions = {0}, *groups = NULL;
	struct plan_where w = where(p);
	plan_by_region(&w, &a->ids, &regions, &groups);
	int r = 0;
	for (size_t k = 0; k < regions.n && r == 0; k++) {
		r = p->r->cvm.terminate_instances(p->r->cvm.ctx, &view, regions.v[k], &groups[k],
						  p->r->active_until_ms, err);
		if (r == 0)
			p->r->inv.note_mutation(p->r->inv.ctx, view.secret_id, regions.v[k], p->owner);
	}
	plan_by_region_free(&regions, groups);
	if (r < 0)
		return r;
	char joined[1024] = "";
	for (size_t i = 0; i < a->ids.n; i++) {
		strv_push(&p->terminated, a->ids.v[i]);
		snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? ", " : "",
			 a->ids.v[i]);
	}
	REPORT(p, instances_terminated, p->ns, p->name, a->why, (int)a->ids.n);
	emit_event(p, "Normal", "Terminated", "terminated %zu instance(s) (%s): %s", a->ids.n, what[a->why], joined);
	return 0;
}

/* Whether an entry read back from .status.nodeDeletions (which others than spotpool may
 * write) still names the Node of a gone instance: not an instance this pass sees live,
 * and the Node of that UID declares it (it was matched so; else the entry could name
 * any Node). A Node no longer cached is deleted by its UID all the same (gone already,
 * or the precondition tells). */
static bool carried_deletion_holds(const struct pass *p, const char *name, const char *uid, const char *instance)
{
	for (size_t i = 0; i < p->n_instances; i++)
		if (strcmp(p->instances[i].id, instance) == 0 && plan_classify_state(p->instances[i].state) == PLAN_LIVE)
			return false;
	struct node_view v;
	if (!p->r->nodes.get || p->r->nodes.get(p->r->nodes.ctx, name, &v) != 0 || strcmp(v.uid, uid) != 0)
		return true;
	return *instance && (strcmp(v.provider_id, instance) == 0 || strcmp(v.label_id, instance) == 0);
}

/* The Node of a gone instance, if it is still the Node of that UID. Done (0) too when
 * no such Node is left: gone already, or its name is another Node's now. */
static int do_delete_node(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	const char *name = a->ids.v[0];
	if (a->node_carried && !carried_deletion_holds(p, name, a->node_uid, a->message)) {
		pool_log(p, LOG_LVL_WARN, "node", NULL, "status.nodeDeletions names Node %s (uid %s) for instance %s, "
			 "which is live or that Node does not declare: not deleted, dropped", name, a->node_uid,
			 *a->message ? a->message : "(none)");
		emit_event(p, "Warning", "NodeDeletionRefused", "status.nodeDeletions names Node %s for instance %s, "
			   "which is live or that Node does not declare: not deleted", name, *a->message ? a->message : "(none)");
		return 0;
	}
	int r = nodes_delete(&p->r->kube, name, a->node_uid, err);
	if (r == SP_ENOTFOUND) {
		pool_log(p, LOG_LVL_INFO, "node", NULL, "Node %s (uid %s) of gone instance %s is gone already, or the "
			 "name is another Node's now: not deleted", name, a->node_uid, a->message);
		return 0;
	}
	if (r < 0)
		return r;
	pool_log(p, LOG_LVL_INFO, "node", NULL, "deleted Node %s of gone instance %s", name, a->message);
	emit_event(p, "Normal", "NodeDeleted", "deleted Node %s of gone instance %s", name, a->message);
	return 0;
}

/* The Nodes of the pool's instances as the apiserver lists them now, in place of the
 * cache's (which may lag behind: a Node it does not show yet may carry pods): the planner
 * asks before it acts on an instance having none (terminates it undrained, forgets it
 * gone), and before any Node's pods are listed. A reclaim claim keeps when the cache
 * first saw it; one the cache has not seen yet dooms nothing until it does. */
static int do_find_nodes(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)a;
	size_t n;
	struct node_want *want = node_wants(p, &n);
	struct node_view *views = xcalloc(n ? n : 1, sizeof(*views));
	enum node_by *by = xcalloc(n ? n : 1, sizeof(*by));
	struct node_refusals refused = {0};
	int r = nodes_find_live(&p->r->kube, want, n, views, by, &refused, err);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct node_view cached;
		if (!views[i].terminating_at)
			continue;
		if (p->r->nodes.get && p->r->nodes.get(p->r->nodes.ctx, views[i].name, &cached) == 0 &&
		    cached.terminating_at == views[i].terminating_at)
			views[i].terminating_seen = cached.terminating_seen;
	}
	if (r == 0) {
		free(p->nodes);
		p->nodes = views;
		p->n_nodes = p->n_instances;  /* pods are listed after this only (no p->pods yet) */
		node_refusals_clear(&p->refused);
		p->refused = refused;
		p->nodes_pending = false;
		views = NULL;
	}
	free(views);
	free(by);
	free(want);
	return r;
}

/* The pods of the Nodes asked for, for the drains (a Node gone meanwhile has none), one
 * listing per Node: a Node whose listing fails has its failure recorded (the planner
 * holds that Node's drain alone), the others go on. */
static int do_list_pods(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)err;
	if (!p->pods)
		p->pods = xcalloc(p->n_nodes ? p->n_nodes : 1, sizeof(*p->pods));
	for (size_t i = 0; i < p->n_nodes; i++) {
		if (!*p->nodes[i].name || !strv_contains(&a->ids, p->nodes[i].name) || p->pods[i].listed)
			continue;
		struct drain_pod *pods = NULL;
		size_t n = 0;
		struct sp_error e = {0};
		int r = evict_list_pods(&p->r->kube, p->nodes[i].name, &pods, &n, &e);
		p->pods[i] = (struct pass_pods){.listed = true, .v = pods, .n = n};
		if (r < 0 && r != SP_ENOTFOUND) {
			char msg[SP_ERROR_MAX];
			log_redact_copy(msg, sizeof(msg), e.msg);
			pool_log(p, LOG_LVL_WARN, "drain", *e.reason ? e.reason : NULL, "%s", msg);
			p->pods[i].failed = xstrdup(msg);
		}
	}
	return 0;
}

static int do_drain_node(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	const char *node = a->ids.v[0];
	int r = a->kind == PASS_DRAIN_START ? evict_start(&p->r->kube, node, a->node_uid, p->now, err)
					    : evict_undo(&p->r->kube, node, a->node_uid, a->why ? p->now : 0, err);
	if (r == 0)
		pool_log(p, LOG_LVL_INFO, "drain", NULL, "%s node %s",
			 a->kind == PASS_DRAIN_START ? "tainted and cordoned" : "untainted", node);
	return r;
}

/* Evictions a PodDisruptionBudget refuses (429) or that conflict (409) are asked again
 * at the drain's next look; they are no failure of the pass. */
static int do_evict(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	size_t evicted = 0, refused = 0;
	for (size_t i = 0; i < a->ids.n; i++) {
		char *ns = xstrdup(a->ids.v[i]), *name = strchr(ns, '/');
		*name++ = '\0';
		struct sp_error e = {0};
		int r = evict_pod(&p->r->kube, ns, name, &e);
		if (r == 0)
			evicted++;
		else if (r == SP_ETHROTTLED || r == SP_ECONFLICT)
			refused++;
		free(ns);
		if (r < 0 && r != SP_ETHROTTLED && r != SP_ECONFLICT) {
			*err = e;
			return r;
		}
	}
	REPORT(p, evictions, evicted, refused);
	pool_log(p, LOG_LVL_INFO, "evict", NULL, "evicted %zu pod(s), %zu refused for now", evicted, refused);
	return 0;
}

/* Dry-run: what a terminate or a Node deletion would take goes to the log (and, summed
 * up, to the DryRun event); nothing is called. */
static int do_would(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)err;
	char line[1024];
	pass_action_line(a, line, sizeof(line));
	pool_log(p, LOG_LVL_INFO, "dry-run", NULL, "dry-run, not done: %s", line);
	return 0;
}

static int do_event(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)err;
	emit_event(p, a->event_type, a->reason, "%s", a->message);
	return 0;
}

static int do_finalizer(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	if (a->kind == PASS_RELEASE) {
		pool_log(p, LOG_LVL_INFO, "finalize", NULL, "%s, releasing the resource", a->message);
		answers_forget(p->r->answers, p->owner);
	}
	return set_finalizer(p, a->kind == PASS_ADD_FINALIZER, err);
}

static int do_write_status(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	return write_status(p, a->status, err);
}

/* After a conflict: the pool as the apiserver has it now, handed back as the pass's
 * object so the next pass (requeued at once) plans from it rather than from a cache the
 * watch has not brought up to date yet, which would only conflict again. */
static int do_reread(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)a;
	cJSON *fresh = NULL;
	if (kube_api_get(&p->r->kube, p->path, &fresh, err) < 0)
		return 0;  /* the next pass reads it anyway */
	cJSON_Delete(p->obj);
	p->obj = fresh;
	p->old_status = cJSON_GetObjectItemCaseSensitive(p->obj, "status");
	p->patched = true;
	return 0;
}

static int do_requeue(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)err;
	p->res->requeue_ms = a->requeue_ms;
	p->res->error = a->error;
	return 0;
}

static int (*const executors[])(struct pass *, const struct pass_action *, struct sp_error *) = {
	[PASS_ADD_FINALIZER] = do_finalizer, [PASS_SWEEP] = do_sweep, [PASS_RECLAIMED] = do_reclaimed,
	[PASS_TAKE_PROBE] = do_soldout, [PASS_RECORD_LEDGER] = do_ledger, [PASS_LAUNCH] = do_launch,
	[PASS_CHECK_LAUNCH] = do_check_launch, [PASS_REMEMBER] = do_remember,
	[PASS_SOLDOUT_MARK] = do_soldout, [PASS_SOLDOUT_FORGET] = do_soldout,
	[PASS_SOLDOUT_RETURN] = do_soldout, [PASS_CLEAR_LEDGER] = do_ledger, [PASS_TERMINATE] = do_terminate,
	[PASS_WOULD_TERMINATE] = do_would, [PASS_LIST_PODS] = do_list_pods, [PASS_DRAIN_START] = do_drain_node,
	[PASS_EVICT] = do_evict, [PASS_DRAIN_UNDO] = do_drain_node,
	[PASS_DELETE_NODE] = do_delete_node, [PASS_WOULD_DELETE_NODE] = do_would, [PASS_FIND_NODES] = do_find_nodes,
	[PASS_EVENT] = do_event, [PASS_RELEASE] = do_finalizer, [PASS_WRITE_STATUS] = do_write_status,
	[PASS_REREAD] = do_reread, [PASS_REQUEUE] = do_requeue,
};

/* The action field of an action's log line: what was being done, in the words log
 * queries use (the Tencent action for cloud calls); the message carries the details. */
static const char *const log_actions[] = {
	[PASS_ADD_FINALIZER] = "finalize", [PASS_SWEEP] = "DescribeInstances", [PASS_RECLAIMED] = "reclaim",
	[PASS_TAKE_PROBE] = "offering", [PASS_RECORD_LEDGER] = "ledger", [PASS_LAUNCH] = "RunInstances",
	[PASS_CHECK_LAUNCH] = "RunInstances", [PASS_REMEMBER] = "ledger", [PASS_SOLDOUT_MARK] = "offering",
	[PASS_SOLDOUT_FORGET] = "offering", [PASS_SOLDOUT_RETURN] = "offering", [PASS_CLEAR_LEDGER] = "ledger",
	[PASS_TERMINATE] = "TerminateInstances", [PASS_WOULD_TERMINATE] = "TerminateInstances",
	[PASS_LIST_PODS] = "drain", [PASS_DRAIN_START] = "drain", [PASS_EVICT] = "evict",
	[PASS_DRAIN_UNDO] = "drain", [PASS_DELETE_NODE] = "node", [PASS_WOULD_DELETE_NODE] = "node",
	[PASS_FIND_NODES] = "node", [PASS_EVENT] = "event", [PASS_RELEASE] = "finalize", [PASS_WRITE_STATUS] = "status",
	[PASS_REREAD] = "read", [PASS_REQUEUE] = "requeue",
};
_Static_assert(sizeof(log_actions) / sizeof(*log_actions) == PASS_REQUEUE + 1, "a log action per kind");

static void fill_input(const struct pass *p, struct pass_input *in)
{
	*in = (struct pass_input){
		.ns = p->ns, .name = p->name, .spec = p->spec, .spec_valid = p->spec_valid,
		.spec_error = p->spec_error, .deleting = p->deleting, .deleted_at = p->deleted_at, .finalizer = pool_has_finalizer(p->obj),
		.active = p->active && now_ms(p) < atomic_load(p->r->active_until_ms), .dry_run = p->r->opt->dry_run,
		.old_status = p->old_status,
		.generation = pool_json_int64(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(p->obj, "metadata"), "generation")),
		.start_degraded_reason = p->start_degraded_reason, .observe_code = p->observe_code,
		.observe_message = p->observe_message, .insecure_credentials = p->insecure,
		.plan = {
			.spec = p->spec, .instances = p->instances, .n_instances = p->n_instances,
			.seen = &p->seen, .seen_live = &p->seen_live, .foreign = &p->foreign,
			.ledger = p->has_found ? &p->found : NULL, .now = p->now,
			.launch_grace = p->r->opt->launch_grace_seconds, .deleting = p->deleting,
			.can_repeat_launch = p->spec_valid && !p->r->opt->dry_run, .swept = p->swept,
		},
		.ledger = p->has_ledger ? &p->ledger : NULL, .launch_seq = p->launch_seq,
		.terminated = &p->terminated, .offers = &p->offers, .offer_state = p->offer_state,
		.probe_at_ms = p->probe_at, .now_ms = p->now_ms, .soldout_ttl_ms = soldout_ttl(p->r->soldout),
		.nodes = p->nodes, .n_nodes = p->n_nodes, .recorded_nodes = p->nodes ? p->nodes + p->n_nodes : NULL,
		.deletion_nodes = p->deletion_nodes, .n_deletion_nodes = p->n_deletion_nodes,
		.refused = p->refused.v, .n_refused = p->refused.n,
		.pods = p->pods, .nodes_pending = p->nodes_pending, .notice_at = p->notice_at,
		.n_notice_at = p->n_notice_at, .notices_pending = p->notices_pending,
		.account_key = *p->account_key ? p->account_key : NULL,
		.account = *p->account ? p->account : NULL,
	};
}

/* The actions the pass planned first: logged (info in dry-run mode, where they are all
 * it does; debug otherwise) in pass_action_line's form, which `spotpool dry-run` prints. */
static void log_plan(struct pass *p, const struct pass_actions *acts)
{
	for (size_t i = 0; i < acts->n; i++) {
		char line[1024];
		pass_action_line(&acts->v[i], line, sizeof(line));
		pool_log(p, p->r->opt->dry_run ? LOG_LVL_INFO : LOG_LVL_DEBUG, "plan", NULL, "plan: %s", line);
	}
}

/* Runs the plan's next action, records its answer, plans again: until the plan is
 * empty, or the pass may not go on (leadership ended, shutting down). */
static void execute(struct pass *p)
{
	for (bool first = true;; first = false) {
		struct pass_input in;
		fill_input(p, &in);
		struct pass_actions acts;
		pass_plan(&in, &p->done, &acts);
		if (first)
			log_plan(p, &acts);
		if (first && acts.live >= 0) {
			p->res->live = acts.live;
			if (!p->deleting)
				REPORT(p, pool_sizes, p->ns, p->name, p->spec->minimum, p->spec->maximum, acts.target,
				       acts.live);
		}
		p->degraded_reason = acts.degraded_reason;
		snprintf(p->degraded_message, sizeof(p->degraded_message), "%s", acts.degraded_message);
		const struct pass_action *a = acts.n ? &acts.v[0] : NULL;
		/* Shutting down: the cloud calls in flight were aborted (the observation too),
		 * so what the plan makes of their failure is no failure of the pool. */
		bool go_on = a && (a->kind == PASS_REQUEUE || (!http_aborting() && still_leading(p) == 0));
		struct sp_error err = {0};
		int r = go_on ? executors[a->kind](p, a, &err) : 0;
		if (r < 0) {
			char line[256], msg[SP_ERROR_MAX];
			pass_action_line(a, line, sizeof(line));
			log_redact_copy(msg, sizeof(msg), err.msg);
			/* A probe another pool took first (after this pass observed) is refused:
			 * the offering counts as sold out, nothing failed. Nor did a call our
			 * own shutdown aborted. */
			/* A Node to drain gone, or its name another Node's now: the planner looks
			 * again with the Nodes as they are. */
			enum log_level level = a->kind == PASS_TAKE_PROBE || http_aborting() ? LOG_LVL_DEBUG
					       : r == SP_ECONFLICT || (r == SP_ENOTFOUND && a->kind == PASS_DRAIN_START)
						 ? LOG_LVL_INFO : LOG_LVL_WARN;
			pool_log(p, level, log_actions[a->kind], *err.reason ? err.reason : NULL, "%s: %s: %s", line,
				 r == SP_ECONFLICT ? "pool changed since it was read (planning again)" : "failed", msg);
			/* Shutting down, or leadership ended mid-call: not a failure of the pool
			 * (no episode); the next leader finds the pool as it is. */
			go_on = !http_aborting() && still_leading(p) == 0;
			pass_done_add(&p->done, a, r, err.reason, msg, r == SP_ECAPACITY && cvm_code_is_sold_out(err.reason));
		} else if (go_on) {
			pass_done_add(&p->done, a, 0, NULL, NULL, false);
		}
		if (a && !go_on && a->kind != PASS_REQUEUE)
			p->res->error = SP_ETRANSIENT;
		if (p->done.n == PASS_DONE_MAX) {  /* never, unless the planner loops */
			pool_log(p, LOG_LVL_ERROR, "plan", NULL, "pass stopped after %d actions", PASS_DONE_MAX);
			p->res->error = SP_ETRANSIENT;
			go_on = false;
		}
		pass_actions_free(&acts);
		if (!go_on)
			return;
	}
}

static void free_pass(struct pass *p)
{
	pass_done_free(&p->done);
	plan_launch_clear(&p->found);
	plan_launch_clear(&p->ledger);
	creds_clear(&p->creds);
	free(p->instances);
	for (size_t i = 0; p->pods && i < p->n_nodes; i++) {
		free((struct drain_pod *)p->pods[i].v);
		free((char *)p->pods[i].failed);
	}
	free(p->pods);
	free(p->nodes);
	free(p->deletion_nodes);
	node_refusals_clear(&p->refused);
	free(p->notice_at);
	strv_clear(&p->seen);
	strv_clear(&p->seen_live);
	strv_clear(&p->seen_zones);
	strv_clear(&p->seen_ips);
	strv_clear(&p->seen_nodes);
	strv_clear(&p->foreign);
	strv_clear(&p->terminated);
	pool_spec_free(p->spec);
	cJSON_Delete(p->obj);
	free(p->owner);
	free(p->path);
	free(p->ns);
	free(p->name);
	free(p->start_degraded_reason);
}

/* What the object says: the spec (or what cleanup needs of it), the ledger, the
 * recorded instances, the Degraded condition as found. */
static void read_object(struct pass *p)
{
	p->old_status = cJSON_GetObjectItemCaseSensitive(p->obj, "status");
	const char *was_degraded = status_condition(p->old_status, "Degraded", "status");
	if (was_degraded && strcmp(was_degraded, "True") == 0) {
		const char *reason = status_condition(p->old_status, "Degraded", "reason");
		p->start_degraded_reason = xstrdup(reason ? reason : "Unknown");
	}
	p->launch_seq = status_launch_seq(p->old_status);
	p->has_found = status_ledger(p->old_status, &p->found);
	if (p->has_found && !p->found.ids_known)
		p->found.ids_known = answers_recall(p->r->answers, p->owner, p->found.client_token,
						    &p->found.instance_ids);
	else if (!p->has_found)
		answers_forget(p->r->answers, p->owner);
	p->has_ledger = status_ledger(p->old_status, &p->ledger);
	if (p->has_ledger && p->found.ids_known && !p->ledger.ids_known) {
		p->ledger.ids_known = true;
		for (size_t i = 0; i < p->found.instance_ids.n; i++)
			strv_push(&p->ledger.instance_ids, p->found.instance_ids.v[i]);
	}
	status_recorded(p->old_status, &p->seen, &p->seen_live, &p->seen_zones, &p->seen_ips, &p->seen_nodes);
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(p->obj, "metadata");
	const cJSON *deleted = cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp");
	p->deleting = deleted != NULL;
	p->deleted_at = cJSON_IsString(deleted) ? sp_parse_time(deleted->valuestring) : 0;
	struct sp_error err = {0};
	p->spec_valid = pool_spec_from_object(p->obj, p->ns, &p->spec, &err) == 0;
	if (!p->spec_valid) {
		struct sp_error cerr = {0};
		if (!p->deleting || pool_spec_for_cleanup(p->obj, p->ns, &p->spec, &cerr) < 0)
			log_redact_copy(p->spec_error, sizeof(p->spec_error), p->deleting ? cerr.msg : err.msg);
	}
}

void reconcile_pool(struct reconciler *r, cJSON *obj, struct reconcile_result *res)
{
	*res = (struct reconcile_result){.live = -1};
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *jns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
	const cJSON *jname = cJSON_GetObjectItemCaseSensitive(meta, "name");
	if (!cJSON_IsString(jns) || !cJSON_IsString(jname)) {
		log_warn("a Spotpool without metadata.namespace/name: ignored");
		cJSON_Delete(obj);
		return;
	}
	struct pass p = {.r = r, .obj = obj, .res = res};
	/* Copies: the object is replaced by what each patch returns. */
	p.ns = xstrdup(jns->valuestring);
	p.name = xstrdup(jname->valuestring);
	p.path = xasprintf("/apis/%s/namespaces/%s/spotpools/%s", POOL_API_GROUP "/v1", p.ns, p.name);
	p.owner = pool_owner_tag(p.ns, p.name);

	read_object(&p);
	p.now_ms = now_ms(&p);
	p.now = now_s(&p);
	p.active = p.now_ms < atomic_load(r->active_until_ms);
	if (p.spec && p.active && !(p.deleting && !pool_has_finalizer(p.obj)))
		observe(&p);
	execute(&p);
	return_held_probe(&p);
	/* A failure that leaves the pool short is visible in three places: the Degraded
	 * condition, one Warning event per episode (both planned), and this line; not one
	 * our own shutdown made by aborting the pass's calls (nothing is written then). */
	if (p.degraded_reason)
		pool_log(&p, http_aborting() ? LOG_LVL_DEBUG : LOG_LVL_WARN, "reconcile", NULL, "%s: %s",
			 p.degraded_reason, p.degraded_message);
	if (p.patched && !(p.deleting && !pool_has_finalizer(p.obj))) {
		res->obj = p.obj;
		p.obj = NULL;
	}
	free_pass(&p);
}
