/* metrics: the Prometheus registry: the series domain events update, behind one lock.
 * Series live in small arrays scanned linearly: a few thousand pools cost microseconds
 * per update and a millisecond per scrape, far below the scrape interval, and the code
 * stays obvious.  The page is the exposition's (exposition.h). */
#include "metrics.h"
#include "buf.h"
#include "ctl.h"
#include "cvm.h"
#include "kube.h"
#include "log.h"
#include "rate.h"
#include "reconcile.h"
#include "soldout.h"
#include "wq.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Bucket upper bounds, in seconds: API calls and reconciles take 50 ms to 10 s; a key
 * waits for a worker for about nothing up to minutes when the workers are swamped. */
static const double request_le[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const double queue_le[] = {0.001, 0.01, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
/* Launch -> Node Ready: a GPU node boots, installs and joins in minutes. */
static const double node_ready_le[] = {30, 60, 90, 120, 180, 240, 300, 420, 600, 900, 1800, 3600};
const struct metrics_buckets metrics_request_buckets = {request_le, N_ELEMS(request_le)};
const struct metrics_buckets metrics_node_ready_buckets = {node_ready_le, N_ELEMS(node_ready_le)};
const struct metrics_buckets metrics_queue_buckets = {queue_le, N_ELEMS(queue_le)};
_Static_assert(N_ELEMS(request_le) <= METRICS_BUCKETS_MAX && N_ELEMS(queue_le) <= METRICS_BUCKETS_MAX &&
	       N_ELEMS(node_ready_le) <= METRICS_BUCKETS_MAX, "METRICS_BUCKETS_MAX");

const char *const metrics_outcome_names[METRICS_N_OUTCOMES] = {
	"success", "capacity", "auth", "config", "throttled", "transient", "unknown",
};
/* Verbs of spotpool_kube_requests_total; the last one takes any other method. */
static const char *const kube_verbs[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "WATCH", "other"};
_Static_assert(N_ELEMS(kube_verbs) == METRICS_N_KUBE_VERBS, "METRICS_N_KUBE_VERBS");

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct metrics_registry reg;
static int64_t (*clock_ms)(void) = sp_mono_ms;
/* The controller's sold-out memory, read at each scrape; its own lock, so that the
 * controller can take it away (metrics_set_soldout(NULL)) while a scrape runs. */
static pthread_mutex_t soldout_lock = PTHREAD_MUTEX_INITIALIZER;
static struct soldout *soldout;

void metrics_set_soldout(void *userdata, struct soldout *s)
{
	(void)userdata;
	pthread_mutex_lock(&soldout_lock);
	soldout = s;
	pthread_mutex_unlock(&soldout_lock);
}

size_t metrics_offerings_unavailable(void)
{
	pthread_mutex_lock(&soldout_lock);
	size_t n = soldout ? soldout_unavailable(soldout, sp_mono_ms()) : 0;
	pthread_mutex_unlock(&soldout_lock);
	return n;
}

/* Appends ,k="v" (no comma first) with backslash, double quote and newline escaped. */
static void label_into(struct buf *b, const char *k, const char *v)
{
	buf_printf(b, "%s%s=\"", b->len ? "," : "", k);
	for (; *v; v++) {
		const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
		if (esc)
			buf_puts(b, esc);
		else
			buf_append(b, v, 1);
	}
	buf_puts(b, "\"");
}

/* The escaped label set ka="a",kb="b"; caller frees. */
static char *label_pair(const char *ka, const char *a, const char *kb, const char *b)
{
	struct buf l;
	buf_init(&l, SIZE_MAX);
	label_into(&l, ka, a);
	label_into(&l, kb, b);
	return buf_steal(&l);
}

/* The series of sv labelled a (and b), created with the label set
 * prefix,ka="a"[,kb="b"] if new; prefix is pre-escaped or NULL.  No maximum is needed
 * for the labels: values are Kubernetes names or went through admit(). */
static struct metrics_series *series_get(struct metrics_series_vec *sv, const char *prefix, const char *ka, const char *a,
				 const char *kb, const char *b)
{
	for (size_t i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i].a, a) == 0 && (!b || strcmp(sv->v[i].b, b) == 0))
			return &sv->v[i];
	struct buf l;
	buf_init(&l, SIZE_MAX);
	if (prefix)
		buf_puts(&l, prefix);
	label_into(&l, ka, a);
	if (b)
		label_into(&l, kb, b);
	sv->v = sp_vec_fit(sv->v, sv->n + 1, &sv->cap, sizeof(*sv->v));
	struct metrics_series *s = &sv->v[sv->n++];
	*s = (struct metrics_series){.a = xstrdup(a), .b = b ? xstrdup(b) : NULL, .labels = buf_steal(&l)};
	return s;
}

static void series_vec_free(struct metrics_series_vec *sv)
{
	for (size_t i = 0; i < sv->n; i++) {
		free(sv->v[i].a);
		free(sv->v[i].b);
		free(sv->v[i].labels);
	}
	free(sv->v);
	*sv = (struct metrics_series_vec){0};
}

static void histogram_observe(struct metrics_histogram *h, const struct metrics_buckets *bk, double seconds)
{
	/* A stepped clock or a caller bug must not poison _sum with a negative or NaN. */
	if (!(seconds >= 0))
		seconds = 0;
	size_t i = 0;
	while (i < bk->n && seconds > bk->le[i])
		i++;
	h->counts[i]++;
	h->sum += seconds;
}

/* v if it is already known or there is room for it, else "other". */
static const char *admit(struct strv *seen, const char *v)
{
	if (strv_contains(seen, v))
		return v;
	if (seen->n >= METRICS_LABEL_VALUES_MAX || strlen(v) > METRICS_LABEL_VALUE_LEN_MAX)
		return "other";
	strv_push(seen, v);
	return v;
}

/* Pools */

static int pool_cmp(const struct metrics_pool *p, const char *ns, const char *pool)
{
	int c = strcmp(p->ns, ns);
	return c ? c : strcmp(p->pool, pool);
}

/* Where the pool's series is, or would go: series are sorted by namespace and pool
 * (every pass of every pool looks its series up), which is also their exposition
 * order. */
static size_t pool_locate(const char *ns, const char *pool, bool *found)
{
	size_t lo = 0, hi = reg.n_pools;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pool_cmp(&reg.pools[mid], ns, pool) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < reg.n_pools && pool_cmp(&reg.pools[lo], ns, pool) == 0;
	return lo;
}

static struct metrics_pool *pool_find(const char *ns, const char *pool)
{
	bool found;
	size_t i = pool_locate(ns, pool, &found);
	return found ? &reg.pools[i] : NULL;
}

/* The pool's series, created if new; NULL when METRICS_POOLS_MAX pools are tracked. */
static struct metrics_pool *pool_get(const char *ns, const char *pool)
{
	bool found;
	size_t i = pool_locate(ns, pool, &found);
	if (found)
		return &reg.pools[i];
	if (reg.n_pools >= METRICS_POOLS_MAX) {
		if (!reg.pools_full_logged)
			log_warn("metrics: more than %d pools; %s/%s and further pools are not exported",
				 METRICS_POOLS_MAX, ns, pool);
		reg.pools_full_logged = true;
		return NULL;
	}
	reg.pools = sp_vec_fit(reg.pools, reg.n_pools + 1, &reg.cap_pools, sizeof(*reg.pools));
	memmove(&reg.pools[i + 1], &reg.pools[i], (reg.n_pools - i) * sizeof(*reg.pools));
	reg.n_pools++;
	struct metrics_pool *p = &reg.pools[i];
	*p = (struct metrics_pool){.ns = xstrdup(ns), .pool = xstrdup(pool),
				  .labels = label_pair("namespace", ns, "pool", pool)};
	return p;
}

static void pool_series_free(struct metrics_pool *p)
{
	free(p->ns);
	free(p->pool);
	free(p->labels);
	series_vec_free(&p->failures);
}

static void set_gauge(struct metrics_pool *p, int which, int v)
{
	p->has[which] = true;
	p->gauges[which] = v;
}

void metrics_pool_sizes(void *userdata, const char *ns, const char *pool, int minimum, int maximum,
			int desired, int current)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	int64_t now = clock_ms();
	struct metrics_pool *p = pool_get(ns, pool);
	if (p) {
		if (p->below) {
			int64_t ms = now - p->sizes_at;
			if (ms > METRICS_BELOW_MINIMUM_GAP_MAX_S * 1000LL)
				ms = METRICS_BELOW_MINIMUM_GAP_MAX_S * 1000LL;
			if (ms > 0)
				p->below_seconds += (double)ms / 1000.0;
		}
		p->below = current < minimum;
		p->sizes_at = now;
		set_gauge(p, METRICS_GAUGE_MINIMUM, minimum);
		set_gauge(p, METRICS_GAUGE_MAXIMUM, maximum);
		set_gauge(p, METRICS_GAUGE_DESIRED, desired);
		set_gauge(p, METRICS_GAUGE_CURRENT, current);
	}
	pthread_mutex_unlock(&lock);
}

static int outcome_of(int code)
{
	switch (code) {
	case SP_ECAPACITY: return METRICS_OUTCOME_CAPACITY;
	case SP_EAUTH: case SP_EFORBIDDEN: return METRICS_OUTCOME_AUTH;
	case SP_ECONFIG: case SP_EINVAL: return METRICS_OUTCOME_CONFIG;
	case SP_ETHROTTLED: return METRICS_OUTCOME_THROTTLED;
	case SP_ETRANSIENT: case SP_EPROTO: return METRICS_OUTCOME_TRANSIENT;
	default: return code >= 0 ? METRICS_OUTCOME_SUCCESS : METRICS_OUTCOME_UNKNOWN;
	}
}

void metrics_launch_request(void *userdata, const char *ns, const char *pool, int code, const char *reason)
{
	(void)userdata;
	int outcome = outcome_of(code);
	pthread_mutex_lock(&lock);
	struct metrics_pool *p = pool_get(ns, pool);
	if (p) {
		p->requests[outcome]++;
		if (outcome != METRICS_OUTCOME_SUCCESS) {
			reason = admit(&reg.reasons, reason && *reason ? reason : metrics_outcome_names[outcome]);
			series_get(&p->failures, p->labels, "reason", reason, NULL, NULL)->n++;
		}
	}
	pthread_mutex_unlock(&lock);
}

/* Adds n > 0 to counter which (METRICS_COUNT_*) of the pool; anything else is ignored. */
static void pool_count(const char *ns, const char *pool, int which, int n)
{
	if (n <= 0)
		return;
	pthread_mutex_lock(&lock);
	struct metrics_pool *p = pool_get(ns, pool);
	if (p)
		p->counts[which] += (uint64_t)n;
	pthread_mutex_unlock(&lock);
}

void metrics_instances_launched(void *userdata, const char *ns, const char *pool, int n)
{
	(void)userdata;
	pool_count(ns, pool, METRICS_COUNT_LAUNCHED, n);
}

void metrics_instances_terminated(void *userdata, const char *ns, const char *pool, enum pass_why why, int n)
{
	static const int reason[] = {
		[PASS_WHY_NONE] = METRICS_TERMINATED_CLEANUP, [PASS_WHY_SCALE_DOWN] = METRICS_TERMINATED_SCALE_DOWN,
		[PASS_WHY_CLEANUP] = METRICS_TERMINATED_CLEANUP, [PASS_WHY_DELETION] = METRICS_TERMINATED_DELETION,
		[PASS_WHY_NOTICE] = METRICS_TERMINATED_NOTICE,
	};
	(void)userdata;
	if ((size_t)why < N_ELEMS(reason))
		pool_count(ns, pool, METRICS_COUNT_TERMINATED + reason[why], n);
}

void metrics_instance_reclaimed(void *userdata, const char *ns, const char *pool)
{
	(void)userdata;
	pool_count(ns, pool, METRICS_COUNT_RECLAIMED, 1);
}

void metrics_pool_forget(void *userdata, const char *ns, const char *pool)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	struct metrics_pool *p = pool_find(ns, pool);
	if (p) {
		pool_series_free(p);
		/* memmove rather than swap keeps the series sorted. */
		size_t i = (size_t)(p - reg.pools);
		memmove(p, p + 1, (reg.n_pools - i - 1) * sizeof(*p));
		reg.n_pools--;
		reg.pools = sp_vec_fit(reg.pools, reg.n_pools, &reg.cap_pools, sizeof(*reg.pools));
	}
	pthread_mutex_unlock(&lock);
}

void metrics_set_clock(int64_t (*now_ms)(void))
{
	pthread_mutex_lock(&lock);
	clock_ms = now_ms ? now_ms : sp_mono_ms;
	pthread_mutex_unlock(&lock);
}

/* Offerings */

void metrics_offering_launch(void *userdata, const char *zone, const char *instance_type, int code,
			     const char *reason)
{
	(void)userdata;
	int outcome = code >= 0 ? METRICS_OUTCOME_SUCCESS : cvm_code_is_sold_out(reason) ? METRICS_OUTCOME_SOLD_OUT : outcome_of(code);
	pthread_mutex_lock(&lock);
	zone = admit(&reg.offering_zones, zone && *zone ? zone : "unknown");
	instance_type = admit(&reg.offering_types, instance_type && *instance_type ? instance_type : "unknown");
	struct metrics_offering *o = NULL;
	for (size_t i = 0; i < reg.n_offerings && !o; i++)
		if (strcmp(reg.offerings[i].zone, zone) == 0 && strcmp(reg.offerings[i].type, instance_type) == 0)
			o = &reg.offerings[i];
	if (!o) {
		reg.offerings = sp_vec_fit(reg.offerings, reg.n_offerings + 1, &reg.cap_offerings, sizeof(*reg.offerings));
		o = &reg.offerings[reg.n_offerings++];
		*o = (struct metrics_offering){.zone = xstrdup(zone), .type = xstrdup(instance_type),
					      .labels = label_pair("zone", zone, "instance_type", instance_type)};
	}
	o->n[outcome]++;
	pthread_mutex_unlock(&lock);
}

/* Cloud, controller, work queue */

void metrics_cvm_observe(void *userdata, const char *action, const char *code, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	action = admit(&reg.actions, action);
	code = admit(&reg.codes, code);
	series_get(&reg.cvm_requests, NULL, "action", action, "code", code)->n++;
	histogram_observe(&series_get(&reg.cvm_durations, NULL, "action", action, NULL, NULL)->h,
			  &metrics_request_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_cvm_rate_wait(void *userdata, const char *action, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	struct metrics_series *s = series_get(&reg.cvm_rate_waits, NULL, "action", admit(&reg.actions, action), NULL, NULL);
	if (seconds > 0)  /* counters never go down, and NaN is not a duration */
		s->value += seconds;
	pthread_mutex_unlock(&lock);
}

void metrics_cvm_rate(void *userdata, const char *action, double per_second)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	struct metrics_series *s = series_get(&reg.cvm_rates, NULL, "action", admit(&reg.actions, action), NULL, NULL);
	s->value = per_second >= 0 ? per_second : 0;
	pthread_mutex_unlock(&lock);
}

const struct rate_hooks metrics_rate_hooks = {.waited = metrics_cvm_rate_wait, .rate = metrics_cvm_rate};

void metrics_kube_request(void *userdata, const char *verb, const char *resource, long status)
{
	(void)userdata;
	size_t v = 0;
	while (v < METRICS_N_KUBE_VERBS - 1 && strcmp(kube_verbs[v], verb) != 0)
		v++;
	char code[16], prefix[32];
	if (status == 0)
		snprintf(code, sizeof(code), "error");
	else if (status >= 100 && status <= 599)
		snprintf(code, sizeof(code), "%ld", status);
	else
		snprintf(code, sizeof(code), "other");
	snprintf(prefix, sizeof(prefix), "verb=\"%s\"", kube_verbs[v]);
	pthread_mutex_lock(&lock);
	resource = admit(&reg.kube_resources, resource);
	series_get(&reg.kube_requests[v], prefix, "resource", resource, "code", code)->n++;
	pthread_mutex_unlock(&lock);
}

void metrics_reconcile_observe(void *userdata, double seconds, bool failed)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	reg.reconciles++;
	if (failed)
		reg.reconcile_errors++;
	histogram_observe(&reg.reconcile, &metrics_request_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_node_ready(void *userdata, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	histogram_observe(&reg.node_ready, &metrics_node_ready_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_evictions(void *userdata, size_t evicted, size_t refused)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	reg.evicted += evicted;
	reg.eviction_refused += refused;
	pthread_mutex_unlock(&lock);
}

void metrics_set_leader(bool leading)
{
	pthread_mutex_lock(&lock);
	reg.leader = leading;
	pthread_mutex_unlock(&lock);
}

void metrics_workqueue_depth(void *userdata, size_t depth)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	reg.wq_depth = depth;
	pthread_mutex_unlock(&lock);
}

void metrics_workqueue_queue_latency(void *userdata, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	histogram_observe(&reg.wq_queue, &metrics_queue_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_workqueue_work_duration(void *userdata, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	histogram_observe(&reg.wq_work, &metrics_queue_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_workqueue_retry(void *userdata)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	reg.wq_retries++;
	pthread_mutex_unlock(&lock);
}

const struct wq_hooks metrics_wq_hooks = {
	.depth = metrics_workqueue_depth,
	.queue_latency = metrics_workqueue_queue_latency,
	.work_duration = metrics_workqueue_work_duration,
	.retry = metrics_workqueue_retry,
};

const struct kube_hooks metrics_kube_hooks = {.request = metrics_kube_request};

const struct reconcile_hooks metrics_reconcile_hooks = {
	.pool_sizes = metrics_pool_sizes,
	.launch_request = metrics_launch_request,
	.offering_launch = metrics_offering_launch,
	.instances_launched = metrics_instances_launched,
	.instances_terminated = metrics_instances_terminated,
	.instance_reclaimed = metrics_instance_reclaimed,
	.node_ready = metrics_node_ready,
	.evictions = metrics_evictions,
};

const struct ctl_hooks metrics_ctl_hooks = {
	.queue = &metrics_wq_hooks,
	.pass = &metrics_reconcile_hooks,
	.cvm_observe = metrics_cvm_observe,
	.reconciled = metrics_reconcile_observe,
	.pool_gone = metrics_pool_forget,
	.soldout = metrics_set_soldout,
};

void metrics_reset(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < reg.n_pools; i++)
		pool_series_free(&reg.pools[i]);
	free(reg.pools);
	series_vec_free(&reg.cvm_requests);
	series_vec_free(&reg.cvm_durations);
	series_vec_free(&reg.cvm_rate_waits);
	series_vec_free(&reg.cvm_rates);
	strv_clear(&reg.actions);
	strv_clear(&reg.codes);
	strv_clear(&reg.reasons);
	for (size_t i = 0; i < reg.n_offerings; i++) {
		free(reg.offerings[i].zone);
		free(reg.offerings[i].type);
		free(reg.offerings[i].labels);
	}
	free(reg.offerings);
	strv_clear(&reg.offering_zones);
	strv_clear(&reg.offering_types);
	for (size_t v = 0; v < METRICS_N_KUBE_VERBS; v++)
		series_vec_free(&reg.kube_requests[v]);
	strv_clear(&reg.kube_resources);
	reg = (struct metrics_registry){0};
	pthread_mutex_unlock(&lock);
}

const struct metrics_registry *metrics_lock(void)
{
	pthread_mutex_lock(&lock);
	return &reg;
}

void metrics_unlock(void)
{
	pthread_mutex_unlock(&lock);
}
