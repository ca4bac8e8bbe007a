/* informer: list + watch into a cache of Spotpools; see informer.h. */
#include "informer.h"
#include "http.h"
#include "log.h"
#include "pool.h"
#include "stop.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <limits.h>
#include <string.h>
#include <zlib.h>

#define INFORMER_WATCH_TIMEOUT_SECONDS 300
#define INFORMER_RECONNECT_MAX_MS 30000
#define INFORMER_THROTTLED_INFO_MS 2000

/* The latest version of a pool, kept as compact JSON text, deflated: the cache is most
 * of what the controller holds per pool (a pool of 10 instances is 3.2 KB of JSON, 0.9 KB
 * deflated; as a parsed tree it would be several times the text). A pass inflates its
 * pool once, in microseconds. */
struct cached_pool {
	char *key;
	unsigned char *packed;
	size_t packed_len, json_len;
	char rv[64];
	char uid[64];
	int64_t generation;
	bool deleting;
	int live;
};

struct watcher {
	struct informer *inf;
	char *namespace;      /* NULL: all namespaces */
	pthread_t thread;
	struct informer_lw lw;
	struct strv listed;   /* the keys of the list in progress */
};

/* Uids whose DELETED event was seen: a lagging or replayed event of such an object
 * must not bring it back. A ring of the latest deletions is enough, since replays only
 * reach back a few minutes. */
#define INFORMER_TOMBSTONES 256

struct informer {
	struct informer_config cfg;
	const struct sp_clock *clock;
	pthread_mutex_t lock;
	struct cached_pool *pools;
	size_t n_pools, cap_pools;
	char tombstones[INFORMER_TOMBSTONES][64];
	size_t next_tombstone;
	struct watcher *watchers;
	size_t n_watchers, running;
	struct stop stop;  /* informer_stop: ends watches and reconnect waits at once */
};

char *informer_key(const cJSON *obj)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
	if (!cJSON_IsString(ns) || !cJSON_IsString(name))
		return NULL;
	return xasprintf("%s/%s", ns->valuestring, name->valuestring);
}

const char *informer_resource_version(const cJSON *obj)
{
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
	return cJSON_IsString(rv) ? rv->valuestring : "";
}

static const char *uid_of(const cJSON *obj)
{
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "uid");
	return cJSON_IsString(uid) ? uid->valuestring : "";
}

/* A resourceVersion as a number; false when it is not a plain decimal uint64. */
static bool rv_parse(const char *s, unsigned long long *ret)
{
	unsigned long long v = 0;
	if (!s || !*s || strlen(s) > 20)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		unsigned d = (unsigned)(*s - '0');
		if (v > (ULLONG_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*ret = v;
	return true;
}

bool informer_rv_newer(const char *cached, const char *incoming)
{
	unsigned long long c, i;
	if (!rv_parse(cached, &c) || !rv_parse(incoming, &i))
		return true;  /* opaque versions: take the event, as client-go does */
	return i > c;
}

struct informer *informer_new(const struct informer_config *cfg)
{
	struct informer *inf = xcalloc(1, sizeof(*inf));
	inf->cfg = *cfg;
	inf->clock = cfg->clock ? cfg->clock : &sp_clock_system;
	pthread_mutex_init(&inf->lock, NULL);
	const struct strv *ns = cfg->namespaces;
	size_t n = ns && ns->n ? ns->n : 1;
	inf->watchers = xcalloc(n, sizeof(*inf->watchers));
	inf->n_watchers = n;
	for (size_t i = 0; i < n; i++) {
		struct watcher *w = &inf->watchers[i];
		w->inf = inf;
		w->namespace = ns && ns->n ? xstrdup(ns->v[i]) : NULL;
		informer_lw_init(&w->lw, inf->clock);
	}
	stop_init(&inf->stop);
	return inf;
}

static struct cached_pool *find(struct informer *inf, const char *key)
{
	for (size_t i = 0; i < inf->n_pools; i++)
		if (strcmp(inf->pools[i].key, key) == 0)
			return &inf->pools[i];
	return NULL;
}

/* Stores obj under the lock, without what nobody here reads: managedFields and the
 * copy of the manifest kubectl apply keeps in an annotation. */
static void store(struct cached_pool *p, const cJSON *obj)
{
	cJSON *copy = cJSON_Duplicate(obj, 1);
	cJSON *md = cJSON_GetObjectItemCaseSensitive(copy, "metadata");
	cJSON_DeleteItemFromObject(md, "managedFields");
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(md, "annotations"),
						"kubectl.kubernetes.io/last-applied-configuration");
	char *json = cJSON_PrintUnformatted(copy);
	cJSON_Delete(copy);
	size_t len = strlen(json);
	uLongf packed_len = compressBound(len);
	unsigned char *packed = xmalloc(packed_len);
	if (compress2(packed, &packed_len, (const Bytef *)json, len, Z_BEST_SPEED) != Z_OK)
		abort();  /* only on a bad buffer size or out of memory */
	free(json);
	free(p->packed);
	p->packed = xrealloc(packed, packed_len);
	p->packed_len = packed_len;
	p->json_len = len;
	snprintf(p->rv, sizeof(p->rv), "%s", informer_resource_version(obj));
	snprintf(p->uid, sizeof(p->uid), "%s", uid_of(obj));
}

/* Under the lock. */
static bool tombstoned(const struct informer *inf, const char *uid)
{
	if (!*uid)
		return false;
	for (size_t i = 0; i < INFORMER_TOMBSTONES; i++)
		if (strcmp(inf->tombstones[i], uid) == 0)
			return true;
	return false;
}

/* The cached object, parsed; called under the lock. */
static cJSON *unpack(const struct cached_pool *p)
{
	char *json = xmalloc(p->json_len + 1);
	uLongf len = p->json_len;
	cJSON *obj = NULL;
	if (uncompress((Bytef *)json, &len, p->packed, p->packed_len) == Z_OK && len == p->json_len) {
		json[len] = '\0';
		obj = cJSON_Parse(json);
	}
	free(json);
	return obj;
}

/* Records an object unless the cache already holds a newer version of it (a lagging
 * watch, a reconnect replaying from an older resourceVersion) or it was deleted; a
 * different uid is a recreated object and always replaces. Returns whether reconcile
 * should look at it at once (new, spec changed, or deletion started). Status-only
 * updates, most of them ours, only refresh the cache. */
/* What makes a version worth a pass at once: its generation and whether it is deleting. */
static void read_marks(const cJSON *obj, int64_t *ret_generation, bool *ret_deleting)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	*ret_generation = pool_json_int64(cJSON_GetObjectItemCaseSensitive(md, "generation"));
	*ret_deleting = cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp") != NULL;
}

static bool remember(struct informer *inf, const char *key, const cJSON *obj)
{
	int64_t generation;
	bool deleting;
	read_marks(obj, &generation, &deleting);
	const char *uid = uid_of(obj);
	pthread_mutex_lock(&inf->lock);
	if (tombstoned(inf, uid)) {
		pthread_mutex_unlock(&inf->lock);
		return false;
	}
	struct cached_pool *p = find(inf, key);
	bool changed = true;
	if (p) {
		bool same_object = !*uid || !*p->uid || strcmp(uid, p->uid) == 0;
		if (same_object && !informer_rv_newer(p->rv, informer_resource_version(obj))) {
			pthread_mutex_unlock(&inf->lock);
			return false;
		}
		changed = !same_object || p->generation != generation || p->deleting != deleting;
	} else {
		inf->pools = sp_vec_fit(inf->pools, inf->n_pools + 1, &inf->cap_pools, sizeof(*inf->pools));
		p = &inf->pools[inf->n_pools++];
		*p = (struct cached_pool){.key = xstrdup(key), .live = -1};
	}
	p->generation = generation;
	p->deleting = deleting;
	store(p, obj);
	pthread_mutex_unlock(&inf->lock);
	return changed;
}

static void drop(struct informer *inf, size_t i)
{
	free(inf->pools[i].key);
	free(inf->pools[i].packed);
	inf->pools[i] = inf->pools[--inf->n_pools];
	inf->pools = sp_vec_fit(inf->pools, inf->n_pools, &inf->cap_pools, sizeof(*inf->pools));
}

/* A deletion is final for its uid: it drops the cached object of that uid whatever the
 * versions, and tombstones the uid. A DELETED of another uid than the cached one drops
 * it only when newer (the cached object predates it); an older one is about a previous
 * incarnation and leaves the recreated object alone. Returns whether a pool was dropped. */
static bool forget(struct informer *inf, const char *key, const cJSON *obj)
{
	const char *uid = uid_of(obj);
	bool dropped = false;
	pthread_mutex_lock(&inf->lock);
	if (*uid && !tombstoned(inf, uid)) {
		snprintf(inf->tombstones[inf->next_tombstone], sizeof(inf->tombstones[0]), "%s", uid);
		inf->next_tombstone = (inf->next_tombstone + 1) % INFORMER_TOMBSTONES;
	}
	for (size_t i = 0; i < inf->n_pools; i++)
		if (strcmp(inf->pools[i].key, key) == 0) {
			struct cached_pool *p = &inf->pools[i];
			bool same_object = !*uid || !*p->uid || strcmp(uid, p->uid) == 0;
			if (same_object || informer_rv_newer(p->rv, informer_resource_version(obj))) {
				drop(inf, i);
				dropped = true;
			}
			break;
		}
	pthread_mutex_unlock(&inf->lock);
	return dropped;
}

static bool in_scope(const struct watcher *w, const char *key)
{
	size_t n = w->namespace ? strlen(w->namespace) : 0;
	return !w->namespace || (strncmp(key, w->namespace, n) == 0 && key[n] == '/');
}

/* After a relist, pools of this watcher's scope that were not listed are gone. */
static void forget_unlisted(struct watcher *w, const struct strv *listed)
{
	struct informer *inf = w->inf;
	struct strv gone = {0};
	pthread_mutex_lock(&inf->lock);
	for (size_t i = 0; i < inf->n_pools;) {
		if (in_scope(w, inf->pools[i].key) && !strv_contains(listed, inf->pools[i].key)) {
			strv_push(&gone, inf->pools[i].key);
			drop(inf, i);
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&inf->lock);
	for (size_t i = 0; i < gone.n; i++)
		inf->cfg.deleted(inf->cfg.userdata, gone.v[i]);
	strv_clear(&gone);
}

static char *collection_path(const struct watcher *w)
{
	if (w->namespace)
		return xasprintf("/apis/%s/namespaces/%s/spotpools", POOL_API_VERSION, w->namespace);
	return xstrdup("/apis/" POOL_API_VERSION "/spotpools");
}

void informer_lw_init(struct informer_lw *lw, const struct sp_clock *clock)
{
	*lw = (struct informer_lw){.clock = clock ? clock : &sp_clock_system, .need_list = true};
	atomic_store(&lw->heartbeat_ms, lw->clock->mono_ms(lw->clock->ctx));
}

static void set_resource_version(struct informer_lw *lw, const cJSON *obj)
{
	if (!lw)
		return;
	const char *rv = informer_resource_version(obj);
	if (*rv && strlen(rv) < sizeof(lw->resource_version))
		snprintf(lw->resource_version, sizeof(lw->resource_version), "%s", rv);
}

int informer_list(struct informer_lw *lw, const struct informer_lw_ops *ops, const struct kube_api *api,
		  struct sp_error *err)
{
	char *cont = NULL;
	int r;
	ops->begin_list(ops->userdata);
	do {
		char *esc = cont ? kube_escape(cont) : NULL;
		char *path = xasprintf("%s?limit=%d%s%s", ops->path, ops->page_limit > 0 ? ops->page_limit : 500,
				       esc ? "&continue=" : "", esc ? esc : "");
		free(esc);
		cJSON *list = NULL;
		r = kube_api_get(api, path, &list, err);
		free(path);
		free(cont);
		cont = NULL;
		if (r < 0)
			break;
		const cJSON *item;
		cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "items"))
			ops->item(ops->userdata, item);
		set_resource_version(lw, list);
		const cJSON *next = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(list, "metadata"), "continue");
		if (cJSON_IsString(next) && *next->valuestring)
			cont = xstrdup(next->valuestring);
		cJSON_Delete(list);
	} while (cont);
	ops->end_list(ops->userdata, r == 0);
	return r;
}

struct watch_ctx {
	struct informer_lw *lw;
	const struct informer_lw_ops *ops;
	bool gone;  /* the server said our resourceVersion is too old */
};

static int on_event(void *ud, const char *type, cJSON *obj)
{
	struct watch_ctx *ctx = ud;
	struct informer_lw *lw = ctx->lw;
	atomic_store(&lw->heartbeat_ms, lw->clock->mono_ms(lw->clock->ctx));
	if (strcmp(type, "ERROR") == 0) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
		ctx->gone = cJSON_IsNumber(code) && code->valueint == 410;
		return 1;
	}
	set_resource_version(lw, obj);
	if (strcmp(type, "BOOKMARK") != 0)
		ctx->ops->event(ctx->ops->userdata, type, obj);
	return 0;
}

/* How a failed list or a watch that ended (r) is logged, delay_ms the backoff it now
 * waits: a warning, but not once the process is shutting down (http_abort_all cut it,
 * before the owner's own stop comes in ctl_stop's order, or the apiserver went with the
 * same Ctrl-C: our stop, not a loss), nor while the apiserver asks us to come back
 * (429, as while its cache of a CRD just created initializes) for the first tries
 * (info up to the 2 s backoff, then a warning as it goes on). */
static enum log_level loss_level(int r, int64_t delay_ms)
{
	if (http_aborting())
		return LOG_LVL_DEBUG;
	return r == SP_ETHROTTLED && delay_ms <= INFORMER_THROTTLED_INFO_MS ? LOG_LVL_INFO : LOG_LVL_WARN;
}

static int64_t next_delay(int64_t delay)
{
	return delay ? (delay * 2 < INFORMER_RECONNECT_MAX_MS ? delay * 2 : INFORMER_RECONNECT_MAX_MS) : 500;
}

int64_t informer_lw_round(struct informer_lw *lw, const struct informer_lw_ops *ops, const struct kube_api *api,
			  const struct stop *stop)
{
	const struct sp_clock *clock = lw->clock;
	atomic_store(&lw->heartbeat_ms, clock->mono_ms(clock->ctx));
	struct sp_error err = {0};
	if (lw->need_list) {
		lw->list_error = informer_list(lw, ops, api, &err);
		if (lw->list_error < 0) {
			lw->delay_ms = next_delay(lw->delay_ms);
			bool refused = lw->list_error == SP_EFORBIDDEN || lw->list_error == SP_ENOTFOUND;
			log_msg(ops->owner_says_refusals && refused ? LOG_LVL_DEBUG
								     : loss_level(lw->list_error, lw->delay_ms),
				"list %s (%s) failed, retrying in %lld ms: %s", ops->kind, ops->scope,
				(long long)lw->delay_ms, err.msg);
			return lw->delay_ms;
		}
		lw->need_list = false;
		if (!atomic_exchange(&lw->synced, true))
			log_info("listed %s in %s (resourceVersion %s)", ops->kind, ops->scope, lw->resource_version);
	}
	char *path = xasprintf("%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s",
			       ops->path, INFORMER_WATCH_TIMEOUT_SECONDS, lw->resource_version);
	struct watch_ctx ctx = {.lw = lw, .ops = ops};
	int64_t started = clock->mono_ms(clock->ctx);
	int r = api->watch(api->ctx, path, (INFORMER_WATCH_TIMEOUT_SECONDS + 30) * 1000L, on_event, &ctx, stop,
			   &err);
	free(path);
	if (stop && stop_requested(stop))
		return 0;
	if (ctx.gone || r == SP_EGONE) {
		log_info("watch %s (%s): resourceVersion %s expired, relisting", ops->kind, ops->scope,
			 lw->resource_version);
		lw->need_list = true;
		return 0;
	}
	if (r == 0 && clock->mono_ms(clock->ctx) - started > 1000) {
		lw->delay_ms = 0;  /* a normal server-side timeout: watch again at once */
		return 0;
	}
	lw->delay_ms = next_delay(lw->delay_ms);
	log_msg(loss_level(r, lw->delay_ms), "watch %s (%s) ended: %s; reconnecting in %lld ms", ops->kind,
		ops->scope, r < 0 ? err.msg : "closed early", (long long)lw->delay_ms);
	return lw->delay_ms;
}

bool informer_lw_healthy(const struct informer_lw *lw, int64_t max_quiet_ms)
{
	return lw->clock->mono_ms(lw->clock->ctx) - atomic_load(&lw->heartbeat_ms) <= max_quiet_ms;
}

static void pools_begin_list(void *ud)
{
	struct watcher *w = ud;
	strv_clear(&w->listed);
}

static void pools_item(void *ud, const cJSON *item)
{
	struct watcher *w = ud;
	struct informer *inf = w->inf;
	char *key = informer_key(item);
	if (!key)
		return;
	/* A relist must not cut a failing pool's backoff short; a change still runs at once. */
	bool changed = remember(inf, key, item);
	if (inf->cfg.seen)
		inf->cfg.seen(inf->cfg.userdata, key, item);
	inf->cfg.enqueue(inf->cfg.userdata, key, changed);
	strv_push(&w->listed, key);
	free(key);
}

static void pools_end_list(void *ud, bool complete)
{
	struct watcher *w = ud;
	if (complete)
		forget_unlisted(w, &w->listed);
	strv_clear(&w->listed);
}

static void pools_event(void *ud, const char *type, const cJSON *obj)
{
	struct watcher *w = ud;
	informer_apply_event(w->inf, type, obj);
}

void informer_apply_event(struct informer *inf, const char *type, const cJSON *obj)
{
	char *key = informer_key(obj);
	if (!key)
		return;
	if (strcmp(type, "DELETED") == 0) {
		if (forget(inf, key, obj))
			inf->cfg.deleted(inf->cfg.userdata, key);
	} else if (remember(inf, key, obj)) {
		log_debug("watch: %s %s", type, key);
		if (inf->cfg.seen)
			inf->cfg.seen(inf->cfg.userdata, key, obj);
		inf->cfg.enqueue(inf->cfg.userdata, key, true);
	}
	free(key);
}

int64_t informer_round(struct informer *inf, size_t i, const struct kube_api *api)
{
	struct watcher *w = &inf->watchers[i];
	char *path = collection_path(w);
	const struct informer_lw_ops ops = {
		.kind = "spotpools", .scope = w->namespace ? w->namespace : "all namespaces", .path = path,
		.begin_list = pools_begin_list, .item = pools_item, .end_list = pools_end_list,
		.event = pools_event, .userdata = w,
	};
	int64_t delay = informer_lw_round(&w->lw, &ops, api, &inf->stop);
	free(path);
	return delay;
}

static void *watcher_main(void *arg)
{
	struct watcher *w = arg;
	struct informer *inf = w->inf;
	struct kube_api api = inf->cfg.api_new(inf->cfg.userdata);
	size_t i = (size_t)(w - inf->watchers);
	while (!stop_requested(&inf->stop))
		stop_wait_ms(&inf->stop, informer_round(inf, i, &api));
	inf->cfg.api_free(inf->cfg.userdata, &api);
	return NULL;
}

int informer_start(struct informer *inf, struct sp_error *err)
{
	for (size_t i = 0; i < inf->n_watchers; i++) {
		if (pthread_create(&inf->watchers[i].thread, NULL, watcher_main, &inf->watchers[i]) != 0)
			return sp_fail(err, SP_EIO, "cannot start informer thread");
		inf->running++;
	}
	return 0;
}

void informer_stop(struct informer *inf)
{
	stop_request(&inf->stop);
	for (size_t i = 0; i < inf->running; i++)
		pthread_join(inf->watchers[i].thread, NULL);
	inf->running = 0;
}

void informer_free(struct informer *inf)
{
	if (!inf)
		return;
	informer_stop(inf);
	for (size_t i = 0; i < inf->n_watchers; i++) {
		free(inf->watchers[i].namespace);
		strv_clear(&inf->watchers[i].listed);
	}
	free(inf->watchers);
	while (inf->n_pools)
		drop(inf, inf->n_pools - 1);
	free(inf->pools);
	pthread_mutex_destroy(&inf->lock);
	stop_destroy(&inf->stop);
	free(inf);
}

bool informer_synced(const struct informer *inf)
{
	for (size_t i = 0; i < inf->n_watchers; i++)
		if (!atomic_load(&inf->watchers[i].lw.synced))
			return false;
	return inf->n_watchers > 0;
}

bool informer_healthy(const struct informer *inf, int64_t max_quiet_ms)
{
	for (size_t i = 0; i < inf->n_watchers; i++)
		if (!informer_lw_healthy(&inf->watchers[i].lw, max_quiet_ms))
			return false;
	return true;
}

cJSON *informer_get(struct informer *inf, const char *key)
{
	pthread_mutex_lock(&inf->lock);
	struct cached_pool *p = find(inf, key);
	cJSON *obj = p && p->packed ? unpack(p) : NULL;
	pthread_mutex_unlock(&inf->lock);
	return obj;
}

bool informer_has_namespace(struct informer *inf, const char *ns)
{
	size_t len = strlen(ns);
	bool found = false;
	pthread_mutex_lock(&inf->lock);
	for (size_t i = 0; i < inf->n_pools && !found; i++)
		found = strncmp(inf->pools[i].key, ns, len) == 0 && inf->pools[i].key[len] == '/';
	pthread_mutex_unlock(&inf->lock);
	return found;
}

bool informer_has(struct informer *inf, const char *key)
{
	pthread_mutex_lock(&inf->lock);
	bool known = find(inf, key) != NULL;
	pthread_mutex_unlock(&inf->lock);
	return known;
}

void informer_update(struct informer *inf, const char *key, const char *from_rv, const cJSON *obj)
{
	int64_t generation;
	bool deleting, changed = false;
	read_marks(obj, &generation, &deleting);
	pthread_mutex_lock(&inf->lock);
	struct cached_pool *p = find(inf, key);
	if (p && strcmp(p->rv, from_rv) == 0) {
		/* What the pass wrote may carry a spec edit or a deletion made meanwhile; the
		 * watch events that bring it are then not newer and are dropped, so the pool is
		 * looked at again here. */
		changed = p->generation != generation || p->deleting != deleting;
		p->generation = generation;
		p->deleting = deleting;
		store(p, obj);
	}
	pthread_mutex_unlock(&inf->lock);
	if (changed)
		inf->cfg.enqueue(inf->cfg.userdata, key, true);
}

void informer_keys(struct informer *inf, struct strv *ret)
{
	pthread_mutex_lock(&inf->lock);
	for (size_t i = 0; i < inf->n_pools; i++)
		strv_push(ret, inf->pools[i].key);
	pthread_mutex_unlock(&inf->lock);
}

void informer_note_live(struct informer *inf, const char *key, int live)
{
	pthread_mutex_lock(&inf->lock);
	struct cached_pool *p = find(inf, key);
	if (p)
		p->live = live;
	pthread_mutex_unlock(&inf->lock);
}

void informer_counts(struct informer *inf, size_t *ret_pools, size_t *ret_instances)
{
	size_t n = 0;
	pthread_mutex_lock(&inf->lock);
	*ret_pools = inf->n_pools;
	for (size_t i = 0; i < inf->n_pools; i++)
		n += inf->pools[i].live > 0 ? (size_t)inf->pools[i].live : 0;
	pthread_mutex_unlock(&inf->lock);
	*ret_instances = n;
}
