/* manifest + pool: YAML reading and validation as strict as the CRD. */
#include "testutil.h"
#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <unistd.h>


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
	/* Validation errors name the document; reading errors the line. */
	if (!strstr(err.msg, "t.yaml: document 1 (gpu): ") && !strstr(err.msg, "t.yaml: line "))
		fail_msg("\"%s\" names neither the document nor the line", err.msg);
}

static void test_earlier_operator_sample_parses_unchanged(void **state)
{
	(void)state;
	struct manifest_set set = {0};
	struct sp_error err = {0};
	/* Unit tests run from the repository root (tests/run-tests). */
	int r = manifest_load_file("examples/earlier-operator-sample.yaml", &set, &err);
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

/* What an example's name promises, so it keeps showing that feature. */
static void check_example_shows(const char *file, const struct pool_spec *p)
{
	if (strcmp(file, "first-pool.yaml") == 0) {
		assert_non_null(p->credentials_secret);
		assert_null(p->secret_id);
	} else if (strcmp(file, "offerings-spread.yaml") == 0) {
		assert_int_equal(p->allocation, POOL_SPREAD);
		assert_true(p->zones.n > 0 && p->instance_types.n > 0);
	} else if (strcmp(file, "replicas-pool.yaml") == 0) {
		assert_true(p->has_replicas);
	}
}

/* Every manifest in examples/ reads and validates as strictly as the CRD, so an example
 * that drifts from the schema fails the suite (every problem is printed). */
static void test_every_example_validates(void **state)
{
	(void)state;
	DIR *dir = opendir("examples");
	if (!dir)
		fail_msg("examples/: %s (unit tests run from the repository root)", strerror(errno));
	size_t files = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		const char *dot = strrchr(e->d_name, '.');
		if (e->d_name[0] == '.' || !dot || (strcmp(dot, ".yaml") && strcmp(dot, ".yml") && strcmp(dot, ".json")))
			continue;
		char path[512];
		snprintf(path, sizeof(path), "examples/%s", e->d_name);
		struct manifest_set set = {0};
		struct sp_error err = {0};
		if (manifest_load_file(path, &set, &err) != 0)
			fail_msg("%s", err.msg);
		struct manifest_errors errs = {0};
		struct pool_spec **pools = NULL;
		size_t n = 0;
		if (manifest_pools_all(&set, &pools, &n, &errs) != 0) {
			for (size_t i = 0; i < errs.n; i++)
				print_error("%s\n", errs.list.v[i]);
			fail_msg("%s: %zu problem(s)", path, errs.n);
		}
		if (n == 0)
			fail_msg("%s: no Spotpool document", path);
		for (size_t i = 0; i < n; i++)
			check_example_shows(e->d_name, pools[i]);
		free_pools(pools, n);
		manifest_set_free(&set);
		files++;
	}
	closedir(dir);
	/* earlier-operator-sample, first-pool, offerings-spread, replicas-pool at least. */
	assert_true(files >= 4);
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
	expect_error("  minimumm: 2\n", "spec.minimumm: unknown field (did you mean \"minimum\"?)");
	expect_error("  zzzzzz: 2\n", "spec.zzzzzz: unknown field (line 11)");
	expect_error("  systemDisk: {diskSise: 50}\n", "spec.systemDisk.diskSise: unknown field (did you mean \"diskSize\"?)");
	expect_error("  credentialsSecretRef: {nmae: tc}\n",
		     "spec.credentialsSecretRef.nmae: unknown field (did you mean \"name\"?)");
	expect_error("spce: {}\n", "spce: unknown field (did you mean \"spec\"?)");
	expect_error("metdata: {}\n", "metdata: unknown field (did you mean \"metadata\"?)");
	/* An out-of-range number is echoed as written, not as a double prints. */
	expect_error("  replicas: 100000000000000000000000\n", "got 100000000000000000000000");
	expect_error("  replicas: 1.50\n", "must be an integer, got 1.50");
	expect_error("  deletionPolicy: Keep\n", "spec.deletionPolicy: must be Delete or Retain");
	expect_error("  vpcId: vpc-1\n", "spec.subnetId: required together with spec.vpcId");
	expect_error("  secretKey: abcdef\n", "spec.secretId: required together with spec.secretKey");
	expect_error("  secretId: a\n  secretKey: abcdef\n  credentialsSecretRef: {name: s}\n",
		     "spec.credentialsSecretRef: cannot be combined");
	expect_error("  userData: '###'\n", "spec.userData: must be base64");
	expect_error("  tags: {spotpool.jokerbai.com/pool: x}\n", "reserved for pool ownership");
	expect_error("  systemDisk: {diskSize: 5}\n", "spec.systemDisk.diskSize: must be between 20 and 32000");
	expect_error("  internetMaxBandwidthOut: -1\n", "spec.internetMaxBandwidthOut");
	expect_error("  minimum: 2\n", "line 11: duplicate key \"minimum\" (first on line 9)");
	expect_error("  tags: {a: 1}\n", "spec.tags.a: must be a string, got number");
	expect_error("  securityGroupIds: [sg-1, sg-2, sg-3, sg-4, sg-5, sg-6]\n",
		     "spec.securityGroupIds: 6 items, more than the maximum 5");
	expect_error("  imageId2: x\n", "(line 11)");
}

/* instanceTypes, availabilityZones and allocationStrategy: read, defaulted, and each
 * problem named with its field and index. */
static void test_offering_fields(void **state)
{
	(void)state;
	char text[4096];
	snprintf(text, sizeof(text), "%s  instanceTypes: [GN10X.2XLARGE40, GN7.5XLARGE80]\n"
		 "  availabilityZones: [ap-singapore-3, ap-singapore-4]\n  allocationStrategy: spread\n", base);
	struct pool_spec **pools = NULL;
	size_t n = 0;
	struct sp_error err = {0};
	assert_int_equal(load(text, &pools, &n, &err), 0);
	struct pool_spec *p = pools[0];
	assert_int_equal(p->instance_types.n, 2);
	assert_string_equal(p->instance_types.v[0], "GN10X.2XLARGE40");
	assert_string_equal(p->instance_types.v[1], "GN7.5XLARGE80");
	assert_int_equal(p->zones.n, 2);
	assert_string_equal(p->zones.v[1], "ap-singapore-4");
	assert_int_equal(p->allocation, POOL_SPREAD);
	free_pools(pools, n);
	/* Seed fields only: no further choices, prioritized. */
	assert_int_equal(load(base, &pools, &n, &err), 0);
	assert_int_equal(pools[0]->instance_types.n, 0);
	assert_int_equal(pools[0]->zones.n, 0);
	assert_int_equal(pools[0]->allocation, POOL_PRIORITIZED);
	free_pools(pools, n);
	snprintf(text, sizeof(text), "%s  allocationStrategy: prioritized\n  instanceTypes: []\n", base);
	assert_int_equal(load(text, &pools, &n, &err), 0);
	assert_int_equal(pools[0]->allocation, POOL_PRIORITIZED);
	free_pools(pools, n);

	expect_error("  availabilityZones: [ap-singapore-3, ap-guangzhou-3]\n",
		     "spec.availabilityZones[1]: \"ap-guangzhou-3\" is not a zone of region ap-singapore");
	expect_error("  availabilityZones: [ap-singapore-]\n", "spec.availabilityZones[0]: \"ap-singapore-\" is not a zone");
	expect_error("  availabilityZones: [ap-singapore-3, ap-singapore-3]\n",
		     "spec.availabilityZones[1]: \"ap-singapore-3\" is listed twice (also at [0])");
	expect_error("  availabilityZones: [ap-singapore-2]\n",
		     "spec.availabilityZones[0]: \"ap-singapore-2\" repeats spec.availabilityZone");
	expect_error("  availabilityZones: ap-singapore-3\n", "spec.availabilityZones: must be a list of strings, got string");
	expect_error("  availabilityZones: [ap-singapore-3, 4]\n", "spec.availabilityZones[1]: must be a string, got number");
	expect_error("  availabilityZones: [ap-singapore-1, ap-singapore-3, ap-singapore-4, ap-singapore-5, "
		     "ap-singapore-6, ap-singapore-7, ap-singapore-8, ap-singapore-9, ap-singapore-10, "
		     "ap-singapore-11, ap-singapore-12]\n", "spec.availabilityZones: 11 items, more than the maximum 10");
	expect_error("  instanceTypes: [GN7.5XLARGE80, 'GN7 LARGE']\n",
		     "spec.instanceTypes[1]: \"GN7 LARGE\" is not an instance type");
	expect_error("  instanceTypes: [GN7.5XLARGE80, GN7.5XLARGE80]\n",
		     "spec.instanceTypes[1]: \"GN7.5XLARGE80\" is listed twice");
	expect_error("  instanceTypes: [GN7.2XLARGE32]\n",
		     "spec.instanceTypes[0]: \"GN7.2XLARGE32\" repeats spec.instanceType");
	expect_error("  instanceTypes: ['']\n", "spec.instanceTypes[0]: 0 characters, must be 1 to 64");
	expect_error("  instanceTypes: [A, B, C, D, E, F, G, H, I, J, K]\n",
		     "spec.instanceTypes: 11 items, more than the maximum 10");
	expect_error("  allocationStrategy: balanced\n",
		     "spec.allocationStrategy: must be prioritized or spread, got \"balanced\"");
	expect_error("  allocationStrategy: Spread\n", "spec.allocationStrategy: must be prioritized or spread");
	/* Ten of each is the maximum. */
	snprintf(text, sizeof(text), "%s  instanceTypes: [A, B, C, D, E, F, G, H, I, J]\n"
		 "  availabilityZones: [ap-singapore-1, ap-singapore-3, ap-singapore-4, ap-singapore-5, "
		 "ap-singapore-6, ap-singapore-7, ap-singapore-8, ap-singapore-9, ap-singapore-10, "
		 "ap-singapore-11]\n", base);
	assert_int_equal(load(text, &pools, &n, &err), 0);
	assert_int_equal(pools[0]->instance_types.n, 10);
	assert_int_equal(pools[0]->zones.n, 10);
	free_pools(pools, n);
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

/* Parses len bytes of text as file `source`; returns the code and fills err. */
static int parse_only(const char *text, size_t len, const char *source, struct sp_error *err)
{
	struct manifest_set set = {0};
	int r = manifest_parse(text, len, source, &set, err);
	manifest_set_free(&set);
	return r;
}

/* Parses text as file `source` and validates its Spotpools, collecting every problem. */
static int check_all(const char *text, const char *source, struct manifest_errors *errs)
{
	struct manifest_set set = {0};
	assert_int_equal(manifest_parse(text, strlen(text), source, &set, NULL), 0);
	struct pool_spec **pools = NULL;
	size_t n = 0;
	int r = manifest_pools_all(&set, &pools, &n, errs);
	if (r == 0)
		free_pools(pools, n);
	manifest_set_free(&set);
	return r;
}

/* Builds a document of mappings nested `levels` deep (the document itself is level 1). */
static char *nested(int levels)
{
	char *text = xmalloc((size_t)levels * 5 + 16), *t = text;
	for (int i = 0; i < levels; i++)
		t += sprintf(t, "{a: ");
	t += sprintf(t, "1");
	for (int i = 0; i < levels; i++)
		t += sprintf(t, "}");
	return text;
}

static void test_cap_nesting_depth(void **state)
{
	(void)state;
	struct sp_error err = {0};
	char *ok = nested(MANIFEST_DEPTH_MAX);
	assert_int_equal(parse_only(ok, strlen(ok), "deep.yaml", &err), 0);
	char *deep = nested(MANIFEST_DEPTH_MAX + 1);
	assert_int_equal(parse_only(deep, strlen(deep), "deep.yaml", &err), SP_EINVAL);
	assert_contains(err.msg, "deep.yaml: line 1: nesting deeper than 64 levels");
	/* Flow lists nest the same way, and the line is where the too-deep node starts. */
	const char *lists = "a:\n  b: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n";
	assert_int_equal(parse_only(lists, strlen(lists), "deep.yaml", &err), SP_EINVAL);
	assert_contains(err.msg, "deep.yaml: line 2: nesting deeper than 64 levels");
	free(ok);
	free(deep);
}

/* n keys in one flow mapping on line 2, as the value of "big". */
static char *many_keys(size_t n, size_t *ret_len)
{
	char *text = xmalloc(n * 16 + 64), *t = text;
	t += sprintf(t, "kind: Big\nbig: {");
	for (size_t i = 0; i < n; i++)
		t += sprintf(t, "%sk%zu: 1", i ? ", " : "", i);
	t += sprintf(t, "}\n");
	*ret_len = (size_t)(t - text);
	return text;
}

static void test_cap_key_count(void **state)
{
	(void)state;
	struct manifest_set set = {0};
	struct sp_error err = {0};
	size_t len;
	/* Two keys (kind, big) besides the mapping's own. */
	char *ok = many_keys(MANIFEST_KEYS_MAX - 2, &len);
	assert_int_equal(manifest_parse(ok, len, "keys.yaml", &set, &err), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(set.docs[0].object, "big")), MANIFEST_KEYS_MAX - 2);
	assert_int_equal(manifest_line_of(&set.docs[0], "big.k99997"), 2);
	manifest_set_free(&set);
	char *over = many_keys(MANIFEST_KEYS_MAX - 1, &len);
	assert_int_equal(parse_only(over, len, "keys.yaml", &err), SP_EINVAL);
	assert_contains(err.msg, "keys.yaml: line 2: more than 100000 keys and list items (the limit per file)");
	/* List items count too. */
	char *items = xmalloc(2 * MANIFEST_KEYS_MAX + 16), *t = items;
	t += sprintf(t, "a: [");
	for (int i = 0; i < MANIFEST_KEYS_MAX; i++)
		t += sprintf(t, "1,");
	t += sprintf(t, "1]\n");
	assert_int_equal(parse_only(items, (size_t)(t - items), "list.yaml", &err), SP_EINVAL);
	assert_contains(err.msg, "list.yaml: line 1: more than 100000 keys and list items");
	free(items);
	free(ok);
	free(over);
}

static void test_cap_file_size(void **state)
{
	(void)state;
	char path[] = "/tmp/spotpool-test-big-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	for (int i = 0; i < MANIFEST_FILE_MAX / 16 + 1; i++)
		fputs("# padding......\n", f);
	fclose(f);
	struct manifest_set set = {0};
	struct sp_error err = {0};
	assert_int_equal(manifest_load_file(path, &set, &err), SP_EINVAL);
	assert_contains(err.msg, path);
	assert_contains(err.msg, "larger than 4 MiB (the limit per file)");
	unlink(path);
}

/* check_all(text, source) reports exactly want (n of them), in order. */
static void assert_all_errors(const char *text, const char *source, const char *const *want, size_t n)
{
	struct manifest_errors errs = {0};
	assert_int_equal(check_all(text, source, &errs), SP_EINVAL);
	assert_int_equal(errs.n, n);
	for (size_t i = 0; i < errs.n; i++)
		assert_string_equal(errs.list.v[i], want[i]);
	manifest_errors_clear(&errs);
}

/* Every problem of every document, with file, document, name, field and line. */
static void test_every_error_is_reported(void **state)
{
	(void)state;
	const char *text =
		"apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: a}\nspec:\n"
		"  region: ap-singapore\n  availabilityZone: ap-tokyo-1\n  instanceType: GN7.2XLARGE32\n"
		"  imageId: img-1\n  minimum: 1\n  maximum: 2\n  replicas: 5\n"
		"---\n"
		"apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata:\n  name: spotpool-b\nspec:\n"
		"  region: ap-singapore\n  availabilityZone: ap-singapore-2\n  instanceType: GN7.2XLARGE32\n"
		"  imageId: img-1\n  minimum: -1\n  maximum: abc\n  bogus: 1\n"
		"---\n"
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ignored}\n"
		"---\n"
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: devops.jokerbai.com/v1\n  kind: Spotpool\n"
		"  metadata: {name: c}\n  spec: {region: ap-singapore, availabilityZone: ap-singapore-1,\n"
		"    instanceType: GN7.2XLARGE32, imageId: img-1,\n    minimum: 3, maximum: 1}\n";
	static const char *const want[] = {
		"pool.yaml: document 1 (a): spec.availabilityZone: \"ap-tokyo-1\" is not a zone of region "
		"ap-singapore (expected ap-singapore-N) (line 6)",
		"pool.yaml: document 1 (a): spec.replicas: 5 is outside [minimum 1, maximum 2] (line 11)",
		"pool.yaml: document 2 (spotpool-b): spec.bogus: unknown field (line 24)",
		"pool.yaml: document 2 (spotpool-b): spec.minimum: must be between 0 and 1000, got -1 (line 22)",
		"pool.yaml: document 2 (spotpool-b): spec.maximum: must be an integer, got string \"abc\" (line 23)",
		"pool.yaml: document 4 (c): spec.minimum: 3 is greater than spec.maximum 1 (line 38)",
	};
	assert_all_errors(text, "pool.yaml", want, sizeof(want) / sizeof(want[0]));
	/* The first-error API reports the first of them. */
	struct manifest_set set = {0};
	struct pool_spec **pools = NULL;
	size_t n = 0;
	struct sp_error err = {0};
	assert_int_equal(manifest_parse(text, strlen(text), "pool.yaml", &set, NULL), 0);
	assert_int_equal(manifest_pools(&set, &pools, &n, &err), SP_EINVAL);
	assert_string_equal(err.msg, want[0]);
	manifest_set_free(&set);
}

/* Every problem with the offering fields is reported, each with its line. */
static void test_offering_errors_all_reported(void **state)
{
	(void)state;
	const char *text =
		"apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: a}\nspec:\n"
		"  region: ap-singapore\n  availabilityZone: ap-singapore-2\n  instanceType: GN7.2XLARGE32\n"
		"  imageId: img-1\n  minimum: 1\n  maximum: 2\n"
		"  availabilityZones:\n  - ap-singapore-3\n  - ap-guangzhou-3\n"
		"  instanceTypes: [GN7.2XLARGE32]\n  allocationStrategy: fastest\n";
	static const char *const want[] = {
		"p.yaml: document 1 (a): spec.availabilityZones[1]: \"ap-guangzhou-3\" is not a zone of region "
		"ap-singapore (expected ap-singapore-N) (line 11)",  /* an item: the list's line */
		"p.yaml: document 1 (a): spec.instanceTypes[0]: \"GN7.2XLARGE32\" repeats spec.instanceType "
		"(list only the further choices) (line 14)",
		"p.yaml: document 1 (a): spec.allocationStrategy: must be prioritized or spread, got \"fastest\" "
		"(line 15)",
	};
	assert_all_errors(text, "p.yaml", want, sizeof(want) / sizeof(want[0]));
}

static void test_missing_field_points_at_its_parent(void **state)
{
	(void)state;
	const char *text = "apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: a}\n\nspec:\n"
			   "  region: ap-singapore\n  availabilityZone: ap-singapore-1\n  imageId: img-1\n"
			   "  maximum: 1\n";
	struct manifest_errors errs = {0};
	assert_int_equal(check_all(text, "p.yaml", &errs), SP_EINVAL);
	assert_int_equal(errs.n, 2);
	assert_string_equal(errs.list.v[0], "p.yaml: document 1 (a): spec.instanceType: required field is missing (line 5)");
	assert_string_equal(errs.list.v[1], "p.yaml: document 1 (a): spec.minimum: required field is missing (line 5)");
	manifest_errors_clear(&errs);
}

static void test_errors_per_document_are_capped(void **state)
{
	(void)state;
	char text[8192];
	int n = snprintf(text, sizeof(text), "apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\n"
			 "metadata: {name: a}\nspec: {region: ap-singapore, availabilityZone: ap-singapore-1, "
			 "instanceType: T, imageId: img-1, minimum: 0, maximum: 1");
	for (int i = 0; i < POOL_ERRORS_MAX + 5; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, ", bad%d: 1", i);
	snprintf(text + n, sizeof(text) - (size_t)n, "}\n");
	struct manifest_errors errs = {0};
	assert_int_equal(check_all(text, "p.yaml", &errs), SP_EINVAL);
	assert_int_equal(errs.n, POOL_ERRORS_MAX + 1);
	assert_contains(errs.list.v[POOL_ERRORS_MAX], "... and 5 more problem(s)");
	manifest_errors_clear(&errs);
}

static void test_missing_file(void **state)
{
	(void)state;
	struct manifest_set set = {0};
	struct sp_error err = {0};
	assert_int_equal(manifest_load_file("/nonexistent/pool.yaml", &set, &err), SP_EIO);
	assert_contains(err.msg, "/nonexistent/pool.yaml");
}

/* Looks up key in ns/tc among text's documents; returns the code and fills msg. */
static int secret_problem(const char *secret_yaml, const char *key, bool optional, char *msg)
{
	char text[1024];
	snprintf(text, sizeof(text), "apiVersion: v1\nkind: Secret\nmetadata: {name: tc, namespace: ml}\n%s", secret_yaml);
	struct manifest_set set = {0};
	assert_int_equal(manifest_parse(text, strlen(text), "s.yaml", &set, NULL), 0);
	struct sp_error err = {0};
	char *value = (char *)"untouched";
	int r = manifest_secret_lookup(&set, "ml", "tc", key, optional, &value, &err);
	if (r < 0)
		assert_string_equal(value, "untouched");
	else if (value && strcmp(value, "untouched") != 0)
		sp_secure_free(value);
	strcpy(msg, err.msg);
	manifest_set_free(&set);
	return r;
}

static void test_secret_problems_are_precise(void **state)
{
	(void)state;
	char msg[SP_ERROR_MAX];
	assert_int_equal(secret_problem("data: {secretId: QUtJRA==}\n", "secretId", false, msg), 0);
	/* Wrong name or namespace: not found. */
	struct manifest_set set = {0};
	struct sp_error err = {0};
	char *value = NULL;
	const char *other = "apiVersion: v1\nkind: Secret\nmetadata: {name: tc}\ndata: {secretId: QUtJRA==}\n";
	assert_int_equal(manifest_parse(other, strlen(other), "s.yaml", &set, NULL), 0);
	assert_int_equal(manifest_secret_lookup(&set, "ml", "tc", "secretId", false, &value, &err), SP_ENOTFOUND);
	assert_string_equal(err.msg, "Secret ml/tc: not found");
	manifest_set_free(&set);
	/* Key absent: names the key and the keys that are there (never values). */
	assert_int_equal(secret_problem("data: {secretId: QUtJRA==, token: dA==}\n", "secretKey", false, msg), SP_EINVAL);
	assert_string_equal(msg, "Secret ml/tc (s.yaml, document 1): key \"secretKey\" is absent "
			    "(keys present: secretId, token)");
	assert_int_equal(secret_problem("type: Opaque\n", "secretId", false, msg), SP_EINVAL);
	assert_contains(msg, "key \"secretId\" is absent (keys present: none)");
	/* Empty, in data or stringData. */
	assert_int_equal(secret_problem("data:\n  secretId: \"\"\n", "secretId", false, msg), SP_EINVAL);
	assert_string_equal(msg, "Secret ml/tc (s.yaml, line 5): key \"secretId\" is empty");
	assert_int_equal(secret_problem("stringData: {secretKey: ''}\n", "secretKey", false, msg), SP_EINVAL);
	assert_contains(msg, "key \"secretKey\" is empty");
	/* Not base64, not a string. */
	assert_int_equal(secret_problem("data: {secretId: \"not base64!\"}\n", "secretId", false, msg), SP_EINVAL);
	assert_string_equal(msg, "Secret ml/tc (s.yaml, line 4): data.secretId: not valid base64 (put plain "
			    "text under stringData)");
	assert_int_equal(secret_problem("stringData: {secretId: 42}\n", "secretId", false, msg), SP_EINVAL);
	assert_contains(msg, "stringData.secretId: must be a string");
	/* An optional key (token) may be absent or empty. */
	assert_int_equal(secret_problem("data: {secretId: QUtJRA==}\n", "token", true, msg), 0);
	assert_int_equal(secret_problem("data: {token: \"\"}\n", "token", true, msg), 0);
	assert_int_equal(secret_problem("data: {token: \"@@\"}\n", "token", true, msg), SP_EINVAL);
	/* No message carries a value. */
	assert_int_equal(secret_problem("stringData: {secretKey: hunter2-value}\ndata: {secretId: \"!\"}\n",
					"secretId", false, msg), SP_EINVAL);
	assert_null(strstr(msg, "hunter2"));
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
	/* stringData wins over data, as the apiserver merges it. */
	const char *both = "apiVersion: v1\nkind: Secret\nmetadata: {name: tc2, namespace: ml}\n"
			   "data: {secretId: QUtJRDEyMw==}\nstringData: {secretId: plain}\n";
	assert_int_equal(manifest_parse(both, strlen(both), "s.yaml", &set, NULL), 0);
	char *plain = manifest_secret_value(&set, "ml", "tc2", "secretId");
	assert_string_equal(plain, "plain");
	free(plain);
	free(id);
	sp_secure_free(key);
	manifest_set_free(&set);
}

static void test_scalar_typing(void **state)
{
	(void)state;
	const char *text = "a: 1\nb: '1'\nc: true\nd: ~\ne: 1e3\nf: yes\ng: 0x1F\nh: !!str 5\n"
			   "i: NULL\nj: False\nk: -.5\nl: +2.\nm: 1e\nn: .\no: 1.5E-3\np: e3\nq: TRUE\nr: nULL\n";
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
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "i")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "j")));
	assert_true(cJSON_GetObjectItem(o, "k")->valuedouble == -0.5);
	assert_true(cJSON_GetObjectItem(o, "l")->valuedouble == 2);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "m")));
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "n")));
	assert_true(cJSON_GetObjectItem(o, "o")->valuedouble == 1.5e-3);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "p")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "q")));
	assert_true(cJSON_IsString(cJSON_GetObjectItem(o, "r")));
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
	/* Items of a List keep their lines, without the items[i]. prefix. */
	const char *list = "kind: List\nitems:\n- kind: A\n  x: 1\n- kind: B\n  y:\n    z: 2\n";
	assert_int_equal(manifest_parse(list, strlen(list), "x", &set, NULL), 0);
	assert_int_equal(set.n, 2);
	assert_int_equal(manifest_line_of(&set.docs[0], "x"), 4);
	assert_int_equal(manifest_line_of(&set.docs[1], "y.z"), 7);
	assert_int_equal(manifest_line_of(&set.docs[1], "x"), 0);
	manifest_set_free(&set);
	/* Paths past MANIFEST_PATH_MAX are not recorded (nor anything below them). */
	char text2[2048];
	char longkey[MANIFEST_PATH_MAX + 1];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	snprintf(text2, sizeof(text2), "a: 1\n%s:\n  b: 2\n", longkey);
	assert_int_equal(manifest_parse(text2, strlen(text2), "x", &set, NULL), 0);
	assert_int_equal(manifest_line_of(&set.docs[0], "a"), 1);
	assert_int_equal(set.docs[0].n_lines, 1);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(set.docs[0].object, longkey), "b"));
	manifest_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_earlier_operator_sample_parses_unchanged),
		cmocka_unit_test(test_every_example_validates),
		cmocka_unit_test(test_several_documents_and_lists),
		cmocka_unit_test(test_json_input_is_accepted),
		cmocka_unit_test(test_bad_values_name_the_field),
		cmocka_unit_test(test_offering_fields),
		cmocka_unit_test(test_offering_errors_all_reported),
		cmocka_unit_test(test_bounds_and_types),
		cmocka_unit_test(test_placement_consistency),
		cmocka_unit_test(test_header_and_metadata_errors),
		cmocka_unit_test(test_garbage_is_rejected_with_location),
		cmocka_unit_test(test_cap_nesting_depth),
		cmocka_unit_test(test_cap_key_count),
		cmocka_unit_test(test_cap_file_size),
		cmocka_unit_test(test_every_error_is_reported),
		cmocka_unit_test(test_missing_field_points_at_its_parent),
		cmocka_unit_test(test_errors_per_document_are_capped),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_secret_problems_are_precise),
		cmocka_unit_test(test_secret_documents_resolve),
		cmocka_unit_test(test_scalar_typing),
		cmocka_unit_test(test_key_lines_are_recorded),
	};
	return cmocka_run_group_tests_name("manifest", tests, NULL, NULL);
}
