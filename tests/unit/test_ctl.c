/* ctl: the pure parts of the controller's glue. */
#include "testutil.h"
#include "ctl.h"
#include "reconcile.h"
#include "wq.h"

/* Regression (review of 05bae91): pollers unread for 4 resync periods (2 min by
 * default) retired while every pool of the account backed off for up to 5 min; each
 * pass then met a new poller whose first listing of a large account outlasted the
 * 15 s read, failed, backed off again, and the poller went again: the pools never
 * recovered. The retire time now outlasts the longest backoff and a read on each side. */
static void test_pollers_outlive_the_longest_backoff(void **state)
{
	(void)state;
	const int64_t floor_ms = WQ_BACKOFF_MAX_MS + 2 * RECONCILE_READ_TIMEOUT_MS;
	static const int resyncs[] = {0, 1, 2, 30, 60, 82};
	for (size_t i = 0; i < sizeof(resyncs) / sizeof(resyncs[0]); i++)
		assert_int_equal(ctl_poller_retire_ms(resyncs[i]), floor_ms);
	assert_int_equal(ctl_poller_retire_ms(600), 4 * 600 * 1000LL);      /* four periods */
	assert_int_equal(ctl_poller_retire_ms(86400), 4 * 86400 * 1000LL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pollers_outlive_the_longest_backoff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
