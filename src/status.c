/* status: .status of a Spotpool, conditions following Kubernetes API conventions. */
#include "status.h"
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const cJSON *find_condition(const cJSON *status, const char *type)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions")) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
		if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0)
			return c;
	}
	return NULL;
}

const char *status_condition(const cJSON *status, const char *type, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(find_condition(status, type), field);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void add_condition(cJSON *list, const struct status_input *in, const char *type, bool value,
			  const char *reason, const char *message)
{
	const char *st = value ? "True" : "False";
	char now[32];
	sp_format_time(in->now, now);
	/* lastTransitionTime moves only when the status flips. */
	const char *old_status = status_condition(in->old_status, type, "status");
	const char *old_time = status_condition(in->old_status, type, "lastTransitionTime");
	char msg[SP_ERROR_MAX];
	log_redact_copy(msg, sizeof(msg), message);
	cJSON *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "type", type);
	cJSON_AddStringToObject(c, "status", st);
	cJSON_AddNumberToObject(c, "observedGeneration", (double)in->generation);
	cJSON_AddStringToObject(c, "lastTransitionTime",
				old_status && old_time && strcmp(old_status, st) == 0 ? old_time : now);
	cJSON_AddStringToObject(c, "reason", reason);
	cJSON_AddStringToObject(c, "message", msg);
	cJSON_AddItemToArray(list, c);
}

/* A condition True when something is wrong: message NULL keeps the old one (not known
 * this pass), "" is False (reason_ok, ok), otherwise True with reason and message. */
static void problem_condition(cJSON *list, const struct status_input *in, const char *type, const char *message,
			      const char *reason, const char *reason_ok, const char *ok)
{
	if (message)
		add_condition(list, in, type, *message != '\0', *message ? reason : reason_ok, *message ? message : ok);
	else if (find_condition(in->old_status, type))
		cJSON_AddItemToArray(list, cJSON_Duplicate(find_condition(in->old_status, type), 1));
}

cJSON *status_instance_json(const struct pool_instance *i)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "instanceId", i->id);
	cJSON_AddStringToObject(o, "publicIp", i->public_ip);
	cJSON_AddStringToObject(o, "privateIp", i->private_ip);
	cJSON_AddStringToObject(o, "zone", i->zone);
	cJSON_AddStringToObject(o, "instanceType", i->instance_type);
	cJSON_AddStringToObject(o, "state", i->state);
	cJSON_AddStringToObject(o, "createdTime", i->created_time);
	return o;
}

/* The entries of a status's instances by ID, for lookups (sorted; bsearch). */
struct entry {
	const char *id;
	const cJSON *e;
};

struct entry_index {
	struct entry *v;
	size_t n;
};

static const char *entry_id(const cJSON *e)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "instanceId");
	return cJSON_IsString(id) ? id->valuestring : "";
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->id, ((const struct entry *)b)->id);
}

static void entry_index(const cJSON *status, struct entry_index *ret)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(status, "instances");
	int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
	ret->v = xcalloc(n > 0 ? (size_t)n : 1, sizeof(*ret->v));
	ret->n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, list)
		if (ret->n < STATUS_MAX_RECORDED && *entry_id(e))
			ret->v[ret->n++] = (struct entry){.id = entry_id(e), .e = e};
	qsort(ret->v, ret->n, sizeof(*ret->v), cmp_entry);
}

static const cJSON *entry_find(const struct entry_index *x, const char *id)
{
	struct entry key = {.id = id};
	const struct entry *hit = bsearch(&key, x->v, x->n, sizeof(*x->v), cmp_entry);
	return hit ? hit->e : NULL;
}

static int64_t ready_seconds(const cJSON *entry)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, "nodeReadySeconds");
	return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (int64_t)v->valuedouble : -1;
}

/* An instance's Node fields: from its Node when Nodes are known (known), else as the
 * old entry had them. Returns whether it is Ready. */
static bool add_node(cJSON *o, const struct pool_instance *i, bool known, const struct node_view *node,
		     const cJSON *old)
{
	int64_t seconds = ready_seconds(old);
	if (!known) {
		static const char *const keys[] = {"node", "ready", "nodeReadySeconds", "draining"};
		for (size_t k = 0; k < 4; k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(old, keys[k]);
			if (v)
				cJSON_AddItemToObject(o, keys[k], cJSON_Duplicate(v, 1));
		}
		return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(old, "ready"));
	}
	bool ready = node && node->ready;
	if (node)
		cJSON_AddStringToObject(o, "node", node->name);
	cJSON_AddBoolToObject(o, "ready", ready);
	if (node && node->drain_taint && node->drain_started)
		cJSON_AddBoolToObject(o, "draining", true);
	if (seconds < 0 && ready && node->ready_since > 0 && i->created > 0)
		seconds = node->ready_since > i->created ? node->ready_since - i->created : 0;
	if (seconds >= 0)
		cJSON_AddNumberToObject(o, "nodeReadySeconds", (double)seconds);
	return ready;
}

/* An instance's reclaimAt: at (> 0), none (0), or as the old entry had it (-1: not
 * known yet); and reclaimNotFollowed when not_followed (or as the old entry had it). */
static void add_reclaim_at(cJSON *o, int64_t at, bool not_followed, const cJSON *old)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(old, "reclaimAt");
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(old, "reclaimNotFollowed");
	if (at > 0) {
		char text[32];
		sp_format_time(at, text);
		cJSON_AddStringToObject(o, "reclaimAt", text);
		if (not_followed)
			cJSON_AddBoolToObject(o, "reclaimNotFollowed", true);
	} else if (at < 0 && cJSON_IsString(v)) {
		cJSON_AddItemToObject(o, "reclaimAt", cJSON_Duplicate(v, 1));
		if (cJSON_IsTrue(f))
			cJSON_AddBoolToObject(o, "reclaimNotFollowed", true);
	}
}

int64_t status_reclaim_at(const cJSON *status, const char *id, bool *ret_not_followed)
{
	const cJSON *e;
	size_t seen = 0;
	*ret_not_followed = false;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(status, "instances")) {
		if (seen++ >= STATUS_MAX_RECORDED)
			break;
		if (strcmp(entry_id(e), id) == 0) {
			const cJSON *at = cJSON_GetObjectItemCaseSensitive(e, "reclaimAt");
			*ret_not_followed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "reclaimNotFollowed"));
			return cJSON_IsString(at) ? sp_parse_time(at->valuestring) : 0;
		}
	}
	return 0;
}

size_t status_newly_ready(const cJSON *old_status, const cJSON *new_status, int64_t *ret, size_t max)
{
	struct entry_index old;
	entry_index(old_status, &old);
	size_t n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(new_status, "instances")) {
		int64_t seconds = ready_seconds(e);
		if (n < max && seconds >= 0 && ready_seconds(entry_find(&old, entry_id(e))) < 0)
			ret[n++] = seconds;
	}
	free(old.v);
	return n;
}

static cJSON *ledger_json(const struct plan_launch *l)
{
	if (!l)
		return cJSON_CreateNull();
	char started[32];
	sp_format_time(l->started, started);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "clientToken", l->client_token);
	cJSON_AddNumberToObject(o, "count", l->count);
	if (*l->zone)
		cJSON_AddStringToObject(o, "zone", l->zone);
	if (*l->instance_type)
		cJSON_AddStringToObject(o, "instanceType", l->instance_type);
	cJSON_AddStringToObject(o, "startedAt", started);
	if (l->ids_known) {
		cJSON *ids = cJSON_AddArrayToObject(o, "instanceIds");
		for (size_t i = 0; i < l->instance_ids.n; i++)
			cJSON_AddItemToArray(ids, cJSON_CreateString(l->instance_ids.v[i]));
	}
	return o;
}

/* Progressing says what a person watching the pool wants to know: what it is doing
 * and, when it is short, why. */
static void add_progress(cJSON *conds, const struct status_input *in, int live, bool live_known,
			 int running)
{
	const struct plan *p = in->plan;
	char msg[2 * SP_ERROR_MAX];  /* whole: add_condition redacts, then cuts */
	const char *reason = "Stable";
	bool progressing = true;
	if (in->progress_message) {
		reason = "DryRun";
		snprintf(msg, sizeof(msg), "%s", in->progress_message);
	} else if (in->deleting) {
		reason = "Deleting";
		if (p && p->cleanup.n)
			snprintf(msg, sizeof(msg), "pool deleted: terminating %zu instance(s)", p->cleanup.n);
		else if (p && p->waiting)
			snprintf(msg, sizeof(msg), "pool deleted: waiting for the outcome of a launch before "
				 "releasing the resource");
		else
			snprintf(msg, sizeof(msg), "pool deleted: cleaning up%s%s", in->degraded_message ? ": " : "",
				 in->degraded_message ? in->degraded_message : "");
	} else if (in->degraded_reason && live_known && live < in->minimum) {
		reason = "BelowMinimum";
		snprintf(msg, sizeof(msg), "%d of minimum %d instance(s) live%s: %s", live, in->minimum,
			 p ? "" : " (last known)", in->degraded_message);
	} else if (in->degraded_reason && !p) {
		reason = "Blocked";
		progressing = false;
		snprintf(msg, sizeof(msg), "cannot reconcile: %s", in->degraded_message);
	} else if (p && (p->launch > 0 || p->resume > 0)) {
		reason = "Launching";
		snprintf(msg, sizeof(msg), "launching %d instance(s): %d live, target %d",
			 p->launch + p->resume, p->observed, p->target);
	} else if (p && p->inflight > 0) {
		reason = "WaitingForLaunch";
		snprintf(msg, sizeof(msg), "waiting for launched instance(s) to appear: %d live, %d in flight, "
			 "target %d", p->observed, p->inflight, p->target);
	} else if (p && p->scale_down.n) {
		reason = "ScalingDown";
		snprintf(msg, sizeof(msg), "terminating %zu instance(s) above target %d", p->scale_down.n,
			 p->target);
	} else if (p && p->cleanup.n) {
		reason = "CleaningUp";
		snprintf(msg, sizeof(msg), "terminating %zu dead instance(s)", p->cleanup.n);
	} else if (p && running < live) {
		reason = "WaitingForInstances";
		snprintf(msg, sizeof(msg), "%d of %d instance(s) running", running, live);
	} else {
		progressing = false;
		snprintf(msg, sizeof(msg), p ? "pool is at its target size" : "not reconciled");
	}
	add_condition(conds, in, "Progressing", progressing, reason, msg);
}

cJSON *status_build(const struct status_input *in)
{
	const struct plan *p = in->plan;
	cJSON *st = cJSON_CreateObject();
	/* Without a plan the cloud was not read: the last known size stands (if any). */
	const cJSON *last = cJSON_GetObjectItemCaseSensitive(in->old_status, "size");
	int live = !p && cJSON_IsNumber(last) ? last->valueint : 0, running = 0;
	bool live_known = p || cJSON_IsNumber(last) ||
			  (!cJSON_GetObjectItemCaseSensitive(in->old_status, "instances") &&
			   !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(in->old_status, "launch")));
	if (p) {
		cJSON *list = cJSON_CreateArray();
		struct entry_index old;
		entry_index(in->old_status, &old);
		int ready_nodes = 0;
		for (size_t i = 0; i < in->n_instances; i++) {
			live += plan_classify_state(in->instances[i].state) == PLAN_LIVE;
			running += strcmp(in->instances[i].state, "RUNNING") == 0;
			cJSON *o = status_instance_json(&in->instances[i]);
			const cJSON *was = entry_find(&old, in->instances[i].id);
			ready_nodes += add_node(o, &in->instances[i], in->nodes != NULL, in->nodes ? in->nodes[i] : NULL, was);
			add_reclaim_at(o, in->reclaim_at ? in->reclaim_at[i] : -1,
				       in->reclaim_at && in->not_followed && in->not_followed[i], was);
			cJSON_AddItemToArray(list, o);
		}
		free(old.v);
		cJSON_AddNumberToObject(st, "size", live);
		cJSON_AddItemToObject(st, "instances", list);
		if (in->nodes || cJSON_HasObjectItem(in->old_status, "readyNodes"))
			cJSON_AddNumberToObject(st, "readyNodes", ready_nodes);
	}
	if (in->selector)
		cJSON_AddStringToObject(st, "selector", in->selector);
	cJSON_AddNumberToObject(st, "observedGeneration", (double)in->generation);
	cJSON_AddNumberToObject(st, "launchSeq", (double)in->launch_seq);
	cJSON_AddItemToObject(st, "launch", ledger_json(in->ledger));
	if (in->account)
		cJSON_AddStringToObject(st, "accountFingerprint", in->account);
	if (in->node_deletions_known && in->n_node_deletions) {
		cJSON *list = cJSON_AddArrayToObject(st, "nodeDeletions");
		for (size_t i = 0; i < in->n_node_deletions; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", in->node_deletions[i].name);
			cJSON_AddStringToObject(o, "uid", in->node_deletions[i].uid);
			cJSON_AddStringToObject(o, "instanceId", in->node_deletions[i].instance_id);
			if (*in->node_deletions[i].ip) {
				char since[32];
				sp_format_time(in->node_deletions[i].since, since);
				cJSON_AddStringToObject(o, "privateIp", in->node_deletions[i].ip);
				cJSON_AddStringToObject(o, "since", since);
			}
			cJSON_AddItemToArray(list, o);
		}
	} else if (in->node_deletions_known) {
		cJSON_AddNullToObject(st, "nodeDeletions");
	}

	cJSON *conds = cJSON_AddArrayToObject(st, "conditions");
	char msg[2 * SP_ERROR_MAX];  /* whole: add_condition redacts, then cuts */
	bool ready = !in->degraded_reason && !in->deleting && p && p->inflight == 0 &&
		     running == p->target && live == p->target;
	if (p)
		snprintf(msg, sizeof(msg), "%d/%d instance(s) running", running, p->target);
	else
		snprintf(msg, sizeof(msg), "%s", in->degraded_message ? in->degraded_message : "not reconciled");
	add_condition(conds, in, "Ready", ready,
		      ready ? "PoolReady" : in->degraded_reason ? in->degraded_reason :
		      in->deleting ? "Deleting" : "Scaling", msg);
	add_progress(conds, in, live, live_known, running);
	add_condition(conds, in, "Degraded", in->degraded_reason != NULL,
		      in->degraded_reason ? in->degraded_reason : "AsExpected",
		      in->degraded_message ? in->degraded_message : "no errors");
	if (in->capacity_message)
		add_condition(conds, in, "CapacityAvailable", !*in->capacity_message,
			      *in->capacity_message ? "SoldOut" : "Available",
			      *in->capacity_message ? in->capacity_message : "the pool's offerings are not marked sold out");
	else if (find_condition(in->old_status, "CapacityAvailable"))
		cJSON_AddItemToArray(conds, cJSON_Duplicate(find_condition(in->old_status, "CapacityAvailable"), 1));
	problem_condition(conds, in, "DrainBlocked", in->drain_blocked,
			  in->drain_blocked_reason ? in->drain_blocked_reason : DRAIN_REASON_TIMED_OUT, "NotBlocked",
			  "no drain is blocked");
	problem_condition(conds, in, "NodeClaimsRefused", in->node_claims, in->node_claims_reason, "AllHonoured",
			  "every Node claim to the pool's instances agrees with the cloud");
	if (in->insecure_credentials)
		add_condition(conds, in, "InsecureCredentials", true, "InlineCredentials",
			      "spec.secretId/secretKey are stored in the resource; move them to a Secret "
			      "and use spec.credentialsSecretRef");
	return st;
}

bool status_patch_is_noop(const cJSON *patch, const cJSON *old)
{
	if (!old)
		return false;
	const cJSON *k;
	cJSON_ArrayForEach(k, patch) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(old, k->string);
		if (cJSON_IsNull(k) ? o && !cJSON_IsNull(o) : !o || !cJSON_Compare(k, o, 1))
			return false;
	}
	return true;
}

/* An optional string field of the ledger into out (left empty when absent or null);
 * false when it is something else or does not fit. */
static bool ledger_name(const cJSON *ledger, const char *field, char *out, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ledger, field);
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
		return false;
	snprintf(out, size, "%s", v->valuestring);
	return true;
}

bool status_ledger(const cJSON *status, struct plan_launch *ret)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(status, "launch");
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(l, "clientToken");
	const cJSON *count = cJSON_GetObjectItemCaseSensitive(l, "count");
	const cJSON *started = cJSON_GetObjectItemCaseSensitive(l, "startedAt");
	/* Anyone allowed to write status could write this: accept only sane values. */
	if (!cJSON_IsString(token) || !cJSON_IsNumber(count) || !cJSON_IsString(started) ||
	    strlen(token->valuestring) >= sizeof(ret->client_token) || count->valuedouble < 1 ||
	    count->valuedouble > PLAN_MAX_LAUNCH_PER_CALL)
		return false;
	/* A start time that is not one would put the launch past its grace at once. */
	struct tm tm = {0};
	const char *end = strptime(started->valuestring, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!*token->valuestring || !end || *end)
		return false;
	struct plan_launch out = {.count = count->valueint, .started = (int64_t)timegm(&tm)};
	snprintf(out.client_token, sizeof(out.client_token), "%s", token->valuestring);
	/* The offering: absent in ledgers of earlier versions (the seed's); present, it must
	 * be a string that fits, or the launch could be resumed on another offering. */
	if (!ledger_name(l, "zone", out.zone, sizeof(out.zone)) ||
	    !ledger_name(l, "instanceType", out.instance_type, sizeof(out.instance_type)))
		return false;
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(l, "instanceIds");
	if (cJSON_IsArray(ids)) {
		out.ids_known = true;
		const cJSON *id;
		cJSON_ArrayForEach(id, ids) {
			if (!cJSON_IsString(id) || !*id->valuestring ||
			    strlen(id->valuestring) >= sizeof(((struct pool_instance *)0)->id) ||
			    out.instance_ids.n >= PLAN_MAX_LAUNCH_PER_CALL) {
				plan_launch_clear(&out);
				return false;
			}
			strv_push(&out.instance_ids, id->valuestring);
		}
	}
	*ret = out;
	return true;
}

/* Pushes obj's string key ("" when none) to l, unless l is NULL. */
static void push_string(struct strv *l, const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (l)
		strv_push(l, cJSON_IsString(v) ? v->valuestring : "");
}

void status_recorded(const cJSON *status, struct strv *ret_ids, struct strv *ret_live, struct strv *ret_zones,
		     struct strv *ret_ips, struct strv *ret_nodes)
{
	const cJSON *it;
	size_t n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(status, "instances")) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "instanceId");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(it, "state");
		if (!cJSON_IsString(id) || !*id->valuestring || strlen(id->valuestring) >= 32)
			continue;
		if (n++ >= STATUS_MAX_RECORDED)
			break;
		strv_push(ret_ids, id->valuestring);
		push_string(ret_zones, it, "zone");
		push_string(ret_ips, it, "privateIp");
		push_string(ret_nodes, it, "node");
		/* Entries of the earlier operator have no state: they were live. */
		if (!cJSON_IsString(state) || plan_classify_state(state->valuestring) == PLAN_LIVE)
			strv_push(ret_live, id->valuestring);
	}
}

/* A string field into out; false when absent, empty or too long. */
static bool fitting(const cJSON *obj, const char *key, char *out, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsString(v) || !*v->valuestring || strlen(v->valuestring) >= size)
		return false;
	snprintf(out, size, "%s", v->valuestring);
	return true;
}

size_t status_node_deletions(const cJSON *status, struct node_ref *ret, size_t max)
{
	size_t n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(status, "nodeDeletions")) {
		if (n == max)
			break;
		struct node_ref r = {0};
		if (!fitting(it, "name", r.name, sizeof(r.name)) || !fitting(it, "uid", r.uid, sizeof(r.uid)))
			continue;
		fitting(it, "instanceId", r.instance_id, sizeof(r.instance_id));
		if (fitting(it, "privateIp", r.ip, sizeof(r.ip)))
			r.since = sp_parse_time(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "since")));
		r.carried = true;
		ret[n++] = r;
	}
	return n;
}

int64_t status_launch_seq(const cJSON *status)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(status, "launchSeq");
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}
