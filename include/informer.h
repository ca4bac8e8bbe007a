/* informer: list + watch of Spotpools (bookmarks, relist on 410) into a cache of the
 * latest version of each pool, so a reconcile pass reads its pool from memory instead
 * of a GET. Tells its owner which pools need a look. */
#ifndef SPOTPOOL_INFORMER_H
#define SPOTPOOL_INFORMER_H

#include "kube.h"
#include "spotpool.h"
#include "stop.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>

struct informer_config {
	/* The apiserver (a port). A kube_client serves one thread, so each watcher thread
	 * makes its own port when it starts (api_new) and ends it when it stops (api_free);
	 * both get userdata. Unit tests start no thread: they call informer_round with a
	 * port of canned replies. */
	struct kube_api (*api_new)(void *userdata);
	void (*api_free)(void *userdata, struct kube_api *api);
	const struct sp_clock *clock;    /* heartbeats and decisions; NULL: sp_clock_system */
	const struct strv *namespaces;   /* empty: all namespaces */
	/* A pool needs a look: now (new, spec changed, deletion started) or, for a pool a
	 * relist merely found again, when its backoff allows (at_once false). */
	void (*enqueue)(void *userdata, const char *key, bool at_once);
	void (*deleted)(void *userdata, const char *key);
	/* A pool's object as a list or a watch event brought it (not a deletion, nor one older
	 * than the cached), before enqueue, without the cache's lock; NULL: not wanted. */
	void (*seen)(void *userdata, const char *key, const cJSON *obj);
	void *userdata;
};

struct informer;

/* The list + watch loop of one collection, which the informer and the Node cache
 * (nodes.h) share: a paged list (limit 500, or the owner's page_limit) when needed (at the start, after a 410
 * Gone), then a watch from the last resourceVersion seen (a list's, an event's or a
 * bookmark's) until it ends. The owner takes the objects through informer_lw_ops. */
struct informer_lw {
	const struct sp_clock *clock;
	char resource_version[64];
	bool need_list;
	int64_t delay_ms;          /* the backoff of the last failed round */
	int list_error;            /* the last list's SP_E* code, 0 after one that worked */
	atomic_bool synced;        /* listed at least once */
	atomic_llong heartbeat_ms; /* the last sign of life of its thread */
};

struct informer_lw_ops {
	const char *kind, *scope;  /* for log lines: "listed <kind> in <scope>" */
	const char *path;          /* the collection's API path */
	/* A list begins; each object it holds; it ended (complete: every page came, so what
	 * it did not hold is gone). */
	void (*begin_list)(void *userdata);
	void (*item)(void *userdata, const cJSON *obj);
	void (*end_list)(void *userdata, bool complete);
	/* A watch event: ADDED, MODIFIED or DELETED (bookmarks and errors stay here). */
	void (*event)(void *userdata, const char *type, const cJSON *obj);
	void *userdata;
	/* A list refused (403) or of a resource the cluster lacks (404) is logged at debug
	 * only: the owner says it once (a feature off until RBAC or a CRD allows it). */
	bool owner_says_refusals;
	int page_limit;  /* objects per list page; 0: 500 */
};

/* clock NULL: sp_clock_system. */
void informer_lw_init(struct informer_lw *lw, const struct sp_clock *clock);
/* One round through api (the watch cancelled by stop, which may be NULL). Returns the
 * milliseconds to wait before the next round: 0 after a relist request or a watch that
 * ran its course (over 1 s), else a backoff of 0.5 s doubling up to 30 s after each
 * failed list or watch that dropped. */
int64_t informer_lw_round(struct informer_lw *lw, const struct informer_lw_ops *ops, const struct kube_api *api,
			  const struct stop *stop);
/* The paged list of one round alone, without a watch: its objects through ops
 * (begin_list, item, end_list); lw (NULL: none) keeps its resourceVersion. 0 or the
 * failing page's SP_E* code. */
int informer_list(struct informer_lw *lw, const struct informer_lw_ops *ops, const struct kube_api *api,
		  struct sp_error *err);
/* Its thread showed life within max_quiet_ms. */
bool informer_lw_healthy(const struct informer_lw *lw, int64_t max_quiet_ms);

struct informer *informer_new(const struct informer_config *cfg);
/* One watcher per namespace (or one for all), numbered in the order of namespaces.
 * Starts one thread per watcher, each calling informer_round until stopped, waiting
 * between rounds as it says. */
int informer_start(struct informer *inf, struct sp_error *err);
/* One round of watcher i through api (informer_lw_round). */
int64_t informer_round(struct informer *inf, size_t i, const struct kube_api *api);
/* Stops and joins the threads; the cache stays readable. */
void informer_stop(struct informer *inf);
void informer_free(struct informer *inf);

/* Every watch has listed at least once. */
bool informer_synced(const struct informer *inf);
/* Every watch thread showed life within max_quiet_ms. */
bool informer_healthy(const struct informer *inf, int64_t max_quiet_ms);

/* A copy of the cached object of key ("<namespace>/<name>"), or NULL when unknown.
 * The caller owns it. */
cJSON *informer_get(struct informer *inf, const char *key);
/* Whether key is a cached pool (no copy made). */
bool informer_has(struct informer *inf, const char *key);
/* Whether a cached pool lives in namespace ns. */
bool informer_has_namespace(struct informer *inf, const char *ns);
/* Replaces the cached object of key by obj (what a patch returned) unless the watch
 * delivered a newer version meanwhile: the cache must hold from_rv, the version the
 * pass started from. When obj carries a new generation or a deletion, the pool is
 * enqueued at once (the watch events that brought them are older than obj). */
void informer_update(struct informer *inf, const char *key, const char *from_rv, const cJSON *obj);
/* Appends every cached key. */
void informer_keys(struct informer *inf, struct strv *ret);
/* Remembers the pool's live instance count (for STATUS= lines); -1: unknown. */
void informer_note_live(struct informer *inf, const char *key, int live);
/* Pools cached, and the sum of their last known live counts. */
void informer_counts(struct informer *inf, size_t *ret_pools, size_t *ret_instances);

/* Applies one watch event (ADDED, MODIFIED, DELETED) to the cache and tells the owner.
 * The cache only moves forward: an event older than the cached version of the same
 * object (uid) is ignored, a deleted uid does not come back, a new uid replaces. */
void informer_apply_event(struct informer *inf, const char *type, const cJSON *obj);
/* Whether resourceVersion incoming is newer than cached: compared as decimal numbers
 * (what the etcd-backed apiserver hands out); true when either is not one. */
bool informer_rv_newer(const char *cached, const char *incoming);

/* "<namespace>/<name>" of a Spotpool object, or NULL. Caller frees. */
char *informer_key(const cJSON *obj);
/* metadata.resourceVersion of an object, or "" */
const char *informer_resource_version(const cJSON *obj);

#endif
