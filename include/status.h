/* status: builds a Spotpool's .status from what reconcile observed and decided.
 * Pure; the controller patches the result only when it differs from the old one. */
#ifndef SPOTPOOL_STATUS_H
#define SPOTPOOL_STATUS_H

#include "node.h"
#include "plan.h"
#include "pool.h"

#include <cjson/cJSON.h>

struct status_input {
	const char *selector;              /* label selector for the /scale subresource, or NULL */
	const cJSON *old_status;           /* current .status or NULL */
	int64_t generation;
	/* The instances the pool records: every owned instance known this pass that is not
	 * going away, plus those spotpool terminated this pass (state TERMINATING: not a
	 * reclaim when they vanish). Ignored without a plan: the cloud could not be read, so
	 * size and instances keep their last known values (the keys are left out). */
	const struct pool_instance *instances;
	size_t n_instances;
	const struct plan *plan;           /* NULL when no plan could be made */
	int minimum;                       /* spec.minimum, for "below minimum" */
	bool deleting;
	const struct plan_launch *ledger;  /* the in-flight launch, or NULL */
	int64_t launch_seq;
	const char *degraded_reason;       /* NULL: not degraded */
	const char *degraded_message;
	const char *progress_message;      /* overrides the computed Progressing message */
	/* CapacityAvailable: NULL keeps the old condition (not known this pass), "" is True,
	 * otherwise False/SoldOut with this message (the offerings sold out, next probe). */
	const char *capacity_message;
	bool insecure_credentials;
	int64_t now;
	/* The Nodes of instances (nodes[i]: instances[i]'s, NULL: none), or NULL when Nodes
	 * are not known (each instance then keeps what the old status said of its Node). An
	 * instance shows its Node's name (node), whether it is Ready (ready) and, from the
	 * first time it was, launch -> Ready in seconds (nodeReadySeconds, kept); the pool
	 * shows how many are Ready (readyNodes). */
	const struct node_view *const *nodes;
	/* When each instance is reclaimed (reclaim_at[i]: instances[i]'s deadline, epoch
	 * seconds, 0: none), from its Node's SpotTerminating condition or a SpotNotice, as
	 * doom.h bounds it: reclaimAt. NULL: not known yet (Nodes or notices still being
	 * listed: each instance keeps what the old status said). not_followed[i] (NULL: none):
	 * instances[i] outlived that deadline by the grace, a false notice
	 * (reclaimNotFollowed). */
	const int64_t *reclaim_at;
	const bool *not_followed;
	/* DrainBlocked: NULL keeps the old condition, "" is False, otherwise True with this
	 * message (a scale-down's drain timed out and was given up), and reason (NULL:
	 * DRAIN_REASON_TIMED_OUT). */
	const char *drain_blocked, *drain_blocked_reason;
	/* accountFingerprint: the account the recorded instances belong to (pass.h,
	 * pass_account_check), NULL: the old value stands. */
	const char *account;
	/* The Nodes of gone instances still to delete (nodeDeletions: what a failed deletion
	 * leaves for the next pass), when node_deletions_known; otherwise the old list stays. */
	const struct node_ref *node_deletions;
	size_t n_node_deletions;
	bool node_deletions_known;
	/* NodeClaimsRefused: NULL keeps the old condition, "" is False, otherwise True with
	 * this message and node_claims_reason (Node claims to the pool's instances that
	 * node_match did not honour). */
	const char *node_claims;
	const char *node_claims_reason;
};

cJSON *status_build(const struct status_input *in);
/* Whether a merge patch of these status keys would change nothing in old (keys it does
 * not mention are kept by a merge patch; a null and an absent key mean the same). */
bool status_patch_is_noop(const cJSON *patch, const cJSON *old);
/* The launch -> Node Ready seconds (nodeReadySeconds) new_status shows and old_status
 * did not, for the instances whose Node became Ready: at most max into ret; returns how
 * many. */
size_t status_newly_ready(const cJSON *old_status, const cJSON *new_status, int64_t *ret, size_t max);
/* One .status.instances[] entry without its Node (also used by dry-run's JSON output). */
cJSON *status_instance_json(const struct pool_instance *instance);
/* The reclaimAt a status records for instance id (epoch seconds), 0: none, and whether
 * it says reclaimNotFollowed. */
int64_t status_reclaim_at(const cJSON *status, const char *id, bool *ret_not_followed);
/* The ledger recorded in a status (.status.launch), if any. */
bool status_ledger(const cJSON *status, struct plan_launch *ret);
int64_t status_launch_seq(const cJSON *status);
/* Anyone allowed to write the status could grow this list: it is read up to a bound. */
#define STATUS_MAX_RECORDED 10000
/* The instance IDs a status records (.status.instances), and of those the live ones;
 * ret_zones, ret_ips and ret_nodes (NULL: not wanted) get each ID's recorded zone,
 * privateIp and node ("" none), in ret_ids's order. */
void status_recorded(const cJSON *status, struct strv *ret_ids, struct strv *ret_live, struct strv *ret_zones,
		     struct strv *ret_ips, struct strv *ret_nodes);
/* Most Nodes of gone instances a status keeps to delete (.status.nodeDeletions). */
#define STATUS_MAX_NODE_DELETIONS 64
/* The Nodes a status keeps to delete, at most max into ret (entries without a name and
 * UID that fit are skipped); returns how many. */
size_t status_node_deletions(const cJSON *status, struct node_ref *ret, size_t max);
/* A condition's field ("status", "reason", "message") or NULL. */
const char *status_condition(const cJSON *status, const char *type, const char *field);

#endif
