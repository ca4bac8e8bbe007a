/* node: a Kubernetes Node's compact projection (what spotpool reads of a Node) and the
 * match of a pool's instances to their Nodes. Pure: no I/O; nodes.h keeps the views of
 * a cluster's Nodes, reconcile and drain read them. Names: docs/how-it-works.md#nodes. */
#ifndef SPOTPOOL_NODE_H
#define SPOTPOOL_NODE_H

#include "spotpool.h"

#include <cjson/cJSON.h>

/* A Node's name is a DNS subdomain: at most 253 characters. */
#define NODE_NAME_MAX 253
/* A metadata.uid (a UUID: 36 characters). */
#define NODE_UID_MAX 36
/* An instance ID as pool_instance.id holds it. */
#define NODE_INSTANCE_ID_MAX 31

#define NODE_LABEL_INSTANCE_ID "spotpool.jokerbai.com/instance-id"
#define NODE_LABEL_TKE_INSTANCE_ID "cloud.tencent.com/node-instance-id"
#define NODE_TAINT_DRAINING "spotpool.jokerbai.com/draining"
#define NODE_ANNOTATION_DRAIN_STARTED "spotpool.jokerbai.com/drain-started"
#define NODE_ANNOTATION_WAS_UNSCHEDULABLE "spotpool.jokerbai.com/was-unschedulable"
#define NODE_ANNOTATION_DRAIN_GIVEN_UP "spotpool.jokerbai.com/drain-given-up"
#define NODE_ANNOTATION_SCALE_DOWN_DISABLED "cluster-autoscaler.kubernetes.io/scale-down-disabled"
/* The notice agent's condition (agent.h), True with the message "reclaim at <RFC3339>". */
#define NODE_CONDITION_TERMINATING "SpotTerminating"
#define NODE_TERMINATING_PREFIX "reclaim at "

/* What spotpool knows of a Node (about 460 bytes). Strings are empty when absent or
 * when the value does not fit (an ID longer than an instance ID is no instance's). */
struct node_view {
	char name[NODE_NAME_MAX + 1];
	char uid[NODE_UID_MAX + 1];                 /* metadata.uid: this Node, not its name */
	char provider_id[NODE_INSTANCE_ID_MAX + 1]; /* last path segment of spec.providerID */
	char label_id[NODE_INSTANCE_ID_MAX + 1];    /* NODE_LABEL_INSTANCE_ID, else the TKE label */
	char internal_ip[48];                       /* status.addresses[type=InternalIP] */
	bool ready;                                 /* condition Ready is True */
	int64_t ready_since;                        /* its lastTransitionTime (epoch s), 0: unknown */
	bool unschedulable;                         /* spec.unschedulable (cordoned) */
	bool drain_taint;                           /* NODE_TAINT_DRAINING, effect NoSchedule */
	int64_t drain_started;                      /* NODE_ANNOTATION_DRAIN_STARTED, 0: none */
	bool was_unschedulable;                     /* NODE_ANNOTATION_WAS_UNSCHEDULABLE "true" */
	int64_t drain_given_up;                     /* NODE_ANNOTATION_DRAIN_GIVEN_UP, 0: none */
	bool scale_down_disabled;                   /* NODE_ANNOTATION_SCALE_DOWN_DISABLED "true" */
	/* SpotTerminating True: the deadline of its message "reclaim at <RFC3339>", 0: none
	 * (also when the message holds no time). A claim (doom.h bounds it). */
	int64_t terminating_at;
	/* When the Node cache first saw that claim (this terminating_at), on the controller's
	 * clock; 0 in a view read from JSON (nodes.h sets it). */
	int64_t terminating_seen;
};

/* A Node to delete: the Node of a gone instance, by name and UID (.status.nodeDeletions). */
struct node_ref {
	char name[NODE_NAME_MAX + 1];
	char uid[NODE_UID_MAX + 1];
	char instance_id[NODE_INSTANCE_ID_MAX + 1]; /* the gone instance it was matched to */
};

/* The view of a Node object; false when it has no metadata.name or the name is longer
 * than NODE_NAME_MAX (no Node's is). */
bool node_view_from_json(const cJSON *node, struct node_view *ret);
/* The instance ID a Node declares: its providerID's, else its label's; "" for none. */
const char *node_instance_id(const struct node_view *v);

enum node_by { NODE_BY_NONE, NODE_BY_PROVIDER_ID, NODE_BY_LABEL, NODE_BY_IP };

/* An instance whose Node is looked for; ip NULL or empty: matched by ID only. */
struct node_want {
	const char *id;
	const char *ip;
};

/* The Node of each wanted instance: ret_index[i] is an index into nodes (-1: none) and
 * ret_by[i] how it matched. For each instance, in this order: the Node whose providerID's
 * last path segment is its ID, then the one whose label (NODE_LABEL_INSTANCE_ID or
 * NODE_LABEL_TKE_INSTANCE_ID) is its ID, then the Node whose InternalIP is its private
 * IP. An IP decides only between Nodes that declare no instance ID at all (one that
 * declares another instance's ID is that instance's, whatever its address), a Node
 * matched by ID is never matched again by IP, and an IP two such Nodes share matches
 * neither. Between Nodes declaring the same ID, the first in nodes wins. */
void node_match(const struct node_view *nodes, size_t n_nodes, const struct node_want *want, size_t n_want,
		int *ret_index, enum node_by *ret_by);

#endif
