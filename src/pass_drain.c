/* pass_drain: the drains of a pass (pass.h): what the planner knows of each instance's
 * Node and pods, the pods listed once a pass, each victim's drain stepped (start, evict,
 * wait, done, give up) by drain_step, and drains no group wants any more undone. */
#include "pass_walk.h"
#include "doom.h"

#include <stdio.h>
#include <string.h>

static const struct pass_pods *pods_at(const struct pass_input *in, size_t i)
{
	return in->pods && i < in->n_nodes && in->pods[i].listed ? &in->pods[i] : NULL;
}

/* Whether instance i's Node is being drained by spotpool. */
static bool draining_at(const struct pass_input *in, size_t i)
{
	const struct node_view *node = pass_node_at(in, i);
	return node && node->drain_taint && node->drain_started;
}

/* What the planner knows of each instance's Node and notices, for plan_compute (NULL
 * without Nodes or notices): doomed, draining, scale-down-disabled, and its pods once
 * listed. */
struct drain_victim *pass_victims_of(const struct pass_input *in)
{
	if (!in->nodes && !in->notice_at)
		return NULL;
	struct drain_victim *v = xcalloc(in->plan.n_instances ? in->plan.n_instances : 1, sizeof(*v));
	for (size_t i = 0; i < in->plan.n_instances; i++) {
		const struct node_view *node = pass_node_at(in, i);
		const struct pass_pods *pods = pods_at(in, i);
		if (pods)
			drain_victim_count(pods->v, pods->n, &v[i]);
		v[i].unlisted = pods && pods->failed;
		v[i].doomed_at = pass_doomed_at(in, i);
		if (!node) {
			v[i].contested = pass_contested(in, in->plan.instances[i].id);
			continue;
		}
		v[i].has_node = true;
		v[i].scale_down_disabled = node->scale_down_disabled;
		v[i].draining = draining_at(in, i);
		v[i].given_up = node->drain_given_up && in->plan.now < node->drain_given_up + in->spec->drain_timeout;
	}
	return v;
}

/* The pods of the Nodes a drain needs, listed once per pass. Victims are chosen by them
 * (emptiest first), so while a scale-down still has a victim not draining, every Node
 * of the pool; once all of its victims drain (they are chosen first), only the Nodes of
 * the victims of every group. */
static bool pods_listed(struct walk *w)
{
	const struct pass_input *in = w->in;
	const struct plan *plan = w->plan;
	const struct pass_answer *l = pass_answered(w, STEP_LIST_PODS, PASS_LIST_PODS);
	if (l) {
		if (l->code < 0 && w->error == 0)
			w->error = l->code;
		return l->code == 0;
	}
	bool choosing = false;
	for (size_t k = 0; k < plan->scale_down.n && !choosing; k++) {
		int i = pass_instance_index(in, plan->scale_down.v[k]);
		choosing = i >= 0 && pass_node_at(in, (size_t)i) && !draining_at(in, (size_t)i);
	}
	struct pass_action *a = pass_emit(w, PASS_LIST_PODS, STEP_LIST_PODS);
	for (size_t i = 0; i < in->plan.n_instances; i++) {
		const char *id = in->plan.instances[i].id;
		bool victim = strv_contains(&plan->scale_down, id) || strv_contains(&plan->doomed, id) ||
			      (in->deleting && strv_contains(&plan->cleanup, id));
		if (pass_node_at(in, i) && (choosing || victim))
			strv_push(&a->ids, pass_node_at(in, i)->name);
	}
	return false;
}

/* A drain's start or undo acts on node: its name, and the UID it must still have (a Node
 * re-registered under the name is another one, not to be cordoned by this decision). */
static void node_action(struct pass_action *a, const struct node_view *node)
{
	strv_push(&a->ids, node->name);
	snprintf(a->node_uid, sizeof(a->node_uid), "%s", node->uid);
}

static const char *const group_names[] = {
	[GROUP_SCALE_DOWN] = "scale-down", [GROUP_NOTICE] = "reclaim notice", [GROUP_DELETION] = "pool deleted",
	[GROUP_UNDO] = "no longer needed",
};

/* Takes the next step of the drain of victim k of group g (instance i, which has a
 * Node); true when it is drained (terminate it now). A notice's drain cut short by the
 * deadline is not: spotpool terminates no instance because of a notice with pods it
 * could not move (the cloud does at a real reclaim); it waits for the pods to go, the
 * reclaim, or the notice to prove false (pass_doomed_at). */
static bool drain_one(struct walk *w, enum drain_group g, size_t k, size_t i, const struct pass_pods *pods)
{
	const struct pass_input *in = w->in;
	const struct node_view *node = pass_node_at(in, i);
	const char *id = in->plan.instances[i].id;
	int64_t now = in->plan.now, timeout = in->spec->drain_timeout, deadline = pass_doomed_at(in, i);
	/* A notice's drain is forced whatever drainTimeout says (0 included): the deadline
	 * governs, and past it nothing more is evicted. */
	if (g == GROUP_NOTICE)
		timeout = deadline > now ? deadline - now + 1 : 1;
	/* Victims above maximum (the first of the group: plan's order) are never kept: their
	 * drain is cut short at the timeout, as a deleted pool's. */
	bool forced = g == GROUP_DELETION ||
		      (g == GROUP_SCALE_DOWN && (int)k < w->plan->observed - in->spec->maximum);
	const int start_step = pass_step_drain(g, k, PART_START), started_step = pass_step_drain(g, k, PART_STARTED_EVENT),
		  evict_step = pass_step_drain(g, k, PART_EVICT), undo_step = pass_step_drain(g, k, PART_UNDO),
		  end_step = pass_step_drain(g, k, PART_END_EVENT);
	int64_t started = node->drain_taint ? node->drain_started : 0;
	const struct pass_answer *st = pass_answered(w, start_step, PASS_DRAIN_START);
	if (st && st->code == 0)
		pass_event(w, started_step, "Normal", "DrainStarted", "draining node %s of instance %s (%s)",
			   node->name, id, group_names[g]);
	if (!started && st && st->code == 0)
		started = now;
	int64_t retry_at = node->drain_given_up + timeout;
	if (!started && g == GROUP_SCALE_DOWN && node->drain_given_up && now < retry_at) {
		/* The give-up's pass said why (DrainBlocked, naming the pods left); if it ended
		 * before its status write (a crash), only the Node's record is left to say it. */
		const char *was = status_condition(in->old_status, "DrainBlocked", "status");
		if (!w->drain_blocked && !(was && strcmp(was, "True") == 0)) {
			char at[32];
			sp_format_time(node->drain_given_up, at);
			snprintf(w->drain_message, sizeof(w->drain_message),
				 "the drain of node %s timed out at %s; it is not drained again before a drainTimeout",
				 node->name, at);
			w->drain_blocked = w->drain_message;
		}
		pass_look_again(w, (retry_at - now) * 1000);
		return false;  /* its last drain timed out: not again before a drainTimeout */
	}
	struct drain_step_input din = {
		.node = {.has_node = true, .started = started, .was_unschedulable = node->was_unschedulable},
		.pods = pods->v, .n_pods = pods->n, .unlisted = pods->failed, .now = now, .timeout = timeout,
		.deadline = g == GROUP_NOTICE ? deadline : forced && started ? started + timeout : 0,
	};
	if (pods->failed && w->unlisted++ == 0)
		snprintf(w->unlisted_message, sizeof(w->unlisted_message), "cannot list the pods of node %s: %s",
			 node->name, pods->failed);
	struct drain_step s;
	drain_step(&din, &s);
	bool done = false;
	struct pass_action *a;
	const struct pass_answer *ev;
	switch (s.action) {
	case DRAIN_START:
		/* A scale-down follows the spec the pass read: a guarded write proves it is still
		 * the pool's before a pod is touched (as before a terminate, seed 44). */
		if (g == GROUP_SCALE_DOWN && !pass_scale_down_recorded(w, STEP_DRAIN_INTENT, NULL)) {
			pass_look_again(w, DRAIN_RECHECK_SECONDS * 1000);
			break;
		}
		if ((a = pass_emit(w, PASS_DRAIN_START, start_step))) {
			node_action(a, node);
		} else if (st && st->code < 0 && g == GROUP_DELETION && in->deleted_at &&
			   now >= in->deleted_at + timeout) {
			/* A deleted pool whose Node cannot even be tainted (so no drain-started
			 * clock): a drainTimeout after the deletion it goes all the same. */
			pass_event(w, end_step, "Warning", DRAIN_REASON_CUT_SHORT, "the drain of node %s "
				   "could not start within drainTimeout of the pool's deletion: %s", node->name, st->message);
			done = true;
			break;
		} else if (st && st->code < 0 && st->code != SP_ENOTFOUND && w->error == 0) {
			w->error = st->code;  /* not a Node gone, or its name another Node's now: no error */
		}
		pass_look_again(w, DRAIN_RECHECK_SECONDS * 1000);
		break;
	case DRAIN_EVICT:
		/* A refusal for now (a PodDisruptionBudget, a conflict) is retried; any other
		 * failure (RBAC, the apiserver) is the pool's: Degraded, with backoff. */
		if ((ev = pass_answered(w, evict_step, PASS_EVICT)) && ev->code < 0 && ev->code != SP_ETHROTTLED) {
			pass_fail(w, STEP_DRAIN_FAILED, ev->code, "cannot evict the pods of a node being drained", ev->message);
			if (w->error == 0)
				w->error = ev->code;
		}
		if ((a = pass_emit(w, PASS_EVICT, evict_step)))
			for (size_t e = 0; e < s.n_evict; e++) {
				char *ref = xasprintf("%s/%s", pods->v[s.evict[e]].namespace, pods->v[s.evict[e]].name);
				strv_push(&a->ids, ref);
				free(ref);
			}
		pass_look_again(w, (s.until - now) * 1000);
		break;
	case DRAIN_WAIT:
		pass_look_again(w, (s.until - now) * 1000);
		break;
	case DRAIN_DONE:
		if (*s.reason && g == GROUP_NOTICE) {
			pass_look_again(w, (deadline + DOOM_FALSE_GRACE_SECONDS - now) * 1000);
			break;
		}
		/* The reasons are constants: an action outlives s. */
		if (*s.reason)
			pass_event(w, end_step, "Warning", DRAIN_REASON_CUT_SHORT, "%s", s.message);
		done = true;
		break;
	case DRAIN_GIVE_UP:
		if ((a = pass_emit(w, PASS_DRAIN_UNDO, undo_step))) {
			node_action(a, node);
			a->why = PASS_WHY_SCALE_DOWN;  /* given up: recorded on the Node */
		}
		pass_event(w, end_step, "Warning", DRAIN_REASON_TIMED_OUT, "%s", s.message);
		snprintf(w->drain_message, sizeof(w->drain_message), "%s", s.message);
		w->drain_blocked = w->drain_message;
		w->drain_blocked_reason = DRAIN_REASON_TIMED_OUT;
		break;
	}
	drain_step_free(&s);
	return done;
}

/* Of ids (a group's victims), those to terminate now into ready: without a Node, not
 * drained by the spec (drainTimeout 0; a notice's drain is forced all the same), not
 * live, or drained. The others take their drain's next step, each on its own. */
void pass_drain_then(struct walk *w, enum drain_group g, const struct strv *ids, struct strv *ready)
{
	const struct pass_input *in = w->in;
	/* Before the Nodes are listed a victim's Node may need draining. Before the notices
	 * are, an excess instance may be a doomed one's replacement; a notice only dooms
	 * more or brings a deadline earlier, so deletions and deadlines need not wait. */
	if (in->nodes_pending || (g == GROUP_SCALE_DOWN && in->notices_pending)) {
		if (ids->n)
			pass_look_again(w, 1000);
		return;
	}
	bool listed = true;
	size_t stepped = 0;
	for (size_t k = 0; k < ids->n; k++) {
		int i = pass_instance_index(in, ids->v[k]);
		const struct node_view *node = i >= 0 ? pass_node_at(in, (size_t)i) : NULL;
		bool live = i >= 0 && plan_classify_state(in->plan.instances[i].state) == PLAN_LIVE;
		/* A contested instance's pods may be on one of its claimants: none is drained
		 * (a claimant may be any Node), and it is not terminated by choice meanwhile
		 * (a refused claimant costs at most keeping it: the pool stays <= maximum). */
		if (!node && live && g != GROUP_DELETION && pass_contested(in, ids->v[k])) {
			pass_look_again(w, DRAIN_RECHECK_SECONDS * 1000);
			continue;
		}
		/* Its Node may be one the cache does not show yet (pass_nodes_confirmed). */
		if (!node && live && w->nodeless_held && *in->plan.instances[i].private_ip) {
			pass_look_again(w, PASS_REQUEUE_PROGRESS_MS);
			continue;
		}
		if (!node || !live || (g != GROUP_NOTICE && in->spec->drain_timeout <= 0)) {
			strv_push(ready, ids->v[k]);
			continue;
		}
		/* A deleted pool's victim past its drain's timeout goes, pods listed or not. A
		 * reclaim deadline never skips the drain (issue 27: a claimed past one did). */
		int64_t started = node->drain_taint ? node->drain_started : 0;
		if (g == GROUP_DELETION && started && in->plan.now >= started + in->spec->drain_timeout) {
			strv_push(ready, ids->v[k]);
			continue;
		}
		/* A pass takes the next step of at most PASS_DRAINS_MAX drains per group (a few
		 * actions each): the others come in the next passes, a few seconds later. */
		if (stepped++ >= PASS_DRAINS_MAX) {
			pass_look_again(w, PASS_REQUEUE_PROGRESS_MS);
			continue;
		}
		if (!(listed = listed && pods_listed(w)))
			continue;
		static const struct pass_pods none = {.listed = true};  /* its Node went meanwhile */
		const struct pass_pods *pods = pods_at(in, (size_t)i);
		if (drain_one(w, g, k, (size_t)i, pods ? pods : &none))
			strv_push(ready, ids->v[k]);
	}
}

/* Drains of spotpool's that no group wants any more (replicas raised again, a notice
 * withdrawn): undone, the Node as it was. */
void pass_undo_unwanted_drains(struct walk *w, const struct strv *const *wanted, size_t n_wanted)
{
	const struct pass_input *in = w->in;
	for (size_t i = 0; i < in->plan.n_instances; i++) {
		const struct node_view *node = pass_node_at(in, i);
		if (!draining_at(in, i) || plan_classify_state(in->plan.instances[i].state) != PLAN_LIVE ||
		    (in->terminated && strv_contains(in->terminated, in->plan.instances[i].id)))
			continue;  /* none, not ours, or its instance is going anyway */
		bool kept = false;
		for (size_t g = 0; g < n_wanted && !kept; g++)
			kept = strv_contains(wanted[g], in->plan.instances[i].id);
		struct pass_action *a = kept ? NULL : pass_emit(w, PASS_DRAIN_UNDO,
							   pass_step_drain(GROUP_UNDO, i, PART_UNDO));
		if (a)
			node_action(a, node);
	}
}

/* Drains held because their Node's pods could not be listed show as DrainBlocked
 * (PodsNotListed) with one Warning event per episode (the condition as the pass found it
 * tells a repeat); once every listing works again the condition goes False. A drain that
 * timed out this pass says so instead. */
void pass_unlisted_drains(struct walk *w)
{
	const cJSON *old = w->in->old_status;
	const char *was = status_condition(old, "DrainBlocked", "status"),
		   *why = status_condition(old, "DrainBlocked", "reason");
	bool was_unlisted = was && strcmp(was, "True") == 0 && why && strcmp(why, DRAIN_REASON_UNLISTED) == 0;
	if (!w->unlisted) {
		if (was_unlisted && !w->in->nodes_pending && !(w->drain_blocked && *w->drain_blocked))
			w->drain_blocked = "";
		return;
	}
	if (w->drain_blocked && *w->drain_blocked)
		return;
	snprintf(w->drain_message, sizeof(w->drain_message), "%s%s", w->unlisted_message,
		 w->unlisted > 1 ? " (and more nodes)" : "");
	w->drain_blocked = w->drain_message;
	w->drain_blocked_reason = DRAIN_REASON_UNLISTED;
	if (!was_unlisted)
		pass_event(w, STEP_UNLISTED, "Warning", DRAIN_REASON_UNLISTED, "%s", w->drain_message);
}
