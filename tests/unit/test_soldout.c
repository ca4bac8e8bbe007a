/* soldout: the sold-out memory (one object per controller), with an injected clock: TTL, one probe per
 * TTL (also under many threads), lease expiry, identity keys, bounds. */
#include "testutil.h"
#include "soldout.h"

#include <pthread.h>

static const struct soldout_key k1 = {"AKIDone", "ap-singapore", "ap-singapore-2", "GN7.2XLARGE32"};

static struct soldout *so;

static int setup(void **state)
{
	(void)state;
	so = soldout_new(0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	soldout_free(so);
	so = NULL;
	return 0;
}

static void test_unknown_is_available(void **state)
{
	(void)state;
	int64_t due = -1;
	assert_int_equal(soldout_peek(so, &k1, 1000, &due), OFFER_AVAILABLE);
	assert_int_equal(due, -1);  /* untouched */
	assert_int_equal(soldout_state(so, &k1, 1000, &due), OFFER_AVAILABLE);
	assert_int_equal(soldout_size(so), 0);
	assert_int_equal(soldout_unavailable(so, 1000), 0);
	soldout_clear(so, &k1);  /* clearing what is not there is fine */
}

static void test_ttl_then_one_probe(void **state)
{
	(void)state;
	int64_t t0 = 1000000, due = 0;
	soldout_mark(so, &k1, t0, 0);
	assert_int_equal(soldout_ttl(so), SOLDOUT_TTL_DEFAULT_MS);
	assert_int_equal(soldout_state(so, &k1, t0, &due), OFFER_SOLD_OUT);
	assert_int_equal(due, t0 + SOLDOUT_TTL_DEFAULT_MS);
	assert_int_equal(soldout_state(so, &k1, t0 + SOLDOUT_TTL_DEFAULT_MS - 1, NULL), OFFER_SOLD_OUT);
	assert_int_equal(soldout_unavailable(so, t0 + 1), 1);
	/* TTL over: peeking grants nothing, however often. */
	int64_t t1 = t0 + SOLDOUT_TTL_DEFAULT_MS;
	assert_int_equal(soldout_peek(so, &k1, t1, &due), OFFER_PROBE_ALLOWED);
	assert_int_equal(soldout_peek(so, &k1, t1, &due), OFFER_PROBE_ALLOWED);
	assert_true(due <= t1);
	assert_int_equal(soldout_unavailable(so, t1), 0);  /* due for a probe: not counted as sold out */
	assert_int_equal(soldout_size(so), 1);
	/* The first caller gets the probe; everybody else sees SOLD_OUT until the lease ends. */
	assert_int_equal(soldout_state(so, &k1, t1, &due), OFFER_PROBE_ALLOWED);
	assert_int_equal(soldout_state(so, &k1, t1, &due), OFFER_SOLD_OUT);
	assert_int_equal(due, t1 + SOLDOUT_PROBE_LEASE_MS);
	assert_false(soldout_probe(so, &k1, t1 + 10));
	assert_int_equal(soldout_peek(so, &k1, t1 + 10, NULL), OFFER_SOLD_OUT);
	assert_int_equal(soldout_unavailable(so, t1 + 10), 1);
	/* The prober vanished: after the lease, the next caller may probe. */
	int64_t t2 = t1 + SOLDOUT_PROBE_LEASE_MS;
	assert_true(soldout_probe(so, &k1, t2));
	assert_false(soldout_probe(so, &k1, t2));
	/* Still sold out: a new TTL from the answer. */
	soldout_mark(so, &k1, t2 + 500, 0);
	assert_int_equal(soldout_state(so, &k1, t2 + 501, &due), OFFER_SOLD_OUT);
	assert_int_equal(due, t2 + 500 + SOLDOUT_TTL_DEFAULT_MS);
	/* The probe launched: available again for everyone. */
	int64_t t3 = t2 + 500 + SOLDOUT_TTL_DEFAULT_MS;
	assert_true(soldout_probe(so, &k1, t3));
	soldout_clear(so, &k1);
	assert_int_equal(soldout_state(so, &k1, t3, NULL), OFFER_AVAILABLE);
	assert_int_equal(soldout_size(so), 0);
}

static void test_ttl_is_configurable(void **state)
{
	(void)state;
	struct soldout *five = soldout_new(5000);
	assert_int_equal(soldout_ttl(five), 5000);
	soldout_mark(five, &k1, 0, 0);
	assert_int_equal(soldout_peek(five, &k1, 4999, NULL), OFFER_SOLD_OUT);
	assert_int_equal(soldout_peek(five, &k1, 5000, NULL), OFFER_PROBE_ALLOWED);
	/* An explicit TTL wins over the configured one. */
	soldout_mark(five, &k1, 0, 100);
	assert_int_equal(soldout_peek(five, &k1, 100, NULL), OFFER_PROBE_ALLOWED);
	soldout_free(five);
	for (int64_t none = 0; none >= -7; none -= 7) {
		struct soldout *dflt = soldout_new(none);
		assert_int_equal(soldout_ttl(dflt), SOLDOUT_TTL_DEFAULT_MS);
		soldout_free(dflt);
	}
}

static void test_keys_are_distinct(void **state)
{
	(void)state;
	soldout_mark(so, &k1, 0, 0);
	const struct soldout_key others[] = {
		{"AKIDtwo", "ap-singapore", "ap-singapore-2", "GN7.2XLARGE32"},     /* other account */
		{"AKIDone", "ap-tokyo", "ap-singapore-2", "GN7.2XLARGE32"},         /* other region */
		{"AKIDone", "ap-singapore", "ap-singapore-3", "GN7.2XLARGE32"},     /* other zone */
		{"AKIDone", "ap-singapore", "ap-singapore-2", "GN7.5XLARGE80"},     /* other type */
		{NULL, "ap-singapore", "ap-singapore-2", "GN7.2XLARGE32"},          /* no identity */
		/* fields that would run together without a separator */
		{"AKIDoneap-singapore", "", "ap-singapore-2", "GN7.2XLARGE32"},
	};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_int_equal(soldout_peek(so, &others[i], 1, NULL), OFFER_AVAILABLE);
	struct soldout_key same = {xstrdup("AKIDone"), xstrdup("ap-singapore"), xstrdup("ap-singapore-2"),
				   xstrdup("GN7.2XLARGE32")};
	assert_int_equal(soldout_peek(so, &same, 1, NULL), OFFER_SOLD_OUT);
	free((char *)same.secret_id), free((char *)same.region), free((char *)same.zone),
		free((char *)same.instance_type);
	/* Clearing one offering leaves the others. */
	soldout_mark(so, &others[2], 0, 0);
	soldout_clear(so, &k1);
	assert_int_equal(soldout_peek(so, &others[2], 1, NULL), OFFER_SOLD_OUT);
	assert_int_equal(soldout_unavailable(so, 1), 1);
}

static void test_bounded_oldest_evicted(void **state)
{
	(void)state;
	char zone[32];
	for (int i = 0; i < SOLDOUT_ENTRIES_MAX + 10; i++) {
		snprintf(zone, sizeof(zone), "ap-singapore-%d", i);
		struct soldout_key k = {"AKIDone", "ap-singapore", zone, "GN7.2XLARGE32"};
		soldout_mark(so, &k, 1000 + i, 0);
	}
	assert_int_equal(soldout_size(so), SOLDOUT_ENTRIES_MAX);
	/* The ten oldest marks went; the newest stayed. */
	for (int i = 0; i < 10; i++) {
		snprintf(zone, sizeof(zone), "ap-singapore-%d", i);
		struct soldout_key k = {"AKIDone", "ap-singapore", zone, "GN7.2XLARGE32"};
		assert_int_equal(soldout_peek(so, &k, 2000, NULL), OFFER_AVAILABLE);
	}
	snprintf(zone, sizeof(zone), "ap-singapore-%d", 10);
	struct soldout_key k = {"AKIDone", "ap-singapore", zone, "GN7.2XLARGE32"};
	assert_int_equal(soldout_peek(so, &k, 2000, NULL), OFFER_SOLD_OUT);
	snprintf(zone, sizeof(zone), "ap-singapore-%d", SOLDOUT_ENTRIES_MAX + 9);
	assert_int_equal(soldout_peek(so, &k, 2000, NULL), OFFER_SOLD_OUT);
	/* Re-marking refreshes an entry rather than adding one. */
	soldout_mark(so, &k, 3000, 0);
	assert_int_equal(soldout_size(so), SOLDOUT_ENTRIES_MAX);
	assert_int_equal(soldout_unavailable(so, 3000), SOLDOUT_ENTRIES_MAX);
}

/* A probe that never reached the cloud goes back: the next caller may probe at once,
 * while the offering stays sold out within its TTL. */
static void test_returned_probe(void **state)
{
	(void)state;
	soldout_mark(so, &k1, 0, 1000);
	soldout_return_probe(so, &k1);  /* no probe held: nothing changes */
	assert_int_equal(soldout_peek(so, &k1, 999, NULL), OFFER_SOLD_OUT);
	assert_true(soldout_probe(so, &k1, 1000));
	assert_int_equal(soldout_peek(so, &k1, 1001, NULL), OFFER_SOLD_OUT);
	soldout_return_probe(so, &k1);
	assert_int_equal(soldout_peek(so, &k1, 1001, NULL), OFFER_PROBE_ALLOWED);
	assert_true(soldout_probe(so, &k1, 1002));
	assert_int_equal(soldout_size(so), 1);
}

#define N_THREADS 32

struct race {
	pthread_barrier_t *start;
	int64_t now;
	bool use_state;  /* soldout_state rather than soldout_probe */
	int granted;
};

static void *ask(void *arg)
{
	struct race *r = arg;
	pthread_barrier_wait(r->start);
	for (int i = 0; i < 100; i++) {
		bool got = r->use_state ? soldout_state(so, &k1, r->now, NULL) == OFFER_PROBE_ALLOWED
					: soldout_probe(so, &k1, r->now);
		r->granted += got;
		/* Other offerings marked and cleared meanwhile must not disturb it. */
		char zone[32];
		snprintf(zone, sizeof(zone), "ap-singapore-%d", 100 + i);
		struct soldout_key other = {"AKIDone", "ap-singapore", zone, "GN7.2XLARGE32"};
		soldout_mark(so, &other, r->now, 0);
		soldout_clear(so, &other);
	}
	return NULL;
}

static void test_many_threads_one_probe(void **state)
{
	(void)state;
	for (int round = 0; round < 2; round++) {
		soldout_free(so);
		so = soldout_new(0);
		soldout_mark(so, &k1, 0, 1000);
		pthread_barrier_t start;
		pthread_barrier_init(&start, NULL, N_THREADS);
		pthread_t th[N_THREADS];
		struct race r[N_THREADS];
		for (int i = 0; i < N_THREADS; i++) {
			r[i] = (struct race){.start = &start, .now = 1000, .use_state = round == 1};
			assert_int_equal(pthread_create(&th[i], NULL, ask, &r[i]), 0);
		}
		int granted = 0;
		for (int i = 0; i < N_THREADS; i++) {
			pthread_join(th[i], NULL);
			granted += r[i].granted;
		}
		pthread_barrier_destroy(&start);
		assert_int_equal(granted, 1);
		assert_int_equal(soldout_size(so), 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unknown_is_available, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ttl_then_one_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ttl_is_configurable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_are_distinct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded_oldest_evicted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_returned_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_threads_one_probe, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
