/* inv: sweep cadence under the call budget. */
#include "testutil.h"
#include "inv.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interval_fast_while_unsettled_and_spaced_when_idle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
