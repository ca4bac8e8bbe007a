/* reconcile: one pass over one pool. Safety rules, in order:
 *  - only instances tagged with the pool's identity are counted or touched;
 *  - a launch is recorded in .status.launch (ClientToken, count) BEFORE RunInstances
 *    is called, so a crash or lost reply is resumed with the same token (the cloud
 *    answers a repeated token with the same instances), and no new launch starts
 *    until the recorded one is visible;
 *  - nothing is launched or terminated for a pool whose spec does not validate. */
#include "reconcile.h"
#include "log.h"
#include "metrics.h"
#include "plan.h"
#include "pool.h"
#include "status.h"

#include <openssl/sha.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define REQUEUE_PROGRESS_MS 2000

/* Everything one pass knows about its pool. */
struct pass {
	struct reconciler *r;
	const char *ns, *name;
	char *path;                  /* the object's API path */
	cJSON *obj;
	const cJSON *old_status;
	struct pool_spec *spec;
	struct creds creds;
	struct pool_instance *instances;
	size_t n_instances;
	struct plan_launch ledger;
	bool has_ledger;
	int64_t launch_seq;
	const char *degraded_reason;
	char degraded_message[SP_ERROR_MAX];
	char progress_message[SP_ERROR_MAX];
	bool insecure;
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

/* Leadership can be lost mid-pass: every mutation checks it again just before acting. */
static int still_leading(struct pass *p)
{
	if (sp_mono_ms() < atomic_load(p->r->active_until_ms))
		return 0;
	log_info("%s/%s: no longer the leader, not acting", p->ns, p->name);
	return SP_ETRANSIENT;
}

static const char *reason_for(int code)
{
	switch (code) {
	case SP_EAUTH: return "CredentialsInvalid";
	case SP_ECAPACITY: return "CapacityUnavailable";
	case SP_ECONFIG: return "InvalidParameters";
	default: return "CloudAPIError";
	}
}

static void degrade(struct pass *p, const char *reason, const char *msg)
{
	p->degraded_reason = reason;
	snprintf(p->degraded_message, sizeof(p->degraded_message), "%s", msg);
	log_redact(p->degraded_message, sizeof(p->degraded_message));
}

static void emit_event(struct pass *p, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void emit_event(struct pass *p, const char *type, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_redact(msg, sizeof(msg));
	log_msg(strcmp(type, "Warning") == 0 ? LOG_LVL_WARN : LOG_LVL_INFO, "%s/%s: %s: %s", p->ns,
		p->name, reason, msg);
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(p->obj, "metadata");
	char now[32];
	status_format_time(sp_now(), now);
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
	if (kube_request(p->r->kube, "POST", path, NULL, ev, NULL, &err) < 0)
		log_warn("%s/%s: cannot record event: %s", p->ns, p->name, err.msg);
	free(path);
	cJSON_Delete(ev);
}

static bool has_finalizer(const cJSON *obj)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
			       cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "finalizers"))
		if (cJSON_IsString(f) && strcmp(f->valuestring, CTL_FINALIZER) == 0)
			return true;
	return false;
}

/* Sends a merge patch; the object the apiserver returns replaces ours, so later
 * steps of the pass see what was written. Takes ownership of patch. */
static int apply_patch(struct pass *p, const char *path, cJSON *patch, struct sp_error *err)
{
	cJSON *updated = NULL;
	int r = kube_merge_patch(p->r->kube, path, patch, &updated, err);
	cJSON_Delete(patch);
	if (r == 0) {
		cJSON_Delete(p->obj);
		p->obj = updated;
		p->old_status = cJSON_GetObjectItemCaseSensitive(p->obj, "status");
	}
	return r;
}

/* Adds or removes our finalizer; resourceVersion makes a concurrent change a conflict. */
static int set_finalizer(struct pass *p, bool present, struct sp_error *err)
{
	if (still_leading(p) < 0)
		return sp_fail(err, SP_ETRANSIENT, "not the leader");
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(p->obj, "metadata");
	cJSON *patch = cJSON_CreateObject();
	cJSON *pmd = cJSON_AddObjectToObject(patch, "metadata");
	cJSON *list = cJSON_AddArrayToObject(pmd, "finalizers");
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(md, "finalizers"))
		if (cJSON_IsString(f) && strcmp(f->valuestring, CTL_FINALIZER) != 0)
			cJSON_AddItemToArray(list, cJSON_CreateString(f->valuestring));
	if (present)
		cJSON_AddItemToArray(list, cJSON_CreateString(CTL_FINALIZER));
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
	if (cJSON_IsString(rv))
		cJSON_AddStringToObject(pmd, "resourceVersion", rv->valuestring);
	return apply_patch(p, p->path, patch, err);
}

static int patch_status(struct pass *p, cJSON *status, struct sp_error *err)
{
	if (still_leading(p) < 0) {
		cJSON_Delete(status);
		return sp_fail(err, SP_ETRANSIENT, "not the leader");
	}
	cJSON *patch = cJSON_CreateObject();
	cJSON_AddItemToObject(patch, "status", status);
	char *path = xasprintf("%s/status", p->path);
	int r = apply_patch(p, path, patch, err);
	free(path);
	return r;
}

/* Writes the ledger (and sequence) alone: the step that must succeed before a launch.
 * The resourceVersion precondition makes it fail if anyone (another leader) wrote the
 * object since this pass read it. */
static int write_ledger(struct pass *p, struct sp_error *err)
{
	if (still_leading(p) < 0)
		return sp_fail(err, SP_ETRANSIENT, "not the leader");
	cJSON *st = cJSON_CreateObject();
	cJSON_AddNumberToObject(st, "launchSeq", (double)p->launch_seq);
	struct status_input in = {.ledger = p->has_ledger ? &p->ledger : NULL, .now = sp_now()};
	cJSON *full = status_build(&in);
	cJSON *launch = cJSON_DetachItemFromObject(full, "launch");
	cJSON_Delete(full);
	/* A merge patch keeps keys it does not mention: clear the previous launch's IDs. */
	if (cJSON_IsObject(launch) && !cJSON_HasObjectItem(launch, "instanceIds"))
		cJSON_AddNullToObject(launch, "instanceIds");
	cJSON_AddItemToObject(st, "launch", launch);
	cJSON *patch = cJSON_CreateObject();
	cJSON_AddItemToObject(patch, "status", st);
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(p->obj, "metadata"), "resourceVersion");
	if (cJSON_IsString(rv))
		cJSON_AddStringToObject(cJSON_AddObjectToObject(patch, "metadata"), "resourceVersion",
					rv->valuestring);
	char *path = xasprintf("%s/status", p->path);
	int r = apply_patch(p, path, patch, err);
	free(path);
	return r;
}

static int resolve_credentials(struct pass *p)
{
	const struct pool_spec *s = p->spec;
	if (s->credentials_secret) {
		char *path = xasprintf("/api/v1/namespaces/%s/secrets/%s", p->ns, s->credentials_secret);
		cJSON *secret = NULL;
		struct sp_error err = {0};
		int r = kube_get(p->r->kube, path, &secret, &err);
		free(path);
		if (r < 0) {
			char msg[SP_ERROR_MAX];
			snprintf(msg, sizeof(msg), "cannot read Secret %s/%s named by spec.credentialsSecretRef: %s",
				 p->ns, s->credentials_secret, r == SP_ENOTFOUND ? "not found" : err.msg);
			degrade(p, "CredentialsInvalid", msg);
			return r == SP_ENOTFOUND || r == SP_EFORBIDDEN ? SP_EAUTH : r;
		}
		char *id = kube_secret_value(secret, "secretId");
		char *key = kube_secret_value(secret, "secretKey");
		char *token = kube_secret_value(secret, "token");
		cJSON_Delete(secret);
		int rc = 0;
		if (id && key && *id && *key) {
			creds_set(&p->creds, id, key, token, "secret");
		} else {
			char msg[SP_ERROR_MAX];
			snprintf(msg, sizeof(msg), "Secret %s/%s lacks the keys secretId and secretKey", p->ns,
				 s->credentials_secret);
			degrade(p, "CredentialsInvalid", msg);
			rc = SP_EAUTH;
		}
		free(id);
		sp_secure_free(key);
		sp_secure_free(token);
		return rc;
	}
	if (s->secret_id) {
		creds_set(&p->creds, s->secret_id, s->secret_key, NULL, "spec");
		p->insecure = true;
		return 0;
	}
	const struct creds *d = p->r->opt->default_creds;
	if (d && d->secret_id) {
		creds_set(&p->creds, d->secret_id, d->secret_key, d->token, d->source);
		return 0;
	}
	degrade(p, "CredentialsInvalid", "no credentials: set spec.credentialsSecretRef, or give the "
		"controller TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY");
	return SP_EAUTH;
}

static int describe(struct pass *p)
{
	struct cvm_credentials view = creds_view(&p->creds);
	char *identity = pool_tag_value(p->spec);
	struct sp_error err = {0};
	int r = cvm_describe_tagged(p->r->cvm, &view, p->spec->region, POOL_TAG_KEY, identity,
				    &p->instances, &p->n_instances, &err);
	free(identity);
	if (r < 0)
		degrade(p, reason_for(r), err.msg);
	return r;
}

/* Runs (or resumes) the recorded launch and stores the returned IDs in the ledger. */
static int launch(struct pass *p)
{
	if (still_leading(p) < 0)
		return SP_ETRANSIENT;
	struct cvm_credentials view = creds_view(&p->creds);
	struct cvm_launch l = {.spec = p->spec, .count = p->ledger.count,
			       .client_token = p->ledger.client_token};
	struct strv ids = {0};
	struct sp_error err = {0};
	int r = cvm_run_instances(p->r->cvm, &view, &l, &ids, &err);
	if (r == 0) {
		p->ledger.ids_known = true;
		strv_clear(&p->ledger.instance_ids);
		for (size_t i = 0; i < ids.n; i++)
			strv_push(&p->ledger.instance_ids, ids.v[i]);
		char joined[1024] = "";
		for (size_t i = 0; i < ids.n; i++)
			snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s",
				 i ? ", " : "", ids.v[i]);
		metrics_pool_add(p->ns, p->name, METRICS_LAUNCHES, (int)ids.n);
		emit_event(p, "Normal", "Launched", "launched %zu x %s in %s: %s", ids.n,
			   p->spec->instance_type, p->spec->zone, joined);
		strv_clear(&ids);
		struct sp_error werr = {0};
		if (write_ledger(p, &werr) < 0)
			log_warn("%s/%s: launched but cannot record instance IDs yet: %s", p->ns, p->name, werr.msg);
		return 0;
	}
	strv_clear(&ids);
	degrade(p, reason_for(r), err.msg);
	if (r == SP_ECAPACITY || r == SP_EAUTH || r == SP_ECONFIG) {
		/* The cloud refused the launch: nothing was created, the ledger can go. One
		 * event per episode: the message carries a fresh RequestId on every retry, so
		 * the condition's reason is what tells a new episode from a repeat. */
		const char *old = status_condition(p->old_status, "Degraded", "reason");
		if (!old || strcmp(old, p->degraded_reason) != 0)
			emit_event(p, "Warning", p->degraded_reason, "launch failed: %s", p->degraded_message);
		plan_launch_clear(&p->ledger);
		p->has_ledger = false;
		struct sp_error werr = {0};
		write_ledger(p, &werr);
	}
	/* Anything else (timeout, 5xx, throttling): the outcome is unknown, so the ledger
	 * stays and the next pass repeats the same ClientToken. */
	return r;
}

static int start_launch(struct pass *p, int count)
{
	struct sp_error err = {0};
	p->launch_seq++;
	plan_launch_clear(&p->ledger);
	p->ledger = (struct plan_launch){.count = count, .started = sp_now()};
	reconcile_client_token(p->spec->uid, p->ns, p->name, p->launch_seq, p->ledger.client_token);
	p->has_ledger = true;
	int r = write_ledger(p, &err);
	if (r < 0) {
		/* Not recorded, so not launched: safe to simply try again later. */
		log_warn("%s/%s: cannot record launch, not launching: %s", p->ns, p->name, err.msg);
		return r;
	}
	return launch(p);
}

static int terminate(struct pass *p, const struct strv *ids, const char *why)
{
	if (!ids->n)
		return 0;
	if (still_leading(p) < 0)
		return SP_ETRANSIENT;
	struct cvm_credentials view = creds_view(&p->creds);
	struct sp_error err = {0};
	int r = cvm_terminate_instances(p->r->cvm, &view, p->spec->region, ids, &err);
	char joined[1024] = "";
	for (size_t i = 0; i < ids->n; i++)
		snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? ", " : "",
			 ids->v[i]);
	if (r < 0) {
		degrade(p, reason_for(r), err.msg);
		emit_event(p, "Warning", p->degraded_reason, "terminate failed: %s", p->degraded_message);
		return r;
	}
	metrics_pool_add(p->ns, p->name, METRICS_TERMINATIONS, (int)ids->n);
	emit_event(p, "Normal", "Terminated", "terminated %zu instance(s) (%s): %s", ids->n, why, joined);
	return 0;
}

/* Forgets the ledger once every instance it launched is visible, or once it is past
 * the grace period (instances reclaimed before they ever showed up). */
static void settle_ledger(struct pass *p, int64_t now)
{
	if (!p->has_ledger)
		return;
	bool all_visible = p->ledger.ids_known;
	for (size_t i = 0; i < p->ledger.instance_ids.n && all_visible; i++) {
		bool seen = false;
		for (size_t j = 0; j < p->n_instances && !seen; j++)
			seen = strcmp(p->instances[j].id, p->ledger.instance_ids.v[i]) == 0;
		all_visible = seen;
	}
	if (all_visible || now - p->ledger.started > PLAN_LAUNCH_GRACE_SECONDS) {
		plan_launch_clear(&p->ledger);
		p->has_ledger = false;
	}
}

static void note_reclaims(struct pass *p, const struct strv *terminated_before)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(p->old_status, "instances")) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "instanceId");
		if (!cJSON_IsString(id) || strv_contains(terminated_before, id->valuestring))
			continue;
		bool present = false;
		for (size_t i = 0; i < p->n_instances && !present; i++)
			present = strcmp(p->instances[i].id, id->valuestring) == 0;
		if (present)
			continue;
		metrics_pool_add(p->ns, p->name, METRICS_RECLAIMS, 1);
		emit_event(p, "Warning", "InstanceReclaimed",
			   "instance %s disappeared (spot reclaim or terminated outside spotpool); "
			   "refilling", id->valuestring);
	}
}

static int write_status(struct pass *p, const struct plan *plan)
{
	char *selector = xasprintf("spotpool.jokerbai.com/pool-name=%s", p->name);
	struct status_input in = {
		.selector = selector, .old_status = p->old_status, .generation = p->spec ? p->spec->generation : 0,
		.instances = p->instances, .n_instances = p->n_instances, .plan = plan,
		.ledger = p->has_ledger ? &p->ledger : NULL, .launch_seq = p->launch_seq,
		.degraded_reason = p->degraded_reason,
		.degraded_message = p->degraded_reason ? p->degraded_message : NULL,
		.progress_message = *p->progress_message ? p->progress_message : NULL,
		.insecure_credentials = p->insecure, .now = sp_now(),
	};
	cJSON *st = status_build(&in);
	free(selector);
	/* Compare without the ledger's null (absent and null mean the same). */
	cJSON *cmp = cJSON_Duplicate(st, 1);
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cmp, "launch")))
		cJSON_DeleteItemFromObject(cmp, "launch");
	bool same = p->old_status && cJSON_Compare(cmp, p->old_status, 1);
	cJSON_Delete(cmp);
	if (same) {
		cJSON_Delete(st);
		return 0;
	}
	struct sp_error err = {0};
	int r = patch_status(p, st, &err);
	/* Made visible on the object too: a status that cannot be written (RBAC, a
	 * webhook) would otherwise look like a pool that is simply not progressing. */
	if (r < 0 && r != SP_ETRANSIENT)
		emit_event(p, "Warning", "StatusUpdateFailed", "cannot write status: %s", err.msg);
	else if (r < 0)
		log_warn("%s/%s: status update failed: %s", p->ns, p->name, err.msg);
	return r;
}

static void dry_run_actions(struct pass *p, const struct plan *plan)
{
	char *m = p->progress_message;
	size_t cap = sizeof(p->progress_message);
	snprintf(m, cap, "dry-run: %d live, target %d", plan->observed, plan->target);
	if (plan->launch) {
		struct cvm_credentials view = creds_view(&p->creds);
		struct cvm_launch l = {.spec = p->spec, .count = plan->launch, .dry_run = true};
		struct strv ids = {0};
		struct sp_error err = {0};
		int r = cvm_run_instances(p->r->cvm, &view, &l, &ids, &err);
		strv_clear(&ids);
		/* The error code, not the message: messages carry a RequestId that changes
		 * every call and would turn each pass into a new event and status write. */
		snprintf(m + strlen(m), cap - strlen(m), "; would launch %d (launch check %s%s)",
			 plan->launch, r == 0 ? "passed" : "failed: ",
			 r == 0 ? "" : *err.reason ? err.reason : sp_strerror(r));
	}
	for (size_t i = 0; i < plan->scale_down.n; i++)
		snprintf(m + strlen(m), cap - strlen(m), "%s%s", i ? ", " : "; would terminate ",
			 plan->scale_down.v[i]);
	log_redact(m, cap);
	const char *old = status_condition(p->old_status, "Progressing", "message");
	if (!old || strcmp(old, m) != 0)
		emit_event(p, "Normal", "DryRun", "%s", m);
}

/* Deletion: terminate everything owned, then let the resource go. Returns the requeue. */
static int64_t finalize(struct pass *p, const struct plan *plan, int *ret_error)
{
	struct sp_error err = {0};
	if (p->r->opt->dry_run)
		return 0;  /* a dry-run controller neither terminates nor releases */
	if (p->spec->deletion_policy == POOL_RETAIN) {
		emit_event(p, "Normal", "Retained", "deletionPolicy Retain: leaving %d instance(s) running",
			   plan->observed);
		*ret_error = set_finalizer(p, false, &err);
		return 0;
	}
	/* Only instances the tag filter shows are terminated: IDs from the status ledger are
	 * not trusted on their own. A launch still in flight is not resumed (that could
	 * launch now); its instances are waited for until they show up or the grace period
	 * ends. */
	struct strv all = {0};
	for (size_t i = 0; i < plan->scale_down.n; i++)
		strv_push(&all, plan->scale_down.v[i]);
	for (size_t i = 0; i < plan->cleanup.n; i++)
		strv_push(&all, plan->cleanup.v[i]);
	int r = terminate(p, &all, "pool deleted");
	strv_clear(&all);
	if (r < 0) {
		*ret_error = r;
		return 0;
	}
	if (plan->inflight > 0) {
		log_info("%s/%s: waiting for %d launched instance(s) to appear before releasing", p->ns,
			 p->name, plan->inflight);
		return REQUEUE_PROGRESS_MS;
	}
	log_info("%s/%s: all instances terminated, releasing the resource", p->ns, p->name);
	*ret_error = set_finalizer(p, false, &err);
	if (*ret_error < 0)
		log_warn("%s/%s: cannot remove finalizer: %s", p->ns, p->name, err.msg);
	return 0;
}

static void act(struct pass *p, const struct plan *plan, struct reconcile_result *res)
{
	if (p->r->opt->dry_run) {
		dry_run_actions(p, plan);
		return;
	}
	int r = 0;
	if (plan->resume) {
		log_info("%s/%s: resuming launch %s (%d instance(s)) after an unknown outcome", p->ns,
			 p->name, p->ledger.client_token, p->ledger.count);
		r = launch(p);
		res->requeue_ms = REQUEUE_PROGRESS_MS;
	} else if (plan->launch > 0) {
		r = start_launch(p, plan->launch);
		res->requeue_ms = REQUEUE_PROGRESS_MS;
	}
	if (r == 0)
		r = terminate(p, &plan->scale_down, "scale down");
	int cleanup = terminate(p, &plan->cleanup, "dead instances");
	if (r == 0)
		r = cleanup;
	if (r < 0)
		res->error = r;
}

void reconcile_pool(struct reconciler *r, const char *ns, const char *name,
		    struct reconcile_result *res)
{
	*res = (struct reconcile_result){0};
	struct pass p = {.r = r, .ns = ns, .name = name};
	p.path = xasprintf("/apis/%s/namespaces/%s/spotpools/%s", POOL_API_GROUP "/v1", ns, name);
	struct sp_error err = {0};
	int rc = kube_get(r->kube, p.path, &p.obj, &err);
	if (rc < 0) {
		if (rc != SP_ENOTFOUND) {
			log_warn("%s/%s: %s", ns, name, err.msg);
			res->error = rc;
		}
		free(p.path);
		return;
	}
	p.old_status = cJSON_GetObjectItemCaseSensitive(p.obj, "status");
	p.launch_seq = status_launch_seq(p.old_status);
	p.has_ledger = status_ledger(p.old_status, &p.ledger);
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(p.obj, "metadata");
	bool deleting = cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp") != NULL;
	bool active = sp_mono_ms() < atomic_load(r->active_until_ms);
	struct plan plan = {0};
	bool planned = false;

	if (deleting && !has_finalizer(p.obj))
		goto out;
	if ((rc = pool_spec_from_object(p.obj, ns, &p.spec, &err)) < 0) {
		/* Bad input never leads to a launch or a termination. */
		degrade(&p, "InvalidSpec", err.msg);
		goto status;
	}
	if (!active)
		goto out;
	if (!deleting && !r->opt->dry_run && !has_finalizer(p.obj) && (rc = set_finalizer(&p, true, &err)) < 0) {
		log_warn("%s/%s: cannot add finalizer: %s", ns, name, err.msg);
		res->error = rc;
		goto out;
	}
	if ((rc = resolve_credentials(&p)) < 0 && deleting && r->opt->default_creds &&
	    r->opt->default_creds->secret_id) {
		/* Deleting a namespace deletes the pool's Secret too: finish with the defaults. */
		const struct creds *d = r->opt->default_creds;
		creds_set(&p.creds, d->secret_id, d->secret_key, d->token, d->source);
		p.degraded_reason = NULL;
		rc = 0;
	}
	if (rc < 0 || (rc = describe(&p)) < 0) {
		res->error = rc;
		goto status;
	}
	int64_t now = sp_now();
	settle_ledger(&p, now);
	struct plan_input in = {.spec = p.spec, .instances = p.instances, .n_instances = p.n_instances,
				.launches = p.has_ledger ? &p.ledger : NULL, .n_launches = p.has_ledger,
				.now = now, .deleting = deleting};
	plan_compute(&in, &plan);
	planned = true;
	if (r->observed)
		r->observed(r->userdata, ns, name, plan.observed);
	metrics_pool_set(ns, name, plan.target, plan.observed);
	if (deleting) {
		res->requeue_ms = finalize(&p, &plan, &res->error);
		goto out;
	}
	note_reclaims(&p, &plan.scale_down);
	act(&p, &plan, res);
	if (plan.inflight || plan.launch || plan.scale_down.n || plan.cleanup.n || plan.observed != plan.target)
		res->requeue_ms = REQUEUE_PROGRESS_MS;
	for (size_t i = 0; i < p.n_instances; i++)
		if (strcmp(p.instances[i].state, "PENDING") == 0 || strcmp(p.instances[i].state, "TERMINATING") == 0)
			res->requeue_ms = REQUEUE_PROGRESS_MS;
status:
	if (active && (rc = write_status(&p, planned ? &plan : NULL)) < 0 && res->error == 0)
		res->error = rc;
out:
	if (planned)
		plan_free(&plan);
	if (p.has_ledger)
		plan_launch_clear(&p.ledger);
	creds_clear(&p.creds);
	free(p.instances);
	pool_spec_free(p.spec);
	cJSON_Delete(p.obj);
	free(p.path);
}
