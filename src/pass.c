/* pass: the pass planner; see pass.h. The walk below follows a pass from start to end
 * and emits every action not answered yet; answers already in pass_done steer it. Here:
 * the walk's order, the helpers every part emits and fails through, the status, the
 * requeue and the action lines; its parts are pass_launch.c (launches), pass_drain.c
 * (drains), pass_delete.c (deletion, gone instances' Nodes), pass_notice.c (reclaim
 * deadlines, Node claims) and pass_account.c (credentials, fingerprints, tokens), which
 * share include/pass_walk.h. */
#include "pass_walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const struct pass_answer *pass_answered(const struct walk *w, int step, enum pass_kind kind)
{
	for (size_t i = w->d->n; i-- > 0;)
		if (w->d->v[i].step == step && w->d->v[i].kind == kind)
			return &w->d->v[i];
	return NULL;
}

/* A new action, or NULL when this one was taken already (its answer is recorded). */
struct pass_action *pass_emit(struct walk *w, enum pass_kind kind, int step)
{
	if (pass_answered(w, step, kind))
		return NULL;
	struct pass_actions *o = w->out;
	o->v = xrealloc(o->v, (o->n + 1) * sizeof(*o->v));
	struct pass_action *a = &o->v[o->n++];
	*a = (struct pass_action){.kind = kind, .step = step};
	return a;
}

void pass_event(struct walk *w, int step, const char *type, const char *reason, const char *fmt, ...)
{
	struct pass_action *a = pass_emit(w, PASS_EVENT, step);
	if (!a)
		return;
	a->event_type = type;
	a->reason = reason;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&a->message, fmt, ap) < 0)
		abort();
	va_end(ap);
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

/* A failure that leaves the pool short (or a deleted pool uncleaned) shows as the
 * Degraded condition, and as one Warning event per episode: the condition's reason (not
 * the message, which carries a fresh RequestId on every call) tells a new episode from a
 * repeat of the one the pass found, and a pass posts each reason once. */
void pass_fail_as(struct walk *w, int step, const char *reason, const char *what, const char *detail)
{
	w->degraded_reason = reason;
	snprintf(w->degraded_message, sizeof(w->degraded_message), "%s%s%s", what,
		 detail && *detail ? ": " : "", detail ? detail : "");
	const char *start = w->in->start_degraded_reason;
	if ((!start || strcmp(start, w->degraded_reason) != 0) && w->posted != w->degraded_reason) {
		pass_event(w, pass_step_fail_event(step), "Warning", w->degraded_reason, "%s", w->degraded_message);
		w->posted = w->degraded_reason;
	}
}

void pass_fail(struct walk *w, int step, int code, const char *what, const char *detail)
{
	pass_fail_as(w, step, reason_for(code), what, detail);
}

void pass_fail_answer(struct walk *w, const struct pass_answer *a, const char *fmt, ...)
{
	char what[SP_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	pass_fail(w, a->step, a->code, what, a->message);
}

bool pass_refused(int code)
{
	return code == SP_ECAPACITY || code == SP_EAUTH || code == SP_ECONFIG;
}

/* final: the pass's last word. A write in the middle of a pass (the ledger) does not
 * know yet whether the pass will fail: it keeps the Degraded condition the pool had, so
 * conditions do not flap and a failure right after is no new episode. */
static cJSON *build_status(const struct walk *w, bool final)
{
	const struct pass_input *in = w->in;
	const char *reason = w->degraded_reason, *message = reason ? w->degraded_message : NULL;
	if (!final && !reason && in->start_degraded_reason) {
		reason = in->start_degraded_reason;
		message = status_condition(in->old_status, "Degraded", "message");
	}
	char *label = pool_label_value(in->name);
	char *selector = xasprintf("spotpool.jokerbai.com/pool-name=%s", label);
	free(label);
	size_t n = 0;
	struct pool_instance *recorded = w->plan ? plan_recorded(in->plan.instances, in->plan.n_instances,
								 in->terminated, &n) : NULL;
	const struct node_view **nodes = in->nodes ? xcalloc(n ? n : 1, sizeof(*nodes)) : NULL;
	int64_t *reclaim_at = xcalloc(n ? n : 1, sizeof(*reclaim_at));
	bool *false_notice = xcalloc(n ? n : 1, sizeof(*false_notice));
	pass_recorded_nodes(in, recorded, n, nodes, reclaim_at, false_notice);
	struct status_input s = {
		.selector = selector, .old_status = in->old_status, .generation = in->generation,
		.instances = recorded, .n_instances = n, .plan = w->plan,
		.minimum = in->spec ? in->spec->minimum : 0, .deleting = in->deleting,
		.ledger = in->ledger, .launch_seq = in->launch_seq,
		.degraded_reason = reason, .degraded_message = message,
		.progress_message = *w->progress ? w->progress : NULL,
		.capacity_message = w->plan && !in->deleting ? w->capacity : NULL,
		.insecure_credentials = in->insecure_credentials, .now = in->plan.now,
		.nodes = nodes, .reclaim_at = in->nodes_pending || in->notices_pending ? NULL : reclaim_at,
		.not_followed = false_notice,
		.drain_blocked = w->drain_blocked, .drain_blocked_reason = w->drain_blocked_reason,
		.account = w->plan ? w->account_record : NULL,
		.node_deletions = w->deletions, .n_node_deletions = w->n_deletions,
		.node_deletions_known = w->deletions_known,
		.node_claims = w->node_claims, .node_claims_reason = w->node_claims_reason,
	};
	cJSON *st = status_build(&s);
	free(false_notice);
	free(reclaim_at);
	free(nodes);
	free(recorded);
	free(selector);
	return st;
}

/* Writes the whole status with the ledger, so what the ledger resolved (the instances)
 * lands in the same write. */
void pass_record_ledger(struct walk *w, enum pass_kind kind, int step, const struct plan_launch *ledger,
			  int64_t launch_seq)
{
	struct pass_action *a = pass_emit(w, kind, step);
	if (!a)
		return;
	a->has_ledger = ledger != NULL;
	if (ledger) {
		a->ledger = *ledger;
		a->ledger.instance_ids = (struct strv){0};
		for (size_t i = 0; i < ledger->instance_ids.n; i++)
			strv_push(&a->ledger.instance_ids, ledger->instance_ids.v[i]);
	}
	a->launch_seq = launch_seq;
	struct pass_input shown = *w->in;
	shown.ledger = ledger;
	shown.launch_seq = launch_seq;
	struct walk as = *w;
	as.in = &shown;
	a->status = build_status(&as, false);
	/* A merge patch keeps keys it does not mention: clear the previous launch's IDs. */
	cJSON *launch = cJSON_GetObjectItemCaseSensitive(a->status, "launch");
	if (cJSON_IsObject(launch) && !cJSON_HasObjectItem(launch, "instanceIds"))
		cJSON_AddNullToObject(launch, "instanceIds");
}

/* A terminate of ids (in dry-run, what it would take); true when it was emitted now. */
bool pass_emit_terminate(struct walk *w, enum pass_kind kind, int step, const struct strv *ids,
			   enum pass_why why)
{
	struct pass_action *a = ids->n ? pass_emit(w, kind, step) : NULL;
	for (size_t i = 0; a && i < ids->n; i++)
		strv_push(&a->ids, ids->v[i]);
	if (a)
		a->why = why;
	return a != NULL;
}

void pass_terminate(struct walk *w, int step, const struct strv *ids, enum pass_why why)
{
	if (!ids->n || pass_emit_terminate(w, PASS_TERMINATE, step, ids, why))
		return;
	const struct pass_answer *t = pass_answered(w, step, PASS_TERMINATE);
	if (t && t->code < 0) {
		static const char *const what[] = {
			[PASS_WHY_SCALE_DOWN] = "scale down", [PASS_WHY_CLEANUP] = "dead instances",
			[PASS_WHY_DELETION] = "pool deleted", [PASS_WHY_NOTICE] = "reclaim notice",
		};
		char m[SP_ERROR_MAX];
		snprintf(m, sizeof(m), "terminate failed (%s)", what[why]);
		pass_fail(w, step, t->code, m, t->message);
		if (w->error == 0)
			w->error = t->code;
	}
}

/* A scale-down follows the spec the pass read. Before a victim is terminated (step
 * STEP_SCALE_DOWN_INTENT, victims shown TERMINATING) or its Node drained
 * (STEP_DRAIN_INTENT, victims NULL), a guarded status write proves that spec is still
 * the pool's: a stale copy (a new leader's cache, a lagging watch) would otherwise act on
 * an old size and launch again once the current one arrives (fault campaign seed 44).
 * True once written. */
bool pass_scale_down_recorded(struct walk *w, int step, const struct strv *victims)
{
	/* The ledger as it stands goes along (a status without one clears it). */
	enum pass_kind kind = w->in->ledger ? PASS_RECORD_LEDGER : PASS_CLEAR_LEDGER;
	const struct pass_answer *r = pass_answered(w, step, kind);
	if (r) {
		if (r->code < 0 && w->error == 0)
			w->error = r->code;
		return r->code == 0;
	}
	struct strv going = {0};
	for (size_t i = 0; victims && w->in->terminated && i < w->in->terminated->n; i++)
		strv_push(&going, w->in->terminated->v[i]);
	for (size_t i = 0; victims && i < victims->n; i++)
		strv_push(&going, victims->v[i]);
	struct pass_input shown = *w->in;
	if (victims)
		shown.terminated = &going;
	struct walk as = *w;
	as.in = &shown;
	pass_record_ledger(&as, kind, step, w->in->ledger, w->in->launch_seq);
	strv_clear(&going);
	return false;
}

/* A drain in progress wants a look again in ms (at least 1 s): the pass's requeue is the
 * sooner of this and what the rest of the pass asks for (requeue()). */
void pass_look_again(struct walk *w, int64_t ms)
{
	if (ms < 1000)
		ms = 1000;
	if (!w->drain_ms || ms < w->drain_ms)
		w->drain_ms = ms;
}

int pass_instance_index(const struct pass_input *in, const char *id)
{
	for (size_t i = 0; i < in->plan.n_instances; i++)
		if (strcmp(in->plan.instances[i].id, id) == 0)
			return (int)i;
	return -1;
}

/* The pool's own work: reclaims noticed, the launch (a repeat, or the shortfall), the
 * resolved ledger cleared, excess and dead instances terminated, drains. */
static void act(struct walk *w)
{
	const struct plan *plan = w->plan;
	if (plan->reclaimed.n) {
		struct pass_action *a = pass_emit(w, PASS_RECLAIMED, STEP_RECLAIMS);
		for (size_t i = 0; a && i < plan->reclaimed.n; i++)
			strv_push(&a->ids, plan->reclaimed.v[i]);
	}
	if (w->in->dry_run) {
		pass_dry_run(w);
	} else if (plan->resume) {
		pass_resume(w);
	} else if (plan->launch > 0) {
		pass_launch_shortfall(w);
	} else if (plan->ledger_done && w->in->ledger) {
		/* Resolved: the instances go into .status.instances in the same guarded write. */
		pass_record_ledger(w, PASS_CLEAR_LEDGER, STEP_LEDGER_DONE, NULL, w->in->launch_seq);
		const struct pass_answer *c = pass_answered(w, STEP_LEDGER_DONE, PASS_CLEAR_LEDGER);
		if (c && c->code < 0)
			w->error = c->code;
	}
	if (!w->in->dry_run) {
		pass_doomed_go(w);
		struct strv ready = {0};
		pass_drain_then(w, GROUP_SCALE_DOWN, &plan->scale_down, &ready);
		if (ready.n && pass_scale_down_recorded(w, STEP_SCALE_DOWN_INTENT, &ready))
			pass_terminate(w, STEP_SCALE_DOWN, &ready, PASS_WHY_SCALE_DOWN);
		strv_clear(&ready);
		/* A DrainBlocked once set goes False when no scale-down waits any more. */
		if (!plan->scale_down.n && status_condition(w->in->old_status, "DrainBlocked", "status"))
			w->drain_blocked = "";
		pass_terminate(w, STEP_CLEANUP, &plan->cleanup, PASS_WHY_CLEANUP);
		const struct strv *wanted[] = {&plan->scale_down, &plan->doomed};
		pass_undo_unwanted_drains(w, wanted, 2);
	}
	/* Drains (scale-down with Nodes, doomed instances) set their own look again. */
	bool progress = plan->launch || plan->resume || plan->waiting || plan->cleanup.n ||
			(plan->scale_down.n && !w->drain_ms);
	for (size_t i = 0; i < w->in->plan.n_instances && !progress; i++)
		progress = plan_state_settling(w->in->plan.instances[i].state);
	if (!w->requeue_ms && progress)
		w->requeue_ms = PASS_REQUEUE_PROGRESS_MS;
}

/* The final status, when it changes anything; a failure to write it is the pass's error
 * (a conflict: plan again from a fresh read). */
static void write_status(struct walk *w)
{
	const struct pass_answer *s = pass_answered(w, STEP_STATUS, PASS_WRITE_STATUS);
	if (!s) {
		cJSON *st = build_status(w, true);
		cJSON_DeleteItemFromObject(st, "launch");
		cJSON_DeleteItemFromObject(st, "launchSeq");
		if (status_patch_is_noop(st, w->in->old_status)) {
			cJSON_Delete(st);
			return;
		}
		pass_emit(w, PASS_WRITE_STATUS, STEP_STATUS)->status = st;
		return;
	}
	/* Made visible on the object too: a status that cannot be written (RBAC, a
	 * webhook) would otherwise look like a pool that is simply not progressing. */
	if (s->code < 0 && s->code != SP_ETRANSIENT)
		pass_event(w, STEP_STATUS, "Warning", "StatusUpdateFailed", "cannot write status: %s", s->message);
	if (s->code < 0 && w->error == 0)
		w->error = s->code;
}

static void requeue(struct walk *w)
{
	if (w->drain_ms && (!w->requeue_ms || w->drain_ms < w->requeue_ms))
		w->requeue_ms = w->drain_ms;
	struct pass_action *a = pass_emit(w, PASS_REQUEUE, STEP_END);
	if (a) {
		a->requeue_ms = w->requeue_ms;
		a->error = w->error;
	}
}

/* A guarded write found the pool changed since the pass read it: whatever this pass
 * would write next is built on a stale view and could undo the other writer's record. */
static bool conflicted(const struct pass_done *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].code == SP_ECONFLICT)
			return true;
	return false;
}

/* Planned: the plan is made (the cloud was read). */
static void planned(struct walk *w)
{
	const struct pass_input *in = w->in;
	/* A failed sweep leaves plan.sweep set: its answer is looked at first. */
	const struct pass_answer *sw = pass_answered(w, STEP_SWEEP, PASS_SWEEP);
	if (w->plan->sweep && !sw) {
		pass_emit(w, PASS_SWEEP, STEP_SWEEP);
		return;
	}
	if (sw && sw->code < 0) {
		char what[SP_ERROR_MAX];
		snprintf(what, sizeof(what), "cannot look for the instances of launch %s before releasing the "
			 "deleted pool", in->plan.ledger ? in->plan.ledger->client_token : "");
		pass_fail(w, STEP_SWEEP, sw->code, what, sw->message);
		w->error = sw->code;
		write_status(w);
		return;
	}
	if (!in->deleting) {
		int64_t next_probe;
		pass_describe_scarcity(w, in->offer_state, in->probe_at_ms, &next_probe);
	}
	if (!pass_nodes_confirmed(w))
		return;
	pass_nodes_to_delete(w);
	/* Launches first; a deleted pool's gone Nodes before it is released. */
	if (in->deleting) {
		pass_delete_gone_nodes(w);
		pass_deletion(w);
		if (pass_released(w))
			return;
		const struct pass_answer *r = pass_answered(w, STEP_RELEASE, PASS_RELEASE);
		if (r)
			w->error = r->code;
	} else {
		act(w);
		pass_delete_gone_nodes(w);
	}
	pass_unlisted_drains(w);
	pass_node_claims(w);
	write_status(w);
}

/* The credentials in use see none of the recorded instances: their absence proves
 * nothing, so nothing is planned from it (no Node deleted, no refill, no release), as
 * when the cloud cannot be read. No error: what settles it is the user's (restored
 * credentials take at most a resync period, not a backoff grown to minutes). */
static void account_changed(struct walk *w, const char *recorded)
{
	char what[SP_ERROR_MAX];
	snprintf(what, sizeof(what), "none of the pool's recorded instances shows to the credentials now in use "
		 "(account %s; the instances were launched in account %s): nothing is launched, terminated or "
		 "deleted until the credentials the instances were launched with are restored, or, to abandon "
		 "them knowingly, status.accountFingerprint is removed (docs/troubleshooting.md#accountchanged)",
		 w->in->account ? w->in->account : w->in->account_key, recorded);
	pass_fail_as(w, STEP_ACCOUNT, "AccountChanged", what, NULL);
	write_status(w);
	requeue(w);
}

static void plan_pass(struct walk *w);

void pass_plan(const struct pass_input *in, const struct pass_done *d, struct pass_actions *ret)
{
	*ret = (struct pass_actions){.live = -1};
	struct walk w = {.in = in, .d = d, .out = ret};
	plan_pass(&w);
	free(w.deletions);
	free(w.deletion_views);
	ret->degraded_reason = w.degraded_reason;
	snprintf(ret->degraded_message, sizeof(ret->degraded_message), "%s", w.degraded_reason ? w.degraded_message : "");
}

static void plan_pass(struct walk *w)
{
	const struct pass_input *in = w->in;
	if (conflicted(w->d)) {
		/* Nothing more is written: what was observed is observed again by the next
		 * pass, planned at once from a fresh read. */
		pass_emit(w, PASS_REREAD, STEP_REREAD);
		w->requeue_ms = PASS_REQUEUE_CONFLICT_MS;
		requeue(w);
		return;
	}
	if (in->deleting && !in->finalizer)
		return;  /* not ours to clean up (or already released) */
	if (!in->spec) {
		/* Bad input never leads to a launch or a termination; a deleted pool is still
		 * cleaned up as long as its credentials and region can be read. */
		if (!in->active)
			return;
		pass_fail(w, STEP_VALIDATE, SP_EINVAL, in->deleting ? "cannot clean up the deleted pool" : "invalid spec",
		     in->spec_error);
		w->error = in->deleting ? SP_EINVAL : 0;
		write_status(w);
		requeue(w);
		return;
	}
	if (!in->active)
		return;
	if (!in->deleting && !in->dry_run && !in->finalizer) {
		pass_emit(w, PASS_ADD_FINALIZER, STEP_FINALIZER);
		const struct pass_answer *f = pass_answered(w, STEP_FINALIZER, PASS_ADD_FINALIZER);
		if (f && f->code < 0) {
			w->error = f->code;
			requeue(w);
			return;
		}
	}
	if (in->observe_code < 0) {
		char what[SP_ERROR_MAX];
		snprintf(what, sizeof(what), "%s", in->observe_message ? in->observe_message : "");
		pass_fail(w, STEP_OBSERVE, in->observe_code, what, NULL);
		bool nothing_recorded = (!in->plan.seen || in->plan.seen->n == 0) && !in->plan.ledger;
		if (in->deleting && nothing_recorded && !in->dry_run) {
			pass_release(w, "nothing recorded to clean up");
			const struct pass_answer *r = pass_answered(w, STEP_RELEASE, PASS_RELEASE);
			w->error = r ? r->code : 0;
			requeue(w);
			return;
		}
		w->error = in->observe_code;
		write_status(w);
		requeue(w);
		return;
	}
	const char *account = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in->old_status,
										  "accountFingerprint"));
	if (pass_account_check(account, in->account_key, in->account, &in->plan, &w->account_record) ==
	    PASS_ACCOUNT_CHANGED) {
		account_changed(w, account);
		return;
	}
	/* What the pass knows of the deletion and the mode, the planner's way. */
	struct plan_input plan_in = in->plan;
	plan_in.retain = in->deleting && in->spec && in->spec->deletion_policy == POOL_RETAIN;
	plan_in.dry_run = in->dry_run;
	struct drain_victim *victims = pass_victims_of(in);
	plan_in.victims = victims;
	struct plan plan;
	plan_compute(&plan_in, &plan);
	w->plan = &plan;
	w->out->live = plan.observed;
	w->out->target = plan.target;
	planned(w);
	if (!pass_released(w))
		requeue(w);
	plan_free(&plan);
	free(victims);
}

void pass_actions_free(struct pass_actions *a)
{
	for (size_t i = 0; i < a->n; i++) {
		strv_clear(&a->v[i].ids);
		strv_clear(&a->v[i].ledger.instance_ids);
		free(a->v[i].message);
		cJSON_Delete(a->v[i].status);
	}
	free(a->v);
	*a = (struct pass_actions){0};
}

void pass_done_add(struct pass_done *d, const struct pass_action *a, int code, const char *reason,
		   const char *message, bool sold_out)
{
	if (d->n == PASS_DONE_MAX)
		return;  /* the executor stops the pass there */
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 8;
		d->v = xrealloc(d->v, d->cap * sizeof(*d->v));
	}
	struct pass_answer *x = &d->v[d->n++];
	*x = (struct pass_answer){.step = a->step, .kind = a->kind, .code = code, .sold_out = sold_out};
	snprintf(x->reason, sizeof(x->reason), "%s", reason ? reason : "");
	snprintf(x->message, sizeof(x->message), "%s", message ? message : "");
}

void pass_done_free(struct pass_done *d)
{
	free(d->v);
	*d = (struct pass_done){0};
}

static void join_ids(const struct strv *ids, char *out, size_t size)
{
	*out = '\0';
	for (size_t i = 0; i < ids->n; i++)
		snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? "," : "", ids->v[i]);
}

void pass_action_line(const struct pass_action *a, char *out, size_t size)
{
	static const char *const why[] = {
		[PASS_WHY_NONE] = "", [PASS_WHY_SCALE_DOWN] = "scale-down", [PASS_WHY_CLEANUP] = "cleanup",
		[PASS_WHY_DELETION] = "deletion", [PASS_WHY_NOTICE] = "notice",
	};
	char ids[768];
	join_ids(&a->ids, ids, sizeof(ids));
	switch (a->kind) {
	case PASS_ADD_FINALIZER: snprintf(out, size, "add-finalizer"); break;
	case PASS_SWEEP: snprintf(out, size, "sweep"); break;
	case PASS_RECLAIMED: snprintf(out, size, "reclaimed %s", ids); break;
	case PASS_TAKE_PROBE: snprintf(out, size, "take-probe %s/%s", a->zone, a->instance_type); break;
	case PASS_RECORD_LEDGER:
		snprintf(out, size, "record-ledger seq=%lld count=%d %s/%s", (long long)a->launch_seq,
			 a->ledger.count, a->ledger.zone, a->ledger.instance_type);
		break;
	case PASS_LAUNCH:
		snprintf(out, size, "launch %s count=%d %s/%s", a->fresh ? "fresh" : "repeat", a->count, a->zone,
			 a->instance_type);
		break;
	case PASS_CHECK_LAUNCH:
		snprintf(out, size, "check-launch count=%d %s/%s", a->count, a->zone, a->instance_type);
		break;
	case PASS_REMEMBER: snprintf(out, size, "remember-answer"); break;
	case PASS_SOLDOUT_MARK: snprintf(out, size, "mark-sold-out %s/%s", a->zone, a->instance_type); break;
	case PASS_SOLDOUT_FORGET: snprintf(out, size, "forget-sold-out %s/%s", a->zone, a->instance_type); break;
	case PASS_SOLDOUT_RETURN: snprintf(out, size, "return-probe %s/%s", a->zone, a->instance_type); break;
	case PASS_CLEAR_LEDGER: snprintf(out, size, "clear-ledger"); break;
	case PASS_TERMINATE: snprintf(out, size, "terminate %s %s", why[a->why], ids); break;
	case PASS_WOULD_TERMINATE: snprintf(out, size, "would-terminate %s %s", why[a->why], ids); break;
	case PASS_LIST_PODS: snprintf(out, size, "list-pods %s", ids); break;
	case PASS_DRAIN_START: snprintf(out, size, "drain-start %s uid=%s", ids, a->node_uid); break;
	case PASS_EVICT: snprintf(out, size, "evict %s", ids); break;
	case PASS_DRAIN_UNDO: snprintf(out, size, "drain-undo %s uid=%s", ids, a->node_uid); break;
	case PASS_DELETE_NODE: snprintf(out, size, "delete-node %s uid=%s", ids, a->node_uid); break;
	case PASS_WOULD_DELETE_NODE: snprintf(out, size, "would-delete-node %s", ids); break;
	case PASS_FIND_NODES: snprintf(out, size, "find-nodes"); break;
	case PASS_EVENT: snprintf(out, size, "event %s %s", a->event_type, a->reason); break;
	case PASS_RELEASE: snprintf(out, size, "release"); break;
	case PASS_WRITE_STATUS: snprintf(out, size, "write-status"); break;
	case PASS_REREAD: snprintf(out, size, "reread"); break;
	case PASS_REQUEUE:
		snprintf(out, size, "requeue after=%lldms error=%s", (long long)a->requeue_ms,
			 a->error ? sp_strerror(a->error) : "none");
		break;
	}
}
