/* acct: the account behind each SecretId, remembered; failed asks backed off. */
#include "testutil.h"
#include "acct.h"

#include <stdio.h>
#include <string.h>

static void test_learned_once(void **state)
{
	(void)state;
	struct acct *a = acct_new(0);
	char fp[ACCT_FP_MAX + 1] = "";
	assert_int_equal(acct_get(a, "AKIDone", 0, fp), ACCT_ASK);
	/* Another worker's pass meanwhile asks too, rather than decide without the account. */
	assert_int_equal(acct_get(a, "AKIDone", 1, fp), ACCT_ASK);
	acct_learned(a, "AKIDone", "acct-0123456789abcdef");
	assert_int_equal(acct_get(a, "AKIDone", 2, fp), ACCT_KNOWN);
	assert_string_equal(fp, "acct-0123456789abcdef");
	/* Known for good: the account of a SecretId never changes. */
	assert_int_equal(acct_get(a, "AKIDone", INT64_MAX / 2, fp), ACCT_KNOWN);
	assert_int_equal(acct_get(a, "AKIDtwo", 2, fp), ACCT_ASK);  /* another key: its own */
	acct_free(a);
}

static void test_failure_backoff(void **state)
{
	(void)state;
	struct acct *a = acct_new(0);
	char fp[ACCT_FP_MAX + 1];
	int64_t now = 1000, want = ACCT_RETRY_MIN_MS;
	for (int i = 0; i < 12; i++) {
		assert_int_equal(acct_get(a, "AKIDk", now, fp), ACCT_ASK);
		acct_failed(a, "AKIDk", now);
		assert_int_equal(acct_get(a, "AKIDk", now + want - 1, fp), ACCT_WAIT);
		now += want;
		want = want * 2 > ACCT_RETRY_MAX_MS ? ACCT_RETRY_MAX_MS : want * 2;
	}
	assert_int_equal(want, ACCT_RETRY_MAX_MS);  /* capped, never given up */
	assert_int_equal(acct_get(a, "AKIDk", now, fp), ACCT_ASK);
	acct_learned(a, "AKIDk", "acct-x");
	assert_int_equal(acct_get(a, "AKIDk", now, fp), ACCT_KNOWN);
	acct_free(a);
}

/* Rotations bring new SecretIds for ever: the table stays at its maximum, the key used
 * longest ago going first. */
static void test_bounded(void **state)
{
	(void)state;
	struct acct *a = acct_new(8);
	char fp[ACCT_FP_MAX + 1], id[32];
	acct_learned(a, "AKIDkept", "acct-kept");
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "AKIDrotated%d", i);
		acct_learned(a, id, "acct-same");
		assert_int_equal(acct_get(a, "AKIDkept", 0, fp), ACCT_KNOWN);  /* in use: stays */
	}
	assert_int_equal(acct_count(a), 8);
	assert_int_equal(acct_get(a, "AKIDrotated99", 0, fp), ACCT_KNOWN);
	assert_int_equal(acct_get(a, "AKIDrotated0", 0, fp), ACCT_ASK);  /* gone: asked again */
	acct_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_learned_once),
		cmocka_unit_test(test_failure_backoff),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
