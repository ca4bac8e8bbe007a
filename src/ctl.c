/* ctl: informers, work queue and workers. */
#include "ctl.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"
#include "reconcile.h"
#include "wq.h"

#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define CTL_WATCH_TIMEOUT_SECONDS 300
#define CTL_RECONNECT_MAX_MS 30000

/* What the informer remembers per pool: enough to skip our own status updates. */
struct known_pool {
	char *key;
	int64_t generation;
	bool deleting;
	int live;  /* live instances at the last describe */
};

struct informer {
	struct ctl *ctl;
	char *namespace;      /* NULL: all namespaces */
	pthread_t thread;
	char resource_version[64];
	atomic_bool synced;
	atomic_llong heartbeat_ms;
};

struct ctl {
	struct ctl_options opt;
	struct wq *queue;
	pthread_mutex_t lock;
	struct known_pool *pools;
	size_t n_pools;
	struct informer *informers;
	size_t n_informers;
	pthread_t *workers;
	struct reconciler *reconcilers;
	atomic_int running_workers;
	volatile sig_atomic_t stopping;
	_Atomic int64_t active_until_ms;
	atomic_bool started;
	size_t informers_running;  /* threads created, for joining */
	int workers_running;
};

struct ctl *ctl_new(const struct ctl_options *opt)
{
	struct ctl *c = xcalloc(1, sizeof(*c));
	c->opt = *opt;
	c->queue = wq_new_with_hooks(&metrics_wq_hooks);
	atomic_store(&c->active_until_ms, INT64_MAX);
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

static char *pool_key(const cJSON *obj)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
	if (!cJSON_IsString(ns) || !cJSON_IsString(name))
		return NULL;
	return xasprintf("%s/%s", ns->valuestring, name->valuestring);
}

/* Records an object; returns whether reconcile should look at it (new, spec changed,
 * or deletion started). Status-only updates, most of them ours, are skipped. */
static bool remember(struct ctl *c, const char *key, const cJSON *obj)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(md, "generation");
	int64_t generation = cJSON_IsNumber(gen) ? (int64_t)gen->valuedouble : 0;
	bool deleting = cJSON_GetObjectItemCaseSensitive(md, "deletionTimestamp") != NULL;
	pthread_mutex_lock(&c->lock);
	struct known_pool *p = NULL;
	for (size_t i = 0; i < c->n_pools && !p; i++)
		if (strcmp(c->pools[i].key, key) == 0)
			p = &c->pools[i];
	bool changed = true;
	if (p) {
		changed = p->generation != generation || p->deleting != deleting;
	} else {
		c->pools = xrealloc(c->pools, (c->n_pools + 1) * sizeof(*c->pools));
		p = &c->pools[c->n_pools++];
		*p = (struct known_pool){.key = xstrdup(key)};
	}
	p->generation = generation;
	p->deleting = deleting;
	pthread_mutex_unlock(&c->lock);
	return changed;
}

static void forget(struct ctl *c, const char *key)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_pools; i++)
		if (strcmp(c->pools[i].key, key) == 0) {
			free(c->pools[i].key);
			c->pools[i] = c->pools[--c->n_pools];
			break;
		}
	pthread_mutex_unlock(&c->lock);
}

static bool pool_in_scope(const struct informer *inf, const char *key)
{
	size_t n = inf->namespace ? strlen(inf->namespace) : 0;
	return !inf->namespace || (strncmp(key, inf->namespace, n) == 0 && key[n] == '/');
}

/* After a relist, pools of this informer's scope that were not listed are gone. */
static void forget_unlisted(struct informer *inf, const struct strv *listed)
{
	struct ctl *c = inf->ctl;
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_pools;) {
		if (pool_in_scope(inf, c->pools[i].key) && !strv_contains(listed, c->pools[i].key)) {
			free(c->pools[i].key);
			c->pools[i] = c->pools[--c->n_pools];
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&c->lock);
}

static char *collection_path(const struct informer *inf)
{
	if (inf->namespace)
		return xasprintf("/apis/%s/namespaces/%s/spotpools", POOL_API_GROUP "/v1", inf->namespace);
	return xstrdup("/apis/" POOL_API_GROUP "/v1/spotpools");
}

static void set_resource_version(struct informer *inf, const cJSON *obj)
{
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "resourceVersion");
	if (cJSON_IsString(rv) && strlen(rv->valuestring) < sizeof(inf->resource_version))
		snprintf(inf->resource_version, sizeof(inf->resource_version), "%s", rv->valuestring);
}

static int list_pools(struct informer *inf, struct kube_client *kc, struct sp_error *err)
{
	char *base = collection_path(inf);
	struct strv listed = {0};
	char *cont = NULL;
	int r;
	do {
		char *esc = cont ? kube_escape(cont) : NULL;
		char *path = xasprintf("%s?limit=500%s%s", base, esc ? "&continue=" : "", esc ? esc : "");
		free(esc);
		cJSON *list = NULL;
		r = kube_get(kc, path, &list, err);
		free(path);
		free(cont);
		cont = NULL;
		if (r < 0)
			break;
		const cJSON *item;
		cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "items")) {
			char *key = pool_key(item);
			if (!key)
				continue;
			/* A relist must not cut a failing pool's backoff short; a change still
			 * runs at once. */
			if (remember(inf->ctl, key, item))
				wq_add(inf->ctl->queue, key, 0);
			else
				wq_add_resync(inf->ctl->queue, key);
			strv_push(&listed, key);
			free(key);
		}
		set_resource_version(inf, list);
		const cJSON *next = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(list, "metadata"), "continue");
		if (cJSON_IsString(next) && *next->valuestring)
			cont = xstrdup(next->valuestring);
		cJSON_Delete(list);
	} while (cont);
	if (r == 0)
		forget_unlisted(inf, &listed);
	strv_clear(&listed);
	free(base);
	return r;
}

struct watch_ctx {
	struct informer *inf;
	bool gone;  /* the server said our resourceVersion is too old */
};

static int on_event(void *ud, const char *type, cJSON *obj)
{
	struct watch_ctx *w = ud;
	struct informer *inf = w->inf;
	atomic_store(&inf->heartbeat_ms, sp_mono_ms());
	if (strcmp(type, "ERROR") == 0) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
		w->gone = cJSON_IsNumber(code) && code->valueint == 410;
		return 1;
	}
	set_resource_version(inf, obj);
	if (strcmp(type, "BOOKMARK") == 0)
		return 0;
	char *key = pool_key(obj);
	if (!key)
		return 0;
	if (strcmp(type, "DELETED") == 0) {
		forget(inf->ctl, key);
		char *slash = strchr(key, '/');
		*slash = '\0';
		metrics_pool_forget(key, slash + 1);
	} else if (remember(inf->ctl, key, obj)) {
		log_debug("watch: %s %s", type, key);
		wq_add(inf->ctl->queue, key, 0);
	}
	free(key);
	return 0;
}

static void sleep_ms(struct ctl *c, int64_t ms)
{
	int64_t until = sp_mono_ms() + ms;
	while (!c->stopping && sp_mono_ms() < until) {
		struct timespec ts = {0, 50 * 1000000};
		nanosleep(&ts, NULL);
	}
}

static void *informer_main(void *arg)
{
	struct informer *inf = arg;
	struct ctl *c = inf->ctl;
	struct kube_client *kc = kube_client_new(c->opt.kube, "spotpool/" SPOTPOOL_VERSION " (informer)");
	char *base = collection_path(inf);
	const char *scope = inf->namespace ? inf->namespace : "all namespaces";
	bool need_list = true;
	int64_t delay = 0;
	while (!c->stopping) {
		atomic_store(&inf->heartbeat_ms, sp_mono_ms());
		struct sp_error err = {0};
		if (need_list) {
			if (list_pools(inf, kc, &err) < 0) {
				delay = delay ? (delay * 2 < CTL_RECONNECT_MAX_MS ? delay * 2 : CTL_RECONNECT_MAX_MS) : 500;
				log_warn("list spotpools (%s) failed, retrying in %lld ms: %s", scope,
					 (long long)delay, err.msg);
				sleep_ms(c, delay);
				continue;
			}
			need_list = false;
			if (!atomic_exchange(&inf->synced, true))
				log_info("listed spotpools in %s (resourceVersion %s)", scope, inf->resource_version);
		}
		char *path = xasprintf("%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s",
				       base, CTL_WATCH_TIMEOUT_SECONDS, inf->resource_version);
		struct watch_ctx w = {.inf = inf};
		int64_t started = sp_mono_ms();
		int r = kube_watch(kc, path, (CTL_WATCH_TIMEOUT_SECONDS + 30) * 1000L, on_event, &w,
				   &c->stopping, &err);
		free(path);
		if (c->stopping)
			break;
		if (w.gone || r == SP_EGONE) {
			log_info("watch (%s): resourceVersion %s expired, relisting", scope, inf->resource_version);
			need_list = true;
			continue;
		}
		if (r == 0 && sp_mono_ms() - started > 1000) {
			delay = 0;  /* a normal server-side timeout: watch again at once */
			continue;
		}
		delay = delay ? (delay * 2 < CTL_RECONNECT_MAX_MS ? delay * 2 : CTL_RECONNECT_MAX_MS) : 500;
		log_warn("watch (%s) ended: %s; reconnecting in %lld ms", scope,
			 r < 0 ? err.msg : "closed early", (long long)delay);
		sleep_ms(c, delay);
	}
	free(base);
	kube_client_free(kc);
	return NULL;
}

static void record_live(void *ud, const char *ns, const char *name, int live)
{
	struct ctl *c = ud;
	size_t nl = strlen(ns);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_pools; i++) {
		const char *k = c->pools[i].key;
		if (strncmp(k, ns, nl) == 0 && k[nl] == '/' && strcmp(k + nl + 1, name) == 0)
			c->pools[i].live = live;
	}
	pthread_mutex_unlock(&c->lock);
}

static void *worker_main(void *arg)
{
	struct reconciler *rc = arg;
	struct ctl *c = rc->userdata;
	char *key;
	atomic_fetch_add(&c->running_workers, 1);
	while (wq_get(c->queue, &key) == 0) {
		char *slash = strchr(key, '/');
		struct reconcile_result res = {0};
		int64_t started = sp_mono_ms();
		if (slash) {
			*slash = '\0';
			reconcile_pool(rc, key, slash + 1, &res);
			*slash = '/';
		}
		metrics_reconcile_observe((double)(sp_mono_ms() - started) / 1000.0, res.error < 0);
		if (res.error < 0) {
			int64_t delay = wq_backoff(c->queue, key);
			log_debug("%s: retrying in %lld ms", key, (long long)delay);
			wq_done(c->queue, key);
			wq_add(c->queue, key, delay);
		} else {
			wq_forget(c->queue, key);
			wq_done(c->queue, key);
			if (res.requeue_ms > 0)
				wq_add(c->queue, key, res.requeue_ms);
		}
		free(key);
	}
	atomic_fetch_sub(&c->running_workers, 1);
	return NULL;
}

int ctl_start(struct ctl *c, struct sp_error *err)
{
	size_t n = c->opt.namespaces.n ? c->opt.namespaces.n : 1;
	int workers = c->opt.workers > 0 ? c->opt.workers : 2;
	c->opt.workers = workers;
	c->informers = xcalloc(n, sizeof(*c->informers));
	c->n_informers = n;
	c->workers = xcalloc((size_t)workers, sizeof(*c->workers));
	c->reconcilers = xcalloc((size_t)workers, sizeof(*c->reconcilers));
	char *ua = xasprintf("spotpool/%s (%s)", SPOTPOOL_VERSION, c->opt.identity ? c->opt.identity : "controller");
	struct cvm_config cvm_cfg = {.endpoint = c->opt.cvm_endpoint, .observe = metrics_cvm_observe,
				     .user_agent = ua};
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct informer *inf = &c->informers[i];
		inf->ctl = c;
		inf->namespace = c->opt.namespaces.n ? xstrdup(c->opt.namespaces.v[i]) : NULL;
		atomic_store(&inf->heartbeat_ms, sp_mono_ms());
		if (pthread_create(&inf->thread, NULL, informer_main, inf) != 0)
			r = sp_fail(err, SP_EIO, "cannot start informer thread");
		else
			c->informers_running++;
	}
	for (int i = 0; i < workers && r == 0; i++) {
		struct reconciler *rc = &c->reconcilers[i];
		rc->opt = &c->opt;
		rc->kube = kube_client_new(c->opt.kube, ua);
		rc->cvm = cvm_client_new(&cvm_cfg);
		rc->active_until_ms = &c->active_until_ms;
		rc->observed = record_live;
		rc->userdata = c;
		if (pthread_create(&c->workers[i], NULL, worker_main, rc) != 0)
			r = sp_fail(err, SP_EIO, "cannot start worker thread");
		else
			c->workers_running++;
	}
	free(ua);
	atomic_store(&c->started, true);
	if (r < 0)
		ctl_stop(c);  /* joins whatever did start */
	return r;
}

void ctl_stop(struct ctl *c)
{
	if (!atomic_exchange(&c->started, false))
		return;
	c->stopping = 1;
	wq_shutdown(c->queue);
	for (size_t i = 0; i < c->informers_running; i++)
		pthread_join(c->informers[i].thread, NULL);
	for (int i = 0; i < c->workers_running; i++)
		pthread_join(c->workers[i], NULL);
	for (int i = 0; c->reconcilers && i < c->opt.workers; i++) {
		kube_client_free(c->reconcilers[i].kube);
		cvm_client_free(c->reconcilers[i].cvm);
		c->reconcilers[i].kube = NULL;
		c->reconcilers[i].cvm = NULL;
	}
	c->informers_running = 0;
	c->workers_running = 0;
}

void ctl_free(struct ctl *c)
{
	if (!c)
		return;
	ctl_stop(c);
	for (size_t i = 0; i < c->n_informers; i++)
		free(c->informers[i].namespace);
	free(c->informers);
	free(c->workers);
	free(c->reconcilers);
	for (size_t i = 0; i < c->n_pools; i++)
		free(c->pools[i].key);
	free(c->pools);
	wq_free(c->queue);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void ctl_resync(struct ctl *c)
{
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n_pools; i++)
		wq_add_resync(c->queue, c->pools[i].key);
	pthread_mutex_unlock(&c->lock);
}

bool ctl_synced(const struct ctl *c)
{
	for (size_t i = 0; i < c->n_informers; i++)
		if (!atomic_load(&c->informers[i].synced))
			return false;
	return c->n_informers > 0;
}

bool ctl_healthy(struct ctl *c)
{
	if (!atomic_load(&c->started))
		return false;
	/* A watch ends within CTL_WATCH_TIMEOUT_SECONDS (+30 s client-side) and every
	 * event or new round beats the heartbeat; twice that without one means stuck. */
	int64_t now = sp_mono_ms();
	for (size_t i = 0; i < c->n_informers; i++)
		if (now - atomic_load(&c->informers[i].heartbeat_ms) > 2000LL * CTL_WATCH_TIMEOUT_SECONDS)
			return false;
	return atomic_load(&c->running_workers) == c->workers_running;
}

void ctl_counts(struct ctl *c, size_t *ret_pools, size_t *ret_instances)
{
	size_t n = 0;
	pthread_mutex_lock(&c->lock);
	*ret_pools = c->n_pools;
	for (size_t i = 0; i < c->n_pools; i++)
		n += (size_t)c->pools[i].live;
	pthread_mutex_unlock(&c->lock);
	*ret_instances = n;
}

void ctl_set_active_until(struct ctl *c, int64_t until_ms)
{
	atomic_store(&c->active_until_ms, until_ms);
}
