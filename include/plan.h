/* plan: the pure planner. (spec, owned instances, launch ledger, now) -> actions.
 * No I/O; every invariant of the pool's size is decided here.
 *
 * The cloud is an unreliable witness: a tag-filtered listing lags and is not monotonic
 * (an instance already seen can drop out of it for a while), and a freshly launched
 * instance can be invisible to every lookup for a while. So:
 *  - an instance the pool has recorded (seen in an earlier pass, or launched by the
 *    ledger's launch) that the listing does not show is looked up by ID before the pool
 *    acts on its absence (plan_ids_to_confirm);
 *  - a recorded instance that was seen before is gone when a lookup by ID omits it or
 *    shows it not live; one never seen (only RunInstances returned its ID) still counts
 *    as live until the launch grace has passed;
 *  - a launch whose outcome is unknown (crash or lost reply) is never forgotten: it is
 *    repeated with the same ClientToken (the cloud then answers the original instances,
 *    or launches), asking for no more than the pool needs now. When some of its
 *    instances already show (it did launch), the same request is repeated to learn the
 *    IDs of the rest: listings alone never prove a launch made less than it asked for
 *    (deleting too; one none of whose instances ever shows is watched for the grace);
 *  - deleting, a launched ID no lookup shows yet holds the finalizer until it is seen or
 *    the grace has passed (TerminateInstances answers NotFound for it meanwhile). */
#ifndef SPOTPOOL_PLAN_H
#define SPOTPOOL_PLAN_H

#include "drain.h"
#include "pool.h"
#include "spotpool.h"

#define PLAN_MAX_LAUNCH_PER_CALL 100
/* Default for how long an instance ID that RunInstances returned may stay invisible to
 * lookups by ID before the launch is taken as not having created it (it failed or was
 * reclaimed before anyone saw it). Configurable (--launch-grace). */
#define PLAN_LAUNCH_GRACE_DEFAULT_SECONDS 60

/* The launch ledger: recorded in the pool's status before RunInstances is called. */
struct plan_launch {
	char client_token[65];
	int count;
	int64_t started;          /* epoch seconds */
	bool ids_known;           /* RunInstances answered; instance_ids is complete */
	struct strv instance_ids;
	/* The offering this launch asked for; empty: the spec's availabilityZone and
	 * instanceType (ledgers written before offerings existed). A resumed launch must ask
	 * for the same offering (same ClientToken, same request). */
	char zone[POOL_ZONE_MAX + 1];
	char instance_type[POOL_INSTANCE_TYPE_MAX + 1];
};

enum plan_state_class { PLAN_LIVE, PLAN_DEAD, PLAN_GOING };

struct plan {
	int observed;           /* live owned instances (listing or lookup by ID) */
	int inflight;           /* launched, never seen yet, still within the grace: counted as live */
	int target;             /* size the pool converges to now */
	int launch;             /* instances to launch now under a new ClientToken */
	/* > 0: repeat the ledger's launch (same ClientToken, outcome unknown) asking for this
	 * many instances: the ledger's count clamped to what the pool needs now, or all of
	 * it when the launch is known to have happened (its answer only is wanted). Also
	 * when deleting. */
	int resume;
	/* live instances to terminate, in preference order: by their nodes
	 * (drain_victim_cmp) when plan_input.victims is given, then not RUNNING first, the
	 * newest, the highest ID */
	struct strv scale_down;
	struct strv cleanup;    /* owned instances to terminate: dead ones, or all when deleting */
	bool ledger_done;       /* the ledger's launch is resolved: drop the record */
	bool waiting;           /* a launch is still unresolved (nothing new is launched meanwhile) */
	/* Deleting, past the grace: a refusal of the resumed launch (sold out, auth, config)
	 * lets the launch go (it never launched, or cannot be learnt), so the pool is not
	 * held for as long as the refusal lasts. */
	bool let_go_if_refused;
	/* Deleting, past the grace, a launch of unknown outcome not all of whose instances
	 * show and that cannot be repeated (none shows, or the spec no longer validates):
	 * before it is let go, list every instance of its zone without a tag filter (which a
	 * lagging tag index cannot hide) for those carrying its token, then plan again
	 * (plan_input.swept). Not with Retain, nor in a dry run. */
	bool sweep;
	bool release;           /* deleting, and every recorded instance is confirmed gone */
	/* Recorded as live by an earlier pass, now gone, and not terminated by spotpool: a spot
	 * reclaim (or someone outside spotpool). */
	struct strv reclaimed;
	/* Live instances whose Node or a SpotNotice announced their reclaim
	 * (drain_victim.doomed_at, doom.h): not in observed, never in scale_down; drained, and
	 * terminated once drained and replaced. */
	struct strv doomed;
};

struct plan_input {
	const struct pool_spec *spec;            /* minimum/maximum/replicas; ignored when deleting */
	const struct pool_instance *instances;   /* owned instances known this pass */
	size_t n_instances;
	/* What is known of each instance's node (parallel to instances), refining the
	 * scale-down order (drain_victim_cmp) and naming the doomed instances, or NULL: the
	 * order is plan's alone and none is doomed. */
	const struct drain_victim *victims;
	const struct strv *seen;                 /* IDs recorded by earlier passes (status), or NULL */
	const struct strv *seen_live;            /* of those, the ones recorded live, or NULL */
	const struct strv *foreign;              /* recorded IDs a lookup showed to be someone else's */
	const struct plan_launch *ledger;        /* the recorded launch, or NULL */
	int64_t now;
	int64_t launch_grace;                    /* seconds; <= 0 means the default */
	bool deleting;                           /* the pool is being deleted */
	bool retain;                             /* deleting, deletionPolicy Retain: only release */
	bool dry_run;                            /* nothing is mutated: no sweep either */
	/* Deleting, with a spec that still validates: the ledger's launch, known to have
	 * happened, can be repeated (the same request) to learn its IDs. */
	bool can_repeat_launch;
	/* Deleting: the launch's zone was listed without a tag filter this pass
	 * (plan.sweep), and the instances carrying the ledger's token are among instances. */
	bool swept;
};

enum plan_state_class plan_classify_state(const char *state);
/* The instance is on its way somewhere (PENDING, or going away): worth looking again soon. */
bool plan_state_settling(const char *state);
/* IDs recorded (seen, or the ledger's) that the listing does not show: to be looked up
 * by ID before their absence is believed. Sorted, without duplicates. */
void plan_ids_to_confirm(const struct pool_instance *listed, size_t n_listed, const struct strv *seen,
			 const struct plan_launch *ledger, struct strv *ret);
/* Ownership: the instance carries the pool tag owner ("<namespace>/<name>") and either
 * the cluster tag cluster, or no cluster tag at all (launched before that tag existed:
 * it stays its pool's). An instance of the same pool name launched by another cluster
 * (another cluster tag) is not owned. cluster NULL or empty: the cluster tag is ignored. */
bool plan_owns(const struct pool_instance *i, const char *owner, const char *cluster);
/* Appends to *list the instances of found that the pool owns (plan_owns) and are not in
 * *list yet (a lookup by ID answers for any instance of the account: someone who can
 * write the status must not be able to make the pool act on a foreign instance).
 * The IDs of foreign ones are added to ret_foreign. */
void plan_merge_owned(struct pool_instance **list, size_t *n, const struct pool_instance *found,
		      size_t n_found, const char *owner, const char *cluster, struct strv *ret_foreign);
/* Where instances live (D3): an instance is looked up and terminated in the region of its
 * zone, whatever the pool's region says now (an edit the CRD did not refuse), since a
 * lookup elsewhere cannot see it and its NotFound there proves nothing. */
struct plan_where {
	const struct pool_instance *known;       /* observed this pass: their zones */
	size_t n_known;
	const struct strv *seen, *seen_zones;    /* recorded (status), with their zones ("": none) */
	const struct plan_launch *ledger;        /* its IDs: its offering's zone */
	const char *region;                      /* the pool's: for IDs of none of those */
};
/* ids grouped by the region each lives in (known, else recorded, else ledger zone, else the
 * pool's region): ret_regions gets the distinct regions in order of first appearance,
 * *ret_groups (allocated) the IDs of each. One group in the normal case, so one call. */
void plan_by_region(const struct plan_where *w, const struct strv *ids, struct strv *ret_regions,
		    struct strv **ret_groups);
void plan_by_region_free(struct strv *regions, struct strv *groups);
void plan_compute(const struct plan_input *in, struct plan *ret);
/* The instances a pool's status records: the known ones not going away, and those
 * terminated by this pass (shown TERMINATING, so their disappearance is not taken for a
 * reclaim next time). Returns a new array of *ret_n entries; caller frees. */
struct pool_instance *plan_recorded(const struct pool_instance *known, size_t n_known,
				    const struct strv *terminated, size_t *ret_n);
void plan_free(struct plan *p);
void plan_launch_clear(struct plan_launch *l);

#endif
