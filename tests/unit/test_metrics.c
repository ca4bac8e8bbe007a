/* metrics: exposition format, label escaping and caps, and the HTTP endpoints. */
#include "testutil.h"
#include "buf.h"
#include "metrics.h"

#include <curl/curl.h>
#include <pthread.h>

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

static void test_families_appear_once(void **state)
{
	(void)state;
	metrics_pool_set("ns", "a", 1, 1);
	metrics_cvm_observe(NULL, "RunInstances", "Success", 1);
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 1);
	metrics_reconcile_observe(1, false);
	static const char *const families[][2] = {
		{"spotpool_build_info", "gauge"},
		{"spotpool_pool_desired_instances", "gauge"},
		{"spotpool_pool_observed_instances", "gauge"},
		{"spotpool_pool_launches_total", "counter"},
		{"spotpool_pool_terminations_total", "counter"},
		{"spotpool_pool_reclaims_total", "counter"},
		{"spotpool_cvm_requests_total", "counter"},
		{"spotpool_cvm_request_duration_seconds", "histogram"},
		{"spotpool_reconcile_duration_seconds", "histogram"},
		{"spotpool_reconcile_errors_total", "counter"},
		{"spotpool_reconciles_total", "counter"},
		{"spotpool_leader", "gauge"},
	};
	char *page = metrics_render();
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char *help = xasprintf("# HELP %s ", families[i][0]);
		char *type = xasprintf("# TYPE %s %s\n", families[i][0], families[i][1]);
		assert_int_equal(count(page, help), 1);
		assert_int_equal(count(page, type), 1);
		free(help);
		free(type);
	}
	assert_int_equal(count(page, "# HELP "), sizeof(families) / sizeof(families[0]));
	assert_int_equal(count(page, "# TYPE "), sizeof(families) / sizeof(families[0]));
	assert_contains(page, "spotpool_build_info{version=\"" SPOTPOOL_VERSION "\"} 1\n");
	free(page);
}

static void test_pool_values(void **state)
{
	(void)state;
	metrics_pool_set("prod", "gpu", 4, 3);
	metrics_pool_set("prod", "gpu", 5, 4);
	metrics_pool_add("prod", "gpu", METRICS_LAUNCHES, 3);
	metrics_pool_add("prod", "gpu", METRICS_LAUNCHES, 2);
	metrics_pool_add("prod", "gpu", METRICS_LAUNCHES, -7);  /* counters never go down */
	metrics_pool_add("prod", "gpu", METRICS_RECLAIMS, 1);
	metrics_pool_add("prod", "counted-only", METRICS_TERMINATIONS, 2);
	char *page = metrics_render();
	assert_contains(page, "\nspotpool_pool_desired_instances{namespace=\"prod\",name=\"gpu\"} 5\n");
	assert_contains(page, "\nspotpool_pool_observed_instances{namespace=\"prod\",name=\"gpu\"} 4\n");
	assert_contains(page, "\nspotpool_pool_launches_total{namespace=\"prod\",name=\"gpu\"} 5\n");
	assert_contains(page, "\nspotpool_pool_terminations_total{namespace=\"prod\",name=\"gpu\"} 0\n");
	assert_contains(page, "\nspotpool_pool_reclaims_total{namespace=\"prod\",name=\"gpu\"} 1\n");
	assert_contains(page, "\nspotpool_pool_terminations_total{namespace=\"prod\",name=\"counted-only\"} 2\n");
	/* sizes never set: no made-up zero gauges */
	assert_not_contains(page, "instances{namespace=\"prod\",name=\"counted-only\"}");
	free(page);
}

static void test_histograms_and_counters(void **state)
{
	(void)state;
	/* dyadic values so that _sum prints exactly; 0.25 sits on a bound and counts in it */
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 0.25);
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 0.5);
	metrics_cvm_observe(NULL, "DescribeInstances", "Success", 4);
	metrics_cvm_observe(NULL, "DescribeInstances", "RequestLimitExceeded", 20);
	metrics_reconcile_observe(0.125, false);
	metrics_reconcile_observe(3, true);
	metrics_set_leader(true);
	char *page = metrics_render();
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
	page = metrics_render();
	assert_contains(page, "\nspotpool_leader 0\n");
	free(page);
}

static void test_label_escaping(void **state)
{
	(void)state;
	metrics_pool_set("a\"b", "c\\d\ne", 1, 0);
	metrics_cvm_observe(NULL, "Run\"Instances", "Bad\\Code\n", 1);
	char *page = metrics_render();
	assert_contains(page, "spotpool_pool_desired_instances{namespace=\"a\\\"b\",name=\"c\\\\d\\ne\"} 1\n");
	assert_contains(page, "{action=\"Run\\\"Instances\",code=\"Bad\\\\Code\\n\"} 1\n");
	assert_contains(page, "_count{action=\"Run\\\"Instances\"} 1\n");
	free(page);
}

static void test_code_cardinality_is_capped(void **state)
{
	(void)state;
	for (int i = 0; i < METRICS_LABEL_VALUES_MAX + 6; i++) {
		char code[32];
		snprintf(code, sizeof(code), "Code%d", i);
		metrics_cvm_observe(NULL, "RunInstances", code, 0.01);
	}
	char huge[METRICS_LABEL_VALUE_LEN_MAX + 2];
	memset(huge, 'x', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	metrics_cvm_observe(NULL, "RunInstances", huge, 0.01);
	metrics_cvm_observe(NULL, "RunInstances", "Code0", 0.01);  /* known values still count */
	char *page = metrics_render();
	assert_contains(page, "code=\"Code0\"} 2\n");
	assert_contains(page, "code=\"Code63\"} 1\n");
	assert_not_contains(page, "code=\"Code64\"");
	assert_not_contains(page, "xxxx");
	assert_contains(page, "{action=\"RunInstances\",code=\"other\"} 7\n");
	assert_int_equal(count(page, "spotpool_cvm_requests_total{"), METRICS_LABEL_VALUES_MAX + 1);
	assert_contains(page, "spotpool_cvm_request_duration_seconds_count{action=\"RunInstances\"} 72\n");
	free(page);
}

static void test_forget_drops_series(void **state)
{
	(void)state;
	metrics_pool_set("ns", "gone", 2, 2);
	metrics_pool_add("ns", "gone", METRICS_LAUNCHES, 2);
	metrics_pool_set("ns", "kept", 1, 1);
	metrics_pool_forget("ns", "gone");
	metrics_pool_forget("ns", "never-existed");
	char *page = metrics_render();
	assert_not_contains(page, "name=\"gone\"");
	assert_contains(page, "spotpool_pool_desired_instances{namespace=\"ns\",name=\"kept\"} 1\n");
	assert_contains(page, "spotpool_pool_reclaims_total{namespace=\"ns\",name=\"kept\"} 0\n");
	free(page);
}

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 500; i++) {
		metrics_pool_add("ns", "busy", METRICS_LAUNCHES, 1);
		metrics_cvm_observe(NULL, "DescribeInstances", "Success", 0.01);
		metrics_reconcile_observe(0.01, i % 2);
		if (i % 100 == 0)
			free(metrics_render());
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
	char *page = metrics_render();
	assert_contains(page, "spotpool_pool_launches_total{namespace=\"ns\",name=\"busy\"} 2000\n");
	assert_contains(page, "code=\"Success\"} 2000\n");
	assert_contains(page, "\nspotpool_reconciles_total 2000\n");
	assert_contains(page, "\nspotpool_reconcile_errors_total 1000\n");
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
	struct metrics_health health = {.alive = is_alive, .ready = is_ready, .userdata = &flags};
	struct metrics_server *s = NULL;
	int port = 0;
	struct sp_error err = {0};
	assert_int_equal(metrics_serve("127.0.0.1:0", &health, &s, &port, &err), 0);
	assert_non_null(s);
	assert_true(port > 0 && port < 65536);
	metrics_pool_set("ns", "served", 7, 6);

	struct reply r = fetch("127.0.0.1", port, "GET", "/metrics");
	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
	assert_contains(r.body, "spotpool_build_info{version=\"" SPOTPOOL_VERSION "\"} 1\n");
	assert_contains(r.body, "spotpool_pool_desired_instances{namespace=\"ns\",name=\"served\"} 7\n");
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
	struct metrics_server *other = NULL;
	int other_port = -1;
	assert_int_equal(metrics_serve(taken, NULL, &other, &other_port, &err), SP_EIO);
	assert_contains(err.msg, taken);
	assert_null(other);
	assert_int_equal(other_port, -1);
	free(taken);

	metrics_server_stop(s);
	metrics_server_stop(NULL);
}

static void test_serve_ipv6_without_probes(void **state)
{
	(void)state;
	struct metrics_server *s = NULL;
	int port = 0;
	struct sp_error err = {0};
	if (metrics_serve("[::1]:0", NULL, &s, &port, &err) != 0)
		skip();  /* no IPv6 loopback in this environment */
	expect("[::1]", port, "GET", "/healthz", 200, "ok\n");
	expect("[::1]", port, "GET", "/readyz", 200, "ok\n");
	metrics_server_stop(s);
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
		struct metrics_server *s = NULL;
		int port = -1;
		struct sp_error err = {0};
		if (metrics_serve(bad[i], NULL, &s, &port, &err) != SP_EINVAL)
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
		cmocka_unit_test_setup_teardown(test_histograms_and_counters, reset, reset),
		cmocka_unit_test_setup_teardown(test_label_escaping, reset, reset),
		cmocka_unit_test_setup_teardown(test_code_cardinality_is_capped, reset, reset),
		cmocka_unit_test_setup_teardown(test_forget_drops_series, reset, reset),
		cmocka_unit_test_setup_teardown(test_concurrent_updates, reset, reset),
		cmocka_unit_test_setup_teardown(test_serve_endpoints, reset, reset),
		cmocka_unit_test_setup_teardown(test_serve_ipv6_without_probes, reset, reset),
		cmocka_unit_test_setup_teardown(test_bad_listen_addresses, reset, reset),
	};
	int failed = cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
	curl_global_cleanup();
	return failed;
}
