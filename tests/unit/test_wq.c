/* wq: de-duplication, one worker per key, delays and backoff. */
#include "testutil.h"
#include "wq.h"

#include <pthread.h>

static void test_dedup_and_order(void **state)
{
	(void)state;
	struct wq *q = wq_new();
	wq_add(q, "a", 0);
	wq_add(q, "b", 0);
	wq_add(q, "a", 0);
	assert_int_equal(wq_len(q), 2);
	char *k1, *k2;
	assert_int_equal(wq_get(q, &k1), 0);
	assert_int_equal(wq_get(q, &k2), 0);
	assert_string_not_equal(k1, k2);
	assert_int_equal(wq_len(q), 0);
	wq_done(q, k1);
	wq_done(q, k2);
	free(k1);
	free(k2);
	wq_free(q);
}

static void test_readd_while_processing_waits_for_done(void **state)
{
	(void)state;
	struct wq *q = wq_new();
	wq_add(q, "a", 0);
	char *k;
	assert_int_equal(wq_get(q, &k), 0);
	wq_add(q, "a", 0);               /* event arrives while a worker holds "a" */
	assert_int_equal(wq_len(q), 0);  /* not handed to a second worker */
	wq_done(q, "a");
	assert_int_equal(wq_len(q), 1);
	char *again;
	assert_int_equal(wq_get(q, &again), 0);
	assert_string_equal(again, "a");
	wq_done(q, "a");
	free(k);
	free(again);
	wq_free(q);
}

static void test_delay_is_honoured(void **state)
{
	(void)state;
	struct wq *q = wq_new();
	int64_t start = sp_mono_ms();
	wq_add(q, "later", 150);
	char *k;
	assert_int_equal(wq_get(q, &k), 0);
	assert_true(sp_mono_ms() - start >= 150);
	wq_done(q, k);
	/* an earlier add wins over a later one */
	wq_add(q, "x", 10000);
	wq_add(q, "x", 0);
	free(k);
	start = sp_mono_ms();
	assert_int_equal(wq_get(q, &k), 0);
	assert_true(sp_mono_ms() - start < 1000);
	wq_done(q, k);
	free(k);
	wq_free(q);
}

static void test_backoff_grows_and_resets(void **state)
{
	(void)state;
	struct wq *q = wq_new();
	assert_int_equal(wq_backoff(q, "a"), 1000);
	assert_int_equal(wq_backoff(q, "a"), 2000);
	assert_int_equal(wq_backoff(q, "a"), 4000);
	for (int i = 0; i < 20; i++)
		wq_backoff(q, "a");
	assert_int_equal(wq_backoff(q, "a"), WQ_BACKOFF_MAX_MS);
	wq_forget(q, "a");
	assert_int_equal(wq_backoff(q, "a"), 1000);
	wq_free(q);
}

static void *shutdown_later(void *arg)
{
	struct timespec ts = {0, 50 * 1000000};
	nanosleep(&ts, NULL);
	wq_shutdown(arg);
	return NULL;
}

static void test_shutdown_wakes_waiters(void **state)
{
	(void)state;
	struct wq *q = wq_new();
	pthread_t t;
	pthread_create(&t, NULL, shutdown_later, q);
	char *k = NULL;
	assert_int_equal(wq_get(q, &k), SP_EIO);
	assert_null(k);
	pthread_join(t, NULL);
	wq_add(q, "ignored", 0);
	assert_int_equal(wq_len(q), 0);
	wq_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup_and_order),
		cmocka_unit_test(test_readd_while_processing_waits_for_done),
		cmocka_unit_test(test_delay_is_honoured),
		cmocka_unit_test(test_backoff_grows_and_resets),
		cmocka_unit_test(test_shutdown_wakes_waiters),
	};
	return cmocka_run_group_tests_name("wq", tests, NULL, NULL);
}
