/* notices: a list + watch of SpotNotices (reclaim notices that `spotpool agent` reports
 * from hosts that are not Nodes, agent.h), kept as (namespace, instance ID, deadline):
 * a few hundred bytes per notice, bounded as NOTICES_UNCLAIMED_MAX says. Tells its owner which pools to
 * look at when a notice of one of their instances comes or goes, and deletes notices
 * whose deadline is NOTICES_KEEP_SECONDS past (the agent may only create them).
 *
 * Trust: a notice counts for a pool only when it is in the pool's namespace or in the
 * controller's home namespace (cfg_notices_namespace), where the shipped reporter Role
 * lives: whoever may create SpotNotices in one team's namespace cannot doom another
 * team's instances. Notices of namespaces without pools are not kept. Its
 * deadline is a claim, bounded as a Node's is (doom.h) from when this cache first saw
 * the notice, on the controller's clock. A notice that does not read is ignored, with
 * a warning (once: a relist says it again at debug level).
 * Its threads, lock and callback: src/CONCURRENCY.md. */
#ifndef SPOTPOOL_NOTICES_H
#define SPOTPOOL_NOTICES_H

#include "informer.h"
#include "kube.h"
#include "spotpool.h"

/* A notice this long past its deadline (the earlier of the claimed and the bounded
 * one) is deleted (about 5 minutes later: deletions follow a watch round): the instance
 * was reclaimed, terminated, or found still live past the deadline (a false notice) by
 * then. Short, since notices made up to crowd the cache stay until they are deleted. */
#define NOTICES_KEEP_SECONDS 600
/* Expired notices deleted at most per round (after each watch, about 5 minutes), one
 * every NOTICES_DELETE_GAP_MS: a backlog goes without a burst. */
#define NOTICES_DELETES_PER_ROUND 100
#define NOTICES_DELETE_GAP_MS 10
/* Notices per list page: a page of notices padded to their size limit stays far below
 * KUBE_RESPONSE_MAX. */
#define NOTICES_PAGE_LIMIT 50
/* A list failing this long (other than RBAC or a missing CRD) after the start turns
 * notices off, said at error level: finds stop being pending (the scale-down waits for
 * them) until a list works. */
#define NOTICES_LIST_PATIENCE_SECONDS 120
/* Room is shared fairly: a notice of an instance that a pool trusting the notice's
 * namespace asked about (notices_find: the pool's own instances, which the controller
 * also asks about as the status records them whenever it lists a pool) is always kept, at most
 * NOTICES_INSTANCE_MAX of one instance in one namespace (real instances bound them). The
 * others (made-up instance IDs, or a pool whose first pass since a restart is still to
 * come) are kept unclaimed, at most NOTICES_NAMESPACE_MAX of one namespace (but the
 * home one, trusted by every pool) and NOTICES_UNCLAIMED_MAX in all: notices for made-up IDs in a tenant's namespaces cannot
 * crowd out another namespace's, nor a claimed one anywhere. More are ignored (with a
 * warning) and listed again after the watch round (about 5 minutes) once they would be
 * kept (room came, a pool asked about the instance, a pool came to the namespace). */
#define NOTICES_INSTANCE_MAX 4
#define NOTICES_NAMESPACE_MAX 100
#define NOTICES_UNCLAIMED_MAX 10000

struct notices_config {
	/* The apiserver: each watcher thread makes its port when it starts and ends it when
	 * it stops (as informer_config's). Unit tests call notices_round instead. */
	struct kube_api (*api_new)(void *userdata);
	void (*api_free)(void *userdata, struct kube_api *api);
	/* The apiserver for the deletions (made and ended as api_new's, by api_free): a client
	 * that ends with leadership (kube_client_set_until), which the list and watch of a
	 * standby must not. NULL: api_new's. */
	struct kube_api (*writer_new)(void *userdata);
	const struct sp_clock *clock;    /* NULL: sp_clock_system */
	/* Watched namespaces, as the pools' (empty: all, one watch); home_namespace (may be
	 * NULL) is watched too when the list lacks it. */
	const struct strv *namespaces;
	const char *home_namespace;
	/* Whether a pool lives in namespace ns: notices elsewhere (but in the home namespace)
	 * count for no pool and are not kept. NULL: every namespace. And whether the pools
	 * are listed: before it, a watcher's first list waits (at most
	 * NOTICES_LIST_PATIENCE_SECONDS). NULL: at once. Both called without the cache's
	 * lock. */
	bool (*namespace_wanted)(void *userdata, const char *ns);
	bool (*pools_listed)(void *userdata);
	/* A notice of one of pool's instances (as its last notices_find asked) came, or
	 * went. Called without the cache's lock. */
	void (*changed)(void *userdata, const char *pool);
	void *userdata;
	/* Expired notices are deleted only while this monotonic time (ms) is ahead: the
	 * leader's renew deadline (a standby writes nothing); NULL: always. Never when
	 * read_only (dry-run). */
	const _Atomic int64_t *active_until_ms;
	bool read_only;
};

struct notices;

struct notices *notices_new(const struct notices_config *cfg);
/* Starts a watcher thread per namespace (one for all), each calling notices_round. */
int notices_start(struct notices *n, struct sp_error *err);
/* One list/watch round of watcher i (informer_lw_round), then the deletion of its
 * expired notices. A list refused by RBAC, or a cluster without the SpotNotice CRD, is
 * said once: the watcher's notices are forgotten (also those of earlier lists: they may
 * have been withdrawn since) and stay unknown (no instance is doomed by one) until it
 * works, the list retried with the watch's backoff (up to 30 s). */
int64_t notices_round(struct notices *n, size_t i, const struct kube_api *api);
void notices_stop(struct notices *n);
void notices_free(struct notices *n);

/* Every watcher listed at least once. */
bool notices_synced(const struct notices *n);
/* Every watcher's thread showed life within max_quiet_ms (the health probe's). */
bool notices_healthy(const struct notices *n, int64_t max_quiet_ms);
/* Notices cached. */
size_t notices_count(struct notices *n);
/* ret_at[i]: the reclaim deadline (epoch seconds, doom_deadline's) of ids[i] as the
 * notices pool may trust say ("<namespace>/<name>": its namespace's and the home namespace's), the
 * earliest of them (a deadline moved is a second notice; the earlier one governs: the
 * instance is never kept past a deadline Tencent announced), 0 for none. Remembers ids
 * as pool's, for changed. SP_ETRANSIENT (every ret_at 0) while a watcher has not listed
 * yet: a notice may be about to come. Lists that cannot work (RBAC, no CRD) count as
 * listed: notices are off, not pending. */
int notices_find(struct notices *n, const char *pool, const char *const *ids, size_t n_ids, int64_t *ret_at);
/* The pool is gone: its instances are no longer looked for. */
void notices_forget(struct notices *n, const char *pool);

/* Applies one watch event (ADDED, MODIFIED, DELETED) of watcher i to the cache (for unit
 * tests; the watchers do it). Objects that do not read as notices are skipped. */
void notices_apply_event(struct notices *n, size_t i, const char *type, const cJSON *obj);

#endif
