/* exposition: the registry (metrics.h) as the Prometheus text page, with the process_*
 * families every client library exports.  Family names, types and help, and the order
 * of families and series, are here; the values and label sets are the registry's. */
#include "exposition.h"
#include "buf.h"
#include "log.h"
#include "metrics.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const char *const termination_names[METRICS_N_TERMINATIONS] = {
	[METRICS_TERMINATED_SCALE_DOWN] = "scale_down", [METRICS_TERMINATED_CLEANUP] = "cleanup",
	[METRICS_TERMINATED_DELETION] = "deletion", [METRICS_TERMINATED_NOTICE] = "notice",
};
/* spotpool_offering_launches_total's outcomes, in the order they are exported. */
static const int offering_outcome_order[METRICS_N_OFFERING_OUTCOMES] = {
	METRICS_OUTCOME_SUCCESS, METRICS_OUTCOME_SOLD_OUT, METRICS_OUTCOME_CAPACITY, METRICS_OUTCOME_AUTH,
	METRICS_OUTCOME_CONFIG, METRICS_OUTCOME_THROTTLED, METRICS_OUTCOME_TRANSIENT, METRICS_OUTCOME_UNKNOWN,
};

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
			     const struct metrics_histogram *h, const struct metrics_buckets *bk)
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

static void render_pools(struct page *pg, const struct metrics_registry *reg)
{
	static const char *const gauges[METRICS_N_GAUGES][2] = {
		[METRICS_GAUGE_MINIMUM] = {"spotpool_pool_minimum", "The pool's spec.minimum."},
		[METRICS_GAUGE_MAXIMUM] = {"spotpool_pool_maximum", "The pool's spec.maximum."},
		[METRICS_GAUGE_DESIRED] = {"spotpool_pool_desired", "Instances the pool is being driven to."},
		[METRICS_GAUGE_CURRENT] = {"spotpool_pool_current", "Live instances of the pool, as last observed."},
	};
	for (int g = 0; g < METRICS_N_GAUGES; g++) {
		family(pg, gauges[g][0], "gauge", gauges[g][1]);
		for (size_t i = 0; i < reg->n_pools; i++)
			if (reg->pools[i].has[g])
				emit(pg, "%s{%s} %d\n", gauges[g][0], reg->pools[i].labels, reg->pools[i].gauges[g]);
	}
	const char *name = "spotpool_launch_requests_total";
	family(pg, name, "counter", "RunInstances calls for the pool, by outcome.");
	for (size_t i = 0; i < reg->n_pools; i++)
		for (int o = 0; o < METRICS_N_OUTCOMES; o++)
			counter_line(pg, name, reg->pools[i].labels, "outcome", metrics_outcome_names[o],
				     reg->pools[i].requests[o]);
	name = "spotpool_launch_failures_total";
	family(pg, name, "counter", "Failed RunInstances calls for the pool, by Tencent error code or class.");
	for (size_t i = 0; i < reg->n_pools; i++)
		for (size_t f = 0; f < reg->pools[i].failures.n; f++)
			counter_line(pg, name, reg->pools[i].failures.v[f].labels, NULL, NULL,
				     reg->pools[i].failures.v[f].n);
	name = "spotpool_instances_launched_total";
	family(pg, name, "counter", "Instances launched for the pool.");
	for (size_t i = 0; i < reg->n_pools; i++)
		counter_line(pg, name, reg->pools[i].labels, NULL, NULL, reg->pools[i].counts[METRICS_COUNT_LAUNCHED]);
	name = "spotpool_instances_terminated_total";
	family(pg, name, "counter", "Instances of the pool terminated by spotpool, by reason.");
	for (size_t i = 0; i < reg->n_pools; i++)
		for (int t = 0; t < METRICS_N_TERMINATIONS; t++)
			counter_line(pg, name, reg->pools[i].labels, "reason", termination_names[t],
				     reg->pools[i].counts[METRICS_COUNT_TERMINATED + t]);
	name = "spotpool_instances_reclaimed_total";
	family(pg, name, "counter",
	       "Instances of the pool that went away or died without spotpool terminating them (spot reclaims).");
	for (size_t i = 0; i < reg->n_pools; i++)
		counter_line(pg, name, reg->pools[i].labels, NULL, NULL, reg->pools[i].counts[METRICS_COUNT_RECLAIMED]);
	name = "spotpool_pool_below_minimum_seconds_total";
	family(pg, name, "counter", "Seconds the pool was observed with fewer live instances than its minimum.");
	for (size_t i = 0; i < reg->n_pools; i++) {
		if (!reg->pools[i].has[METRICS_GAUGE_MINIMUM])
			continue;
		char v[32];
		format_double(v, reg->pools[i].below_seconds);
		emit(pg, "%s{%s} %s\n", name, reg->pools[i].labels, v);
	}
}

static void render_offerings(struct page *pg, const struct metrics_registry *reg, size_t unavailable)
{
	family(pg, "spotpool_offerings_unavailable", "gauge",
	       "Offerings (credentials, region, zone, instance type) currently marked sold out, shared by every pool.");
	emit(pg, "spotpool_offerings_unavailable %zu\n", unavailable);
	const char *name = "spotpool_offering_launches_total";
	family(pg, name, "counter", "RunInstances calls by offering (zone, instance type) and outcome.");
	for (size_t i = 0; i < reg->n_offerings; i++)
		for (int k = 0; k < METRICS_N_OFFERING_OUTCOMES; k++) {
			int o = offering_outcome_order[k];
			counter_line(pg, name, reg->offerings[i].labels, "outcome",
				     o == METRICS_OUTCOME_SOLD_OUT ? "sold_out" : metrics_outcome_names[o], reg->offerings[i].n[o]);
		}
}

static void render_cvm(struct page *pg, const struct metrics_registry *reg)
{
	family(pg, "spotpool_cvm_requests_total", "counter", "Tencent Cloud CVM API calls by action and result code.");
	for (size_t i = 0; i < reg->cvm_requests.n; i++)
		counter_line(pg, "spotpool_cvm_requests_total", reg->cvm_requests.v[i].labels, NULL, NULL,
			     reg->cvm_requests.v[i].n);
	family(pg, "spotpool_cvm_request_duration_seconds", "histogram",
	       "Duration of Tencent Cloud CVM API calls, retries included.");
	for (size_t i = 0; i < reg->cvm_durations.n; i++)
		histogram_render(pg, "spotpool_cvm_request_duration_seconds", reg->cvm_durations.v[i].labels,
				 &reg->cvm_durations.v[i].h, &metrics_request_buckets);
	char v[32];
	family(pg, "spotpool_cvm_rate_limit_wait_seconds_total", "counter",
	       "Time CVM API calls waited for their rate limit, by action.");
	for (size_t i = 0; i < reg->cvm_rate_waits.n; i++) {
		format_double(v, reg->cvm_rate_waits.v[i].value);
		emit(pg, "spotpool_cvm_rate_limit_wait_seconds_total{%s} %s\n", reg->cvm_rate_waits.v[i].labels, v);
	}
	family(pg, "spotpool_cvm_rate_limit", "gauge",
	       "Calls per second the CVM API rate limit of the action paces at (its most recently used bucket).");
	for (size_t i = 0; i < reg->cvm_rates.n; i++) {
		format_double(v, reg->cvm_rates.v[i].value);
		emit(pg, "spotpool_cvm_rate_limit{%s} %s\n", reg->cvm_rates.v[i].labels, v);
	}
}

static void render_controller(struct page *pg, const struct metrics_registry *reg)
{
	family(pg, "spotpool_reconcile_duration_seconds", "histogram", "Duration of pool reconciles.");
	histogram_render(pg, "spotpool_reconcile_duration_seconds", "", &reg->reconcile, &metrics_request_buckets);
	family(pg, "spotpool_reconciles_total", "counter", "Pool reconciles.");
	counter_line(pg, "spotpool_reconciles_total", "", NULL, NULL, reg->reconciles);
	family(pg, "spotpool_reconcile_errors_total", "counter", "Pool reconciles that failed.");
	counter_line(pg, "spotpool_reconcile_errors_total", "", NULL, NULL, reg->reconcile_errors);
	family(pg, "spotpool_node_ready_seconds", "histogram",
	       "Time from an instance's launch (CreatedTime) to its Node's Ready condition, once per instance.");
	histogram_render(pg, "spotpool_node_ready_seconds", "", &reg->node_ready, &metrics_node_ready_buckets);
	family(pg, "spotpool_evictions_total", "counter",
	       "Pods evicted by drains (evicted), and evictions refused for now by a PodDisruptionBudget or a "
	       "conflict (refused).");
	counter_line(pg, "spotpool_evictions_total", "", "result", "evicted", reg->evicted);
	counter_line(pg, "spotpool_evictions_total", "", "result", "refused", reg->eviction_refused);
	family(pg, "spotpool_leader", "gauge", "1 when this process leads (or election is off), else 0.");
	emit(pg, "spotpool_leader %d\n", reg->leader ? 1 : 0);
	family(pg, "spotpool_kube_requests_total", "counter",
	       "Requests to the Kubernetes apiserver by verb, resource and HTTP status (error: no answer).");
	for (size_t v = 0; v < METRICS_N_KUBE_VERBS; v++)
		for (size_t i = 0; i < reg->kube_requests[v].n; i++)
			counter_line(pg, "spotpool_kube_requests_total", reg->kube_requests[v].v[i].labels, NULL,
				     NULL, reg->kube_requests[v].v[i].n);
}

static void render_workqueue(struct page *pg, const struct metrics_registry *reg)
{
	family(pg, "spotpool_workqueue_depth", "gauge",
	       "Pools queued for a reconcile, including those waiting out a delay or backoff.");
	emit(pg, "spotpool_workqueue_depth %zu\n", reg->wq_depth);
	family(pg, "spotpool_workqueue_queue_duration_seconds", "histogram",
	       "Time a pool waited for a worker once due (added, or its delay over).");
	histogram_render(pg, "spotpool_workqueue_queue_duration_seconds", "", &reg->wq_queue, &metrics_queue_buckets);
	family(pg, "spotpool_workqueue_work_duration_seconds", "histogram",
	       "Time a worker spent on a pool, from taking it off the queue to done.");
	histogram_render(pg, "spotpool_workqueue_work_duration_seconds", "", &reg->wq_work, &metrics_queue_buckets);
	family(pg, "spotpool_workqueue_retries_total", "counter", "Failed reconciles requeued with backoff.");
	counter_line(pg, "spotpool_workqueue_retries_total", "", NULL, NULL, reg->wq_retries);
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

char *exposition_render(void)
{
	struct process_stats ps;
	read_process_stats(&ps);
	struct page pg = {0};
	buf_init(&pg.b, EXPOSITION_MAX);
	size_t unavailable = metrics_offerings_unavailable();
	const struct metrics_registry *reg = metrics_lock();
	family(&pg, "spotpool_build_info", "gauge", "Build information; the value is always 1.");
	emit(&pg, "spotpool_build_info{version=\"%s\"} 1\n", SPOTPOOL_VERSION);
	render_pools(&pg, reg);
	render_offerings(&pg, reg, unavailable);
	render_cvm(&pg, reg);
	render_controller(&pg, reg);
	render_workqueue(&pg, reg);
	metrics_unlock();
	render_process(&pg, &ps);
	if (pg.err) {
		log_error("metrics: the page would exceed %d bytes; not serving it", EXPOSITION_MAX);
		buf_free(&pg.b);
		return NULL;
	}
	return buf_steal(&pg.b);
}
