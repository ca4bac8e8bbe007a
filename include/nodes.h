/* nodes: a list + watch of the cluster's Nodes (cluster-scoped) into their compact views
 * (node.h: a few hundred bytes per Node, nothing else of the object is kept), the match
 * of a pool's instances to them, and the deletion of a Node. Tells its owner which pools
 * to look at when a Node of one of their instances appears, changes what spotpool reads
 * of it, or goes. Its thread, lock and callback: src/CONCURRENCY.md. */
#ifndef SPOTPOOL_NODES_H
#define SPOTPOOL_NODES_H

#include "informer.h"
#include "kube.h"
#include "node.h"
#include "spotpool.h"

#define NODES_PATH "/api/v1/nodes"

struct nodes_config {
	/* The apiserver: the watcher thread makes its port when it starts and ends it when
	 * it stops (as informer_config's). Unit tests call nodes_round instead. */
	struct kube_api (*api_new)(void *userdata);
	void (*api_free)(void *userdata, struct kube_api *api);
	const struct sp_clock *clock;    /* NULL: sp_clock_system */
	/* A Node of one of pool's instances (as its last nodes_find asked) was added, changed
	 * or deleted. Called without the cache's lock. */
	void (*changed)(void *userdata, const char *pool);
	void *userdata;
};

struct nodes;

struct nodes *nodes_new(const struct nodes_config *cfg);
/* Starts the watcher thread, which calls nodes_round until stopped. */
int nodes_start(struct nodes *n, struct sp_error *err);
/* One list/watch round (informer_lw_round). A list refused by RBAC is said once, as an
 * error naming what the controller needs. */
int64_t nodes_round(struct nodes *n, const struct kube_api *api);
void nodes_stop(struct nodes *n);
void nodes_free(struct nodes *n);

/* Listed at least once. */
bool nodes_synced(const struct nodes *n);
/* Nodes cached. */
size_t nodes_count(struct nodes *n);
/* The cached view of Node name: 0, SP_ENOTFOUND when not cached, SP_ETRANSIENT until
 * the first list. */
int nodes_get(struct nodes *n, const char *name, struct node_view *ret);
/* The Nodes of pool's instances (node_match over the cached views): ret[i] is want[i]'s
 * Node (name empty: none), ret_by[i] how it matched, ret_refused (NULL: not wanted) the
 * claims not honoured. Remembers want as pool's (the IDs and IPs), for changed.
 * SP_ETRANSIENT, with nothing written to ret, until the first list; SP_EFORBIDDEN
 * instead when listing is refused (RBAC: no Node features). */
int nodes_find(struct nodes *n, const char *pool, const struct node_want *want, size_t n_want,
	       struct node_view *ret, enum node_by *ret_by, struct node_refusals *ret_refused);
/* The pool is gone: its instances are no longer looked for. */
void nodes_forget(struct nodes *n, const char *pool);

/* The Nodes of want as the apiserver lists them now (every page through api, not the
 * cache, which may lag behind), matched as nodes_find matches: for a pass about to act
 * on an instance having no Node. Nothing is written to ret on failure (the SP_E* code of
 * the page that failed, err saying which). */
int nodes_find_live(const struct kube_api *api, const struct node_want *want, size_t n_want, struct node_view *ret,
		    enum node_by *ret_by, struct node_refusals *ret_refused, struct sp_error *err);

/* Deletes the Node name through api if it is still the Node uid (a DeleteOptions
 * precondition: a name can be reused by a new Node, TKE names Nodes by private IP).
 * 0: deleted; SP_ENOTFOUND: no Node uid any more (404: gone; 409: the name is another
 * Node's now, left alone); other errors as kube_request's (retry later). */
int nodes_delete(const struct kube_api *api, const char *name, const char *uid, struct sp_error *err);

/* Applies one watch event (ADDED, MODIFIED, DELETED) to the cache (for unit tests; the
 * watcher does it). */
void nodes_apply_event(struct nodes *n, const char *type, const cJSON *obj);

#endif
