/* metrics: Prometheus registry and HTTP endpoints.  Series live in small arrays scanned
 * linearly: a few thousand pools cost microseconds per update and a millisecond per scrape,
 * far below the scrape interval, and the code stays obvious. */
#include "metrics.h"
#include "buf.h"
#include "cvm.h"
#include "log.h"
#include "rate.h"
#include "soldout.h"
#include "wq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Bucket upper bounds, in seconds: API calls and reconciles take 50 ms to 10 s; a key
 * waits for a worker for about nothing up to minutes when the workers are swamped. */
struct buckets {
	const double *le;
	size_t n;
};
static const double request_le[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const double queue_le[] = {0.001, 0.01, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
/* Launch -> Node Ready: a GPU node boots, installs and joins in minutes. */
static const double node_ready_le[] = {30, 60, 90, 120, 180, 240, 300, 420, 600, 900, 1800, 3600};
static const struct buckets request_buckets = {request_le, N_ELEMS(request_le)};
static const struct buckets node_ready_buckets = {node_ready_le, N_ELEMS(node_ready_le)};
static const struct buckets queue_buckets = {queue_le, N_ELEMS(queue_le)};
#define BUCKETS_MAX 12
_Static_assert(N_ELEMS(request_le) <= BUCKETS_MAX && N_ELEMS(queue_le) <= BUCKETS_MAX &&
	       N_ELEMS(node_ready_le) <= BUCKETS_MAX, "BUCKETS_MAX");

struct histogram {
	uint64_t counts[BUCKETS_MAX + 1];  /* per bucket, not cumulative; [n] is +Inf */
	double sum;
};

/* One series of a labelled family, a counter or a histogram.  Label sets are escaped
 * once, when a series is created, so rendering only copies them. */
struct series {
	char *a, *b;   /* the label values that tell it from its siblings; b may be NULL */
	char *labels;  /* the whole label set */
	uint64_t n;
	double value;  /* a gauge's value, or a counter of seconds */
	struct histogram h;
};

struct series_vec {
	struct series *v;
	size_t n, cap;
};

enum { G_MINIMUM, G_MAXIMUM, G_DESIRED, G_CURRENT, N_GAUGES };
enum { O_SUCCESS, O_CAPACITY, O_AUTH, O_CONFIG, O_THROTTLED, O_TRANSIENT, O_UNKNOWN, N_OUTCOMES };
#define N_TERMINATIONS (METRICS_TERMINATED_NOTICE + 1)
/* Plain counters of a pool: C_TERMINATED + t counts terminations for reason t. */
enum { C_LAUNCHED, C_RECLAIMED, C_TERMINATED, N_COUNTERS = C_TERMINATED + N_TERMINATIONS };

static const char *const outcome_names[N_OUTCOMES] = {
	"success", "capacity", "auth", "config", "throttled", "transient", "unknown",
};
/* Verbs of spotpool_kube_requests_total; the last one takes any other method. */
static const char *const kube_verbs[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "WATCH", "other"};
#define N_KUBE_VERBS N_ELEMS(kube_verbs)
static const char *const termination_names[N_TERMINATIONS] = {
	[METRICS_TERMINATED_SCALE_DOWN] = "scale_down", [METRICS_TERMINATED_CLEANUP] = "cleanup",
	[METRICS_TERMINATED_DELETION] = "deletion", [METRICS_TERMINATED_NOTICE] = "notice",
};

struct pool_series {
	char *ns, *pool;
	char *labels;  /* namespace="...",pool="..." */
	bool has[N_GAUGES];
	int gauges[N_GAUGES];
	/* spotpool_pool_below_minimum_seconds_total: the time between two metrics_pool_sizes
	 * calls counts when the first saw the pool below its minimum. */
	double below_seconds;
	bool below;
	int64_t sizes_at;  /* clock_ms() of the last metrics_pool_sizes */
	uint64_t requests[N_OUTCOMES];
	uint64_t counts[N_COUNTERS];
	struct series_vec failures;  /* by reason */
};

/* spotpool_offering_launches_total: outcome index O_* of outcome_of(), or O_SOLD_OUT. */
#define O_SOLD_OUT N_OUTCOMES
#define N_OFFERING_OUTCOMES (N_OUTCOMES + 1)
static const int offering_outcome_order[N_OFFERING_OUTCOMES] = {
	O_SUCCESS, O_SOLD_OUT, O_CAPACITY, O_AUTH, O_CONFIG, O_THROTTLED, O_TRANSIENT, O_UNKNOWN,
};

struct offering_series {
	char *zone, *type;
	char *labels;  /* zone="...",instance_type="..." */
	uint64_t n[N_OFFERING_OUTCOMES];
};

struct registry {
	struct offering_series *offerings;
	size_t n_offerings, cap_offerings;
	struct strv offering_zones, offering_types;  /* label values admitted so far */
	struct pool_series *pools;
	size_t n_pools, cap_pools;
	bool pools_full_logged;
	struct series_vec cvm_requests;   /* by action, code */
	struct series_vec cvm_durations;  /* by action */
	struct series_vec cvm_rate_waits; /* by action: seconds waited for the rate limit */
	struct series_vec cvm_rates;      /* by action: calls per second it paces at */
	struct strv actions, codes, reasons;  /* open-ended label values admitted so far */
	struct series_vec kube_requests[N_KUBE_VERBS];  /* by verb (index), resource, code */
	struct strv kube_resources;
	struct histogram reconcile;
	uint64_t reconciles, reconcile_errors;
	struct histogram node_ready;
	uint64_t evicted, eviction_refused;
	bool leader;
	size_t wq_depth;
	struct histogram wq_queue, wq_work;
	uint64_t wq_retries;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct registry reg;
static int64_t (*clock_ms)(void) = sp_mono_ms;
/* The controller's sold-out memory, read at each scrape; its own lock, so that the
 * controller can take it away (metrics_set_soldout(NULL)) while a scrape runs. */
static pthread_mutex_t soldout_lock = PTHREAD_MUTEX_INITIALIZER;
static struct soldout *soldout;

void metrics_set_soldout(struct soldout *s)
{
	pthread_mutex_lock(&soldout_lock);
	soldout = s;
	pthread_mutex_unlock(&soldout_lock);
}

static size_t offerings_unavailable(void)
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
static struct series *series_get(struct series_vec *sv, const char *prefix, const char *ka, const char *a,
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
	struct series *s = &sv->v[sv->n++];
	*s = (struct series){.a = xstrdup(a), .b = b ? xstrdup(b) : NULL, .labels = buf_steal(&l)};
	return s;
}

static void series_vec_free(struct series_vec *sv)
{
	for (size_t i = 0; i < sv->n; i++) {
		free(sv->v[i].a);
		free(sv->v[i].b);
		free(sv->v[i].labels);
	}
	free(sv->v);
	*sv = (struct series_vec){0};
}

static void histogram_observe(struct histogram *h, const struct buckets *bk, double seconds)
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

static int pool_cmp(const struct pool_series *p, const char *ns, const char *pool)
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

static struct pool_series *pool_find(const char *ns, const char *pool)
{
	bool found;
	size_t i = pool_locate(ns, pool, &found);
	return found ? &reg.pools[i] : NULL;
}

/* The pool's series, created if new; NULL when METRICS_POOLS_MAX pools are tracked. */
static struct pool_series *pool_get(const char *ns, const char *pool)
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
	struct pool_series *p = &reg.pools[i];
	*p = (struct pool_series){.ns = xstrdup(ns), .pool = xstrdup(pool),
				  .labels = label_pair("namespace", ns, "pool", pool)};
	return p;
}

static void pool_series_free(struct pool_series *p)
{
	free(p->ns);
	free(p->pool);
	free(p->labels);
	series_vec_free(&p->failures);
}

static void set_gauge(struct pool_series *p, int which, int v)
{
	p->has[which] = true;
	p->gauges[which] = v;
}

void metrics_pool_sizes(const char *ns, const char *pool, int minimum, int maximum, int desired,
			int current)
{
	pthread_mutex_lock(&lock);
	int64_t now = clock_ms();
	struct pool_series *p = pool_get(ns, pool);
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
		set_gauge(p, G_MINIMUM, minimum);
		set_gauge(p, G_MAXIMUM, maximum);
		set_gauge(p, G_DESIRED, desired);
		set_gauge(p, G_CURRENT, current);
	}
	pthread_mutex_unlock(&lock);
}

static int outcome_of(int code)
{
	switch (code) {
	case SP_ECAPACITY: return O_CAPACITY;
	case SP_EAUTH: case SP_EFORBIDDEN: return O_AUTH;
	case SP_ECONFIG: case SP_EINVAL: return O_CONFIG;
	case SP_ETHROTTLED: return O_THROTTLED;
	case SP_ETRANSIENT: case SP_EPROTO: return O_TRANSIENT;
	default: return code >= 0 ? O_SUCCESS : O_UNKNOWN;
	}
}

void metrics_launch_request(const char *ns, const char *pool, int code, const char *reason)
{
	int outcome = outcome_of(code);
	pthread_mutex_lock(&lock);
	struct pool_series *p = pool_get(ns, pool);
	if (p) {
		p->requests[outcome]++;
		if (outcome != O_SUCCESS) {
			reason = admit(&reg.reasons, reason && *reason ? reason : outcome_names[outcome]);
			series_get(&p->failures, p->labels, "reason", reason, NULL, NULL)->n++;
		}
	}
	pthread_mutex_unlock(&lock);
}

/* Adds n > 0 to counter which (C_*) of the pool; anything else is ignored. */
static void pool_count(const char *ns, const char *pool, int which, int n)
{
	if (n <= 0)
		return;
	pthread_mutex_lock(&lock);
	struct pool_series *p = pool_get(ns, pool);
	if (p)
		p->counts[which] += (uint64_t)n;
	pthread_mutex_unlock(&lock);
}

void metrics_instances_launched(const char *ns, const char *pool, int n)
{
	pool_count(ns, pool, C_LAUNCHED, n);
}

void metrics_instances_terminated(const char *ns, const char *pool, enum metrics_termination reason, int n)
{
	if (reason >= METRICS_TERMINATED_SCALE_DOWN && reason <= METRICS_TERMINATED_DELETION)
		pool_count(ns, pool, C_TERMINATED + (int)reason, n);
}

void metrics_instance_reclaimed(const char *ns, const char *pool)
{
	pool_count(ns, pool, C_RECLAIMED, 1);
}

void metrics_pool_forget(const char *ns, const char *pool)
{
	pthread_mutex_lock(&lock);
	struct pool_series *p = pool_find(ns, pool);
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

void metrics_offering_launch(const char *zone, const char *instance_type, int code, const char *reason)
{
	int outcome = code >= 0 ? O_SUCCESS : cvm_code_is_sold_out(reason) ? O_SOLD_OUT : outcome_of(code);
	pthread_mutex_lock(&lock);
	zone = admit(&reg.offering_zones, zone && *zone ? zone : "unknown");
	instance_type = admit(&reg.offering_types, instance_type && *instance_type ? instance_type : "unknown");
	struct offering_series *o = NULL;
	for (size_t i = 0; i < reg.n_offerings && !o; i++)
		if (strcmp(reg.offerings[i].zone, zone) == 0 && strcmp(reg.offerings[i].type, instance_type) == 0)
			o = &reg.offerings[i];
	if (!o) {
		reg.offerings = sp_vec_fit(reg.offerings, reg.n_offerings + 1, &reg.cap_offerings, sizeof(*reg.offerings));
		o = &reg.offerings[reg.n_offerings++];
		*o = (struct offering_series){.zone = xstrdup(zone), .type = xstrdup(instance_type),
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
			  &request_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_cvm_rate_wait(void *userdata, const char *action, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	struct series *s = series_get(&reg.cvm_rate_waits, NULL, "action", admit(&reg.actions, action), NULL, NULL);
	if (seconds > 0)  /* counters never go down, and NaN is not a duration */
		s->value += seconds;
	pthread_mutex_unlock(&lock);
}

void metrics_cvm_rate(void *userdata, const char *action, double per_second)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	struct series *s = series_get(&reg.cvm_rates, NULL, "action", admit(&reg.actions, action), NULL, NULL);
	s->value = per_second >= 0 ? per_second : 0;
	pthread_mutex_unlock(&lock);
}

const struct rate_hooks metrics_rate_hooks = {.waited = metrics_cvm_rate_wait, .rate = metrics_cvm_rate};

void metrics_kube_request(const char *verb, const char *resource, long status)
{
	size_t v = 0;
	while (v < N_KUBE_VERBS - 1 && strcmp(kube_verbs[v], verb) != 0)
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

void metrics_reconcile_observe(double seconds, bool failed)
{
	pthread_mutex_lock(&lock);
	reg.reconciles++;
	if (failed)
		reg.reconcile_errors++;
	histogram_observe(&reg.reconcile, &request_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_node_ready(double seconds)
{
	pthread_mutex_lock(&lock);
	histogram_observe(&reg.node_ready, &node_ready_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_evictions(size_t evicted, size_t refused)
{
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
	histogram_observe(&reg.wq_queue, &queue_buckets, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_workqueue_work_duration(void *userdata, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	histogram_observe(&reg.wq_work, &queue_buckets, seconds);
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
	for (size_t v = 0; v < N_KUBE_VERBS; v++)
		series_vec_free(&reg.kube_requests[v]);
	strv_clear(&reg.kube_resources);
	reg = (struct registry){0};
	pthread_mutex_unlock(&lock);
}

/* Rendering: the first failed append (page too large) is remembered and ends the render. */
struct page {
	struct buf b;
	int err;
};

static void emit(struct page *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct page *pg, const char *fmt, ...)
{
	if (pg->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	pg->err = buf_vprintf(&pg->b, fmt, ap);
	va_end(ap);
}

static void family(struct page *pg, const char *name, const char *type, const char *help)
{
	emit(pg, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{labels[,key="value"]} n; labels is pre-escaped ("" for none), value a constant. */
static void counter_line(struct page *pg, const char *name, const char *labels, const char *key,
			 const char *value, uint64_t n)
{
	const char *sep = *labels && key ? "," : "";
	if (key)
		emit(pg, "%s{%s%s%s=\"%s\"} %" PRIu64 "\n", name, labels, sep, key, value, n);
	else if (*labels)
		emit(pg, "%s{%s} %" PRIu64 "\n", name, labels, n);
	else
		emit(pg, "%s %" PRIu64 "\n", name, n);
}

/* The shortest of %.15g and %.17g that reads back as v: 0.3, not 0.29999999999999999. */
static void format_double(char out[32], double v)
{
	snprintf(out, 32, "%.15g", v);
	if (strtod(out, NULL) != v)
		snprintf(out, 32, "%.17g", v);
}

/* labels is a pre-escaped label set, "" for none. */
static void histogram_render(struct page *pg, const char *name, const char *labels,
			     const struct histogram *h, const struct buckets *bk)
{
	const char *sep = *labels ? "," : "";
	uint64_t cumulative = 0;
	for (size_t i = 0; i < bk->n; i++) {
		cumulative += h->counts[i];
		emit(pg, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep, bk->le[i], cumulative);
	}
	cumulative += h->counts[bk->n];
	emit(pg, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cumulative);
	const char *open = *labels ? "{" : "", *close = *labels ? "}" : "";
	char sum[32];
	format_double(sum, h->sum);
	emit(pg, "%s_sum%s%s%s %s\n", name, open, labels, close, sum);
	emit(pg, "%s_count%s%s%s %" PRIu64 "\n", name, open, labels, close, cumulative);
}

static void render_pools(struct page *pg)
{
	static const char *const gauges[N_GAUGES][2] = {
		[G_MINIMUM] = {"spotpool_pool_minimum", "The pool's spec.minimum."},
		[G_MAXIMUM] = {"spotpool_pool_maximum", "The pool's spec.maximum."},
		[G_DESIRED] = {"spotpool_pool_desired", "Instances the pool is being driven to."},
		[G_CURRENT] = {"spotpool_pool_current", "Live instances of the pool, as last observed."},
	};
	for (int g = 0; g < N_GAUGES; g++) {
		family(pg, gauges[g][0], "gauge", gauges[g][1]);
		for (size_t i = 0; i < reg.n_pools; i++)
			if (reg.pools[i].has[g])
				emit(pg, "%s{%s} %d\n", gauges[g][0], reg.pools[i].labels, reg.pools[i].gauges[g]);
	}
	const char *name = "spotpool_launch_requests_total";
	family(pg, name, "counter", "RunInstances calls for the pool, by outcome.");
	for (size_t i = 0; i < reg.n_pools; i++)
		for (int o = 0; o < N_OUTCOMES; o++)
			counter_line(pg, name, reg.pools[i].labels, "outcome", outcome_names[o],
				     reg.pools[i].requests[o]);
	name = "spotpool_launch_failures_total";
	family(pg, name, "counter", "Failed RunInstances calls for the pool, by Tencent error code or class.");
	for (size_t i = 0; i < reg.n_pools; i++)
		for (size_t f = 0; f < reg.pools[i].failures.n; f++)
			counter_line(pg, name, reg.pools[i].failures.v[f].labels, NULL, NULL,
				     reg.pools[i].failures.v[f].n);
	name = "spotpool_instances_launched_total";
	family(pg, name, "counter", "Instances launched for the pool.");
	for (size_t i = 0; i < reg.n_pools; i++)
		counter_line(pg, name, reg.pools[i].labels, NULL, NULL, reg.pools[i].counts[C_LAUNCHED]);
	name = "spotpool_instances_terminated_total";
	family(pg, name, "counter", "Instances of the pool terminated by spotpool, by reason.");
	for (size_t i = 0; i < reg.n_pools; i++)
		for (int t = 0; t < N_TERMINATIONS; t++)
			counter_line(pg, name, reg.pools[i].labels, "reason", termination_names[t],
				     reg.pools[i].counts[C_TERMINATED + t]);
	name = "spotpool_instances_reclaimed_total";
	family(pg, name, "counter",
	       "Instances of the pool that went away or died without spotpool terminating them (spot reclaims).");
	for (size_t i = 0; i < reg.n_pools; i++)
		counter_line(pg, name, reg.pools[i].labels, NULL, NULL, reg.pools[i].counts[C_RECLAIMED]);
	name = "spotpool_pool_below_minimum_seconds_total";
	family(pg, name, "counter", "Seconds the pool was observed with fewer live instances than its minimum.");
	for (size_t i = 0; i < reg.n_pools; i++) {
		if (!reg.pools[i].has[G_MINIMUM])
			continue;
		char v[32];
		format_double(v, reg.pools[i].below_seconds);
		emit(pg, "%s{%s} %s\n", name, reg.pools[i].labels, v);
	}
}

static void render_offerings(struct page *pg, size_t unavailable)
{
	family(pg, "spotpool_offerings_unavailable", "gauge",
	       "Offerings (credentials, region, zone, instance type) currently marked sold out, shared by every pool.");
	emit(pg, "spotpool_offerings_unavailable %zu\n", unavailable);
	const char *name = "spotpool_offering_launches_total";
	family(pg, name, "counter", "RunInstances calls by offering (zone, instance type) and outcome.");
	for (size_t i = 0; i < reg.n_offerings; i++)
		for (int k = 0; k < N_OFFERING_OUTCOMES; k++) {
			int o = offering_outcome_order[k];
			counter_line(pg, name, reg.offerings[i].labels, "outcome",
				     o == O_SOLD_OUT ? "sold_out" : outcome_names[o], reg.offerings[i].n[o]);
		}
}

static void render_cvm(struct page *pg)
{
	family(pg, "spotpool_cvm_requests_total", "counter", "Tencent Cloud CVM API calls by action and result code.");
	for (size_t i = 0; i < reg.cvm_requests.n; i++)
		counter_line(pg, "spotpool_cvm_requests_total", reg.cvm_requests.v[i].labels, NULL, NULL,
			     reg.cvm_requests.v[i].n);
	family(pg, "spotpool_cvm_request_duration_seconds", "histogram",
	       "Duration of Tencent Cloud CVM API calls, retries included.");
	for (size_t i = 0; i < reg.cvm_durations.n; i++)
		histogram_render(pg, "spotpool_cvm_request_duration_seconds", reg.cvm_durations.v[i].labels,
				 &reg.cvm_durations.v[i].h, &request_buckets);
	char v[32];
	family(pg, "spotpool_cvm_rate_limit_wait_seconds_total", "counter",
	       "Time CVM API calls waited for their rate limit, by action.");
	for (size_t i = 0; i < reg.cvm_rate_waits.n; i++) {
		format_double(v, reg.cvm_rate_waits.v[i].value);
		emit(pg, "spotpool_cvm_rate_limit_wait_seconds_total{%s} %s\n", reg.cvm_rate_waits.v[i].labels, v);
	}
	family(pg, "spotpool_cvm_rate_limit", "gauge",
	       "Calls per second the CVM API rate limit of the action paces at (its most recently used bucket).");
	for (size_t i = 0; i < reg.cvm_rates.n; i++) {
		format_double(v, reg.cvm_rates.v[i].value);
		emit(pg, "spotpool_cvm_rate_limit{%s} %s\n", reg.cvm_rates.v[i].labels, v);
	}
}

static void render_controller(struct page *pg)
{
	family(pg, "spotpool_reconcile_duration_seconds", "histogram", "Duration of pool reconciles.");
	histogram_render(pg, "spotpool_reconcile_duration_seconds", "", &reg.reconcile, &request_buckets);
	family(pg, "spotpool_reconciles_total", "counter", "Pool reconciles.");
	counter_line(pg, "spotpool_reconciles_total", "", NULL, NULL, reg.reconciles);
	family(pg, "spotpool_reconcile_errors_total", "counter", "Pool reconciles that failed.");
	counter_line(pg, "spotpool_reconcile_errors_total", "", NULL, NULL, reg.reconcile_errors);
	family(pg, "spotpool_node_ready_seconds", "histogram",
	       "Time from an instance's launch (CreatedTime) to its Node's Ready condition, once per instance.");
	histogram_render(pg, "spotpool_node_ready_seconds", "", &reg.node_ready, &node_ready_buckets);
	family(pg, "spotpool_evictions_total", "counter",
	       "Pods evicted by drains (evicted), and evictions refused for now by a PodDisruptionBudget or a "
	       "conflict (refused).");
	counter_line(pg, "spotpool_evictions_total", "", "result", "evicted", reg.evicted);
	counter_line(pg, "spotpool_evictions_total", "", "result", "refused", reg.eviction_refused);
	family(pg, "spotpool_leader", "gauge", "1 when this process leads (or election is off), else 0.");
	emit(pg, "spotpool_leader %d\n", reg.leader ? 1 : 0);
	family(pg, "spotpool_kube_requests_total", "counter",
	       "Requests to the Kubernetes apiserver by verb, resource and HTTP status (error: no answer).");
	for (size_t v = 0; v < N_KUBE_VERBS; v++)
		for (size_t i = 0; i < reg.kube_requests[v].n; i++)
			counter_line(pg, "spotpool_kube_requests_total", reg.kube_requests[v].v[i].labels, NULL,
				     NULL, reg.kube_requests[v].v[i].n);
}

static void render_workqueue(struct page *pg)
{
	family(pg, "spotpool_workqueue_depth", "gauge",
	       "Pools queued for a reconcile, including those waiting out a delay or backoff.");
	emit(pg, "spotpool_workqueue_depth %zu\n", reg.wq_depth);
	family(pg, "spotpool_workqueue_queue_duration_seconds", "histogram",
	       "Time a pool waited for a worker once due (added, or its delay over).");
	histogram_render(pg, "spotpool_workqueue_queue_duration_seconds", "", &reg.wq_queue, &queue_buckets);
	family(pg, "spotpool_workqueue_work_duration_seconds", "histogram",
	       "Time a worker spent on a pool, from taking it off the queue to done.");
	histogram_render(pg, "spotpool_workqueue_work_duration_seconds", "", &reg.wq_work, &queue_buckets);
	family(pg, "spotpool_workqueue_retries_total", "counter", "Failed reconciles requeued with backoff.");
	counter_line(pg, "spotpool_workqueue_retries_total", "", NULL, NULL, reg.wq_retries);
}

/* The process_* families every Prometheus client library exports, with their names,
 * types and help, read from /proc/self at each scrape (outside the registry's lock).
 * A value that cannot be read leaves its family out rather than reporting 0. */
struct process_stats {
	bool have_stat;
	double cpu_seconds, start_time_seconds;
	unsigned long long virtual_bytes, resident_bytes;
	long open_fds;                 /* -1: unknown */
	double max_fds;                /* -1: unknown */
};

static void read_process_stats(struct process_stats *ps)
{
	*ps = (struct process_stats){.open_fds = -1, .max_fds = -1};
	char text[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f)
		fclose(f);
	text[n] = '\0';
	/* After the command name, which may hold spaces and ')': fields 3 (state) on. */
	char *p = strrchr(text, ')');
	unsigned long long utime, stime, start, vsize;
	long long rss;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	if (p && tick > 0 && page > 0 &&
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
		   "%llu %llu %lld", &utime, &stime, &start, &vsize, &rss) == 5) {
		struct timespec real, boot;
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_BOOTTIME, &boot);
		ps->have_stat = true;
		ps->cpu_seconds = (double)(utime + stime) / (double)tick;
		/* starttime counts ticks since boot (suspend included, as CLOCK_BOOTTIME does):
		 * no need for /proc/stat's btime, which the unit's ProcSubset=pid hides. */
		ps->start_time_seconds = (double)real.tv_sec + real.tv_nsec / 1e9 -
					 ((double)boot.tv_sec + boot.tv_nsec / 1e9) + (double)start / (double)tick;
		ps->virtual_bytes = vsize;
		ps->resident_bytes = rss > 0 ? (unsigned long long)rss * (unsigned long long)page : 0;
	}
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		long count = 0;
		for (struct dirent *e; (e = readdir(d));)
			count += e->d_name[0] != '.';
		ps->open_fds = count - 1;  /* not the one reading the directory */
		closedir(d);
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		ps->max_fds = rl.rlim_cur == RLIM_INFINITY ? 1.8446744073709552e19 : (double)rl.rlim_cur;
}

static void render_process(struct page *pg, const struct process_stats *ps)
{
	char v[32];
	if (ps->have_stat) {
		family(pg, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
		format_double(v, ps->cpu_seconds);
		emit(pg, "process_cpu_seconds_total %s\n", v);
	}
	if (ps->open_fds >= 0) {
		family(pg, "process_open_fds", "gauge", "Number of open file descriptors.");
		emit(pg, "process_open_fds %ld\n", ps->open_fds);
	}
	if (ps->max_fds >= 0) {
		family(pg, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		format_double(v, ps->max_fds);
		emit(pg, "process_max_fds %s\n", v);
	}
	if (ps->have_stat) {
		family(pg, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
		emit(pg, "process_virtual_memory_bytes %llu\n", ps->virtual_bytes);
		family(pg, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
		emit(pg, "process_resident_memory_bytes %llu\n", ps->resident_bytes);
		family(pg, "process_start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.");
		format_double(v, ps->start_time_seconds);
		emit(pg, "process_start_time_seconds %s\n", v);
	}
}

char *metrics_render(void)
{
	struct process_stats ps;
	read_process_stats(&ps);
	struct page pg = {0};
	buf_init(&pg.b, METRICS_RENDER_MAX);
	size_t unavailable = offerings_unavailable();
	pthread_mutex_lock(&lock);
	family(&pg, "spotpool_build_info", "gauge", "Build information; the value is always 1.");
	emit(&pg, "spotpool_build_info{version=\"%s\"} 1\n", SPOTPOOL_VERSION);
	render_pools(&pg);
	render_offerings(&pg, unavailable);
	render_cvm(&pg);
	render_controller(&pg);
	render_workqueue(&pg);
	pthread_mutex_unlock(&lock);
	render_process(&pg, &ps);
	if (pg.err) {
		log_error("metrics: the page would exceed %d bytes; not serving it", METRICS_RENDER_MAX);
		buf_free(&pg.b);
		return NULL;
	}
	return buf_steal(&pg.b);
}

/* HTTP */

struct metrics_server {
	struct MHD_Daemon *daemon;
	struct metrics_health health;
};

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned int status, struct MHD_Response *r)
{
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static struct MHD_Response *response(size_t len, void *data, enum MHD_ResponseMemoryMode mode,
				     const char *content_type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, data, mode);
	/* MHD only fails here when out of memory, which is fatal in this daemon as everywhere. */
	if (!r)
		abort();
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	return r;
}

static struct MHD_Response *text_response(const char *text)
{
	return response(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT, "text/plain; charset=utf-8");
}

static enum MHD_Result serve_metrics(struct MHD_Connection *conn)
{
	char *page = metrics_render();
	if (!page)
		return queue(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, text_response("metrics too large\n"));
	return queue(conn, MHD_HTTP_OK, response(strlen(page), page, MHD_RESPMEM_MUST_FREE,
						 "text/plain; version=0.0.4; charset=utf-8"));
}

static enum MHD_Result serve_probe(struct MHD_Connection *conn, bool (*probe)(void *), void *userdata,
				   const char *failure)
{
	if (!probe || probe(userdata))
		return queue(conn, MHD_HTTP_OK, text_response("ok\n"));
	return queue(conn, MHD_HTTP_SERVICE_UNAVAILABLE, text_response(failure));
}

/* Every request is answered on the first call, right after its headers: no endpoint takes
 * a body, and MHD closes the connection after replying if a client sent one anyway. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_data_size,
			      void **req_cls)
{
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	const struct metrics_server *s = cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		struct MHD_Response *r = text_response("method not allowed\n");
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
		return queue(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	}
	if (strcmp(url, "/metrics") == 0)
		return serve_metrics(conn);
	if (strcmp(url, "/healthz") == 0)
		return serve_probe(conn, s->health.alive, s->health.userdata, "unhealthy\n");
	if (strcmp(url, "/readyz") == 0)
		return serve_probe(conn, s->health.ready, s->health.userdata, "not ready\n");
	return queue(conn, MHD_HTTP_NOT_FOUND, text_response("not found\n"));
}

static int bad_address(const char *addr, struct sp_error *err)
{
	return sp_fail(err, SP_EINVAL,
		       "metrics listen address \"%s\": expected IPV4:PORT or [IPV6]:PORT with a port 0-65535",
		       addr);
}

static bool parse_port(const char *s, in_port_t *ret_port)
{
	if (*s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	long p = strtol(s, &end, 10);
	if (errno || *end || p > 65535)
		return false;
	*ret_port = htons((uint16_t)p);
	return true;
}

/* Parses "1.2.3.4:80" or "[::1]:80"; host names are refused so that the bound address
 * is exactly what the operator wrote. */
static int parse_listen(const char *addr, struct sockaddr_storage *ss, socklen_t *ret_len,
			struct sp_error *err)
{
	const char *colon = strrchr(addr, ':');
	if (!colon)
		return bad_address(addr, err);
	_cleanup_free_ char *host = xstrndup(addr, (size_t)(colon - addr));
	size_t n = strlen(host);
	memset(ss, 0, sizeof(*ss));
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		host[n - 1] = '\0';
		a->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1 || !parse_port(colon + 1, &a->sin6_port))
			return bad_address(addr, err);
		*ret_len = sizeof(*a);
		return 0;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &a->sin_addr) != 1 || !parse_port(colon + 1, &a->sin_port))
		return bad_address(addr, err);
	*ret_len = sizeof(*a);
	return 0;
}

int metrics_listen_address_check(const char *listen_address, struct sp_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	return parse_listen(listen_address, &ss, &len, err);
}

/* Binding ourselves (rather than letting MHD do it) yields the errno for the message
 * and, through getsockname, the port picked for port 0. */
static int listen_on(const char *addr, const struct sockaddr_storage *ss, socklen_t len, int *ret_port,
		     struct sp_error *err)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sp_fail(err, SP_EIO, "metrics listen address \"%s\": socket: %s", addr, strerror(errno));
	int one = 1;
	/* A restarted daemon must not be locked out by its predecessor's TIME_WAIT sockets. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_storage bound;
	socklen_t bound_len = sizeof(bound);
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, METRICS_CONNECTION_LIMIT) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &bound_len) < 0) {
		int e = errno;
		close(fd);
		return sp_fail(err, SP_EIO, "metrics listen address \"%s\": %s", addr, strerror(e));
	}
	in_port_t port = bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						     : ((struct sockaddr_in *)&bound)->sin_port;
	*ret_port = ntohs(port);
	return fd;
}

int metrics_listen_try(const char *listen_address, struct sp_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int port, fd = parse_listen(listen_address, &ss, &len, err);
	if (fd == 0)
		fd = listen_on(listen_address, &ss, len, &port, err);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int metrics_serve(const char *listen_address, const struct metrics_health *health,
		  struct metrics_server **ret, int *ret_port, struct sp_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	int r = parse_listen(listen_address, &ss, &len, err);
	if (r < 0)
		return r;
	int port = 0;
	int fd = listen_on(listen_address, &ss, len, &port, err);
	if (fd < 0)
		return fd;
	struct metrics_server *s = xcalloc(1, sizeof(*s));
	if (health)
		s->health = *health;
	unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	/* MHD owns the listening socket from here on and closes it even when it fails to start. */
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
				     MHD_OPTION_LISTEN_SOCKET, fd,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONNECTION_LIMIT,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)METRICS_PER_IP_CONNECTION_LIMIT,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_CONNECTION_TIMEOUT_S,
				     MHD_OPTION_END);
	if (!s->daemon) {
		free(s);
		return sp_fail(err, SP_EIO, "metrics listen address \"%s\": cannot start the HTTP server",
			       listen_address);
	}
	*ret = s;
	*ret_port = port;
	return 0;
}

void metrics_server_stop(struct metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->daemon);
	free(s);
}
