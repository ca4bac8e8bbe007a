/* tmpl: Kubernetes' syntax of label keys (qualified names), label values and taint
 * effects, at the bounds the apiserver sets for a Node. */
#include "testutil.h"
#include "tmpl.h"

/* s of n copies of c, then tail. */
static char *repeat(char c, size_t n, const char *tail)
{
	char *s = xmalloc(n + strlen(tail) + 1);
	memset(s, c, n);
	strcpy(s + n, tail);
	return s;
}

static void test_keys_and_values(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		bool key, value;
	} cases[] = {
		{"gpu-pool", true, true},
		{"a", true, true},
		{"A_b.c-9", true, true},
		{"nvidia.com/gpu", true, false},
		{"node-role.kubernetes.io/worker", true, false},
		{"", false, true},
		{"-a", false, false},
		{"a-", false, false},
		{"a b", false, false},
		{"a/b/c", false, false},
		{"/a", false, false},
		{"a/", false, false},
		{"Example.com/a", false, false},
		{"ex_ample.com/a", false, false},
		{"example..com/a", false, false},
		{"-example.com/a", false, false},
		{"example.com-/a", false, false},
		{"example.com/-a", false, false},
		{"a\nb", false, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("\"%s\"\n", cases[i].s);
		assert_int_equal(tmpl_key_valid(cases[i].s), cases[i].key);
		assert_int_equal(tmpl_label_value_valid(cases[i].s), cases[i].value);
	}
	/* A name of 63 and a prefix of 253 are the most. */
	char *name63 = repeat('n', 63, ""), *name64 = repeat('n', 64, "");
	char *prefix253 = repeat('p', 253, "/n"), *prefix254 = repeat('p', 254, "/n");
	assert_true(tmpl_key_valid(name63));
	assert_true(tmpl_label_value_valid(name63));
	assert_false(tmpl_key_valid(name64));
	assert_false(tmpl_label_value_valid(name64));
	assert_true(tmpl_key_valid(prefix253));
	assert_false(tmpl_key_valid(prefix254));
	free(name63);
	free(name64);
	free(prefix253);
	free(prefix254);
}

static void test_effect_names(void **state)
{
	(void)state;
	assert_string_equal(tmpl_effect_name(TMPL_NO_SCHEDULE), "NoSchedule");
	assert_string_equal(tmpl_effect_name(TMPL_PREFER_NO_SCHEDULE), "PreferNoSchedule");
	assert_string_equal(tmpl_effect_name(TMPL_NO_EXECUTE), "NoExecute");
	for (enum tmpl_effect e = TMPL_NO_SCHEDULE; e <= TMPL_NO_EXECUTE; e++) {
		enum tmpl_effect back = (enum tmpl_effect)-1;
		assert_int_equal(tmpl_effect_parse(tmpl_effect_name(e), &back), 0);
		assert_int_equal(back, e);
	}
	enum tmpl_effect untouched = TMPL_NO_EXECUTE;
	assert_int_equal(tmpl_effect_parse("noschedule", &untouched), SP_EINVAL); /* exact, as the apiserver */
	assert_int_equal(tmpl_effect_parse("", &untouched), SP_EINVAL);
	assert_int_equal(untouched, TMPL_NO_EXECUTE);
	struct tmpl_node empty = {0};
	char *labels = tmpl_kubelet_labels(&empty), *taints = tmpl_kubelet_taints(&empty);
	assert_string_equal(labels, "");
	assert_string_equal(taints, "");
	free(labels);
	free(taints);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_and_values),
		cmocka_unit_test(test_effect_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
