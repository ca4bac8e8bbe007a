/* wq: de-duplication, one worker per key, delays, backoff that resyncs respect, hooks. */
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

/* The controller's resync period in these tests: a backing-off key must not run at
 * every resync once its backoff is longer than that. */
#define RESYNC_MS 2000

/* One failed pass over key, as ctl's worker does it; returns the backoff delay. */
static int64_t fail_pass(struct wq *q, const char *key)
{
	char *k;
	assert_int_equal(wq_get(q, &k), 0);
	assert_string_equal(k, key);
	int64_t delay = wq_backoff(q, k);
	wq_done(q, k);
	wq_add(q, k, delay);
	free(k);
	return delay;
}

static void test_resync_keeps_backoff_event_does_not(void **state)
{
	(void)state;
	struct wq *q = wq_new();
	wq_add_resync(q, "p", 0);  /* a key with no failures runs at once */
	assert_int_equal(wq_when(q, "p"), 0);
	int64_t delay = 0;
	for (int i = 0; i < 3; i++) {
		wq_add(q, "p", 0);  /* a spec change: runs at once, backoff or not */
		assert_int_equal(wq_when(q, "p"), 0);
		delay = fail_pass(q, "p");
		assert_int_equal(delay, WQ_BACKOFF_BASE_MS << i);
	}
	assert_true(delay > RESYNC_MS);
	assert_true(wq_when(q, "p") > delay - 500);
	for (int i = 0; i < 5; i++) {
		wq_add_resync(q, "p", 0);  /* resyncs come and go: the key stays put */
		assert_true(wq_when(q, "p") > delay - 500);
	}
	assert_int_equal(wq_len(q), 1);
	/* an earlier event wins over the backoff */
	wq_add(q, "p", 0);
	assert_int_equal(wq_when(q, "p"), 0);
	/* a success resets it all */
	char *k;
	assert_int_equal(wq_get(q, &k), 0);
	wq_forget(q, k);
	wq_done(q, k);
	free(k);
	assert_int_equal(wq_when(q, "p"), -1);
	assert_int_equal(wq_len(q), 0);
	wq_add_resync(q, "p", 0);
	assert_int_equal(wq_when(q, "p"), 0);
	assert_int_equal(fail_pass(q, "p"), WQ_BACKOFF_BASE_MS);
	wq_free(q);
}

static void test_resync_during_a_failing_pass_keeps_backoff(void **state)
{
	(void)state;
	struct wq *q = wq_new();
	char *k;
	/* a resync arrives while the pass that is about to fail runs */
	wq_add(q, "p", 0);
	assert_int_equal(wq_get(q, &k), 0);
	wq_add_resync(q, "p", 0);
	assert_int_equal(wq_len(q), 0);
	int64_t delay = wq_backoff(q, k);
	wq_done(q, k);
	wq_add(q, k, delay);
	free(k);
	assert_int_equal(wq_len(q), 1);
	assert_true(wq_when(q, "p") > delay - 500);
	/* an event during the pass still runs the key right after it */
	wq_add(q, "p", 0);
	assert_int_equal(wq_get(q, &k), 0);
	wq_add(q, "p", 0);
	wq_add_resync(q, "p", 0);
	delay = wq_backoff(q, k);
	assert_int_equal(delay, 2 * WQ_BACKOFF_BASE_MS);
	wq_done(q, k);
	wq_add(q, k, delay);
	free(k);
	assert_int_equal(wq_when(q, "p"), 0);
	wq_free(q);
}

/* A periodic resync of many keys is spread: each key at its own point of the spread,
 * evenly, and not in the same order every round; an earlier-queued key is not delayed. */
static void test_resync_spread(void **state)
{
	(void)state;
	const int64_t spread = 15000;
	int buckets[10] = {0};
	int moved = 0;
	for (int i = 0; i < 1000; i++) {
		char key[32];
		snprintf(key, sizeof(key), "default/pool-%04d", i);
		int64_t a = wq_resync_offset_ms(key, 7, spread), b = wq_resync_offset_ms(key, 8, spread);
		assert_true(a >= 0 && a < spread);
		assert_int_equal(a, wq_resync_offset_ms(key, 7, spread));  /* same round, same place */
		buckets[a * 10 / spread]++;
		moved += a != b;
	}
	for (int i = 0; i < 10; i++)
		assert_in_range(buckets[i], 60, 140);
	assert_true(moved > 990);
	assert_int_equal(wq_resync_offset_ms("default/p", 3, 0), 0);
	struct wq *q = wq_new();
	wq_add_resync(q, "late", 5000);
	assert_in_range(wq_when(q, "late"), 4500, 5000);
	wq_add(q, "now", 0);
	wq_add_resync(q, "now", 5000);  /* queued for earlier: stays */
	assert_int_equal(wq_when(q, "now"), 0);
	wq_free(q);
}

struct recorder {
	size_t depth;
	int depth_calls, gets, dones, retries;
	double queued_max, worked_max;
};

static void on_depth(void *ud, size_t depth)
{
	struct recorder *r = ud;
	r->depth = depth;
	r->depth_calls++;
}

static void on_queue_latency(void *ud, double seconds)
{
	struct recorder *r = ud;
	r->gets++;
	if (seconds > r->queued_max)
		r->queued_max = seconds;
}

static void on_work_duration(void *ud, double seconds)
{
	struct recorder *r = ud;
	r->dones++;
	if (seconds > r->worked_max)
		r->worked_max = seconds;
}

static void on_retry(void *ud)
{
	((struct recorder *)ud)->retries++;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static void test_hooks_report_depth_latency_work_and_retries(void **state)
{
	(void)state;
	struct recorder r = {0};
	struct wq_hooks hooks = {.depth = on_depth, .queue_latency = on_queue_latency,
				 .work_duration = on_work_duration, .retry = on_retry, .userdata = &r};
	struct wq *q = wq_new_with_hooks(&hooks);
	wq_add(q, "a", 0);
	wq_add(q, "b", 0);
	wq_add(q, "a", 0);  /* de-duplicated: no depth change */
	assert_int_equal(r.depth, 2);
	assert_int_equal(r.depth_calls, 2);
	sleep_ms(30);
	char *k;
	assert_int_equal(wq_get(q, &k), 0);
	assert_int_equal(r.depth, 1);
	assert_int_equal(r.gets, 1);
	assert_true(r.queued_max >= 0.02 && r.queued_max < 5);  /* waited ~30 ms for a worker */
	sleep_ms(30);
	wq_done(q, k);
	assert_int_equal(r.dones, 1);
	assert_true(r.worked_max >= 0.02 && r.worked_max < 5);
	free(k);
	assert_int_equal(wq_get(q, &k), 0);
	assert_int_equal(r.depth, 0);
	wq_backoff(q, k);
	wq_backoff(q, k);
	assert_int_equal(r.retries, 2);
	wq_done(q, k);
	free(k);
	/* a requested delay is not time spent waiting for a worker */
	r.queued_max = 0;
	wq_add(q, "later", 200);
	assert_int_equal(wq_get(q, &k), 0);
	assert_true(r.queued_max < 0.15);
	wq_done(q, k);
	free(k);
	assert_int_equal(r.gets, 3);
	assert_int_equal(r.dones, 3);
	assert_int_equal(wq_len(q), 0);
	assert_int_equal(r.depth, 0);
	wq_free(q);
}

/* Hooks run after the queue's lock is released (they used to run under it): each has
 * another thread take that lock (wq_when) and waits up to a second for it. */
struct reentry {
	struct wq *q;
	struct test_probe probes[8];  /* joined once the queue's call has returned */
	int calls, blocked;
};

static void when_of_x(void *q)
{
	wq_when(q, "x");
}

static void take_the_lock(struct reentry *r)
{
	assert_true(r->calls < 8);
	r->blocked += !test_probe_run(&r->probes[r->calls++], when_of_x, r->q, 1000);
}

static void reenter_depth(void *ud, size_t depth)
{
	(void)depth;
	take_the_lock(ud);
}

static void reenter_seconds(void *ud, double seconds)
{
	(void)seconds;
	take_the_lock(ud);
}

static void reenter(void *ud)
{
	take_the_lock(ud);
}

static void test_hooks_run_without_the_lock(void **state)
{
	(void)state;
	struct reentry r = {0};
	struct wq_hooks hooks = {.depth = reenter_depth, .queue_latency = reenter_seconds,
				 .work_duration = reenter_seconds, .retry = reenter, .userdata = &r};
	r.q = wq_new_with_hooks(&hooks);
	wq_add(r.q, "x", 0);      /* depth */
	char *k;
	assert_int_equal(wq_get(r.q, &k), 0);  /* depth, latency */
	wq_backoff(r.q, k);       /* retry */
	wq_done(r.q, k);          /* work */
	free(k);
	for (int i = 0; i < r.calls; i++)
		test_probe_join(&r.probes[i]);
	assert_int_equal(r.calls, 5);
	assert_int_equal(r.blocked, 0);
	wq_free(r.q);
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
		cmocka_unit_test(test_resync_keeps_backoff_event_does_not),
		cmocka_unit_test(test_resync_during_a_failing_pass_keeps_backoff),
		cmocka_unit_test(test_resync_spread),
		cmocka_unit_test(test_hooks_report_depth_latency_work_and_retries),
		cmocka_unit_test(test_hooks_run_without_the_lock),
		cmocka_unit_test(test_shutdown_wakes_waiters),
	};
	return cmocka_run_group_tests_name("wq", tests, NULL, NULL);
}
