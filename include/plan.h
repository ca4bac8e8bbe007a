/* plan: the pure planner. (spec, owned instances, launch ledger, now) -> actions.
 * No I/O; every invariant of the pool's size is decided here. */
#ifndef SPOTPOOL_PLAN_H
#define SPOTPOOL_PLAN_H

#include "pool.h"
#include "spotpool.h"

#define PLAN_MAX_LAUNCH_PER_CALL 100
/* How long a launch whose instances are not yet visible still counts as live. */
#define PLAN_LAUNCH_GRACE_SECONDS 600

/* A launch recorded before RunInstances was called. */
struct plan_launch {
	char client_token[65];
	int count;
	int64_t started;          /* epoch seconds */
	bool ids_known;           /* RunInstances answered; instance_ids is complete */
	struct strv instance_ids;
};

enum plan_state_class { PLAN_LIVE, PLAN_DEAD, PLAN_GOING };

struct plan {
	int observed;           /* live owned instances DescribeInstances shows */
	int inflight;           /* launched, not yet visible, still counted as live */
	int target;             /* size the pool converges to now */
	int launch;             /* instances to launch now (0 while an earlier launch settles) */
	struct strv scale_down; /* live instances to terminate, in preference order */
	struct strv cleanup;    /* dead owned instances to terminate */
	/* A recorded launch whose outcome is unknown (crash or lost reply): repeat it with
	 * the same ClientToken before anything else. Borrowed from the input ledger. */
	const struct plan_launch *resume;
	size_t expired_launches; /* ledger entries past the grace period: forget them */
};

struct plan_input {
	const struct pool_spec *spec;
	const struct pool_instance *instances;
	size_t n_instances;
	const struct plan_launch *launches;
	size_t n_launches;
	int64_t now;
	bool deleting;          /* terminate everything owned (deletionPolicy Delete) */
};

enum plan_state_class plan_classify_state(const char *state);
void plan_compute(const struct plan_input *in, struct plan *ret);
void plan_free(struct plan *p);
void plan_launch_clear(struct plan_launch *l);

#endif
