/* notices: list + watch of SpotNotices into (instance, deadline) pairs; see notices.h. */
#include "notices.h"
#include "agent.h"
#include "claims.h"
#include "log.h"
#include "pool.h"
#include "stop.h"

#include <pthread.h>
#include <string.h>

struct notice {
	char *key;                                  /* "<namespace>/<name>" */
	char instance_id[AGENT_INSTANCE_ID_MAX + 1];
	int64_t at;                                 /* the deadline, epoch seconds */
	size_t watcher;                             /* whose scope it is in */
	uint64_t listed;                            /* the list that last held it */
};

struct watcher {
	struct notices *owner;
	size_t index;
	char *namespace;    /* NULL: all namespaces */
	char *path;
	/* Only this watcher's thread (or a test's rounds) touches these. */
	struct informer_lw lw;
	int told;           /* the list error already said, 0: none */
	uint64_t list_seq;  /* the list in progress (under the owner's lock) */
	pthread_t thread;
	bool running;
};

struct notices {
	struct notices_config cfg;
	const struct sp_clock *clock;
	pthread_mutex_t lock;
	struct notice *v;
	size_t n, cap;
	struct claims claims;  /* what each pool's last notices_find looked for */
	struct watcher *w;
	size_t n_w;
	struct stop stop;
};

struct notices *notices_new(const struct notices_config *cfg)
{
	struct notices *n = xcalloc(1, sizeof(*n));
	n->cfg = *cfg;
	n->clock = cfg->clock ? cfg->clock : &sp_clock_system;
	pthread_mutex_init(&n->lock, NULL);
	stop_init(&n->stop);
	size_t n_ns = cfg->namespaces ? cfg->namespaces->n : 0;
	n->n_w = n_ns ? n_ns : 1;
	n->w = xcalloc(n->n_w, sizeof(*n->w));
	for (size_t i = 0; i < n->n_w; i++) {
		struct watcher *w = &n->w[i];
		w->owner = n;
		w->index = i;
		w->namespace = n_ns ? xstrdup(cfg->namespaces->v[i]) : NULL;
		w->path = n_ns ? xasprintf("/apis/" POOL_API_VERSION "/namespaces/%s/" AGENT_NOTICE_PLURAL, w->namespace)
			       : xstrdup("/apis/" POOL_API_VERSION "/" AGENT_NOTICE_PLURAL);
		informer_lw_init(&w->lw, n->clock);
	}
	return n;
}

/* Under the lock. */
static struct notice *find(struct notices *n, const char *key)
{
	for (size_t i = 0; i < n->n; i++)
		if (strcmp(n->v[i].key, key) == 0)
			return &n->v[i];
	return NULL;
}

/* Under the lock: the pools claiming notice i's instance go to changed. */
static void claimants(const struct notices *n, const struct notice *c, struct strv *changed)
{
	const char *id = c->instance_id;
	claims_find(&n->claims, &id, 1, NULL, changed);
}

/* Under the lock. */
static void drop(struct notices *n, size_t i, struct strv *changed)
{
	claimants(n, &n->v[i], changed);
	free(n->v[i].key);
	n->v[i] = n->v[--n->n];
	n->v = sp_vec_fit(n->v, n->n, &n->cap, sizeof(*n->v));
}

void notices_apply_event(struct notices *n, size_t i, const char *type, const cJSON *obj)
{
	char *key = informer_key(obj);
	if (!key || i >= n->n_w)
		goto out;
	struct notice v = {.watcher = i};
	struct sp_error err = {0};
	bool deleted = strcmp(type, "DELETED") == 0;
	if (!deleted && agent_notice_read(obj, v.instance_id, &v.at, &err) < 0) {
		log_debug("%s: skipped: %s", key, err.msg);
		goto out;
	}
	struct strv changed = {0};
	pthread_mutex_lock(&n->lock);
	struct notice *c = find(n, key);
	if (deleted) {
		if (c)
			drop(n, (size_t)(c - n->v), &changed);
	} else if (!c) {
		n->v = sp_vec_fit(n->v, n->n + 1, &n->cap, sizeof(*n->v));
		c = &n->v[n->n++];
		v.key = key;
		key = NULL;
		v.listed = n->w[i].list_seq;
		*c = v;
		claimants(n, c, &changed);
	} else {
		/* The spec cannot change (the CRD says so): only the list that saw it moves. */
		c->listed = n->w[i].list_seq;
	}
	pthread_mutex_unlock(&n->lock);
	claims_tell(&changed, n->cfg.changed, n->cfg.userdata);
out:
	free(key);
}

static void on_begin_list(void *ud)
{
	struct watcher *w = ud;
	pthread_mutex_lock(&w->owner->lock);
	w->list_seq++;
	pthread_mutex_unlock(&w->owner->lock);
}

static void on_item(void *ud, const cJSON *obj)
{
	struct watcher *w = ud;
	notices_apply_event(w->owner, w->index, "ADDED", obj);
}

/* A complete list: the notices of this watcher's scope it did not hold are gone. */
static void on_end_list(void *ud, bool complete)
{
	struct watcher *w = ud;
	struct notices *n = w->owner;
	if (!complete)
		return;
	struct strv changed = {0};
	pthread_mutex_lock(&n->lock);
	for (size_t i = 0; i < n->n;) {
		if (n->v[i].watcher == w->index && n->v[i].listed != w->list_seq)
			drop(n, i, &changed);
		else
			i++;
	}
	pthread_mutex_unlock(&n->lock);
	claims_tell(&changed, n->cfg.changed, n->cfg.userdata);
}

static void on_event(void *ud, const char *type, const cJSON *obj)
{
	struct watcher *w = ud;
	notices_apply_event(w->owner, w->index, type, obj);
}

/* Deletes watcher w's notices NOTICES_KEEP_SECONDS past their deadline; the watch then
 * brings their DELETED events. */
static void collect(struct notices *n, struct watcher *w, const struct kube_api *api)
{
	struct strv expired = {0};
	int64_t now = n->clock->now(n->clock->ctx);
	pthread_mutex_lock(&n->lock);
	for (size_t i = 0; i < n->n; i++)
		if (n->v[i].watcher == w->index && n->v[i].at + NOTICES_KEEP_SECONDS < now)
			strv_push(&expired, n->v[i].key);
	pthread_mutex_unlock(&n->lock);
	for (size_t i = 0; i < expired.n; i++) {
		char *name = strchr(expired.v[i], '/');
		*name++ = '\0';
		char *path = xasprintf("/apis/" POOL_API_VERSION "/namespaces/%s/" AGENT_NOTICE_PLURAL "/%s", expired.v[i],
				       name);
		struct sp_error err = {0};
		int r = api->request(api->ctx, "DELETE", path, NULL, NULL, NULL, &err);
		if (r < 0 && r != SP_ENOTFOUND)
			log_warn("cannot delete the expired " AGENT_NOTICE_KIND " %s/%s: %s", expired.v[i], name, err.msg);
		free(path);
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
	};
	int64_t delay = informer_lw_round(&w->lw, &ops, api, &n->stop);
	int e = w->lw.list_error;
	if (e == SP_EFORBIDDEN || e == SP_ENOTFOUND) {
		if (w->told != e)
			log_error("%s: reclaim notices of hosts that are not Nodes stay unknown until it "
				  "works (docs/notice-agent.md#spotnotices)",
				  e == SP_EFORBIDDEN ? "the controller may not list, watch and delete "
						       "spotnotices (RBAC)"
						     : "the SpotNotice CRD is not installed (crds/spotnotice.yaml)");
		w->told = e;
		return delay;
	}
	if (e == 0 && atomic_load(&w->lw.synced)) {
		w->told = 0;
		collect(n, w, api);
	}
	return delay;
}

static void *watcher_main(void *arg)
{
	struct watcher *w = arg;
	struct notices *n = w->owner;
	struct kube_api api = n->cfg.api_new(n->cfg.userdata);
	while (!stop_requested(&n->stop))
		stop_wait_ms(&n->stop, notices_round(n, w->index, &api));
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
	}
	free(n->w);
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i].key);
	free(n->v);
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

size_t notices_count(struct notices *n)
{
	pthread_mutex_lock(&n->lock);
	size_t count = n->n;
	pthread_mutex_unlock(&n->lock);
	return count;
}

void notices_find(struct notices *n, const char *pool, const char *const *ids, size_t n_ids, int64_t *ret_at)
{
	pthread_mutex_lock(&n->lock);
	struct claim *c = claims_renew(&n->claims, pool);
	for (size_t i = 0; i < n_ids; i++) {
		ret_at[i] = 0;
		if (!ids[i] || !*ids[i])
			continue;
		strv_push(&c->ids, ids[i]);
		for (size_t k = 0; k < n->n; k++)
			if (strcmp(n->v[k].instance_id, ids[i]) == 0 && (!ret_at[i] || n->v[k].at < ret_at[i]))
				ret_at[i] = n->v[k].at;
	}
	pthread_mutex_unlock(&n->lock);
}

void notices_forget(struct notices *n, const char *pool)
{
	pthread_mutex_lock(&n->lock);
	claims_forget(&n->claims, pool);
	pthread_mutex_unlock(&n->lock);
}
