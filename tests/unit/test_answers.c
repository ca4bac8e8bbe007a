/* answers: launch answers per pool; when full, the one remembered longest ago goes,
 * never the one just answered (issue 19 item 6: an arbitrary entry was evicted). */
#include "testutil.h"
#include "answers.h"

static void remember(struct answers *a, const char *owner, const char *token, const char *id)
{
	struct strv ids = {0};
	strv_push(&ids, id);
	answers_remember(a, owner, token, &ids);
	strv_clear(&ids);
}

static void test_remember_recall_forget(void **state)
{
	(void)state;
	struct answers *a = answers_new(0);
	remember(a, "ml/gpu", "tok-1", "ins-1");
	struct strv ids = {0};
	assert_false(answers_recall(a, "ml/gpu", "tok-0", &ids));  /* another launch's token */
	assert_int_equal(ids.n, 0);
	assert_true(answers_recall(a, "ml/gpu", "tok-1", &ids));
	assert_int_equal(ids.n, 1);
	assert_string_equal(ids.v[0], "ins-1");
	strv_clear(&ids);
	remember(a, "ml/gpu", "tok-2", "ins-2");  /* the pool's next launch replaces it */
	assert_int_equal(answers_count(a), 1);
	assert_false(answers_recall(a, "ml/gpu", "tok-1", &ids));
	answers_forget(a, "ml/gpu");
	assert_int_equal(answers_count(a), 0);
	assert_false(answers_recall(a, "ml/gpu", "tok-2", &ids));
	answers_free(a);
}

/* Full: the entry remembered longest ago goes, whatever its place in the table; a pool
 * remembered again counts as new. */
static void test_full_evicts_oldest(void **state)
{
	(void)state;
	struct answers *a = answers_new(3);
	remember(a, "ns/a", "t", "ins-a");
	remember(a, "ns/b", "t", "ins-b");
	remember(a, "ns/c", "t", "ins-c");
	remember(a, "ns/a", "t2", "ins-a2");  /* a is now the newest; b the oldest */
	answers_forget(a, "ns/c");
	remember(a, "ns/c", "t", "ins-c");
	remember(a, "ns/d", "t", "ins-d");    /* full: b goes */
	struct strv ids = {0};
	assert_int_equal(answers_count(a), 3);
	assert_false(answers_recall(a, "ns/b", "t", &ids));
	assert_true(answers_recall(a, "ns/a", "t2", &ids));
	assert_true(answers_recall(a, "ns/c", "t", &ids));
	assert_true(answers_recall(a, "ns/d", "t", &ids));
	assert_int_equal(ids.n, 3);
	strv_clear(&ids);
	/* 10,000 pools at once, then one more: the first goes, the last stays */
	struct answers *big = answers_new(ANSWERS_MAX);
	char owner[32];
	for (int i = 0; i <= ANSWERS_MAX; i++) {
		snprintf(owner, sizeof(owner), "ns/p%d", i);
		remember(big, owner, "t", "ins-x");
	}
	assert_int_equal(answers_count(big), ANSWERS_MAX);
	assert_false(answers_recall(big, "ns/p0", "t", &ids));
	assert_true(answers_recall(big, "ns/p1", "t", &ids));
	snprintf(owner, sizeof(owner), "ns/p%d", ANSWERS_MAX);
	assert_true(answers_recall(big, owner, "t", &ids));
	strv_clear(&ids);
	answers_free(big);
	answers_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remember_recall_forget),
		cmocka_unit_test(test_full_evicts_oldest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
