/* pool: identities derived from a pool's namespace and name (the owner tag and the /scale
 * selector's label value) for every length Kubernetes accepts; the drain fields of the
 * spec (drainTimeout, maximumIncludesDoomed). */
#include "testutil.h"
#include "pool.h"

#include <ctype.h>

static void fill(char *s, size_t n, char c)
{
	memset(s, c, n);
	s[n] = '\0';
}

/* Literal while "<namespace>/<name>" fits in a tag value (255): instances launched by
 * earlier versions keep their pool. */
static void test_owner_tag_literal(void **state)
{
	(void)state;
	char *t = pool_owner_tag("ml", "gpu");
	assert_string_equal(t, "ml/gpu");
	free(t);
	char ns[64], name[254];
	fill(ns, 63, 'n');
	fill(name, POOL_TAG_VALUE_MAX - 64, 'a');  /* 63 + 1 + 191 = 255 */
	t = pool_owner_tag(ns, name);
	assert_int_equal(strlen(t), POOL_TAG_VALUE_MAX);
	assert_null(strchr(t, '#'));
	assert_int_equal(strncmp(t, ns, 63), 0);
	free(t);
}

/* Past 255: a readable prefix, '#' and a digest; 255 characters; a function of the
 * namespace and name alone; names that differ only past the prefix (or only in where
 * the namespace ends) get different tags. */
static void test_owner_tag_digest(void **state)
{
	(void)state;
	char ns[64], name[254];
	fill(ns, 63, 'n');
	fill(name, 253, 'a');
	char *a = pool_owner_tag(ns, name);
	char *again = pool_owner_tag(ns, name);
	name[252] = 'b';
	char *b = pool_owner_tag(ns, name);
	char ns2[63];
	fill(ns2, 62, 'n');
	char name2[255];
	snprintf(name2, sizeof(name2), "n%s", name);
	char *c = pool_owner_tag(ns2, name2);  /* same "<ns>/<name>" length, '/' moved */
	assert_int_equal(strlen(a), POOL_TAG_VALUE_MAX);
	assert_int_equal(strlen(b), POOL_TAG_VALUE_MAX);
	assert_string_equal(a, again);
	assert_string_not_equal(a, b);
	assert_string_not_equal(a, c);
	assert_int_equal(strncmp(a, ns, 63), 0);
	assert_int_equal(a[63], '/');
	const char *hash = strchr(a, '#');
	assert_non_null(hash);
	assert_int_equal(strlen(hash + 1), 32);
	for (const char *h = hash + 1; *h; h++)
		assert_true(isxdigit((unsigned char)*h));
	free(a);
	free(again);
	free(b);
	free(c);
	/* One character past the limit switches form. */
	fill(name, POOL_TAG_VALUE_MAX - 63, 'a');
	a = pool_owner_tag(ns, name);
	assert_non_null(strchr(a, '#'));
	assert_int_equal(strlen(a), POOL_TAG_VALUE_MAX);
	free(a);
}

/* The /scale selector's label value is always a valid label value (<= 63, alphanumeric
 * at both ends), and distinct for names that share a long prefix. */
static void test_label_value(void **state)
{
	(void)state;
	char *v = pool_label_value("gpu-pool");
	assert_string_equal(v, "gpu-pool");
	free(v);
	char name[254];
	fill(name, 63, 'a');
	v = pool_label_value(name);
	assert_string_equal(v, name);
	free(v);
	fill(name, 253, 'a');
	name[29] = '.';
	char *x = pool_label_value(name);
	name[200] = 'z';
	char *y = pool_label_value(name);
	assert_int_equal(strlen(x), POOL_LABEL_VALUE_MAX);
	assert_string_not_equal(x, y);
	assert_true(isalnum((unsigned char)x[0]) && isalnum((unsigned char)x[62]));
	for (const char *c = x; *c; c++)
		assert_true(isalnum((unsigned char)*c) || strchr("-_.", *c));
	free(x);
	free(y);
}

/* A valid pool object with extra spec fields given as JSON members ("" for none). */
static cJSON *pool_with(const char *extra)
{
	char *text = xasprintf("{\"apiVersion\":\"devops.jokerbai.com/v1\",\"kind\":\"Spotpool\","
			       "\"metadata\":{\"name\":\"p\"},\"spec\":{\"region\":\"ap-singapore\","
			       "\"availabilityZone\":\"ap-singapore-2\",\"instanceType\":\"S5.MEDIUM2\","
			       "\"imageId\":\"img-1\",\"minimum\":0,\"maximum\":2%s}}", extra);
	cJSON *obj = cJSON_Parse(text);
	assert_non_null(obj);
	free(text);
	return obj;
}

static void test_drain_fields_parsed(void **state)
{
	(void)state;
	static const struct {
		const char *extra;
		int64_t timeout;
		bool doomed;
	} cases[] = {
		{"", POOL_DRAIN_TIMEOUT_DEFAULT, false},
		{",\"drainTimeout\":\"10m\"", 600, false},
		{",\"drainTimeout\":\"90s\"", 90, false},
		{",\"drainTimeout\":\"1h30m\"", 5400, false},
		{",\"drainTimeout\":\"1m30s\"", 90, false},
		{",\"drainTimeout\":\"0s\"", 0, false},
		{",\"drainTimeout\":\"24h\"", 86400, false},
		{",\"drainTimeout\":\"1440m\"", 86400, false},
		{",\"drainTimeout\":null", POOL_DRAIN_TIMEOUT_DEFAULT, false},
		{",\"maximumIncludesDoomed\":true", POOL_DRAIN_TIMEOUT_DEFAULT, true},
		{",\"maximumIncludesDoomed\":false", POOL_DRAIN_TIMEOUT_DEFAULT, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *obj = pool_with(cases[i].extra);
		struct pool_spec *spec = NULL;
		struct sp_error err = {0};
		if (pool_spec_from_object(obj, "default", &spec, &err) != 0)
			fail_msg("%s: %s", cases[i].extra, err.msg);
		assert_int_equal(spec->drain_timeout, cases[i].timeout);
		assert_int_equal(spec->maximum_includes_doomed, cases[i].doomed);
		pool_spec_free(spec);
		cJSON_Delete(obj);
	}
}

static void test_drain_fields_rejected(void **state)
{
	(void)state;
	static const struct {
		const char *extra, *msg;
	} cases[] = {
		{",\"drainTimeout\":\"25h\"", "spec.drainTimeout: \"25h\" is longer than 24h"},
		{",\"drainTimeout\":\"86401s\"", "spec.drainTimeout: \"86401s\" is longer than 24h"},
		{",\"drainTimeout\":\"10\"", "spec.drainTimeout: \"10\" is not a duration such as 10m"},
		{",\"drainTimeout\":\"\"", "spec.drainTimeout: \"\" is not a duration"},
		{",\"drainTimeout\":\"-1m\"", "spec.drainTimeout: \"-1m\" is not a duration"},
		{",\"drainTimeout\":\"1.5h\"", "spec.drainTimeout: \"1.5h\" is not a duration"},
		{",\"drainTimeout\":\"10ms\"", "spec.drainTimeout: \"10ms\" is not a duration"},
		{",\"drainTimeout\":\"100000s\"", "spec.drainTimeout: \"100000s\" is not a duration"},
		{",\"drainTimeout\":\"1d\"", "spec.drainTimeout: \"1d\" is not a duration"},
		{",\"drainTimeout\":\"m\"", "spec.drainTimeout: \"m\" is not a duration"},
		{",\"drainTimeout\":600", "spec.drainTimeout: must be a string, got number"},
		{",\"drainTimeout\":\"0s0s0s0s0s0s0s0s0s0s0s0s0s\"", "spec.drainTimeout: 26 characters, longer than the maximum 24"},
		{",\"maximumIncludesDoomed\":\"true\"", "spec.maximumIncludesDoomed: must be true or false, got string"},
		{",\"maximumIncludesDoomed\":1", "spec.maximumIncludesDoomed: must be true or false, got number"},
		{",\"drainTimeOut\":\"10m\"", "spec.drainTimeOut: unknown field (did you mean \"drainTimeout\"?)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *obj = pool_with(cases[i].extra);
		struct pool_spec *spec = NULL;
		struct sp_error err = {0};
		assert_int_equal(pool_spec_from_object(obj, "default", &spec, &err), SP_EINVAL);
		assert_null(spec);
		assert_contains(err.msg, cases[i].msg);
		cJSON_Delete(obj);
	}
}

/* Deleting drains too: cleanup reads drainTimeout, and one that no longer validates
 * falls back to the default instead of holding the pool. */
static void test_drain_timeout_for_cleanup(void **state)
{
	(void)state;
	static const struct {
		const char *extra;
		int64_t timeout;
	} cases[] = {
		{",\"drainTimeout\":\"2m\"", 120},
		{",\"drainTimeout\":\"forever\"", POOL_DRAIN_TIMEOUT_DEFAULT},
		{"", POOL_DRAIN_TIMEOUT_DEFAULT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *obj = pool_with(cases[i].extra);
		struct pool_spec *spec = NULL;
		assert_int_equal(pool_spec_for_cleanup(obj, "default", &spec, NULL), 0);
		assert_int_equal(spec->drain_timeout, cases[i].timeout);
		pool_spec_free(spec);
		cJSON_Delete(obj);
	}
}

/* The region of a zone: all before its last '-', and only of the zone form. */
static void test_zone_region(void **state)
{
	(void)state;
	static const struct {
		const char *zone, *region;
	} cases[] = {
		{"ap-singapore-2", "ap-singapore"}, {"ap-shanghai-fsi-1", "ap-shanghai-fsi"},
		{"na-siliconvalley-10", "na-siliconvalley"}, {"ap-singapore-", NULL}, {"ap", NULL},
		{"singapore-2", NULL}, {"", NULL}, {NULL, NULL}, {"AP-x-1", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char out[64] = "unset";
		bool ok = pool_zone_region(cases[i].zone, out, sizeof(out));
		assert_int_equal(ok, cases[i].region != NULL);
		assert_string_equal(out, ok ? cases[i].region : "unset");
	}
	char small[8];
	assert_false(pool_zone_region("ap-singapore-2", small, sizeof(small)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_tag_literal),
		cmocka_unit_test(test_owner_tag_digest),
		cmocka_unit_test(test_label_value),
		cmocka_unit_test(test_drain_fields_parsed),
		cmocka_unit_test(test_drain_fields_rejected),
		cmocka_unit_test(test_drain_timeout_for_cleanup),
		cmocka_unit_test(test_zone_region),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
