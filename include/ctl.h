/* ctl: the controller. Informers (list + watch) feed a work queue; workers
 * reconcile one pool at a time: credentials -> describe -> plan -> act -> status. */
#ifndef SPOTPOOL_CTL_H
#define SPOTPOOL_CTL_H

#include "creds.h"
#include "kube.h"
#include "spotpool.h"

#include <signal.h>


struct ctl_options {
	struct kube_config *kube;
	struct strv namespaces;       /* empty: all namespaces */
	int resync_seconds;
	int workers;
	const char *cvm_endpoint;     /* NULL: the real cloud */
	bool dry_run;                 /* never mutate the cloud */
	const struct creds *default_creds; /* used when a pool names none; may be empty */
	const char *identity;         /* this process, for events and leases */
	int launch_grace_seconds;     /* plan.h; <= 0: PLAN_LAUNCH_GRACE_DEFAULT_SECONDS */
	int64_t sold_out_ttl_ms;      /* soldout.h; <= 0: SOLDOUT_TTL_DEFAULT_MS */
	/* This cluster's identity (POOL_CLUSTER_TAG_KEY on launches; plan_owns): --cluster-name,
	 * else the kube-system namespace's UID. spotpool run may fill the string only after
	 * ctl_new, but always before the first ctl_set_active_until that lets passes act. */
	const char *cluster_name;
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
/* Informers and workers are running (for health checks and the systemd watchdog). */
bool ctl_healthy(struct ctl *c);
/* Pools known and owned instances last observed, for STATUS= lines. */
void ctl_counts(struct ctl *c, size_t *ret_pools, size_t *ret_instances);
/* Gates mutations: only a leader acts. Mutations are allowed until until_ms on the
 * monotonic clock (INT64_MAX: always, the default; 0: never, a standby). */
void ctl_set_active_until(struct ctl *c, int64_t until_ms);
/* How long an inventory poller no pool reads lives on: four resync periods, and at
 * least the longest backoff plus two read timeouts (5.5 minutes). */
int64_t ctl_poller_retire_ms(int resync_seconds);

#endif
