/* drain: draining a node before its instance is terminated, by kubectl drain's rules:
 * which of a node's pods are evicted, which instances a scale-down takes first, and the
 * next step of one node's drain. Pure: no I/O (evict.c talks to the apiserver).
 * docs/how-it-works.md, "Draining", states the rules. */
#ifndef SPOTPOOL_DRAIN_H
#define SPOTPOOL_DRAIN_H

#include "node.h"
#include "spotpool.h"

#include <cjson/cJSON.h>

/* What spotpool puts on a node it drains (node.h names them): a NoSchedule taint (empty
 * value), the drain's start (RFC 3339 UTC) and whether the node was cordoned before
 * ("true"/"false"), so a drain given up does not uncordon a node someone else cordoned. */
#define DRAIN_TAINT_EFFECT "NoSchedule"
/* Annotations of pods read from others: a static pod's mirror; the cluster autoscaler's
 * opt-out of a pod ("false": never evicted for a scale-down). */
#define DRAIN_MIRROR_ANNOTATION "kubernetes.io/config.mirror"
#define DRAIN_SAFE_TO_EVICT_ANNOTATION "cluster-autoscaler.kubernetes.io/safe-to-evict"
/* A drain in progress is looked at again at least this often (kubectl drain retries a
 * refused eviction every 5 s). */
#define DRAIN_RECHECK_SECONDS 5
/* A forced drain that starts at or past its deadline evicts for this long (the two
 * minutes a reclaim notice gives). */
#define DRAIN_LATE_SECONDS 120
/* Reasons of the condition and event of a drain that did not end as planned. */
#define DRAIN_REASON_TIMED_OUT "DrainTimedOut"
#define DRAIN_REASON_CUT_SHORT "DrainCutShort"
/* The pods of a node being drained could not be listed (RBAC, the apiserver, too many). */
#define DRAIN_REASON_UNLISTED "PodsNotListed"

enum drain_pod_class {
	DRAIN_POD_EVICT,     /* evicted through the Eviction API */
	DRAIN_POD_BLOCKING,  /* safe-to-evict "false": not evicted unless the drain is forced;
			      * the drain waits for it to end by itself */
	DRAIN_POD_GOING,     /* being deleted already: waited for, not evicted again */
	DRAIN_POD_MIRROR,    /* a static pod's mirror: stays, does not hold the drain */
	DRAIN_POD_DAEMONSET, /* controlled by a DaemonSet: stays, does not hold the drain */
	DRAIN_POD_FINISHED,  /* phase Succeeded or Failed: stays, does not hold the drain */
};

struct drain_pod {
	char namespace[64];
	char name[254];
	enum drain_pod_class cls;
};

/* Classifies a Pod object (mirror, DaemonSet, finished, going, blocking, evict: the
 * first that applies). SP_EPROTO when it has no valid metadata.name or namespace. */
int drain_pod_classify(const cJSON *pod, struct drain_pod *ret, struct sp_error *err);
/* The node cannot count as drained while such a pod is on it (evict, blocking, going). */
bool drain_pod_holds(enum drain_pod_class cls);

/* What a scale-down's choice of victims knows of an instance's node. */
struct drain_victim {
	bool has_node;            /* false: the instance never joined; nothing to drain */
	bool draining;            /* its Node carries spotpool's drain taint: a drain goes on */
	bool given_up;            /* its last drain timed out less than a drainTimeout ago */
	bool unlisted;            /* its pods could not be listed: counts unknown, chosen last */
	/* No Node because claims to it were refused (node_match): its pods may be on a
	 * claimant, so it is not terminated by choice; chosen after every other. */
	bool contested;
	/* Its Node carries SpotTerminating: reclaimed at this time (epoch seconds), 0: not
	 * doomed. A doomed instance counts toward neither target nor (unless
	 * maximumIncludesDoomed) maximum, and is never a scale-down victim. */
	int64_t doomed_at;
	bool scale_down_disabled; /* NODE_ANNOTATION_SCALE_DOWN_DISABLED is "true" */
	int blocking;             /* pods with safe-to-evict "false" */
	int evictable;            /* pods the drain evicts or waits for (evict, going) */
};
/* The counts of a node's classified pods. */
void drain_victim_count(const struct drain_pod *pods, size_t n, struct drain_victim *v);
/* The order in which victims are chosen, as far as their nodes decide it (negative: a goes
 * first; 0: the nodes do not decide, plan's order does): not scale-down-disabled first;
 * then not given up lately; then nodes already draining (a drain once started goes on,
 * not one more); then nodes whose pods could be listed; then instances not
 * contested; then no Node; then nodes without blocking pods; then the fewest evictable pods (an empty node
 * first). plan_compute refines its own order with this. */
int drain_victim_cmp(const struct drain_victim *a, const struct drain_victim *b);

/* One node's drain as its annotations show it. */
struct drain_node {
	bool has_node;          /* false: the instance has no Node: drained at once */
	int64_t started;        /* NODE_ANNOTATION_DRAIN_STARTED, epoch seconds; 0: not started */
	bool was_unschedulable; /* NODE_ANNOTATION_WAS_UNSCHEDULABLE is "true" */
};

struct drain_step_input {
	struct drain_node node;
	const struct drain_pod *pods; /* the node's pods, classified */
	size_t n_pods;
	/* NULL: pods is the node's listing. Else why it could not be listed: the node's pods
	 * are unknown, so it holds the drain with nothing to evict until the listing works or
	 * the drain ends (its timeout, gave up or cut short, naming this). */
	const char *unlisted;
	int64_t now;                  /* epoch seconds */
	int64_t timeout;              /* spec.drainTimeout, seconds; 0: no drain */
	/* Forced by a reclaim notice: the drain ends at this time (epoch seconds) whatever is
	 * left, evicts blocking pods too (the node goes anyway) and is never given up; 0: none.
	 * A drain not started by then starts late and ends DRAIN_LATE_SECONDS after its start. */
	int64_t deadline;
};

enum drain_action {
	DRAIN_START,   /* taint, cordon and annotate the node (evict_start) */
	DRAIN_EVICT,   /* evict the pods listed (evict_pod), then look again by `until` */
	DRAIN_WAIT,    /* nothing to do before `until` (pods are going, or blocking) */
	DRAIN_DONE,    /* drained (or nothing to drain, or forced past the deadline): terminate */
	DRAIN_GIVE_UP, /* timed out: undo (evict_undo), keep the node, report reason/message */
};

struct drain_step {
	enum drain_action action;
	size_t *evict;      /* DRAIN_EVICT: indices into the input's pods */
	size_t n_evict;
	int64_t until;      /* DRAIN_EVICT, DRAIN_WAIT: look again at the latest then */
	bool uncordon;      /* DRAIN_GIVE_UP: the node was schedulable before the drain */
	size_t left;        /* pods still holding the drain (DRAIN_GIVE_UP, DRAIN_DONE) */
	/* DRAIN_GIVE_UP (DRAIN_REASON_TIMED_OUT), or DRAIN_DONE with pods left at the deadline
	 * (DRAIN_REASON_CUT_SHORT); empty otherwise. The message names up to 5 pods left, or
	 * why they could not be listed. */
	char reason[32];
	char message[512];
};

void drain_step(const struct drain_step_input *in, struct drain_step *ret);
void drain_step_free(struct drain_step *s);

#endif
