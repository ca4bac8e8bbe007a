/* metrics: the Prometheus registry: what domain events update (pool sizes, launches,
 * terminations, cloud and apiserver calls, reconciles, the work queue), rendered by the
 * exposition (exposition.h) and served by httpd (httpd.h).
 *
 * One process-wide registry behind one mutex: every function here may be called from
 * any thread, and no initialisation is needed.  Names follow the Prometheus naming
 * practices: counters end in _total, durations are histograms in seconds, and what
 * varies is a label, never part of a name.  Label values are a pool's namespace and
 * name, fixed sets (outcome, reason of a termination) and cloud error codes, so no
 * secret can reach the output.  Open-ended values (cvm action and code, launch failure
 * reason) and the number of pools are capped, and every value is escaped, so the page
 * stays bounded whatever a peer sends. */
#ifndef SPOTPOOL_METRICS_H
#define SPOTPOOL_METRICS_H

#include "pass.h"
#include "spotpool.h"

/* Distinct values kept per open-ended label (cvm action, cvm code, launch failure
 * reason), and their longest length; further or longer ones are folded into "other"
 * so that a misbehaving peer cannot grow the registry without bound. */
#define METRICS_LABEL_VALUES_MAX 64
#define METRICS_LABEL_VALUE_LEN_MAX 128
/* Pools tracked at once; updates for further pools are dropped (and logged once) until
 * metrics_pool_forget() makes room. */
#define METRICS_POOLS_MAX 10000

/* The functions that count have the signatures of the hooks they are bound to, so the
 * domain modules include no metrics header: userdata (ignored) comes first, and the
 * wiring (run.c) hands the tables below to the modules. */

/* Per pool: what a pass reports (struct reconcile_hooks, metrics_reconcile_hooks, which
 * metrics_ctl_hooks.pass points to).  ns and pool are the Spotpool's namespace and name
 * (labels namespace, pool). */
struct reconcile_hooks;
extern const struct reconcile_hooks metrics_reconcile_hooks;

/* spotpool_pool_{minimum,maximum,desired,current}: the spec's bounds, the size the pool
 * is driven to, and its live instances as last observed. */
void metrics_pool_sizes(void *userdata, const char *ns, const char *pool, int minimum, int maximum,
			int desired, int current);
/* One RunInstances call for the pool ended with code (0 or an SP_E* class):
 * spotpool_launch_requests_total{outcome} counts it, outcome being success, capacity,
 * auth, config, throttled, transient or unknown.  A failure is also counted in
 * spotpool_launch_failures_total{reason}: reason is the Tencent Error.Code (err.reason)
 * when not NULL or empty, else the outcome. */
void metrics_launch_request(void *userdata, const char *ns, const char *pool, int code, const char *reason);
/* n (> 0; anything else is ignored, counters never go down) instances launched:
 * spotpool_instances_launched_total. */
void metrics_instances_launched(void *userdata, const char *ns, const char *pool, int n);
/* n (> 0) instances terminated by spotpool for the pass's reason why:
 * spotpool_instances_terminated_total{reason}, reason being scale_down (above the desired
 * size), cleanup (dead or broken instances, and PASS_WHY_NONE), deletion (the pool is
 * being deleted) or notice (its reclaim was announced).  Other values are ignored. */
void metrics_instances_terminated(void *userdata, const char *ns, const char *pool, enum pass_why why, int n);
/* One instance disappeared without spotpool terminating it (spot reclaim, or someone
 * else): spotpool_instances_reclaimed_total. */
void metrics_instance_reclaimed(void *userdata, const char *ns, const char *pool);
/* An instance's Node became Ready this long after its launch (observed once per instance:
 * status nodeReadySeconds). */
void metrics_node_ready(void *userdata, double seconds);
/* Pods evicted by drains, and evictions refused for now (a PodDisruptionBudget, a
 * conflict): spotpool_evictions_total{result="evicted"|"refused"}. */
void metrics_evictions(void *userdata, size_t evicted, size_t refused);
/* spotpool_pool_below_minimum_seconds_total{namespace,pool} accumulates, from successive
 * metrics_pool_sizes calls, the time from a call that saw current < minimum to the next
 * call (at most this many seconds per interval, so that a long gap, a standby spell for
 * instance, is not all counted). */
#define METRICS_BELOW_MINIMUM_GAP_MAX_S 600
/* The monotonic clock (ms) metrics_pool_sizes reads; NULL restores sp_mono_ms (tests). */
void metrics_set_clock(int64_t (*now_ms)(void));

/* Offerings (not per pool).  One RunInstances call on the offering (zone, instance_type)
 * ended with code (0 or an SP_E* class) and reason (the Tencent Error.Code, or NULL):
 * spotpool_offering_launches_total{zone,instance_type,outcome}, outcome being success,
 * sold_out (cvm_code_is_sold_out(reason)), capacity (other capacity answers: quotas),
 * auth, config, throttled, transient or unknown (all eight exported per offering).  zone
 * and instance_type are open-ended labels (capped like cvm codes); NULL or empty is
 * "unknown".  A pass reports it (metrics_reconcile_hooks). */
void metrics_offering_launch(void *userdata, const char *zone, const char *instance_type, int code,
			     const char *reason);

/* The controller (struct ctl_hooks): run.c gives metrics_ctl_hooks to ctl_new
 * (ctl_options.hooks); it binds metrics_wq_hooks, metrics_reconcile_hooks and
 * metrics_cvm_observe below and these three. */
struct ctl_hooks;
extern const struct ctl_hooks metrics_ctl_hooks;
/* Counts one reconcile: spotpool_reconciles_total, spotpool_reconcile_duration_seconds and,
 * when failed, spotpool_reconcile_errors_total. */
void metrics_reconcile_observe(void *userdata, double seconds, bool failed);
/* The pool was deleted: drops every one of its series. */
void metrics_pool_forget(void *userdata, const char *ns, const char *pool);
/* spotpool_offerings_unavailable is read at each scrape from the sold-out memory s (the
 * controller's; NULL: none, 0). */
struct soldout;
void metrics_set_soldout(void *userdata, struct soldout *s);

/* Counts one CVM API call in spotpool_cvm_requests_total{action,code} and its duration in
 * spotpool_cvm_request_duration_seconds{action}.  Same signature as cvm_observe_fn so it
 * can be passed directly; userdata is ignored. */
void metrics_cvm_observe(void *userdata, const char *action, const char *code, double seconds);
/* The CVM API rate limit (rate.h): spotpool_cvm_rate_limit_wait_seconds_total{action}
 * adds the seconds a call waited for its token (the series appears at the first call, at
 * 0), spotpool_cvm_rate_limit{action} is the rate the action's most recently
 * used bucket (credentials, region) paces at, lowered after RequestLimitExceeded.  They
 * have the hooks' signatures; run.c gives metrics_rate_hooks to the controller's
 * limiter (ctl_options.rate). */
struct rate_hooks;
extern const struct rate_hooks metrics_rate_hooks;
void metrics_cvm_rate_wait(void *userdata, const char *action, double seconds);
void metrics_cvm_rate(void *userdata, const char *action, double per_second);
/* Counts one request to the Kubernetes apiserver in
 * spotpool_kube_requests_total{verb,resource,code}.  verb is the HTTP method (GET, POST, PUT,
 * PATCH, DELETE) or WATCH, anything else "other"; resource is a short fixed name chosen by
 * kube.c (spotpools, spotpools/status, events, leases, secrets, discovery, other) and goes
 * through the open-ended label cap; status is the HTTP status the apiserver answered (code
 * "200", ...; also when the request failed afterwards, e.g. a reply too large), 0 when no
 * answer came (code "error"), and anything outside 100..599 is "other".  A watch is
 * counted when it ends.  run.c sets metrics_kube_hooks in the daemon's kube_config. */
struct kube_hooks;
extern const struct kube_hooks metrics_kube_hooks;
void metrics_kube_request(void *userdata, const char *verb, const char *resource, long status);
/* spotpool_leader: true when this process leads or leader election is off (run.c). */
void metrics_set_leader(bool leading);

/* The controller's work queue (one per process): spotpool_workqueue_depth,
 * spotpool_workqueue_queue_duration_seconds, spotpool_workqueue_work_duration_seconds and
 * spotpool_workqueue_retries_total, fed by the queue's hooks (metrics_ctl_hooks.queue).
 * The functions have the hooks' signatures (see struct wq_hooks); userdata is ignored. */
struct wq_hooks;
extern const struct wq_hooks metrics_wq_hooks;
void metrics_workqueue_depth(void *userdata, size_t depth);
void metrics_workqueue_queue_latency(void *userdata, double seconds);
void metrics_workqueue_work_duration(void *userdata, double seconds);
void metrics_workqueue_retry(void *userdata);

/* Drops every series and frees the registry's memory (tests, shutdown). */
void metrics_reset(void);

/* The registry's state, for the exposition alone: it reads it between metrics_lock()
 * and metrics_unlock() and writes nothing.  Label sets are escaped once, when a series
 * is created, so rendering only copies them. */

/* Histogram bucket upper bounds, in seconds: of API calls and reconciles; of the work
 * queue's waits and work; of launch -> Node Ready. */
struct metrics_buckets {
	const double *le;
	size_t n;
};
#define METRICS_BUCKETS_MAX 12
extern const struct metrics_buckets metrics_request_buckets, metrics_queue_buckets, metrics_node_ready_buckets;

struct metrics_histogram {
	uint64_t counts[METRICS_BUCKETS_MAX + 1];  /* per bucket, not cumulative; [n] is +Inf */
	double sum;
};

/* One series of a labelled family, a counter or a histogram. */
struct metrics_series {
	char *a, *b;   /* the label values that tell it from its siblings; b may be NULL */
	char *labels;  /* the whole label set */
	uint64_t n;
	double value;  /* a gauge's value, or a counter of seconds */
	struct metrics_histogram h;
};

struct metrics_series_vec {
	struct metrics_series *v;
	size_t n, cap;
};

enum { METRICS_GAUGE_MINIMUM, METRICS_GAUGE_MAXIMUM, METRICS_GAUGE_DESIRED, METRICS_GAUGE_CURRENT, METRICS_N_GAUGES };
/* A RunInstances call's outcome, named by metrics_outcome_names; offerings also count
 * METRICS_OUTCOME_SOLD_OUT. */
enum {
	METRICS_OUTCOME_SUCCESS, METRICS_OUTCOME_CAPACITY, METRICS_OUTCOME_AUTH, METRICS_OUTCOME_CONFIG,
	METRICS_OUTCOME_THROTTLED, METRICS_OUTCOME_TRANSIENT, METRICS_OUTCOME_UNKNOWN, METRICS_N_OUTCOMES
};
#define METRICS_OUTCOME_SOLD_OUT METRICS_N_OUTCOMES
#define METRICS_N_OFFERING_OUTCOMES (METRICS_N_OUTCOMES + 1)
extern const char *const metrics_outcome_names[METRICS_N_OUTCOMES];
/* spotpool_instances_terminated_total's reasons: scale_down, cleanup, deletion, notice. */
enum {
	METRICS_TERMINATED_SCALE_DOWN, METRICS_TERMINATED_CLEANUP, METRICS_TERMINATED_DELETION,
	METRICS_TERMINATED_NOTICE, METRICS_N_TERMINATIONS
};
/* Plain counters of a pool: METRICS_COUNT_TERMINATED + t counts terminations for reason t. */
enum {
	METRICS_COUNT_LAUNCHED, METRICS_COUNT_RECLAIMED, METRICS_COUNT_TERMINATED,
	METRICS_N_COUNTS = METRICS_COUNT_TERMINATED + METRICS_N_TERMINATIONS
};
/* GET, POST, PUT, PATCH, DELETE, WATCH and other. */
#define METRICS_N_KUBE_VERBS 7

struct metrics_pool {
	char *ns, *pool;
	char *labels;  /* namespace="...",pool="..." */
	bool has[METRICS_N_GAUGES];
	int gauges[METRICS_N_GAUGES];
	/* spotpool_pool_below_minimum_seconds_total: the time between two metrics_pool_sizes
	 * calls counts when the first saw the pool below its minimum. */
	double below_seconds;
	bool below;
	int64_t sizes_at;  /* the clock's ms at the last metrics_pool_sizes */
	uint64_t requests[METRICS_N_OUTCOMES];
	uint64_t counts[METRICS_N_COUNTS];
	struct metrics_series_vec failures;  /* by reason */
};

struct metrics_offering {
	char *zone, *type;
	char *labels;  /* zone="...",instance_type="..." */
	uint64_t n[METRICS_N_OFFERING_OUTCOMES];  /* by outcome (METRICS_OUTCOME_*) */
};

struct metrics_registry {
	struct metrics_offering *offerings;
	size_t n_offerings, cap_offerings;
	struct strv offering_zones, offering_types;  /* label values admitted so far */
	struct metrics_pool *pools;  /* sorted by namespace and name: the exposition order */
	size_t n_pools, cap_pools;
	bool pools_full_logged;
	struct metrics_series_vec cvm_requests;   /* by action, code */
	struct metrics_series_vec cvm_durations;  /* by action */
	struct metrics_series_vec cvm_rate_waits; /* by action: seconds waited for the rate limit */
	struct metrics_series_vec cvm_rates;      /* by action: calls per second it paces at */
	struct strv actions, codes, reasons;  /* open-ended label values admitted so far */
	struct metrics_series_vec kube_requests[METRICS_N_KUBE_VERBS];  /* by verb (index), resource, code */
	struct strv kube_resources;
	struct metrics_histogram reconcile;
	uint64_t reconciles, reconcile_errors;
	struct metrics_histogram node_ready;
	uint64_t evicted, eviction_refused;
	bool leader;
	size_t wq_depth;
	struct metrics_histogram wq_queue, wq_work;
	uint64_t wq_retries;
};

/* Takes the registry's lock and lends its state until metrics_unlock(). */
const struct metrics_registry *metrics_lock(void);
void metrics_unlock(void);
/* spotpool_offerings_unavailable: offerings the sold-out memory given to
 * metrics_set_soldout holds now (0 without one); takes that memory's lock, so it is
 * called before metrics_lock(), never under it. */
size_t metrics_offerings_unavailable(void);

#endif
