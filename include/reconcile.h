/* reconcile: one pass over one pool: observe (observe.h) -> plan (pass.h) -> execute the
 * actions (cloud calls, status and finalizer patches, events) -> report.
 * It knows nothing of the controller that drives it: the object comes in (from an
 * informer's cache), the outcome goes out. */
#ifndef SPOTPOOL_RECONCILE_H
#define SPOTPOOL_RECONCILE_H

#include "acct.h"
#include "answers.h"
#include "creds.h"
#include "cvm.h"
#include "inv.h"
#include "kube.h"
#include "node.h"
#include "observe.h"
#include "pass.h"
#include "soldout.h"

#include <stdatomic.h>

/* How long a pass waits for its observation's inventory listing. */
#define RECONCILE_READ_TIMEOUT_MS OBSERVE_READ_TIMEOUT_MS

/* What a pass reports (for metrics), on its worker's thread with no lock held; any
 * member may be NULL.  ns and pool name the pool; code is a call's outcome (0 or an SP_E*
 * class) and reason the cloud's Error.Code (NULL or "" when none). */
struct reconcile_hooks {
	/* Its sizes as this pass planned them: the spec's bounds, the target, live instances. */
	void (*pool_sizes)(void *userdata, const char *ns, const char *pool, int minimum, int maximum,
			   int desired, int current);
	/* One RunInstances call: for the pool, and on the offering (zone, instance_type). */
	void (*launch_request)(void *userdata, const char *ns, const char *pool, int code, const char *reason);
	void (*offering_launch)(void *userdata, const char *zone, const char *instance_type, int code,
				const char *reason);
	/* n instances launched; n terminated by spotpool, for why. */
	void (*instances_launched)(void *userdata, const char *ns, const char *pool, int n);
	void (*instances_terminated)(void *userdata, const char *ns, const char *pool, enum pass_why why, int n);
	/* One instance gone or dead without spotpool terminating it. */
	void (*instance_reclaimed)(void *userdata, const char *ns, const char *pool);
	/* An instance's Node became Ready this long after its launch (once per instance). */
	void (*node_ready)(void *userdata, double seconds);
	/* A drain's pods evicted, and evictions refused for now (PDB, conflict). */
	void (*evictions)(void *userdata, size_t evicted, size_t refused);
	void *userdata;
};

struct reconcile_options {
	bool dry_run;                      /* never mutate the cloud */
	const struct creds *default_creds; /* for pools that name none; may be empty */
	const char *identity;              /* this process, for events */
	int launch_grace_seconds;          /* plan.h; <= 0: the default */
	const char *cluster_name;          /* the cluster tag of this process's launches */
	const struct reconcile_hooks *hooks; /* NULL: none */
};

/* The ports a pass talks through (per worker: each binds its own connections) and the
 * controller's shared state. */
struct reconciler {
	const struct reconcile_options *opt;
	struct kube_api kube;              /* the apiserver */
	struct cvm_api cvm;                /* the CVM API */
	struct inv_reader inv;             /* the shared instance inventory */
	struct node_reader nodes;          /* the Node cache; Nodes are deleted through kube */
	struct notice_reader notices;      /* the SpotNotice cache */
	struct sp_clock clock;
	struct answers *answers;           /* launch answers, shared by the workers */
	struct soldout *soldout;           /* sold-out memory, shared by the workers */
	struct acct *accounts;             /* SecretIds' accounts, shared; NULL: not learned */
	/* Mutations are allowed until this monotonic time (ms): INT64_MAX without leader
	 * election, else the current lease's renew deadline; 0 for a standby. */
	const _Atomic int64_t *active_until_ms;
};

struct reconcile_result {
	int64_t requeue_ms;   /* > 0: look again after this long (progress in flight) */
	int error;            /* < 0: retry with backoff */
	int live;             /* live instances observed, -1 when the cloud was not read */
	/* The object as the pass left it (its own patches applied), or NULL when unchanged
	 * or gone: lets a cache of objects skip the stale copy. Owned by the caller. */
	cJSON *obj;
};

/* Reconciles the Spotpool obj (taken: the pass owns and frees it). */
void reconcile_pool(struct reconciler *r, cJSON *obj, struct reconcile_result *ret);

#endif
