/* ctl: the controller. Informers (list + watch) feed a work queue; workers
 * reconcile one pool at a time: credentials -> describe -> plan -> act -> status.
 * Its threads, what each owns, the locks and their order: src/CONCURRENCY.md. */
#ifndef SPOTPOOL_CTL_H
#define SPOTPOOL_CTL_H

#include "creds.h"
#include "inv.h"
#include "kube.h"
#include "rate.h"
#include "reconcile.h"
#include "spotpool.h"

#include <signal.h>


/* What the controller reports (for metrics), with no lock held; any member may be NULL. */
struct wq_hooks;
struct ctl_hooks {
	const struct wq_hooks *queue;         /* the work queue's (wq_new_with_hooks) */
	const struct reconcile_hooks *pass;   /* each pass's (reconcile_options.hooks) */
	cvm_observe_fn cvm_observe;           /* each CVM API call (cvm_config.observe) */
	/* A pass over a pool took seconds; failed: it ended in an error (retried with backoff). */
	void (*reconciled)(void *userdata, double seconds, bool failed);
	/* The pool ns/name is gone from the cluster. */
	void (*pool_gone)(void *userdata, const char *ns, const char *name);
	/* The controller's sold-out memory, from ctl_new; NULL from ctl_free, before it is freed. */
	void (*soldout)(void *userdata, struct soldout *s);
	void *userdata;  /* of cvm_observe and the three above */
};

struct ctl_options {
	struct kube_config *kube;
	struct strv namespaces;       /* empty: all namespaces */
	int resync_seconds;
	int workers;
	const char *cvm_endpoint;     /* NULL: the real cloud */
	const char *sts_endpoint;     /* NULL: the real STS (the account behind credentials) */
	/* The CVM API pacing: the controller owns one limiter (rate.h) that every cloud
	 * client it makes (workers, inventory pollers) shares. */
	struct rate_config rate;
	const struct ctl_hooks *hooks; /* NULL: none; run.c binds metrics_ctl_hooks */
	bool dry_run;                 /* never mutate the cloud */
	bool nodes;                   /* watch Nodes (nodes.h): status node/ready, gone Nodes deleted */
	/* The controller's home namespace (cfg_notices_namespace): SpotNotices there count
	 * for every pool (notices.h); NULL or "": none. */
	const char *home_namespace;
	const struct creds *default_creds; /* used when a pool names none; may be empty */
	const char *identity;         /* this process, for events and leases */
	int launch_grace_seconds;     /* plan.h; <= 0: PLAN_LAUNCH_GRACE_DEFAULT_SECONDS */
	int64_t sold_out_ttl_ms;      /* soldout.h; <= 0: SOLDOUT_TTL_DEFAULT_MS */
	int follow_calls_per_minute;  /* inv.h; 0: INV_FOLLOW_CALLS_PER_MINUTE; negative: off */
	/* This cluster's identity (POOL_CLUSTER_TAG_KEY on launches; plan_owns): --cluster-name,
	 * else the kube-system namespace's UID. spotpool run may fill the string only after
	 * ctl_new, but always before the first ctl_set_active_until that lets passes act. */
	const char *cluster_name;
	/* Ports; NULL binds the real thing. Unit tests bind fakes and start no thread. */
	const struct sp_clock *clock;      /* NULL: sp_clock_system */
	const struct inv_api *inv;         /* NULL: the inventory ctl_start makes (inv_new) */
	/* One pass over a pool; NULL: reconcile_pool. */
	void (*pass)(struct reconciler *rc, cJSON *obj, struct reconcile_result *ret);
};

struct ctl;

struct ctl *ctl_new(const struct ctl_options *opt);
void ctl_free(struct ctl *c);
/* Starts informers and workers; returns at once. */
int ctl_start(struct ctl *c, struct sp_error *err);
/* Stops and joins all threads. */
void ctl_stop(struct ctl *c);
/* Queues every known pool, each at its own point within spread_ms (0: all now), so a
 * periodic resync of a thousand pools is not one burst of passes. */
void ctl_resync(struct ctl *c, int64_t spread_ms);
/* Every informer has listed at least once. */
bool ctl_synced(const struct ctl *c);
/* Informers (pools, SpotNotices) and workers are running (for health checks and the
 * systemd watchdog). */
bool ctl_healthy(struct ctl *c);
/* Pools known and owned instances last observed, for STATUS= lines. */
void ctl_counts(struct ctl *c, size_t *ret_pools, size_t *ret_instances);
/* Gates mutations: only a leader acts. Mutations are allowed until until_ms on the
 * monotonic clock (INT64_MAX: always, the default; 0: never, a standby). Starting to
 * act (until_ms ahead while the last one has passed) first notes every inventory
 * listing as stale (another leader may have acted meanwhile), then queues every pool
 * at once; a standby, or a leader renewing in time, queues nothing. */
void ctl_set_active_until(struct ctl *c, int64_t until_ms);
/* How long an inventory poller no pool reads lives on: four resync periods, and at
 * least the longest backoff plus two read timeouts (5.5 minutes). */
int64_t ctl_poller_retire_ms(int resync_seconds);

/* One worker step, what each worker thread loops over: takes the next ready key
 * (waiting for one), runs a pass (opt.pass) through rc on the cached pool, and queues
 * the key again as the outcome says: after an error, with the queue's backoff (wq.h);
 * else after requeue_ms when the pass asked. SP_EIO once the queue is shut down. */
int ctl_work(struct ctl *c, struct reconciler *rc);
/* For unit tests: the controller's Node cache (NULL without opt.nodes), SpotNotice cache, informer (feed it with
 * informer_apply_event or informer_round) and its work queue (wq_when tells what is queued). */
struct informer *ctl_informer(struct ctl *c);
struct nodes *ctl_nodes(struct ctl *c);
struct notices *ctl_notices(struct ctl *c);
struct wq *ctl_queue(struct ctl *c);

#endif
