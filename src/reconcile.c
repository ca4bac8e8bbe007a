/* reconcile: one pass over one pool. Safety rules, in order:
 *  - only instances tagged with the pool's identity are counted or touched;
 *  - a tag listing is a hint: recorded instances it does not show are looked up by ID
 *    before the pool acts on their absence (plan.h, observe.c);
 *  - a launch is recorded in .status.launch (ClientToken, count) BEFORE RunInstances is
 *    called; every status write (the ledger's and the rest) is guarded by
 *    resourceVersion: a conflict means someone (a spec edit, another leader) changed the
 *    pool, so the pass writes nothing more, reads the pool again and plans anew;
 *  - a launch whose outcome is unknown is repeated with the same token, never forgotten;
 *  - nothing is launched or terminated for a pool whose spec does not validate, and a
 *    deleted pool is cleaned up with its own credentials only: never with others';
 *  - a failed cloud read leaves size and instances as last known, never empty (observe.c);
 *  - every cloud call, rate-limit wait and apiserver write of a pass ends with the
 *    leadership (the renew deadline, or a step-down): none starts or outlasts it. */
#include "reconcile.h"
#include "log.h"
#include "evict.h"
#include "nodes.h"
#include "observe.h"
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

/* One pass over its pool: what it observed (updated by its actions: the instances a
 * sweep finds, the Nodes listed live, the ledger), and what the actions changed (the
 * object as last written, the instances terminated, the pods listed). */
struct pass {
	struct reconciler *r;
	char *ns, *name;
	char *path;                  /* the object's API path */
	bool patched;                /* obj is what one of this pass's patches returned */
	cJSON *obj;
	const cJSON *old_status;
	struct pool_spec *spec;      /* NULL when the spec does not validate (and not deleting) */
	bool spec_valid;
	char spec_error[SP_ERROR_MAX];
	/* Leading when the pass began: the one read that decided whether to observe. A pass
	 * may lose leadership midway (every action checks again), never gain it. */
	bool active;
	/* o.now, o.now_ms: every plan of the pass judges the observation (the launch grace,
	 * the sold-out memory) at that time. */
	struct observation o;
	struct strv terminated;      /* terminated by this pass */
	/* The pods of o.nodes[0..n_nodes) once PASS_LIST_PODS listed them, NULL before. */
	struct pass_pods *pods;
	bool swept;
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


/* A log line about the pass's pool. */
#define pool_log(p, level, action, code, ...) log_pool(level, (p)->ns, (p)->name, action, code, __VA_ARGS__)

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

static struct soldout_key offer_key(const struct pass *p, const char *zone, const char *type)
{
	return (struct soldout_key){.secret_id = p->o.creds.secret_id, .region = p->spec->region,
				    .zone = zone, .instance_type = type};
}

/* Executors, one per action kind: each does what the action says and answers with 0 or
 * an SP_E* code (err says why). */

static int do_sweep(struct pass *p, const struct pass_action *a, struct sp_error *err)
{
	(void)a;
	struct cvm_credentials view = creds_view(&p->o.creds);
	/* Ledgers record their offering's zone; older ones launched in the spec's (a spec
	 * that no longer validates has none: the whole region is listed). */
	const char *zone = *p->o.found.zone ? p->o.found.zone : p->spec->zone;
	char region[POOL_ZONE_MAX + 1];
	if (!pool_zone_region(zone, region, sizeof(region)))  /* in its zone's region (D3) */
		snprintf(region, sizeof(region), "%s", p->spec->region);
	struct pool_instance *found = NULL;
	size_t n_found = 0;
	int r = p->r->cvm.find_launched(p->r->cvm.ctx, &view, region, zone, p->o.found.client_token,
					p->r->active_until_ms, &found, &n_found, err);
	if (r < 0)
		return r;
	pool_log(p, LOG_LVL_INFO, "finalize", NULL, "launch %s of unknown outcome: %zu instance(s) carry "
		 "its token in a listing without a tag filter", p->o.found.client_token, n_found);
	plan_merge_owned(&p->o.instances, &p->o.n_instances, found, n_found, p->o.owner, p->r->opt->cluster_name,
			 &p->o.foreign);
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
	if (p->o.has_ledger)
		plan_launch_clear(&p->o.ledger);
	p->o.has_ledger = a->has_ledger;
	p->o.ledger = a->ledger;
	p->o.ledger.instance_ids = (struct strv){0};
	for (size_t i = 0; i < a->ledger.instance_ids.n; i++)
		strv_push(&p->o.ledger.instance_ids, a->ledger.instance_ids.v[i]);
	p->o.launch_seq = a->launch_seq;
	return 0;
}

static int run_instances(struct pass *p, const struct pass_action *a, bool dry_run, struct strv *ids,
			 struct sp_error *err)
{
	struct cvm_credentials view = creds_view(&p->o.creds);
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
	struct cvm_credentials view = creds_view(&p->o.creds);
	p->r->inv.note_mutation(p->r->inv.ctx, view.secret_id, p->spec->region, p->o.owner);
	p->o.ledger.ids_known = true;
	strv_clear(&p->o.ledger.instance_ids);
	for (size_t i = 0; i < ids.n; i++)
		strv_push(&p->o.ledger.instance_ids, ids.v[i]);
	/* A repeated token may have launched only now: the grace of IDs no lookup shows yet
	 * starts again. */
	if (!a->fresh)
		p->o.ledger.started = now_s(p);
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
	answers_remember(p->r->answers, p->o.owner, p->o.ledger.client_token, &p->o.ledger.instance_ids);
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
	struct cvm_credentials view = creds_view(&p->o.creds);
	struct strv regions = {0}, *groups = NULL;
	struct plan_where w = observe_where(&p->o);
	plan_by_region(&w, &a->ids, &regions, &groups);
	int r = 0;
	for (size_t k = 0; k < regions.n && r == 0; k++) {
		r = p->r->cvm.terminate_instances(p->r->cvm.ctx, &view, regions.v[k], &groups[k],
						  p->r->active_until_ms, err);
		if (r == 0)
			p->r->inv.note_mutation(p->r->inv.ctx, view.secret_id, regions.v[k], p->o.owner);
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
	for (size_t i = 0; i < p->o.n_instances; i++)
		if (strcmp(p->o.instances[i].id, instance) == 0 && plan_classify_state(p->o.instances[i].state) == PLAN_LIVE)
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
	struct node_want *want = observe_node_wants(&p->o, &n);
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
		free(p->o.nodes);
		p->o.nodes = views;
		p->o.n_nodes = p->o.n_instances;  /* pods are listed after this only (no p->pods yet) */
		node_refusals_clear(&p->o.refused);
		p->o.refused = refused;
		p->o.nodes_pending = false;
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
		p->pods = xcalloc(p->o.n_nodes ? p->o.n_nodes : 1, sizeof(*p->pods));
	for (size_t i = 0; i < p->o.n_nodes; i++) {
		if (!*p->o.nodes[i].name || !strv_contains(&a->ids, p->o.nodes[i].name) || p->pods[i].listed)
			continue;
		struct drain_pod *pods = NULL;
		size_t n = 0;
		struct sp_error e = {0};
		int r = evict_list_pods(&p->r->kube, p->o.nodes[i].name, &pods, &n, &e);
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
	int r = a->kind == PASS_DRAIN_START ? evict_start(&p->r->kube, node, a->node_uid, p->o.now, err)
					    : evict_undo(&p->r->kube, node, a->node_uid, a->why ? p->o.now : 0, err);
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
		answers_forget(p->r->answers, p->o.owner);
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
	observe_input(&p->o, p->obj, in);
	in->spec = p->spec;
	in->spec_valid = p->spec_valid;
	in->spec_error = p->spec_error;
	in->active = p->active && now_ms(p) < atomic_load(p->r->active_until_ms);
	in->dry_run = p->r->opt->dry_run;
	in->old_status = p->old_status;
	in->plan.launch_grace = p->r->opt->launch_grace_seconds;
	in->plan.can_repeat_launch = p->spec_valid && !p->r->opt->dry_run;
	in->plan.swept = p->swept;
	in->terminated = &p->terminated;
	in->pods = p->pods;
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
			if (!p->o.deleting)
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
	for (size_t i = 0; p->pods && i < p->o.n_nodes; i++) {
		free((struct drain_pod *)p->pods[i].v);
		free((char *)p->pods[i].failed);
	}
	free(p->pods);
	observation_free(&p->o);
	strv_clear(&p->terminated);
	pool_spec_free(p->spec);
	cJSON_Delete(p->obj);
	free(p->path);
	free(p->ns);
	free(p->name);
}

/* What the object says: the spec (or what cleanup needs of it), and what observe_object
 * reads of it. */
static void read_object(struct pass *p)
{
	p->old_status = cJSON_GetObjectItemCaseSensitive(p->obj, "status");
	p->o.ns = p->ns;
	p->o.name = p->name;
	observe_object(&p->o, p->obj, p->r->answers);
	struct sp_error err = {0};
	p->spec_valid = pool_spec_from_object(p->obj, p->ns, &p->spec, &err) == 0;
	if (!p->spec_valid) {
		struct sp_error cerr = {0};
		if (!p->o.deleting || pool_spec_for_cleanup(p->obj, p->ns, &p->spec, &cerr) < 0)
			log_redact_copy(p->spec_error, sizeof(p->spec_error), p->o.deleting ? cerr.msg : err.msg);
	}
	p->o.spec = p->spec;
}

/* Everything the pass knows before it acts, through the reconciler's ports. */
static void observe(struct pass *p)
{
	const struct reconcile_options *opt = p->r->opt;
	struct observe_ports ports = {
		.inv = p->r->inv, .cvm = p->r->cvm, .nodes = p->r->nodes, .notices = p->r->notices,
		.soldout = p->r->soldout, .accounts = p->r->accounts,
		.clock = p->r->clock, .until = p->r->active_until_ms,
	};
	struct observe_options o = {
		.cluster_name = opt->cluster_name,
		.source = {.dflt = opt->default_creds, .secrets = observe_kube_secrets(&p->r->kube),
			   .no_credentials = "no credentials: set spec.credentialsSecretRef, or give the "
					     "controller TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY"},
	};
	observe_pool(&p->o, p->obj, &ports, &o);
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
	p.o.owner = pool_owner_tag(p.ns, p.name);

	read_object(&p);
	p.o.now_ms = now_ms(&p);
	p.o.now = now_s(&p);
	p.active = p.o.now_ms < atomic_load(r->active_until_ms);
	if (p.spec && p.active && !(p.o.deleting && !pool_has_finalizer(p.obj)))
		observe(&p);
	execute(&p);
	return_held_probe(&p);
	/* A failure that leaves the pool short is visible in three places: the Degraded
	 * condition, one Warning event per episode (both planned), and this line; not one
	 * our own shutdown made by aborting the pass's calls (nothing is written then). */
	if (p.degraded_reason)
		pool_log(&p, http_aborting() ? LOG_LVL_DEBUG : LOG_LVL_WARN, "reconcile", NULL, "%s: %s",
			 p.degraded_reason, p.degraded_message);
	if (p.patched && !(p.o.deleting && !pool_has_finalizer(p.obj))) {
		res->obj = p.obj;
		p.obj = NULL;
	}
	free_pass(&p);
}
