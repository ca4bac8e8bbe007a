/* ctl: the controller's glue. The informer caches pools and says which need a look,
 * the inventory lists the cloud once per account and says whose instances changed;
 * both feed one work queue; workers reconcile one pool at a time. */
#include "ctl.h"
#include "informer.h"
#include "inv.h"
#include "log.h"
#include "nodes.h"
#include "notices.h"
#include "pool.h"
#include "reconcile.h"
#include "status.h"
#include "wq.h"

#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>

/* A watch ends within 300 s (+30 s client-side) and every event or new round beats the
 * heartbeat; twice that without one means stuck. */
#define CTL_INFORMER_QUIET_MS (2 * 330 * 1000LL)
/* Every pool is read within a resync period and a half (its point in the first half of
 * the next round); an inventory poller no pool has read for this many periods is
 * stopped (inv.h: Poller lifetime), but never sooner than a pool backing off at most
 * (WQ_BACKOFF_MAX_MS) and a read that timed out on each side: otherwise every pool of
 * an account in long backoff finds a new poller whose first listing of a large
 * account outlasts the read, fails, backs off, and the poller goes again. */
#define CTL_RETIRE_RESYNCS 4
#define CTL_RETIRE_MIN_MS (WQ_BACKOFF_MAX_MS + 2 * RECONCILE_READ_TIMEOUT_MS)

int64_t ctl_poller_retire_ms(int resync_seconds)
{
	int64_t by_resync = CTL_RETIRE_RESYNCS * (resync_seconds > 0 ? resync_seconds : 30) * 1000LL;
	return by_resync > CTL_RETIRE_MIN_MS ? by_resync : CTL_RETIRE_MIN_MS;
}

struct worker {
	struct ctl *ctl;
	struct kube_client *kube;  /* the worker's own connections, bound by rc's ports */
	struct cvm_client *cvm;
	struct inv_reader_binding inv;
	struct reconciler rc;
	pthread_t thread;
};

struct ctl {
	struct ctl_options opt;
	const struct sp_clock *clock;
	struct inv_api inv_port;  /* opt.inv, or the inventory's own from ctl_start */
	struct reconcile_options ropt;
	struct ctl_hooks hooks;   /* opt.hooks, or none */
	struct wq *queue;
	struct informer *informer;
	struct nodes *nodes;      /* NULL: node features off */
	struct notices *notices;  /* SpotNotices of the watched namespaces */
	struct inv *inv;
	struct answers *answers;
	struct rate *rate;  /* shared by every cvm client: the limits are per account */
	struct soldout *soldout;
	struct acct *accounts;
	struct worker *workers;
	atomic_int running_workers;
	_Atomic int64_t active_until_ms;
	atomic_bool started;
	int workers_running;
	_Atomic uint64_t resync_round;
};

static void on_enqueue(void *ud, const char *key, bool at_once)
{
	struct ctl *c = ud;
	if (at_once)
		wq_add(c->queue, key, 0);
	else
		wq_add_resync(c->queue, key, 0);
}

/* A pool gone from the cluster: its metrics, any launch answer it left and its claim on
 * an inventory poller go too (a finalizer removed by hand skips the pass that would
 * forget it). */
static void forget_pool(struct ctl *c, const char *key)
{
	char *copy = xstrdup(key);
	char *slash = strchr(copy, '/');
	if (slash) {
		*slash = '\0';
		if (c->hooks.pool_gone)
			c->hooks.pool_gone(c->hooks.userdata, copy, slash + 1);
		log_forget_owner(copy, slash + 1);
		char *owner = pool_owner_tag(copy, slash + 1);
		answers_forget(c->answers, owner);
		if (c->inv_port.forget)
			c->inv_port.forget(c->inv_port.ctx, owner);
		free(owner);
	}
	free(copy);
	if (c->nodes)
		nodes_forget(c->nodes, key);
	notices_forget(c->notices, key);
}

static void on_deleted(void *ud, const char *key)
{
	forget_pool(ud, key);
}

/* A Node of a pool's instance appeared, changed (Ready, cordon, taint, notice) or went;
 * or a SpotNotice of one came or went. */
static void on_instance_object_changed(void *ud, const char *pool)
{
	struct ctl *c = ud;
	if (informer_has(c->informer, pool))
		wq_add(c->queue, pool, 0);
}

static int find_nodes(void *ctx, const char *pool, const struct node_want *want, size_t n, struct node_view *ret,
		      enum node_by *ret_by, struct node_refusals *ret_refused)
{
	return nodes_find(ctx, pool, want, n, ret, ret_by, ret_refused);
}

static int get_node(void *ctx, const char *name, struct node_view *ret)
{
	return nodes_get(ctx, name, ret);
}

/* The key of the cached pool whose owner tag is a digest form (its namespace/name is too
 * long for a tag value), or NULL. Such names are rare: a scan of the keys is enough. */
static char *key_of_long_owner(struct ctl *c, const char *owner)
{
	struct strv keys = {0};
	char *found = NULL;
	informer_keys(c->informer, &keys);
	for (size_t i = 0; i < keys.n && !found; i++) {
		char *slash = strchr(keys.v[i], '/');
		if (strlen(keys.v[i]) <= POOL_TAG_VALUE_MAX || !slash)
			continue;
		*slash = '\0';
		char *tag = pool_owner_tag(keys.v[i], slash + 1);
		*slash = '/';
		if (strcmp(tag, owner) == 0)
			found = xstrdup(keys.v[i]);
		free(tag);
	}
	strv_clear(&keys);
	return found;
}

/* The inventory saw a pool's instances change (a reclaim, a launch showing up). Only
 * pools this controller watches are looked at. The owner tag is the pool's key unless
 * the key was too long for a tag value. */
static void on_instances_changed(void *ud, const char *owner)
{
	struct ctl *c = ud;
	if (informer_has(c->informer, owner)) {
		wq_add(c->queue, owner, 0);
		return;
	}
	char *key = strlen(owner) == POOL_TAG_VALUE_MAX ? key_of_long_owner(c, owner) : NULL;
	if (key)
		wq_add(c->queue, key, 0);
	free(key);
}

/* The informer's apiserver: a client per watcher thread. */
static struct kube_api informer_api_new(void *ud)
{
	struct ctl *c = ud;
	return kube_client_api(kube_client_new(c->opt.kube, "spotpool/" SPOTPOOL_VERSION " (informer)"));
}

static struct kube_api nodes_api_new(void *ud)
{
	struct ctl *c = ud;
	return kube_client_api(kube_client_new(c->opt.kube, "spotpool/" SPOTPOOL_VERSION " (nodes)"));
}

static struct kube_api notices_api_new(void *ud)
{
	struct ctl *c = ud;
	return kube_client_api(kube_client_new(c->opt.kube, "spotpool/" SPOTPOOL_VERSION " (notices)"));
}

/* The notices' deletions: no request of it outlives leadership. */
static struct kube_api notices_writer_new(void *ud)
{
	struct ctl *c = ud;
	struct kube_client *k = kube_client_new(c->opt.kube, "spotpool/" SPOTPOOL_VERSION " (notices)");
	kube_client_set_until(k, &c->active_until_ms);
	return kube_client_api(k);
}

/* The instances a pool's status records are its own from the moment it is listed, not
 * only once its first pass (after a restart, or a new leader's) asks about them: their
 * SpotNotices are claimed, kept whatever made-up ones fill the namespace's share. */
static void on_pool_seen(void *ud, const char *key, const cJSON *obj)
{
	struct ctl *c = ud;
	struct strv ids = {0}, live = {0};
	status_recorded(cJSON_GetObjectItemCaseSensitive(obj, "status"), &ids, &live, NULL, NULL, NULL);
	int64_t *at = xcalloc(ids.n ? ids.n : 1, sizeof(*at));
	notices_find(c->notices, key, (const char *const *)ids.v, ids.n, at);
	free(at);
	strv_clear(&live);
	strv_clear(&ids);
}

static bool pools_in(void *ud, const char *ns)
{
	struct ctl *c = ud;
	return informer_has_namespace(c->informer, ns);
}

static bool pools_listed(void *ud)
{
	struct ctl *c = ud;
	return informer_synced(c->informer);
}

static int find_notices(void *ctx, const char *pool, const char *const *ids, size_t n, int64_t *ret_at)
{
	return notices_find(ctx, pool, ids, n, ret_at);
}

static void informer_api_free(void *ud, struct kube_api *api)
{
	(void)ud;
	kube_client_free(api->ctx);
}

static int64_t mono_ms(const struct ctl *c)
{
	return c->clock->mono_ms(c->clock->ctx);
}

struct ctl *ctl_new(const struct ctl_options *opt)
{
	struct ctl *c = xcalloc(1, sizeof(*c));
	c->opt = *opt;
	if (opt->hooks)
		c->hooks = *opt->hooks;
	c->clock = opt->clock ? opt->clock : &sp_clock_system;
	if (opt->inv)
		c->inv_port = *opt->inv;
	if (!c->opt.pass)
		c->opt.pass = reconcile_pool;
	c->ropt = (struct reconcile_options){
		.dry_run = opt->dry_run, .default_creds = opt->default_creds, .identity = opt->identity,
		.launch_grace_seconds = opt->launch_grace_seconds, .cluster_name = opt->cluster_name,
		.hooks = c->hooks.pass,
	};
	c->queue = wq_new_with_hooks(c->hooks.queue);
	c->answers = answers_new(ANSWERS_MAX);
	c->rate = rate_new(&opt->rate);
	c->soldout = soldout_new(opt->sold_out_ttl_ms);
	if (c->hooks.soldout)
		c->hooks.soldout(c->hooks.userdata, c->soldout);
	c->accounts = acct_new(ACCT_MAX);
	atomic_store(&c->active_until_ms, INT64_MAX);
	struct informer_config icfg = {.api_new = informer_api_new, .api_free = informer_api_free,
				       .clock = c->clock, .namespaces = &c->opt.namespaces,
				       .enqueue = on_enqueue, .deleted = on_deleted, .seen = on_pool_seen, .userdata = c};
	c->informer = informer_new(&icfg);
	if (opt->nodes) {
		struct nodes_config ncfg = {.api_new = nodes_api_new, .api_free = informer_api_free, .clock = c->clock,
					    .changed = on_instance_object_changed, .userdata = c};
		c->nodes = nodes_new(&ncfg);
	}
	struct notices_config ocfg = {.api_new = notices_api_new, .writer_new = notices_writer_new,
				      .api_free = informer_api_free, .clock = c->clock,
				      .namespaces = &c->opt.namespaces, .home_namespace = c->opt.home_namespace,
				      .namespace_wanted = pools_in, .pools_listed = pools_listed,
				      .changed = on_instance_object_changed, .userdata = c,
				      .active_until_ms = &c->active_until_ms, .read_only = c->opt.dry_run};
	c->notices = notices_new(&ocfg);
	return c;
}

int ctl_work(struct ctl *c, struct reconciler *rc)
{
	char *key;
	if (wq_get(c->queue, &key) < 0)
		return SP_EIO;
	struct reconcile_result res = {0};
	int64_t started = mono_ms(c);
	cJSON *obj = informer_get(c->informer, key);
	if (obj) {
		char *from_rv = xstrdup(informer_resource_version(obj));
		c->opt.pass(rc, obj, &res);
		if (res.obj)
			informer_update(c->informer, key, from_rv, res.obj);
		if (res.live >= 0)
			informer_note_live(c->informer, key, res.live);
		cJSON_Delete(res.obj);
		free(from_rv);
		/* Deleted while the pass ran (it read a cached copy: the finalizer its last
		 * pass released, the DELETED event not yet seen): what the pass registered
		 * after on_deleted forgot the pool (its inventory poller's owner above all,
		 * which kept the poller alive until it was not read for four resyncs) is
		 * forgotten again. The cache forgets a key before on_deleted runs, so either
		 * this sees it gone or on_deleted comes after the pass's registrations. */
		if (!informer_has(c->informer, key))
			forget_pool(c, key);
	}
	if (c->hooks.reconciled)
		c->hooks.reconciled(c->hooks.userdata, (double)(mono_ms(c) - started) / 1000.0, res.error < 0);
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
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ctl *c = w->ctl;
	atomic_fetch_add(&c->running_workers, 1);
	while (ctl_work(c, &w->rc) == 0)
		continue;
	atomic_fetch_sub(&c->running_workers, 1);
	return NULL;
}

int ctl_start(struct ctl *c, struct sp_error *err)
{
	int workers = c->opt.workers > 0 ? c->opt.workers : 2;
	c->opt.workers = workers;
	c->workers = xcalloc((size_t)workers, sizeof(*c->workers));
	char *ua = xasprintf("spotpool/%s (%s)", SPOTPOOL_VERSION, c->opt.identity ? c->opt.identity : "controller");
	struct cvm_config cvm_cfg = {.endpoint = c->opt.cvm_endpoint, .sts_endpoint = c->opt.sts_endpoint,
				     .observe = c->hooks.cvm_observe,
				     .observe_userdata = c->hooks.userdata, .user_agent = ua, .rate = c->rate};
	struct inv_config inv_cfg = {.cvm = cvm_cfg, .changed = on_instances_changed, .userdata = c,
				     .retire_after_ms = ctl_poller_retire_ms(c->opt.resync_seconds),
				     .follow_calls_per_minute = c->opt.follow_calls_per_minute};
	c->inv = inv_new(&inv_cfg);
	if (!c->opt.inv)
		c->inv_port = inv_api_bind(c->inv);
	int r = informer_start(c->informer, err);
	if (r == 0 && c->nodes)
		r = nodes_start(c->nodes, err);
	if (r == 0)
		r = notices_start(c->notices, err);
	for (int i = 0; i < workers && r == 0; i++) {
		struct worker *w = &c->workers[i];
		w->ctl = c;
		w->kube = kube_client_new(c->opt.kube, ua);
		w->cvm = cvm_client_new(&cvm_cfg);
		w->inv = (struct inv_reader_binding){.inv = c->inv, .cvm = w->cvm};
		w->rc = (struct reconciler){.opt = &c->ropt, .kube = kube_client_api(w->kube),
					    .cvm = cvm_client_api(w->cvm), .inv = inv_reader_bind(&w->inv),
					    .clock = *c->clock, .answers = c->answers, .soldout = c->soldout,
					    .accounts = c->accounts,
					    .active_until_ms = &c->active_until_ms};
		if (c->nodes)
			w->rc.nodes = (struct node_reader){.find = find_nodes, .get = get_node, .ctx = c->nodes};
		w->rc.notices = (struct notice_reader){.find = find_notices, .ctx = c->notices};
		/* A worker's writes (status, finalizer, events) end with the leadership. */
		kube_client_set_until(w->kube, &c->active_until_ms);
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
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
	wq_shutdown(c->queue);
	informer_stop(c->informer);
	if (c->nodes)
		nodes_stop(c->nodes);
	notices_stop(c->notices);
	for (int i = 0; i < c->workers_running; i++)
		pthread_join(c->workers[i].thread, NULL);
	for (int i = 0; c->workers && i < c->opt.workers; i++) {
		kube_client_free(c->workers[i].kube);
		cvm_client_free(c->workers[i].cvm);
		c->workers[i].kube = NULL;
		c->workers[i].cvm = NULL;
		c->workers[i].rc = (struct reconciler){0};
	}
	c->workers_running = 0;
}

void ctl_free(struct ctl *c)
{
	if (!c)
		return;
	ctl_stop(c);
	/* Here, not in ctl_stop: the lease thread (ctl_set_active_until) may use it until
	 * the lease is stopped, which comes between the two. */
	inv_free(c->inv);
	informer_free(c->informer);
	nodes_free(c->nodes);
	notices_free(c->notices);
	free(c->workers);
	wq_free(c->queue);
	answers_free(c->answers);
	rate_free(c->rate);  /* after the workers and pollers that borrowed it */
	if (c->hooks.soldout)
		c->hooks.soldout(c->hooks.userdata, NULL);
	soldout_free(c->soldout);
	acct_free(c->accounts);
	free(c);
}

void ctl_resync(struct ctl *c, int64_t spread_ms)
{
	uint64_t round = atomic_fetch_add(&c->resync_round, 1);
	struct strv keys = {0};
	informer_keys(c->informer, &keys);
	for (size_t i = 0; i < keys.n; i++)
		wq_add_resync(c->queue, keys.v[i], wq_resync_offset_ms(keys.v[i], round, spread_ms));
	strv_clear(&keys);
	/* The main loop trims malloc's heaps right after: what pools gone left goes first. */
	rate_prune(c->rate);
}

bool ctl_synced(const struct ctl *c)
{
	return informer_synced(c->informer);
}

bool ctl_healthy(struct ctl *c)
{
	return atomic_load(&c->started) && informer_healthy(c->informer, CTL_INFORMER_QUIET_MS) &&
	       notices_healthy(c->notices, CTL_INFORMER_QUIET_MS) &&
	       atomic_load(&c->running_workers) == c->workers_running;
}

void ctl_counts(struct ctl *c, size_t *ret_pools, size_t *ret_instances)
{
	informer_counts(c->informer, ret_pools, ret_instances);
}

void ctl_set_active_until(struct ctl *c, int64_t until_ms)
{
	/* Starting to act (again): another leader may have launched or terminated since
	 * the last listings, which would count its reclaimed instances as live and
	 * scale down the replacements. Noted before a worker can see itself active. The
	 * lease thread is the only caller once the controller runs, and the inventory
	 * lives until ctl_free, after the lease has stopped. */
	int64_t now = mono_ms(c);
	bool starts = until_ms > now && atomic_load(&c->active_until_ms) <= now;
	if (starts && c->inv_port.note_all_mutated)
		c->inv_port.note_all_mutated(c->inv_port.ctx);
	atomic_store(&c->active_until_ms, until_ms);
	/* Every pool, now, and after the store: a pass that saw itself inactive would
	 * leave its pool alone. */
	if (starts)
		ctl_resync(c, 0);
}

struct informer *ctl_informer(struct ctl *c)
{
	return c->informer;
}

struct nodes *ctl_nodes(struct ctl *c)
{
	return c->nodes;
}

struct notices *ctl_notices(struct ctl *c)
{
	return c->notices;
}

struct wq *ctl_queue(struct ctl *c)
{
	return c->queue;
}
