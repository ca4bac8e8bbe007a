/* drain: kubectl drain's pod rules, the victim order of a scale-down, and the steps of one
 * node's drain (start, evict, wait, drained, given up; forced by a reclaim deadline). */
#include "testutil.h"
#include "drain.h"

#define NOW 1800000000

static void test_pod_classes(void **state)
{
	(void)state;
	static const struct {
		const char *what, *metadata, *status;
		enum drain_pod_class want;
	} cases[] = {
		{"a ReplicaSet's pod", "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"controller\":true}]",
		 "{\"phase\":\"Running\"}", DRAIN_POD_EVICT},
		{"a bare pod", "", "{\"phase\":\"Running\"}", DRAIN_POD_EVICT},
		{"a pending pod", "", "{\"phase\":\"Pending\"}", DRAIN_POD_EVICT},
		{"no status", "", "null", DRAIN_POD_EVICT},
		{"mirror", "\"annotations\":{\"kubernetes.io/config.mirror\":\"abc\"}", "{\"phase\":\"Running\"}",
		 DRAIN_POD_MIRROR},
		{"mirror, safe-to-evict false",
		 "\"annotations\":{\"kubernetes.io/config.mirror\":\"\",\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"false\"}",
		 "{\"phase\":\"Running\"}", DRAIN_POD_MIRROR},
		{"DaemonSet", "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":true}]",
		 "{\"phase\":\"Running\"}", DRAIN_POD_DAEMONSET},
		{"DaemonSet second of two owners",
		 "\"ownerReferences\":[{\"kind\":\"ConfigMap\"},{\"kind\":\"DaemonSet\",\"controller\":true}]",
		 "{\"phase\":\"Running\"}", DRAIN_POD_DAEMONSET},
		{"DaemonSet owner that is not the controller",
		 "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":false}]", "{\"phase\":\"Running\"}",
		 DRAIN_POD_EVICT},
		{"DaemonSet owner without controller", "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]",
		 "{\"phase\":\"Running\"}", DRAIN_POD_EVICT},
		{"Succeeded", "", "{\"phase\":\"Succeeded\"}", DRAIN_POD_FINISHED},
		{"Failed", "", "{\"phase\":\"Failed\"}", DRAIN_POD_FINISHED},
		{"Failed, safe-to-evict false", "\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"false\"}",
		 "{\"phase\":\"Failed\"}", DRAIN_POD_FINISHED},
		{"safe-to-evict false", "\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"false\"}",
		 "{\"phase\":\"Running\"}", DRAIN_POD_BLOCKING},
		{"safe-to-evict true", "\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"true\"}",
		 "{\"phase\":\"Running\"}", DRAIN_POD_EVICT},
		{"safe-to-evict False (not the value)",
		 "\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"False\"}",
		 "{\"phase\":\"Running\"}", DRAIN_POD_EVICT},
		{"being deleted", "\"deletionTimestamp\":\"2026-11-25T03:00:00Z\"", "{\"phase\":\"Running\"}",
		 DRAIN_POD_GOING},
		{"being deleted, safe-to-evict false",
		 "\"deletionTimestamp\":\"2026-11-25T03:00:00Z\",\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"false\"}",
		 "{\"phase\":\"Running\"}", DRAIN_POD_GOING},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = xasprintf("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"p%zu\"%s%s},\"status\":%s}", i,
				       *cases[i].metadata ? "," : "", cases[i].metadata, cases[i].status);
		cJSON *pod = cJSON_Parse(text);
		assert_non_null(pod);
		struct drain_pod p;
		assert_int_equal(drain_pod_classify(pod, &p, NULL), 0);
		if (p.cls != cases[i].want)
			fail_msg("%s: class %d, want %d", cases[i].what, p.cls, cases[i].want);
		assert_string_equal(p.namespace, "ml");
		char name[16];
		snprintf(name, sizeof(name), "p%zu", i);
		assert_string_equal(p.name, name);
		assert_int_equal(drain_pod_holds(p.cls),
				 p.cls == DRAIN_POD_EVICT || p.cls == DRAIN_POD_BLOCKING || p.cls == DRAIN_POD_GOING);
		cJSON_Delete(pod);
		free(text);
	}
}

static void test_pod_without_identity(void **state)
{
	(void)state;
	char long_ns[80];
	memset(long_ns, 'n', 64);
	long_ns[64] = '\0';
	char *too_long = xasprintf("{\"metadata\":{\"namespace\":\"%s\",\"name\":\"a\"}}", long_ns);
	const char *const bad[] = {
		"{}", "{\"metadata\":{\"name\":\"a\"}}", "{\"metadata\":{\"namespace\":\"ml\"}}",
		"{\"metadata\":{\"namespace\":\"ml\",\"name\":\"\"}}", "{\"metadata\":{\"namespace\":1,\"name\":\"a\"}}",
		too_long,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *pod = cJSON_Parse(bad[i]);
		struct drain_pod p = {.cls = DRAIN_POD_MIRROR};
		struct sp_error err = {0};
		assert_int_equal(drain_pod_classify(pod, &p, &err), SP_EPROTO);
		assert_contains(err.msg, "metadata.namespace and metadata.name");
		cJSON_Delete(pod);
	}
	free(too_long);
}

static void test_victim_counts(void **state)
{
	(void)state;
	struct drain_pod pods[] = {
		{.cls = DRAIN_POD_EVICT}, {.cls = DRAIN_POD_GOING}, {.cls = DRAIN_POD_BLOCKING},
		{.cls = DRAIN_POD_MIRROR}, {.cls = DRAIN_POD_DAEMONSET}, {.cls = DRAIN_POD_FINISHED},
		{.cls = DRAIN_POD_EVICT},
	};
	struct drain_victim v = {.has_node = true, .blocking = 9, .evictable = 9};
	drain_victim_count(pods, 7, &v);
	assert_true(v.has_node);
	assert_int_equal(v.evictable, 3);
	assert_int_equal(v.blocking, 1);
	drain_victim_count(pods + 3, 3, &v);
	assert_int_equal(v.evictable, 0);
	assert_int_equal(v.blocking, 0);
}

static void test_victim_order(void **state)
{
	(void)state;
	const struct drain_victim none = {0}, empty = {.has_node = true},
				  one = {.has_node = true, .evictable = 1},
				  ten = {.has_node = true, .evictable = 10},
				  blocking = {.has_node = true, .blocking = 1},
				  contested = {.contested = true},
				  unlisted = {.has_node = true, .unlisted = true},
				  disabled_none = {.scale_down_disabled = true},
				  disabled_empty = {.has_node = true, .scale_down_disabled = true},
				  disabled_busy = {.has_node = true, .scale_down_disabled = true, .evictable = 4};
	static const char *const names[] = {"none", "empty", "one", "ten", "blocking", "contested", "unlisted",
					    "disabled_none", "disabled_empty", "disabled_busy"};
	const struct drain_victim *v[] = {&none, &empty, &one, &ten, &blocking, &contested, &unlisted,
					  &disabled_none, &disabled_empty, &disabled_busy};
	/* Each before the next: sign of cmp(a, b) for every pair follows this order. A Node
	 * whose pods could not be listed looks empty but is chosen after every listed one; a
	 * contested instance has no Node but is chosen after every one not contested. */
	static const int rank[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	for (size_t a = 0; a < 10; a++)
		for (size_t b = 0; b < 10; b++) {
			int c = drain_victim_cmp(v[a], v[b]);
			int want = rank[a] < rank[b] ? -1 : rank[a] > rank[b] ? 1 : 0;
			if ((c > 0) - (c < 0) != want)
				fail_msg("cmp(%s, %s) = %d, want sign %d", names[a], names[b], c, want);
		}
	/* Ties are left to plan's order. */
	const struct drain_victim one_more = {.has_node = true, .evictable = 1},
				  blocking_busier = {.has_node = true, .blocking = 3};
	assert_int_equal(drain_victim_cmp(&one, &one_more), 0);
	assert_int_equal(drain_victim_cmp(&blocking, &blocking_busier), 0);
}

/* Pods of a node by class letters: e evict, b blocking, g going, m mirror, d DaemonSet,
 * f finished; named ns/pN. */
static size_t pods_of(const char *classes, struct drain_pod *pods)
{
	size_t n = 0;
	for (const char *c = classes; *c; c++, n++) {
		snprintf(pods[n].namespace, sizeof(pods[n].namespace), "ns");
		snprintf(pods[n].name, sizeof(pods[n].name), "p%zu", n);
		pods[n].cls = *c == 'e' ? DRAIN_POD_EVICT : *c == 'b' ? DRAIN_POD_BLOCKING :
			      *c == 'g' ? DRAIN_POD_GOING : *c == 'm' ? DRAIN_POD_MIRROR :
			      *c == 'd' ? DRAIN_POD_DAEMONSET : DRAIN_POD_FINISHED;
	}
	return n;
}

static void test_drain_steps(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		bool no_node;
		int64_t started_ago;  /* -1: not started */
		bool was_unschedulable;
		const char *pods;
		int64_t timeout, deadline_in; /* deadline_in 0: none */
		enum drain_action want;
		const char *evict;    /* indices to evict, as digits */
		int64_t until_in;     /* EVICT/WAIT: until - NOW */
		bool uncordon;
		size_t left;
		const char *reason, *message;
		const char *unlisted; /* why the pods could not be listed, NULL: listed */
	} cases[] = {
		{"no Node: drained at once", true, -1, false, "", 600, 0, DRAIN_DONE, "", 0, false, 0, "", "", NULL},
		{"no Node under a notice", true, -1, false, "", 600, 120, DRAIN_DONE, "", 0, false, 0, "", "", NULL},
		{"drainTimeout 0: no drain", false, -1, false, "ee", 0, 0, DRAIN_DONE, "", 0, false, 2, "", "", NULL},
		{"drainTimeout 0 mid-drain: no more drain", false, 30, false, "e", 0, 0, DRAIN_DONE, "", 0, false, 1, "", "", NULL},
		{"not started: start", false, -1, false, "eedm", 600, 0, DRAIN_START, "", 0, false, 2, "", "", NULL},
		{"not started, empty node: start all the same", false, -1, false, "", 600, 0, DRAIN_START, "", 0,
		 false, 0, "", "", NULL},
		{"started, empty: drained", false, 0, false, "", 600, 0, DRAIN_DONE, "", 0, false, 0, "", "", NULL},
		{"only pods that stay: drained", false, 10, false, "mdf", 600, 0, DRAIN_DONE, "", 0, false, 0, "", "", NULL},
		{"evict the evictable only", false, 0, false, "emedfbg", 600, 0, DRAIN_EVICT, "02", 5, false, 4, "", "", NULL},
		{"until capped by the timeout", false, 598, false, "e", 600, 0, DRAIN_EVICT, "0", 2, false, 1, "", "", NULL},
		{"going and blocking: wait", false, 100, false, "gbm", 600, 0, DRAIN_WAIT, "", 5, false, 2, "", "", NULL},
		{"timed out: give up, uncordon", false, 600, false, "ebgm", 600, 0, DRAIN_GIVE_UP, "", 0, true, 3,
		 DRAIN_REASON_TIMED_OUT,
		 "the drain did not finish within drainTimeout 10m; the node is kept and uncordoned: 3 pod(s) left: "
		 "ns/p0, ns/p1 (safe-to-evict false), ns/p2 (terminating)", NULL},
		{"timed out, cordoned before: stays cordoned", false, 5401, true, "e", 5400, 0, DRAIN_GIVE_UP, "", 0,
		 false, 1, DRAIN_REASON_TIMED_OUT,
		 "within drainTimeout 1h30m; the node is kept (cordoned, as it was before): 1 pod(s) left: ns/p0", NULL},
		{"timed out, many left: 5 named", false, 700, false, "eeeeeee", 90, 0, DRAIN_GIVE_UP, "", 0, true, 7,
		 DRAIN_REASON_TIMED_OUT, "drainTimeout 1m30s; the node is kept and uncordoned: 7 pod(s) left: ns/p0, "
		 "ns/p1, ns/p2, ns/p3, ns/p4, ...", NULL},
		{"drained on the timeout's second: done, not given up", false, 600, false, "mf", 600, 0, DRAIN_DONE,
		 "", 0, false, 0, "", "", NULL},
		{"notice, not started: start", false, -1, false, "e", 600, 120, DRAIN_START, "", 0, false, 1, "", "", NULL},
		{"notice: blocking pods evicted too", false, 10, false, "bge", 600, 110, DRAIN_EVICT, "02", 5, false,
		 3, "", "", NULL},
		{"notice: never given up past the timeout", false, 700, false, "e", 600, 3, DRAIN_EVICT, "0", 3, false,
		 1, "", "", NULL},
		{"notice: only going pods: wait for them", false, 10, false, "g", 600, 60, DRAIN_WAIT, "", 5, false, 1,
		 "", "", NULL},
		{"notice: drained before the deadline", false, 10, false, "d", 600, 60, DRAIN_DONE, "", 0, false, 0, "",
		 "", NULL},
		{"notice: deadline passed: done, cut short", false, 120, false, "eb", 600, 0 - 1, DRAIN_DONE, "", 0,
		 false, 2, DRAIN_REASON_CUT_SHORT,
		 "the reclaim deadline came with the drain unfinished: 2 pod(s) left: ns/p0, ns/p1 (safe-to-evict false)", NULL},
		/* A drain that had not started by its deadline starts late, and evicts for
		 * DRAIN_LATE_SECONDS from its start (review of issue 27: it never started). */
		{"notice: deadline passed before the drain started: start late", false, -1, false, "e", 600, -5,
		 DRAIN_START, "", 0, false, 1, "", "", NULL},
		{"notice: started late: evicts", false, 0, false, "eb", 600, -5, DRAIN_EVICT, "01", 5, false, 2, "", "",
		 NULL},
		{"notice: started late, near its end", false, 118, false, "e", 600, -200, DRAIN_EVICT, "0", 2, false, 1,
		 "", "", NULL},
		{"notice: started on its deadline: late too", false, 10, false, "e", 600, -10, DRAIN_EVICT, "0", 5, false,
		 1, "", "", NULL},
		{"notice: started late, past its end: cut short", false, 120, false, "e", 600, -200, DRAIN_DONE, "", 0,
		 false, 1, DRAIN_REASON_CUT_SHORT, "1 pod(s) left: ns/p0", NULL},
		/* Pods that could not be listed hold the drain with nothing to evict; the drain
		 * still starts, and ends at its timeout or deadline saying why. */
		{"unlisted, not started: start", false, -1, false, "", 600, 0, DRAIN_START, "", 0, false, 1, "", "",
		 "HTTP 403"},
		{"unlisted: not drained, wait", false, 10, false, "", 600, 0, DRAIN_WAIT, "", 5, false, 1, "", "",
		 "HTTP 403"},
		{"unlisted: nothing evicted from a stale listing", false, 10, false, "ee", 600, 0, DRAIN_WAIT, "", 5,
		 false, 1, "", "", "HTTP 403"},
		{"unlisted, timed out: give up saying why", false, 600, false, "", 600, 0, DRAIN_GIVE_UP, "", 0, true, 1,
		 DRAIN_REASON_TIMED_OUT, "the node is kept and uncordoned: its pods could not be listed: HTTP 403",
		 "HTTP 403"},
		{"unlisted, forced past its end: cut short saying why", false, 600, false, "", 600, 0 - 1, DRAIN_DONE,
		 "", 0, false, 1, DRAIN_REASON_CUT_SHORT, "unfinished: its pods could not be listed: HTTP 403",
		 "HTTP 403"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct drain_pod pods[16];
		size_t n = pods_of(cases[i].pods, pods);
		struct drain_step_input in = {
			.node = {.has_node = !cases[i].no_node,
				 .started = cases[i].started_ago < 0 ? 0 : NOW - cases[i].started_ago,
				 .was_unschedulable = cases[i].was_unschedulable},
			.pods = pods, .n_pods = n, .now = NOW, .timeout = cases[i].timeout,
			.deadline = cases[i].deadline_in ? NOW + cases[i].deadline_in : 0,
			.unlisted = cases[i].unlisted,
		};
		struct drain_step s;
		drain_step(&in, &s);
		if (s.action != cases[i].want)
			fail_msg("%s: action %d, want %d", cases[i].what, s.action, cases[i].want);
		char evicted[17] = "";
		for (size_t j = 0; j < s.n_evict && j < 16; j++)
			evicted[j] = (char)('0' + s.evict[j]);
		if (strcmp(evicted, cases[i].evict) != 0)
			fail_msg("%s: evict \"%s\", want \"%s\"", cases[i].what, evicted, cases[i].evict);
		if (s.action == DRAIN_EVICT || s.action == DRAIN_WAIT)
			assert_int_equal(s.until, NOW + cases[i].until_in);
		if (s.uncordon != cases[i].uncordon || s.left != cases[i].left)
			fail_msg("%s: uncordon %d left %zu, want %d %zu", cases[i].what, s.uncordon, s.left,
				 cases[i].uncordon, cases[i].left);
		assert_string_equal(s.reason, cases[i].reason);
		if (*cases[i].message)
			assert_contains(s.message, cases[i].message);
		else
			assert_string_equal(s.message, "");
		drain_step_free(&s);
		assert_null(s.evict);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod_classes),
		cmocka_unit_test(test_pod_without_identity),
		cmocka_unit_test(test_victim_counts),
		cmocka_unit_test(test_victim_order),
		cmocka_unit_test(test_drain_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
