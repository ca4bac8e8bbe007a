/* pass_delete: a deleted pool's cleanup and the Nodes of gone instances (pass.h): its
 * instances drained and terminated (or retained) before the pool is released; the Nodes
 * of recorded instances gone or going away, confirmed by a live list before the pass
 * acts on an instance without a Node, and deleted each with its UID. */
#include "pass_walk.h"

#include <stdio.h>
#include <string.h>

void pass_release(struct walk *w, const char *why)
{
	struct pass_action *a = pass_emit(w, PASS_RELEASE, STEP_RELEASE);
	if (a)
		a->message = xstrdup(why);
}

bool pass_released(const struct walk *w)
{
	const struct pass_answer *r = pass_answered(w, STEP_RELEASE, PASS_RELEASE);
	return r && r->code == 0;
}

void pass_deletion(struct walk *w)
{
	const struct plan *plan = w->plan;
	if (w->in->dry_run)
		return;  /* a dry-run controller neither terminates nor releases */
	if (w->in->spec->deletion_policy == POOL_RETAIN) {
		/* The instances stay, and so do their Nodes: as they were before any drain. */
		pass_undo_unwanted_drains(w, NULL, 0);
		pass_event(w, STEP_RETAIN, "Normal", "Retained", "deletionPolicy Retain: leaving %d instance(s) running",
			   plan->observed);
		pass_release(w, "deletionPolicy Retain");
		return;
	}
	if (plan->resume) {
		/* Whatever it answers, what is known goes now: a refused repeat must not keep a
		 * deleted pool's instances running. */
		const struct pass_answer *run = pass_resume(w);
		w->requeue_ms = PASS_REQUEUE_PROGRESS_MS;
		if (run && pass_refused(run->code) && plan->let_go_if_refused) {
			pass_event(w, STEP_ABANDON, "Warning", "LaunchAbandoned", "launch %s of unknown outcome: "
				   "repeating it was refused past the launch grace; releasing without it",
				   plan->resume ? w->in->plan.ledger->client_token : "");
			pass_record_ledger(w, PASS_CLEAR_LEDGER, STEP_ABANDON, NULL, w->in->launch_seq);
		}
		if (!run)
			return;
	}
	if (plan->cleanup.n) {
		struct strv ready = {0};
		pass_drain_then(w, GROUP_DELETION, &plan->cleanup, &ready);
		pass_terminate(w, STEP_CLEANUP, &ready, PASS_WHY_DELETION);
		const struct pass_answer *t = pass_answered(w, STEP_CLEANUP, PASS_TERMINATE);
		if (t && t->code == 0 && plan->ledger_done && w->in->ledger && ready.n == plan->cleanup.n)
			pass_record_ledger(w, PASS_CLEAR_LEDGER, STEP_LEDGER_DONE, NULL, w->in->launch_seq);
		strv_clear(&ready);
		w->requeue_ms = PASS_REQUEUE_PROGRESS_MS;
		return;
	}
	if (plan->waiting || w->deletions_waiting) {
		/* A Node deletion failing for now is retried (with backoff), and one that waits
		 * for no kubelet to report it waits, before the pool goes: once released,
		 * nothing would remember that Node. */
		w->requeue_ms = PASS_REQUEUE_PROGRESS_MS;
		return;
	}
	pass_release(w, "every recorded instance is confirmed gone");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The observed instances' IDs, sorted (going away too: gone_kind tells those). */
static const char **observed_ids(const struct pass_input *in)
{
	const char **live = xcalloc(in->plan.n_instances ? in->plan.n_instances : 1, sizeof(*live));
	for (size_t i = 0; i < in->plan.n_instances; i++)
		live[i] = in->plan.instances[i].id;
	qsort(live, in->plan.n_instances, sizeof(*live), cmp_str);
	return live;
}

enum gone { NOT_GONE, GOING, GONE };

/* Whether recorded instance i (plan.seen) is gone or going away. Gone: not observed (a
 * lookup by ID confirmed what the listing lacks) and not someone else's; its Node is
 * pass_recorded_nodes[i] (matched by ID and the private IP the status recorded, or by the Node
 * name and private IP it recorded for a Node declaring no ID). Going away
 * (observed TERMINATING, SHUTTING_DOWN: the status records such an instance no more, so
 * this pass is the last to know it was the pool's): observed as plan.instances[*ret_j],
 * its Node the observed instance's. live: observed_ids. */
static enum gone gone_kind(const struct pass_input *in, size_t i, const char *const *live, size_t *ret_j)
{
	const char *id = in->plan.seen->v[i];
	for (size_t j = 0; j < in->plan.n_instances; j++)
		if (strcmp(in->plan.instances[j].id, id) == 0 &&
		    plan_classify_state(in->plan.instances[j].state) == PLAN_GOING) {
			*ret_j = j;
			return GOING;
		}
	if (bsearch(&id, live, in->plan.n_instances, sizeof(*live), cmp_str) ||
	    (in->plan.foreign && strv_contains(in->plan.foreign, id)))
		return NOT_GONE;
	return GONE;
}

/* The Node of recorded instance i if it is gone or going (gone_kind), else NULL (also
 * when Nodes are not known); its name is empty when it has none. */
static const struct node_view *gone_node(const struct pass_input *in, size_t i, const char *const *live)
{
	static const struct node_view none;
	size_t j = 0;
	enum gone g = in->nodes && in->recorded_nodes ? gone_kind(in, i, live, &j) : NOT_GONE;
	if (g == GOING)
		return j < in->n_nodes ? &in->nodes[j] : &none;
	return g == GONE ? &in->recorded_nodes[i] : NULL;
}

/* Appends to want (n of them so far, views their Nodes) the Nodes of recorded instances
 * gone or going away that it does not hold yet. A Node without a UID is not deleted:
 * nothing would tell it from a new Node given its name. A gone instance's Node matched
 * by its address is marked so (node_ref.ip, since now unless held already). */
static void add_gone_nodes(const struct pass_input *in, struct node_ref *want, const struct node_view **views,
			   size_t *n)
{
	const struct strv *seen = in->plan.seen;
	if (!in->recorded_nodes || !in->nodes || !seen)
		return;
	const char **live = observed_ids(in);
	for (size_t i = 0; i < seen->n && *n < STATUS_MAX_NODE_DELETIONS; i++) {
		const struct node_view *node = gone_node(in, i, live);
		/* Gone, its Node declaring no instance: matched by the recorded name and address. */
		bool by_address = node == &in->recorded_nodes[i] && !*node_instance_id(node);
		if (!node || !*node->name || !*node->uid)
			continue;
		bool held = false;
		for (size_t k = 0; k < *n && !held; k++)
			if (strcmp(want[k].name, node->name) == 0 && strcmp(want[k].uid, node->uid) == 0) {
				held = true;
				want[k].carried = false;  /* matched this pass all the same */
				views[k] = node;
			}
		if (held)
			continue;
		views[*n] = node;
		struct node_ref *r = &want[(*n)++];
		snprintf(r->name, sizeof(r->name), "%s", node->name);
		snprintf(r->uid, sizeof(r->uid), "%s", node->uid);
		snprintf(r->instance_id, sizeof(r->instance_id), "%s", seen->v[i]);
		if (by_address) {
			snprintf(r->ip, sizeof(r->ip), "%s", node->internal_ip);
			r->since = in->plan.now;
		}
	}
	free(live);
}

/* Whether the pass would forget a recorded instance gone or going away with no Node
 * known: the Node cache shows none (or is not listed yet), but it lags behind the
 * apiserver, and once the status no longer records the instance nothing would delete a
 * Node that was its (fault campaign seed 465). */
static bool forgets_nodeless(const struct pass_input *in)
{
	const struct strv *seen = in->plan.seen;
	bool any = false;
	const char **live = seen && seen->n ? observed_ids(in) : NULL;
	for (size_t i = 0; live && i < seen->n && !any; i++) {
		size_t j = 0;
		enum gone g = gone_kind(in, i, live, &j);
		const struct node_view *node = gone_node(in, i, live);
		/* A going instance without a private IP has no Node (node_match). */
		any = g != NOT_GONE && (!node || !*node->name) &&
		      (g == GONE || *in->plan.instances[j].private_ip);
	}
	free(live);
	return any;
}

/* Whether a live instance about to be terminated by this pass has no Node in the cache:
 * terminated so, its pods would never be evicted if the cache merely lags (a Node
 * registered seconds ago, a watch held or cut: fault campaign seeds 7 and 476). One
 * without a private IP has no Node (node_match); a contested one is held anyway, but
 * for a deleted pool's. The victims: the scale-down's (once notices are listed), the
 * doomed once replaced (pass_doomed_go), and a deleted pool's. */
static bool terminates_nodeless(const struct walk *w)
{
	const struct pass_input *in = w->in;
	const struct plan *plan = w->plan;
	const struct strv *groups[] = {in->notices_pending ? NULL : &plan->scale_down,
				       plan->doomed.n && pass_replaced(w) ? &plan->doomed : NULL, &plan->cleanup};
	for (size_t g = 0; g < sizeof(groups) / sizeof(*groups); g++)
		for (size_t k = 0; groups[g] && k < groups[g]->n; k++) {
			int i = pass_instance_index(in, groups[g]->v[k]);
			const struct pool_instance *p = i >= 0 ? &in->plan.instances[i] : NULL;
			if (p && plan_classify_state(p->state) == PLAN_LIVE && *p->private_ip &&
			    !pass_node_at(in, (size_t)i) && (in->deleting || !pass_contested(in, p->id)))
				return true;
		}
	return false;
}

/* Whether an action of this pass took a Node's view as the pass had it: its pods
 * listed, its drain stepped, its deletion. */
static bool nodes_used(const struct walk *w)
{
	for (size_t i = 0; i < w->d->n; i++) {
		enum pass_kind k = w->d->v[i].kind;
		if (k == PASS_LIST_PODS || k == PASS_DRAIN_START || k == PASS_EVICT || k == PASS_DRAIN_UNDO ||
		    k == PASS_DELETE_NODE)
			return true;
	}
	return false;
}

/* The Node cache may lag behind the apiserver: before the pass acts on an instance
 * having no Node there (terminates it undrained, forgets it gone), the Nodes are listed
 * live (PASS_FIND_NODES, once a pass) and matched by the same rules, before any Node's
 * pods are listed, drained or deleted (the views change under those steps). A need that
 * arises only after such steps waits for the next pass (nodeless_held). false: the pass
 * ends here, the list asked, or failed (nothing is terminated or forgotten: retried with
 * backoff). */
bool pass_nodes_confirmed(struct walk *w)
{
	const struct pass_input *in = w->in;
	const struct pass_answer *f = pass_answered(w, STEP_FIND_NODES, PASS_FIND_NODES);
	if (f && f->code < 0) {
		w->error = f->code;
		return false;
	}
	if (f || in->dry_run || (!in->nodes && !in->nodes_pending))
		return true;
	/* Not listed yet: drains wait for the cache, a gone instance does not. */
	if (!forgets_nodeless(in) && (!in->nodes || !terminates_nodeless(w)))
		return true;
	if (nodes_used(w)) {
		w->nodeless_held = true;
		return true;
	}
	pass_emit(w, PASS_FIND_NODES, STEP_FIND_NODES);
	return false;
}

/* The Nodes to delete: those an earlier pass could not (.status.nodeDeletions), and of
 * the recorded instances gone or going away. Known from the start of the pass, so a
 * status written before they are deleted (the ledger) records them: the gone instances
 * leave the status in that write. */
void pass_nodes_to_delete(struct walk *w)
{
	const struct pass_input *in = w->in;
	w->deletions = xcalloc(STATUS_MAX_NODE_DELETIONS, sizeof(*w->deletions));
	w->deletion_views = xcalloc(STATUS_MAX_NODE_DELETIONS, sizeof(*w->deletion_views));
	if (in->deletion_refs) {
		w->n_deletions = in->n_deletion_nodes;
		memcpy(w->deletions, in->deletion_refs, w->n_deletions * sizeof(*w->deletions));
	} else {
		w->n_deletions = status_node_deletions(in->old_status, w->deletions, STATUS_MAX_NODE_DELETIONS);
	}
	for (size_t k = 0; k < w->n_deletions && in->deletion_nodes && k < in->n_deletion_nodes; k++)
		w->deletion_views[k] = *in->deletion_nodes[k].name ? &in->deletion_nodes[k] : NULL;
	add_gone_nodes(in, w->deletions, w->deletion_views, &w->n_deletions);
	w->deletions_known = !w->in->dry_run;
}

/* Whether Node k, matched by its address (node_ref.ip), is to be deleted now: once no
 * kubelet reports it (node_address_judge) and its instance is not live in the pool.
 * *ret_keep: it stays in the list, waiting (looked at again within 30 s). One it is no
 * longer the gone instance's, or a kubelet still reports after the wait, is dropped with
 * a Warning event: it may be another instance's, registered under that name. */
static bool address_deletion_due(struct walk *w, size_t k, const struct node_ref *r, bool *ret_keep)
{
	const struct pass_input *in = w->in;
	enum node_address a = node_address_judge(r, w->deletion_views[k], in->plan.now);
	int i = pass_instance_index(in, r->instance_id);
	if (a == NODE_ADDRESS_DELETE && i >= 0 && plan_classify_state(in->plan.instances[i].state) == PLAN_LIVE)
		a = NODE_ADDRESS_CHANGED;
	*ret_keep = a == NODE_ADDRESS_WAIT || (a == NODE_ADDRESS_GONE && !in->nodes);  /* Nodes not known yet */
	if (a == NODE_ADDRESS_WAIT) {
		int64_t left = r->since + NODE_ADDRESS_WAIT_SECONDS - in->plan.now;
		pass_look_again(w, (left < 30 ? left : 30) * 1000);
	} else if (a == NODE_ADDRESS_CHANGED || a == NODE_ADDRESS_REPORTED) {
		pass_event(w, pass_step_node_left(k), "Warning", "NodeNotDeleted", "Node %s of gone instance %s, which "
			   "declares no instance and was matched by its address %s, %s: not deleted", r->name,
			   r->instance_id, r->ip, a == NODE_ADDRESS_CHANGED
				? "is no longer that (it declares an instance, has another address, or the instance is live)"
				: "is still reported by a kubelet: it may be another instance's under that name now");
	}
	return a == NODE_ADDRESS_DELETE;
}

/* The Nodes to delete (pass_nodes_to_delete), each only while it is still the Node of that
 * UID (a name reused by a new Node is left alone), one action each, at most
 * PASS_DRAINS_MAX a pass; one matched by its address once no kubelet reports it
 * (address_deletion_due). A failure keeps the Node in the status, retried with backoff
 * (Degraded NodeDeletionFailed); a deleted pool waits for those failing for now and
 * those matched by their address not due yet. In a dry run, told. */
void pass_delete_gone_nodes(struct walk *w)
{
	struct node_ref *want = w->deletions;
	size_t n = w->n_deletions;
	if (w->in->dry_run) {
		struct pass_action *a = n ? pass_emit(w, PASS_WOULD_DELETE_NODE, STEP_DELETE_NODES) : NULL;
		for (size_t k = 0; a && k < n; k++)
			strv_push(&a->ids, want[k].name);
		return;
	}
	size_t kept = 0;
	for (size_t k = 0; k < n; k++) {
		const struct node_ref r = want[k];
		int step = pass_step_node_delete(k);
		const struct pass_answer *d = pass_answered(w, step, PASS_DELETE_NODE);
		if (d && d->code == 0)
			continue;  /* deleted, or no Node of that UID is left */
		bool keep = true;
		if (!d && *r.ip && !address_deletion_due(w, k, &r, &keep)) {
			if (keep) {
				want[kept++] = r;
				w->deletions_waiting++;  /* a deleted pool waits too (bounded by the wait) */
			}
			continue;
		}
		want[kept++] = r;
		if (!d && k >= PASS_DRAINS_MAX) {
			w->deletions_waiting++;
			pass_look_again(w, PASS_REQUEUE_PROGRESS_MS);
		} else if (!d) {
			struct pass_action *a = pass_emit(w, PASS_DELETE_NODE, step);
			strv_push(&a->ids, r.name);
			snprintf(a->node_uid, sizeof(a->node_uid), "%s", r.uid);
			a->node_carried = r.carried && !*r.ip;  /* by address: judged here on the Node as it is */
			a->message = xstrdup(r.instance_id);
			w->deletions_waiting++;
		} else {
			/* A refusal (RBAC, a webhook) is retried too, but does not hold a deleted
			 * pool: it would hold it for good. */
			w->deletions_waiting += d->code == SP_ETRANSIENT || d->code == SP_ETHROTTLED;
			/* A going instance's Node that declares no instance (matched by its address
			 * while the instance showed): retried as one matched so, or the retry,
			 * which looks for the instance it declares, would drop it for good. */
			const struct node_view *v = w->deletion_views[k];
			if (!*r.ip && v && !*node_instance_id(v) && *v->internal_ip) {
				snprintf(want[kept - 1].ip, sizeof(want[kept - 1].ip), "%s", v->internal_ip);
				want[kept - 1].since = w->in->plan.now;
			}
			char what[SP_ERROR_MAX];
			snprintf(what, sizeof(what), "cannot delete node %s of gone instance %s", r.name, r.instance_id);
			pass_fail_as(w, STEP_DELETE_NODES, "NodeDeletionFailed", what, d->message);
			if (w->error == 0)
				w->error = d->code;
		}
	}
	w->n_deletions = kept;
}
