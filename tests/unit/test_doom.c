/* doom: a claimed reclaim deadline bounded on the controller's clock (issue 27 item 1,
 * design D1): ten years ahead, long past, or a clock running ahead all give a deadline
 * between 2 and 10 minutes after the claim was first seen; an instance live 5 minutes
 * past it is a false notice. */
#include "testutil.h"
#include "doom.h"

#define SEEN 1800000000

static void test_deadline(void **state)
{
	(void)state;
	static const struct {
		int64_t claimed, first_seen, want;
	} rows[] = {
		{SEEN + 120, SEEN, SEEN + 120},                    /* Tencent's two minutes: as claimed */
		{SEEN + 300, SEEN, SEEN + 300},
		{SEEN + 600, SEEN, SEEN + 600},
		{SEEN + 10 * 365 * 86400LL, SEEN, SEEN + 600},    /* ten years ahead: 10 minutes */
		{SEEN + 601, SEEN, SEEN + 600},
		{946684800, SEEN, SEEN + 120},                     /* 2000-01-01: still a drain */
		{SEEN, SEEN, SEEN + 120},                          /* due now (a clock ahead) */
		{SEEN + 119, SEEN, SEEN + 120},
		{0, SEEN, 0},                                      /* no claim */
		{SEEN + 120, 0, 0},                                /* never seen: none */
		{-5, SEEN, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		assert_int_equal(doom_deadline(rows[i].claimed, rows[i].first_seen), rows[i].want);
	}
}

static void test_earliest(void **state)
{
	(void)state;
	assert_int_equal(doom_earliest(0, 0), 0);
	assert_int_equal(doom_earliest(5, 0), 5);
	assert_int_equal(doom_earliest(0, 7), 7);
	assert_int_equal(doom_earliest(9, 7), 7);
	assert_int_equal(doom_earliest(7, 9), 7);
	assert_int_equal(doom_earliest(-1, 9), 9);
}

/* A recorded deadline binds a claim made again until DOOM_MEMORY_SECONDS past it. */
static void test_remembered(void **state)
{
	(void)state;
	assert_false(doom_remembered(0, SEEN));
	assert_false(doom_remembered(-1, SEEN));
	assert_true(doom_remembered(SEEN + 600, SEEN + 1000));
	assert_true(doom_remembered(SEEN + 600, SEEN + 600 + DOOM_MEMORY_SECONDS - 1));
	assert_false(doom_remembered(SEEN + 600, SEEN + 600 + DOOM_MEMORY_SECONDS));
}

static void test_judge(void **state)
{
	(void)state;
	static const struct {
		int64_t deadline, now;
		enum doom_state want;
	} rows[] = {
		{0, SEEN, DOOM_NONE},
		{SEEN + 120, SEEN, DOOM_DOOMED},
		{SEEN + 120, SEEN + 120, DOOM_DOOMED},  /* at the deadline: the cloud may be late */
		{SEEN + 120, SEEN + 120 + DOOM_FALSE_GRACE_SECONDS - 1, DOOM_DOOMED},
		{SEEN + 120, SEEN + 120 + DOOM_FALSE_GRACE_SECONDS, DOOM_FALSE},
		{SEEN + 600, SEEN + 900, DOOM_FALSE},   /* 15 minutes after the first sight at most */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		assert_int_equal(doom_judge(rows[i].deadline, rows[i].now), rows[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deadline),
		cmocka_unit_test(test_earliest),
		cmocka_unit_test(test_remembered),
		cmocka_unit_test(test_judge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
