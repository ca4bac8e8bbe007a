/* notices: a list + watch of SpotNotices (reclaim notices that `spotpool agent` reports
 * from hosts that are not Nodes, agent.h) in the namespaces the controller watches, kept
 * as (instance ID, deadline) pairs: a few hundred bytes per notice. Tells its owner which
 * pools to look at when a notice of one of their instances comes or goes, and deletes
 * notices whose deadline is NOTICES_KEEP_SECONDS past (the agent may only create them).
 * Its threads, lock and callback: src/CONCURRENCY.md. */
#ifndef SPOTPOOL_NOTICES_H
#define SPOTPOOL_NOTICES_H

#include "informer.h"
#include "kube.h"
#include "spotpool.h"

/* A notice this long past its deadline is deleted: the instance was reclaimed or
 * terminated at the deadline by then, and a late look at it still finds the notice. */
#define NOTICES_KEEP_SECONDS 3600

struct notices_config {
	/* The apiserver: each watcher thread makes its port when it starts and ends it when
	 * it stops (as informer_config's). Unit tests call notices_round instead. */
	struct kube_api (*api_new)(void *userdata);
	void (*api_free)(void *userdata, struct kube_api *api);
	const struct sp_clock *clock;    /* NULL: sp_clock_system */
	const struct strv *namespaces;   /* empty: all namespaces (one watch) */
	/* A notice of one of pool's instances (as its last notices_find asked) came, or
	 * went. Called without the cache's lock. */
	void (*changed)(void *userdata, const char *pool);
	void *userdata;
};

struct notices;

struct notices *notices_new(const struct notices_config *cfg);
/* Starts a watcher thread per namespace (one for all), each calling notices_round. */
int notices_start(struct notices *n, struct sp_error *err);
/* One list/watch round of watcher i (informer_lw_round), then the deletion of its
 * expired notices. A list refused by RBAC, or a cluster without the SpotNotice CRD, is
 * said once: notices stay unknown (no instance is doomed by one) until it works, the list
 * retried with the watch's backoff (up to 30 s). */
int64_t notices_round(struct notices *n, size_t i, const struct kube_api *api);
void notices_stop(struct notices *n);
void notices_free(struct notices *n);

/* Every watcher listed at least once. */
bool notices_synced(const struct notices *n);
/* Notices cached. */
size_t notices_count(struct notices *n);
/* ret_at[i]: the reclaim deadline (epoch seconds) of ids[i], the earliest of its
 * notices (a deadline moved is a second notice; the earlier one governs: the instance is
 * never kept past a deadline Tencent announced), 0 for none (also before the first list).
 * Remembers ids as pool's, for changed. */
void notices_find(struct notices *n, const char *pool, const char *const *ids, size_t n_ids, int64_t *ret_at);
/* The pool is gone: its instances are no longer looked for. */
void notices_forget(struct notices *n, const char *pool);

/* Applies one watch event (ADDED, MODIFIED, DELETED) of watcher i to the cache (for unit
 * tests; the watchers do it). Objects that do not read as notices are skipped. */
void notices_apply_event(struct notices *n, size_t i, const char *type, const cJSON *obj);

#endif
