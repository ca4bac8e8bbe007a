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
	/* Condition Ready is Unknown: the node lifecycle controller's mark of a Node whose
	 * kubelet stopped reporting (no kubelet, of any instance, speaks for it). */
	bool ready_unknown;
	int64_t created;                            /* metadata.creationTimestamp (epoch s), 0: unknown */
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
	/* Read back from the status, not matched this pass: the status is not only
	 * spotpool's to write, so the entry is a claim (PASS_DELETE_NODE node_carried). */
	bool carried;
	/* Matched by its address (NODE_BY_RECORD: it declares no instance): the instance's
	 * private IP, and when the instance was found gone (node_address_judge); "" and 0 for
	 * a Node matched by the ID it declares. */
	char ip[48];
	int64_t since;
};

/* How long the Node of a gone instance matched by its address waits for no kubelet to
 * report it (Ready Unknown: the node lifecycle controller marks a Node so within a
 * minute or so of its kubelet's end) before it is left undeleted, and said. */
#define NODE_ADDRESS_WAIT_SECONDS 600

enum node_address {
	NODE_ADDRESS_GONE,     /* no Node of that name and UID any more: nothing to delete */
	NODE_ADDRESS_DELETE,   /* the same Node, at that address, declaring no instance, no kubelet reports it */
	NODE_ADDRESS_WAIT,     /* a kubelet still reports it (the gone one's not marked yet, or another's) */
	NODE_ADDRESS_CHANGED,  /* it declares an instance now, or has another address: not the gone one's */
	NODE_ADDRESS_REPORTED, /* a kubelet reports it NODE_ADDRESS_WAIT_SECONDS after: it may be another
				* instance's (a name reused), left */
};

/* What to do at now with r (matched by its address) given the Node of its name as the
 * cache has it now (v, NULL: none). A kubelet reporting a Node whose instance is gone is
 * another instance's, registered under that name (TKE names Nodes by private IP): never
 * deleted. */
enum node_address node_address_judge(const struct node_ref *r, const struct node_view *v, int64_t now);

/* The view of a Node object; false when it has no metadata.name or the name is longer
 * than NODE_NAME_MAX (no Node's is). */
bool node_view_from_json(const cJSON *node, struct node_view *ret);
/* The instance ID a Node declares: its providerID's, else its label's; "" for none. */
const char *node_instance_id(const struct node_view *v);

enum node_by { NODE_BY_NONE, NODE_BY_PROVIDER_ID, NODE_BY_LABEL, NODE_BY_IP, NODE_BY_RECORD };

/* An instance whose Node is looked for: its ID and its private IP as the cloud reports
 * it (NULL or empty: not known yet, and then it has no Node). recorded: not observed this
 * pass (its IP is the one the status recorded): only a Node declaring its ID can be its,
 * never one that merely has its address, which may be another instance's by now. */
struct node_want {
	const char *id;
	const char *ip;
	bool recorded;
	/* recorded: the name of the Node the status recorded for it (its Node when it was
	 * observed), NULL or empty: none. */
	const char *node;
	/* observed: when the instance was launched (epoch s), 0: unknown. */
	int64_t launched;
};

/* A Node's claim to a wanted instance that is not honoured (node_match). */
struct node_refusal {
	char instance[NODE_INSTANCE_ID_MAX + 1];
	char node[NODE_NAME_MAX + 1];
	char ip[48];      /* the Node's InternalIP, "" none */
	/* One of two or more Nodes claiming the instance (none is honoured); else the Node
	 * declares the instance's ID with an InternalIP that is not the instance's. */
	bool conflict;
};

struct node_refusals {
	struct node_refusal *v;
	size_t n;
};

void node_refusals_clear(struct node_refusals *r);

/* The Node of each wanted instance: ret_index[i] is an index into nodes (-1: none) and
 * ret_by[i] how it matched. A Node's word is a claim, honoured only where the cloud
 * agrees (docs/how-it-works.md#nodes): a Node declaring an instance's ID (its
 * providerID's last path segment, or the NODE_LABEL_INSTANCE_ID / TKE label) claims that
 * instance, and the claim holds only when its InternalIP is the instance's private IP; a
 * Node declaring no ID at all claims the observed instance whose private IP its
 * InternalIP is, and the recorded one whose recorded Node name and private IP it has
 * (NODE_BY_RECORD: it was that instance's Node). Such a Node no kubelet reports
 * (ready_unknown) that was created before an observed instance of its IP was launched
 * is not that one's (no kubelet of it registered or reports it): only the recorded
 * one's. An instance claimed by exactly one Node, that claims nothing else, gets it; one
 * claimed by two or more gets none. ret_refused (NULL: not wanted) gets every claim not
 * honoured: the conflicts, and the IDs declared with another InternalIP; sorted by
 * instance, then Node. */
void node_match(const struct node_view *nodes, size_t n_nodes, const struct node_want *want, size_t n_want,
		int *ret_index, enum node_by *ret_by, struct node_refusals *ret_refused);

#endif
