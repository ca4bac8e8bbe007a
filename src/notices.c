/* notices: list + watch of SpotNotices into (instance, deadline) pairs; see notices.h. */
#include "notices.h"
#include "agent.h"
#include "claims.h"
#include "doom.h"
#include "log.h"
#include "pool.h"
#include "stop.h"

#include <pthread.h>
#include <string.h>

struct notice {
	char *key;                                  /* "<namespace>/<name>" */
	size_t ns_len;                              /* its namespace: key[0..ns_len) */
	char instance_id[AGENT_INSTANCE_ID_MAX + 1];
	int64_t claimed;                            /* spec.reclaimAt, epoch seconds */
	int64_t at;                                 /* the deadline acted on (doom_deadline) */
	size_t watcher;                             /* whose scope it is in */
	uint64_t listed;                            /* the list that last held it */
	bool unclaimed;  /* kept when no pool trusting it had asked about its instance: counted
			  * in its namespace's share of NOTICES_UNCLAIMED_MAX */
};

struct watcher {
	struct notices *owner;
	size_t index;
	char *namespace;    /* NULL: all namespaces */
	char *path;
	/* Only this watcher's thread (or a test's rounds) touches these. */
	struct informer_lw lw;
	int told;                     /* the list error already said, 0: none */
	bool told_delete;             /* a refused deletion said */
	uint64_t delete_refused_seq;  /* deletions refused during this list: none until the next */
	uint64_t list_seq;            /* the list in progress (written under the owner's lock) */
	bool failing;                 /* lists failing since failing_since_ms (monotonic) */
	int64_t failing_since_ms;
	/* Listed, or its list cannot work (RBAC, no CRD): notices_find need not wait. */
	atomic_bool settled;
	const struct kube_api *writer;  /* deletions: cfg.writer_new's, NULL: the round's api */
	/* "<namespace>/<instance ID>" of the notices this list or watch skipped (no pool
	 * wanted their namespace, or their share was full; skipped()), at most
	 * NOTICES_SKIPPED_MAX, more: skipped_more; under the owner's lock. The round that
	 * ends relists when one of them would be kept now. */
	struct strv skipped;
	bool skipped_more;
	int64_t first_round_ms;         /* when its first round began, 0: not yet */
	pthread_t thread;
	bool running;
};

#define NOTICES_SKIPPED_MAX 256
#define SKIPPED_NAMESPACE_MAX 8
#define NS_MAX 64  /* a namespace is a DNS label: 63 bytes at most */

/* How many unclaimed notices one namespace holds. */
struct ns_count {
	char ns[NS_MAX];
	size_t n;
};

/* The notices, sorted by (instance ID, key), so an instance's are side by side. */
struct notices {
	struct notices_config cfg;
	const struct sp_clock *clock;
	pthread_mutex_t lock;
	struct notice *v;
	size_t n, cap;
	struct ns_count *per_ns;  /* sorted by namespace, none at 0 */
	size_t n_ns, cap_ns;
	size_t unclaimed;         /* notices kept unclaimed, in all */
	bool told_full;
	struct claims claims;  /* what each pool's last notices_find looked for */
	struct watcher *w;
	size_t n_w;
	struct stop stop;
};

static void add_watcher(struct notices *n, const char *ns)
{
	struct watcher *w = &n->w[n->n_w];
	*w = (struct watcher){.owner = n, .index = n->n_w++, .namespace = ns ? xstrdup(ns) : NULL};
	w->path = ns ? xasprintf("/apis/" POOL_API_VERSION "/namespaces/%s/" AGENT_NOTICE_PLURAL, ns)
		     : xstrdup("/apis/" POOL_API_VERSION "/" AGENT_NOTICE_PLURAL);
	informer_lw_init(&w->lw, n->clock);
}

struct notices *notices_new(const struct notices_config *cfg)
{
	struct notices *n = xcalloc(1, sizeof(*n));
	n->cfg = *cfg;
	n->clock = cfg->clock ? cfg->clock : &sp_clock_system;
	pthread_mutex_init(&n->lock, NULL);
	stop_init(&n->stop);
	struct strv ns = {0};
	for (size_t i = 0; cfg->namespaces && i < cfg->namespaces->n; i++)
		if (!strv_contains(&ns, cfg->namespaces->v[i]))
			strv_push(&ns, cfg->namespaces->v[i]);
	const char *home = cfg->home_namespace;
	if (ns.n && home && *home && !strv_contains(&ns, home))
		strv_push(&ns, home);
	n->w = xcalloc(ns.n ? ns.n : 1, sizeof(*n->w));
	for (size_t i = 0; i < ns.n; i++)
		add_watcher(n, ns.v[i]);
	if (!ns.n)
		add_watcher(n, NULL);
	strv_clear(&ns);
	return n;
}

static int cmp_notice(const char *id_a, const char *key_a, const struct notice *b)
{
	int c = strcmp(id_a, b->instance_id);
	return c ? c : strcmp(key_a, b->key);
}

/* Under the lock: the index of (id, key), or where it would go (*ret_found false). */
static size_t locate(const struct notices *n, const char *id, const char *key, bool *ret_found)
{
	size_t lo = 0, hi = n->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_notice(id, key, &n->v[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = lo < n->n && cmp_notice(id, key, &n->v[lo]) == 0;
	return lo;
}

/* Whether a notice in namespace ns (ns_len bytes) counts for pool ("<namespace>/<name>"). */
static bool trusted(const struct notices *n, const char *pool, const char *ns, size_t ns_len)
{
	const char *home = n->cfg.home_namespace;
	if (home && strlen(home) == ns_len && strncmp(home, ns, ns_len) == 0)
		return true;
	return strncmp(pool, ns, ns_len) == 0 && pool[ns_len] == '/';
}

/* Under the lock: the pools that asked about instance id (notices_find) and trust
 * namespace ns (ns_len bytes) go to out. */
static void claiming(const struct notices *n, const char *id, const char *ns, size_t ns_len, struct strv *out)
{
	struct strv pools = {0};
	claims_find(&n->claims, &id, 1, NULL, &pools);
	for (size_t i = 0; i < pools.n; i++)
		if (trusted(n, pools.v[i], ns, ns_len) && !strv_contains(out, pools.v[i]))
			strv_push(out, pools.v[i]);
	strv_clear(&pools);
}

/* Under the lock: the pools claiming notice c's instance and trusting it go to changed. */
static void claimants(const struct notices *n, const struct notice *c, struct strv *changed)
{
	claiming(n, c->instance_id, c->key, c->ns_len, changed);
}

/* Under the lock: the count of namespace ns (len bytes, < 64), made at 0 when make, else
 * NULL when it holds none. */
static struct ns_count *ns_slot(struct notices *n, const char *ns, size_t len, bool make)
{
	size_t lo = 0, hi = n->n_ns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(ns, n->per_ns[mid].ns, len);
		c = c ? c : n->per_ns[mid].ns[len] ? -1 : 0;
		if (c == 0)
			return &n->per_ns[mid];
		if (c > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!make)
		return NULL;
	n->per_ns = sp_vec_fit(n->per_ns, n->n_ns + 1, &n->cap_ns, sizeof(*n->per_ns));
	memmove(&n->per_ns[lo + 1], &n->per_ns[lo], (n->n_ns - lo) * sizeof(*n->per_ns));
	n->n_ns++;
	n->per_ns[lo] = (struct ns_count){0};
	memcpy(n->per_ns[lo].ns, ns, len);
	return &n->per_ns[lo];
}

/* Under the lock: whether an unclaimed notice of namespace ns (len bytes) has room. The
 * home namespace has no share of its own: its creators are trusted by every pool, and
 * every notice of hosts outside Kubernetes lands there (a wave of them before the pools'
 * first passes must not wait for a relist). */
static bool room_for(struct notices *n, const char *ns, size_t len)
{
	const struct ns_count *c = ns_slot(n, ns, len, false);
	const char *home = n->cfg.home_namespace;
	bool is_home = home && strlen(home) == len && strncmp(home, ns, len) == 0;
	return n->unclaimed < NOTICES_UNCLAIMED_MAX && (is_home || !c || c->n < NOTICES_NAMESPACE_MAX);
}

/* Under the lock: whether a new notice of instance id in namespace ns (ns_len bytes) is
 * kept, and if so whether unclaimed. A notice of an instance that a pool trusting its
 * namespace asked about (a real instance of that pool) is kept whatever other
 * namespaces hold: only the unclaimed ones (made-up IDs, or a pool's first pass still to
 * come) share the bounded room, NOTICES_NAMESPACE_MAX of each namespace. At most
 * NOTICES_INSTANCE_MAX of one instance in one namespace (a moved deadline is a second). */
static bool admit(struct notices *n, const char *id, const char *ns, size_t ns_len, bool *ret_unclaimed)
{
	bool found;
	size_t same = 0;
	for (size_t k = locate(n, id, "", &found); k < n->n && strcmp(n->v[k].instance_id, id) == 0; k++)
		same += n->v[k].ns_len == ns_len && strncmp(n->v[k].key, ns, ns_len) == 0;
	if (same >= NOTICES_INSTANCE_MAX)
		return false;
	struct strv pools = {0};
	claiming(n, id, ns, ns_len, &pools);
	*ret_unclaimed = pools.n == 0;
	strv_clear(&pools);
	return !*ret_unclaimed || room_for(n, ns, ns_len);
}

/* Under the lock. */
static void drop(struct notices *n, size_t i, struct strv *changed)
{
	struct ns_count *c = n->v[i].unclaimed ? ns_slot(n, n->v[i].key, n->v[i].ns_len, false) : NULL;
	n->unclaimed -= n->v[i].unclaimed;
	if (c && --c->n == 0) {
		size_t at = (size_t)(c - n->per_ns);
		memmove(c, c + 1, (n->n_ns - at - 1) * sizeof(*n->per_ns));
		n->n_ns--;
	}
	claimants(n, &n->v[i], changed);
	free(n->v[i].key);
	memmove(&n->v[i], &n->v[i + 1], (n->n - i - 1) * sizeof(*n->v));
	n->n--;
	n->v = sp_vec_fit(n->v, n->n, &n->cap, sizeof(*n->v));
}

/* Under the lock: drops the notice of key whatever its instance (a linear scan: only
 * for an object that no longer reads as a notice). */
static void drop_key(struct notices *n, const char *key, struct strv *changed)
{
	for (size_t i = 0; i < n->n; i++)
		if (strcmp(n->v[i].key, key) == 0) {
			drop(n, i, changed);
			return;
		}
}

/* A notice from obj (key its "<namespace>/<name>"): its instance and claimed deadline
 * (bounded once kept, as a Node's: doom.h). */
static int read_notice(const cJSON *obj, const char *key, struct notice *ret, struct sp_error *err)
{
	if (agent_notice_read(obj, ret->instance_id, &ret->claimed, err) < 0)
		return SP_EPROTO;
	ret->ns_len = (size_t)(strchr(key, '/') - key);
	return 0;
}

/* Whether notices of namespace ns may count for a pool: the home namespace's, or one
 * where a pool lives (cfg.namespace_wanted). Without the cache's lock. */
static bool wanted(const struct notices *n, const char *ns)
{
	const char *home = n->cfg.home_namespace;
	return !n->cfg.namespace_wanted || (home && strcmp(home, ns) == 0) ||
	       n->cfg.namespace_wanted(n->cfg.userdata, ns);
}

/* Under the lock: watcher w skipped a notice of instance id in namespace ns: noted as
 * "ns/id", or once a namespace has SKIPPED_NAMESPACE_MAX of those, as "ns/" (some
 * instance of ns: kept once its namespace has room). */
static void skipped(struct watcher *w, const char *ns, const char *id)
{
	size_t of_ns = 0, len = strlen(ns);
	for (size_t i = 0; i < w->skipped.n; i++)
		of_ns += strncmp(w->skipped.v[i], ns, len) == 0 && w->skipped.v[i][len] == '/';
	char *entry = xasprintf("%s/%s", ns, of_ns < SKIPPED_NAMESPACE_MAX ? id : "");
	if (!strv_contains(&w->skipped, entry)) {
		if (w->skipped.n < NOTICES_SKIPPED_MAX)
			strv_push(&w->skipped, entry);
		else
			w->skipped_more = true;
	}
	free(entry);
}

/* quiet: a relist's item, said at debug level (the first list or the event said it). */
static void apply(struct notices *n, size_t i, const char *type, const cJSON *obj, bool quiet)
{
	char *key = informer_key(obj);
	if (!key || i >= n->n_w) {
		free(key);
		return;
	}
	struct notice v = {.watcher = i};
	struct sp_error err = {0};
	bool readable = read_notice(obj, key, &v, &err) == 0, found = false;
	bool deleted = strcmp(type, "DELETED") == 0;
	if (readable && v.ns_len >= NS_MAX) {
		readable = false;
		sp_fail(&err, SP_EPROTO, "its namespace is longer than %d", NS_MAX - 1);
	}
	if (!readable && !deleted)
		log_msg(quiet ? LOG_LVL_DEBUG : LOG_LVL_WARN, AGENT_NOTICE_KIND " %s ignored: %s", key, err.msg);
	char ns[NS_MAX] = "";
	if (readable)
		memcpy(ns, key, v.ns_len);
	bool want = readable && !deleted && wanted(n, ns), unclaimed = false;
	struct strv changed = {0};
	pthread_mutex_lock(&n->lock);
	size_t at = readable ? locate(n, v.instance_id, key, &found) : 0;
	if (found && !deleted) {
		n->v[at].listed = n->w[i].list_seq;  /* the spec cannot change (the CRD says so) */
	} else if (found) {
		drop(n, at, &changed);
	} else {
		drop_key(n, key, &changed);  /* a spec that changed after all, or is unreadable now */
		if (readable && !deleted && !want) {
			skipped(&n->w[i], ns, v.instance_id);  /* no pool trusts it (yet) */
		} else if (readable && !deleted && !admit(n, v.instance_id, ns, v.ns_len, &unclaimed)) {
			if (!n->told_full)
				log_warn(AGENT_NOTICE_KIND " %s ignored, and any more like it until some go: %d of its "
					 "instance in its namespace, or (no pool there has asked about the instance) %d "
					 "such in its namespace or %d in all", key, NOTICES_INSTANCE_MAX,
					 NOTICES_NAMESPACE_MAX, NOTICES_UNCLAIMED_MAX);
			n->told_full = true;
			skipped(&n->w[i], ns, v.instance_id);
		} else if (readable && !deleted) {
			n->told_full = false;
			v.unclaimed = unclaimed;
			n->unclaimed += unclaimed;
			if (unclaimed)
				ns_slot(n, ns, v.ns_len, true)->n++;
			at = locate(n, v.instance_id, key, &found);
			n->v = sp_vec_fit(n->v, n->n + 1, &n->cap, sizeof(*n->v));
			memmove(&n->v[at + 1], &n->v[at], (n->n - at) * sizeof(*n->v));
			n->n++;
			v.key = key;
			key = NULL;
			v.listed = n->w[i].list_seq;
			/* First seen now, on our clock: the bound runs from here. */
			v.at = doom_deadline(v.claimed, n->clock->now(n->clock->ctx));
			n->v[at] = v;
			claimants(n, &n->v[at], &changed);
		}
	}
	pthread_mutex_unlock(&n->lock);
	claims_tell(&changed, n->cfg.changed, n->cfg.userdata);
	free(key);
}

void notices_apply_event(struct notices *n, size_t i, const char *type, const cJSON *obj)
{
	apply(n, i, type, obj, false);
}

static void on_begin_list(void *ud)
{
	struct watcher *w = ud;
	pthread_mutex_lock(&w->owner->lock);
	w->list_seq++;
	strv_clear(&w->skipped);
	w->skipped_more = false;
	pthread_mutex_unlock(&w->owner->lock);
}

/* Whether a notice watcher w skipped would be kept now (a pool came to its namespace, a
 * pool there asked about its instance, or room came): a relist brings it (the watch does
 * not bring an object again). */
static bool relist_wanted(struct notices *n, struct watcher *w)
{
	struct strv skips = {0};
	pthread_mutex_lock(&n->lock);
	bool more = w->skipped_more && n->unclaimed < NOTICES_UNCLAIMED_MAX;
	for (size_t i = 0; i < w->skipped.n; i++)
		strv_push(&skips, w->skipped.v[i]);
	pthread_mutex_unlock(&n->lock);
	for (size_t i = 0; i < skips.n && !more; i++) {
		char *id = strchr(skips.v[i], '/');
		*id++ = '\0';
		if (!wanted(n, skips.v[i]))
			continue;
		bool unclaimed;
		pthread_mutex_lock(&n->lock);
		more = admit(n, id, skips.v[i], strlen(skips.v[i]), &unclaimed);
		pthread_mutex_unlock(&n->lock);
	}
	strv_clear(&skips);
	return more;
}

static void on_item(void *ud, const cJSON *obj)
{
	struct watcher *w = ud;
	apply(w->owner, w->index, "ADDED", obj, atomic_load(&w->lw.synced));
}

/* Forgets watcher w's notices that its last list did not hold, or all of them. */
static void forget(struct notices *n, const struct watcher *w, bool all)
{
	struct strv changed = {0};
	pthread_mutex_lock(&n->lock);
	for (size_t i = 0; i < n->n;) {
		if (n->v[i].watcher == w->index && (all || n->v[i].listed != w->list_seq))
			drop(n, i, &changed);
		else
			i++;
	}
	pthread_mutex_unlock(&n->lock);
	claims_tell(&changed, n->cfg.changed, n->cfg.userdata);
}

/* A complete list: the notices of this watcher's scope it did not hold are gone, and
 * finds need not wait for this watcher any more (its watch runs for minutes). */
static void on_end_list(void *ud, bool complete)
{
	struct watcher *w = ud;
	if (!complete)
		return;
	atomic_store(&w->settled, true);
	forget(w->owner, w, false);
}

static void on_event(void *ud, const char *type, const cJSON *obj)
{
	struct watcher *w = ud;
	notices_apply_event(w->owner, w->index, type, obj);
}

/* Deletes watcher w's notices NOTICES_KEEP_SECONDS past their deadline (the leader
 * only, leadership checked before each, never in dry-run, and not once a stop is
 * requested), at most NOTICES_DELETES_PER_ROUND, NOTICES_DELETE_GAP_MS apart; the watch
 * then brings their DELETED events. A deletion RBAC refuses is said once and not tried
 * again before the next list. */
static void collect(struct notices *n, struct watcher *w, const struct kube_api *api)
{
	if (n->cfg.read_only || sp_deadline_left_ms(n->cfg.active_until_ms) <= 0 ||
	    w->delete_refused_seq == w->list_seq)
		return;
	struct strv expired = {0};
	int64_t now = n->clock->now(n->clock->ctx);
	pthread_mutex_lock(&n->lock);
	for (size_t i = 0; i < n->n; i++)
		if (n->v[i].watcher == w->index && doom_earliest(n->v[i].claimed, n->v[i].at) + NOTICES_KEEP_SECONDS < now)
			strv_push(&expired, n->v[i].key);
	pthread_mutex_unlock(&n->lock);
	for (size_t i = 0; i < expired.n && i < NOTICES_DELETES_PER_ROUND; i++) {
		if ((i && stop_wait_ms(&n->stop, NOTICES_DELETE_GAP_MS)) || stop_requested(&n->stop) ||
		    sp_deadline_left_ms(n->cfg.active_until_ms) <= 0)
			break;
		char *name = strchr(expired.v[i], '/');
		*name++ = '\0';
		char *path = xasprintf("/apis/" POOL_API_VERSION "/namespaces/%s/" AGENT_NOTICE_PLURAL "/%s", expired.v[i],
				       name);
		struct sp_error err = {0};
		int r = api->request(api->ctx, "DELETE", path, NULL, NULL, NULL, &err);
		free(path);
		if (r == SP_EFORBIDDEN) {
			if (!w->told_delete)
				log_error("the controller may not delete spotnotices (RBAC): expired notices stay "
					  "(docs/notice-agent.md#spotnotices): %s", err.msg);
			w->told_delete = true;
			w->delete_refused_seq = w->list_seq;
			break;
		}
		if (r < 0 && r != SP_ENOTFOUND)
			log_warn("cannot delete the expired " AGENT_NOTICE_KIND " %s/%s: %s", expired.v[i], name, err.msg);
	}
	strv_clear(&expired);
}

int64_t notices_round(struct notices *n, size_t i, const struct kube_api *api)
{
	struct watcher *w = &n->w[i];
	const char *scope = w->namespace ? w->namespace : "all namespaces";
	const struct informer_lw_ops ops = {
		.kind = AGENT_NOTICE_PLURAL, .scope = scope, .path = w->path, .begin_list = on_begin_list,
		.item = on_item, .end_list = on_end_list, .event = on_event, .userdata = w,
		.owner_says_refusals = true, .page_limit = NOTICES_PAGE_LIMIT,
	};
	/* The first list waits (at most NOTICES_LIST_PATIENCE_SECONDS) for the pools to be
	 * listed: it keeps only the notices of namespaces where pools are. */
	int64_t now = n->clock->mono_ms(n->clock->ctx);
	if (!w->first_round_ms)
		w->first_round_ms = now;
	if (n->cfg.pools_listed && !atomic_load(&w->lw.synced) && !n->cfg.pools_listed(n->cfg.userdata) &&
	    now - w->first_round_ms < NOTICES_LIST_PATIENCE_SECONDS * 1000LL)
		return 200;
	int64_t delay = informer_lw_round(&w->lw, &ops, api, &n->stop);
	int e = w->lw.list_error;
	if (e == SP_EFORBIDDEN || e == SP_ENOTFOUND) {
		if (w->told != e)
			log_error("%s (%s): reclaim notices of hosts that are not Nodes stay unknown until it "
				  "works (docs/notice-agent.md#spotnotices)",
				  e == SP_EFORBIDDEN ? "the controller may not list, watch and delete spotnotices (RBAC)"
						     : "the SpotNotice CRD is not installed (crds/spotnotice.yaml)",
				  scope);
		w->told = e;
		atomic_store(&w->settled, true);
		/* Revoked or deleted after earlier lists: what they held may be withdrawn. */
		forget(n, w, true);
		return delay;
	}
	if (e < 0) {
		now = n->clock->mono_ms(n->clock->ctx);
		if (!w->failing)
			w->failing_since_ms = now;
		w->failing = true;
		if (!atomic_load(&w->settled) && now - w->failing_since_ms >= NOTICES_LIST_PATIENCE_SECONDS * 1000LL) {
			log_error("cannot list spotnotices (%s) for %d s: reclaim notices of hosts that are not Nodes are "
				  "off until it works, excess is scaled down meanwhile", scope, NOTICES_LIST_PATIENCE_SECONDS);
			w->told = e;
			atomic_store(&w->settled, true);
		}
		return delay;
	}
	w->failing = false;
	if (atomic_load(&w->lw.synced)) {
		if (w->told)
			log_info("listed spotnotices (%s): reclaim notices of hosts that are not Nodes are read", scope);
		w->told = 0;
		collect(n, w, w->writer ? w->writer : api);
		if (relist_wanted(n, w)) {
			log_debug("relisting spotnotices (%s): a notice skipped before would be kept now", scope);
			w->lw.need_list = true;
		}
	}
	return delay;
}

static void *watcher_main(void *arg)
{
	struct watcher *w = arg;
	struct notices *n = w->owner;
	struct kube_api api = n->cfg.api_new(n->cfg.userdata), writer = {0};
	if (n->cfg.writer_new) {
		writer = n->cfg.writer_new(n->cfg.userdata);
		w->writer = &writer;
	}
	while (!stop_requested(&n->stop))
		stop_wait_ms(&n->stop, notices_round(n, w->index, &api));
	if (w->writer)
		n->cfg.api_free(n->cfg.userdata, &writer);
	w->writer = NULL;
	n->cfg.api_free(n->cfg.userdata, &api);
	return NULL;
}

int notices_start(struct notices *n, struct sp_error *err)
{
	for (size_t i = 0; i < n->n_w; i++) {
		if (pthread_create(&n->w[i].thread, NULL, watcher_main, &n->w[i]) != 0) {
			notices_stop(n);
			return sp_fail(err, SP_EIO, "cannot start a SpotNotice watcher thread");
		}
		n->w[i].running = true;
	}
	return 0;
}

void notices_stop(struct notices *n)
{
	stop_request(&n->stop);
	for (size_t i = 0; i < n->n_w; i++) {
		if (n->w[i].running)
			pthread_join(n->w[i].thread, NULL);
		n->w[i].running = false;
	}
}

void notices_free(struct notices *n)
{
	if (!n)
		return;
	notices_stop(n);
	for (size_t i = 0; i < n->n_w; i++) {
		free(n->w[i].namespace);
		free(n->w[i].path);
		strv_clear(&n->w[i].skipped);
	}
	free(n->w);
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i].key);
	free(n->v);
	free(n->per_ns);
	claims_free(&n->claims);
	pthread_mutex_destroy(&n->lock);
	stop_destroy(&n->stop);
	free(n);
}

bool notices_synced(const struct notices *n)
{
	for (size_t i = 0; i < n->n_w; i++)
		if (!atomic_load(&n->w[i].lw.synced))
			return false;
	return true;
}

bool notices_healthy(const struct notices *n, int64_t max_quiet_ms)
{
	for (size_t i = 0; i < n->n_w; i++)
		if (!informer_lw_healthy(&n->w[i].lw, max_quiet_ms))
			return false;
	return true;
}

size_t notices_count(struct notices *n)
{
	pthread_mutex_lock(&n->lock);
	size_t count = n->n;
	pthread_mutex_unlock(&n->lock);
	return count;
}

int notices_find(struct notices *n, const char *pool, const char *const *ids, size_t n_ids, int64_t *ret_at)
{
	int r = 0;
	for (size_t i = 0; i < n->n_w; i++)
		if (!atomic_load(&n->w[i].settled))
			r = SP_ETRANSIENT;
	pthread_mutex_lock(&n->lock);
	struct claim *c = claims_renew(&n->claims, pool);
	for (size_t i = 0; i < n_ids; i++) {
		ret_at[i] = 0;
		if (!ids[i] || !*ids[i])
			continue;
		strv_push(&c->ids, ids[i]);
		bool found;
		for (size_t k = locate(n, ids[i], "", &found); r == 0 && k < n->n; k++) {
			const struct notice *v = &n->v[k];
			if (strcmp(v->instance_id, ids[i]) != 0)
				break;
			if (trusted(n, pool, v->key, v->ns_len))
				ret_at[i] = doom_earliest(ret_at[i], v->at);
		}
	}
	pthread_mutex_unlock(&n->lock);
	return r;
}

void notices_forget(struct notices *n, const char *pool)
{
	pthread_mutex_lock(&n->lock);
	claims_forget(&n->claims, pool);
	pthread_mutex_unlock(&n->lock);
}
