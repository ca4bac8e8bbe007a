/* fit: which pending pods a pool's node would take, how many new nodes they need, and
 * which one pool grows for a pod (issue 28 item 2, design D5-D6). Pure: no I/O. A pod
 * as podreq.h reads it, resources as qty.h's lists, a pool's nodeTemplate as tmpl.h's.
 * Not wired into the pass yet. The rules, units and what is not modelled:
 * docs/demand.md. */
#ifndef SPOTPOOL_FIT_H
#define SPOTPOOL_FIT_H

#include "podreq.h"
#include "qty.h"
#include "spotpool.h"
#include "tmpl.h"

/* A node of a pool as it will register (D5): what it can hold (pods included: a pod
 * takes one, and a template without QTY_PODS takes none), its labels and taints.
 * namespace/name are the pool's (pool choice ties). */
struct fit_template {
	char namespace[64];
	char name[254];
	struct qty_list allocatable;
	/* The pool's spec.nodeTemplate as tmpl_parse read it (pool_spec.node_template),
	 * borrowed; NULL: no labels, no taints. */
	const struct tmpl_node *node;
};

/* Frees the allocatable (node is borrowed). */
void fit_template_clear(struct fit_template *t);

/* An instance type as DescribeInstanceTypeConfigs gives it, with the pool's system disk
 * and the pods a node takes (the kubelet's maxPods: 110 by default, fewer with TKE's
 * VPC-CNI). */
struct fit_instance_type {
	int64_t cores, memory_mib, gpus, disk_gib, pods;
};

/* The kubelet's default hard eviction threshold memory.available, 100Mi. */
#define FIT_EVICTION_MEMORY (100 * 1048576LL)
/* The part of the system disk a pod may request: less the kubelet's nodefs.available
 * 10% eviction threshold and about 5% the file system keeps. */
#define FIT_DISK_PERCENT 85

/* The allocatable of a new node of it on TKE's reserve (docs/demand.md#node-size): CPU
 * 0.1 core for the first 4, then 2.5% to 64 cores, 1.25% to 128, 0.5% above; memory
 * 25% of the first 4 GiB, 20% to 8, 10% to 16, 6% to 128, 2% above, and
 * FIT_EVICTION_MEMORY; GPUs as nvidia.com/gpu; ephemeral-storage FIT_DISK_PERCENT of
 * the disk. Into ret (which it replaces). */
void fit_tke_allocatable(const struct fit_instance_type *it, struct qty_list *ret);

/* What the DaemonSets whose pods a node of t would run take of it, into ret (which it
 * replaces): the requests, summed (saturating), of those of daemon_pods (each read from
 * a DaemonSet's spec.template by podreq_parse) an empty node of t takes (fit_check),
 * over t's resources only. The caller takes it off t's allocatable (qty_sub);
 * a Ready Node's allocatable, learned, still hosts them too. */
void fit_daemon_overhead(const struct fit_template *t, const struct podreq *const *daemon_pods, size_t n,
			 struct qty_list *ret);

enum fit_reason {
	FIT_OK,             /* a new node of the template takes it */
	FIT_NOT_MODELLED,   /* what: the constraint (podreq.unmodelled) */
	FIT_SELECTOR,       /* what: the nodeSelector key the labels lack or differ on */
	FIT_AFFINITY,       /* what: a key of the first term that failed ("matchFields") */
	FIT_TAINT,          /* what: the key of a NoSchedule/NoExecute taint not tolerated */
	FIT_TOO_BIG,        /* what: the resource; need, have */
};

struct fit_why {
	enum fit_reason reason;
	const char *what;      /* borrowed from the pod or template */
	int64_t need, have;
};

/* Whether an empty node of t takes p, checked in the order of enum fit_reason; ret_why
 * (NULL: not wanted) says why not. */
enum fit_reason fit_check(const struct fit_template *t, const struct podreq *p, struct fit_why *ret_why);
/* "Fits", "NotModelled", "NodeSelector", "NodeAffinity", "Taint", "TooBig". */
const char *fit_reason_name(enum fit_reason r);
/* One line for the dry run: "needs 8 nvidia.com/gpu, the node has 4". */
void fit_why_format(const struct fit_why *w, char *out, size_t size);

enum fit_place_kind {
	FIT_PLACE_NONE,     /* no empty node of the template takes it (fit_check) */
	FIT_PLACE_ROOM,     /* index: the free room it goes to */
	FIT_PLACE_NEW,      /* index: the new node (0..) it goes to */
	FIT_PLACE_NO_ROOM,  /* it would need a new node past max_new */
};

struct fit_place {
	enum fit_place_kind kind;
	size_t index;
};

/* How many new nodes of t the pods need (at most max_new), first-fit decreasing: pods
 * by GPUs, then cpu, then memory, largest first (then namespace/name), each into the
 * first of rooms (free room of the pool's nodes launched but not registered, or
 * registered: allocatable less what is bound or DaemonSets take) that holds it, else
 * the first new node that does, else a new node. ret_place[i] says where pods[i] went. */
size_t fit_pack(const struct fit_template *t, const struct podreq *const *pods, size_t n_pods,
		const struct qty_list *rooms, size_t n_rooms, size_t max_new, struct fit_place *ret_place);

/* The one pool whose node takes the pod (index into pools), -1 for none: of those that
 * fit, the lowest rank: fewest GPUs per node, then fewest cpu, then namespace, then
 * name. Every pool's pass can evaluate it over all pools and get the same answer, so a
 * pod is counted by one pool. ret_why[i] (NULL: not wanted) why pool i does not take
 * it (FIT_OK for every pool that fits, the chosen one and the outranked). */
int fit_choose_pool(const struct podreq *p, const struct fit_template *const *pools, size_t n,
		    struct fit_why *ret_why);

#endif
