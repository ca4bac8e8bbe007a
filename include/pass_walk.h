/* pass_walk: internal to the pass planner (src/pass*.c), not an API: nothing but the
 * pass_*.c files includes it. The walk a pass_plan call follows, the step ids of its
 * actions (built here only), and the helpers every part of the walk emits and fails
 * through. The public API is pass.h. */
#ifndef SPOTPOOL_PASS_WALK_H
#define SPOTPOOL_PASS_WALK_H

#include "pass.h"

/* Steps: one per place an action can come from (pass_action.step, matched against
 * pass_done). The ranges below are computed only by the pass_step_* functions. */
enum {
	STEP_VALIDATE = 1, STEP_FINALIZER, STEP_OBSERVE, STEP_SWEEP, STEP_RECLAIMS, STEP_CHECK,
	STEP_DRY_EVENT, STEP_RESUME, STEP_ABANDON, STEP_LEDGER_DONE, STEP_SCALE_DOWN_INTENT, STEP_SCALE_DOWN,
	STEP_CLEANUP, STEP_RETAIN, STEP_RELEASE, STEP_NO_OFFERING, STEP_STATUS, STEP_REREAD, STEP_DELETE_NODES,
	STEP_LIST_PODS, STEP_NOTICE, STEP_DRAIN_INTENT, STEP_DRAIN_FAILED, STEP_ACCOUNT, STEP_UNLISTED, STEP_NODE_CLAIMS,
	STEP_FIND_NODES, STEP_END,
	STEP_ATTEMPT = 100, ATTEMPT_STRIDE = 10,
	STEP_FAIL_EVENT = 10000,
	STEP_DRAIN = 20000, DRAIN_GROUP = 20000, DRAIN_STRIDE = 8,
	STEP_NODE_DELETE = 1000000,
	STEP_NODE_LEFT = 1100000,
};

/* The parts of fresh launch attempt k (pass_step_attempt). */
enum attempt_part { ATTEMPT_PROBE, ATTEMPT_LEDGER, ATTEMPT_LAUNCH, ATTEMPT_AFTER };
enum drain_group { GROUP_SCALE_DOWN, GROUP_NOTICE, GROUP_DELETION, GROUP_UNDO };
enum drain_part { PART_START, PART_STARTED_EVENT, PART_EVICT, PART_UNDO, PART_END_EVENT };

/* The ranges do not overlap. */
_Static_assert(STEP_END < STEP_ATTEMPT, "fixed steps below the launch attempts");
_Static_assert((int)ATTEMPT_AFTER < (int)ATTEMPT_STRIDE &&
	       STEP_ATTEMPT + PASS_LAUNCH_ATTEMPTS_MAX * ATTEMPT_STRIDE <= STEP_FAIL_EVENT,
	       "launch attempts below the failure events");
_Static_assert(STEP_FAIL_EVENT + STEP_FAIL_EVENT <= STEP_DRAIN, "failure events below the drains");
_Static_assert((int)PART_END_EVENT < (int)DRAIN_STRIDE && STEP_DRAIN + (GROUP_UNDO + 1) * DRAIN_GROUP <= STEP_NODE_DELETE,
	       "drains below the Node deletions");
_Static_assert(STEP_NODE_DELETE + STATUS_MAX_NODE_DELETIONS <= STEP_NODE_LEFT, "Node deletions below their events");

/* Part part of fresh launch attempt k of the pass (k < PASS_LAUNCH_ATTEMPTS_MAX). */
static inline int pass_step_attempt(size_t k, enum attempt_part part)
{
	return STEP_ATTEMPT + (int)k * ATTEMPT_STRIDE + (int)part;
}

/* The event of a failure at step (pass_fail_as). */
static inline int pass_step_fail_event(int step)
{
	return STEP_FAIL_EVENT + step;
}

/* Part part of the drain of victim k of group g: k is the victim's place in its group
 * (the instance's index for GROUP_UNDO). */
static inline int pass_step_drain(enum drain_group g, size_t k, enum drain_part part)
{
	return STEP_DRAIN + (int)g * DRAIN_GROUP + (int)k * DRAIN_STRIDE + (int)part;
}

/* The k-th Node deletion of the pass, and the event of the k-th left undeleted. */
static inline int pass_step_node_delete(size_t k)
{
	return STEP_NODE_DELETE + (int)k;
}

static inline int pass_step_node_left(size_t k)
{
	return STEP_NODE_LEFT + (int)k;
}

struct walk {
	const struct pass_input *in;
	const struct pass_done *d;
	struct pass_actions *out;
	const struct plan *plan;         /* NULL: no plan (invalid spec, cloud not read) */
	const char *account_record;      /* the accountFingerprint to write, NULL: it stands */
	const char *degraded_reason;     /* the failure this pass ends with, NULL: none */
	char degraded_message[SP_ERROR_MAX];
	const char *posted;              /* the failure episode this pass posts an event for */
	int error;
	int64_t requeue_ms;
	int64_t drain_ms;                /* drains in progress want a look again then (0: none) */
	char progress[SP_ERROR_MAX];
	char capacity[SP_ERROR_MAX];
	/* DrainBlocked: NULL keeps the old condition, "" is False, else True with this
	 * message and reason (NULL: DRAIN_REASON_TIMED_OUT). */
	const char *drain_blocked, *drain_blocked_reason;
	char drain_message[512];
	/* Nodes being drained whose pods could not be listed this pass: how many, and what
	 * the first one's failure was. */
	int unlisted;
	char unlisted_message[512];
	/* The Nodes of gone instances to delete (pass_nodes_to_delete), once their deletions are
	 * planned those left after this pass (known: written to the status; else the status
	 * keeps its list), and how many of them wait on a retry (not tried yet, or failed
	 * for now) rather than a refusal. */
	struct node_ref *deletions;
	/* The Node of each of deletions as the cache has it now (NULL: none, or not known):
	 * what a Node matched by its address is judged on (node_address_judge). */
	const struct node_view **deletion_views;
	size_t n_deletions, deletions_waiting;
	bool deletions_known;
	/* NodeClaimsRefused: the same (status_input.node_claims), and its reason. */
	const char *node_claims;
	const char *node_claims_reason;
	char claims_message[SP_ERROR_MAX];
	/* A live instance without a Node in the cache is not terminated this pass: the
	 * Nodes were not listed live before the pass used their views (pass_nodes_confirmed). */
	bool nodeless_held;
};

/* pass.c: answers, actions, failures, ledger and status writes, terminations. */
const struct pass_answer *pass_answered(const struct walk *w, int step, enum pass_kind kind);
struct pass_action *pass_emit(struct walk *w, enum pass_kind kind, int step);
void pass_event(struct walk *w, int step, const char *type, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void pass_fail_as(struct walk *w, int step, const char *reason, const char *what, const char *detail);
void pass_fail(struct walk *w, int step, int code, const char *what, const char *detail);
void pass_fail_answer(struct walk *w, const struct pass_answer *a, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool pass_refused(int code);
void pass_record_ledger(struct walk *w, enum pass_kind kind, int step, const struct plan_launch *ledger,
			int64_t launch_seq);
bool pass_emit_terminate(struct walk *w, enum pass_kind kind, int step, const struct strv *ids,
			 enum pass_why why);
void pass_terminate(struct walk *w, int step, const struct strv *ids, enum pass_why why);
bool pass_scale_down_recorded(struct walk *w, int step, const struct strv *victims);
void pass_look_again(struct walk *w, int64_t ms);
int pass_instance_index(const struct pass_input *in, const char *id);

/* pass_launch.c: the launches. */
void pass_describe_scarcity(struct walk *w, const enum offer_state *state, const int64_t *probe_at,
			    int64_t *ret_probe_at);
void pass_launch_shortfall(struct walk *w);
const struct pass_answer *pass_resume(struct walk *w);
void pass_dry_run(struct walk *w);

/* pass_drain.c: the drains. */
struct drain_victim *pass_victims_of(const struct pass_input *in);
void pass_drain_then(struct walk *w, enum drain_group g, const struct strv *ids, struct strv *ready);
void pass_undo_unwanted_drains(struct walk *w, const struct strv *const *wanted, size_t n_wanted);
void pass_unlisted_drains(struct walk *w);

/* pass_delete.c: a deleted pool's cleanup, gone instances' Nodes. */
void pass_release(struct walk *w, const char *why);
bool pass_released(const struct walk *w);
void pass_deletion(struct walk *w);
bool pass_nodes_confirmed(struct walk *w);
void pass_nodes_to_delete(struct walk *w);
void pass_delete_gone_nodes(struct walk *w);

/* pass_notice.c: reclaim deadlines, doomed instances, Node claims. */
const struct node_view *pass_node_at(const struct pass_input *in, size_t i);
int64_t pass_doomed_at(const struct pass_input *in, size_t i);
void pass_recorded_nodes(const struct pass_input *in, const struct pool_instance *recorded, size_t n,
			 const struct node_view **ret_nodes, int64_t *ret_at, bool *ret_false);
bool pass_contested(const struct pass_input *in, const char *id);
bool pass_replaced(const struct walk *w);
void pass_doomed_go(struct walk *w);
void pass_node_claims(struct walk *w);

#endif
