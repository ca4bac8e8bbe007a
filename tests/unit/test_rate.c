/* rate: bucket arithmetic on an injected clock, throttling and recovery, FIFO service
 * under contention, abort, key separation, the limiter's bound and two limiters apart. */
#include "testutil.h"
#include "http.h"
#include "rate.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define SEC 1000000LL  /* clock units: microseconds */

static _Atomic int64_t fake_now;

static int64_t fake_clock(void *userdata)
{
	(void)userdata;
	return atomic_load(&fake_now);
}

static void fake_advance(int64_t us)
{
	atomic_fetch_add(&fake_now, us);
}

/* What the hooks saw last. */
static struct {
	pthread_mutex_t lock;
	int grants;
	double waited;
	double rate;
	char action[64];
} seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void on_waited(void *ud, const char *action, double seconds)
{
	(void)ud;
	pthread_mutex_lock(&seen.lock);
	seen.grants++;
	seen.waited += seconds;
	snprintf(seen.action, sizeof(seen.action), "%s", action);
	pthread_mutex_unlock(&seen.lock);
}

static void on_rate(void *ud, const char *action, double per_second)
{
	(void)ud;
	(void)action;
	pthread_mutex_lock(&seen.lock);
	seen.rate = per_second;
	pthread_mutex_unlock(&seen.lock);
}

static const struct rate_hooks test_hooks = {.waited = on_waited, .rate = on_rate};

/* The limiter under test: new (on the fake clock, with the test hooks) in each test. */
static struct rate *lim;

static int setup(void **state)
{
	(void)state;
	atomic_store(&fake_now, 1000 * SEC);
	pthread_mutex_lock(&seen.lock);
	seen.grants = 0, seen.waited = 0, seen.rate = 0, seen.action[0] = '\0';
	pthread_mutex_unlock(&seen.lock);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rate_free(lim);
	lim = NULL;
	return 0;
}

static struct rate *fake_limiter(double describe, double run, double terminate, double other)
{
	return rate_new(&(struct rate_config){.describe_per_second = describe, .run_per_second = run,
					      .terminate_per_second = terminate, .other_per_second = other,
					      .hooks = &test_hooks, .now_us = fake_clock});
}

static void configure(double describe, double run, double terminate, double other)
{
	lim = fake_limiter(describe, run, terminate, other);
}

static struct rate_state peek_at(struct rate *r, const char *id, const char *region, const char *action)
{
	struct rate_state st;
	assert_int_equal(rate_peek(r, id, region, action, &st), 0);
	return st;
}

static struct rate_state peek(const char *id, const char *region, const char *action)
{
	return peek_at(lim, id, region, action);
}

#define assert_near(a, b) \
	do { \
		if (fabs((double)(a) - (double)(b)) > 1e-6) \
			fail_msg("%s = %.9g, expected %.9g", #a, (double)(a), (double)(b)); \
	} while (0)

static void test_defaults(void **state)
{
	(void)state;
	lim = rate_new(&(struct rate_config){0});
	assert_near(rate_configured(lim, "DescribeInstances"), 36);
	assert_near(rate_configured(lim, "DescribeInstancesStatus"), 36);
	assert_near(rate_configured(lim, "RunInstances"), 9);
	assert_near(rate_configured(lim, "TerminateInstances"), 9);
	assert_near(rate_configured(lim, "DescribeZoneInstanceConfigInfos"), 9);
	assert_int_equal(rate_buckets(lim), 0);
	rate_free(lim);
	/* 0 keeps the default */
	lim = rate_new(&(struct rate_config){.run_per_second = 5});
	assert_near(rate_configured(lim, "RunInstances"), 5);
	assert_near(rate_configured(lim, "DescribeInstances"), 36);
	/* Any one-second window stays within Tencent's documented limits. */
	assert_true(RATE_DEFAULT_DESCRIBE + fmax(1, RATE_DEFAULT_DESCRIBE * RATE_BURST_SECONDS) <= 40);
	assert_true(RATE_DEFAULT_RUN + fmax(1, RATE_DEFAULT_RUN * RATE_BURST_SECONDS) <= 10);
}

/* A new bucket is full (burst = rate / 10, at least 1); it refills at its rate. */
static void test_bucket_arithmetic(void **state)
{
	(void)state;
	configure(100, 0, 0, 0);
	struct rate_grant g;
	for (int i = 0; i < 10; i++) {
		assert_int_equal(rate_acquire(lim, "AKID1", "ap-a", "DescribeInstances", &g, NULL), 0);
		assert_int_equal(g.ticket, i);
		assert_int_equal(g.served, i);
		assert_near(g.waited, 0);
	}
	struct rate_state st = peek("AKID1", "ap-a", "DescribeInstances");
	assert_near(st.per_second, 100);
	assert_near(st.configured, 100);
	assert_near(st.burst, 10);
	assert_near(st.tokens, 0);
	assert_false(st.throttled);
	fake_advance(SEC / 20);  /* 50 ms: 5 tokens */
	assert_near(peek("AKID1", "ap-a", "DescribeInstances").tokens, 5);
	fake_advance(10 * SEC);  /* capped at the burst */
	assert_near(peek("AKID1", "ap-a", "DescribeInstances").tokens, 10);
	/* A slow action's burst is one call. */
	assert_int_equal(rate_acquire(lim, "AKID1", "ap-a", "RunInstances", NULL, NULL), 0);
	st = peek("AKID1", "ap-a", "RunInstances");
	assert_near(st.burst, 1);
	assert_near(st.tokens, 0);
	fake_advance(SEC / 9 + 1);
	assert_near(peek("AKID1", "ap-a", "RunInstances").tokens, 1);
	/* The hooks saw every grant. */
	assert_int_equal(seen.grants, 11);
	assert_string_equal(seen.action, "RunInstances");
	assert_near(seen.rate, 9);
}

/* RequestLimitExceeded halves (once per second at most), holds 10 s, then climbs by 10%
 * of the configured rate per second; never below 1/s. */
static void test_throttle_schedule(void **state)
{
	(void)state;
	configure(0, 10, 0, 0);
	assert_int_equal(rate_acquire(lim, "AKID1", "ap-a", "RunInstances", NULL, NULL), 0);
	rate_throttled(lim, "AKID1", "ap-a", "RunInstances");
	struct rate_state st = peek("AKID1", "ap-a", "RunInstances");
	assert_true(st.throttled);
	assert_near(st.per_second, 5);
	assert_near(st.tokens, 0);
	assert_near(seen.rate, 5);
	/* Calls that were in flight are refused too: no second halving within a second. */
	fake_advance(SEC / 2);
	rate_throttled(lim, "AKID1", "ap-a", "RunInstances");
	assert_near(peek("AKID1", "ap-a", "RunInstances").per_second, 5);
	fake_advance(SEC / 2);
	rate_throttled(lim, "AKID1", "ap-a", "RunInstances");  /* a second later: halves again */
	assert_near(peek("AKID1", "ap-a", "RunInstances").per_second, 2.5);
	/* Held for 10 s from the last report ... */
	fake_advance(10 * SEC - 1);
	st = peek("AKID1", "ap-a", "RunInstances");
	assert_near(st.per_second, 2.5);
	assert_near(st.tokens, 1);  /* burst of a throttled bucket: still 1 */
	/* ... then +1/s per second (10% of 10) until it is back at 10, 7.5 s later. */
	fake_advance(1 + SEC);
	assert_near(peek("AKID1", "ap-a", "RunInstances").per_second, 3.5);
	fake_advance(5 * SEC);
	assert_near(peek("AKID1", "ap-a", "RunInstances").per_second, 8.5);
	fake_advance(3 * SEC / 2);
	st = peek("AKID1", "ap-a", "RunInstances");
	assert_near(st.per_second, 10);
	assert_false(st.throttled);
	fake_advance(60 * SEC);
	assert_near(peek("AKID1", "ap-a", "RunInstances").per_second, 10);
	/* The floor. */
	for (int i = 0; i < 10; i++) {
		rate_throttled(lim, "AKID1", "ap-a", "RunInstances");
		fake_advance(SEC);
	}
	assert_near(peek("AKID1", "ap-a", "RunInstances").per_second, RATE_MIN_PER_SECOND);
	/* A second at the floor gave one token. */
	struct rate_grant g;
	assert_int_equal(rate_acquire(lim, "AKID1", "ap-a", "RunInstances", &g, NULL), 0);
	assert_near(g.waited, 0);
	assert_near(peek("AKID1", "ap-a", "RunInstances").tokens, 0);
}

/* 8 workers x 50 calls on a 100/s bucket (burst 10): 390 of the 400 wait, so the last
 * is served after 3.9 s of the (simulated) clock, every one in arrival order. */
#define WORKERS 8
#define CALLS 50

static atomic_int workers_done;
static atomic_int out_of_order;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < CALLS; i++) {
		struct rate_grant g;
		if (rate_acquire(lim, "AKID1", "ap-a", "DescribeInstances", &g, NULL) < 0 || g.ticket != g.served)
			atomic_fetch_add(&out_of_order, 1);
	}
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

static void test_fifo_under_contention(void **state)
{
	(void)state;
	configure(100, 0, 0, 0);
	atomic_store(&workers_done, 0);
	atomic_store(&out_of_order, 0);
	int64_t start = atomic_load(&fake_now), real_start = sp_mono_ms();
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, NULL), 0);
	/* The simulated clock jumps to whenever the next waiter is due, and only then. */
	while (atomic_load(&workers_done) < WORKERS && sp_mono_ms() - real_start < 20000) {
		int64_t next = rate_next_wakeup(lim);
		if (next > atomic_load(&fake_now))
			atomic_store(&fake_now, next);
		if (next >= 0)
			rate_wake(lim);
		else
			sched_yield();
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	double simulated = (double)(atomic_load(&fake_now) - start) / SEC;
	int64_t real = sp_mono_ms() - real_start;
	assert_int_equal(atomic_load(&out_of_order), 0);
	struct rate_state st = peek("AKID1", "ap-a", "DescribeInstances");
	assert_int_equal(st.waiting, 0);
	if (fabs(simulated - 3.9) > 0.01)
		fail_msg("400 calls took %.4f s of the clock, expected 3.9", simulated);
	if (real > 2000)
		fail_msg("took %lld ms of real time", (long long)real);
	assert_int_equal(seen.grants, WORKERS * CALLS);
	assert_true(seen.waited > 1);
}

/* On the real clock: 6 calls at 20/s (burst 2) take about (6 - 2) / 20 = 0.2 s. */
static void test_real_clock(void **state)
{
	(void)state;
	lim = rate_new(&(struct rate_config){.describe_per_second = 20, .hooks = &test_hooks});
	int64_t start = sp_mono_ms();
	double waited = 0;
	for (int i = 0; i < 6; i++) {
		struct rate_grant g;
		assert_int_equal(rate_acquire(lim, "AKID1", "ap-a", "DescribeInstances", &g, NULL), 0);
		waited += g.waited;
	}
	int64_t took = sp_mono_ms() - start;
	if (took < 190 || took > 600)
		fail_msg("6 calls at 20/s took %lld ms", (long long)took);
	assert_true(waited > 0.18 && waited < 0.6);
}

/* In a child (the abort cannot be undone): waiters, at the head of the queue or behind
 * it, fail within about RATE_ABORT_POLL_MS of http_abort_all(); so does a new call. */
static void *waiter(void *arg)
{
	struct sp_error *err = arg;
	return (void *)(intptr_t)rate_acquire(lim, "AKID1", "ap-a", "RunInstances", NULL, err);
}

static int abort_child(void)
{
	lim = rate_new(&(struct rate_config){.run_per_second = 1});
	if (rate_acquire(lim, "AKID1", "ap-a", "RunInstances", NULL, NULL) < 0)
		return 1;
	pthread_t t[2];
	struct sp_error err[2] = {0};
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, waiter, &err[i]);
	usleep(100 * 1000);
	struct rate_state st;
	if (rate_peek(lim, "AKID1", "ap-a", "RunInstances", &st) < 0 || st.waiting != 2) {
		fprintf(stderr, "expected 2 waiters\n");
		return 1;
	}
	int64_t aborted = sp_mono_ms();
	http_abort_all();
	for (int i = 0; i < 2; i++) {
		void *r;
		pthread_join(t[i], &r);
		if ((intptr_t)r != SP_ETRANSIENT || !strstr(err[i].msg, "aborted (shutting down)")) {
			fprintf(stderr, "waiter %d: %d %s\n", i, (int)(intptr_t)r, err[i].msg);
			return 1;
		}
	}
	int64_t took = sp_mono_ms() - aborted;
	if (took > 300) {
		fprintf(stderr, "waiters took %lld ms to leave\n", (long long)took);
		return 1;
	}
	struct sp_error e = {0};
	if (rate_acquire(lim, "AKID2", "ap-a", "DescribeInstances", NULL, &e) != SP_ETRANSIENT ||
	    !strstr(e.msg, "aborted (shutting down)")) {
		fprintf(stderr, "new call after abort: %s\n", e.msg);
		return 1;
	}
	if (rate_peek(lim, "AKID1", "ap-a", "RunInstances", &st) < 0 || st.waiting != 0)
		return 1;
	return 0;
}

static void test_abort(void **state)
{
	(void)state;
	pid_t pid = fork();
	if (pid == 0)
		_exit(abort_child());
	int status = 0;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* rate_acquire_until on the test clock (no token comes unless the test advances it) and
 * a real-clock deadline: a deadline already past asks nothing (no bucket is made); a
 * waiter gives up when its deadline passes, and when the deadline is moved to 0 (a
 * step-down) while it waits, each time leaving the queue and the token to the next. */
struct until_waiter {
	_Atomic int64_t *until;
	struct sp_error err;
	int r;
	int64_t took_ms;
};

static void *until_waiter_main(void *arg)
{
	struct until_waiter *w = arg;
	int64_t start = sp_mono_ms();
	w->r = rate_acquire_until(lim, "AKID1", "ap-a", "RunInstances", w->until, NULL, &w->err);
	w->took_ms = sp_mono_ms() - start;
	return NULL;
}

static void test_acquire_until(void **state)
{
	(void)state;
	configure(0, 1, 0, 0);
	_Atomic int64_t until = 0;
	struct sp_error err = {0};
	assert_int_equal(rate_acquire_until(lim, "AKID1", "ap-a", "RunInstances", &until, NULL, &err), SP_ETRANSIENT);
	assert_non_null(strstr(err.msg, "deadline passed before the rate limit was asked"));
	struct rate_state st;
	assert_int_equal(rate_peek(lim, "AKID1", "ap-a", "RunInstances", &st), SP_ENOTFOUND);
	/* NULL: no deadline; the burst of one is granted at once. */
	assert_int_equal(rate_acquire_until(lim, "AKID1", "ap-a", "RunInstances", NULL, NULL, NULL), 0);
	assert_near(peek("AKID1", "ap-a", "RunInstances").tokens, 0);

	/* The deadline passes while waiting. */
	atomic_store(&until, sp_mono_ms() + 150);
	struct until_waiter w = {.until = &until};
	until_waiter_main(&w);
	assert_int_equal(w.r, SP_ETRANSIENT);
	assert_non_null(strstr(w.err.msg, "deadline passed while waiting for the rate limit"));
	if (w.took_ms < 140 || w.took_ms > 140 + 200)
		fail_msg("gave up after %lld ms, deadline 150 ms", (long long)w.took_ms);
	st = peek("AKID1", "ap-a", "RunInstances");
	assert_int_equal(st.waiting, 0);

	/* A step-down while waiting (far deadline, set to 0 after 60 ms): seen within about
	 * RATE_ABORT_POLL_MS, while a second waiter with no deadline stays queued. */
	atomic_store(&until, sp_mono_ms() + 60000);
	w = (struct until_waiter){.until = &until};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, until_waiter_main, &w), 0);
	usleep(20 * 1000);
	struct until_waiter patient = {.until = NULL};
	pthread_t t2;
	assert_int_equal(pthread_create(&t2, NULL, until_waiter_main, &patient), 0);
	usleep(40 * 1000);
	int64_t stepped_down = sp_mono_ms();
	atomic_store(&until, 0);
	pthread_join(t, NULL);
	int64_t left_after = sp_mono_ms() - stepped_down;
	assert_int_equal(w.r, SP_ETRANSIENT);
	assert_non_null(strstr(w.err.msg, "deadline passed while waiting for the rate limit"));
	if (left_after > 10 * RATE_ABORT_POLL_MS)
		fail_msg("left %lld ms after the step-down", (long long)left_after);
	/* The patient waiter now heads the queue and takes the next token, not a lost one. */
	assert_int_equal(peek("AKID1", "ap-a", "RunInstances").waiting, 1);
	fake_advance(SEC);
	rate_wake(lim);
	pthread_join(t2, NULL);
	assert_int_equal(patient.r, 0);
	st = peek("AKID1", "ap-a", "RunInstances");
	assert_int_equal(st.waiting, 0);
	assert_near(st.tokens, 0);
	/* Only the granted calls reached the hooks. */
	assert_int_equal(seen.grants, 2);
}

/* SecretId, region and action each make their own bucket; so do long SecretIds that
 * differ only past the part kept in the key. */
static void test_keys_are_separate(void **state)
{
	(void)state;
	configure(0, 10, 10, 0);
	assert_int_equal(rate_acquire(lim, "AKID1", "ap-a", "RunInstances", NULL, NULL), 0);
	rate_throttled(lim, "AKID1", "ap-a", "RunInstances");
	assert_near(peek("AKID1", "ap-a", "RunInstances").tokens, 0);
	char long1[201], long2[201];
	memset(long1, 'x', 200), long1[200] = '\0';
	memcpy(long2, long1, sizeof(long2));
	long2[199] = 'y';
	const char *others[][3] = {
		{"AKID2", "ap-a", "RunInstances"},
		{"AKID1", "ap-b", "RunInstances"},
		{"AKID1", "ap-a", "TerminateInstances"},
		{"AKID1ap-a", "", "RunInstances"},  /* parts do not run into each other */
		{long1, "ap-a", "RunInstances"},
		{long2, "ap-a", "RunInstances"},
	};
	struct rate_state st;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		assert_int_equal(rate_peek(lim, others[i][0], others[i][1], others[i][2], &st), SP_ENOTFOUND);
		struct rate_grant g;
		assert_int_equal(rate_acquire(lim, others[i][0], others[i][1], others[i][2], &g, NULL), 0);
		assert_int_equal(g.ticket, 0);
		assert_near(g.waited, 0);
		st = peek(others[i][0], others[i][1], others[i][2]);
		assert_false(st.throttled);
		assert_near(st.per_second, 10);
	}
	assert_int_equal(rate_buckets(lim), 7);
	assert_true(peek("AKID1", "ap-a", "RunInstances").throttled);
}

/* Two limiters share nothing: the same key drained, throttled and waited at in one is a
 * full, unthrottled bucket in the other, granted at once. */
static void *drained_waiter_main(void *arg)
{
	return (void *)(intptr_t)rate_acquire(arg, "AKID1", "ap-a", "RunInstances", NULL, NULL);
}

static void test_limiters_are_independent(void **state)
{
	(void)state;
	configure(0, 4, 0, 0);
	struct rate *other = fake_limiter(0, 4, 0, 0);
	assert_int_equal(rate_acquire(lim, "AKID1", "ap-a", "RunInstances", NULL, NULL), 0);
	rate_throttled(lim, "AKID1", "ap-a", "RunInstances");
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, drained_waiter_main, lim), 0);
	while (peek("AKID1", "ap-a", "RunInstances").waiting != 1)
		sched_yield();
	/* The other limiter has no bucket for the key until asked, then grants at once. */
	struct rate_state st;
	assert_int_equal(rate_peek(other, "AKID1", "ap-a", "RunInstances", &st), SP_ENOTFOUND);
	struct rate_grant g;
	assert_int_equal(rate_acquire(other, "AKID1", "ap-a", "RunInstances", &g, NULL), 0);
	assert_int_equal(g.ticket, 0);
	assert_near(g.waited, 0);
	st = peek_at(other, "AKID1", "ap-a", "RunInstances");
	assert_false(st.throttled);
	assert_near(st.per_second, 4);
	assert_int_equal(st.waiting, 0);
	/* ... while the first still paces its waiter at the halved rate: 0.5 s for a token. */
	st = peek("AKID1", "ap-a", "RunInstances");
	assert_true(st.throttled);
	assert_near(st.per_second, 2);
	assert_int_equal(st.waiting, 1);
	fake_advance(SEC / 2);
	rate_wake(lim);
	void *r;
	pthread_join(t, &r);
	assert_int_equal((intptr_t)r, 0);
	assert_int_equal(rate_buckets(lim), 1);
	assert_int_equal(rate_buckets(other), 1);
	rate_free(other);
}

/* More keys than RATE_BUCKETS_MAX: the least recently used idle buckets go. */
static void test_registry_bounded(void **state)
{
	(void)state;
	configure(0, 0, 0, 0);
	char id[32];
	for (int i = 0; i < RATE_BUCKETS_MAX + 500; i++) {
		snprintf(id, sizeof(id), "AKID%d", i);
		fake_advance(1);
		assert_int_equal(rate_acquire(lim, id, "ap-a", "DescribeInstances", NULL, NULL), 0);
		if (i == 10) {  /* used again: AKID0 is now more recent than AKID1..AKID10 */
			fake_advance(1);
			assert_int_equal(rate_acquire(lim, "AKID0", "ap-a", "DescribeInstances", NULL, NULL), 0);
		}
		if (i == RATE_BUCKETS_MAX + 5) {  /* six evictions so far: AKID1..AKID6 */
			struct rate_state st;
			assert_int_equal(rate_buckets(lim), RATE_BUCKETS_MAX);
			assert_int_equal(rate_peek(lim, "AKID0", "ap-a", "DescribeInstances", &st), 0);
			assert_int_equal(rate_peek(lim, "AKID6", "ap-a", "DescribeInstances", &st), SP_ENOTFOUND);
			assert_int_equal(rate_peek(lim, "AKID7", "ap-a", "DescribeInstances", &st), 0);
		}
	}
	assert_int_equal(rate_buckets(lim), RATE_BUCKETS_MAX);
	struct rate_state st;
	assert_int_equal(rate_peek(lim, "AKID1", "ap-a", "DescribeInstances", &st), SP_ENOTFOUND);
	assert_int_equal(rate_peek(lim, "AKID0", "ap-a", "DescribeInstances", &st), SP_ENOTFOUND);
	snprintf(id, sizeof(id), "AKID%d", RATE_BUCKETS_MAX + 499);
	assert_int_equal(rate_peek(lim, id, "ap-a", "DescribeInstances", &st), 0);
	snprintf(id, sizeof(id), "AKID%d", 500);
	assert_int_equal(rate_peek(lim, id, "ap-a", "DescribeInstances", &st), 0);
	snprintf(id, sizeof(id), "AKID%d", 498);
	assert_int_equal(rate_peek(lim, id, "ap-a", "DescribeInstances", &st), SP_ENOTFOUND);
}

/* Buckets at rest (unused 10 s, full, at the configured rate) go at the next call 10 s
 * after the last prune, as if never made; a throttled one still recovering, and one used
 * recently, stay. */
static void test_at_rest_pruned(void **state)
{
	(void)state;
	configure(10, 0, 0, 0);
	char id[32];
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "AKIDgone%d", i);
		assert_int_equal(rate_acquire(lim, id, "ap-a", "DescribeInstances", NULL, NULL), 0);
	}
	assert_int_equal(rate_acquire(lim, "AKIDslow", "ap-a", "DescribeInstances", NULL, NULL), 0);
	assert_int_equal(rate_buckets(lim), 101);
	fake_advance(9 * SEC);
	rate_throttled(lim, "AKIDslow", "ap-a", "DescribeInstances");
	assert_int_equal(rate_buckets(lim), 101);  /* not a minute since the last prune */
	fake_advance(2 * SEC);
	assert_int_equal(rate_acquire(lim, "AKIDnew", "ap-a", "DescribeInstances", NULL, NULL), 0);
	assert_int_equal(rate_buckets(lim), 2);
	struct rate_state st;
	assert_int_equal(rate_peek(lim, "AKIDgone0", "ap-a", "DescribeInstances", &st), SP_ENOTFOUND);
	assert_true(peek("AKIDslow", "ap-a", "DescribeInstances").throttled);
	/* Recovered and unused for 10 s: it goes too, and comes back full if asked. */
	fake_advance(600 * SEC);
	assert_int_equal(rate_acquire(lim, "AKIDnew", "ap-a", "DescribeInstances", NULL, NULL), 0);
	assert_int_equal(rate_buckets(lim), 1);
	assert_int_equal(rate_acquire(lim, "AKIDslow", "ap-a", "DescribeInstances", NULL, NULL), 0);
	assert_near(peek("AKIDslow", "ap-a", "DescribeInstances").per_second, 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bucket_arithmetic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_throttle_schedule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_under_contention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_real_clock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_are_separate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_registry_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limiters_are_independent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acquire_until, setup, teardown),
		cmocka_unit_test_setup_teardown(test_at_rest_pruned, setup, teardown),
	};
	return cmocka_run_group_tests_name("rate", tests, NULL, NULL);
}
