/* qty: every quantity form (suffixes, exponents, rounding up) and bad, negative or
 * overflowing ones naming the field; integers as strconv.ParseInt; resource lists (a
 * learned allocatable, free room on it). */
#include "testutil.h"
#include "qty.h"

static void test_quantity(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		bool milli;
		int64_t want;
	} rows[] = {
		{"0", false, 0}, {"-0", false, 0}, {"0.000", true, 0}, {"1", false, 1}, {"+5", false, 5},
		{"5.", false, 5}, {"1", true, 1000}, {"500m", true, 500}, {"0.5", true, 500}, {".5", true, 500},
		{".5", false, 1},                       /* rounded up, as Quantity.Value */
		{"1.5", false, 2}, {"0.1m", true, 1}, {"1500m", false, 2}, {"100n", true, 1}, {"250000u", true, 250},
		{"1k", false, 1000}, {"1M", false, 1000000}, {"1G", false, 1000000000}, {"1T", false, 1000000000000},
		{"1P", false, 1000000000000000}, {"1E", false, 1000000000000000000}, {"9E", false, 9000000000000000000},
		{"1Ki", false, 1024}, {"1Mi", false, 1048576}, {"1Gi", false, 1073741824}, {"1.5Gi", false, 1610612736},
		{"1Ti", false, 1099511627776}, {"1Pi", false, 1125899906842624}, {"1Ei", false, 1152921504606846976},
		{"7Ei", false, 8070450532247928832}, {"0.5Ki", false, 512}, {"1.1Ki", false, 1127}, /* 1126.4 */
		{"1e3", false, 1000}, {"1E3", false, 1000}, {"1e+3", false, 1000}, {"1e-3", true, 1},
		{"25e-2", true, 250}, {"1e-1000", false, 1}, {"0e100000000", false, 0},
		{"9223372036854775807", false, INT64_MAX}, {"9223372036854775807m", true, INT64_MAX},
		{"000000000000000000000000000000000000000000000000000000000000001", false, 1},
		{"8Gi", true, 8589934592000},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu: %s\n", i, rows[i].s);
		int64_t v = -1;
		struct sp_error err = {0};
		assert_int_equal(qty_parse(rows[i].s, rows[i].milli, "f", &v, &err), 0);
		assert_int_equal(v, rows[i].want);
	}
	static const struct {
		const char *s;
		const char *error;
	} bad[] = {
		{"", "is not a quantity"}, {".", "is not a quantity"}, {"1K", "is not a quantity"},
		{"1e", "is not a quantity"}, {"1Gib", "is not a quantity"}, {"1 Gi", "is not a quantity"},
		{" 1", "is not a quantity"}, {"1.2.3", "is not a quantity"}, {"abc", "is not a quantity"},
		{"1e3.5", "is not a quantity"}, {"--1", "is not a quantity"}, {"0x10", "is not a quantity"},
		{"1ee3", "is not a quantity"}, {"1i", "is not a quantity"}, {"1e-", "is not a quantity"},
		{"Gi", "is not a quantity"}, {"-1", "is negative"}, {"-1m", "is negative"}, {"8Ei", "is too large"},
		{"10E", "is too large"}, {"9223372036854775808", "is too large"}, {"9223372036854775807.1", "is too large"},
		{"1e100000000", "is too large"}, {"9223372036854776", "is too large"}, /* in millis */
		{"11111111111111111111111111111111111111111111111111111111111111111", "longer than 64"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("bad %zu: %s\n", i, bad[i].s);
		int64_t v = 42;
		struct sp_error err = {0};
		bool milli = strcmp(bad[i].s, "9223372036854776") == 0;
		assert_true(qty_parse(bad[i].s, milli, "spec.containers[0].resources.requests.memory", &v, &err) < 0);
		assert_int_equal(v, 42);
		assert_contains(err.msg, "spec.containers[0].resources.requests.memory: ");
		assert_contains(err.msg, bad[i].error);
	}
}

static void test_parse_int(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		bool ok;
		int64_t want;
	} rows[] = {
		{"0", true, 0}, {"+7", true, 7}, {"-7", true, -7}, {"9223372036854775807", true, INT64_MAX},
		{"-9223372036854775808", true, INT64_MIN}, {"9223372036854775808", false, 0},
		{"-9223372036854775809", false, 0}, {"", false, 0}, {"-", false, 0}, {"1.0", false, 0},
		{"1e3", false, 0}, {" 1", false, 0}, {"1k", false, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu: %s\n", i, rows[i].s);
		int64_t v = 42;
		assert_int_equal(qty_parse_int(rows[i].s, &v), rows[i].ok);
		assert_int_equal(v, rows[i].ok ? rows[i].want : 42);
	}
}

/* A learned allocatable, and free room on it. */
static void test_resources(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct qty_list r = {0};
	cJSON *obj = test_json("{'cpu':'7910m','memory':'28Gi','nvidia.com/gpu':'1','pods':'61'}");
	assert_int_equal(qty_list_from_json(obj, "status.allocatable", &r, &err), 0);
	assert_int_equal(qty_get(&r, QTY_CPU), 7910);
	struct qty_list used = {0};
	qty_set(&used, QTY_CPU, 8000);
	qty_set(&used, QTY_PODS, 3);
	qty_set(&used, "example.com/x", 3);
	qty_sub(&r, &used);
	assert_int_equal(qty_get(&r, QTY_CPU), 0);
	assert_int_equal(qty_get(&r, QTY_PODS), 58);
	assert_int_equal(qty_get(&r, "example.com/x"), 0);
	assert_int_equal(r.n, 4);
	assert_true(qty_has(&r, QTY_CPU));     /* 0, but there */
	assert_false(qty_has(&r, "example.com/x"));
	qty_clear(&used);
	qty_clear(&r);
	cJSON_Delete(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantity),
		cmocka_unit_test(test_parse_int),
		cmocka_unit_test(test_resources),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
