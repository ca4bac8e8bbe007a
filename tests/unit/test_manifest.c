/* manifest + pool: YAML reading and validation as strict as the CRD. */
#include "testutil.h"
#include "manifest.h"


static const char base[] =
	"apiVersion: devops.jokerbai.com/v1\n"
	"kind: Spotpool\n"
	"metadata: {name: gpu, namespace: ml}\n"
	"spec:\n"
	"  region: ap-singapore\n"
	"  availabilityZone: ap-singapore-2\n"
	"  instanceType: GN7.2XLARGE32\n"
	"  imageId: img-abc\n"
	"  minimum: 1\n"
	"  maximum: 3\n";

/* Parses text and validates its Spotpools; returns the error code and fills err. */
static int load(const char *text, struct pool_spec ***pools, size_t *n, struct sp_error *err)
{
	struct manifest_set set = {0};
	int r = manifest_parse(text, strlen(text), "t.yaml", &set, err);
	if (r == 0)
		r = manifest_pools(&set, pools, n, err);
	manifest_set_free(&set);
	return r;
}

static void free_pools(struct pool_spec **pools, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pool_spec_free(pools[i]);
	free(pools);
}

/* Expects text (base + extra spec lines) to be rejected with a message containing want. */
static void expect_error(const char *extra, const char *want)
{
	char text[4096];
	snprintf(text, sizeof(text), "%s%s", base, extra);
	struct pool_spec **pools = NULL;
	size_t n = 0;
	struct sp_error err = {0};
	int r = load(text, &pools, &n, &err);
	if (r == 0) {
		free_pools(pools, n);
		fail_msg("accepted, expected an error containing \"%s\" for:\n%s", want, extra);
	}
	assert_int_equal(r, SP_EINVAL);
	assert_contains(err.msg, want);
	assert_contains(err.msg, "t.yaml: document 1");
}

static void test_earlier_operator_sample_parses_unchanged(void **state)
{
	(void)state;
	struct manifest_set set = {0};
	struct sp_error err = {0};
	const char *shared = getenv("SPOTPOOL_SHARED_DIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/reference/earlier-operator-sample.yaml", shared ? shared : "../shared");
	int r = manifest_load_file(path, &set, &err);
	assert_int_equal(r, 0);
	struct pool_spec **pools = NULL;
	size_t n = 0;
	assert_int_equal(manifest_pools(&set, &pools, &n, &err), 0);
	assert_int_equal(n, 1);
	struct pool_spec *p = pools[0];
	assert_string_equal(p->name, "spotpool-sample");
	assert_string_equal(p->namespace, "default");
	assert_string_equal(p->region, "ap-singapore");
	assert_string_equal(p->zone, "ap-singapore-2");
	assert_string_equal(p->instance_type, "GN7.2XLARGE32");
	assert_int_equal(p->minimum, 2);
	assert_int_equal(p->maximum, 2);
	assert_string_equal(p->subnet_id, "DEFAULT");
	assert_string_equal(p->vpc_id, "DEFAULT");
	assert_int_equal(p->security_group_ids.n, 1);
	assert_string_equal(p->security_group_ids.v[0], "sg-xxx");
	assert_string_equal(p->image_id, "img-xxx");
	assert_string_equal(p->charge_type, "SPOTPAID");
	assert_string_equal(p->secret_id, "xxx");
	assert_false(p->has_replicas);
	assert_int_equal(p->deletion_policy, POOL_DELETE);
	free_pools(pools, n);
	manifest_set_free(&set);
}

static void test_several_documents_and_lists(void **state)
{
	(void)state;
	char text[4096];
	snprintf(text, sizeof(text),
		 "---\n%s---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n"
		 "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: devops.jokerbai.com/v1, kind: Spotpool, "
		 "metadata: {name: b}, spec: {region: ap-tokyo, availabilityZone: ap-tokyo-1, "
		 "instanceType: GN7.LARGE20, imageId: img-1, minimum: 0, maximum: 2, replicas: 1, "
		 "deletionPolicy: Retain, credentialsSecretRef: {name: tc}}}\n", base);
	struct pool_spec **pools = NULL;
	size_t n = 0;
	struct sp_error err = {0};
	assert_int_equal(load(text, &pools, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(pools[0]->namespace, "ml");
	assert_string_equal(pools[1]->name, "b");
	assert_true(pools[1]->has_replicas);
	assert_int_equal(pools[1]->replicas, 1);
	assert_int_equal(pools[1]->deletion_policy, POOL_RETAIN);
	assert_string_equal(pools[1]->credentials_secret, "tc");
	free_pools(pools, n);
}

static void test_json_input_is_accepted(void **state)
{
	(void)state;
	const char *json = "{\"apiVersion\":\"devops.jokerbai.com/v1\",\"kind\":\"Spotpool\","
			   "\"metadata\":{\"name\":\"j\"},\"spec\":{\"region\":\"ap-singapore\","
			   "\"availabilityZone\":\"ap-singapore-1\",\"instanceType\":\"GN7.2XLARGE32\","
			   "\"imageId\":\"img-1\",\"minimum\":0,\"maximum\":1,\"maxPrice\":\"2.5\"}}";
	struct pool_spec **pools = NULL;
	size_t n = 0;
	assert_int_equal(load(json, &pools, &n, NULL), 0);
	assert_string_equal(pools[0]->max_price, "2.5");
	free_pools(pools, n);
}

static void test_bad_values_name_the_field(void **state)
{
	(void)state;
	/* base already sets minimum 1 and maximum 3; duplicates are caught first, so these
	 * overrides use a fresh document built from base without those keys. */
	expect_error("  replicas: 7\n", "spec.replicas: 7 is outside [minimum 1, maximum 3]");
	expect_error("  instanceChargeType: PREPAID\n", "spec.instanceChargeType: must be SPOTPAID");
	expect_error("  securityGroupIds: sg-1\n", "spec.securityGroupIds: must be a list of strings");
	expect_error("  securityGroupIds: [abc]\n", "spec.securityGroupIds[0]: must start with \"sg-\"");
	expect_error("  maxPrice: cheap\n", "spec.maxPrice");
	expect_error("  maxPrice: 1.5\n", "spec.maxPrice: must be a string, got number");
	expect_error("  minimumm: 2\n", "spec.minimumm: unknown field");
	expect_error("  deletionPolicy: Keep\n", "spec.deletionPolicy: must be Delete or Retain");
	expect_error("  vpcId: vpc-1\n", "spec.subnetId: required together with spec.vpcId");
	expect_error("  secretKey: abcdef\n", "spec.secretId: required together with spec.secretKey");
	expect_error("  secretId: a\n  secretKey: abcdef\n  credentialsSecretRef: {name: s}\n",
		     "spec.credentialsSecretRef: cannot be combined");
	expect_error("  userData: '###'\n", "spec.userData: must be base64");
	expect_error("  tags: {spotpool.jokerbai.com/pool: x}\n", "reserved for pool ownership");
	expect_error("  systemDisk: {diskSize: 5}\n", "spec.systemDisk.diskSize: must be between 20 and 32000");
	expect_error("  internetMaxBandwidthOut: -1\n", "spec.internetMaxBandwidthOut");
	expect_error("  minimum: 2\n", "duplicate key \"minimum\"");
}

static void test_bounds_and_types(void **state)
{
	(void)state;
	static const char head[] = "apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: p}\n"
				   "spec: {region: ap-singapore, availabilityZone: ap-singapore-1, "
				   "instanceType: GN7.2XLARGE32, imageId: img-1, ";
	static const struct { const char *tail; const char *want; } cases[] = {
		{"minimum: 3, maximum: 1}", "spec.minimum: 3 is greater than spec.maximum 1"},
		{"minimum: \"abc\", maximum: 1}", "spec.minimum: must be an integer, got string \"abc\""},
		{"minimum: \"2\", maximum: 3}", "spec.minimum: must be an integer, got string \"2\""},
		{"minimum: 1.5, maximum: 3}", "spec.minimum: must be an integer"},
		{"minimum: -1, maximum: 3}", "spec.minimum: must be between 0 and 1000"},
		{"minimum: 0, maximum: 100000}", "spec.maximum: must be between 0 and 1000"},
		{"maximum: 3}", "spec.minimum: required field is missing"},
		{"minimum: 0}", "spec.maximum: required field is missing"},
		{"minimum: 0, maximum: 1, availabilityZone: ap-tokyo-1}", "duplicate key"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text), "%s%s\n", head, cases[i].tail);
		struct pool_spec **pools = NULL;
		size_t n = 0;
		struct sp_error err = {0};
		assert_int_equal(load(text, &pools, &n, &err), SP_EINVAL);
		assert_contains(err.msg, cases[i].want);
	}
}

static void test_placement_consistency(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"region: ap-singapore, availabilityZone: ap-tokyo-1", "spec.availabilityZone: \"ap-tokyo-1\" is not a zone of region ap-singapore",
		"region: Singapore, availabilityZone: Singapore-1", "spec.region",
		"region: ap-singapore, availabilityZone: ap-singapore-", "spec.availabilityZone",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i += 2) {
		char text[1024];
		snprintf(text, sizeof(text), "apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: p}\n"
			 "spec: {%s, instanceType: GN7.2XLARGE32, imageId: img-1, minimum: 0, maximum: 1}\n", bad[i]);
		struct pool_spec **pools = NULL;
		size_t n = 0;
		struct sp_error err = {0};
		assert_int_equal(load(text, &pools, &n, &err), SP_EINVAL);
		assert_contains(err.msg, bad[i + 1]);
	}
}

static void test_header_and_metadata_errors(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct pool_spec **pools = NULL;
	size_t n = 0;
	assert_int_equal(load("apiVersion: devops.jokerbai.com/v2\nkind: Spotpool\n", &pools, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "apiVersion: must be devops.jokerbai.com/v1");
	assert_int_equal(load("apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: Bad_Name}\nspec: {}\n",
			      &pools, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "metadata.name: \"Bad_Name\" is not a valid name");
	assert_int_equal(load("apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: a}\n",
			      &pools, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "spec: required object is missing");
	assert_int_equal(load("apiVersion: v1\nkind: ConfigMap\n", &pools, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "no Spotpool documents");
}

static void test_garbage_is_rejected_with_location(void **state)
{
	(void)state;
	struct sp_error err = {0};
	struct pool_spec **pools = NULL;
	size_t n = 0;
	assert_int_equal(load("spec: [unclosed\n  - x: {\n", &pools, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "t.yaml: line");
	assert_contains(err.msg, "invalid YAML");
	assert_int_equal(load("- just\n- a list\n", &pools, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "expected a mapping");
	assert_int_equal(load("a: &x 1\nb: *x\n", &pools, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "aliases");
	assert_int_equal(load("\x01\x02\xff garbage", &pools, &n, &err), SP_EINVAL);
}

static void test_missing_file(void **state)
{
	(void)state;
	struct manifest_set set = {0};
	struct sp_error err = {0};
	assert_int_equal(manifest_load_file("/nonexistent/pool.yaml", &set, &err), SP_EIO);
	assert_contains(err.msg, "/nonexistent/pool.yaml");
}

static void test_secret_documents_resolve(void **state)
{
	(void)state;
	const char *text = "apiVersion: v1\nkind: Secret\nmetadata: {name: tc, namespace: ml}\n"
			   "data: {secretId: QUtJRDEyMw==}\nstringData: {secretKey: s3cr3t-key}\n";
	struct manifest_set set = {0};
	assert_int_equal(manifest_parse(text, strlen(text), "s.yaml", &set, NULL), 0);
	char *id = manifest_secret_value(&set, "ml", "tc", "secretId");
	char *key = manifest_secret_value(&set, "ml", "tc", "secretKey");
	assert_string_equal(id, "AKID123");
	assert_string_equal(key, "s3cr3t-key");
	assert_null(manifest_secret_value(&set, "other", "tc", "secretId"));
	assert_null(manifest_secret_value(&set, "ml", "tc", "token"));
	free(id);
	sp_secure_free(key);
	manifest_set_free(&set);
}

static void test_scalar_typing(void **state)
{
	(void)state;
	const char *text = "a: 1\nb: '1'\nc: true\nd: ~\ne: 1e3\nf: yes\ng: 0x1F\nh: !!str 5\n";
	struct manifest_set set = {0};
	assert_int_equal(manifest_parse(text, strlen(text), "x", &set, NULL), 0);
	cJSON *o = set.docs[0].object;
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "a")));
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "b")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "c")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "d")));
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "e")));
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "f")));  /* YAML 1.2: yes is a string */
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "g")));
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "h")));
	manifest_set_free(&set);
}

static void test_key_lines_are_recorded(void **state)
{
	(void)state;
	const char *text = "a: 1\nb:\n  c: 2\n  d:\n    - x\n    - {e: 3}\n";
	struct manifest_set set = {0};
	assert_int_equal(manifest_parse(text, strlen(text), "x", &set, NULL), 0);
	assert_int_equal(manifest_line_of(&set.docs[0], "a"), 1);
	assert_int_equal(manifest_line_of(&set.docs[0], "b.c"), 3);
	assert_int_equal(manifest_line_of(&set.docs[0], "b.d"), 4);
	assert_int_equal(manifest_line_of(&set.docs[0], "b.d[1].e"), 6);
	assert_int_equal(manifest_line_of(&set.docs[0], "missing"), 0);
	manifest_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_earlier_operator_sample_parses_unchanged),
		cmocka_unit_test(test_several_documents_and_lists),
		cmocka_unit_test(test_json_input_is_accepted),
		cmocka_unit_test(test_bad_values_name_the_field),
		cmocka_unit_test(test_bounds_and_types),
		cmocka_unit_test(test_placement_consistency),
		cmocka_unit_test(test_header_and_metadata_errors),
		cmocka_unit_test(test_garbage_is_rejected_with_location),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_secret_documents_resolve),
		cmocka_unit_test(test_scalar_typing),
		cmocka_unit_test(test_key_lines_are_recorded),
	};
	return cmocka_run_group_tests_name("manifest", tests, NULL, NULL);
}
