/* cvm: error classes, RunInstances request shape, DescribeInstances parsing. */
#include "testutil.h"
#include "cvm.h"
#include "log.h"

static void test_error_classes(void **state)
{
	(void)state;
	static const struct { const char *code; int cls; } cases[] = {
		{"AuthFailure.SignatureFailure", SP_EAUTH},
		{"AuthFailure.SecretIdNotFound", SP_EAUTH},
		{"UnauthorizedOperation", SP_EAUTH},
		{"ResourceInsufficient.SpecifiedInstanceType", SP_ECAPACITY},
		{"ResourcesSoldOut.SpecifiedInstanceType", SP_ECAPACITY},
		{"ResourceInsufficient.AvailabilityZoneSoldOut", SP_ECAPACITY},
		{"ResourceUnavailable.InstanceType", SP_ECAPACITY},
		{"InvalidParameterValue.InsufficientOffering", SP_ECAPACITY},
		{"InvalidParameterValue.InsufficientPrice", SP_ECAPACITY},
		{"LimitExceeded.SpotQuota", SP_ECAPACITY},
		{"LimitExceeded.UserSpotQuota", SP_ECAPACITY},
		{"RequestLimitExceeded", SP_ETHROTTLED},
		{"RequestLimitExceeded.UinLimitExceeded", SP_ETHROTTLED},
		{"InternalError", SP_ETRANSIENT},
		{"InvalidInstanceId.NotFound", SP_ENOTFOUND},
		{"UnsupportedOperation.InstanceStateTerminating", SP_ENOTFOUND},
		{"InvalidParameterValue.Range", SP_ECONFIG},
		{"InvalidZone.MismatchRegion", SP_ECONFIG},
		{"InvalidAction", SP_ECONFIG},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cvm_classify_code(cases[i].code) != cases[i].cls)
			fail_msg("%s classified as %d, want %d", cases[i].code,
				 cvm_classify_code(cases[i].code), cases[i].cls);
}

static struct pool_spec sample_spec(void)
{
	static char *sgs[] = {"sg-1", "sg-2", NULL};
	static struct pool_tag tags[] = {{"team", "ml"}};
	return (struct pool_spec){
		.namespace = "ml", .name = "gpu", .region = "ap-singapore", .zone = "ap-singapore-2",
		.instance_type = "GN7.2XLARGE32", .image_id = "img-1", .charge_type = "SPOTPAID",
		.vpc_id = "vpc-1", .subnet_id = "subnet-1", .security_group_ids = {sgs, 2},
		.max_price = "3.5", .internet_max_bandwidth_out = 10, .tags = tags, .n_tags = 1,
		.minimum = 1, .maximum = 2,
	};
}

static const char *jstr(const cJSON *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	const cJSON *cur = o;
	for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
		cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(tok)) : cJSON_GetObjectItem(cur, tok);
	return cJSON_IsString(cur) ? cur->valuestring : NULL;
}

static void test_run_request_shape(void **state)
{
	(void)state;
	struct pool_spec s = sample_spec();
	struct cvm_launch l = {.spec = &s, .count = 2, .client_token = "tok-1"};
	cJSON *req = cvm_run_request(&l);
	assert_string_equal(jstr(req, "InstanceChargeType"), "SPOTPAID");
	assert_string_equal(jstr(req, "InstanceMarketOptions.MarketType"), "spot");
	assert_string_equal(jstr(req, "InstanceMarketOptions.SpotOptions.MaxPrice"), "3.5");
	assert_string_equal(jstr(req, "InstanceMarketOptions.SpotOptions.SpotInstanceType"), "one-time");
	assert_string_equal(jstr(req, "Placement.Zone"), "ap-singapore-2");
	assert_string_equal(jstr(req, "InstanceType"), "GN7.2XLARGE32");
	assert_string_equal(jstr(req, "ImageId"), "img-1");
	assert_string_equal(jstr(req, "VirtualPrivateCloud.VpcId"), "vpc-1");
	assert_string_equal(jstr(req, "VirtualPrivateCloud.SubnetId"), "subnet-1");
	assert_string_equal(jstr(req, "SecurityGroupIds.1"), "sg-2");
	assert_string_equal(jstr(req, "ClientToken"), "tok-1");
	assert_int_equal(cJSON_GetObjectItem(req, "InstanceCount")->valueint, 2);
	assert_string_equal(jstr(req, "TagSpecification.0.ResourceType"), "instance");
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.0.Key"), POOL_TAG_KEY);
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.0.Value"), "ml/gpu");
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.1.Key"), "team");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(req, "InternetAccessible"), "PublicIpAssigned")));
	assert_null(cJSON_GetObjectItem(req, "DryRun"));
	cJSON_Delete(req);

	l.dry_run = true;
	s.max_price = NULL;
	s.internet_max_bandwidth_out = 0;
	req = cvm_run_request(&l);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(req, "DryRun")));
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(req, "InstanceMarketOptions"), "SpotOptions"));
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(req, "InternetAccessible"), "PublicIpAssigned")));
	cJSON_Delete(req);
}

static void test_parse_instances(void **state)
{
	(void)state;
	cJSON *resp = cJSON_Parse(
		"{\"TotalCount\": 3, \"InstanceSet\": ["
		"{\"InstanceId\": \"ins-1\", \"InstanceState\": \"RUNNING\", \"Placement\": {\"Zone\": \"ap-singapore-2\"},"
		" \"InstanceType\": \"GN7.2XLARGE32\", \"PrivateIpAddresses\": [\"10.0.0.5\"],"
		" \"PublicIpAddresses\": [\"43.1.2.3\"], \"CreatedTime\": \"2026-11-21T11:45:00Z\"},"
		"{\"InstanceId\": \"ins-2\", \"InstanceState\": \"PENDING\", \"PublicIpAddresses\": null,"
		" \"PrivateIpAddresses\": null, \"CreatedTime\": \"2026-11-21T19:45:00+08:00\"},"
		"{\"InstanceId\": \"ins-1\", \"InstanceState\": \"RUNNING\"}]}");
	struct pool_instance *list = NULL;
	size_t n = 0, total = 0;
	assert_int_equal(cvm_parse_instances(resp, &list, &n, &total, NULL), 0);
	assert_int_equal(total, 3);
	assert_int_equal(n, 2); /* the repeated ins-1 (paging over a changing set) is dropped */
	assert_string_equal(list[0].public_ip, "43.1.2.3");
	assert_string_equal(list[0].private_ip, "10.0.0.5");
	assert_string_equal(list[0].zone, "ap-singapore-2");
	assert_string_equal(list[1].public_ip, "");
	assert_int_equal(list[0].created, list[1].created);
	free(list);
	cJSON_Delete(resp);
}

static void test_parse_rejects_malformed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{}", "{\"TotalCount\": \"3\", \"InstanceSet\": []}",
		"{\"TotalCount\": 1, \"InstanceSet\": [{\"InstanceState\": \"RUNNING\"}]}",
		"{\"TotalCount\": 1, \"InstanceSet\": [{\"InstanceId\": \"ins-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"InstanceState\": \"RUNNING\"}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *resp = cJSON_Parse(bad[i]);
		struct pool_instance *list = NULL;
		size_t n = 0, total = 0;
		struct sp_error err = {0};
		assert_int_equal(cvm_parse_instances(resp, &list, &n, &total, &err), SP_EPROTO);
		assert_contains(err.msg, "DescribeInstances: malformed");
		free(list);
		cJSON_Delete(resp);
	}
}

static void test_parse_time(void **state)
{
	(void)state;
	assert_int_equal(cvm_parse_time("1970-01-01T00:01:00Z"), 60);
	assert_int_equal(cvm_parse_time("1970-01-01T08:01:00+08:00"), 60);
	assert_int_equal(cvm_parse_time("garbage"), 0);
	assert_int_equal(cvm_parse_time(NULL), 0);
}

static void test_redaction(void **state)
{
	(void)state;
	log_add_secret("Gu5t9xGARNpq86cd98joQYCN3EXAMPLE");
	char msg[128] = "key=Gu5t9xGARNpq86cd98joQYCN3EXAMPLE and again Gu5t9xGARNpq86cd98joQYCN3EXAMPLE";
	log_redact(msg, sizeof(msg));
	assert_string_equal(msg, "key=[redacted] and again [redacted]");
	char tight[40] = "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE";
	log_redact(tight, 34);
	assert_null(strstr(tight, "Gu5t9x"));
	/* A rotated token is forgotten: it is no longer redacted, nor kept in memory. */
	log_remove_secret("Gu5t9xGARNpq86cd98joQYCN3EXAMPLE");
	char after[64] = "old Gu5t9xGARNpq86cd98joQYCN3EXAMPLE";
	log_redact(after, sizeof(after));
	assert_string_equal(after, "old Gu5t9xGARNpq86cd98joQYCN3EXAMPLE");
	log_shutdown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_classes),
		cmocka_unit_test(test_run_request_shape),
		cmocka_unit_test(test_parse_instances),
		cmocka_unit_test(test_parse_rejects_malformed),
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_redaction),
	};
	return cmocka_run_group_tests_name("cvm", tests, NULL, NULL);
}
