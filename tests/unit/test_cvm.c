/* cvm: error classes, RunInstances request shape, DescribeInstances parsing, and the
 * client against a fake endpoint: canned reply + expected request/outcome. */
#include "testutil.h"
#include "cvm.h"
#include "log.h"
#include "rate.h"

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A fake CVM endpoint on loopback. Each request gets the next canned reply (or one
 * computed by answer()); requests are recorded for the test to check. One connection
 * per request. */
struct canned {
	const char *body;
	int status;    /* 0: 200 */
	int delay_ms;  /* hold the reply this long */
};

#define FAKE_MAX_REQUESTS 256

struct fake {
	int fd, port;
	pthread_t thread;
	atomic_int stop;
	const struct canned *script;
	size_t n_script;
	/* Computes a reply instead of the script: returns a malloc'd body. */
	char *(*answer)(struct fake *f, const cJSON *request, int *status, int *delay_ms);
	void *userdata;
	atomic_size_t n;  /* requests received (may exceed FAKE_MAX_REQUESTS) */
	char actions[FAKE_MAX_REQUESTS][32];
	char scopes[FAKE_MAX_REQUESTS][64];    /* the credential scope's "<service> <version>" */
	cJSON *requests[FAKE_MAX_REQUESTS];
	struct rate *rate;  /* the clients' limiter, new with each fake_start */
};

static const struct cvm_credentials test_cred = {.secret_id = "AKIDtest", .secret_key = "testkey"};

static char *read_request(int fd)
{
	size_t cap = 1 << 20;
	char *buf = malloc(cap + 1);
	if (test_read_request(fd, buf, cap + 1))
		return buf;
	free(buf);
	return NULL;
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	while (!atomic_load(&f->stop)) {
		struct pollfd p = {.fd = f->fd, .events = POLLIN};
		if (poll(&p, 1, 20) <= 0)
			continue;
		int conn = accept(f->fd, NULL, NULL);
		char *req = conn >= 0 ? read_request(conn) : NULL;
		if (!req) {
			if (conn >= 0)
				close(conn);
			continue;
		}
		size_t i = atomic_load(&f->n);
		cJSON *body = cJSON_Parse(strstr(req, "\r\n\r\n") + 4);
		char action[32] = "";
		char *a = strcasestr(req, "\r\nX-TC-Action: ");
		if (a)
			sscanf(a + 15, "%31[A-Za-z]", action);
		int status = 200, delay = 0;
		char *reply;
		if (f->answer) {
			reply = f->answer(f, body, &status, &delay);
		} else if (i < f->n_script) {
			reply = strdup(f->script[i].body);
			status = f->script[i].status ? f->script[i].status : 200;
			delay = f->script[i].delay_ms;
		} else {
			reply = strdup("{\"Response\": {\"Error\": {\"Code\": \"TestScriptExhausted\"}}}");
		}
		char service[16] = "", version[16] = "";
		char *scope = strstr(req, "Credential=");
		if (scope)
			sscanf(scope, "Credential=%*[^/]/%*[^/]/%15[^/]", service);
		char *v = strcasestr(req, "\r\nX-TC-Version: ");
		if (v)
			sscanf(v + 16, "%15[0-9-]", version);
		if (i < FAKE_MAX_REQUESTS) {
			snprintf(f->actions[i], sizeof(f->actions[i]), "%s", action);
			snprintf(f->scopes[i], sizeof(f->scopes[i]), "%s %s", service, version);
			f->requests[i] = body;
		} else {
			cJSON_Delete(body);
		}
		atomic_store(&f->n, i + 1);
		/* Hold the reply, but give up once the client has gone (an aborted call). */
		bool gone = false;
		for (int64_t until = sp_mono_ms() + delay; !gone && !atomic_load(&f->stop) && sp_mono_ms() < until;) {
			struct pollfd c = {.fd = conn, .events = POLLRDHUP};
			gone = poll(&c, 1, 10) > 0;
		}
		char head[160];
		int hn = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
				  "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, strlen(reply));
		if (!gone && (send(conn, head, (size_t)hn, MSG_NOSIGNAL) < 0 ||
			      send(conn, reply, strlen(reply), MSG_NOSIGNAL) < 0))
			fprintf(stderr, "fake: write failed\n");
		free(reply);
		free(req);
		close(conn);
	}
	return NULL;
}

static void fake_start(struct fake *f)
{
	f->fd = test_listen_loopback(16, &f->port);
	f->rate = rate_new(&(struct rate_config){0});
	assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
	atomic_store(&f->stop, 1);
	pthread_join(f->thread, NULL);
	close(f->fd);
}

/* Forgets the recorded requests and the limiter, once the test has looked at them. */
static void fake_free(struct fake *f)
{
	for (size_t i = 0; i < FAKE_MAX_REQUESTS && i < atomic_load(&f->n); i++)
		cJSON_Delete(f->requests[i]);
	rate_free(f->rate);
	*f = (struct fake){0};
}

static struct cvm_client *fake_client(const struct fake *f, int max_attempts)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f->port);
	struct cvm_config cfg = {.endpoint = url, .max_attempts = max_attempts, .timeout_ms = 30000,
				 .rate = f->rate};
	return cvm_client_new(&cfg);
}

static double num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* {"Response": {"TotalCount": total, "InstanceSet": [ins-<first> .. +count)}} as owned text. */
/* Appends a RUNNING instance ins-<number> with the owner tag value owner. */
static void add_owned_instance(cJSON *set, int number, const char *owner)
{
	cJSON *in = cJSON_CreateObject();
	char id[32];
	snprintf(id, sizeof(id), "ins-%08d", number);
	cJSON_AddStringToObject(in, "InstanceId", id);
	cJSON_AddStringToObject(in, "InstanceState", "RUNNING");
	cJSON *tag = cJSON_CreateObject();
	cJSON_AddStringToObject(tag, "Key", POOL_TAG_KEY);
	cJSON_AddStringToObject(tag, "Value", owner);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(in, "Tags"), tag);
	cJSON_AddItemToArray(set, in);
}

static char *page_json(double total, int first, int count)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *resp = cJSON_AddObjectToObject(root, "Response");
	cJSON_AddNumberToObject(resp, "TotalCount", total);
	cJSON *set = cJSON_AddArrayToObject(resp, "InstanceSet");
	for (int i = first; i < first + count; i++)
		add_owned_instance(set, i, "ml/gpu");
	cJSON_AddStringToObject(resp, "RequestId", "req-1");
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

static void test_error_classes(void **state)
{
	(void)state;
	static const struct { const char *code; int cls; } cases[] = {
		{"AuthFailure.SignatureFailure", SP_EAUTH},
		{"AuthFailure.SecretIdNotFound", SP_EAUTH},
		{"UnauthorizedOperation", SP_EAUTH},
		{"UnauthorizedOperation.PermissionDenied", SP_EAUTH},
		{"ResourceInsufficient.SpecifiedInstanceType", SP_ECAPACITY},
		{"ResourcesSoldOut.SpecifiedInstanceType", SP_ECAPACITY},
		{"ResourceInsufficient.AvailabilityZoneSoldOut", SP_ECAPACITY},
		{"ResourceUnavailable.InstanceType", SP_ECAPACITY},
		{"ResourceNotFound.InvalidZoneInstanceType", SP_ECAPACITY},
		{"LimitExceeded.SpotQuota", SP_ECAPACITY},
		{"LimitExceeded.UserSpotQuota", SP_ECAPACITY},
		{"LimitExceeded.InstanceQuota", SP_ECAPACITY},
		{"RequestLimitExceeded", SP_ETHROTTLED},
		{"RequestLimitExceeded.UinLimitExceeded", SP_ETHROTTLED},
		{"InternalError", SP_ETRANSIENT},
		{"InternalError.TradeUnknownError", SP_ETRANSIENT},
		{"InvalidInstanceId.NotFound", SP_ENOTFOUND},
		{"UnsupportedOperation.InstanceStateTerminating", SP_ENOTFOUND},
		{"UnsupportedOperation.InstanceStateTerminated", SP_ENOTFOUND},
		{"InvalidParameter", SP_ECONFIG},
		{"InvalidParameterValue", SP_ECONFIG},
		{"InvalidParameterValue.Range", SP_ECONFIG},
		{"MissingParameter", SP_ECONFIG},
		{"UnknownParameter", SP_ECONFIG},
		{"InvalidImageId.NotFound", SP_ECONFIG},
		{"InvalidZone.MismatchRegion", SP_ECONFIG},
		{"InvalidInstanceType.Malformed", SP_ECONFIG},
		{"InvalidSecurityGroupId.NotFound", SP_ECONFIG},
		{"UnsupportedRegion", SP_ECONFIG},
		{"InvalidAction", SP_ECONFIG},
		{"NoSuchVersion", SP_ECONFIG},
		{"UnsupportedOperation.InstanceMixedPricingModel", SP_ECONFIG},
		/* Unknown codes are retried, never taken as a definitive refusal. */
		{"SomethingNew.NeverSeenBefore", SP_ETRANSIENT},
		{"", SP_ETRANSIENT},
		{"UnsupportedOperation.InstanceStateSomethingNew", SP_ETRANSIENT},
		/* A family matches whole segments only. */
		{"InvalidParameterValueX", SP_ETRANSIENT},
		{"AuthFailureX", SP_ETRANSIENT},
		/* The most specific entry wins over its family. */
		{"InvalidParameterValue.InsufficientOffering", SP_ECAPACITY},
		{"InvalidParameterValue.InsufficientPrice", SP_ECAPACITY},
		{"InvalidParameterValue.InvalidImageState", SP_ETRANSIENT},
		{"ResourceUnavailable.SnapshotCreating", SP_ETRANSIENT},
		{"UnauthorizedOperation.ImageNotBelongToAccount", SP_ECONFIG},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cvm_classify_code(cases[i].code) != cases[i].cls)
			fail_msg("%s classified as %d, want %d", cases[i].code,
				 cvm_classify_code(cases[i].code), cases[i].cls);
}

/* Which capacity answers mark the offering (zone, type) sold out, and which are about the
 * account (quotas) or something else and must not. */
static void test_sold_out_codes(void **state)
{
	(void)state;
	static const char *const sold_out[] = {
		"ResourceInsufficient.SpecifiedInstanceType",
		"ResourceInsufficient.AvailabilityZoneSoldOut",
		"ResourceInsufficient.ZoneSoldOutForSpecifiedInstance",
		"ResourceInsufficient.CloudDiskSoldOut",
		"ResourceInsufficient",
		"ResourceInsufficient.SomethingNewSoldOut",
		"ResourcesSoldOut.SpecifiedInstanceType",
		"ResourcesSoldOut.AvailableZone",
		"ResourceUnavailable.InstanceType",
		"ResourceNotFound.InvalidZoneInstanceType",
		"UnsupportedOperation.InvalidZone",
		"UnsupportedOperation.NoInstanceTypeSupportSpot",
		"InvalidParameterValue.InsufficientOffering",
		"InvalidParameterValue.InsufficientPrice",
		"InvalidParameterValue.ZoneNotSupported",
		"InvalidParameter.InvalidCloudDiskSoldOut",
	};
	static const char *const not_sold_out[] = {
		/* account-wide: another offering would be refused the same way */
		"LimitExceeded.SpotQuota", "LimitExceeded.UserSpotQuota", "LimitExceeded.InstanceQuota",
		"LimitExceeded.PrepayQuota", "InstancesQuotaLimitExceeded", "LimitExceeded.VpcSubnetNum",
		"FailedOperation.NoAvailableIpAddressCountInSubnet",
		/* capacity, but not of the offering */
		"ResourcesSoldOut.EipInsufficient", "ResourceInsufficient.DisasterRecoverGroupCvmQuota",
		"ResourceInsufficient.CloudDiskUnavailable",
		/* not capacity at all */
		"InvalidZone.MismatchRegion", "InvalidParameterValue", "InvalidParameterValue.Range",
		"ResourceUnavailable.SnapshotCreating", "AuthFailure.SignatureFailure", "RequestLimitExceeded",
		"InternalError", "SomethingNew", "", "ResourcesSoldOutX", "ResourceInsufficientX.Y",
	};
	for (size_t i = 0; i < sizeof(sold_out) / sizeof(sold_out[0]); i++)
		if (!cvm_code_is_sold_out(sold_out[i]))
			fail_msg("%s should mark the offering sold out", sold_out[i]);
	for (size_t i = 0; i < sizeof(not_sold_out) / sizeof(not_sold_out[0]); i++)
		if (cvm_code_is_sold_out(not_sold_out[i]))
			fail_msg("%s must not mark the offering sold out", not_sold_out[i]);
	assert_false(cvm_code_is_sold_out(NULL));
	/* Every sold-out code is a capacity error to the caller too. */
	for (size_t i = 0; i < sizeof(sold_out) / sizeof(sold_out[0]); i++)
		assert_int_equal(cvm_classify_code(sold_out[i]), SP_ECAPACITY);
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
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.1.Key"), POOL_LAUNCH_TAG_KEY);
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.1.Value"), "tok-1");
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.2.Key"), "team");
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

/* A launch on another offering asks for its zone and type; the rest of the request (and the
 * seed's request when none is given) is unchanged. */
static void test_run_request_offering(void **state)
{
	(void)state;
	struct pool_spec s = sample_spec();
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-2"};
	cJSON *seed = cvm_run_request(&l);
	l.zone = "ap-singapore-4";
	l.instance_type = "GN10X.2XLARGE40";
	cJSON *req = cvm_run_request(&l);
	assert_string_equal(jstr(req, "Placement.Zone"), "ap-singapore-4");
	assert_string_equal(jstr(req, "InstanceType"), "GN10X.2XLARGE40");
	assert_string_equal(jstr(seed, "Placement.Zone"), "ap-singapore-2");
	assert_string_equal(jstr(seed, "InstanceType"), "GN7.2XLARGE32");
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(req, "Placement"), "Zone", cJSON_CreateString("ap-singapore-2"));
	cJSON_ReplaceItemInObject(req, "InstanceType", cJSON_CreateString("GN7.2XLARGE32"));
	assert_true(cJSON_Compare(req, seed, 1));
	cJSON_Delete(req);
	/* Only one of them: the other is the seed's. */
	l.zone = NULL;
	req = cvm_run_request(&l);
	assert_string_equal(jstr(req, "Placement.Zone"), "ap-singapore-2");
	assert_string_equal(jstr(req, "InstanceType"), "GN10X.2XLARGE40");
	cJSON_Delete(req);
	cJSON_Delete(seed);
}

static void test_parse_instances(void **state)
{
	(void)state;
	cJSON *resp = cJSON_Parse(
		"{\"TotalCount\": 3, \"InstanceSet\": ["
		"{\"InstanceId\": \"ins-1\", \"InstanceState\": \"RUNNING\", \"Placement\": {\"Zone\": \"ap-singapore-2\"},"
		" \"InstanceType\": \"GN7.2XLARGE32\", \"PrivateIpAddresses\": [\"10.0.0.5\"],"
		" \"PublicIpAddresses\": [\"43.1.2.3\"], \"CreatedTime\": \"2026-11-21T11:45:00Z\","
		" \"Tags\": [{\"Key\": \"team\", \"Value\": \"ml\"}, {\"Key\": \"" POOL_TAG_KEY "\", \"Value\": \"ml/gpu\"},"
		" {\"Key\": \"" POOL_LAUNCH_TAG_KEY "\", \"Value\": \"tok-9\"}]},"
		"{\"InstanceId\": \"ins-2\", \"InstanceState\": \"PENDING\", \"PublicIpAddresses\": null,"
		" \"PrivateIpAddresses\": null, \"CreatedTime\": \"2026-11-21T19:45:00+08:00\", \"Tags\": null},"
		"{\"InstanceId\": \"ins-3\", \"InstanceState\": \"RUNNING\", \"Tags\": [{\"Key\": \"" POOL_TAG_KEY
		"\", \"Value\": \"" "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}]}]}");
	struct pool_instance *list = NULL;
	size_t n = 0, total = 0;
	assert_int_equal(cvm_parse_instances(resp, &list, &n, &total, NULL), 0);
	assert_int_equal(total, 3);
	assert_int_equal(n, 3);
	assert_string_equal(list[0].public_ip, "43.1.2.3");
	assert_string_equal(list[0].private_ip, "10.0.0.5");
	assert_string_equal(list[0].zone, "ap-singapore-2");
	assert_string_equal(list[0].pool_tag, "ml/gpu");
	assert_string_equal(list[0].launch_tag, "tok-9");
	assert_string_equal(list[1].public_ip, "");
	assert_string_equal(list[1].pool_tag, "");  /* no tags */
	assert_string_equal(list[1].launch_tag, "");
	assert_int_equal(strlen(list[2].pool_tag), 160);  /* any value the tag service allows */
	assert_int_equal(list[0].created, list[1].created);
	free(list);
	cJSON_Delete(resp);
}

/* The cluster tag: sent only when the launch names a cluster (after the launch tag, before
 * the spec's tags), read back into cluster_tag; absent or too long reads as empty. */
static void test_cluster_tag(void **state)
{
	(void)state;
	struct pool_spec s = sample_spec();
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-1", .cluster = "c-1.a_b"};
	cJSON *req = cvm_run_request(&l);
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.2.Key"), POOL_CLUSTER_TAG_KEY);
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.2.Value"), "c-1.a_b");
	assert_string_equal(jstr(req, "TagSpecification.0.Tags.3.Key"), "team");
	cJSON_Delete(req);
	const char *none[] = {NULL, ""};
	for (size_t k = 0; k < 2; k++) {
		l.cluster = none[k];
		req = cvm_run_request(&l);
		const cJSON *t;
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(req, "TagSpecification"), 0), "Tags"))
			assert_string_not_equal(cJSON_GetObjectItem(t, "Key")->valuestring, POOL_CLUSTER_TAG_KEY);
		cJSON_Delete(req);
	}

	cJSON *resp = cJSON_Parse(
		"{\"TotalCount\": 4, \"InstanceSet\": ["
		"{\"InstanceId\": \"ins-1\", \"InstanceState\": \"RUNNING\", \"Tags\": [{\"Key\": \"" POOL_TAG_KEY
		"\", \"Value\": \"ml/gpu\"}, {\"Key\": \"" POOL_CLUSTER_TAG_KEY "\", \"Value\": \"3f1c0a2e-uid\"}]},"
		"{\"InstanceId\": \"ins-2\", \"InstanceState\": \"RUNNING\", \"Tags\": [{\"Key\": \"" POOL_TAG_KEY
		"\", \"Value\": \"ml/gpu\"}]},"
		"{\"InstanceId\": \"ins-3\", \"InstanceState\": \"RUNNING\", \"Tags\": [{\"Key\": \"" POOL_CLUSTER_TAG_KEY
		"\", \"Value\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}]},"
		"{\"InstanceId\": \"ins-4\", \"InstanceState\": \"RUNNING\", \"Tags\": [{\"Key\": \"" POOL_CLUSTER_TAG_KEY
		"\", \"Value\": \"\"}]}]}");
	struct pool_instance *list = NULL;
	size_t n = 0, total = 0;
	assert_int_equal(cvm_parse_instances(resp, &list, &n, &total, NULL), 0);
	assert_int_equal(n, 4);
	assert_string_equal(list[0].cluster_tag, "3f1c0a2e-uid");
	assert_string_equal(list[1].cluster_tag, "");  /* launched before the tag existed */
	assert_string_equal(list[2].cluster_tag, "?");  /* too long to be ours: another cluster's */
	assert_string_equal(list[3].cluster_tag, "?");  /* empty: not a name spotpool writes */
	free(list);
	cJSON_Delete(resp);
}

/* A long namespace/name: the launch tags its instances with the pool's owner tag (255
 * characters, digest form) and a describe reads every value the tag service allows back
 * in full, so the pool sees its own instances (a 160-byte field once read a 202-character
 * owner as none and the pool launched without end). */
static void test_long_owner_tag(void **state)
{
	(void)state;
	char ns[64], name[254];
	memset(ns, 'n', 63), ns[63] = '\0';
	memset(name, 'a', 253), name[253] = '\0';
	name[100] = '.';
	struct pool_spec s = sample_spec();
	s.namespace = ns;
	s.name = name;
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-1"};
	cJSON *req = cvm_run_request(&l);
	char *owner = pool_owner_tag(ns, name);
	const char *sent = jstr(req, "TagSpecification.0.Tags.0.Value");
	assert_string_equal(sent, owner);
	assert_int_equal(strlen(sent), POOL_TAG_VALUE_MAX);
	assert_true(strlen(jstr(req, "InstanceName")) <= 60);
	cJSON_Delete(req);

	/* Read back: the 255-character owner, a 202-character literal one, and a value longer
	 * than Tencent allows (never a pool's). */
	char literal[203];
	memset(literal, 'b', 202), literal[202] = '\0';
	literal[10] = '/';
	char too_long[257];
	memset(too_long, 'c', 256), too_long[256] = '\0';
	const char *values[] = {owner, literal, too_long};
	cJSON *resp = cJSON_CreateObject();
	cJSON_AddNumberToObject(resp, "TotalCount", 3);
	cJSON *set = cJSON_AddArrayToObject(resp, "InstanceSet");
	for (int i = 0; i < 3; i++)
		add_owned_instance(set, i, values[i]);
	struct pool_instance *list = NULL;
	size_t n = 0, total = 0;
	assert_int_equal(cvm_parse_instances(resp, &list, &n, &total, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(list[0].pool_tag, owner);
	assert_string_equal(list[1].pool_tag, literal);
	assert_string_equal(list[2].pool_tag, "");
	free(list);
	free(owner);
	cJSON_Delete(resp);
}

static void test_parse_rejects_malformed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{}", "{\"TotalCount\": \"3\", \"InstanceSet\": []}",
		"{\"TotalCount\": 1, \"InstanceSet\": [{\"InstanceState\": \"RUNNING\"}]}",
		"{\"TotalCount\": 1, \"InstanceSet\": [{\"InstanceId\": \"ins-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"InstanceState\": \"RUNNING\"}]}",
		/* TotalCount must be an integer in [0, CVM_DESCRIBE_MAX_INSTANCES]. */
		"{\"TotalCount\": 1e300, \"InstanceSet\": []}",
		"{\"TotalCount\": -1, \"InstanceSet\": []}",
		"{\"TotalCount\": 2.5, \"InstanceSet\": []}",
		"{\"TotalCount\": 100001, \"InstanceSet\": []}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *resp = cJSON_Parse(bad[i]);
		struct pool_instance *list = (struct pool_instance *)&list;  /* must stay untouched */
		size_t n = 7, total = 7;
		struct sp_error err = {0};
		assert_int_equal(cvm_parse_instances(resp, &list, &n, &total, &err), SP_EPROTO);
		assert_contains(err.msg, "DescribeInstances: malformed");
		assert_ptr_equal(list, &list);
		assert_int_equal(n + total, 14);
		cJSON_Delete(resp);
	}
}

/* DescribeInstanceTypeConfigs: the SDK's InstanceTypeConfig read into resources, one
 * entry per type (the first zone's), sorted by name; GpuCount a fraction for a vGPU type. */
static void test_parse_instance_types(void **state)
{
	(void)state;
	cJSON *resp = cJSON_Parse(
		"{\"InstanceTypeConfigSet\": ["
		"{\"Zone\": \"ap-singapore-2\", \"InstanceType\": \"GN7.2XLARGE32\", \"InstanceFamily\": \"GN7\","
		" \"GPU\": 1, \"CPU\": 8, \"Memory\": 32, \"FPGA\": 0, \"GpuCount\": 1, \"GpuType\": \"NVIDIA T4\"},"
		"{\"Zone\": \"ap-singapore-2\", \"InstanceType\": \"GN7vw.3XLARGE24\", \"GPU\": 1, \"CPU\": 12,"
		" \"Memory\": 24, \"GpuCount\": 0.5},"
		"{\"Zone\": \"ap-singapore-3\", \"InstanceType\": \"GN7.2XLARGE32\", \"InstanceFamily\": \"GN7\","
		" \"GPU\": 2, \"CPU\": 9, \"Memory\": 33},"
		"{\"Zone\": \"ap-singapore-2\", \"InstanceType\": \"S5.LARGE8\", \"CPU\": 4, \"Memory\": 8,"
		" \"GPU\": null, \"GpuCount\": null, \"FPGA\": 0}],"
		" \"RequestId\": \"r\"}");
	struct cvm_instance_type *v = NULL;
	size_t n = 0;
	assert_int_equal(cvm_parse_instance_types(resp, &v, &n, NULL), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].instance_type, "GN7.2XLARGE32");
	assert_string_equal(v[0].family, "GN7");
	assert_int_equal(v[0].cpu, 8);
	assert_int_equal(v[0].memory_gib, 32);
	assert_int_equal(v[0].gpu, 1);
	assert_true(v[0].gpu_cards == 1.0);
	assert_string_equal(v[0].gpu_type, "NVIDIA T4");
	assert_string_equal(v[1].instance_type, "GN7vw.3XLARGE24");
	assert_int_equal(v[1].gpu, 1);
	assert_true(v[1].gpu_cards == 0.5);
	assert_string_equal(v[1].gpu_type, "");
	assert_string_equal(v[2].instance_type, "S5.LARGE8");
	assert_int_equal(v[2].gpu, 0);
	assert_true(v[2].gpu_cards == 0);
	free(v);
	cJSON_Delete(resp);
	/* An empty catalogue (null set) is not an error. */
	resp = cJSON_Parse("{\"InstanceTypeConfigSet\": null}");
	v = (struct cvm_instance_type *)&v;
	assert_int_equal(cvm_parse_instance_types(resp, &v, &n, NULL), 0);
	assert_int_equal(n, 0);
	free(v);
	cJSON_Delete(resp);
}

/* Malformed or oversized answers are SP_EPROTO, never a short or wrong catalogue. */
static void test_parse_instance_types_rejects(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"{}",
		"{\"InstanceTypeConfigSet\": {}}",
		"{\"InstanceTypeConfigSet\": [{\"CPU\": 8, \"Memory\": 32}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"\", \"CPU\": 8, \"Memory\": 32}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": 7, \"CPU\": 8, \"Memory\": 32}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": \"8\", \"Memory\": 32}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": -1, \"Memory\": 32}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": 8.5, \"Memory\": 32}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": 8, \"Memory\": 1e300}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": 8, \"Memory\": 32, \"GPU\": 0.25}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": 8, \"Memory\": 32, \"GPU\": 5000}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": 8, \"Memory\": 32, \"GpuCount\": -0.5}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": 8, \"Memory\": 32, \"GpuCount\": \"1\"}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\", "
		"\"CPU\": 8, \"Memory\": 32}]}",
		"{\"InstanceTypeConfigSet\": [{\"InstanceType\": \"A.B\", \"CPU\": 8, \"Memory\": 32}, 3]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) + 1; i++) {
		char *text = NULL;
		if (i < sizeof(bad) / sizeof(bad[0])) {
			text = xstrdup(bad[i]);
		} else {  /* one entry past CVM_INSTANCE_TYPES_MAX */
			cJSON *root = cJSON_CreateObject();
			cJSON *set = cJSON_AddArrayToObject(root, "InstanceTypeConfigSet");
			for (int k = 0; k <= CVM_INSTANCE_TYPES_MAX; k++) {
				cJSON *t = cJSON_CreateObject();
				char name[32];
				snprintf(name, sizeof(name), "T%d.X", k);
				cJSON_AddStringToObject(t, "InstanceType", name);
				cJSON_AddNumberToObject(t, "CPU", 1);
				cJSON_AddNumberToObject(t, "Memory", 1);
				cJSON_AddItemToArray(set, t);
			}
			text = cJSON_PrintUnformatted(root);
			cJSON_Delete(root);
		}
		cJSON *resp = cJSON_Parse(text);
		struct cvm_instance_type *v = (struct cvm_instance_type *)&v;  /* must stay untouched */
		size_t n = 7;
		struct sp_error err = {0};
		print_message("%.100s\n", text);
		assert_int_equal(cvm_parse_instance_types(resp, &v, &n, &err), SP_EPROTO);
		assert_contains(err.msg, "DescribeInstanceTypeConfigs: ");
		assert_ptr_equal(v, &v);
		assert_int_equal(n, 7);
		cJSON_Delete(resp);
		free(text);
	}
}

/* One call, no parameters, for the whole region; a Tencent error is classified. */
static void test_describe_instance_types(void **state)
{
	(void)state;
	const struct canned script[] = {
		{.body = "{\"Response\": {\"InstanceTypeConfigSet\": [{\"Zone\": \"ap-singapore-2\", \"InstanceType\": "
			 "\"GN7.5XLARGE80\", \"GPU\": 1, \"CPU\": 20, \"Memory\": 80}], \"RequestId\": \"r1\"}}"},
		{.body = "{\"Response\": {\"Error\": {\"Code\": \"AuthFailure.SecretIdNotFound\", \"Message\": \"no\"}, "
			 "\"RequestId\": \"r2\"}}"},
	};
	struct fake f = {.script = script, .n_script = 2};
	fake_start(&f);
	struct cvm_client *c = fake_client(&f, 1);
	struct cvm_instance_type *v = NULL;
	size_t n = 0;
	assert_int_equal(cvm_describe_instance_types(c, &test_cred, "ap-singapore", &v, &n, NULL), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].cpu, 20);
	free(v);
	struct sp_error err = {0};
	assert_int_equal(cvm_describe_instance_types(c, &test_cred, "ap-singapore", &v, &n, &err), SP_EAUTH);
	assert_string_equal(err.reason, "AuthFailure.SecretIdNotFound");
	cvm_client_free(c);
	fake_stop(&f);
	assert_int_equal(atomic_load(&f.n), 2);
	assert_string_equal(f.actions[0], "DescribeInstanceTypeConfigs");
	assert_int_equal(cJSON_GetArraySize(f.requests[0]), 0);
	fake_free(&f);
}

/* A DescribeInstances-by-tag sweep against canned pages; checks what was asked. */
static int sweep(const struct canned *script, size_t n_script, struct fake *f, struct pool_instance **list,
		 size_t *n, struct sp_error *err)
{
	f->script = script;
	f->n_script = n_script;
	fake_start(f);
	struct cvm_client *c = fake_client(f, 1);
	int r = cvm_describe_tagged(c, &test_cred, "ap-singapore", POOL_TAG_KEY, "ml/gpu", list, n, err);
	cvm_client_free(c);
	fake_stop(f);
	return r;
}

static void test_describe_pages(void **state)
{
	(void)state;
	char *p1 = page_json(250, 0, 100), *p2 = page_json(250, 100, 100), *p3 = page_json(250, 200, 50);
	/* The set shifted while paging: page 2 starts with the last of page 1. */
	char *p2b = page_json(250, 99, 100), *p3b = page_json(250, 199, 51);
	const struct canned ok[] = {{.body = p1}, {.body = p2}, {.body = p3}},
			    shifted[] = {{.body = p1}, {.body = p2b}, {.body = p3b}};
	struct fake f = {0};
	struct pool_instance *list = NULL;
	size_t n = 0;
	assert_int_equal(sweep(ok, 3, &f, &list, &n, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 3);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(f.actions[i], "DescribeInstances");
		assert_int_equal(num(f.requests[i], "Offset"), 100 * i);
		assert_int_equal(num(f.requests[i], "Limit"), 100);
		assert_string_equal(jstr(f.requests[i], "Filters.0.Name"), "tag:" POOL_TAG_KEY);
		assert_string_equal(jstr(f.requests[i], "Filters.0.Values.0"), "ml/gpu");
		assert_null(cJSON_GetObjectItem(f.requests[i], "InstanceIds"));
	}
	assert_int_equal(n, 250);
	assert_string_equal(list[249].id, "ins-00000249");
	assert_string_equal(list[249].pool_tag, "ml/gpu");
	free(list);

	fake_free(&f);
	assert_int_equal(sweep(shifted, 3, &f, &list, &n, NULL), 0);
	assert_int_equal(n, 250);  /* the repeated instance is listed once */
	free(list);
	fake_free(&f);
	free(p1), free(p2), free(p3), free(p2b), free(p3b);
}

static void test_describe_inconsistent_paging(void **state)
{
	(void)state;
	char *full = page_json(100000, 0, 100), *empty_huge = page_json(1e300, 0, 0);
	char *p1 = page_json(150, 0, 100), *empty = page_json(150, 0, 0), *big = page_json(101, 0, 101);
	const struct {
		struct canned script[3];
		size_t n, requests;
		const char *msg;
	} cases[] = {
		/* A huge TotalCount and the same page over and over. */
		{{{.body = full}, {.body = full}, {.body = full}}, 3, 2, "inconsistent paging: the page at offset 100 repeats"},
		/* An impossible TotalCount with an empty page is not "no instances". */
		{{{.body = empty_huge}}, 1, 1, "TotalCount 1e+300 is not an integer"},
		{{{.body = p1}, {.body = empty}}, 2, 2, "inconsistent paging: empty page at offset 100 of TotalCount 150"},
		{{{.body = big}}, 1, 1, "101 instances in a page of at most 100"},
		/* A failed page fails the sweep: never a short list. */
		{{{.body = p1}, {.body = "{\"Response\": {\"Error\": {\"Code\": \"InternalError\"}}}"}}, 2, 2, "InternalError"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f = {0};
		struct pool_instance *list = (struct pool_instance *)&f;
		size_t n = 7;
		struct sp_error err = {0};
		int r = sweep(cases[i].script, cases[i].n, &f, &list, &n, &err);
		assert_int_equal(r, strstr(cases[i].msg, "InternalError") ? SP_ETRANSIENT : SP_EPROTO);
		assert_contains(err.msg, cases[i].msg);
		assert_int_equal(atomic_load(&f.n), cases[i].requests);
		assert_ptr_equal(list, &f);  /* untouched on failure */
		assert_int_equal(n, 7);
		fake_free(&f);
	}
	free(full), free(empty_huge), free(p1), free(empty), free(big);
}

/* Pages of ten thousand instances, computed from the request's Offset. */
static char *answer_10k(struct fake *f, const cJSON *request, int *status, int *delay_ms)
{
	(void)f, (void)status, (void)delay_ms;
	int offset = (int)num(request, "Offset");
	return page_json(10000, offset, offset < 10000 ? 100 : 0);
}

static void test_describe_10k(void **state)
{
	(void)state;
	struct fake f = {.answer = answer_10k};
	fake_start(&f);
	struct cvm_client *c = fake_client(&f, 1);
	struct pool_instance *list = NULL;
	size_t n = 0;
	int64_t start = sp_mono_ms();
	assert_int_equal(cvm_describe_tagged(c, &test_cred, "ap-singapore", POOL_TAG_KEY, NULL, &list, &n, NULL), 0);
	int64_t took = sp_mono_ms() - start;
	cvm_client_free(c);
	fake_stop(&f);
	assert_int_equal(n, 10000);
	assert_int_equal(atomic_load(&f.n), 100);
	assert_string_equal(jstr(f.requests[0], "Filters.0.Name"), "tag-key");
	for (size_t i = 0; i < n; i++) {
		char id[32];
		snprintf(id, sizeof(id), "ins-%08zu", i);
		assert_string_equal(list[i].id, id);
	}
	free(list);
	fake_free(&f);
	if (took > 20000)
		fail_msg("10,000 instances took %lld ms", (long long)took);
}

/* 250 instances of a zone, paged from the request's Offset; every 50th carries the
 * launch tag "tok-x", the others another launch's. */
static char *answer_zone(struct fake *f, const cJSON *request, int *status, int *delay_ms)
{
	(void)f, (void)status, (void)delay_ms;
	int offset = (int)num(request, "Offset");
	cJSON *root = cJSON_CreateObject();
	cJSON *resp = cJSON_AddObjectToObject(root, "Response");
	cJSON_AddNumberToObject(resp, "TotalCount", 250);
	cJSON *set = cJSON_AddArrayToObject(resp, "InstanceSet");
	for (int i = offset; i < 250 && i < offset + 100; i++) {
		add_owned_instance(set, i, "ml/gpu");
		cJSON *tag = cJSON_CreateObject();
		cJSON_AddStringToObject(tag, "Key", POOL_LAUNCH_TAG_KEY);
		cJSON_AddStringToObject(tag, "Value", i % 50 ? "tok-y" : "tok-x");
		cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetArrayItem(set, i - offset), "Tags"), tag);
	}
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

/* A launch's instances, looked for without a tag filter (which a lagging tag index
 * answers): the zone's every page, only the token's instances kept. */
static void test_find_launched(void **state)
{
	(void)state;
	struct fake f = {.answer = answer_zone};
	fake_start(&f);
	struct cvm_client *c = fake_client(&f, 1);
	struct pool_instance *list = NULL;
	size_t n = 0;
	assert_int_equal(cvm_find_launched(c, &test_cred, "ap-singapore", "ap-singapore-1", "tok-x", NULL,
					   &list, &n, NULL), 0);
	cvm_client_free(c);
	fake_stop(&f);
	assert_int_equal(atomic_load(&f.n), 3);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(jstr(f.requests[i], "Filters.0.Name"), "zone");
		assert_string_equal(jstr(f.requests[i], "Filters.0.Values.0"), "ap-singapore-1");
		assert_null(cJSON_GetArrayItem(cJSON_GetObjectItem(f.requests[i], "Filters"), 1));
	}
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++) {
		char id[32];
		snprintf(id, sizeof(id), "ins-%08zu", i * 50);
		assert_string_equal(list[i].id, id);
		assert_string_equal(list[i].launch_tag, "tok-x");
	}
	free(list);
	fake_free(&f);
}

/* Answers by-ID lookups: ins-0000000N for N < known exists, "ins-bad" is malformed, a
 * batch with an unknown ID is InvalidInstanceId.NotFound; adds one instance nobody asked for. */
static char *answer_ids(struct fake *f, const cJSON *request, int *status, int *delay_ms)
{
	(void)status, (void)delay_ms;
	int known = *(int *)f->userdata;
	const cJSON *ids = cJSON_GetObjectItem(request, "InstanceIds"), *id;
	cJSON *root = cJSON_CreateObject(), *resp = cJSON_AddObjectToObject(root, "Response");
	cJSON *set = cJSON_CreateArray();
	cJSON_ArrayForEach(id, ids) {
		int k = atoi(id->valuestring + 4);
		const char *code = strcmp(id->valuestring, "ins-bad") == 0 ? "InvalidInstanceId.Malformed" :
				   k >= known ? "InvalidInstanceId.NotFound" : NULL;
		if (code) {
			cJSON_Delete(set);
			cJSON_AddStringToObject(cJSON_AddObjectToObject(resp, "Error"), "Code", code);
			goto out;
		}
		cJSON *in = cJSON_CreateObject();
		cJSON_AddStringToObject(in, "InstanceId", id->valuestring);
		cJSON_AddStringToObject(in, "InstanceState", "RUNNING");
		cJSON_AddItemToArray(set, in);
	}
	if (cJSON_GetArraySize(set) < 100) {
		cJSON *stray = cJSON_CreateObject();
		cJSON_AddStringToObject(stray, "InstanceId", "ins-stray000");
		cJSON_AddStringToObject(stray, "InstanceState", "RUNNING");
		cJSON_AddItemToArray(set, stray);
	}
	cJSON_AddNumberToObject(resp, "TotalCount", cJSON_GetArraySize(set));
	cJSON_AddItemToObject(resp, "InstanceSet", set);
out:;
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

static int lookup(struct fake *f, int known, const struct strv *ids, struct pool_instance **list, size_t *n,
		  struct sp_error *err)
{
	f->answer = answer_ids;
	f->userdata = &known;
	fake_start(f);
	struct cvm_client *c = fake_client(f, 1);
	int r = cvm_describe_ids(c, &test_cred, "ap-singapore", ids, NULL, list, n, err);
	cvm_client_free(c);
	fake_stop(f);
	return r;
}

static void test_describe_ids(void **state)
{
	(void)state;
	struct strv ids = {0};
	char id[32];
	for (int i = 0; i < 150; i++) {
		snprintf(id, sizeof(id), "ins-%08d", i);
		strv_push(&ids, id);
	}
	strv_push(&ids, "ins-00000003");  /* asked twice, listed once */
	struct fake f = {0};
	struct pool_instance *list = NULL;
	size_t n = 0;
	assert_int_equal(lookup(&f, 1000, &ids, &list, &n, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 2);  /* batches of 100 and 50 */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f.requests[0], "InstanceIds")), 100);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f.requests[1], "InstanceIds")), 50);
	assert_null(cJSON_GetObjectItem(f.requests[0], "Filters"));
	assert_int_equal(num(f.requests[0], "Limit"), 100);
	assert_int_equal(n, 150);  /* the instance nobody asked for is left out */
	for (size_t i = 0; i < n; i++)
		assert_string_not_equal(list[i].id, "ins-stray000");
	free(list);

	/* One gone ID fails its batch: the others are then looked up one by one. */
	strv_clear(&ids);
	strv_push(&ids, "ins-00000000"), strv_push(&ids, "ins-00000005"), strv_push(&ids, "ins-00000001");
	fake_free(&f);
	assert_int_equal(lookup(&f, 2, &ids, &list, &n, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 4);
	assert_int_equal(n, 2);
	assert_string_equal(list[0].id, "ins-00000000");
	assert_string_equal(list[1].id, "ins-00000001");
	free(list);

	/* A malformed ID is our mistake, named. */
	strv_push(&ids, "ins-bad");
	fake_free(&f);
	struct sp_error err = {0};
	list = (struct pool_instance *)&f;
	assert_int_equal(lookup(&f, 2, &ids, &list, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "malformed instance ID \"ins-bad\"");
	assert_ptr_equal(list, &f);

	/* Nothing to look up: no call. */
	strv_clear(&ids);
	fake_free(&f);
	list = NULL;
	n = 7;
	assert_int_equal(lookup(&f, 2, &ids, &list, &n, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 0);
	assert_int_equal(n, 0);
	free(list);
	fake_free(&f);
}

/* Answers DescribeInstancesStatus: ins-0000000N exists for N < known (SHUTDOWN when N % 7
 * == 3, else RUNNING), others are simply left out (the API has no NotFound for it);
 * "ins-bad" is InvalidInstanceId.Malformed; each page holds at most page_max statuses
 * whatever the Limit, and one status nobody asked for comes first when fewer than 100
 * were asked. */
struct status_world {
	int known, page_max;
};

static char *answer_status(struct fake *f, const cJSON *request, int *status, int *delay_ms)
{
	(void)status, (void)delay_ms;
	const struct status_world *w = f->userdata;
	const cJSON *ids = cJSON_GetObjectItem(request, "InstanceIds"), *id;
	cJSON *root = cJSON_CreateObject(), *resp = cJSON_AddObjectToObject(root, "Response");
	cJSON *all = cJSON_CreateArray();
	if (cJSON_GetArraySize(ids) < 100) {
		cJSON *stray = cJSON_CreateObject();
		cJSON_AddStringToObject(stray, "InstanceId", "ins-stray000");
		cJSON_AddStringToObject(stray, "InstanceState", "RUNNING");
		cJSON_AddItemToArray(all, stray);
	}
	cJSON_ArrayForEach(id, ids) {
		if (strcmp(id->valuestring, "ins-bad") == 0) {
			cJSON_Delete(all);
			cJSON_AddStringToObject(cJSON_AddObjectToObject(resp, "Error"), "Code", "InvalidInstanceId.Malformed");
			goto out;
		}
		int k = atoi(id->valuestring + 4);
		if (k >= w->known)
			continue;
		cJSON *st = cJSON_CreateObject();
		cJSON_AddStringToObject(st, "InstanceId", id->valuestring);
		cJSON_AddStringToObject(st, "InstanceState", k % 7 == 3 ? "SHUTDOWN" : "RUNNING");
		cJSON_AddItemToArray(all, st);
	}
	int offset = (int)num(request, "Offset"), total = cJSON_GetArraySize(all);
	cJSON *page = cJSON_CreateArray();
	for (int k = offset; k < total && k < offset + w->page_max; k++)
		cJSON_AddItemReferenceToArray(page, cJSON_GetArrayItem(all, k));
	cJSON_AddNumberToObject(resp, "TotalCount", total);
	cJSON_AddItemToObject(resp, "InstanceStatusSet", page);
	cJSON_AddStringToObject(resp, "RequestId", "r");
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	cJSON_Delete(all);
	return text;
out:;
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

static int status_of(struct fake *f, struct status_world *w, const struct strv *ids,
		     struct pool_instance_status **list, size_t *n, struct sp_error *err)
{
	f->answer = answer_status;
	f->userdata = w;
	fake_start(f);
	struct cvm_client *c = fake_client(f, 1);
	int r = cvm_describe_status(c, &test_cred, "ap-singapore", ids, list, n, err);
	cvm_client_free(c);
	fake_stop(f);
	return r;
}

static void test_describe_status(void **state)
{
	(void)state;
	struct strv ids = {0};
	char id[32];
	for (int i = 0; i < 250; i++) {
		snprintf(id, sizeof(id), "ins-%08d", i);
		strv_push(&ids, id);
	}
	/* 250 IDs: three calls of 100, 100 and 50, each with Limit 100; 200 exist. */
	struct fake f = {0};
	struct status_world w = {.known = 200, .page_max = 100};
	struct pool_instance_status *list = NULL;
	size_t n = 0;
	assert_int_equal(status_of(&f, &w, &ids, &list, &n, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 3);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(f.actions[i], "DescribeInstancesStatus");
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f.requests[i], "InstanceIds")), i < 2 ? 100 : 50);
		assert_int_equal(num(f.requests[i], "Limit"), 100);
		assert_int_equal(num(f.requests[i], "Offset"), 0);
	}
	/* The unknown IDs are absent, the stray one left out, the states as answered. */
	assert_int_equal(n, 200);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(atoi(list[i].id + 4), (int)i);
		assert_string_equal(list[i].state, i % 7 == 3 ? "SHUTDOWN" : "RUNNING");
	}
	free(list);

	/* A cloud that pages shorter than Limit: the batch is asked page by page. */
	fake_free(&f);
	w = (struct status_world){.known = 1000, .page_max = 40};
	strv_clear(&ids);
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "ins-%08d", i);
		strv_push(&ids, id);
	}
	assert_int_equal(status_of(&f, &w, &ids, &list, &n, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 3);  /* 100 answers by 40 */
	assert_int_equal(num(f.requests[1], "Offset"), 40);
	assert_int_equal(num(f.requests[2], "Offset"), 80);
	assert_int_equal(n, 100);
	free(list);

	/* A malformed ID is our mistake, named; nothing is returned. */
	fake_free(&f);
	strv_push(&ids, "ins-bad");
	struct sp_error err = {0};
	list = (struct pool_instance_status *)&f;
	assert_int_equal(status_of(&f, &w, &ids, &list, &n, &err), SP_EINVAL);
	assert_contains(err.msg, "malformed instance ID");
	assert_string_equal(err.reason, "InvalidInstanceId.Malformed");
	assert_ptr_equal(list, &f);

	/* Nothing to ask: no call. */
	fake_free(&f);
	strv_clear(&ids);
	list = NULL;
	n = 7;
	assert_int_equal(status_of(&f, &w, &ids, &list, &n, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 0);
	assert_int_equal(n, 0);
	free(list);
	fake_free(&f);
}

/* Answers that do not add up are errors, never a short answer. */
static void test_describe_status_bad_answers(void **state)
{
	(void)state;
	const struct canned bad[] = {
		/* TotalCount above the IDs asked */
		{"{\"Response\": {\"TotalCount\": 3, \"InstanceStatusSet\": [{\"InstanceId\": \"ins-00000000\", "
		 "\"InstanceState\": \"RUNNING\"}], \"RequestId\": \"r\"}}", 0, 0},
		/* an empty page before TotalCount */
		{"{\"Response\": {\"TotalCount\": 1, \"InstanceStatusSet\": [], \"RequestId\": \"r\"}}", 0, 0},
		/* no state */
		{"{\"Response\": {\"TotalCount\": 1, \"InstanceStatusSet\": [{\"InstanceId\": \"ins-00000000\"}], "
		 "\"RequestId\": \"r\"}}", 0, 0},
		/* no set */
		{"{\"Response\": {\"TotalCount\": 1, \"RequestId\": \"r\"}}", 0, 0},
		/* refused: the class of the code */
		{"{\"Response\": {\"Error\": {\"Code\": \"UnauthorizedOperation.InvalidToken\", \"Message\": \"m\"}, "
		 "\"RequestId\": \"r\"}}", 0, 0},
	};
	const int want[] = {SP_EPROTO, SP_EPROTO, SP_EPROTO, SP_EPROTO, SP_EAUTH};
	struct strv ids = {0};
	strv_push(&ids, "ins-00000000");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fake f = {.script = &bad[i], .n_script = 1};
		fake_start(&f);
		struct cvm_client *c = fake_client(&f, 1);
		struct pool_instance_status *list = NULL;
		size_t n = 0;
		struct sp_error err = {0};
		assert_int_equal(cvm_describe_status(c, &test_cred, "ap-singapore", &ids, &list, &n, &err), want[i]);
		assert_null(list);
		assert_true(*err.msg);
		cvm_client_free(c);
		fake_stop(&f);
		fake_free(&f);
	}
	strv_clear(&ids);
}

static int launch(struct fake *f, const struct canned *script, size_t n_script, struct sp_error *err)
{
	struct pool_spec s = sample_spec();
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-1"};
	struct strv ids = {0};
	f->script = script;
	f->n_script = n_script;
	fake_start(f);
	struct cvm_client *c = fake_client(f, 3);
	int r = cvm_run_instances(c, &test_cred, &l, &ids, err);
	cvm_client_free(c);
	fake_stop(f);
	strv_clear(&ids);
	return r;
}

#define REFUSED "{\"Response\": {\"Error\": {\"Code\": \"ResourceInsufficient.SpecifiedInstanceType\"}}}"

static void test_refusal_after_uncertain_attempt(void **state)
{
	(void)state;
	const struct {
		struct canned first;
		int want;
	} cases[] = {
		/* The first attempt may have launched: the refusal only answers the retry. */
		{{.body = "<html>bad gateway</html>", .status = 502}, SP_ETRANSIENT},
		{{.body = "{\"Response\": {\"Error\": {\"Code\": \"InternalError\"}}}"}, SP_ETRANSIENT},
		{{.body = "{\"Response\": {\"Error\": {\"Code\": \"BrandNew.Code\"}}}"}, SP_ETRANSIENT},
		{{.body = "{\"Response\": {\"InstanceIdSet\": [\"ins-1\""}, SP_ETRANSIENT},
		/* Throttling is a definitive "not done": the refusal stands. */
		{{.body = "{\"Response\": {\"Error\": {\"Code\": \"RequestLimitExceeded\"}}}"}, SP_ECAPACITY},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct canned script[] = {cases[i].first, {.body = REFUSED}};
		struct fake f = {0};
		struct sp_error err = {0};
		assert_int_equal(launch(&f, script, 2, &err), cases[i].want);
		assert_int_equal(atomic_load(&f.n), 2);
		assert_string_equal(jstr(f.requests[0], "ClientToken"), "tok-1");
		assert_string_equal(jstr(f.requests[1], "ClientToken"), "tok-1");
		assert_string_equal(err.reason, "ResourceInsufficient.SpecifiedInstanceType");
		if (cases[i].want == SP_ETRANSIENT)
			assert_contains(err.msg, "RunInstances: outcome unknown");
		fake_free(&f);
	}
	/* A refusal at the first attempt is definitive. */
	const struct canned refused[] = {{.body = REFUSED}};
	struct fake f = {0};
	struct sp_error err = {0};
	assert_int_equal(launch(&f, refused, 1, &err), SP_ECAPACITY);
	assert_int_equal(atomic_load(&f.n), 1);
	fake_free(&f);
}

/* In a child (the abort cannot be undone): the call in flight, or in its retry
 * backoff, ends promptly after http_abort_all() (both wait on its eventfd; the bound
 * leaves room for a loaded machine), and no call starts after it. */
static int abort_child(struct fake *f)
{
	struct pool_spec s = sample_spec();
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-1"};
	struct strv ids = {0};
	struct sp_error err = {0};
	struct cvm_client *c = fake_client(f, 3);
	pthread_t t;
	pthread_create(&t, NULL, test_abort_soon, NULL);
	int64_t start = sp_mono_ms();
	int r = cvm_run_instances(c, &test_cred, &l, &ids, &err);
	int64_t took = sp_mono_ms() - start;
	pthread_join(t, NULL);
	if (r != SP_ETRANSIENT || !strstr(err.msg, "aborted (shutting down)") || took > 3000) {
		fprintf(stderr, "abort: r=%d after %lld ms: %s\n", r, (long long)took, err.msg);
		return 1;
	}
	/* Calls that would start new work now fail at once (the parent counts requests). */
	r = cvm_run_instances(c, &test_cred, &l, &ids, &err);
	if (r != SP_ETRANSIENT || !strstr(err.msg, "aborted (shutting down)")) {
		fprintf(stderr, "after abort: r=%d: %s\n", r, err.msg);
		return 1;
	}
	cvm_client_free(c);
	/* Other requests still run (the shutdown writes its status, releases its lease). */
	struct http_client *h = http_client_new(NULL);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f->port);
	struct http_request req = {.method = "GET", .url = url, .timeout_ms = 5000};
	struct http_response resp;
	r = http_do(h, &req, &resp, &err);
	http_response_free(&resp);
	http_client_free(h);
	if (r != 0) {
		fprintf(stderr, "plain request after abort: %s\n", err.msg);
		return 1;
	}
	return 0;
}

/* Every attempt takes a token of its (SecretId, region, action) bucket, and a
 * RequestLimitExceeded answer halves that bucket's rate (and only that one). */
static void test_rate_limit(void **state)
{
	(void)state;
	const struct canned script[] = {
		{.body = "{\"Response\": {\"Error\": {\"Code\": \"RequestLimitExceeded.UinLimitExceeded\"}}}"},
		{.body = "{\"Response\": {\"InstanceIdSet\": [\"ins-1\"]}}"},
	};
	struct fake f = {0};
	assert_int_equal(launch(&f, script, 2, NULL), 0);
	assert_int_equal(atomic_load(&f.n), 2);
	struct rate_state st;
	assert_int_equal(rate_peek(f.rate, test_cred.secret_id, "ap-singapore", "RunInstances", &st), 0);
	assert_true(st.throttled);
	assert_true(st.per_second == RATE_DEFAULT_RUN / 2.0);
	assert_int_equal(rate_peek(f.rate, test_cred.secret_id, "ap-singapore", "DescribeInstances", &st), SP_ENOTFOUND);
	assert_int_equal(rate_peek(f.rate, "AKIDother", "ap-singapore", "RunInstances", &st), SP_ENOTFOUND);
	fake_free(&f);
}

static void test_abort(void **state)
{
	(void)state;
	const struct canned in_flight[] = {{.body = "{\"Response\": {}}", .delay_ms = 10000}, {.body = "{}"}};
	const struct canned in_backoff[] = {{.body = "{\"Response\": {\"Error\": {\"Code\": \"InternalError\"}}}"},
					    {.body = "{}"}};
	const struct canned *scripts[] = {in_flight, in_backoff};
	for (size_t i = 0; i < 2; i++) {
		struct fake f = {.script = scripts[i], .n_script = 3};
		fake_start(&f);
		/* A fresh process, not a fork of this threaded one (ThreadSanitizer cannot
		 * follow a child that starts threads after such a fork). */
		char port[16];
		snprintf(port, sizeof(port), "%d", f.port);
		char *argv[] = {"test_cvm", "--abort-child", port, NULL};
		pid_t pid;
		assert_int_equal(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ), 0);
		int status = 0;
		waitpid(pid, &status, 0);
		fake_stop(&f);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		/* The aborted RunInstances, then only the plain request. */
		assert_int_equal(atomic_load(&f.n), 2);
		assert_string_equal(f.actions[0], "RunInstances");
		assert_string_equal(f.actions[1], "");
		fake_free(&f);
	}
}

/* A leader's deadline already past (0: it stepped down): no request at all, not even a
 * rate-limit token, for a launch, a termination or a lookup. */
static void test_deadline_past(void **state)
{
	(void)state;
	const struct canned script[] = {{.body = "{\"Response\": {\"InstanceIdSet\": [\"ins-1\"]}}"}};
	struct fake f = {.script = script, .n_script = 1};
	fake_start(&f);
	struct cvm_client *c = fake_client(&f, 3);
	struct pool_spec s = sample_spec();
	_Atomic int64_t until = 0;
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-1", .until = &until};
	struct strv ids = {0};
	struct sp_error err = {0};
	assert_int_equal(cvm_run_instances(c, &test_cred, &l, &ids, &err), SP_ETRANSIENT);
	assert_non_null(strstr(err.msg, "leadership ends before the call could be made"));
	atomic_store(&until, sp_mono_ms() - 1);
	struct strv victims = {0};
	strv_push(&victims, "ins-00000001");
	err = (struct sp_error){0};
	assert_int_equal(cvm_terminate_instances(c, &test_cred, "ap-singapore", &victims, &until, &err),
			 SP_ETRANSIENT);
	assert_non_null(strstr(err.msg, "leadership ends before the call could be made"));
	struct pool_instance *found = NULL;
	size_t n_found = 0;
	err = (struct sp_error){0};
	assert_int_equal(cvm_describe_ids(c, &test_cred, "ap-singapore", &victims, &until, &found, &n_found,
					  &err), SP_ETRANSIENT);
	assert_null(found);
	strv_clear(&victims);
	assert_int_equal(ids.n, 0);
	cvm_client_free(c);
	fake_stop(&f);
	assert_int_equal(atomic_load(&f.n), 0);
	struct rate_state st;
	assert_int_equal(rate_peek(f.rate, test_cred.secret_id, "ap-singapore", "RunInstances", &st), SP_ENOTFOUND);
	assert_int_equal(rate_peek(f.rate, test_cred.secret_id, "ap-singapore", "TerminateInstances", &st), SP_ENOTFOUND);
	fake_free(&f);
}

/* The deadline passes during a slow first attempt (the fake holds its reply 5 s, the
 * client's timeout is 30 s): that attempt's timeout is cut to the time left and no
 * second one is made, so the call returns within the deadline and a little slack. */
static void test_deadline_during_attempt(void **state)
{
	(void)state;
	const struct canned script[] = {
		{.body = "{\"Response\": {\"InstanceIdSet\": [\"ins-1\"]}}", .delay_ms = 5000},
		{.body = "{\"Response\": {\"InstanceIdSet\": [\"ins-1\"]}}"},
	};
	struct fake f = {.script = script, .n_script = 2};
	fake_start(&f);
	struct cvm_client *c = fake_client(&f, 3);
	struct pool_spec s = sample_spec();
	int64_t start = sp_mono_ms();
	_Atomic int64_t until = start + 400;
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-1", .until = &until};
	struct strv ids = {0};
	struct sp_error err = {0};
	int r = cvm_run_instances(c, &test_cred, &l, &ids, &err);
	int64_t took = sp_mono_ms() - start;
	assert_int_equal(r, SP_ETRANSIENT);
	assert_int_equal(ids.n, 0);
	assert_true(took >= 350);
	assert_true(took < 400 + 250);
	/* The timed-out attempt may have launched: the message says so and why it stopped. */
	assert_non_null(strstr(err.msg, "leadership ends before the call could be made"));
	cvm_client_free(c);
	fake_stop(&f);
	assert_int_equal(atomic_load(&f.n), 1);
	fake_free(&f);
}

/* Steps down (sets the deadline to 0) after `after_ms`, as the lease thread does. */
struct step_down {
	_Atomic int64_t *until;
	int after_ms;
};

static void *step_down_later(void *arg)
{
	struct step_down *sd = arg;
	usleep((useconds_t)sd->after_ms * 1000);
	atomic_store(sd->until, 0);
	return NULL;
}

/* A step-down is seen while the call waits: in the backoff before a retry (the first
 * attempt failed with a 503), and between the batches of a termination of more than 100
 * IDs (the first batch is slow). Neither the retry nor the second batch is sent, though
 * the deadline first given was far away. */
static void test_step_down_mid_call(void **state)
{
	(void)state;
	const struct canned retry_script[] = {
		{.body = "{\"Response\": {\"Error\": {\"Code\": \"InternalError\", \"Message\": \"x\"}}}",
		 .status = 503},
		{.body = "{\"Response\": {\"InstanceIdSet\": [\"ins-1\"]}}"},
	};
	struct fake f = {.script = retry_script, .n_script = 2};
	fake_start(&f);
	struct cvm_client *c = fake_client(&f, 3);
	struct pool_spec s = sample_spec();
	_Atomic int64_t until = sp_mono_ms() + 60000;
	struct step_down sd = {.until = &until, .after_ms = 80};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, step_down_later, &sd), 0);
	struct cvm_launch l = {.spec = &s, .count = 1, .client_token = "tok-1", .until = &until};
	struct strv ids = {0};
	struct sp_error err = {0};
	int64_t start = sp_mono_ms();
	assert_int_equal(cvm_run_instances(c, &test_cred, &l, &ids, &err), SP_ETRANSIENT);
	pthread_join(t, NULL);
	assert_true(sp_mono_ms() - start < 400);
	assert_non_null(strstr(err.msg, "leadership ends before the call could be made"));
	cvm_client_free(c);
	fake_stop(&f);
	assert_int_equal(atomic_load(&f.n), 1);
	fake_free(&f);

	const struct canned batch_script[] = {
		{.body = "{\"Response\": {}}", .delay_ms = 300},
		{.body = "{\"Response\": {}}"},
	};
	f = (struct fake){.script = batch_script, .n_script = 2};
	fake_start(&f);
	c = fake_client(&f, 3);
	atomic_store(&until, sp_mono_ms() + 60000);
	sd = (struct step_down){.until = &until, .after_ms = 100};
	assert_int_equal(pthread_create(&t, NULL, step_down_later, &sd), 0);
	struct strv victims = {0};
	for (int i = 0; i < 150; i++) {
		char id[32];
		snprintf(id, sizeof(id), "ins-%08d", i);
		strv_push(&victims, id);
	}
	err = (struct sp_error){0};
	assert_int_equal(cvm_terminate_instances(c, &test_cred, "ap-singapore", &victims, &until, &err),
			 SP_ETRANSIENT);
	pthread_join(t, NULL);
	assert_non_null(strstr(err.msg, "leadership ends before the call could be made"));
	strv_clear(&victims);
	cvm_client_free(c);
	fake_stop(&f);
	assert_int_equal(atomic_load(&f.n), 1);
	fake_free(&f);
}

/* STS GetCallerIdentity: signed for service sts, version 2018-08-13, at the STS endpoint;
 * the AccountId taken, checked; one attempt, a bounded reply. */
static void test_caller_identity(void **state)
{
	(void)state;
	static const struct canned script[] = {
		{"{\"Response\":{\"Arn\":\"qcs::cam::uin/100000000001:uin/100000000001\",\"AccountId\":\"100000000001\","
		 "\"UserId\":\"100000000001\",\"PrincipalId\":\"100000000001\",\"Type\":\"RootAccount\","
		 "\"RequestId\":\"r1\"}}", 0, 0},
		{"{\"Response\":{\"Error\":{\"Code\":\"AuthFailure.SecretIdNotFound\",\"Message\":\"no\"},\"RequestId\":\"r2\"}}", 0, 0},
		{"{\"Response\":{\"Error\":{\"Code\":\"InternalError\",\"Message\":\"busy\"},\"RequestId\":\"r3\"}}", 0, 0},
		{"{\"Response\":{\"Arn\":\"x\",\"RequestId\":\"r4\"}}", 0, 0},
		{"", 503, 0},
	};
	struct fake f = {.script = script, .n_script = sizeof(script) / sizeof(*script)};
	fake_start(&f);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f.port);
	/* The CVM endpoint elsewhere: STS calls go to their own. */
	struct cvm_config cfg = {.endpoint = "http://127.0.0.1:9/", .sts_endpoint = url, .max_attempts = 3,
				 .timeout_ms = 30000, .rate = f.rate};
	struct cvm_client *c = cvm_client_new(&cfg);
	char account[CVM_ACCOUNT_ID_MAX + 1] = "untouched";
	struct sp_error err = {0};
	assert_int_equal(cvm_caller_identity(c, &test_cred, "ap-singapore", NULL, account, &err), 0);
	assert_string_equal(account, "100000000001");
	assert_string_equal(f.actions[0], "GetCallerIdentity");
	assert_string_equal(f.scopes[0], "sts 2018-08-13");
	assert_int_equal(cJSON_GetArraySize(f.requests[0]), 0);  /* no parameters */
	snprintf(account, sizeof(account), "untouched");
	assert_int_equal(cvm_caller_identity(c, &test_cred, "ap-singapore", NULL, account, &err), SP_EAUTH);
	assert_string_equal(err.reason, "AuthFailure.SecretIdNotFound");
	/* Transient, malformed and 5xx answers: one attempt each (the cache asks later). */
	assert_int_equal(cvm_caller_identity(c, &test_cred, "ap-singapore", NULL, account, &err), SP_ETRANSIENT);
	assert_int_equal(cvm_caller_identity(c, &test_cred, "ap-singapore", NULL, account, &err), SP_EPROTO);
	assert_contains(err.msg, "AccountId: missing");
	assert_int_equal(cvm_caller_identity(c, &test_cred, "ap-singapore", NULL, account, &err), SP_ETRANSIENT);
	assert_int_equal(atomic_load(&f.n), 5);
	assert_string_equal(account, "untouched");
	fake_stop(&f);
	fake_free(&f);

	/* A reply past CVM_STS_RESPONSE_MAX is refused, not buffered. */
	size_t big = CVM_STS_RESPONSE_MAX + 100;
	char *body = xmalloc(big + 64);
	int n = snprintf(body, big + 64, "{\"Response\":{\"AccountId\":\"100000000001\",\"Pad\":\"");
	memset(body + n, 'x', big);
	snprintf(body + n + big, 64, "\"}}");
	struct canned huge[] = {{body, 0, 0}};
	f = (struct fake){.script = huge, .n_script = 1};
	fake_start(&f);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f.port);
	cvm_client_free(c);
	cfg.rate = f.rate;
	c = cvm_client_new(&cfg);
	assert_int_equal(cvm_caller_identity(c, &test_cred, "ap-singapore", NULL, account, &err), SP_ETOOBIG);
	assert_string_equal(account, "untouched");
	fake_stop(&f);
	fake_free(&f);
	cvm_client_free(c);
	free(body);
}

/* A GetCallerIdentity Response's AccountId, and what is not one. */
static void test_parse_caller_identity(void **state)
{
	(void)state;
	static const struct {
		const char *response;
		int want;
		const char *account_or_error;
	} cases[] = {
		{"{\"AccountId\":\"100000000001\",\"Arn\":\"a\",\"Type\":\"CAMUser\"}", 0, "100000000001"},
		{"{\"AccountId\":\"abc-DEF_1.2\"}", 0, "abc-DEF_1.2"},
		{"{\"Arn\":\"a\",\"UserId\":\"1\"}", SP_EPROTO, "AccountId: missing"},
		{"{\"AccountId\":100000000001}", SP_EPROTO, "AccountId: not a string"},
		{"{\"AccountId\":null}", SP_EPROTO, "AccountId: not a string"},
		{"{\"AccountId\":\"\"}", SP_EPROTO, "AccountId: 0 characters, want 1 to 64"},
		{"{\"AccountId\":\"1234567890123456789012345678901234567890123456789012345678901234\"}", 0,
		 "1234567890123456789012345678901234567890123456789012345678901234"},
		{"{\"AccountId\":\"12345678901234567890123456789012345678901234567890123456789012345\"}", SP_EPROTO,
		 "AccountId: 65 characters"},
		{"{\"AccountId\":\"1000 0001\"}", SP_EPROTO, "AccountId: not an account ID"},
		{"{\"AccountId\":\"1000/0001\"}", SP_EPROTO, "AccountId: not an account ID"},
		{"{\"AccountId\":\"100\\n\"}", SP_EPROTO, "AccountId: not an account ID"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		cJSON *r = cJSON_Parse(cases[i].response);
		assert_non_null(r);
		char account[CVM_ACCOUNT_ID_MAX + 1] = "untouched";
		struct sp_error err = {0};
		int got = cvm_parse_caller_identity(r, account, &err);
		cJSON_Delete(r);
		if (got != cases[i].want)
			fail_msg("case %zu: %d, want %d (%s)", i, got, cases[i].want, err.msg);
		if (got == 0)
			assert_string_equal(account, cases[i].account_or_error);
		else {
			assert_contains(err.msg, cases[i].account_or_error);
			assert_string_equal(account, "untouched");
		}
	}
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

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--abort-child") == 0) {  /* test_abort's child */
		struct fake f = {.port = atoi(argv[2]), .rate = rate_new(&(struct rate_config){0})};
		int r = abort_child(&f);
		rate_free(f.rate);
		return r;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_classes),
		cmocka_unit_test(test_sold_out_codes),
		cmocka_unit_test(test_run_request_shape),
		cmocka_unit_test(test_run_request_offering),
		cmocka_unit_test(test_parse_instances),
		cmocka_unit_test(test_cluster_tag),
		cmocka_unit_test(test_long_owner_tag),
		cmocka_unit_test(test_parse_rejects_malformed),
		cmocka_unit_test(test_describe_pages),
		cmocka_unit_test(test_describe_inconsistent_paging),
		cmocka_unit_test(test_describe_10k),
		cmocka_unit_test(test_find_launched),
		cmocka_unit_test(test_describe_ids),
		cmocka_unit_test(test_describe_status),
		cmocka_unit_test(test_describe_status_bad_answers),
		cmocka_unit_test(test_refusal_after_uncertain_attempt),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_deadline_past),
		cmocka_unit_test(test_deadline_during_attempt),
		cmocka_unit_test(test_step_down_mid_call),
		cmocka_unit_test(test_redaction),
		cmocka_unit_test(test_parse_instance_types),
		cmocka_unit_test(test_parse_instance_types_rejects),
		cmocka_unit_test(test_describe_instance_types),
		cmocka_unit_test(test_caller_identity),
		cmocka_unit_test(test_parse_caller_identity),
	};
	return cmocka_run_group_tests_name("cvm", tests, NULL, NULL);
}
