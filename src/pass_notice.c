/* pass_notice: what a pass makes of reclaim claims and Node claims (pass.h, doom.h):
 * each instance's Node, its reclaim deadline from its Node and SpotNotices, doomed
 * instances drained and terminated once replaced, false notices told, and the Node
 * claims not honoured (NodeClaimsRefused). */
#include "pass_walk.h"
#include "doom.h"

#include <stdio.h>
#include <string.h>

const struct node_view *pass_node_at(const struct pass_input *in, size_t i)
{
	return in->nodes && i < in->n_nodes && *in->nodes[i].name ? &in->nodes[i] : NULL;
}

/* Instance i's reclaim deadline as spotpool acts on it (doom.h), 0: none claimed: the
 * earlier of its Node's and a SpotNotice's, each bounded from when it was first seen,
 * and of the one the status recorded (a controller restarted since saw it first: the
 * window does not start again). ret_told: the status says the notice was found false
 * already (reclaimNotFollowed). */
static int64_t claim_at(const struct pass_input *in, size_t i, bool *ret_told)
{
	const struct node_view *node = pass_node_at(in, i);
	int64_t at = node ? doom_deadline(node->terminating_at, node->terminating_seen) : 0;
	if (in->notice_at && i < in->n_notice_at)
		at = doom_earliest(at, in->notice_at[i]);
	*ret_told = false;
	return at ? doom_earliest(at, status_reclaim_at(in->old_status, in->plan.instances[i].id, ret_told)) : 0;
}

/* Whether live instance i outlived its deadline by the grace: a false notice. */
static bool not_followed(const struct pass_input *in, size_t i, int64_t *ret_at, bool *ret_told)
{
	*ret_at = claim_at(in, i, ret_told);
	return plan_classify_state(in->plan.instances[i].state) == PLAN_LIVE &&
	       doom_judge(*ret_at, in->plan.now) == DOOM_FALSE;
}

/* When instance i is reclaimed, 0: not doomed (no claim, or a false notice). */
int64_t pass_doomed_at(const struct pass_input *in, size_t i)
{
	bool told;
	int64_t at = claim_at(in, i, &told);
	return doom_judge(at, in->plan.now) == DOOM_DOOMED ? at : 0;
}

/* The Nodes (when known), reclaim deadlines (kept while claimed, for a false notice
 * too: its record bounds it across a restart; and, claimed no more, while remembered:
 * a claim withdrawn and made again gets no new window) and false notices of the recorded
 * instances (plan_recorded keeps the order of the known ones, so one walk pairs them):
 * NULL, 0 and false for none. */
void pass_recorded_nodes(const struct pass_input *in, const struct pool_instance *recorded, size_t n,
			 const struct node_view **ret_nodes, int64_t *ret_at, bool *ret_false)
{
	for (size_t k = 0, j = 0; k < n; k++) {
		while (j < in->plan.n_instances && strcmp(in->plan.instances[j].id, recorded[k].id) != 0)
			j++;
		if (ret_nodes)
			ret_nodes[k] = j < in->plan.n_instances ? pass_node_at(in, j) : NULL;
		bool told;
		ret_at[k] = 0;
		ret_false[k] = j < in->plan.n_instances && not_followed(in, j, &ret_at[k], &told);
		int64_t was = ret_at[k] ? 0 : status_reclaim_at(in->old_status, recorded[k].id, &told);
		if (doom_remembered(was, in->plan.now)) {
			ret_at[k] = was;
			ret_false[k] = told;
		}
	}
}

/* Whether a Node's claim to instance id was refused: two or more Nodes claim it, or one
 * declares its ID with another InternalIP (its own after an address change, say). None
 * is its Node, but one may be. */
bool pass_contested(const struct pass_input *in, const char *id)
{
	for (size_t k = 0; k < in->n_refused; k++)
		if (strcmp(in->refused[k].instance, id) == 0)
			return true;
	return false;
}

/* A doomed instance goes once drained when its replacement runs:
 * the pool is at its target with every other instance RUNNING and, in a pool whose
 * instances join as Nodes, each one's Node Ready (the pods can move there). Without
 * replicas the target follows the count, which the doomed already left: above minimum
 * nothing replaces it, and it is "replaced" at once (see pass_doomed_go). */
bool pass_replaced(const struct walk *w)
{
	const struct plan *plan = w->plan;
	const struct pass_input *in = w->in;
	if (plan->launch || plan->resume || plan->waiting || plan->observed < plan->target)
		return false;
	bool joins = false;
	for (size_t i = 0; i < in->plan.n_instances && !joins; i++)
		joins = pass_node_at(in, i) != NULL;
	for (size_t i = 0; i < in->plan.n_instances; i++) {
		const struct pool_instance *p = &in->plan.instances[i];
		if (plan_classify_state(p->state) != PLAN_LIVE || strv_contains(&plan->doomed, p->id))
			continue;
		if (strcmp(p->state, "RUNNING") != 0 || (joins && !(pass_node_at(in, i) && pass_node_at(in, i)->ready)))
			return false;
	}
	return true;
}

/* A false notice (doom.h), told once: a Warning when the status does not say it yet
 * (reclaimNotFollowed). Its drain is undone with the others no group wants. */
static void not_followed_events(struct walk *w)
{
	const struct pass_input *in = w->in;
	if (in->nodes_pending || in->notices_pending)
		return;  /* the status is not written with the claims until both are known */
	for (size_t i = 0; i < in->plan.n_instances; i++) {
		int64_t at;
		bool told;
		if (!not_followed(in, i, &at, &told) || told)
			continue;
		char when[32], until[32];
		sp_format_time(at, when);
		sp_format_time(at + DOOM_MEMORY_SECONDS, until);
		pass_event(w, pass_step_drain(GROUP_UNDO, i, PART_END_EVENT), "Warning",
			   "ReclaimNoticeNotFollowed", "instance %s still runs %lld s after its reclaim deadline %s: "
			   "the notice was false; the instance counts toward the pool again and is no longer drained; "
			   "a claim on it made again before %s is not honoured",
			   in->plan.instances[i].id, (long long)(in->plan.now - at), when, until);
	}
}

/* Doomed instances: drained (forced by the deadline), then terminated once the drain
 * ended normally (every pod evicted or gone, or no Node) and the replacement is up;
 * never at the deadline with pods left (drain_one). One live DOOM_FALSE_GRACE_SECONDS
 * past it is no longer doomed (pass_doomed_at): counted again, its drain undone. So a notice
 * costs at most one extra instance for at most 15 minutes. */
void pass_doomed_go(struct walk *w)
{
	struct strv ready = {0}, go = {0};
	pass_drain_then(w, GROUP_NOTICE, &w->plan->doomed, &ready);
	const struct pass_input *in = w->in;
	bool done_replacing = pass_replaced(w);
	for (size_t k = 0; k < ready.n; k++) {
		int i = pass_instance_index(in, ready.v[k]);
		int64_t deadline = i >= 0 ? pass_doomed_at(in, (size_t)i) : 0;
		/* Without replicas, above minimum (no replacement was launched), a drained Node
		 * does no work and goes; an instance without a Node works on until its deadline. */
		bool node = i >= 0 && pass_node_at(in, (size_t)i);
		bool early = in->spec->has_replicas || node || w->plan->observed <= in->spec->minimum;
		if (done_replacing && (early || in->plan.now >= deadline))
			strv_push(&go, ready.v[k]);
		else
			pass_look_again(w, (deadline > in->plan.now ? deadline : deadline + DOOM_FALSE_GRACE_SECONDS) * 1000 -
					      in->plan.now * 1000);
	}
	pass_terminate(w, STEP_NOTICE, &go, PASS_WHY_NOTICE);
	strv_clear(&go);
	strv_clear(&ready);
	not_followed_events(w);
}

/* The Node claims not honoured (node_match), as the NodeClaimsRefused condition, and one
 * Warning event when it turns True or changes reason (an episode) after holding still
 * PASS_CLAIMS_EVENT_QUIET_SECONDS: a Node that keeps claiming what is not its own is
 * told once, not every pass, and one that flaps its claim at most that often. */
void pass_node_claims(struct walk *w)
{
	const struct pass_input *in = w->in;
	if (!in->nodes)
		return;  /* not known: the condition stays as it was */
	char *m = w->claims_message;
	size_t cap = sizeof(w->claims_message);
	*m = '\0';
	bool conflict = false;
	for (size_t k = 0; k < in->n_refused;) {
		const struct node_refusal *r = &in->refused[k];
		size_t end = k + 1;
		while (end < in->n_refused && strcmp(in->refused[end].instance, r->instance) == 0 &&
		       in->refused[end].conflict == r->conflict)
			end++;
		snprintf(m + strlen(m), cap - strlen(m), "%s%s ", *m ? "; " : "", end - k > 1 ? "Nodes" : "Node");
		for (size_t x = k; x < end; x++)
			snprintf(m + strlen(m), cap - strlen(m), "%s%s (InternalIP %s)", x > k ? ", " : "",
				 in->refused[x].node, *in->refused[x].ip ? in->refused[x].ip : "none");
		if (r->conflict)
			snprintf(m + strlen(m), cap - strlen(m), " all claim instance %s: none is honoured", r->instance);
		else
			snprintf(m + strlen(m), cap - strlen(m), " claim%s instance %s by ID, which has another private "
				 "IP: not honoured", end - k > 1 ? "" : "s", r->instance);
		conflict = conflict || r->conflict;
		k = end;
	}
	const char *was = status_condition(in->old_status, "NodeClaimsRefused", "status");
	if (!*m) {
		w->node_claims = was ? "" : NULL;  /* False once it has been True */
		return;
	}
	w->node_claims = m;
	w->node_claims_reason = conflict ? "NodeIdentityConflict" : "NodeClaimRejected";
	const char *was_reason = status_condition(in->old_status, "NodeClaimsRefused", "reason");
	int64_t since = sp_parse_time(status_condition(in->old_status, "NodeClaimsRefused", "lastTransitionTime"));
	bool new_episode = !was || strcmp(was, "True") != 0 || !was_reason || strcmp(was_reason, w->node_claims_reason) != 0;
	if (new_episode && (!was || in->plan.now >= since + PASS_CLAIMS_EVENT_QUIET_SECONDS))
		pass_event(w, STEP_NODE_CLAIMS, "Warning", w->node_claims_reason, "%s", m);
}
