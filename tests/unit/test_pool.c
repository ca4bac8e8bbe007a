/* pool: identities derived from a pool's namespace and name (the owner tag and the /scale
 * selector's label value) for every length Kubernetes accepts; the drain fields of the
 * spec (drainTimeout, maximumIncludesDoomed); the demand fields (autoscaling, nodeTemplate). */
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

/* The spec of pool_with(extra), which must validate; *ret_obj is to be deleted. */
static struct pool_spec *parsed(const char *extra, cJSON **ret_obj)
{
	*ret_obj = pool_with(extra);
	struct pool_spec *spec = NULL;
	struct sp_error err = {0};
	if (pool_spec_from_object(*ret_obj, "default", &spec, &err) != 0)
		fail_msg("%s: %s", extra, err.msg);
	return spec;
}

/* pool_with(extra) is refused with an error containing msg. */
static void assert_rejected(const char *extra, const char *msg)
{
	cJSON *obj = pool_with(extra);
	struct pool_spec *spec = NULL;
	struct sp_error err = {0};
	print_message("%.80s\n", extra);
	assert_int_equal(pool_spec_from_object(obj, "default", &spec, &err), SP_EINVAL);
	assert_null(spec);
	assert_contains(err.msg, msg);
	cJSON_Delete(obj);
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
		cJSON *obj;
		struct pool_spec *spec = parsed(cases[i].extra, &obj);
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
		assert_rejected(cases[i].extra, cases[i].msg);
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

/* spec.autoscaling: absent, the pool is held at its count as before (disabled, default
 * timers); present, its fields with their defaults. */
static void test_autoscaling_parsed(void **state)
{
	(void)state;
	static const struct {
		const char *extra;
		bool enabled, pending;
		int64_t unneeded, registration;
	} cases[] = {
		{"", false, false, 600, 900},
		{",\"autoscaling\":null", false, false, 600, 900},
		{",\"autoscaling\":{}", true, false, 600, 900},
		{",\"autoscaling\":{\"pendingPods\":true}", true, true, 600, 900},
		{",\"autoscaling\":{\"pendingPods\":false,\"scaleDownUnneededTime\":\"0s\"}", true, false, 0, 900},
		{",\"autoscaling\":{\"scaleDownUnneededTime\":\"1h30m\",\"nodeRegistrationTimeout\":\"1s\"}", true, false,
		 5400, 1},
		{",\"autoscaling\":{\"nodeRegistrationTimeout\":\"24h\",\"pendingPods\":null}", true, false, 600, 86400},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *obj;
		struct pool_spec *spec = parsed(cases[i].extra, &obj);
		print_message("%s\n", cases[i].extra);
		assert_int_equal(spec->autoscaling.enabled, cases[i].enabled);
		assert_int_equal(spec->autoscaling.pending_pods, cases[i].pending);
		assert_int_equal(spec->autoscaling.unneeded_time, cases[i].unneeded);
		assert_int_equal(spec->autoscaling.registration_timeout, cases[i].registration);
		assert_int_equal(spec->node_template.n_labels + spec->node_template.n_taints, 0);
		pool_spec_free(spec);
		cJSON_Delete(obj);
	}
}

/* spec.nodeTemplate read in the order written, values as given ("" for none). */
static void test_node_template_parsed(void **state)
{
	(void)state;
	cJSON *obj;
	struct pool_spec *spec = parsed(",\"nodeTemplate\":{\"labels\":{\"gpu-pool\":\"a10\",\"example.com/team\":\"ml\","
				       "\"empty\":\"\"},\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"true\","
				       "\"effect\":\"NoSchedule\"},{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoExecute\"},"
				       "{\"key\":\"spot\",\"value\":null,\"effect\":\"PreferNoSchedule\"}]}", &obj);
	const struct tmpl_node *t = &spec->node_template;
	assert_int_equal(t->n_labels, 3);
	assert_string_equal(t->labels[1].key, "example.com/team");
	assert_string_equal(t->labels[1].value, "ml");
	assert_string_equal(t->labels[2].value, "");
	assert_int_equal(t->n_taints, 3);
	assert_string_equal(t->taints[0].value, "true");
	assert_int_equal(t->taints[0].effect, TMPL_NO_SCHEDULE);
	assert_string_equal(t->taints[1].value, "");
	assert_int_equal(t->taints[1].effect, TMPL_NO_EXECUTE);
	assert_int_equal(t->taints[2].effect, TMPL_PREFER_NO_SCHEDULE);
	assert_false(spec->autoscaling.enabled);
	char *labels = tmpl_kubelet_labels(t), *taints = tmpl_kubelet_taints(t);
	assert_string_equal(labels, "gpu-pool=a10,example.com/team=ml,empty=");
	assert_string_equal(taints, "nvidia.com/gpu=true:NoSchedule,nvidia.com/gpu:NoExecute,spot:PreferNoSchedule");
	free(labels);
	free(taints);
	pool_spec_free(spec);
	cJSON_Delete(obj);
}

/* "{"key":"k<i>","effect":"NoSchedule"},..." n taints, or "\"l<i>\":\"v\",..." n labels. */
static char *many(size_t n, bool taints)
{
	char *s = xstrdup("");
	for (size_t i = 0; i < n; i++) {
		char *next = taints ? xasprintf("%s%s{\"key\":\"k%zu\",\"effect\":\"NoSchedule\"}", s, i ? "," : "", i)
				    : xasprintf("%s%s\"l%zu\":\"v\"", s, i ? "," : "", i);
		free(s);
		s = next;
	}
	return s;
}

/* Every bad field of spec.autoscaling and spec.nodeTemplate is refused, naming it. */
static void test_demand_fields_rejected(void **state)
{
	(void)state;
	char *labels65 = many(65, false), *labels64 = many(64, false);
	char *taints33 = many(33, true), *taints32 = many(32, true);
	char *too_many_labels = xasprintf(",\"nodeTemplate\":{\"labels\":{%s}}", labels65);
	char *too_many_taints = xasprintf(",\"nodeTemplate\":{\"taints\":[%s]}", taints33);
	char *long_name = xasprintf(",\"nodeTemplate\":{\"labels\":{\"a%063d\":\"v\"}}", 0);
	char *long_prefix = xasprintf(",\"nodeTemplate\":{\"labels\":{\"%0254d/a\":\"v\"}}", 0);
	char *long_value = xasprintf(",\"nodeTemplate\":{\"labels\":{\"a\":\"%064d\"}}", 0);
	const struct {
		const char *extra, *msg;
	} cases[] = {
		{",\"autoscaling\":true", "spec.autoscaling: must be an object, got boolean"},
		{",\"autoscaling\":{\"pendingPods\":\"yes\"}", "spec.autoscaling.pendingPods: must be true or false, got string"},
		{",\"autoscaling\":{\"pendingPod\":true}",
		 "spec.autoscaling.pendingPod: unknown field (did you mean \"pendingPods\"?)"},
		{",\"autoscaling\":{\"scaleDownUnneededTime\":\"10\"}",
		 "spec.autoscaling.scaleDownUnneededTime: \"10\" is not a duration such as 10m"},
		{",\"autoscaling\":{\"scaleDownUnneededTime\":\"25h\"}",
		 "spec.autoscaling.scaleDownUnneededTime: \"25h\" is longer than 24h"},
		{",\"autoscaling\":{\"scaleDownUnneededTime\":600}",
		 "spec.autoscaling.scaleDownUnneededTime: must be a string, got number"},
		{",\"autoscaling\":{\"nodeRegistrationTimeout\":\"0s\"}",
		 "spec.autoscaling.nodeRegistrationTimeout: \"0s\" is shorter than 1s"},
		{",\"autoscaling\":{\"nodeRegistrationTimeout\":\"1.5m\"}",
		 "spec.autoscaling.nodeRegistrationTimeout: \"1.5m\" is not a duration"},
		{",\"nodeTemplate\":[]", "spec.nodeTemplate: must be an object with labels and taints, got list"},
		{",\"nodeTemplate\":{\"label\":{}}", "spec.nodeTemplate.label: unknown field (did you mean \"labels\"?)"},
		{",\"nodeTemplate\":{\"labels\":[\"a\"]}", "spec.nodeTemplate.labels: must be a map of label key to value, got list"},
		{too_many_labels, "spec.nodeTemplate.labels: 65 labels, more than the maximum 64"},
		{",\"nodeTemplate\":{\"labels\":{\"-a\":\"v\"}}", "spec.nodeTemplate.labels.-a: not a valid label key"},
		{",\"nodeTemplate\":{\"labels\":{\"\":\"v\"}}", "spec.nodeTemplate.labels.: not a valid label key"},
		{",\"nodeTemplate\":{\"labels\":{\"Example.com/a\":\"v\"}}", "spec.nodeTemplate.labels.Example.com/a: not a valid label key"},
		{",\"nodeTemplate\":{\"labels\":{\"a/b/c\":\"v\"}}", "spec.nodeTemplate.labels.a/b/c: not a valid label key"},
		{",\"nodeTemplate\":{\"labels\":{\"example.com/\":\"v\"}}", "spec.nodeTemplate.labels.example.com/: not a valid label key"},
		{",\"nodeTemplate\":{\"labels\":{\"a..b/c\":\"v\"}}", "spec.nodeTemplate.labels.a..b/c: not a valid label key"},
		{long_name, "not a valid label key"},
		{long_prefix, "not a valid label key"},
		{",\"nodeTemplate\":{\"labels\":{\"a\":1}}", "spec.nodeTemplate.labels.a: must be a string, got number"},
		{",\"nodeTemplate\":{\"labels\":{\"a\":\"b c\"}}", "spec.nodeTemplate.labels.a: \"b c\" is not a valid label value"},
		{",\"nodeTemplate\":{\"labels\":{\"a\":\"b-\"}}", "spec.nodeTemplate.labels.a: \"b-\" is not a valid label value"},
		{long_value, "spec.nodeTemplate.labels.a: \"0000"},
		{",\"nodeTemplate\":{\"taints\":{}}", "spec.nodeTemplate.taints: must be a list of taints, got object"},
		{too_many_taints, "spec.nodeTemplate.taints: 33 taints, more than the maximum 32"},
		{",\"nodeTemplate\":{\"taints\":[\"a=b:NoSchedule\"]}",
		 "spec.nodeTemplate.taints[0]: must be an object with key, value and effect, got string"},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\",\"timeAdded\":\"x\"}]}",
		 "spec.nodeTemplate.taints[0].timeAdded: unknown field"},
		{",\"nodeTemplate\":{\"taints\":[{\"effect\":\"NoSchedule\"}]}",
		 "spec.nodeTemplate.taints[0].key: required field is missing"},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"},{\"key\":\"b c\",\"effect\":\"NoSchedule\"}]}",
		 "spec.nodeTemplate.taints[1].key: \"b c\" is not a valid taint key"},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\",\"value\":\"x/y\",\"effect\":\"NoSchedule\"}]}",
		 "spec.nodeTemplate.taints[0].value: \"x/y\" is not a valid taint value"},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\",\"value\":true,\"effect\":\"NoSchedule\"}]}",
		 "spec.nodeTemplate.taints[0].value: must be a string, got boolean"},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\"}]}", "spec.nodeTemplate.taints[0].effect: required field is missing"},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\",\"effect\":1}]}",
		 "spec.nodeTemplate.taints[0].effect: must be a string, got number"},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\",\"effect\":\"NoSchedule\"},{\"key\":\"b\",\"effect\":\"NoSchedule\"},"
		 "{\"key\":\"c\",\"effect\":\"noschedule\"}]}",
		 "spec.nodeTemplate.taints[2].effect: must be NoSchedule, PreferNoSchedule or NoExecute, got \"noschedule\""},
		{",\"nodeTemplate\":{\"taints\":[{\"key\":\"a\",\"value\":\"1\",\"effect\":\"NoSchedule\"},"
		 "{\"key\":\"a\",\"value\":\"2\",\"effect\":\"NoSchedule\"}]}",
		 "spec.nodeTemplate.taints[1]: repeats taints[0] (key a, effect NoSchedule)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_rejected(cases[i].extra, cases[i].msg);
	}
	/* The bounds themselves are accepted. */
	char *at_most = xasprintf(",\"nodeTemplate\":{\"labels\":{%s},\"taints\":[%s]}", labels64, taints32);
	cJSON *obj;
	struct pool_spec *spec = parsed(at_most, &obj);
	assert_int_equal(spec->node_template.n_labels, 64);
	assert_int_equal(spec->node_template.n_taints, 32);
	pool_spec_free(spec);
	cJSON_Delete(obj);
	free(at_most);
	free(labels65);
	free(labels64);
	free(taints33);
	free(taints32);
	free(too_many_labels);
	free(too_many_taints);
	free(long_name);
	free(long_prefix);
	free(long_value);
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
		cmocka_unit_test(test_autoscaling_parsed),
		cmocka_unit_test(test_node_template_parsed),
		cmocka_unit_test(test_demand_fields_rejected),
		cmocka_unit_test(test_zone_region),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
