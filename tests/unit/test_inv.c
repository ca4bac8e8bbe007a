/* inv: sweep cadence under the call budget, snapshot diffs that wake only the pools
 * whose instances changed. */
#include "testutil.h"
#include "inv.h"

static struct pool_instance inst(const char *owner, const char *id, const char *state)
{
	struct pool_instance in = {0};
	snprintf(in.id, sizeof(in.id), "%s", id);
	snprintf(in.state, sizeof(in.state), "%s", state);
	snprintf(in.pool_tag, sizeof(in.pool_tag), "%s", owner);
	return in;
}

static void test_interval_fast_while_unsettled_and_spaced_when_idle(void **state)
{
	(void)state;
	assert_int_equal(inv_next_interval_ms(10000, true, 2000, 30), 2000);
	/* one page: the fast cadence is within the budget */
	assert_int_equal(inv_next_interval_ms(0, false, 2000, 30), 2000);
	assert_int_equal(inv_next_interval_ms(100, false, 2000, 30), 2000);
	/* 1,000 instances = 10 pages; 30 calls/min allows a sweep every 20 s */
	assert_int_equal(inv_next_interval_ms(1000, false, 2000, 30), 20000);
	assert_int_equal(inv_next_interval_ms(1001, false, 2000, 30), 22000);
	/* the idle cost per minute does not grow with the fleet */
	for (size_t n = 1; n <= 100000; n *= 10) {
		int64_t interval = inv_next_interval_ms(n, false, 2000, 30);
		int64_t pages = (int64_t)((n + 99) / 100);
		assert_true(pages * 60000 / interval <= 30);
	}
}

struct seen {
	char owners[8][32];
	int n;
};

static void record(void *userdata, const char *owner)
{
	struct seen *s = userdata;
	assert_true(s->n < 8);
	snprintf(s->owners[s->n++], sizeof(s->owners[0]), "%s", owner);
}

static void test_diff_reports_each_changed_owner_once(void **state)
{
	(void)state;
	struct pool_instance old[] = {
		inst("ns/a", "ins-1", "RUNNING"), inst("ns/a", "ins-2", "RUNNING"), inst("ns/b", "ins-3", "RUNNING"),
		inst("ns/c", "ins-4", "PENDING"), inst("ns/e", "ins-9", "RUNNING"),
	};
	struct pool_instance cur[] = {
		inst("ns/a", "ins-1", "RUNNING"),                                   /* a: ins-2 gone */
		inst("ns/b", "ins-3", "RUNNING"),                                   /* b: unchanged */
		inst("ns/c", "ins-4", "RUNNING"),                                   /* c: state */
		inst("ns/d", "ins-5", "PENDING"), inst("ns/d", "ins-6", "PENDING"), /* d: new */
		inst("ns/e", "ins-9", "RUNNING"),                                   /* e: unchanged */
	};
	inv_sort(old, 5);
	inv_sort(cur, 6);
	struct seen s = {0};
	inv_diff(old, 5, cur, 6, record, &s);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.owners[0], "ns/a");
	assert_string_equal(s.owners[1], "ns/c");
	assert_string_equal(s.owners[2], "ns/d");
	/* an IP appearing is a change too (status shows it) */
	struct pool_instance ip = cur[0];
	snprintf(ip.public_ip, sizeof(ip.public_ip), "43.0.0.1");
	s.n = 0;
	inv_diff(cur, 1, &ip, 1, record, &s);
	assert_int_equal(s.n, 1);
	/* identical snapshots wake nobody; untagged entries are never reported */
	s.n = 0;
	inv_diff(cur, 6, cur, 6, record, &s);
	struct pool_instance untagged = inst("", "ins-7", "RUNNING");
	inv_diff(NULL, 0, &untagged, 1, record, &s);
	assert_int_equal(s.n, 0);
}

static void test_sort_groups_by_owner_then_id(void **state)
{
	(void)state;
	struct pool_instance v[] = {inst("ns/b", "ins-2", "RUNNING"), inst("ns/a", "ins-9", "RUNNING"),
				    inst("ns/b", "ins-1", "RUNNING"), inst("ns/a", "ins-3", "RUNNING")};
	inv_sort(v, 4);
	assert_string_equal(v[0].id, "ins-3");
	assert_string_equal(v[1].id, "ins-9");
	assert_string_equal(v[2].id, "ins-1");
	assert_string_equal(v[3].id, "ins-2");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_fast_while_unsettled_and_spaced_when_idle),
		cmocka_unit_test(test_diff_reports_each_changed_owner_once),
		cmocka_unit_test(test_sort_groups_by_owner_then_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
