/* util: sp_base64_decode (found by tests/fuzz/fuzz_kubeconfig: "====" wrote before its buffer). */
#include "testutil.h"
#include "spotpool.h"

static void test_base64_valid(void **state)
{
	(void)state;
	size_t n = 99;
	char *s = sp_base64_decode("QQ==", &n);
	assert_non_null(s);
	assert_int_equal(n, 1);
	assert_string_equal(s, "A");
	free(s);
	s = sp_base64_decode("aGVsbG8h", &n);
	assert_string_equal(s, "hello!");
	assert_int_equal(n, 6);
	free(s);
	s = sp_base64_decode("", &n);
	assert_string_equal(s, "");
	assert_int_equal(n, 0);
	free(s);
}

static void test_base64_malformed_padding(void **state)
{
	(void)state;
	/* Each was accepted by EVP_DecodeBlock; "====" and longer runs of '=' then wrote
	 * out[-1], out[-2], ... (ASan: heap-buffer-overflow). */
	static const char *const bad[] = {
		"====", "========", "A===", "Q===", "QQ=A", "=QQQ", "QQ==QQ==", "QQ== ", "    QQ==",
		"QQ\n=", "QUJD\n", "QUJ-", "QUJ_", NULL,
	};
	size_t n = 99;
	for (size_t i = 0; bad[i]; i++) {
		char *s = sp_base64_decode(bad[i], &n);
		if (s)
			fail_msg("\"%s\" decoded to \"%s\"", bad[i], s);
	}
	assert_int_equal(n, 99);  /* untouched on failure */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_valid),
		cmocka_unit_test(test_base64_malformed_padding),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
