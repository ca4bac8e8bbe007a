/* reconcile: one pass over one pool (credentials -> describe -> plan -> act -> status). */
#ifndef SPOTPOOL_RECONCILE_H
#define SPOTPOOL_RECONCILE_H

#include "ctl.h"
#include "cvm.h"
#include "kube.h"

#include <stdatomic.h>

/* Per-worker clients (each owns its connections) and shared options. */
struct reconciler {
	const struct ctl_options *opt;
	struct kube_client *kube;
	struct cvm_client *cvm;
	/* Mutations are allowed until this monotonic time (ms): INT64_MAX without leader
	 * election, else the current lease's renew deadline; 0 for a standby. */
	const _Atomic int64_t *active_until_ms;
	/* Told each pool's live instance count after a successful describe. */
	void (*observed)(void *userdata, const char *ns, const char *name, int live);
	void *userdata;
};

struct reconcile_result {
	int64_t requeue_ms;   /* > 0: look again after this long (progress in flight) */
	int error;            /* < 0: retry with backoff */
};

void reconcile_pool(struct reconciler *r, const char *ns, const char *name,
		    struct reconcile_result *ret);
/* The ClientToken of a pool's n-th launch: stable across restarts, <= 64 ASCII. */
void reconcile_client_token(const char *uid, const char *ns, const char *name, int64_t seq,
			    char out[65]);

#endif
