/* podreq: what spotpool reads of a pod to place it (issue 28 item 2, design D6): whether
 * it is pending, its requests as the scheduler counts them, its nodeSelector, required
 * node affinity and tolerations, and the constraints spotpool does not model. Pure: no
 * I/O; cJSON only to read the pod. Where it goes is fit.h's. docs/demand.md. */
#ifndef SPOTPOOL_PODREQ_H
#define SPOTPOOL_PODREQ_H

#include "qty.h"
#include "spotpool.h"
#include "tmpl.h"

#include <cjson/cJSON.h>

/* Bounds on what one pod may make spotpool hold or walk: a pod past one is not counted
 * (podreq_parse fails naming the field), so a hostile pod costs bounded time and memory
 * (at most about 450 KB while parsed: 512 keys and 512 values of 317 characters, and
 * the rest). The apiserver has none of these limits, only its object size (1.5 MB);
 * no real pod is near them. */
#define PODREQ_MAX_CONTAINERS 64       /* spec.containers, and spec.initContainers */
#define PODREQ_MAX_LABELS 64           /* nodeSelector entries */
#define PODREQ_MAX_TERMS 16            /* nodeSelectorTerms */
#define PODREQ_MAX_EXPRESSIONS 32      /* matchExpressions of one term */
#define PODREQ_MAX_VALUES 512          /* values of all matchExpressions together */
#define PODREQ_MAX_TOLERATIONS 64      /* a pod's tolerations */
#define PODREQ_MAX_STRING QTY_NAME_MAX /* a key or value; resource names: qty.h */

enum podreq_op {
	PODREQ_OP_IN, PODREQ_OP_NOT_IN, PODREQ_OP_EXISTS, PODREQ_OP_DOES_NOT_EXIST, PODREQ_OP_GT, PODREQ_OP_LT
};

/* One matchExpressions entry. */
struct podreq_requirement {
	char *key;
	enum podreq_op op;
	char **values;
	size_t n_values;
	int64_t number;   /* Gt, Lt: the one value as an integer */
};

/* One nodeSelectorTerm: its requirements ANDed. */
struct podreq_term {
	struct podreq_requirement *v;
	size_t n;
	/* It has matchFields (metadata.name: one existing Node): no new node matches it. */
	bool match_fields;
};

struct podreq_toleration {
	char *key;     /* "": every key (operator Exists) */
	char *value;
	bool exists;   /* operator Exists, else Equal */
	bool any_effect; /* no effect: every effect */
	enum tmpl_effect effect;
};

/* What spotpool reads of a pod to place it. */
struct podreq {
	char namespace[64];
	char name[254];
	char uid[37];
	/* As the scheduler counts them: the larger of the containers' sum (restartable init
	 * containers, sidecars, added) and each init container's (plus the sidecars started
	 * before it), plus spec.overhead; a resource a container limits without requesting
	 * requests its limit (the apiserver's defaulting); pods 1. */
	struct qty_list requests;
	struct tmpl_label *selector;   /* spec.nodeSelector */
	size_t n_selector;
	bool affinity;                 /* required node affinity present: terms ORed */
	struct podreq_term *terms;
	size_t n_terms;
	struct podreq_toleration *tolerations;
	size_t n_tolerations;
	/* A constraint spotpool does not model, which could keep the pod off a new node:
	 * "required pod affinity", "required pod anti-affinity", "topology spread
	 * (DoNotSchedule)"; NULL when none. Such a pod is not counted. */
	const char *unmodelled;
};

/* Whether demand counts a pod (as the apiserver serves it), as Karpenter's
 * IsProvisionable: the scheduler tried and could not place it (condition PodScheduled
 * False, reason Unschedulable; a pod held by schedulingGates says SchedulingGated), it
 * is not bound (spec.nodeName), not being deleted, not waiting for the room a
 * preemption makes (status.nominatedNodeName), and not a DaemonSet's or a Node's
 * (mirror) pod, which a new node does not help. */
bool podreq_pending(const cJSON *pod);

/* The pod object (as the apiserver serves it) into ret; fails (SP_EINVAL, SP_ETOOBIG)
 * naming the field on a wrong type, a bad quantity or operator, a total past int64, or
 * a bound above. ret is untouched on failure. */
int podreq_parse(const cJSON *pod, struct podreq *ret, struct sp_error *err);
void podreq_clear(struct podreq *p);

#endif
