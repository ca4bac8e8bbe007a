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
#include "log.h"
#include "metrics.h"
#include "offer.h"
#include "plan.h"
#include "pool.h"
#include "soldout.h"
#include "status.h"

#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define REQUEUE_PROGRESS_MS 2000
/* A conflict means the object changed under us: look again almost at once. */
#define REQUEUE_CONFLICT_MS 200

/* Everything one pass knows about its pool. */
struct pass {
	struct reconciler *r;
	char *ns, *name;
	char *path;                  /* the object's API path */
	bool patched;                /* obj is what one of this pass's patches returned */
	char *owner;                 /* the pool's tag value */
	cJSON *obj;
	const cJSON *old_status;
	struct pool_spec *spec;      /* NULL when the spec does not validate (and not deleting) */
	int64_t generation;
	bool deleting;
	struct creds creds;
	struct pool_instance *instances;  /* owned instances known this pass */
	size_t n_instances;
	struct strv seen, seen_live; /* recorded by earlier passes (.status.instances) */
	struct strv foreign;         /* recorded IDs that turned out not to be ours */
	struct strv terminated;      /* terminated by this pass */
	struct plan_launch ledger;
	bool has_ledger;
	int64_t launch_seq;
	const char *degraded_reason;
	char degraded_message[SP_ERROR_MAX];
	/* The Degraded condition as the pass found it (NULL: not degraded): what tells a
	 * new failure episode from a repeat, whatever this pass writes meanwhile. */
	char *start_degraded_reason, *start_degraded_message;
	const char *event_reason;    /* the failure episode this pass already posted */
	int run_calls;               /* RunInstances calls made by this pass */
	char last_launch_code[96];   /* Tencent code of the last refused RunInstances */
	char capacity_message[SP_ERROR_MAX]; /* CapacityAvailable=False: what is sold out */
	char progress_message[SP_ERROR_MAX];
	bool insecure;
	bool conflicted;             /* a guarded write found the pool changed: write no more */
};

void reconcile_client_token(const char *uid, const char *ns, const char *name, int64_t seq,
			    char out[65])
{
	char *id = xasprintf("%s/%s/%s", uid ? uid : "", ns, name);
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)id, strlen(id), md);
	free(id);
	char hex[2 * SHA256_DIGEST_LENGTH + 1];
	sp_hex(md, sizeof(md), hex);
	snprintf(out, 65, "spotpool-%.32s-%lld", hex, (long long)seq);
}

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

static const char *reason_for(int code)
{
	switch (code) {
	case SP_EAUTH: return "CredentialsInvalid";
	case SP_ECAPACITY: return "CapacityUnavailable";
	case SP_ECONFIG: return "InvalidParameters";
	case SP_EINVAL: return "InvalidSpec";
	default: return "CloudAPIError";
	}
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
	status_format_time(now_s(p), now);
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

/* A failure that leaves the pool short (or a deleted pool uncleaned) is visible in three
 * places: the Degraded condition with a reason, a log line naming the pool, and one
 * Warning event per episode. The condition's reason (not the message, which carries a
 * fresh RequestId on every call) tells a new episode from a repeat. */
static void fail(struct pass *p, int code, const char *action, const struct sp_error *err,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fail(struct pass *p, int code, const char *action, const struct sp_error *err,
		 const char *fmt, ...)
{
	char what[SP_ERROR_MAX], raw[2 * SP_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* Shutting down, or leadership ended mid-call: not a failure of the pool, no
	 * episode (the next leader finds the pool as it is). */
	if (http_aborting() || now_ms(p) >= atomic_load(p->r->active_until_ms)) {
		pool_log(p, LOG_LVL_INFO, action, NULL, "%s: %s", what,
			 err ? err->msg : http_aborting() ? "shutting down" : "no longer the leader");
		return;
	}
	snprintf(raw, sizeof(raw), "%s%s%s", what, err && *err->msg ? ": " : "", err ? err->msg : "");
	p->degraded_reason = reason_for(code);
	log_redact_copy(p->degraded_message, sizeof(p->degraded_message), raw);
	pool_log(p, LOG_LVL_WARN, action, err && *err->reason ? err->reason : NULL, "%s: %s",
		 p->degraded_reason, p->degraded_message);
	if ((!p->start_degraded_reason || strcmp(p->start_degraded_reason, p->degraded_reason) != 0) &&
	    p->event_reason != p->degraded_reason) {
		emit_event(p, "Warning", p->degraded_reason, "%s", p->degraded_message);
		p->event_reason = p->degraded_reason;
	}
}

static bool has_finalizer(const cJSON *obj)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
			       cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "finalizers"))
		if (cJSON_IsString(f) && strcmp(f->valuestring, POOL_FINALIZER) == 0)
			return true;
	return false;
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

/* Sends a merge patch; the object the apiserver returns replaces ours, so later
 * steps of the pass see what was written. Takes ownership of patch. After a conflict
 * nothing more is sent: the pass's view is stale, and a write built on it could undo
 * what the other writer recorded. */
static int apply_patch(struct pass *p, const char *path, cJSON *patch, struct sp_error *err)
{
	cJSON *updated = NULL;
	int r = p->conflicted ? sp_fail(err, SP_ECONFLICT, "not written: the pool changed since this pass read it")
		: still_leading(p) < 0 ? sp_fail(err, SP_ETRANSIENT, "not the leader")
				       : kube_api_merge_patch(&p->r->kube, path, patch, &updated, err);
	if (r == SP_ECONFLICT)
		p->conflicted = true;
	cJSON_Delete(patch);
	if (r == 0) {
		cJSON_Delete(p->obj);
		p->obj = updated;
		p->old_status = cJSON_GetObjectItemCaseSensitive(p->obj, "status");
		p->patched = true;
	}
	return r;
}

/* Adds or removes our finalizer; resourceVersion makes a concurrent change a conflict. */
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
	add_resource_version(patch, p->obj);
	return apply_patch(p, p->path, patch, err);
}

/* final: the pass's last word. A write in the middle of a pass (the ledger before a
 * launch) does not yet know whether the pass will fail: it keeps the Degraded condition
 * the pool had, so conditions do not flap and a failure right after is no new episode. */
static cJSON *build_status(struct pass *p, const struct plan *plan, bool final)
{
	const char *reason = p->degraded_reason, *message = p->degraded_reason ? p->degraded_message : NULL;
	if (!final && !reason && p->start_degraded_reason) {
		reason = p->start_degraded_reason;
		message = p->start_degraded_message;
	}
	char *label = pool_label_value(p->name);
	char *selector = xasprintf("spotpool.jokerbai.com/pool-name=%s", label);
	free(label);
	size_t n = 0;
	struct pool_instance *recorded = plan ? plan_recorded(p->instances, p->n_instances, &p->terminated, &n)
					      : NULL;
	struct status_input in = {
		.selector = selector, .old_status = p->old_status,
		.generation = p->generation,
		.instances = recorded, .n_instances = n, .plan = plan,
		.minimum = p->spec ? p->spec->minimum : 0, .deleting = p->deleting,
		.ledger = p->has_ledger ? &p->ledger : NULL, .launch_seq = p->launch_seq,
		.degraded_reason = reason, .degraded_message = message,
		.progress_message = *p->progress_message ? p->progress_message : NULL,
		.capacity_message = plan && !p->deleting ? p->capacity_message : NULL,
		.insecure_credentials = p->insecure, .now = now_s(p),
	};
	cJSON *st = status_build(&in);
	free(recorded);
	free(selector);
	return st;
}

/* Writes everything but the ledger; an unchanged status is not written at all. The
 * write carries the resourceVersion this pass read (or last wrote): a late write from a
 * deposed leader, or one built on a pool that changed since, would otherwise erase what
 * someone else resolved into .status.instances and make the next pass launch again.
 * SP_ECONFLICT then means: re-read and plan again (the caller requeues at once). */
static int write_status(struct pass *p, const struct plan *plan)
{
	cJSON *st = build_status(p, plan, true);
	cJSON_DeleteItemFromObject(st, "launch");
	cJSON_DeleteItemFromObject(st, "launchSeq");
	if (p->conflicted || status_patch_is_noop(st, p->old_status)) {
		cJSON_Delete(st);
		return p->conflicted ? SP_ECONFLICT : 0;
	}
	cJSON *patch = cJSON_CreateObject();
	cJSON_AddItemToObject(patch, "status", st);
	add_resource_version(patch, p->obj);
	char *path = xasprintf("%s/status", p->path);
	struct sp_error err = {0};
	int r = apply_patch(p, path, patch, &err);
	free(path);
	if (r == SP_ECONFLICT) {  /* not a failure: the next pass writes from a fresh read */
		pool_log(p, LOG_LVL_INFO, "status", err.reason, "pool changed since it was read, "
			 "status not written (planning again): %s", err.msg);
		return r;
	}
	/* Made visible on the object too: a status that cannot be written (RBAC, a
	 * webhook) would otherwise look like a pool that is simply not progressing. */
	if (r < 0 && r != SP_ETRANSIENT)
		emit_event(p, "Warning", "StatusUpdateFailed", "cannot write status: %s", err.msg);
	if (r < 0)
		pool_log(p, LOG_LVL_WARN, "status", err.reason, "status update failed: %s", err.msg);
	return r;
}

/* Writes the whole status with the ledger (.status.launch and launchSeq), so what the
 * ledger resolved (the instances) lands in the same write, and the pass's last status
 * write usually has nothing left to change. The write carries the resourceVersion this
 * pass read: SP_ECONFLICT if anyone (a spec edit, another leader) wrote the pool since;
 * the caller then re-reads and re-plans. Every change of the ledger goes through here. */
static int write_ledger(struct pass *p, const struct plan *plan, const char *what_if_not)
{
	cJSON *st = build_status(p, plan, false);
	/* A merge patch keeps keys it does not mention: clear the previous launch's IDs. */
	cJSON *launch = cJSON_GetObjectItemCaseSensitive(st, "launch");
	if (cJSON_IsObject(launch) && !cJSON_HasObjectItem(launch, "instanceIds"))
		cJSON_AddNullToObject(launch, "instanceIds");
	cJSON *patch = cJSON_CreateObject();
	cJSON_AddItemToObject(patch, "status", st);
	add_resource_version(patch, p->obj);
	char *path = xasprintf("%s/status", p->path);
	struct sp_error err = {0};
	int r = apply_patch(p, path, patch, &err);
	free(path);
	if (r < 0)
		pool_log(p, LOG_LVL_WARN, "ledger", err.reason, "%s: %s", what_if_not, err.msg);
	return r;
}

static int resolve_credentials(struct pass *p)
{
	const struct pool_spec *s = p->spec;
	if (s->credentials_secret) {
		char *path = xasprintf("/api/v1/namespaces/%s/secrets/%s", p->ns, s->credentials_secret);
		cJSON *secret = NULL;
		struct sp_error err = {0};
		int r = kube_api_get(&p->r->kube, path, &secret, &err);
		free(path);
		if (r < 0) {
			fail(p, SP_EAUTH, "credentials", NULL, "cannot read Secret %s/%s named by "
			     "spec.credentialsSecretRef: %s", p->ns, s->credentials_secret,
			     r == SP_ENOTFOUND ? "not found" : err.msg);
			return r == SP_ENOTFOUND || r == SP_EFORBIDDEN ? SP_EAUTH : r;
		}
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
			log_replace_secret(p->ns, s->credentials_secret, "secretKey", key);  /* a rotated key is forgotten */
			log_replace_secret(p->ns, s->credentials_secret, "token", token);
		} else {
			fail(p, SP_EAUTH, "credentials", NULL, "Secret %s/%s: key %s is %s", p->ns,
			     s->credentials_secret, !id || !*id ? "secretId" : "secretKey",
			     (!id || !key) ? "missing" : "empty");
			rc = SP_EAUTH;
		}
		sp_secure_free(id);
		sp_secure_free(key);
		sp_secure_free(token);
		return rc;
	}
	if (s->secret_id) {
		creds_set(&p->creds, s->secret_id, s->secret_key, NULL, "spec");
		/* Owned by the pool: an edited key forgets the old one. */
		log_replace_secret(p->ns, p->name, "spec.secretKey", s->secret_key);
		p->insecure = true;
		return 0;
	}
	const struct creds *d = p->r->opt->default_creds;
	if (d && d->secret_id) {
		creds_set(&p->creds, d->secret_id, d->secret_key, d->token, d->source);
		return 0;
	}
	fail(p, SP_EAUTH, "credentials", NULL, "no credentials: set spec.credentialsSecretRef, or give the "
	     "controller TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY");
	return SP_EAUTH;
}

/* Whether the pool may need the inventory's fast cadence: anything but a settled,
 * ready pool. */
static bool unsettled(const struct pass *p)
{
	const char *ready = status_condition(p->old_status, "Ready", "status");
	return p->deleting || p->has_ledger || !ready || strcmp(ready, "True") != 0;
}

/* The owned instances: the shared inventory's listing, plus what lookups by ID show of
 * the recorded instances it lacks (the tag index lags). On failure nothing is known. */
static int observe(struct pass *p)
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
		plan_ids_to_confirm(p->instances, p->n_instances, &p->seen,
				    p->has_ledger ? &p->ledger : NULL, &confirm);
	if (r == 0 && confirm.n) {
		struct pool_instance *found = NULL;
		size_t n_found = 0;
		r = p->r->cvm.describe_ids(p->r->cvm.ctx, &view, p->spec->region, &confirm, p->r->active_until_ms, &found,
				     &n_found, &err);
		if (r == 0) {
			pool_log(p, LOG_LVL_DEBUG, "DescribeInstances", NULL, "%zu recorded instance(s) not "
				 "listed by tag, %zu found by ID", confirm.n, n_found);
			plan_merge_owned(&p->instances, &p->n_instances, found, n_found, p->owner,
					 p->r->opt->cluster_name, &p->foreign);
		}
		free(found);
	}
	strv_clear(&confirm);
	for (size_t i = 0; i < p->foreign.n; i++)
		pool_log(p, LOG_LVL_WARN, "ownership", NULL, "recorded instance %s is not this pool's "
			 "(another pool's or another cluster's tag): ignored, never touched", p->foreign.v[i]);
	if (r < 0) {
		free(p->instances);
		p->instances = NULL;
		p->n_instances = 0;
		fail(p, r, "DescribeInstances", &err, "cannot read the pool's instances from the cloud (size "
		     "and instances show the last known state)");
	}
	return r;
}

/* plan.sweep: the ledger's instances among every instance of its zone, listed without a
 * tag filter, join the owned ones. */
static int sweep_launch(struct pass *p)
{
	struct cvm_credentials view = creds_view(&p->creds);
	const char *zone = *p->ledger.zone ? p->ledger.zone : p->spec->zone;
	struct pool_instance *found = NULL;
	size_t n_found = 0;
	struct sp_error err = {0};
	int r = p->r->cvm.find_launched(p->r->cvm.ctx, &view, p->spec->region, zone, p->ledger.client_token,
				  p->r->active_until_ms, &found, &n_found, &err);
	if (r < 0) {
		fail(p, r, "DescribeInstances", &err, "cannot look for the instances of launch %s before "
		     "releasing the deleted pool", p->ledger.client_token);
		return r;
	}
	pool_log(p, LOG_LVL_INFO, "finalize", NULL, "launch %s of unknown outcome: %zu instance(s) carry "
		 "its token in a listing without a tag filter", p->ledger.client_token, n_found);
	plan_merge_owned(&p->instances, &p->n_instances, found, n_found, p->owner, p->r->opt->cluster_name,
			 &p->foreign);
	free(found);
	return 0;
}

static void note_terminated(struct pass *p, const struct strv *ids)
{
	for (size_t i = 0; i < ids->n; i++)
		strv_push(&p->terminated, ids->v[i]);
}

static int terminate(struct pass *p, const struct strv *ids, enum metrics_termination reason,
		     const char *why)
{
	if (!ids->n)
		return 0;
	if (still_leading(p) < 0)
		return SP_ETRANSIENT;
	struct cvm_credentials view = creds_view(&p->creds);
	struct sp_error err = {0};
	int r = p->r->cvm.terminate_instances(p->r->cvm.ctx, &view, p->spec->region, ids, p->r->active_until_ms, &err);
	if (r < 0) {
		fail(p, r, "TerminateInstances", &err, "terminate failed (%s)", why);
		return r;
	}
	note_terminated(p, ids);
	p->r->inv.note_mutation(p->r->inv.ctx, view.secret_id, p->spec->region, p->owner);
	char joined[1024] = "";
	for (size_t i = 0; i < ids->n; i++)
		snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? ", " : "",
			 ids->v[i]);
	metrics_instances_terminated(p->ns, p->name, reason, (int)ids->n);
	emit_event(p, "Normal", "Terminated", "terminated %zu instance(s) (%s): %s", ids->n, why, joined);
	return 0;
}

/* Calls RunInstances for the recorded launch (asking for count) and records the IDs.
 * fresh: the record was made by this pass and no earlier call used its token, so a
 * refusal proves nothing was launched and the record can go. A refusal of a repeated
 * token proves nothing: the first call may have launched; the record stays. */
static int launch(struct pass *p, const struct plan *plan, int count, bool fresh)
{
	if (still_leading(p) < 0)
		return SP_ETRANSIENT;
	struct cvm_credentials view = creds_view(&p->creds);
	struct cvm_launch l = {.spec = p->spec, .count = count, .client_token = p->ledger.client_token,
			       .cluster = p->r->opt->cluster_name,
			       .zone = *p->ledger.zone ? p->ledger.zone : NULL,
			       .instance_type = *p->ledger.instance_type ? p->ledger.instance_type : NULL,
			       .until = p->r->active_until_ms};
	struct strv ids = {0};
	struct sp_error err = {0};
	int64_t started = now_ms(p);
	p->run_calls++;
	int r = p->r->cvm.run_instances(p->r->cvm.ctx, &view, &l, &ids, &err);
	metrics_launch_request(p->ns, p->name, r, err.reason);
	metrics_offering_launch(l.zone ? l.zone : p->spec->zone, l.instance_type ? l.instance_type : p->spec->instance_type,
				r, err.reason);
	snprintf(p->last_launch_code, sizeof(p->last_launch_code), "%s", r < 0 ? err.reason : "");
	if (r == 0)
		p->r->inv.note_mutation(p->r->inv.ctx, view.secret_id, p->spec->region, p->owner);
	if (r == 0) {
		p->ledger.ids_known = true;
		strv_clear(&p->ledger.instance_ids);
		char joined[1024] = "";
		for (size_t i = 0; i < ids.n; i++) {
			strv_push(&p->ledger.instance_ids, ids.v[i]);
			snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s",
				 i ? ", " : "", ids.v[i]);
		}
		/* A repeated token may have launched only now: the grace of IDs no lookup
		 * shows yet starts again. */
		if (!fresh)
			p->ledger.started = now_s(p);
		metrics_instances_launched(p->ns, p->name, (int)ids.n);
		struct log_fields f = {.ns = p->ns, .pool = p->name, .action = "RunInstances",
				       .duration_ms = (long)(now_ms(p) - started), .has_duration = true};
		log_fields_msg(LOG_LVL_INFO, &f, "%s/%s: launch %s answered %zu instance(s)", p->ns, p->name,
			       p->ledger.client_token, ids.n);
		emit_event(p, "Normal", "Launched", "launched %zu x %s in %s: %s", ids.n,
			   l.instance_type ? l.instance_type : p->spec->instance_type,
			   l.zone ? l.zone : p->spec->zone, joined);
		strv_clear(&ids);
		/* A fresh launch's IDs stay in memory (answers.h) and are resolved next
		 * pass; recording them now would cost a status write. A repeated one records
		 * them, or each pass would replay it again. */
		if (fresh)
			answers_remember(p->r->answers, p->owner, p->ledger.client_token, &p->ledger.instance_ids);
		return fresh ? 0 : write_ledger(p, plan, "cannot record the launched IDs yet (the next "
						"pass repeats the same ClientToken and gets them again)");
	}
	strv_clear(&ids);
	fail(p, r, "RunInstances", &err, "launch of %d instance(s) failed", count);
	if (fresh && (r == SP_ECAPACITY || r == SP_EAUTH || r == SP_ECONFIG)) {
		plan_launch_clear(&p->ledger);
		p->has_ledger = false;
		write_ledger(p, plan, "cannot clear the refused launch (the next pass repeats it)");
	}
	return r;
}

static int start_launch(struct pass *p, const struct plan *plan, int count, const struct offer *o)
{
	p->launch_seq++;
	plan_launch_clear(&p->ledger);
	p->ledger = (struct plan_launch){.count = count, .started = now_s(p)};
	snprintf(p->ledger.zone, sizeof(p->ledger.zone), "%s", o->zone);
	snprintf(p->ledger.instance_type, sizeof(p->ledger.instance_type), "%s", o->instance_type);
	reconcile_client_token(p->spec->uid, p->ns, p->name, p->launch_seq, p->ledger.client_token);
	p->has_ledger = true;
	/* Not recorded, so not launched: safe to simply try again later. */
	int r = write_ledger(p, plan, "cannot record launch, not launching");
	return r < 0 ? r : launch(p, plan, count, true);
}

static void dry_run_actions(struct pass *p, const struct plan *plan)
{
	char *m = p->progress_message;
	size_t cap = sizeof(p->progress_message);
	snprintf(m, cap, "dry-run: %d live, target %d", plan->observed, plan->target);
	int want = plan->launch + plan->resume;
	if (want) {
		struct cvm_credentials view = creds_view(&p->creds);
		struct cvm_launch l = {.spec = p->spec, .count = want, .dry_run = true,
				       .until = p->r->active_until_ms};
		struct strv ids = {0};
		struct sp_error err = {0};
		int r = p->r->cvm.run_instances(p->r->cvm.ctx, &view, &l, &ids, &err);
		strv_clear(&ids);
		/* The error code, not the message: messages carry a RequestId that changes
		 * every call and would turn each pass into a new event and status write. */
		snprintf(m + strlen(m), cap - strlen(m), "; would launch %d (launch check %s%s)", want,
			 r == 0 ? "passed" : "failed: ", r == 0 ? "" : *err.reason ? err.reason : sp_strerror(r));
	}
	for (size_t i = 0; i < plan->scale_down.n; i++)
		snprintf(m + strlen(m), cap - strlen(m), "%s%s", i ? ", " : "; would terminate ",
			 plan->scale_down.v[i]);
	/* Counts, error codes and instance IDs only; events and conditions redact anyway. */
	const char *old = status_condition(p->old_status, "Progressing", "message");
	if (!old || strcmp(old, m) != 0)
		emit_event(p, "Normal", "DryRun", "%s", m);
}

static int release(struct pass *p, const char *why)
{
	struct sp_error err = {0};
	pool_log(p, LOG_LVL_INFO, "finalize", NULL, "%s, releasing the resource", why);
	answers_forget(p->r->answers, p->owner);
	int r = set_finalizer(p, false, &err);
	if (r < 0)
		pool_log(p, LOG_LVL_WARN, "finalize", err.reason, "cannot remove finalizer: %s", err.msg);
	return r;
}

/* Deletion: terminate everything recorded or listed, confirm by ID on the next pass,
 * then let the resource go. */
static void finalize(struct pass *p, const struct plan *plan, struct reconcile_result *res)
{
	if (p->r->opt->dry_run)
		return;  /* a dry-run controller neither terminates nor releases */
	if (p->spec->deletion_policy == POOL_RETAIN) {
		emit_event(p, "Normal", "Retained", "deletionPolicy Retain: leaving %d instance(s) running",
			   plan->observed);
		res->error = release(p, "deletionPolicy Retain");
		return;
	}
	if (plan->resume) {
		pool_log(p, LOG_LVL_INFO, "finalize", NULL, "repeating launch %s to learn its instance IDs "
			 "before releasing", p->ledger.client_token);
		/* Whatever it answers, what is known goes now: a refused repeat must not keep a
		 * deleted pool's instances running. */
		int r = launch(p, plan, plan->resume, false);
		res->error = r;
		res->requeue_ms = REQUEUE_PROGRESS_MS;
		if ((r == SP_ECAPACITY || r == SP_EAUTH || r == SP_ECONFIG) && plan->let_go_if_refused) {
			emit_event(p, "Warning", "LaunchAbandoned", "launch %s of unknown outcome: repeating it "
				   "was refused past the launch grace; releasing without it",
				   p->ledger.client_token);
			plan_launch_clear(&p->ledger);
			p->has_ledger = false;
			if (write_ledger(p, plan, "cannot clear the refused launch") == SP_ECONFLICT)
				res->requeue_ms = REQUEUE_CONFLICT_MS;
		}
	}
	if (plan->cleanup.n) {
		int r = terminate(p, &plan->cleanup, METRICS_TERMINATED_DELETION, "pool deleted");
		if (r < 0) {
			res->error = r;
			return;
		}
		if (plan->ledger_done) {
			plan_launch_clear(&p->ledger);
			p->has_ledger = false;
			if (write_ledger(p, plan, "cannot clear the resolved launch") == SP_ECONFLICT)
				res->requeue_ms = REQUEUE_CONFLICT_MS;
		}
		res->requeue_ms = res->requeue_ms ? res->requeue_ms : REQUEUE_PROGRESS_MS;
		return;
	}
	if (plan->waiting) {
		pool_log(p, LOG_LVL_INFO, "finalize", NULL, "waiting for the outcome of launch %s before "
			 "releasing", p->ledger.client_token);
		res->requeue_ms = REQUEUE_PROGRESS_MS;
		return;
	}
	res->error = release(p, "every recorded instance is confirmed gone");
}

static void note_reclaims(struct pass *p, const struct plan *plan)
{
	for (size_t i = 0; i < plan->reclaimed.n; i++) {
		metrics_instance_reclaimed(p->ns, p->name);
		emit_event(p, "Warning", "InstanceReclaimed",
			   "instance %s is gone or dead without spotpool terminating it (spot reclaim, "
			   "failure, or terminated outside spotpool)", plan->reclaimed.v[i]);
	}
}

/* Returns < 0 when the pass should be retried with backoff. */
static struct soldout_key offer_key(const struct pass *p, const struct offer *o)
{
	return (struct soldout_key){.secret_id = p->creds.secret_id, .region = p->spec->region,
				    .zone = o->zone, .instance_type = o->instance_type};
}

/* What the sold-out memory says of each of the pool's offerings now; the earliest time
 * a probe of one of them is due goes to *ret_probe_at (INT64_MAX: none is sold out). */
static void offer_states(const struct pass *p, const struct offer_list *offers, enum offer_state *state,
			 int64_t now, int64_t *ret_probe_at)
{
	*ret_probe_at = INT64_MAX;
	for (size_t i = 0; i < offers->n; i++) {
		struct soldout_key k = offer_key(p, &offers->v[i]);
		int64_t at = INT64_MAX;
		state[i] = soldout_peek(p->r->soldout, &k, now, &at);
		if (state[i] != OFFER_AVAILABLE && at < *ret_probe_at)
			*ret_probe_at = at;
	}
}

/* Names the offerings marked sold out, for CapacityAvailable; empty when none is. */
static void describe_scarcity(struct pass *p, const struct offer_list *offers, const enum offer_state *state,
			      int64_t now, int64_t probe_at)
{
	char *m = p->capacity_message;
	size_t cap = sizeof(p->capacity_message);
	*m = '\0';
	for (size_t i = 0; i < offers->n; i++) {
		if (state[i] == OFFER_AVAILABLE)
			continue;
		char name[128];
		offer_name(&offers->v[i], name, sizeof(name));
		snprintf(m + strlen(m), cap - strlen(m), "%s%s", *m ? ", " : "sold out: ", name);
	}
	if (*m && probe_at != INT64_MAX)
		snprintf(m + strlen(m), cap - strlen(m), "; next probe in %lld s",
			 (long long)((probe_at > now ? probe_at - now : 0) + 999) / 1000);
}

/* CapacityAvailable as the sold-out memory has it now. */
static void note_capacity(struct pass *p)
{
	struct offer_list *offers = xmalloc(sizeof(*offers));
	offer_build(p->spec, offers);
	enum offer_state state[OFFER_MAX];
	int64_t now = now_ms(p), probe_at;
	offer_states(p, offers, state, now, &probe_at);
	describe_scarcity(p, offers, state, now, probe_at);
	free(offers);
}

/* Launches the shortfall on the pool's first available offering (spread: the least
 * loaded zone), and when that one answers "sold out", on the next, in the same pass.
 * At most one probe of a sold-out offering per TTL across all pools (soldout.h). */
static int launch_shortfall(struct pass *p, const struct plan *plan, struct reconcile_result *res)
{
	struct offer_list *offers = xmalloc(sizeof(*offers));
	offer_build(p->spec, offers);
	enum offer_state state[OFFER_MAX];
	int zone_live[OFFER_ZONES_MAX];
	offer_zone_live(offers, p->instances, p->n_instances, zone_live);
	int64_t now = now_ms(p), probe_at;
	offer_states(p, offers, state, now, &probe_at);
	int r = 0;
	bool launched = false;
	for (size_t attempt = 0; attempt <= offers->n && r != SP_ECONFLICT; attempt++) {
		struct offer_input in = {.list = offers, .state = state, .zone_live = zone_live,
					 .strategy = p->spec->allocation, .want = plan->launch};
		struct offer_pick pick;
		offer_choose(&in, &pick);
		if (pick.index < 0)
			break;
		const struct offer *o = &offers->v[pick.index];
		struct soldout_key k = offer_key(p, o);
		if (pick.probe && !soldout_probe(p->r->soldout, &k, now)) {
			state[pick.index] = OFFER_SOLD_OUT;  /* another pool holds this probe */
			continue;
		}
		int calls = p->run_calls;
		r = start_launch(p, plan, pick.count, o);
		if (r == 0) {
			if (pick.probe)
				soldout_clear(p->r->soldout, &k);
			state[pick.index] = OFFER_AVAILABLE;
			launched = true;
			break;
		}
		/* Only a definitive "sold out" marks the offering: the same code after an attempt
		 * of unknown outcome is reported as transient and proves nothing. */
		if (r != SP_ECAPACITY || !cvm_code_is_sold_out(p->last_launch_code)) {
			/* A probe that never reached the cloud goes back at once (the next caller
			 * may take it); one that did, with no answer, was this TTL's probe. */
			if (pick.probe && p->run_calls == calls)
				soldout_return_probe(p->r->soldout, &k);
			else if (pick.probe)
				soldout_mark(p->r->soldout, &k, now, 0);
			break;
		}
		soldout_mark(p->r->soldout, &k, now, 0);
		state[pick.index] = OFFER_SOLD_OUT;
	}
	now = now_ms(p);
	offer_states(p, offers, state, now, &probe_at);
	describe_scarcity(p, offers, state, now, probe_at);
	/* Every offering answered "sold out" (or is still marked so): not an error to back
	 * off from, the next probe time says when to look again. */
	if (!launched && r == SP_ECAPACITY && cvm_code_is_sold_out(p->last_launch_code))
		r = 0;
	if (launched) {
		/* Short of nothing: a sold-out first choice is told by CapacityAvailable. */
		p->degraded_reason = NULL;
	} else if (r == 0 && *p->capacity_message) {
		struct sp_error err = {0};
		snprintf(err.msg, sizeof(err.msg), "%s", p->capacity_message);
		fail(p, SP_ECAPACITY, "launch", &err, "no offering of the pool is available");
		/* Nothing to call before a probe is due: come back then, not on a backoff. */
		if (probe_at != INT64_MAX)
			res->requeue_ms = probe_at - now > 1000 ? probe_at - now : 1000;
	}
	free(offers);
	return r;
}

static int act(struct pass *p, const struct plan *plan, struct reconcile_result *res)
{
	if (p->r->opt->dry_run) {
		dry_run_actions(p, plan);
		return 0;
	}
	int r = 0;
	if (plan->resume) {
		pool_log(p, LOG_LVL_INFO, "launch", NULL, "repeating launch %s (outcome unknown) for %d of its %d "
			 "instance(s)", p->ledger.client_token, plan->resume, p->ledger.count);
		r = launch(p, plan, plan->resume, false);
	} else if (plan->launch > 0) {
		r = launch_shortfall(p, plan, res);
	} else if (plan->ledger_done) {
		/* Resolved: the instances go into .status.instances in the same guarded write. */
		plan_launch_clear(&p->ledger);
		p->has_ledger = false;
		r = write_ledger(p, plan, "cannot clear the resolved launch");
	}
	if (r == SP_ECONFLICT)
		return r;
	int t = terminate(p, &plan->scale_down, METRICS_TERMINATED_SCALE_DOWN, "scale down");
	int c = terminate(p, &plan->cleanup, METRICS_TERMINATED_CLEANUP, "dead instances");
	if (!res->requeue_ms && (plan->launch || plan->resume || plan->waiting || plan->scale_down.n ||
				 plan->cleanup.n))
		res->requeue_ms = REQUEUE_PROGRESS_MS;
	return r < 0 ? r : t < 0 ? t : c;
}

/* Nothing recorded that could need cleaning up: no instance in the status, no launch. */
static bool nothing_recorded(const struct pass *p)
{
	return p->seen.n == 0 && !p->has_ledger;
}

/* After a conflict: the pool as the apiserver has it now, handed back as the pass's
 * object so the next pass (requeued at once) plans from it rather than from a cache the
 * watch has not brought up to date yet, which would only conflict again. */
static void refresh(struct pass *p)
{
	cJSON *fresh = NULL;
	struct sp_error err = {0};
	if (kube_api_get(&p->r->kube, p->path, &fresh, &err) < 0) {
		pool_log(p, LOG_LVL_DEBUG, "status", err.reason, "cannot read the pool again: %s", err.msg);
		return;
	}
	cJSON_Delete(p->obj);
	p->obj = fresh;
	p->old_status = cJSON_GetObjectItemCaseSensitive(p->obj, "status");
	p->patched = true;
}

static void free_pass(struct pass *p)
{
	if (p->has_ledger)
		plan_launch_clear(&p->ledger);
	creds_clear(&p->creds);
	free(p->instances);
	strv_clear(&p->seen);
	strv_clear(&p->seen_live);
	strv_clear(&p->foreign);
	strv_clear(&p->terminated);
	pool_spec_free(p->spec);
	cJSON_Delete(p->obj);
	free(p->owner);
	free(p->path);
	free(p->ns);
	free(p->name);
	free(p->start_degraded_reason);
	free(p->start_degraded_message);
}

void reconcile_pool(struct reconciler *r, cJSON *obj, struct reconcile_result *res)
{
	*res = (struct reconcile_result){.live = -1};
	struct pass p = {.r = r, .obj = obj};
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *jns = cJSON_GetObjectItemCaseSensitive(meta, "namespace");
	const cJSON *jname = cJSON_GetObjectItemCaseSensitive(meta, "name");
	if (!cJSON_IsString(jns) || !cJSON_IsString(jname)) {
		log_warn("a Spotpool without metadata.namespace/name: ignored");
		cJSON_Delete(obj);
		return;
	}
	/* Copies: the object is replaced by what each patch returns. */
	p.ns = xstrdup(jns->valuestring);
	p.name = xstrdup(jname->valuestring);
	const char *ns = p.ns, *name = p.name;
	p.path = xasprintf("/apis/%s/namespaces/%s/spotpools/%s", POOL_API_GROUP "/v1", ns, name);
	p.owner = pool_owner_tag(ns, name);
	struct sp_error err = {0};
	int rc;
	p.old_status = cJSON_GetObjectItemCaseSensitive(p.obj, "status");
	const char *was_degraded = status_condition(p.old_status, "Degraded", "status");
	if (was_degraded && strcmp(was_degraded, "True") == 0) {
		const char *reason = status_condition(p.old_status, "Degraded", "reason");
		const char *message = status_condition(p.old_status, "Degraded", "message");
		p.start_degraded_reason = xstrdup(reason ? reason : "Unknown");
		p.start_degraded_message = xstrdup(message ? message : "");
	}
	p.launch_seq = status_launch_seq(p.old_status);
	p.has_ledger = status_ledger(p.old_status, &p.ledger);
	if (p.has_ledger && !p.ledger.ids_known)
		p.ledger.ids_known = answers_recall(r->answers, p.owner, p.ledger.client_token,
						    &p.ledger.instance_ids);
	else if (!p.has_ledger)
		answers_forget(r->answers, p.owner);
	status_recorded(p.old_status, &p.seen, &p.seen_live);
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(p.obj, "metadata");
	p.deleting = cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp") != NULL;
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(md, "generation");
	p.generation = pool_json_int64(gen);
	bool active = r->clock.mono_ms(r->clock.ctx) < atomic_load(r->active_until_ms);
	struct plan plan = {0};
	bool planned = false;

	if (p.deleting && !has_finalizer(p.obj))
		goto out;
	bool spec_complete = (rc = pool_spec_from_object(p.obj, ns, &p.spec, &err)) == 0;
	if (!spec_complete) {
		struct sp_error cerr = {0};
		/* Bad input never leads to a launch or a termination; a deleted pool is still
		 * cleaned up as long as its credentials and region can be read. */
		if (!p.deleting || pool_spec_for_cleanup(p.obj, ns, &p.spec, &cerr) < 0) {
			if (active)
				fail(&p, SP_EINVAL, "validate", p.deleting ? &cerr : &err,
				     p.deleting ? "cannot clean up the deleted pool" : "invalid spec");
			res->error = p.deleting ? SP_EINVAL : 0;
			goto status;
		}
	}
	if (!active)
		goto out;
	if (!p.deleting && !r->opt->dry_run && !has_finalizer(p.obj) && (rc = set_finalizer(&p, true, &err)) < 0) {
		pool_log(&p, LOG_LVL_WARN, "finalize", err.reason, "cannot add finalizer: %s", err.msg);
		res->error = rc;
		goto out;
	}
	if ((rc = resolve_credentials(&p)) == 0)
		rc = observe(&p);
	if (rc < 0) {
		if (p.deleting && nothing_recorded(&p) && !r->opt->dry_run) {
			res->error = release(&p, "nothing recorded to clean up");
			goto out;
		}
		res->error = rc;
		goto status;
	}
	struct plan_input in = {
		.spec = p.spec, .instances = p.instances, .n_instances = p.n_instances, .seen = &p.seen,
		.seen_live = &p.seen_live, .foreign = &p.foreign, .ledger = p.has_ledger ? &p.ledger : NULL,
		.now = now_s(&p), .launch_grace = r->opt->launch_grace_seconds, .deleting = p.deleting,
		.can_repeat_launch = spec_complete && !r->opt->dry_run,
	};
	plan_compute(&in, &plan);
	planned = true;
	if (plan.sweep) {
		if ((rc = sweep_launch(&p)) < 0) {
			res->error = rc;
			goto status;
		}
		plan_free(&plan);
		in.instances = p.instances;
		in.n_instances = p.n_instances;
		in.swept = true;
		plan_compute(&in, &plan);
	}
	res->live = plan.observed;
	if (!p.deleting)
		note_capacity(&p);
	if (!p.deleting)
		metrics_pool_sizes(ns, name, p.spec->minimum, p.spec->maximum, plan.target, plan.observed);
	if (p.deleting) {
		finalize(&p, &plan, res);
		if (!has_finalizer(p.obj))
			goto out;
		goto status;
	}
	note_reclaims(&p, &plan);
	rc = act(&p, &plan, res);
	if (rc == SP_ECONFLICT) {
		/* The pool changed under this pass: plan again at once, from a fresh read.
		 * Nothing more is written now (apply_patch): what was observed is observed
		 * again by that pass. */
		res->requeue_ms = REQUEUE_CONFLICT_MS;
		rc = 0;
	}
	res->error = rc;
	for (size_t i = 0; i < p.n_instances; i++)
		if (strcmp(p.instances[i].state, "PENDING") == 0 || strcmp(p.instances[i].state, "TERMINATING") == 0)
			res->requeue_ms = REQUEUE_PROGRESS_MS;
status:
	if (active && (rc = write_status(&p, planned ? &plan : NULL)) < 0) {
		if (rc == SP_ECONFLICT)  /* re-read and plan again, as for the ledger */
			res->requeue_ms = REQUEUE_CONFLICT_MS;
		else if (res->error == 0)
			res->error = rc;
	}
out:
	if (p.conflicted) {
		refresh(&p);
		if (res->error == 0)
			res->requeue_ms = REQUEUE_CONFLICT_MS;
	}
	if (planned)
		plan_free(&plan);
	if (p.patched && !(p.deleting && !has_finalizer(p.obj))) {
		res->obj = p.obj;
		p.obj = NULL;
	}
	free_pass(&p);
}
