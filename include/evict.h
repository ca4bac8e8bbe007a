/* evict: the apiserver calls of a node's drain, which drain_step decides: taint, cordon
 * and annotate a node, undo that, list a node's pods, evict one pod through the Eviction
 * API (policy/v1). Through the kube_api port; docs/how-it-works.md, "Draining". */
#ifndef SPOTPOOL_EVICT_H
#define SPOTPOOL_EVICT_H

#include "drain.h"
#include "kube.h"
#include "spotpool.h"

/* Most pods not finished listed on one node (the kubelet's default is 110; finished pods,
 * which a Job can leave by the thousand, are not counted), pods asked for per page, and
 * pages read, before the listing is SP_ETOOBIG. */
#define EVICT_PODS_MAX 2000
#define EVICT_PAGE_LIMIT 500
#define EVICT_PAGES_MAX 16
/* Read-modify-write attempts of a node before a conflict is returned (the kubelet's
 * status updates move its resourceVersion every few seconds). */
#define EVICT_NODE_ATTEMPTS 4

/* Starts the drain of node, the Node of metadata.uid uid: adds the NODE_TAINT_DRAINING
 * NoSchedule taint (keeping every other taint), sets spec.unschedulable and the
 * annotations NODE_ANNOTATION_DRAIN_STARTED (now, RFC 3339 UTC) and
 * NODE_ANNOTATION_WAS_UNSCHEDULABLE (whether it was cordoned before). A drain already
 * started keeps its annotations (a repeated start changes nothing). A merge patch guarded
 * by the uid and resourceVersion read, repeated on a conflict up to EVICT_NODE_ATTEMPTS
 * times, then SP_ETRANSIENT (retry later). SP_ENOTFOUND when there is no such node, or
 * the node of that name has another uid (a Node re-registered under a reused name, which
 * a decision on the old one must not cordon): nothing written. */
int evict_start(const struct kube_api *api, const char *node, const char *uid, int64_t now, struct sp_error *err);
/* Undoes evict_start: removes only the drain taint and the two annotations, and
 * uncordons the node unless it was cordoned before the drain (or the drain-started
 * annotation is gone, so that is unknown). Nothing is written when the node carries none
 * of them; a node that is gone, or whose name is another uid's now, is nothing to undo
 * (0). gave_up_at > 0: the drain timed out then, recorded in
 * NODE_ANNOTATION_DRAIN_GIVEN_UP (not drained again for a drainTimeout). Guarded as
 * evict_start. */
int evict_undo(const struct kube_api *api, const char *node, const char *uid, int64_t gave_up_at,
	       struct sp_error *err);
/* Every pod on node not finished (fieldSelector spec.nodeName, status.phase neither
 * Succeeded nor Failed), classified (drain_pod_classify), in pages of EVICT_PAGE_LIMIT.
 * *ret (caller frees) and *ret_n. */
int evict_list_pods(const struct kube_api *api, const char *node, struct drain_pod **ret, size_t *ret_n,
		    struct sp_error *err);
/* Asks the apiserver to evict one pod (POST of a policy/v1 Eviction to its eviction
 * subresource): 0 when accepted or the pod is already gone (404); SP_ETHROTTLED when a
 * PodDisruptionBudget refuses it now (429: retry later); SP_ECONFLICT on a conflict (409:
 * retry); other errors as kube_request's. */
int evict_pod(const struct kube_api *api, const char *namespace, const char *name, struct sp_error *err);

#endif
