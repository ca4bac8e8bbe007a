/* metrics: exposition format and naming, every pool series and its removal, label
 * escaping and caps, the work-queue hooks, and the HTTP endpoints. */
#include "testutil.h"
#include "buf.h"
#include "exposition.h"
#include "httpd.h"
#include "metrics.h"
#include "soldout.h"
#include "wq.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t count(const char *haystack, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

#define assert_not_contains(haystack, needle)                                              \
	do {                                                                               \
		if (strstr((haystack), (needle)))                                          \
			fail_msg("\"%s\" unexpectedly contains \"%s\"", (haystack), (needle)); \
	} while (0)

static int reset(void **state)
{
	(void)state;
	metrics_reset();
	return 0;
}

/* Every per-pool function once, so that a page shows every per-pool family. */
static void touch_pool(const char *ns, const char *pool)
{
	metrics_pool_sizes(NULL, ns, pool, 1, 5, 3, 2);
	metrics_launch_request(NULL, ns, pool, 0, NULL);
	metrics_launch_request(NULL, ns, pool, SP_ECAPACITY, "ResourceInsufficient.SpecifiedInstanceType");
	metrics_instances_launched(NULL, ns, pool, 2);
	metrics_instances_terminated(NULL, ns, pool, PASS_WHY_SCALE_DOWN, 1);
	metrics_instances_terminated(NULL, ns, pool, PASS_WHY_CLEANUP, 1);
	metrics_instances_terminated(NULL, ns, pool, PASS_WHY_DELETION, 1);
	metrics_instance_reclaimed(NULL, ns, pool);
}

/* Everything that is not per pool. */
static void touch_globals(void)
{
	metrics_cvm_observe(NULL, "RunInstances", "Success", 1);
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 1);
	metrics_cvm_rate_wait(NULL, "RunInstances", 0.25);
	metrics_cvm_rate(NULL, "RunInstances", 4.5);
	metrics_reconcile_observe(NULL, 1, false);
	metrics_offering_launch(NULL, "ap-singapore-2", "GN7.2XLARGE32", 0, NULL);
	metrics_set_leader(true);
	metrics_evictions(NULL, 3, 1);
	metrics_kube_request(NULL, "GET", "spotpools", 200);
	metrics_workqueue_depth(NULL, 3);
	metrics_workqueue_queue_latency(NULL, 0.002);
	metrics_workqueue_work_duration(NULL, 0.5);
	metrics_workqueue_retry(NULL);
}

static const char *const families[][2] = {
	{"spotpool_build_info", "gauge"},
	{"spotpool_pool_minimum", "gauge"},
	{"spotpool_pool_maximum", "gauge"},
	{"spotpool_pool_desired", "gauge"},
	{"spotpool_pool_current", "gauge"},
	{"spotpool_launch_requests_total", "counter"},
	{"spotpool_launch_failures_total", "counter"},
	{"spotpool_instances_launched_total", "counter"},
	{"spotpool_instances_terminated_total", "counter"},
	{"spotpool_instances_reclaimed_total", "counter"},
	{"spotpool_pool_below_minimum_seconds_total", "counter"},
	{"spotpool_offerings_unavailable", "gauge"},
	{"spotpool_offering_launches_total", "counter"},
	{"spotpool_cvm_requests_total", "counter"},
	{"spotpool_cvm_request_duration_seconds", "histogram"},
	{"spotpool_cvm_rate_limit_wait_seconds_total", "counter"},
	{"spotpool_cvm_rate_limit", "gauge"},
	{"spotpool_reconcile_duration_seconds", "histogram"},
	{"spotpool_node_ready_seconds", "histogram"},
	{"spotpool_reconciles_total", "counter"},
	{"spotpool_reconcile_errors_total", "counter"},
	{"spotpool_leader", "gauge"},
	{"spotpool_kube_requests_total", "counter"},
	{"spotpool_workqueue_depth", "gauge"},
	{"spotpool_workqueue_queue_duration_seconds", "histogram"},
	{"spotpool_workqueue_work_duration_seconds", "histogram"},
	{"spotpool_workqueue_retries_total", "counter"},
	{"process_cpu_seconds_total", "counter"},
	{"process_open_fds", "gauge"},
	{"process_max_fds", "gauge"},
	{"process_virtual_memory_bytes", "gauge"},
	{"process_resident_memory_bytes", "gauge"},
	{"spotpool_evictions_total", "counter"},
	{"process_start_time_seconds", "gauge"},
};
#define N_FAMILIES (sizeof(families) / sizeof(families[0]))

static void test_families_appear_once(void **state)
{
	(void)state;
	touch_pool("ns", "a");
	touch_globals();
	char *page = exposition_render();
	for (size_t i = 0; i < N_FAMILIES; i++) {
		char *help = xasprintf("# HELP %s ", families[i][0]);
		char *type = xasprintf("# TYPE %s %s\n", families[i][0], families[i][1]);
		char *sample = xasprintf("\n%s", families[i][0]);
		assert_int_equal(count(page, help), 1);
		assert_int_equal(count(page, type), 1);
		if (!strstr(page, sample))
			fail_msg("no sample of %s", families[i][0]);
		free(help);
		free(type);
		free(sample);
	}
	assert_int_equal(count(page, "# HELP "), N_FAMILIES);
	assert_int_equal(count(page, "# TYPE "), N_FAMILIES);
	assert_contains(page, "spotpool_build_info{version=\"" SPOTPOOL_VERSION "\"} 1\n");
	assert_contains(page, "\nspotpool_evictions_total{result=\"evicted\"} 3\nspotpool_evictions_total{result=\"refused\"} 1\n");
	free(page);
}

/* The value of the unlabelled sample name on page (fails when absent). */
static double sample_value(const char *page, const char *name)
{
	char *needle = xasprintf("\n%s ", name);
	const char *p = strstr(page, needle);
	if (!p)
		fail_msg("no sample %s", name);
	double v = strtod(p + strlen(needle), NULL);
	free(needle);
	return v;
}

/* process_*: as the Prometheus client libraries export them, with values that follow the
 * process: more open files, more CPU time, a start time in the past. */
static void test_process_metrics(void **state)
{
	(void)state;
	char *page = exposition_render();
	double fds = sample_value(page, "process_open_fds");
	double cpu = sample_value(page, "process_cpu_seconds_total");
	double start = sample_value(page, "process_start_time_seconds");
	double rss = sample_value(page, "process_resident_memory_bytes");
	double vsize = sample_value(page, "process_virtual_memory_bytes");
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_true(sample_value(page, "process_max_fds") == (double)rl.rlim_cur);
	assert_true(rss > 1024 * 1024 && vsize >= rss);
	double now = (double)time(NULL);
	assert_true(start > now - 600 && start <= now + 1);
	assert_contains(page, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
			      "# TYPE process_cpu_seconds_total counter\n");
	free(page);

	int extra[3];
	for (size_t i = 0; i < 3; i++)
		assert_true((extra[i] = open("/dev/null", O_RDONLY)) >= 0);
	volatile unsigned long spin = 0;
	for (clock_t t0 = clock(); clock() - t0 < CLOCKS_PER_SEC / 20;)
		spin++;
	page = exposition_render();
	assert_true(sample_value(page, "process_open_fds") == fds + 3);
	assert_true(sample_value(page, "process_cpu_seconds_total") > cpu);
	assert_true(sample_value(page, "process_start_time_seconds") - start < 0.05);
	free(page);
	for (size_t i = 0; i < 3; i++)
		close(extra[i]);
}

static void test_pool_values(void **state)
{
	(void)state;
	metrics_pool_sizes(NULL, "prod", "gpu", 2, 8, 4, 3);
	metrics_pool_sizes(NULL, "prod", "gpu", 2, 8, 5, 4);
	metrics_launch_request(NULL, "prod", "gpu", 0, NULL);
	metrics_launch_request(NULL, "prod", "gpu", 0, "");
	metrics_instances_launched(NULL, "prod", "gpu", 3);
	metrics_instances_launched(NULL, "prod", "gpu", 2);
	metrics_instances_launched(NULL, "prod", "gpu", -7);  /* counters never go down */
	metrics_instances_launched(NULL, "prod", "gpu", 0);
	metrics_instances_terminated(NULL, "prod", "gpu", PASS_WHY_CLEANUP, 2);
	metrics_instances_terminated(NULL, "prod", "gpu", PASS_WHY_CLEANUP, -1);
	metrics_instances_terminated(NULL, "prod", "gpu", PASS_WHY_NOTICE, 1);
	metrics_instances_terminated(NULL, "prod", "gpu", (enum pass_why)42, 1);  /* ignored */
	metrics_instance_reclaimed(NULL, "prod", "gpu");
	metrics_instance_reclaimed(NULL, "prod", "gpu");
	metrics_instances_terminated(NULL, "prod", "counted-only", PASS_WHY_DELETION, 6);
	char *page = exposition_render();
#define GPU "{namespace=\"prod\",pool=\"gpu\""
	static const char *const want[] = {
		"\nspotpool_pool_minimum" GPU "} 2\n",
		"\nspotpool_pool_maximum" GPU "} 8\n",
		"\nspotpool_pool_desired" GPU "} 5\n",
		"\nspotpool_pool_current" GPU "} 4\n",
		"\nspotpool_launch_requests_total" GPU ",outcome=\"success\"} 2\n",
		"\nspotpool_launch_requests_total" GPU ",outcome=\"capacity\"} 0\n",
		"\nspotpool_launch_requests_total" GPU ",outcome=\"unknown\"} 0\n",
		"\nspotpool_instances_launched_total" GPU "} 5\n",
		"\nspotpool_instances_terminated_total" GPU ",reason=\"scale_down\"} 0\n",
		"\nspotpool_instances_terminated_total" GPU ",reason=\"cleanup\"} 2\n",
		"\nspotpool_instances_terminated_total" GPU ",reason=\"deletion\"} 0\n",
		"\nspotpool_instances_terminated_total" GPU ",reason=\"notice\"} 1\n",
		"\nspotpool_instances_reclaimed_total" GPU "} 2\n",
	};
#undef GPU
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_contains(page, want[i]);
	/* all seven outcomes and four reasons from the start, so that rate() sees the first */
	assert_int_equal(count(page, "spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\","), 7);
	assert_int_equal(count(page, "spotpool_instances_terminated_total{namespace=\"prod\",pool=\"gpu\","), 4);
	assert_not_contains(page, "spotpool_launch_failures_total{");  /* no failure yet */
	assert_not_contains(page, "reason=\"unknown\"");
	assert_contains(page, "\nspotpool_instances_terminated_total{namespace=\"prod\",pool=\"counted-only\","
			      "reason=\"deletion\"} 6\n");
	assert_contains(page, "\nspotpool_instances_launched_total{namespace=\"prod\",pool=\"counted-only\"} 0\n");
	/* sizes never set: no made-up zero gauges */
	assert_not_contains(page, "spotpool_pool_desired{namespace=\"prod\",pool=\"counted-only\"}");
	free(page);
}

static void test_launch_outcomes_and_failure_reasons(void **state)
{
	(void)state;
	static const struct {
		int code;
		const char *reason, *outcome, *failure;
	} cases[] = {
		{0, NULL, "success", NULL},
		{SP_ECAPACITY, "ResourcesSoldOut.SpecifiedInstanceType", "capacity",
		 "ResourcesSoldOut.SpecifiedInstanceType"},
		{SP_ECAPACITY, "LimitExceeded.SpotQuota", "capacity", "LimitExceeded.SpotQuota"},
		{SP_EAUTH, "AuthFailure.SignatureFailure", "auth", "AuthFailure.SignatureFailure"},
		{SP_EFORBIDDEN, NULL, "auth", "auth"},
		{SP_ECONFIG, "InvalidParameterValue.Zone", "config", "InvalidParameterValue.Zone"},
		{SP_EINVAL, "", "config", "config"},
		{SP_ETHROTTLED, "RequestLimitExceeded", "throttled", "RequestLimitExceeded"},
		{SP_ETRANSIENT, NULL, "transient", "transient"},  /* HTTP 503, timeout: no code */
		{SP_EPROTO, NULL, "transient", "transient"},      /* malformed reply */
		{SP_EIO, NULL, "unknown", "unknown"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		metrics_reset();
		metrics_launch_request(NULL, "ns", "p", cases[i].code, cases[i].reason);
		char *page = exposition_render();
		char *line = xasprintf("\nspotpool_launch_requests_total{namespace=\"ns\",pool=\"p\",outcome=\"%s\"} 1\n",
				       cases[i].outcome);
		assert_contains(page, line);
		free(line);
		/* that one, build_info and the failure if any: nothing else moved */
		assert_int_equal(count(page, "} 1\n"), cases[i].failure ? 3 : 2);
		if (cases[i].failure) {
			line = xasprintf("\nspotpool_launch_failures_total{namespace=\"ns\",pool=\"p\",reason=\"%s\"} 1\n",
					 cases[i].failure);
			assert_contains(page, line);
			free(line);
		} else {
			assert_not_contains(page, "spotpool_launch_failures_total{");
		}
		free(page);
	}
}

static void test_histograms_and_counters(void **state)
{
	(void)state;
	/* dyadic values so that _sum prints exactly; 0.25 sits on a bound and counts in it */
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 0.25);
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 0.5);
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 4);
	metrics_cvm_observe(NULL, "DescribeInstances", "RequestLimitExceeded", 20);
	metrics_reconcile_observe(NULL, 0.125, false);
	metrics_reconcile_observe(NULL, 3, true);
	metrics_set_leader(true);
	metrics_node_ready(NULL, 90);
	metrics_node_ready(NULL, 7200);
	char *page = exposition_render();
	assert_contains(page, "\nspotpool_node_ready_seconds_bucket{le=\"60\"} 0\n"
			      "spotpool_node_ready_seconds_bucket{le=\"90\"} 1\n");
	assert_contains(page, "\nspotpool_node_ready_seconds_bucket{le=\"3600\"} 1\n"
			      "spotpool_node_ready_seconds_bucket{le=\"+Inf\"} 2\n"
			      "spotpool_node_ready_seconds_sum 7290\n"
			      "spotpool_node_ready_seconds_count 2\n");
	assert_contains(page, "\nspotpool_cvm_requests_total{action=\"DescribeInstances\",code=\"Success\"} 3\n");
	assert_contains(page, "\nspotpool_cvm_requests_total{action=\"DescribeInstances\","
			      "code=\"RequestLimitExceeded\"} 1\n");
	assert_contains(page,
			"\nspotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.05\"} 0\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.1\"} 0\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.25\"} 1\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.5\"} 2\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"1\"} 2\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"2.5\"} 2\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"5\"} 3\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"10\"} 3\n"
			"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"+Inf\"} 4\n"
			"spotpool_cvm_request_duration_seconds_sum{action=\"DescribeInstances\"} 24.75\n"
			"spotpool_cvm_request_duration_seconds_count{action=\"DescribeInstances\"} 4\n");
	assert_contains(page, "\nspotpool_reconcile_duration_seconds_bucket{le=\"0.1\"} 0\n"
			      "spotpool_reconcile_duration_seconds_bucket{le=\"0.25\"} 1\n");
	assert_contains(page, "\nspotpool_reconcile_duration_seconds_bucket{le=\"2.5\"} 1\n"
			      "spotpool_reconcile_duration_seconds_bucket{le=\"5\"} 2\n");
	assert_contains(page, "\nspotpool_reconcile_duration_seconds_bucket{le=\"+Inf\"} 2\n"
			      "spotpool_reconcile_duration_seconds_sum 3.125\n"
			      "spotpool_reconcile_duration_seconds_count 2\n");
	assert_contains(page, "\nspotpool_reconciles_total 2\n");
	assert_contains(page, "\nspotpool_reconcile_errors_total 1\n");
	assert_contains(page, "\nspotpool_leader 1\n");
	free(page);
	metrics_set_leader(false);
	page = exposition_render();
	assert_contains(page, "\nspotpool_leader 0\n");
	free(page);
}

static void test_workqueue_hooks(void **state)
{
	(void)state;
	struct wq *q = wq_new_with_hooks(&metrics_wq_hooks);
	wq_add(q, "ns/a", 0);
	wq_add(q, "ns/b", 0);
	char *page = exposition_render();
	assert_contains(page, "\nspotpool_workqueue_depth 2\n");
	assert_contains(page, "\nspotpool_workqueue_queue_duration_seconds_count 0\n");
	free(page);
	char *k;
	assert_int_equal(wq_get(q, &k), 0);
	int64_t delay = wq_backoff(q, k);
	wq_done(q, k);
	wq_add(q, k, delay);
	free(k);
	assert_int_equal(wq_get(q, &k), 0);
	wq_forget(q, k);
	wq_done(q, k);
	free(k);
	page = exposition_render();
	assert_contains(page, "\nspotpool_workqueue_depth 1\n");  /* the one backing off */
	assert_contains(page, "\nspotpool_workqueue_queue_duration_seconds_count 2\n");
	assert_contains(page, "\nspotpool_workqueue_work_duration_seconds_count 2\n");
	assert_contains(page, "\nspotpool_workqueue_queue_duration_seconds_bucket{le=\"0.001\"} ");
	assert_contains(page, "\nspotpool_workqueue_work_duration_seconds_bucket{le=\"300\"} 2\n");
	assert_contains(page, "\nspotpool_workqueue_retries_total 1\n");
	free(page);
	wq_free(q);
	/* direct observations land in the expected buckets */
	metrics_reset();
	metrics_workqueue_queue_latency(NULL, 0.0005);
	metrics_workqueue_work_duration(NULL, 45);
	metrics_workqueue_work_duration(NULL, 600);
	page = exposition_render();
	assert_contains(page, "\nspotpool_workqueue_queue_duration_seconds_bucket{le=\"0.001\"} 1\n");
	assert_contains(page, "\nspotpool_workqueue_work_duration_seconds_bucket{le=\"30\"} 0\n"
			      "spotpool_workqueue_work_duration_seconds_bucket{le=\"60\"} 1\n"
			      "spotpool_workqueue_work_duration_seconds_bucket{le=\"300\"} 1\n"
			      "spotpool_workqueue_work_duration_seconds_bucket{le=\"+Inf\"} 2\n"
			      "spotpool_workqueue_work_duration_seconds_sum 645\n");
	free(page);
}

static void test_label_escaping(void **state)
{
	(void)state;
	metrics_pool_sizes(NULL, "a\"b", "c\\d\ne", 0, 2, 1, 0);
	metrics_launch_request(NULL, "a\"b", "c\\d\ne", SP_ECONFIG, "Bad\"Code\\\n");
	metrics_cvm_observe(NULL, "Run\"Instances", "Bad\\Code\n", 1);
	char *page = exposition_render();
	assert_contains(page, "spotpool_pool_desired{namespace=\"a\\\"b\",pool=\"c\\\\d\\ne\"} 1\n");
	assert_contains(page, "spotpool_launch_failures_total{namespace=\"a\\\"b\",pool=\"c\\\\d\\ne\","
			      "reason=\"Bad\\\"Code\\\\\\n\"} 1\n");
	assert_contains(page, "{action=\"Run\\\"Instances\",code=\"Bad\\\\Code\\n\"} 1\n");
	assert_contains(page, "_count{action=\"Run\\\"Instances\"} 1\n");
	free(page);
}

/* A label value one character longer than admitted, made of c. */
static char *too_long_value(char c)
{
	char *v = xmalloc(METRICS_LABEL_VALUE_LEN_MAX + 2);
	memset(v, c, METRICS_LABEL_VALUE_LEN_MAX + 1);
	v[METRICS_LABEL_VALUE_LEN_MAX + 1] = '\0';
	return v;
}

static void test_code_cardinality_is_capped(void **state)
{
	(void)state;
	for (int i = 0; i < METRICS_LABEL_VALUES_MAX + 6; i++) {
		char code[32];
		snprintf(code, sizeof(code), "Code%d", i);
		metrics_cvm_observe(NULL, "RunInstances", code, 0.01);
	}
	char *huge = too_long_value('x');
	metrics_cvm_observe(NULL, "RunInstances", huge, 0.01);
	free(huge);
	metrics_cvm_observe(NULL, "RunInstances", "Code0", 0.01);  /* known values still count */
	char *page = exposition_render();
	assert_contains(page, "code=\"Code0\"} 2\n");
	assert_contains(page, "code=\"Code63\"} 1\n");
	assert_not_contains(page, "code=\"Code64\"");
	assert_not_contains(page, "xxxx");
	assert_contains(page, "{action=\"RunInstances\",code=\"other\"} 7\n");
	assert_int_equal(count(page, "spotpool_cvm_requests_total{"), METRICS_LABEL_VALUES_MAX + 1);
	assert_contains(page, "spotpool_cvm_request_duration_seconds_count{action=\"RunInstances\"} 72\n");
	free(page);
}

static void test_failure_reasons_are_capped(void **state)
{
	(void)state;
	/* reasons are admitted across pools: two pools share one budget */
	for (int i = 0; i < METRICS_LABEL_VALUES_MAX + 4; i++) {
		char reason[32];
		snprintf(reason, sizeof(reason), "FailedOperation.Code%d", i);
		metrics_launch_request(NULL, "ns", i % 2 ? "odd" : "even", SP_ECONFIG, reason);
	}
	char *huge = too_long_value('y');
	metrics_launch_request(NULL, "ns", "even", SP_ECONFIG, huge);
	free(huge);
	char *page = exposition_render();
	assert_not_contains(page, "yyyy");
	assert_not_contains(page, "Code64");
	assert_contains(page, "\nspotpool_launch_failures_total{namespace=\"ns\",pool=\"even\",reason=\"other\"} 3\n");
	assert_contains(page, "\nspotpool_launch_failures_total{namespace=\"ns\",pool=\"odd\",reason=\"other\"} 2\n");
	assert_int_equal(count(page, "spotpool_launch_failures_total{"), METRICS_LABEL_VALUES_MAX + 2);
	assert_contains(page, "\nspotpool_launch_requests_total{namespace=\"ns\",pool=\"even\",outcome=\"config\"} 35\n");
	free(page);
}

static void test_pool_count_is_capped(void **state)
{
	(void)state;
	char name[32];
	for (int i = 0; i <= METRICS_POOLS_MAX; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		metrics_instance_reclaimed(NULL, "ns", name);
	}
	char *page = exposition_render();
	assert_int_equal(count(page, "\nspotpool_instances_reclaimed_total{"), METRICS_POOLS_MAX);
	assert_not_contains(page, "pool=\"p10000\"");
	free(page);
	/* forgetting one makes room again */
	metrics_pool_forget(NULL, "ns", "p0");
	metrics_instance_reclaimed(NULL, "ns", name);
	page = exposition_render();
	assert_contains(page, "\nspotpool_instances_reclaimed_total{namespace=\"ns\",pool=\"p10000\"} 1\n");
	free(page);
}

/* Pools come in any order, each counted in its own series, exposed sorted by namespace
 * and pool; forgetting one in the middle keeps the others' counts. */
static void test_pools_sorted_whatever_their_order(void **state)
{
	(void)state;
	enum { N = 300, STRIDE = 7 };
	char name[32];
	for (int k = 0; k < N; k++) {
		int i = k * STRIDE % N;
		snprintf(name, sizeof(name), "p%03d", i);
		for (int r = 0; r <= i % 3; r++)
			metrics_instance_reclaimed(NULL, i % 2 ? "b-ns" : "a-ns", name);
	}
	metrics_pool_forget(NULL, "b-ns", "p151");
	char *page = exposition_render();
	const char *at = page;
	char line[128];
	for (int ns = 0; ns < 2; ns++)
		for (int i = ns; i < N; i += 2) {
			if (i == 151)
				continue;
			snprintf(line, sizeof(line), "\nspotpool_instances_reclaimed_total{namespace=\"%s\",pool=\"p%03d\"} %d\n",
				 ns ? "b-ns" : "a-ns", i, i % 3 + 1);
			const char *found = strstr(at, line);
			assert_non_null(found);
			at = found + 1;
		}
	assert_not_contains(page, "pool=\"p151\"");
	free(page);
}

static void test_forget_drops_every_pool_series(void **state)
{
	(void)state;
	/* What the page looks like when "gone" never existed ... */
	touch_pool("ns", "before");
	touch_pool("ns", "kept");
	touch_globals();
	metrics_launch_request(NULL, "ns", "kept", SP_EAUTH, "AuthFailure.SecretIdNotFound");
	char *want = exposition_render();
	/* ... is what it looks like once it is forgotten, whatever it had. */
	metrics_reset();
	touch_pool("ns", "before");
	touch_pool("ns", "gone");
	touch_pool("other-ns", "gone");
	touch_pool("ns", "kept");
	touch_globals();
	metrics_launch_request(NULL, "ns", "gone", SP_ETHROTTLED, "RequestLimitExceeded");
	metrics_launch_request(NULL, "ns", "kept", SP_EAUTH, "AuthFailure.SecretIdNotFound");
	metrics_pool_forget(NULL, "ns", "gone");
	metrics_pool_forget(NULL, "other-ns", "gone");
	metrics_pool_forget(NULL, "ns", "never-existed");
	char *got = exposition_render();
	assert_not_contains(got, "pool=\"gone\"");
	/* The process_* families come last and change between scrapes (CPU time). */
	*strstr(want, "# HELP process_") = '\0';
	*strstr(got, "# HELP process_") = '\0';
	assert_string_equal(got, want);
	free(want);
	free(got);
	/* a forgotten pool that comes back starts from zero */
	metrics_instances_launched(NULL, "ns", "gone", 1);
	got = exposition_render();
	assert_contains(got, "\nspotpool_instances_launched_total{namespace=\"ns\",pool=\"gone\"} 1\n");
	assert_contains(got, "\nspotpool_launch_requests_total{namespace=\"ns\",pool=\"gone\",outcome=\"success\"} 0\n");
	assert_not_contains(got, "spotpool_launch_failures_total{namespace=\"ns\",pool=\"gone\"");
	free(got);
}

/* ---- offerings and time below minimum ---- */

static int64_t fake_now_ms;
static int64_t fake_clock(void)
{
	return fake_now_ms;
}

static void test_below_minimum_seconds(void **state)
{
	(void)state;
	metrics_set_clock(fake_clock);
	fake_now_ms = 1000000;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 3);  /* at minimum */
	char *page = exposition_render();
	assert_contains(page, "\nspotpool_pool_below_minimum_seconds_total{namespace=\"ns\",pool=\"p\"} 0\n");
	free(page);
	fake_now_ms += 10000;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 1);  /* a reclaim: below from now on */
	fake_now_ms += 2500;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 2);  /* still below: 2.5 s so far */
	fake_now_ms += 4000;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 3);  /* refilled: 4 s more */
	fake_now_ms += 30000;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 4);  /* not below: nothing added */
	page = exposition_render();
	assert_contains(page, "\nspotpool_pool_below_minimum_seconds_total{namespace=\"ns\",pool=\"p\"} 6.5\n");
	free(page);
	/* A long gap (a standby spell) counts at most METRICS_BELOW_MINIMUM_GAP_MAX_S. */
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 0);
	fake_now_ms += 3600 * 1000;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 0);
	/* A clock that went back adds nothing. */
	fake_now_ms -= 5000;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 0);
	page = exposition_render();
	char *want = xasprintf("\nspotpool_pool_below_minimum_seconds_total{namespace=\"ns\",pool=\"p\"} %g\n",
			       6.5 + METRICS_BELOW_MINIMUM_GAP_MAX_S);
	assert_contains(page, want);
	free(want);
	free(page);
	/* Forgetting the pool drops it; it comes back from zero. */
	metrics_pool_forget(NULL, "ns", "p");
	page = exposition_render();
	assert_not_contains(page, "spotpool_pool_below_minimum_seconds_total{");
	free(page);
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 0);
	fake_now_ms += 1000;
	metrics_pool_sizes(NULL, "ns", "p", 3, 5, 3, 0);
	page = exposition_render();
	assert_contains(page, "\nspotpool_pool_below_minimum_seconds_total{namespace=\"ns\",pool=\"p\"} 1\n");
	free(page);
	metrics_set_clock(NULL);
}

/* A fixed state touching every family, two pools (one with labels to escape), the
 * open-ended labels' fallbacks and a fractional counter of seconds. */
static void fixed_state(void)
{
	metrics_set_clock(fake_clock);
	fake_now_ms = 1000;
	touch_pool("prod", "gpu");
	touch_pool("dev", "a\"b\\c\nd");
	metrics_pool_sizes(NULL, "dev", "a\"b\\c\nd", 1, 5, 3, 0);
	fake_now_ms += 1500;
	metrics_pool_sizes(NULL, "dev", "a\"b\\c\nd", 1, 5, 3, 0);
	metrics_launch_request(NULL, "prod", "gpu", SP_ETRANSIENT, NULL);
	touch_globals();
	metrics_cvm_observe(NULL, "RunInstances", "ResourceInsufficient.SpecifiedInstanceType", 0.1 + 0.2);
	metrics_cvm_rate_wait(NULL, "DescribeInstances", 0);
	metrics_kube_request(NULL, "WATCH", "nodes", 0);
	metrics_kube_request(NULL, "BREW", "spotpools", 700);
	metrics_offering_launch(NULL, "ap-singapore-2", "GN7.2XLARGE32", SP_ECAPACITY, "ResourcesSoldOut.SpecifiedInstanceType");
	metrics_offering_launch(NULL, NULL, "", SP_EAUTH, NULL);
	metrics_node_ready(NULL, 95.5);
	metrics_reconcile_observe(NULL, 0.75, true);
	metrics_workqueue_queue_latency(NULL, 45);
	metrics_set_clock(NULL);
}

/* The whole page for fixed_state(), up to the process_* families (which follow the
 * process, test_process_metrics): byte for byte, so that a change of the exposition
 * is seen whatever it touches. */
static const char fixed_page[] =
	"# HELP spotpool_build_info Build information; the value is always 1.\n"
	"# TYPE spotpool_build_info gauge\n"
	"spotpool_build_info{version=\"" SPOTPOOL_VERSION "\"} 1\n"
	"# HELP spotpool_pool_minimum The pool's spec.minimum.\n"
	"# TYPE spotpool_pool_minimum gauge\n"
	"spotpool_pool_minimum{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\"} 1\n"
	"spotpool_pool_minimum{namespace=\"prod\",pool=\"gpu\"} 1\n"
	"# HELP spotpool_pool_maximum The pool's spec.maximum.\n"
	"# TYPE spotpool_pool_maximum gauge\n"
	"spotpool_pool_maximum{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\"} 5\n"
	"spotpool_pool_maximum{namespace=\"prod\",pool=\"gpu\"} 5\n"
	"# HELP spotpool_pool_desired Instances the pool is being driven to.\n"
	"# TYPE spotpool_pool_desired gauge\n"
	"spotpool_pool_desired{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\"} 3\n"
	"spotpool_pool_desired{namespace=\"prod\",pool=\"gpu\"} 3\n"
	"# HELP spotpool_pool_current Live instances of the pool, as last observed.\n"
	"# TYPE spotpool_pool_current gauge\n"
	"spotpool_pool_current{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\"} 0\n"
	"spotpool_pool_current{namespace=\"prod\",pool=\"gpu\"} 2\n"
	"# HELP spotpool_launch_requests_total RunInstances calls for the pool, by outcome.\n"
	"# TYPE spotpool_launch_requests_total counter\n"
	"spotpool_launch_requests_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",outcome=\"success\"} 1\n"
	"spotpool_launch_requests_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",outcome=\"capacity\"} 1\n"
	"spotpool_launch_requests_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",outcome=\"auth\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",outcome=\"config\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",outcome=\"throttled\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",outcome=\"transient\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",outcome=\"unknown\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\",outcome=\"success\"} 1\n"
	"spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\",outcome=\"capacity\"} 1\n"
	"spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\",outcome=\"auth\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\",outcome=\"config\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\",outcome=\"throttled\"} 0\n"
	"spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\",outcome=\"transient\"} 1\n"
	"spotpool_launch_requests_total{namespace=\"prod\",pool=\"gpu\",outcome=\"unknown\"} 0\n"
	"# HELP spotpool_launch_failures_total Failed RunInstances calls for the pool, by Tencent error code or class.\n"
	"# TYPE spotpool_launch_failures_total counter\n"
	"spotpool_launch_failures_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",reason=\"ResourceInsufficient.SpecifiedInstanceType\"} 1\n"
	"spotpool_launch_failures_total{namespace=\"prod\",pool=\"gpu\",reason=\"ResourceInsufficient.SpecifiedInstanceType\"} 1\n"
	"spotpool_launch_failures_total{namespace=\"prod\",pool=\"gpu\",reason=\"transient\"} 1\n"
	"# HELP spotpool_instances_launched_total Instances launched for the pool.\n"
	"# TYPE spotpool_instances_launched_total counter\n"
	"spotpool_instances_launched_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\"} 2\n"
	"spotpool_instances_launched_total{namespace=\"prod\",pool=\"gpu\"} 2\n"
	"# HELP spotpool_instances_terminated_total Instances of the pool terminated by spotpool, by reason.\n"
	"# TYPE spotpool_instances_terminated_total counter\n"
	"spotpool_instances_terminated_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",reason=\"scale_down\"} 1\n"
	"spotpool_instances_terminated_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",reason=\"cleanup\"} 1\n"
	"spotpool_instances_terminated_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",reason=\"deletion\"} 1\n"
	"spotpool_instances_terminated_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\",reason=\"notice\"} 0\n"
	"spotpool_instances_terminated_total{namespace=\"prod\",pool=\"gpu\",reason=\"scale_down\"} 1\n"
	"spotpool_instances_terminated_total{namespace=\"prod\",pool=\"gpu\",reason=\"cleanup\"} 1\n"
	"spotpool_instances_terminated_total{namespace=\"prod\",pool=\"gpu\",reason=\"deletion\"} 1\n"
	"spotpool_instances_terminated_total{namespace=\"prod\",pool=\"gpu\",reason=\"notice\"} 0\n"
	"# HELP spotpool_instances_reclaimed_total Instances of the pool that went away or died without spotpool terminating them (spot reclaims).\n"
	"# TYPE spotpool_instances_reclaimed_total counter\n"
	"spotpool_instances_reclaimed_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\"} 1\n"
	"spotpool_instances_reclaimed_total{namespace=\"prod\",pool=\"gpu\"} 1\n"
	"# HELP spotpool_pool_below_minimum_seconds_total Seconds the pool was observed with fewer live instances than its minimum.\n"
	"# TYPE spotpool_pool_below_minimum_seconds_total counter\n"
	"spotpool_pool_below_minimum_seconds_total{namespace=\"dev\",pool=\"a\\\"b\\\\c\\nd\"} 1.5\n"
	"spotpool_pool_below_minimum_seconds_total{namespace=\"prod\",pool=\"gpu\"} 0\n"
	"# HELP spotpool_offerings_unavailable Offerings (credentials, region, zone, instance type) currently marked sold out, shared by every pool.\n"
	"# TYPE spotpool_offerings_unavailable gauge\n"
	"spotpool_offerings_unavailable 0\n"
	"# HELP spotpool_offering_launches_total RunInstances calls by offering (zone, instance type) and outcome.\n"
	"# TYPE spotpool_offering_launches_total counter\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"success\"} 1\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"sold_out\"} 1\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"capacity\"} 0\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"auth\"} 0\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"config\"} 0\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"throttled\"} 0\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"transient\"} 0\n"
	"spotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"unknown\"} 0\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"success\"} 0\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"sold_out\"} 0\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"capacity\"} 0\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"auth\"} 1\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"config\"} 0\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"throttled\"} 0\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"transient\"} 0\n"
	"spotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"unknown\"} 0\n"
	"# HELP spotpool_cvm_requests_total Tencent Cloud CVM API calls by action and result code.\n"
	"# TYPE spotpool_cvm_requests_total counter\n"
	"spotpool_cvm_requests_total{action=\"RunInstances\",code=\"Success\"} 1\n"
	"spotpool_cvm_requests_total{action=\"DescribeInstances\",code=\"Success\"} 1\n"
	"spotpool_cvm_requests_total{action=\"RunInstances\",code=\"ResourceInsufficient.SpecifiedInstanceType\"} 1\n"
	"# HELP spotpool_cvm_request_duration_seconds Duration of Tencent Cloud CVM API calls, retries included.\n"
	"# TYPE spotpool_cvm_request_duration_seconds histogram\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"0.05\"} 0\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"0.1\"} 0\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"0.25\"} 0\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"0.5\"} 1\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"1\"} 2\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"2.5\"} 2\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"5\"} 2\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"10\"} 2\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"RunInstances\",le=\"+Inf\"} 2\n"
	"spotpool_cvm_request_duration_seconds_sum{action=\"RunInstances\"} 1.3\n"
	"spotpool_cvm_request_duration_seconds_count{action=\"RunInstances\"} 2\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.05\"} 0\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.1\"} 0\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.25\"} 0\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"0.5\"} 0\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"1\"} 1\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"2.5\"} 1\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"5\"} 1\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"10\"} 1\n"
	"spotpool_cvm_request_duration_seconds_bucket{action=\"DescribeInstances\",le=\"+Inf\"} 1\n"
	"spotpool_cvm_request_duration_seconds_sum{action=\"DescribeInstances\"} 1\n"
	"spotpool_cvm_request_duration_seconds_count{action=\"DescribeInstances\"} 1\n"
	"# HELP spotpool_cvm_rate_limit_wait_seconds_total Time CVM API calls waited for their rate limit, by action.\n"
	"# TYPE spotpool_cvm_rate_limit_wait_seconds_total counter\n"
	"spotpool_cvm_rate_limit_wait_seconds_total{action=\"RunInstances\"} 0.25\n"
	"spotpool_cvm_rate_limit_wait_seconds_total{action=\"DescribeInstances\"} 0\n"
	"# HELP spotpool_cvm_rate_limit Calls per second the CVM API rate limit of the action paces at (its most recently used bucket).\n"
	"# TYPE spotpool_cvm_rate_limit gauge\n"
	"spotpool_cvm_rate_limit{action=\"RunInstances\"} 4.5\n"
	"# HELP spotpool_reconcile_duration_seconds Duration of pool reconciles.\n"
	"# TYPE spotpool_reconcile_duration_seconds histogram\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"0.05\"} 0\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"0.1\"} 0\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"0.25\"} 0\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"0.5\"} 0\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"1\"} 2\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"2.5\"} 2\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"5\"} 2\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"10\"} 2\n"
	"spotpool_reconcile_duration_seconds_bucket{le=\"+Inf\"} 2\n"
	"spotpool_reconcile_duration_seconds_sum 1.75\n"
	"spotpool_reconcile_duration_seconds_count 2\n"
	"# HELP spotpool_reconciles_total Pool reconciles.\n"
	"# TYPE spotpool_reconciles_total counter\n"
	"spotpool_reconciles_total 2\n"
	"# HELP spotpool_reconcile_errors_total Pool reconciles that failed.\n"
	"# TYPE spotpool_reconcile_errors_total counter\n"
	"spotpool_reconcile_errors_total 1\n"
	"# HELP spotpool_node_ready_seconds Time from an instance's launch (CreatedTime) to its Node's Ready condition, once per instance.\n"
	"# TYPE spotpool_node_ready_seconds histogram\n"
	"spotpool_node_ready_seconds_bucket{le=\"30\"} 0\n"
	"spotpool_node_ready_seconds_bucket{le=\"60\"} 0\n"
	"spotpool_node_ready_seconds_bucket{le=\"90\"} 0\n"
	"spotpool_node_ready_seconds_bucket{le=\"120\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"180\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"240\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"300\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"420\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"600\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"900\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"1800\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"3600\"} 1\n"
	"spotpool_node_ready_seconds_bucket{le=\"+Inf\"} 1\n"
	"spotpool_node_ready_seconds_sum 95.5\n"
	"spotpool_node_ready_seconds_count 1\n"
	"# HELP spotpool_evictions_total Pods evicted by drains (evicted), and evictions refused for now by a PodDisruptionBudget or a conflict (refused).\n"
	"# TYPE spotpool_evictions_total counter\n"
	"spotpool_evictions_total{result=\"evicted\"} 3\n"
	"spotpool_evictions_total{result=\"refused\"} 1\n"
	"# HELP spotpool_leader 1 when this process leads (or election is off), else 0.\n"
	"# TYPE spotpool_leader gauge\n"
	"spotpool_leader 1\n"
	"# HELP spotpool_kube_requests_total Requests to the Kubernetes apiserver by verb, resource and HTTP status (error: no answer).\n"
	"# TYPE spotpool_kube_requests_total counter\n"
	"spotpool_kube_requests_total{verb=\"GET\",resource=\"spotpools\",code=\"200\"} 1\n"
	"spotpool_kube_requests_total{verb=\"WATCH\",resource=\"nodes\",code=\"error\"} 1\n"
	"spotpool_kube_requests_total{verb=\"other\",resource=\"spotpools\",code=\"other\"} 1\n"
	"# HELP spotpool_workqueue_depth Pools queued for a reconcile, including those waiting out a delay or backoff.\n"
	"# TYPE spotpool_workqueue_depth gauge\n"
	"spotpool_workqueue_depth 3\n"
	"# HELP spotpool_workqueue_queue_duration_seconds Time a pool waited for a worker once due (added, or its delay over).\n"
	"# TYPE spotpool_workqueue_queue_duration_seconds histogram\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"0.001\"} 0\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"0.01\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"0.1\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"0.25\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"0.5\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"1\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"2.5\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"5\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"10\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"30\"} 1\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"60\"} 2\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"300\"} 2\n"
	"spotpool_workqueue_queue_duration_seconds_bucket{le=\"+Inf\"} 2\n"
	"spotpool_workqueue_queue_duration_seconds_sum 45.002\n"
	"spotpool_workqueue_queue_duration_seconds_count 2\n"
	"# HELP spotpool_workqueue_work_duration_seconds Time a worker spent on a pool, from taking it off the queue to done.\n"
	"# TYPE spotpool_workqueue_work_duration_seconds histogram\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"0.001\"} 0\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"0.01\"} 0\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"0.1\"} 0\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"0.25\"} 0\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"0.5\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"1\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"2.5\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"5\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"10\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"30\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"60\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"300\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_bucket{le=\"+Inf\"} 1\n"
	"spotpool_workqueue_work_duration_seconds_sum 0.5\n"
	"spotpool_workqueue_work_duration_seconds_count 1\n"
	"# HELP spotpool_workqueue_retries_total Failed reconciles requeued with backoff.\n"
	"# TYPE spotpool_workqueue_retries_total counter\n"
	"spotpool_workqueue_retries_total 1\n";

static void test_whole_page(void **state)
{
	(void)state;
	fixed_state();
	char *page = exposition_render();
	const char *process = strstr(page, "# HELP process_");
	assert_non_null(process);
	char *head = xstrndup(page, (size_t)(process - page));
	assert_string_equal(head, fixed_page);
	free(head);
	free(page);
}

static void test_offering_launches(void **state)
{
	(void)state;
	metrics_offering_launch(NULL, "ap-singapore-2", "GN7.2XLARGE32", 0, NULL);
	metrics_offering_launch(NULL, "ap-singapore-2", "GN7.2XLARGE32", SP_ECAPACITY, "ResourcesSoldOut.SpecifiedInstanceType");
	metrics_offering_launch(NULL, "ap-singapore-2", "GN7.2XLARGE32", SP_ECAPACITY, "ResourceInsufficient.AvailabilityZoneSoldOut");
	metrics_offering_launch(NULL, "ap-singapore-2", "GN7.2XLARGE32", SP_ECAPACITY, "LimitExceeded.SpotQuota");
	metrics_offering_launch(NULL, "ap-singapore-3", "GN7.2XLARGE32", SP_ETHROTTLED, "RequestLimitExceeded");
	metrics_offering_launch(NULL, NULL, "", SP_ETRANSIENT, NULL);
	char *page = exposition_render();
	static const char *const want[] = {
		"\nspotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"success\"} 1\n",
		"\nspotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"sold_out\"} 2\n",
		"\nspotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"capacity\"} 1\n",
		"\nspotpool_offering_launches_total{zone=\"ap-singapore-2\",instance_type=\"GN7.2XLARGE32\",outcome=\"unknown\"} 0\n",
		"\nspotpool_offering_launches_total{zone=\"ap-singapore-3\",instance_type=\"GN7.2XLARGE32\",outcome=\"throttled\"} 1\n",
		"\nspotpool_offering_launches_total{zone=\"unknown\",instance_type=\"unknown\",outcome=\"transient\"} 1\n",
		"\nspotpool_offerings_unavailable 0\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_contains(page, want[i]);
	/* Eight outcomes per offering, from the start. */
	assert_int_equal(count(page, "\nspotpool_offering_launches_total{zone=\"ap-singapore-3\""), 8);
	free(page);
	/* Zones and types are open-ended: capped like other such labels. */
	for (int i = 0; i < METRICS_LABEL_VALUES_MAX + 5; i++) {
		char zone[32];
		snprintf(zone, sizeof(zone), "z-%d", i);
		metrics_offering_launch(NULL, zone, "T", 0, NULL);
	}
	page = exposition_render();
	assert_contains(page, "\nspotpool_offering_launches_total{zone=\"other\",instance_type=\"T\",outcome=\"success\"} ");
	assert_int_equal(count(page, ",outcome=\"success\"} "), METRICS_LABEL_VALUES_MAX + 1);
	free(page);
}

/* Apiserver requests: by verb, resource and status; no answer is "error", an unknown
 * method "other", a status outside 100..599 "other". */
static void test_kube_requests(void **state)
{
	(void)state;
	metrics_kube_request(NULL, "PATCH", "spotpools/status", 200);
	metrics_kube_request(NULL, "PATCH", "spotpools/status", 200);
	metrics_kube_request(NULL, "PATCH", "spotpools/status", 409);
	metrics_kube_request(NULL, "WATCH", "spotpools", 0);
	metrics_kube_request(NULL, "BREW", "other", 1000);
	char *page = exposition_render();
	assert_contains(page, "\nspotpool_kube_requests_total{verb=\"PATCH\",resource=\"spotpools/status\",code=\"200\"} 2\n");
	assert_contains(page, "\nspotpool_kube_requests_total{verb=\"PATCH\",resource=\"spotpools/status\",code=\"409\"} 1\n");
	assert_contains(page, "\nspotpool_kube_requests_total{verb=\"WATCH\",resource=\"spotpools\",code=\"error\"} 1\n");
	assert_contains(page, "\nspotpool_kube_requests_total{verb=\"other\",resource=\"other\",code=\"other\"} 1\n");
	free(page);
}

static void test_offerings_unavailable_gauge(void **state)
{
	(void)state;
	struct soldout *so = soldout_new(0);
	metrics_set_soldout(NULL, so);
	struct soldout_key a = {"AKIDm", "ap-singapore", "ap-singapore-2", "GN7.2XLARGE32"};
	struct soldout_key b = {"AKIDm", "ap-singapore", "ap-singapore-3", "GN7.2XLARGE32"};
	soldout_mark(so, &a, sp_mono_ms(), 0);
	soldout_mark(so, &b, sp_mono_ms(), 0);
	char *page = exposition_render();
	assert_contains(page, "\nspotpool_offerings_unavailable 2\n");
	free(page);
	soldout_clear(so, &a);
	page = exposition_render();
	assert_contains(page, "\nspotpool_offerings_unavailable 1\n");
	free(page);
	metrics_set_soldout(NULL, NULL);
	soldout_free(so);
	page = exposition_render();
	assert_contains(page, "\nspotpool_offerings_unavailable 0\n");
	free(page);
}

/* Runs tests/tools/promcheck.py (args) on page; its exit status, or -1 without python3
 * or outside the source tree (tests/run-tests runs from its top). */
static int promcheck(const char *args, const char *page)
{
	if (access("tests/tools/promcheck.py", R_OK) != 0 || system("python3 -c '' 2>/dev/null") != 0)
		return -1;
	char *cmd = xasprintf("python3 tests/tools/promcheck.py %s >/dev/null", args);
	FILE *p = popen(cmd, "w");
	free(cmd);
	assert_non_null(p);
	fputs(page, p);
	int status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_page_passes_promcheck(void **state)
{
	(void)state;
	touch_pool("ns", "a");
	touch_pool("n\"s", "b\\\n");
	touch_globals();
	metrics_cvm_observe(NULL, "RunInstances", "ResourcesSoldOut", 30);
	char *page = exposition_render();
	int rc = promcheck("", page);
	free(page);
	if (rc < 0)
		skip();
	assert_int_equal(rc, 0);
	/* and promcheck rejects pages that break each of its rules */
	assert_int_equal(promcheck("--self-test", ""), 0);
}

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 500; i++) {
		metrics_instances_launched(NULL, "ns", "busy", 1);
		metrics_launch_request(NULL, "ns", "busy", i % 2 ? 0 : SP_ECAPACITY, "ResourceInsufficient");
		metrics_cvm_observe(NULL, "DescribeInstances", "Success", 0.01);
		metrics_reconcile_observe(NULL, 0.01, i % 2);
		metrics_workqueue_retry(NULL);
		if (i % 100 == 0) {
			free(exposition_render());
			metrics_pool_forget(NULL, "ns", "churn");
		} else {
			metrics_instance_reclaimed(NULL, "ns", "churn");
		}
	}
	return NULL;
}

static void test_concurrent_updates(void **state)
{
	(void)state;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	char *page = exposition_render();
	assert_contains(page, "spotpool_instances_launched_total{namespace=\"ns\",pool=\"busy\"} 2000\n");
	assert_contains(page, "spotpool_launch_requests_total{namespace=\"ns\",pool=\"busy\",outcome=\"success\"} 1000\n");
	assert_contains(page, "spotpool_launch_failures_total{namespace=\"ns\",pool=\"busy\","
			      "reason=\"ResourceInsufficient\"} 1000\n");
	assert_contains(page, "code=\"Success\"} 2000\n");
	assert_contains(page, "\nspotpool_reconciles_total 2000\n");
	assert_contains(page, "\nspotpool_reconcile_errors_total 1000\n");
	assert_contains(page, "\nspotpool_workqueue_retries_total 2000\n");
	free(page);
}

/* HTTP */

struct probe_flags {
	bool alive, ready;
};

static bool is_alive(void *userdata)
{
	return ((struct probe_flags *)userdata)->alive;
}

static bool is_ready(void *userdata)
{
	return ((struct probe_flags *)userdata)->ready;
}

struct reply {
	long status;
	char *body;
	char *content_type;
	char *allow;
};

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
	return buf_append(userdata, data, size * n) == 0 ? size * n : 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata)
{
	struct reply *r = userdata;
	if (size * n > 7 && strncasecmp(data, "Allow: ", 7) == 0)
		r->allow = xstrndup(data + 7, strcspn(data + 7, "\r\n"));
	return size * n;
}

static struct reply fetch(const char *host, int port, const char *method, const char *path)
{
	struct reply r = {0};
	struct buf body;
	buf_init(&body, 1 << 20);
	char *url = xasprintf("http://%s:%d%s", host, port, path);
	CURL *c = curl_easy_init();
	assert_non_null(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "POST") == 0)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "a=b");
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method, url, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	const char *type = NULL;
	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
	r.content_type = type ? xstrdup(type) : NULL;
	r.body = buf_steal(&body);
	curl_easy_cleanup(c);
	free(url);
	return r;
}

static void reply_free(struct reply *r)
{
	free(r->body);
	free(r->content_type);
	free(r->allow);
}

static void expect(const char *host, int port, const char *method, const char *path, long status,
		   const char *body)
{
	struct reply r = fetch(host, port, method, path);
	if (r.status != status || strcmp(r.body, body) != 0)
		fail_msg("%s %s: got %ld \"%s\", want %ld \"%s\"", method, path, r.status, r.body, status, body);
	reply_free(&r);
}

static void test_serve_endpoints(void **state)
{
	(void)state;
	struct probe_flags flags = {.alive = true, .ready = true};
	struct httpd_health health = {.alive = is_alive, .ready = is_ready, .userdata = &flags};
	struct httpd *s = NULL;
	int port = 0;
	struct sp_error err = {0};
	assert_int_equal(httpd_serve("127.0.0.1:0", &health, &s, &port, &err), 0);
	assert_non_null(s);
	assert_true(port > 0 && port < 65536);
	metrics_pool_sizes(NULL, "ns", "served", 1, 9, 7, 6);

	struct reply r = fetch("127.0.0.1", port, "GET", "/metrics");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
	assert_contains(r.body, "spotpool_build_info{version=\"" SPOTPOOL_VERSION "\"} 1\n");
	assert_contains(r.body, "spotpool_pool_desired{namespace=\"ns\",pool=\"served\"} 7\n");
	reply_free(&r);
	expect("127.0.0.1", port, "HEAD", "/metrics", 200, "");
	r = fetch("127.0.0.1", port, "GET", "/metrics?debug=1");  /* the query is not part of the path */
	assert_int_equal(r.status, 200);
	assert_contains(r.body, "spotpool_leader 0\n");
	reply_free(&r);

	expect("127.0.0.1", port, "GET", "/healthz", 200, "ok\n");
	expect("127.0.0.1", port, "GET", "/readyz", 200, "ok\n");
	flags.alive = false;
	expect("127.0.0.1", port, "GET", "/healthz", 503, "unhealthy\n");
	expect("127.0.0.1", port, "GET", "/readyz", 200, "ok\n");
	flags.ready = false;
	expect("127.0.0.1", port, "GET", "/readyz", 503, "not ready\n");

	expect("127.0.0.1", port, "GET", "/", 404, "not found\n");
	expect("127.0.0.1", port, "GET", "/metrics/extra", 404, "not found\n");
	r = fetch("127.0.0.1", port, "POST", "/metrics");
	assert_int_equal(r.status, 405);
	assert_string_equal(r.body, "method not allowed\n");
	assert_string_equal(r.allow, "GET, HEAD");
	reply_free(&r);
	expect("127.0.0.1", port, "DELETE", "/healthz", 405, "method not allowed\n");

	/* the port is taken now: a bind failure names the address */
	char *taken = xasprintf("127.0.0.1:%d", port);
	struct httpd *other = NULL;
	int other_port = -1;
	assert_int_equal(httpd_serve(taken, NULL, &other, &other_port, &err), SP_EIO);
	assert_contains(err.msg, taken);
	assert_null(other);
	assert_int_equal(other_port, -1);
	free(taken);

	httpd_stop(s);
	httpd_stop(NULL);
}

static void test_serve_ipv6_without_probes(void **state)
{
	(void)state;
	struct httpd *s = NULL;
	int port = 0;
	struct sp_error err = {0};
	if (httpd_serve("[::1]:0", NULL, &s, &port, &err) != 0)
		skip();  /* no IPv6 loopback in this environment */
	expect("[::1]", port, "GET", "/healthz", 200, "ok\n");
	expect("[::1]", port, "GET", "/readyz", 200, "ok\n");
	httpd_stop(s);
}

static void test_bad_listen_addresses(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "127.0.0.1", "9464", ":9464", "localhost:9464", "127.0.0.1:", "127.0.0.1:65536",
		"127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x", "1.2.3:80", "::1:9464", "[::1]",
		"[::1]:", "[127.0.0.1]:80", "[::1:80",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct httpd *s = NULL;
		int port = -1;
		struct sp_error err = {0};
		if (httpd_serve(bad[i], NULL, &s, &port, &err) != SP_EINVAL)
			fail_msg("\"%s\" was accepted", bad[i]);
		char *quoted = xasprintf("\"%s\"", bad[i]);
		assert_contains(err.msg, quoted);
		free(quoted);
		assert_null(s);
		assert_int_equal(port, -1);
	}
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_families_appear_once, reset, reset),
		cmocka_unit_test_setup_teardown(test_pool_values, reset, reset),
		cmocka_unit_test_setup_teardown(test_pools_sorted_whatever_their_order, reset, reset),
		cmocka_unit_test_setup_teardown(test_launch_outcomes_and_failure_reasons, reset, reset),
		cmocka_unit_test_setup_teardown(test_histograms_and_counters, reset, reset),
		cmocka_unit_test_setup_teardown(test_workqueue_hooks, reset, reset),
		cmocka_unit_test_setup_teardown(test_label_escaping, reset, reset),
		cmocka_unit_test_setup_teardown(test_code_cardinality_is_capped, reset, reset),
		cmocka_unit_test_setup_teardown(test_failure_reasons_are_capped, reset, reset),
		cmocka_unit_test_setup_teardown(test_pool_count_is_capped, reset, reset),
		cmocka_unit_test_setup_teardown(test_forget_drops_every_pool_series, reset, reset),
		cmocka_unit_test_setup_teardown(test_page_passes_promcheck, reset, reset),
		cmocka_unit_test_setup_teardown(test_below_minimum_seconds, reset, reset),
		cmocka_unit_test_setup_teardown(test_whole_page, reset, reset),
		cmocka_unit_test_setup_teardown(test_offering_launches, reset, reset),
		cmocka_unit_test_setup_teardown(test_kube_requests, reset, reset),
		cmocka_unit_test_setup_teardown(test_offerings_unavailable_gauge, reset, reset),
		cmocka_unit_test_setup_teardown(test_concurrent_updates, reset, reset),
		cmocka_unit_test_setup_teardown(test_serve_endpoints, reset, reset),
		cmocka_unit_test_setup_teardown(test_serve_ipv6_without_probes, reset, reset),
		cmocka_unit_test_setup_teardown(test_bad_listen_addresses, reset, reset),
		cmocka_unit_test_setup_teardown(test_process_metrics, reset, reset),
	};
	int failed = cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
	curl_global_cleanup();
	return failed;
}
