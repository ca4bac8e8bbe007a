/* pool: identities derived from a pool's namespace and name (the owner tag and the /scale
 * selector's label value) for every length Kubernetes accepts. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_tag_literal),
		cmocka_unit_test(test_owner_tag_digest),
		cmocka_unit_test(test_label_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
