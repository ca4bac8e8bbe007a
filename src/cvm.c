/* cvm: signed CVM API calls with error classes, paging, batching and retries. */
#include "cvm.h"
#include "log.h"
#include "tc3.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define CVM_CONTENT_TYPE "application/json; charset=utf-8"

struct cvm_client {
	char *endpoint;
	long timeout_ms;
	int max_attempts;
	const struct http_tls *tls;
	cvm_observe_fn observe;
	void *observe_userdata;
	struct http_client *http;
};

struct cvm_client *cvm_client_new(const struct cvm_config *cfg)
{
	struct cvm_client *c = xcalloc(1, sizeof(*c));
	c->endpoint = cfg->endpoint && *cfg->endpoint ? xstrdup(cfg->endpoint) : NULL;
	c->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 15000;
	c->max_attempts = cfg->max_attempts ? cfg->max_attempts : 3;
	c->tls = cfg->tls;
	c->observe = cfg->observe;
	c->observe_userdata = cfg->observe_userdata;
	c->http = http_client_new(cfg->user_agent);
	return c;
}

void cvm_client_free(struct cvm_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	free(c->endpoint);
	free(c);
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int cvm_classify_code(const char *code)
{
	static const char *const capacity[] = {
		"ResourceInsufficient", "ResourcesSoldOut", "ResourceUnavailable",
		"InvalidParameterValue.InsufficientOffering", "InvalidParameterValue.InsufficientPrice",
		"LimitExceeded.SpotQuota", "LimitExceeded.UserSpotQuota", "LimitExceeded.InstanceQuota",
		NULL,
	};
	static const char *const gone[] = {
		"InvalidInstanceId.NotFound", "UnsupportedOperation.InstanceStateTerminating",
		"UnsupportedOperation.InstanceStateTerminated", NULL,
	};
	static const char *const transient[] = {
		"InternalError", "InternalServerError", "ServiceUnavailable", "FailedOperation.RequestTimeout",
		"ResourceInUse", NULL,
	};
	if (has_prefix(code, "AuthFailure") || has_prefix(code, "UnauthorizedOperation"))
		return SP_EAUTH;
	if (has_prefix(code, "RequestLimitExceeded"))
		return SP_ETHROTTLED;
	for (size_t i = 0; capacity[i]; i++)
		if (has_prefix(code, capacity[i]))
			return SP_ECAPACITY;
	for (size_t i = 0; gone[i]; i++)
		if (strcmp(code, gone[i]) == 0)
			return SP_ENOTFOUND;
	for (size_t i = 0; transient[i]; i++)
		if (has_prefix(code, transient[i]))
			return SP_ETRANSIENT;
	return SP_ECONFIG;
}

static void observe(struct cvm_client *c, const char *action, const char *code, int64_t start_ms)
{
	if (c->observe)
		c->observe(c->observe_userdata, action, code, (double)(sp_mono_ms() - start_ms) / 1000.0);
}

static void backoff_sleep(int attempt)
{
	long ms = 200L << attempt;
	ms += (long)(sp_mono_ms() % 100);
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* One HTTP exchange; fills ret_response on a well-formed non-error reply. */
static int call_once(struct cvm_client *c, const struct cvm_credentials *cred, const char *url,
		     const char *host, const char *region, const char *action, const char *body,
		     cJSON **ret_response, struct sp_error *err)
{
	int64_t start = sp_mono_ms();
	struct tc3_input in = {
		.secret_id = cred->secret_id, .secret_key = cred->secret_key, .service = "cvm",
		.timestamp = sp_now(), .body = body, .body_len = strlen(body),
		.headers = {{"content-type", CVM_CONTENT_TYPE}, {"host", host}}, .n_headers = 2,
	};
	struct tc3_result sig;
	int r = tc3_sign(&in, &sig, err);
	if (r < 0)
		return r;

	char h_ct[] = "Content-Type: " CVM_CONTENT_TYPE;
	char *h_host = xasprintf("Host: %s", host);
	char *h_action = xasprintf("X-TC-Action: %s", action);
	char *h_ts = xasprintf("X-TC-Timestamp: %lld", (long long)in.timestamp);
	char *h_region = xasprintf("X-TC-Region: %s", region);
	char *h_auth = xasprintf("Authorization: %s", sig.authorization);
	char *h_token = cred->token && *cred->token ? xasprintf("X-TC-Token: %s", cred->token) : NULL;
	explicit_bzero(&sig, sizeof(sig));
	const char *headers[] = {h_ct, h_host, h_action, "X-TC-Version: " CVM_API_VERSION, h_ts,
				 h_region, h_auth, h_token};
	struct http_request req = {
		.method = "POST", .url = url, .headers = headers,
		.n_headers = h_token ? 8 : 7, .body = body, .body_len = strlen(body),
		.timeout_ms = c->timeout_ms, .max_response = CVM_RESPONSE_MAX, .tls = c->tls,
	};
	struct http_response resp;
	r = http_do(c->http, &req, &resp, err);
	free(h_host), free(h_action), free(h_ts), free(h_region), free(h_auth);
	sp_secure_free(h_token);
	if (r < 0) {
		observe(c, action, "NetworkError", start);
		sp_error_prefix(err, "%s: ", action);
		http_response_free(&resp);
		return r;
	}
	if (resp.status != 200) {
		char code[32];
		snprintf(code, sizeof(code), "HTTP%ld", resp.status);
		observe(c, action, code, start);
		http_response_free(&resp);
		/* Tencent answers errors with 200; another status comes from something in
		 * between (a gateway, a wrong endpoint): 4xx will not heal by retrying. */
		r = resp.status == 429 ? SP_ETHROTTLED : resp.status >= 500 ? SP_ETRANSIENT : SP_ECONFIG;
		return sp_fail(err, r, "%s: HTTP status %ld from %s", action, resp.status, host);
	}
	cJSON *root = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "", resp.body.len);
	http_response_free(&resp);
	cJSON *response = cJSON_DetachItemFromObjectCaseSensitive(root, "Response");
	cJSON_Delete(root);
	if (!cJSON_IsObject(response)) {
		cJSON_Delete(response);
		observe(c, action, "MalformedResponse", start);
		return sp_fail(err, SP_EPROTO, "%s: malformed response from %s (no Response object)",
			       action, host);
	}
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(response, "Error");
	if (!error) {
		observe(c, action, "Success", start);
		*ret_response = response;
		return 0;
	}
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "Code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(error, "Message");
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(response, "RequestId");
	const char *code_s = cJSON_IsString(code) ? code->valuestring : "UnknownError";
	observe(c, action, code_s, start);
	r = sp_fail(err, cvm_classify_code(code_s), "%s: %s: %.200s (RequestId %.64s)", action, code_s,
		    cJSON_IsString(msg) ? msg->valuestring : "",
		    cJSON_IsString(rid) ? rid->valuestring : "none");
	if (err)
		snprintf(err->reason, sizeof(err->reason), "%s", code_s);
	cJSON_Delete(response);
	return r;
}

int cvm_call(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
	     const char *action, const cJSON *params, cJSON **ret_response, struct sp_error *err)
{
	char *url, *host = NULL;
	int r;
	if (c->endpoint) {
		url = xstrdup(c->endpoint);
		if ((r = http_url_host(url, &host, err)) < 0) {
			free(url);
			return r;
		}
	} else {
		host = xasprintf("cvm.%s.tencentcloudapi.com", region);
		url = xasprintf("https://%s/", host);
	}
	char *body = cJSON_PrintUnformatted(params);
	struct sp_error local = {0};
	for (int attempt = 0;; attempt++) {
		local = (struct sp_error){0};
		r = call_once(c, cred, url, host, region, action, body, ret_response, &local);
		if (r == 0 || !(r == SP_ETHROTTLED || r == SP_ETRANSIENT || r == SP_EPROTO) ||
		    attempt + 1 >= c->max_attempts)
			break;
		log_debug("%s: attempt %d failed (%s), retrying", action, attempt + 1, local.msg);
		backoff_sleep(attempt);
	}
	if (r < 0 && err)
		*err = local;
	cJSON_free(body);
	free(url);
	free(host);
	return r;
}

int64_t cvm_parse_time(const char *iso)
{
	struct tm tm = {0};
	const char *rest = iso ? strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	if (!rest)
		return 0;
	int64_t t = (int64_t)timegm(&tm);
	int sign, hh, mm;
	if (*rest == 'Z' || *rest == '\0')
		return t;
	if ((*rest == '+' || *rest == '-') && sscanf(rest + 1, "%2d:%2d", &hh, &mm) == 2) {
		sign = *rest == '+' ? 1 : -1;
		return t - sign * (hh * 3600 + mm * 60);
	}
	return 0;
}

static void copy_field(char *dst, size_t cap, const cJSON *v)
{
	if (cJSON_IsArray(v))
		v = cJSON_GetArrayItem(v, 0);
	snprintf(dst, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

int cvm_parse_instances(const cJSON *response, struct pool_instance **instances, size_t *n,
			size_t *ret_total, struct sp_error *err)
{
	const cJSON *total = cJSON_GetObjectItemCaseSensitive(response, "TotalCount");
	const cJSON *set = cJSON_GetObjectItemCaseSensitive(response, "InstanceSet");
	if (!cJSON_IsNumber(total) || total->valuedouble < 0 || !(cJSON_IsArray(set) || cJSON_IsNull(set)))
		return sp_fail(err, SP_EPROTO, "DescribeInstances: malformed response (TotalCount/InstanceSet)");
	const cJSON *it;
	cJSON_ArrayForEach(it, set) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "InstanceId");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(it, "InstanceState");
		if (!cJSON_IsString(id) || !cJSON_IsString(state) || !*id->valuestring ||
		    strlen(id->valuestring) >= sizeof((*instances)->id))
			return sp_fail(err, SP_EPROTO, "DescribeInstances: malformed response (instance without a valid "
				       "InstanceId/InstanceState)");
		bool dup = false;
		for (size_t i = 0; i < *n && !dup; i++)
			dup = strcmp((*instances)[i].id, id->valuestring) == 0;
		if (dup)  /* paging over a changing set can repeat an instance */
			continue;
		if (*n >= CVM_DESCRIBE_MAX_INSTANCES)
			return sp_fail(err, SP_ETOOBIG, "DescribeInstances: more than %d instances",
				       CVM_DESCRIBE_MAX_INSTANCES);
		*instances = xrealloc(*instances, (*n + 1) * sizeof(**instances));
		struct pool_instance *in = &(*instances)[(*n)++];
		memset(in, 0, sizeof(*in));
		copy_field(in->id, sizeof(in->id), id);
		copy_field(in->state, sizeof(in->state), state);
		copy_field(in->zone, sizeof(in->zone), cJSON_GetObjectItemCaseSensitive(
				   cJSON_GetObjectItemCaseSensitive(it, "Placement"), "Zone"));
		copy_field(in->instance_type, sizeof(in->instance_type),
			   cJSON_GetObjectItemCaseSensitive(it, "InstanceType"));
		copy_field(in->private_ip, sizeof(in->private_ip),
			   cJSON_GetObjectItemCaseSensitive(it, "PrivateIpAddresses"));
		copy_field(in->public_ip, sizeof(in->public_ip),
			   cJSON_GetObjectItemCaseSensitive(it, "PublicIpAddresses"));
		copy_field(in->created_time, sizeof(in->created_time),
			   cJSON_GetObjectItemCaseSensitive(it, "CreatedTime"));
		in->created = cvm_parse_time(in->created_time);
	}
	*ret_total = (size_t)total->valuedouble;
	return 0;
}

int cvm_describe_tagged(struct cvm_client *c, const struct cvm_credentials *cred,
			const char *region, const char *tag_key, const char *tag_value,
			struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	struct pool_instance *list = NULL;
	size_t n = 0, total = 0;
	int r = 0;
	for (size_t offset = 0;; offset += CVM_PAGE_LIMIT) {
		cJSON *req = cJSON_CreateObject();
		cJSON *filters = cJSON_AddArrayToObject(req, "Filters");
		cJSON *f = cJSON_CreateObject();
		cJSON_AddItemToArray(filters, f);
		char *name = tag_value ? xasprintf("tag:%s", tag_key) : xstrdup("tag-key");
		cJSON_AddStringToObject(f, "Name", name);
		free(name);
		cJSON *values = cJSON_AddArrayToObject(f, "Values");
		cJSON_AddItemToArray(values, cJSON_CreateString(tag_value ? tag_value : tag_key));
		cJSON_AddNumberToObject(req, "Offset", (double)offset);
		cJSON_AddNumberToObject(req, "Limit", CVM_PAGE_LIMIT);
		cJSON *resp = NULL;
		r = cvm_call(c, cred, region, "DescribeInstances", req, &resp, err);
		cJSON_Delete(req);
		if (r < 0)
			break;
		r = cvm_parse_instances(resp, &list, &n, &total, err);
		int page = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(resp, "InstanceSet"));
		cJSON_Delete(resp);
		if (r < 0 || page == 0 || offset + CVM_PAGE_LIMIT >= total)
			break;
	}
	if (r < 0) {
		free(list);
		return r;
	}
	*ret_instances = list;
	*ret_n = n;
	return 0;
}

static void add_strv_array(cJSON *obj, const char *name, const struct strv *l)
{
	cJSON *a = cJSON_AddArrayToObject(obj, name);
	for (size_t i = 0; i < l->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(l->v[i]));
}

static cJSON *tag(const char *key, const char *value)
{
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "Key", key);
	cJSON_AddStringToObject(t, "Value", value);
	return t;
}

cJSON *cvm_run_request(const struct cvm_launch *l)
{
	const struct pool_spec *s = l->spec;
	cJSON *req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "InstanceChargeType", s->charge_type);
	if (strcmp(s->charge_type, "SPOTPAID") == 0) {
		cJSON *market = cJSON_AddObjectToObject(req, "InstanceMarketOptions");
		cJSON_AddStringToObject(market, "MarketType", "spot");
		/* Without a bid Tencent charges the current spot price: only send one if set. */
		if (s->max_price) {
			cJSON *spot = cJSON_AddObjectToObject(market, "SpotOptions");
			cJSON_AddStringToObject(spot, "MaxPrice", s->max_price);
			cJSON_AddStringToObject(spot, "SpotInstanceType", "one-time");
		}
	}
	cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "Placement"), "Zone", s->zone);
	cJSON_AddStringToObject(req, "InstanceType", s->instance_type);
	cJSON_AddStringToObject(req, "ImageId", s->image_id);
	if (s->vpc_id) {
		cJSON *vpc = cJSON_AddObjectToObject(req, "VirtualPrivateCloud");
		cJSON_AddStringToObject(vpc, "VpcId", s->vpc_id);
		cJSON_AddStringToObject(vpc, "SubnetId", s->subnet_id);
	}
	if (s->security_group_ids.n)
		add_strv_array(req, "SecurityGroupIds", &s->security_group_ids);
	cJSON *net = cJSON_AddObjectToObject(req, "InternetAccessible");
	cJSON_AddStringToObject(net, "InternetChargeType", "TRAFFIC_POSTPAID_BY_HOUR");
	cJSON_AddNumberToObject(net, "InternetMaxBandwidthOut", s->internet_max_bandwidth_out);
	cJSON_AddBoolToObject(net, "PublicIpAssigned", s->internet_max_bandwidth_out > 0);
	if (s->system_disk_type || s->system_disk_size) {
		cJSON *disk = cJSON_AddObjectToObject(req, "SystemDisk");
		if (s->system_disk_type)
			cJSON_AddStringToObject(disk, "DiskType", s->system_disk_type);
		if (s->system_disk_size)
			cJSON_AddNumberToObject(disk, "DiskSize", s->system_disk_size);
	}
	if (s->key_ids.n)
		add_strv_array(cJSON_AddObjectToObject(req, "LoginSettings"), "KeyIds", &s->key_ids);
	if (s->user_data)
		cJSON_AddStringToObject(req, "UserData", s->user_data);
	cJSON_AddNumberToObject(req, "InstanceCount", l->count);
	if (l->client_token)
		cJSON_AddStringToObject(req, "ClientToken", l->client_token);
	char *name = xasprintf("spotpool-%s-%s", s->namespace, s->name);
	if (strlen(name) > 60)
		name[60] = '\0';
	cJSON_AddStringToObject(req, "InstanceName", name);
	free(name);
	cJSON *spec = cJSON_CreateObject();
	cJSON_AddStringToObject(spec, "ResourceType", "instance");
	cJSON *tags = cJSON_AddArrayToObject(spec, "Tags");
	char *identity = pool_tag_value(s);
	cJSON_AddItemToArray(tags, tag(POOL_TAG_KEY, identity));
	free(identity);
	for (size_t i = 0; i < s->n_tags; i++)
		cJSON_AddItemToArray(tags, tag(s->tags[i].key, s->tags[i].value));
	cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "TagSpecification"), spec);
	if (l->dry_run)
		cJSON_AddBoolToObject(req, "DryRun", 1);
	return req;
}

int cvm_run_instances(struct cvm_client *c, const struct cvm_credentials *cred,
		      const struct cvm_launch *launch, struct strv *ret_ids, struct sp_error *err)
{
	if (launch->count < 1 || launch->count > 100)
		return sp_fail(err, SP_EINVAL, "RunInstances: InstanceCount %d outside 1..100", launch->count);
	if (launch->client_token && strlen(launch->client_token) > 64)
		return sp_fail(err, SP_EINVAL, "RunInstances: ClientToken longer than 64 characters");
	cJSON *req = cvm_run_request(launch);
	cJSON *resp = NULL;
	struct sp_error local = {0};
	int r = cvm_call(c, cred, launch->spec->region, "RunInstances", req, &resp, &local);
	cJSON_Delete(req);
	/* A passed dry run may also be reported as the error code DryRunOperation. */
	if (r < 0 && launch->dry_run && strcmp(local.reason, "DryRunOperation") == 0)
		return 0;
	if (r < 0) {
		if (err)
			*err = local;
		return r;
	}
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(resp, "InstanceIdSet");
	struct strv got = {0};
	const cJSON *id;
	cJSON_ArrayForEach(id, ids)
		if (cJSON_IsString(id) && strlen(id->valuestring) < 32)
			strv_push(&got, id->valuestring);
	cJSON_Delete(resp);
	if (!launch->dry_run && got.n == 0) {
		strv_clear(&got);
		return sp_fail(err, SP_EPROTO, "RunInstances: no InstanceIdSet in a successful response");
	}
	for (size_t i = 0; i < got.n; i++)
		strv_push(ret_ids, got.v[i]);
	strv_clear(&got);
	return 0;
}

static int terminate_batch(struct cvm_client *c, const struct cvm_credentials *cred,
			   const char *region, char *const *ids, size_t n, struct sp_error *err)
{
	cJSON *req = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(req, "InstanceIds");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(ids[i]));
	cJSON *resp = NULL;
	int r = cvm_call(c, cred, region, "TerminateInstances", req, &resp, err);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return r;
}

int cvm_terminate_instances(struct cvm_client *c, const struct cvm_credentials *cred,
			    const char *region, const struct strv *ids, struct sp_error *err)
{
	for (size_t off = 0; off < ids->n; off += CVM_TERMINATE_BATCH) {
		size_t n = ids->n - off < CVM_TERMINATE_BATCH ? ids->n - off : CVM_TERMINATE_BATCH;
		int r = terminate_batch(c, cred, region, ids->v + off, n, err);
		if ((r == SP_ENOTFOUND || r == SP_ECONFIG) && n > 1) {
			/* One gone instance, or one of another charge type, fails the whole call:
			 * settle them one by one. */
			for (size_t i = 0; i < n; i++) {
				r = terminate_batch(c, cred, region, ids->v + off + i, 1, err);
				if (r < 0 && r != SP_ENOTFOUND)
					return r;
			}
			r = 0;
		}
		if (r < 0 && r != SP_ENOTFOUND)
			return r;
	}
	return 0;
}
