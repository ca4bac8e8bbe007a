/* itypes: the per-region catalogue of instance types through a fake fetch and clock:
 * fetched once and kept for the TTL, one call per region in flight whoever asks, the
 * old catalogue kept through a failed refresh (retried a minute later), an unknown type
 * SP_ENOTFOUND, a failure with nothing to answer from returned (and tried again). */
#include "testutil.h"
#include "itypes.h"

struct fetcher {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int calls;          /* fetches started */
	bool hold;          /* a fetch waits while this is set */
	int fail;           /* the next this many fetches fail (SP_ETRANSIENT) */
	int64_t gpu;        /* GN7.2XLARGE32's GPUs in the next catalogue */
	char regions[8][32];
};

static int fake_fetch(void *ctx, const struct cvm_credentials *cred, const char *region,
		      struct cvm_instance_type **ret_types, size_t *ret_n, struct sp_error *err)
{
	(void)cred;
	struct fetcher *f = ctx;
	pthread_mutex_lock(&f->lock);
	snprintf(f->regions[f->calls % 8], sizeof(f->regions[0]), "%s", region);
	f->calls++;
	pthread_cond_broadcast(&f->cond);
	while (f->hold)
		pthread_cond_wait(&f->cond, &f->lock);
	bool failing = f->fail > 0;
	if (failing)
		f->fail--;
	int64_t gpu = f->gpu;
	pthread_mutex_unlock(&f->lock);
	if (failing)
		return sp_fail(err, SP_ETRANSIENT, "DescribeInstanceTypeConfigs: InternalError: try later");
	struct cvm_instance_type *v = xcalloc(2, sizeof(*v));
	v[0] = (struct cvm_instance_type){.instance_type = "GN7.2XLARGE32", .cpu = 8, .memory_gib = 32, .gpu = gpu};
	v[1] = (struct cvm_instance_type){.instance_type = "S5.LARGE8", .cpu = 4, .memory_gib = 8};
	*ret_types = v;
	*ret_n = 2;
	return 0;
}

static int calls(struct fetcher *f)
{
	pthread_mutex_lock(&f->lock);
	int n = f->calls;
	pthread_mutex_unlock(&f->lock);
	return n;
}

struct world {
	struct fetcher f;
	struct test_clock clock;
	struct sp_clock port;
	struct itypes *cache;
};

static void world_init(struct world *w)
{
	*w = (struct world){.f = {.gpu = 1}, .clock = {.now = 1000, .mono_ms = 1000}};
	pthread_mutex_init(&w->f.lock, NULL);
	pthread_cond_init(&w->f.cond, NULL);
	w->port = test_clock_port(&w->clock);
	w->cache = itypes_new(&(struct itypes_config){.fetch = fake_fetch, .ctx = &w->f, .clock = &w->port});
}

static void world_free(struct world *w)
{
	itypes_free(w->cache);
	pthread_cond_destroy(&w->f.cond);
	pthread_mutex_destroy(&w->f.lock);
}

static const struct cvm_credentials cred = {.secret_id = "AKIDtest", .secret_key = "k"};

/* GN7.2XLARGE32's GPUs as the cache answers in region, or the error code. */
static int64_t gpus(struct world *w, const char *region, struct sp_error *err)
{
	struct cvm_instance_type t = {0};
	int r = itypes_get(w->cache, &cred, region, "GN7.2XLARGE32", &t, err);
	return r < 0 ? r : t.gpu;
}

static void test_kept_for_the_ttl(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	struct cvm_instance_type t = {0};
	assert_int_equal(itypes_get(w.cache, &cred, "ap-singapore", "S5.LARGE8", &t, NULL), 0);
	assert_int_equal(t.cpu, 4);
	assert_int_equal(t.memory_gib, 8);
	w.f.gpu = 2;  /* the next catalogue differs */
	test_clock_advance_ms(&w.clock, ITYPES_TTL_MS - 1);
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 1);
	assert_int_equal(calls(&w.f), 1);
	/* Another region is a catalogue of its own. */
	assert_int_equal(gpus(&w, "ap-guangzhou", NULL), 2);
	assert_int_equal(calls(&w.f), 2);
	assert_string_equal(w.f.regions[1], "ap-guangzhou");
	test_clock_advance_ms(&w.clock, 1);
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 2);
	assert_int_equal(calls(&w.f), 3);
	struct sp_error err = {0};
	assert_int_equal(itypes_get(w.cache, &cred, "ap-singapore", "GN99.HUGE", &t, &err), SP_ENOTFOUND);
	assert_contains(err.msg, "instance type GN99.HUGE is not in the catalogue of region ap-singapore");
	assert_int_equal(calls(&w.f), 3);
	world_free(&w);
}

struct asker {
	struct world *w;
	int64_t answer;
	pthread_t thread;
};

static void *ask(void *arg)
{
	struct asker *a = arg;
	a->answer = gpus(a->w, "ap-singapore", NULL);
	return NULL;
}

/* Eight passes ask at once for a region with no catalogue: one call, all answered by it;
 * once stale, askers during the refresh are answered from the old catalogue. */
static void test_one_call_in_flight(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	w.f.hold = true;
	struct asker askers[8];
	for (int i = 0; i < 8; i++) {
		askers[i] = (struct asker){.w = &w};
		assert_int_equal(pthread_create(&askers[i].thread, NULL, ask, &askers[i]), 0);
	}
	pthread_mutex_lock(&w.f.lock);
	while (w.f.calls == 0)
		pthread_cond_wait(&w.f.cond, &w.f.lock);
	pthread_mutex_unlock(&w.f.lock);
	usleep(50 * 1000);  /* the others reach the cache and wait */
	pthread_mutex_lock(&w.f.lock);
	w.f.hold = false;
	pthread_cond_broadcast(&w.f.cond);
	pthread_mutex_unlock(&w.f.lock);
	for (int i = 0; i < 8; i++) {
		pthread_join(askers[i].thread, NULL);
		assert_int_equal(askers[i].answer, 1);
	}
	assert_int_equal(calls(&w.f), 1);

	/* Stale: one asker refreshes (held), the others get the old answer meanwhile. */
	test_clock_advance_ms(&w.clock, ITYPES_TTL_MS);
	w.f.gpu = 4;
	w.f.hold = true;
	struct asker refresher = {.w = &w};
	assert_int_equal(pthread_create(&refresher.thread, NULL, ask, &refresher), 0);
	pthread_mutex_lock(&w.f.lock);
	while (w.f.calls == 1)
		pthread_cond_wait(&w.f.cond, &w.f.lock);
	pthread_mutex_unlock(&w.f.lock);
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 1);
	assert_int_equal(calls(&w.f), 2);
	pthread_mutex_lock(&w.f.lock);
	w.f.hold = false;
	pthread_cond_broadcast(&w.f.cond);
	pthread_mutex_unlock(&w.f.lock);
	pthread_join(refresher.thread, NULL);
	assert_int_equal(refresher.answer, 4);
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 4);
	world_free(&w);
}

static void test_failures(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	/* Nothing to answer from: the error, and the next ask tries again. */
	w.f.fail = 1;
	struct sp_error err = {0};
	assert_int_equal(gpus(&w, "ap-singapore", &err), SP_ETRANSIENT);
	assert_contains(err.msg, "instance types of ap-singapore: DescribeInstanceTypeConfigs: InternalError");
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 1);
	assert_int_equal(calls(&w.f), 2);
	/* A failed refresh keeps the old catalogue, and is not tried again for a minute. */
	test_clock_advance_ms(&w.clock, ITYPES_TTL_MS);
	w.f.fail = 1;
	w.f.gpu = 2;
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 1);
	assert_int_equal(calls(&w.f), 3);
	test_clock_advance_ms(&w.clock, ITYPES_RETRY_MS - 1);
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 1);
	assert_int_equal(calls(&w.f), 3);
	test_clock_advance_ms(&w.clock, 1);
	assert_int_equal(gpus(&w, "ap-singapore", NULL), 2);
	assert_int_equal(calls(&w.f), 4);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_for_the_ttl),
		cmocka_unit_test(test_one_call_in_flight),
		cmocka_unit_test(test_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
