/* nodes: list + watch of Nodes into their views; see nodes.h. */
#include "nodes.h"
#include "claims.h"
#include "log.h"
#include "stop.h"

#include <pthread.h>
#include <string.h>

struct nodes {
	struct nodes_config cfg;
	const struct sp_clock *clock;
	pthread_mutex_t lock;
	/* The views, in one array node_match reads as it is, and the list that last held each. */
	struct node_view *v;
	uint64_t *listed;
	size_t n;
	struct claims claims;  /* what each pool's last nodes_find looked for */
	uint64_t list_seq;  /* the list in progress */
	/* Only the watcher thread (or a test's rounds) touches these. */
	struct informer_lw lw;
	bool told_forbidden;
	/* The last list was refused (RBAC): the watcher writes it, nodes_find reads it. */
	atomic_bool forbidden;
	struct stop stop;
	pthread_t thread;
	bool running;
};

struct nodes *nodes_new(const struct nodes_config *cfg)
{
	struct nodes *n = xcalloc(1, sizeof(*n));
	n->cfg = *cfg;
	n->clock = cfg->clock ? cfg->clock : &sp_clock_system;
	pthread_mutex_init(&n->lock, NULL);
	informer_lw_init(&n->lw, cfg->clock);
	stop_init(&n->stop);
	return n;
}

/* Under the lock: the pools whose claims name v's instance ID or InternalIP go to out. */
static void claimants(const struct nodes *n, const struct node_view *v, struct strv *out)
{
	const char *ids[] = {v->provider_id, v->label_id};
	claims_find(&n->claims, ids, 2, v->internal_ip, out);
}

static struct node_view *find(struct nodes *n, const char *name)
{
	for (size_t i = 0; i < n->n; i++)
		if (strcmp(n->v[i].name, name) == 0)
			return &n->v[i];
	return NULL;
}

/* Under the lock. */
static void drop(struct nodes *n, size_t i, struct strv *changed)
{
	claimants(n, &n->v[i], changed);
	n->n--;
	n->v[i] = n->v[n->n];
	n->listed[i] = n->listed[n->n];
}

/* Under the lock: records v; the pools of its old and new self go to changed when what
 * spotpool reads of it changed. A reclaim deadline keeps the time it was first seen
 * while the Node claims the same one (doom.h: the bound runs from then). */
static void upsert(struct nodes *n, const struct node_view *in, struct strv *changed)
{
	struct node_view *c = find(n, in->name), claim = *in;
	const struct node_view *v = &claim;
	if (claim.terminating_at)
		claim.terminating_seen = c && c->terminating_at == claim.terminating_at && c->terminating_seen
						 ? c->terminating_seen : n->clock->now(n->clock->ctx);
	if (!c) {
		n->v = xrealloc(n->v, (n->n + 1) * sizeof(*n->v));
		n->listed = xrealloc(n->listed, (n->n + 1) * sizeof(*n->listed));
		c = &n->v[n->n++];
		*c = *v;
		claimants(n, v, changed);
	} else if (memcmp(c, v, sizeof(*v)) != 0) {
		claimants(n, c, changed);
		*c = *v;
		claimants(n, v, changed);
	}
	n->listed[c - n->v] = n->list_seq;
}

/* A view compared whole (memcmp): the bytes past each string's end are zero. */
static bool view_of(const cJSON *obj, struct node_view *ret)
{
	memset(ret, 0, sizeof(*ret));
	return node_view_from_json(obj, ret);
}

void nodes_apply_event(struct nodes *n, const char *type, const cJSON *obj)
{
	struct node_view v;
	if (!view_of(obj, &v))
		return;
	struct strv changed = {0};
	pthread_mutex_lock(&n->lock);
	if (strcmp(type, "DELETED") == 0) {
		struct node_view *c = find(n, v.name);
		if (c)
			drop(n, (size_t)(c - n->v), &changed);
	} else {
		upsert(n, &v, &changed);
	}
	pthread_mutex_unlock(&n->lock);
	claims_tell(&changed, n->cfg.changed, n->cfg.userdata);
}

static void on_begin_list(void *ud)
{
	struct nodes *n = ud;
	pthread_mutex_lock(&n->lock);
	n->list_seq++;
	pthread_mutex_unlock(&n->lock);
}

static void on_item(void *ud, const cJSON *obj)
{
	nodes_apply_event(ud, "ADDED", obj);
}

/* A complete list: the Nodes it did not hold are gone. */
static void on_end_list(void *ud, bool complete)
{
	struct nodes *n = ud;
	if (!complete)
		return;
	struct strv changed = {0};
	pthread_mutex_lock(&n->lock);
	for (size_t i = 0; i < n->n;) {
		if (n->listed[i] != n->list_seq)
			drop(n, i, &changed);
		else
			i++;
	}
	pthread_mutex_unlock(&n->lock);
	claims_tell(&changed, n->cfg.changed, n->cfg.userdata);
}

static void on_event(void *ud, const char *type, const cJSON *obj)
{
	nodes_apply_event(ud, type, obj);
}

int64_t nodes_round(struct nodes *n, const struct kube_api *api)
{
	const struct informer_lw_ops ops = {
		.kind = "nodes", .scope = "the cluster", .path = NODES_PATH, .begin_list = on_begin_list,
		.item = on_item, .end_list = on_end_list, .event = on_event, .userdata = n,
		.owner_says_refusals = true,
	};
	int64_t delay = informer_lw_round(&n->lw, &ops, api, &n->stop);
	atomic_store(&n->forbidden, n->lw.list_error == SP_EFORBIDDEN);
	if (n->lw.list_error == SP_EFORBIDDEN && !n->told_forbidden) {
		log_error("the controller may not list nodes (RBAC): node names, Ready and the deletion of the "
			  "Nodes of gone instances stay off until its ServiceAccount is bound to a ClusterRole "
			  "allowing get, list, watch and delete on nodes (docs/how-it-works.md#nodes), or run "
			  "with --no-nodes");
		n->told_forbidden = true;
	}
	return delay;
}

static void *watcher_main(void *arg)
{
	struct nodes *n = arg;
	struct kube_api api = n->cfg.api_new(n->cfg.userdata);
	while (!stop_requested(&n->stop))
		stop_wait_ms(&n->stop, nodes_round(n, &api));
	n->cfg.api_free(n->cfg.userdata, &api);
	return NULL;
}

int nodes_start(struct nodes *n, struct sp_error *err)
{
	if (pthread_create(&n->thread, NULL, watcher_main, n) != 0)
		return sp_fail(err, SP_EIO, "cannot start the nodes thread");
	n->running = true;
	return 0;
}

void nodes_stop(struct nodes *n)
{
	stop_request(&n->stop);
	if (n->running)
		pthread_join(n->thread, NULL);
	n->running = false;
}

void nodes_free(struct nodes *n)
{
	if (!n)
		return;
	nodes_stop(n);
	claims_free(&n->claims);
	free(n->v);
	free(n->listed);
	pthread_mutex_destroy(&n->lock);
	stop_destroy(&n->stop);
	free(n);
}

bool nodes_synced(const struct nodes *n)
{
	return atomic_load(&n->lw.synced);
}

size_t nodes_count(struct nodes *n)
{
	pthread_mutex_lock(&n->lock);
	size_t count = n->n;
	pthread_mutex_unlock(&n->lock);
	return count;
}

int nodes_find(struct nodes *n, const char *pool, const struct node_want *want, size_t n_want,
	       struct node_view *ret, enum node_by *ret_by, struct node_refusals *ret_refused)
{
	int *index = xcalloc(n_want ? n_want : 1, sizeof(*index));
	int r = 0;
	pthread_mutex_lock(&n->lock);
	struct claim *c = claims_renew(&n->claims, pool);
	for (size_t i = 0; i < n_want; i++) {
		if (want[i].id && *want[i].id)
			strv_push(&c->ids, want[i].id);
		if (want[i].ip && *want[i].ip)
			strv_push(&c->ips, want[i].ip);
	}
	if (!atomic_load(&n->lw.synced)) {
		r = atomic_load(&n->forbidden) ? SP_EFORBIDDEN : SP_ETRANSIENT;
	} else {
		node_match(n->v, n->n, want, n_want, index, ret_by, ret_refused);
		for (size_t i = 0; i < n_want; i++) {
			if (index[i] >= 0)
				ret[i] = n->v[index[i]];
			else
				memset(&ret[i], 0, sizeof(ret[i]));
		}
	}
	pthread_mutex_unlock(&n->lock);
	free(index);
	return r;
}

int nodes_get(struct nodes *n, const char *name, struct node_view *ret)
{
	pthread_mutex_lock(&n->lock);
	const struct node_view *v = atomic_load(&n->lw.synced) ? find(n, name) : NULL;
	int r = v ? 0 : atomic_load(&n->lw.synced) ? SP_ENOTFOUND : SP_ETRANSIENT;
	if (v)
		*ret = *v;
	pthread_mutex_unlock(&n->lock);
	return r;
}

void nodes_forget(struct nodes *n, const char *pool)
{
	pthread_mutex_lock(&n->lock);
	claims_forget(&n->claims, pool);
	pthread_mutex_unlock(&n->lock);
}

/* The views a live list collects. */
struct live {
	struct node_view *v;
	size_t n, cap;
};

static void live_begin(void *ud)
{
	(void)ud;
}

static void live_item(void *ud, const cJSON *obj)
{
	struct live *l = ud;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	if (view_of(obj, &l->v[l->n]))
		l->n++;
}

static void live_end(void *ud, bool complete)
{
	(void)ud, (void)complete;
}

int nodes_find_live(const struct kube_api *api, const struct node_want *want, size_t n_want, struct node_view *ret,
		    enum node_by *ret_by, struct node_refusals *ret_refused, struct sp_error *err)
{
	struct live l = {0};
	const struct informer_lw_ops ops = {.kind = "nodes", .scope = "the cluster", .path = NODES_PATH,
					    .begin_list = live_begin, .item = live_item, .end_list = live_end,
					    .userdata = &l};
	int r = informer_list(NULL, &ops, api, err);
	if (r == 0) {
		int *index = xcalloc(n_want ? n_want : 1, sizeof(*index));
		node_match(l.v, l.n, want, n_want, index, ret_by, ret_refused);
		for (size_t i = 0; i < n_want; i++)
			ret[i] = index[i] >= 0 ? l.v[index[i]] : (struct node_view){0};
		free(index);
	} else {
		sp_error_prefix(err, "listing nodes: ");
	}
	free(l.v);
	return r;
}

int nodes_delete(const struct kube_api *api, const char *name, const char *uid, struct sp_error *err)
{
	char *path = xasprintf(NODES_PATH "/%s", name);
	cJSON *body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "kind", "DeleteOptions");
	cJSON_AddStringToObject(body, "apiVersion", "v1");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(body, "preconditions"), "uid", uid);
	int r = api->request(api->ctx, "DELETE", path, "application/json", body, NULL, err);
	cJSON_Delete(body);
	free(path);
	if (r == SP_ECONFLICT) {
		r = SP_ENOTFOUND;  /* the precondition failed: not the Node meant, which is gone */
		if (err)
			err->code = r;
	}
	if (r < 0)
		sp_error_prefix(err, "deleting node %s (uid %s): ", name, uid);
	return r;
}
