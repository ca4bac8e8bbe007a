/* offer: the preference list (type-major) and the choice of the next launch's offering
 * under prioritized and spread, with sold-out offerings and probes. */
#include "testutil.h"
#include "offer.h"
#include "plan.h"

/* A spec with the seed (ap-singapore-2, GN7.2XLARGE32) and the given further choices
 * (NULL-terminated lists, NULL for none). */
static struct pool_spec *mkspec(const char *const *types, const char *const *zones, enum pool_allocation a)
{
	struct pool_spec *s = xcalloc(1, sizeof(*s));
	s->region = xstrdup("ap-singapore");
	s->zone = xstrdup("ap-singapore-2");
	s->instance_type = xstrdup("GN7.2XLARGE32");
	for (size_t i = 0; types && types[i]; i++)
		strv_push(&s->instance_types, types[i]);
	for (size_t i = 0; zones && zones[i]; i++)
		strv_push(&s->zones, zones[i]);
	s->allocation = a;
	return s;
}

static const char *const three_zones[] = {"ap-singapore-3", "ap-singapore-4", NULL};
static const char *const two_types[] = {"GN10X.2XLARGE40", NULL};

static void assert_offer(const struct offer_list *l, size_t i, const char *zone, const char *type)
{
	assert_true(i < l->n);
	assert_string_equal(l->v[i].zone, zone);
	assert_string_equal(l->v[i].instance_type, type);
}

static void pick(const struct offer_list *l, const enum offer_state *st, const int *live,
		 enum pool_allocation a, enum offer_probe probe, int want, struct offer_pick *ret)
{
	struct offer_input in = {.list = l, .state = st, .zone_live = live, .strategy = a, .probe = probe,
				 .want = want};
	offer_choose(&in, ret);
}

static void test_seed_only_is_one_offering(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(NULL, NULL, POOL_PRIORITIZED);
	struct offer_list l;
	offer_build(s, &l);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.n_zones, 1);
	assert_offer(&l, 0, "ap-singapore-2", "GN7.2XLARGE32");
	enum offer_state st[1] = {OFFER_AVAILABLE};
	struct offer_pick p;
	for (int a = POOL_PRIORITIZED; a <= POOL_SPREAD; a++) {
		pick(&l, st, NULL, (enum pool_allocation)a, OFFER_PROBE_IN_ORDER, 4, &p);
		assert_int_equal(p.index, 0);
		assert_int_equal(p.count, 4);  /* the whole shortfall, as before offerings */
		assert_false(p.probe);
	}
	/* Sold out: nothing; due: the probe, for the whole shortfall. */
	st[0] = OFFER_SOLD_OUT;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 4, &p);
	assert_int_equal(p.index, -1);
	assert_int_equal(p.count, 0);
	st[0] = OFFER_PROBE_ALLOWED;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_LAST, 4, &p);
	assert_int_equal(p.index, 0);
	assert_int_equal(p.count, 4);
	assert_true(p.probe);
	/* Ledgers without an offering stand for the seed's. */
	assert_int_equal(offer_find(&l, NULL, NULL), 0);
	assert_int_equal(offer_find(&l, "", "GN7.2XLARGE32"), 0);
	assert_int_equal(offer_find(&l, "ap-singapore-3", NULL), -1);
	pool_spec_free(s);
}

static void test_type_major_order(void **state)
{
	(void)state;
	static const char *const types[] = {"GN10X.2XLARGE40", "GN7.5XLARGE80", NULL};
	struct pool_spec *s = mkspec(types, three_zones, POOL_PRIORITIZED);
	struct offer_list l;
	offer_build(s, &l);
	assert_int_equal(l.n, 9);
	assert_int_equal(l.n_zones, 3);
	static const char *const want[9][2] = {
		{"ap-singapore-2", "GN7.2XLARGE32"}, {"ap-singapore-3", "GN7.2XLARGE32"},
		{"ap-singapore-4", "GN7.2XLARGE32"}, {"ap-singapore-2", "GN10X.2XLARGE40"},
		{"ap-singapore-3", "GN10X.2XLARGE40"}, {"ap-singapore-4", "GN10X.2XLARGE40"},
		{"ap-singapore-2", "GN7.5XLARGE80"}, {"ap-singapore-3", "GN7.5XLARGE80"},
		{"ap-singapore-4", "GN7.5XLARGE80"},
	};
	for (size_t i = 0; i < 9; i++) {
		assert_offer(&l, i, want[i][0], want[i][1]);
		assert_int_equal(l.v[i].zone_index, (int)(i % 3));
		assert_int_equal(l.v[i].type_index, (int)(i / 3));
		assert_int_equal(offer_find(&l, want[i][0], want[i][1]), (int)i);
	}
	assert_string_equal(l.zones[0], "ap-singapore-2");
	assert_string_equal(l.zones[2], "ap-singapore-4");
	char name[64];
	offer_name(&l.v[4], name, sizeof(name));
	assert_string_equal(name, "GN10X.2XLARGE40 in ap-singapore-3");
	pool_spec_free(s);
}

static void test_maximum_lists(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(NULL, NULL, POOL_PRIORITIZED);
	for (int i = 0; i < POOL_OFFERING_LIST_MAX; i++) {
		char z[32], t[32];
		snprintf(z, sizeof(z), "ap-singapore-%d", 10 + i);
		snprintf(t, sizeof(t), "T%d.LARGE", i);
		strv_push(&s->zones, z);
		strv_push(&s->instance_types, t);
	}
	struct offer_list l;
	offer_build(s, &l);
	assert_int_equal(l.n, OFFER_MAX);
	assert_int_equal(l.n_zones, OFFER_ZONES_MAX);
	assert_offer(&l, OFFER_MAX - 1, "ap-singapore-19", "T9.LARGE");
	pool_spec_free(s);
	/* A spec without placement (pool_spec_for_cleanup) has no offerings. */
	struct pool_spec empty = {0};
	offer_build(&empty, &l);
	assert_int_equal(l.n, 0);
	assert_int_equal(offer_find(&l, NULL, NULL), -1);
	enum offer_state st[1] = {OFFER_AVAILABLE};
	struct offer_pick p;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 1, &p);
	assert_int_equal(p.index, -1);
}

static void test_prioritized_skips_sold_out(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(two_types, three_zones, POOL_PRIORITIZED);
	struct offer_list l;
	offer_build(s, &l);
	assert_int_equal(l.n, 6);
	enum offer_state st[6] = {0};
	struct offer_pick p;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 3, &p);
	assert_int_equal(p.index, 0);
	assert_int_equal(p.count, 3);
	/* The seed sold out: the same type in the next zone, for the whole shortfall. */
	st[0] = OFFER_SOLD_OUT;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 3, &p);
	assert_int_equal(p.index, 1);
	assert_int_equal(p.count, 3);
	assert_false(p.probe);
	/* The first type sold out everywhere: the second type in the first zone. */
	st[1] = st[2] = OFFER_SOLD_OUT;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 2, &p);
	assert_int_equal(p.index, 3);
	assert_offer(&l, 3, "ap-singapore-2", "GN10X.2XLARGE40");
	/* Everything sold out, no probe due: nothing. */
	for (int i = 0; i < 6; i++)
		st[i] = OFFER_SOLD_OUT;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 2, &p);
	assert_int_equal(p.index, -1);
	pick(&l, st, NULL, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 2, &p);
	assert_int_equal(p.index, -1);
	pool_spec_free(s);
}

/* The decision documented in offer.h: with OFFER_PROBE_IN_ORDER a due probe keeps its
 * place; with OFFER_PROBE_LAST it waits until nothing is available. */
static void test_probe_position(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(two_types, three_zones, POOL_PRIORITIZED);
	struct offer_list l;
	offer_build(s, &l);
	enum offer_state st[6] = {OFFER_PROBE_ALLOWED, OFFER_SOLD_OUT, OFFER_AVAILABLE, OFFER_PROBE_ALLOWED,
				  OFFER_AVAILABLE, OFFER_AVAILABLE};
	struct offer_pick p;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 2, &p);
	assert_int_equal(p.index, 0);
	assert_true(p.probe);
	assert_int_equal(p.count, 2);
	/* The probe was refused (another pool took it) or answered sold out: the same pass
	 * goes on with the next available offering. */
	st[0] = OFFER_SOLD_OUT;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 2, &p);
	assert_int_equal(p.index, 2);
	assert_false(p.probe);
	/* OFFER_PROBE_LAST: an available offering comes before any probe ... */
	st[0] = OFFER_PROBE_ALLOWED;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_LAST, 2, &p);
	assert_int_equal(p.index, 2);
	assert_false(p.probe);
	/* ... and a probe is tried, first in order, only when nothing is available. */
	st[2] = st[4] = st[5] = OFFER_SOLD_OUT;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_LAST, 2, &p);
	assert_int_equal(p.index, 0);
	assert_true(p.probe);
	st[0] = OFFER_SOLD_OUT;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_LAST, 2, &p);
	assert_int_equal(p.index, 3);
	assert_true(p.probe);
	pool_spec_free(s);
}

static void test_spread_balances_three_zones(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(NULL, three_zones, POOL_SPREAD);
	struct offer_list l;
	offer_build(s, &l);
	enum offer_state st[3] = {0};
	int live[OFFER_ZONES_MAX] = {0};
	struct offer_pick p;
	/* Empty pool of 6: launch after launch, each zone gets 2. */
	int want = 6;
	while (want > 0) {
		pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, want, &p);
		assert_true(p.index >= 0);
		assert_int_equal(p.count, 2);
		live[l.v[p.index].zone_index] += p.count;
		want -= p.count;
	}
	assert_int_equal(live[0], 2);
	assert_int_equal(live[1], 2);
	assert_int_equal(live[2], 2);
	/* A reclaim wave takes zone 3's two: both go back to it. */
	live[1] = 0;
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 2, &p);
	assert_offer(&l, (size_t)p.index, "ap-singapore-3", "GN7.2XLARGE32");
	assert_int_equal(p.count, 2);
	/* Uneven: 3, 1, 0 and 3 more: 2 to zone 4 first (to the level of zone 3, then one
	 * each by preference), i.e. zone 4 gets 2 and zone 3 gets 1. */
	live[0] = 3, live[1] = 1, live[2] = 0;
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 3, &p);
	assert_offer(&l, (size_t)p.index, "ap-singapore-4", "GN7.2XLARGE32");
	assert_int_equal(p.count, 2);
	/* Ties go to the preferred zone. */
	live[0] = live[1] = live[2] = 1;
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 1, &p);
	assert_int_equal(p.index, 0);
	assert_int_equal(p.count, 1);
	/* A sold-out zone is left out of the balance. */
	st[0] = OFFER_SOLD_OUT;
	live[0] = 0;
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 4, &p);
	assert_int_equal(p.index, 1);
	assert_int_equal(p.count, 2);
	pool_spec_free(s);
}

static void test_spread_uses_zone_best_type(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(two_types, three_zones, POOL_SPREAD);
	struct offer_list l;
	offer_build(s, &l);
	enum offer_state st[6] = {0};
	int live[OFFER_ZONES_MAX] = {2, 0, 2};
	/* Zone 3 has fewest, but its first type is sold out: its second type. */
	st[1] = OFFER_SOLD_OUT;
	struct offer_pick p;
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 1, &p);
	assert_offer(&l, (size_t)p.index, "ap-singapore-3", "GN10X.2XLARGE40");
	/* Both types sold out there: the next least loaded zone, the preferred one on a tie. */
	st[4] = OFFER_SOLD_OUT;
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 1, &p);
	assert_offer(&l, (size_t)p.index, "ap-singapore-2", "GN7.2XLARGE32");
	/* Spread with probes last: a zone whose only usable offering is a due probe is not a
	 * candidate while another zone is available; in order it is (fewest instances). */
	st[4] = OFFER_PROBE_ALLOWED;
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_LAST, 1, &p);
	assert_offer(&l, (size_t)p.index, "ap-singapore-2", "GN7.2XLARGE32");
	assert_false(p.probe);
	pick(&l, st, live, POOL_SPREAD, OFFER_PROBE_IN_ORDER, 1, &p);
	assert_offer(&l, (size_t)p.index, "ap-singapore-3", "GN10X.2XLARGE40");
	assert_true(p.probe);
	pool_spec_free(s);
}

static void test_zone_live_counts(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(NULL, three_zones, POOL_SPREAD);
	struct offer_list l;
	offer_build(s, &l);
	struct pool_instance in[6] = {0};
	const char *const z[6] = {"ap-singapore-2", "ap-singapore-2", "ap-singapore-4", "ap-singapore-9",
				  "ap-singapore-3", "ap-singapore-3"};
	const char *const st[6] = {"RUNNING", "PENDING", "RUNNING", "RUNNING", "LAUNCH_FAILED", "TERMINATING"};
	for (int i = 0; i < 6; i++) {
		snprintf(in[i].zone, sizeof(in[i].zone), "%s", z[i]);
		snprintf(in[i].state, sizeof(in[i].state), "%s", st[i]);
	}
	int live[OFFER_ZONES_MAX];
	offer_zone_live(&l, in, 6, live);
	assert_int_equal(live[0], 2);
	assert_int_equal(live[1], 0);  /* dead and going instances do not count */
	assert_int_equal(live[2], 1);  /* a zone no longer listed (ap-singapore-9) neither */
	pool_spec_free(s);
}

static void test_want_below_one_is_nothing(void **state)
{
	(void)state;
	struct pool_spec *s = mkspec(NULL, NULL, POOL_PRIORITIZED);
	struct offer_list l;
	offer_build(s, &l);
	enum offer_state st[1] = {OFFER_AVAILABLE};
	struct offer_pick p;
	pick(&l, st, NULL, POOL_PRIORITIZED, OFFER_PROBE_IN_ORDER, 0, &p);
	assert_int_equal(p.index, -1);
	assert_int_equal(p.count, 0);
	pool_spec_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_only_is_one_offering),
		cmocka_unit_test(test_type_major_order),
		cmocka_unit_test(test_maximum_lists),
		cmocka_unit_test(test_prioritized_skips_sold_out),
		cmocka_unit_test(test_probe_position),
		cmocka_unit_test(test_spread_balances_three_zones),
		cmocka_unit_test(test_spread_uses_zone_best_type),
		cmocka_unit_test(test_zone_live_counts),
		cmocka_unit_test(test_want_below_one_is_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
