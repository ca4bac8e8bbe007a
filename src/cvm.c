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
	char *sts_endpoint;
	long timeout_ms;
	int max_attempts;
	const struct http_tls *tls;
	cvm_observe_fn observe;
	void *observe_userdata;
	struct rate *rate;
	struct http_client *http;
};

struct cvm_client *cvm_client_new(const struct cvm_config *cfg)
{
	struct cvm_client *c = xcalloc(1, sizeof(*c));
	c->endpoint = cfg->endpoint && *cfg->endpoint ? xstrdup(cfg->endpoint) : NULL;
	c->sts_endpoint = cfg->sts_endpoint && *cfg->sts_endpoint ? xstrdup(cfg->sts_endpoint) : NULL;
	c->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 15000;
	c->max_attempts = cfg->max_attempts ? cfg->max_attempts : 3;
	c->tls = cfg->tls;
	c->observe = cfg->observe;
	c->observe_userdata = cfg->observe_userdata;
	c->rate = cfg->rate;
	c->http = http_client_new(cfg->user_agent);
	return c;
}

void cvm_client_free(struct cvm_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	free(c->endpoint);
	free(c->sts_endpoint);
	free(c);
}

/* Error.Code -> class, from the SDK's cvm/v20170312/errors.go and the common error
 * codes, for what RunInstances, DescribeInstances and TerminateInstances can answer.
 * "X.*" covers X and every X.<sub>; the most specific entry wins (an exact code over
 * its family, a longer family over a shorter one). */
struct code_entry {
	const char *code;  /* "X.*" is a family */
	int value;
};

static const struct code_entry code_classes[] = {
	{"AuthFailure.*", SP_EAUTH},
	{"UnauthorizedOperation.*", SP_EAUTH},
	{"InvalidPermission", SP_EAUTH},
	{"IpInBlacklist", SP_EAUTH},
	{"IpNotInWhitelist", SP_EAUTH},

	{"RequestLimitExceeded.*", SP_ETHROTTLED},

	/* Terminate of an instance that is already gone or going counts as done. */
	{"InvalidInstanceId.NotFound", SP_ENOTFOUND},
	{"UnsupportedOperation.InstanceStateTerminating", SP_ENOTFOUND},
	{"UnsupportedOperation.InstanceStateTerminated", SP_ENOTFOUND},

	/* Stock, quota, or the offering is not sold there: another zone or type, or later. */
	{"ResourceInsufficient.*", SP_ECAPACITY},
	{"ResourcesSoldOut.*", SP_ECAPACITY},
	{"ResourceUnavailable.*", SP_ECAPACITY},
	{"ResourceNotFound.InvalidZoneInstanceType", SP_ECAPACITY},
	{"UnsupportedOperation.InvalidZone", SP_ECAPACITY},
	{"UnsupportedOperation.NoInstanceTypeSupportSpot", SP_ECAPACITY},
	{"InvalidParameterValue.InsufficientOffering", SP_ECAPACITY},
	{"InvalidParameterValue.InsufficientPrice", SP_ECAPACITY},
	{"InvalidParameterValue.ZoneNotSupported", SP_ECAPACITY},
	{"InvalidParameter.InvalidCloudDiskSoldOut", SP_ECAPACITY},
	{"LimitExceeded.SpotQuota", SP_ECAPACITY},
	{"LimitExceeded.UserSpotQuota", SP_ECAPACITY},
	{"LimitExceeded.InstanceQuota", SP_ECAPACITY},
	{"LimitExceeded.PrepayQuota", SP_ECAPACITY},
	{"LimitExceeded.VpcSubnetNum", SP_ECAPACITY},
	{"InstancesQuotaLimitExceeded", SP_ECAPACITY},
	{"FailedOperation.NoAvailableIpAddressCountInSubnet", SP_ECAPACITY},

	/* Our parameters, account or region are wrong: retrying the same call cannot help. */
	{"InvalidParameter.*", SP_ECONFIG},
	{"InvalidParameterValue.*", SP_ECONFIG},
	{"InvalidParameterCombination", SP_ECONFIG},
	{"InvalidParameterConflict", SP_ECONFIG},
	{"InvalidParameterValueLimit", SP_ECONFIG},
	{"InvalidParameterValueOffset", SP_ECONFIG},
	{"MissingParameter.*", SP_ECONFIG},
	{"UnknownParameter", SP_ECONFIG},
	{"InvalidAction", SP_ECONFIG},
	{"NoSuchVersion", SP_ECONFIG},
	{"NoSuchProduct", SP_ECONFIG},
	{"InvalidRequest", SP_ECONFIG},
	{"RequestSizeLimitExceeded", SP_ECONFIG},
	{"UnsupportedProtocol", SP_ECONFIG},
	{"UnsupportedRegion", SP_ECONFIG},
	{"InvalidRegion.*", SP_ECONFIG},
	{"InvalidZone.*", SP_ECONFIG},
	{"InvalidInstanceType.*", SP_ECONFIG},
	{"InvalidImageId.*", SP_ECONFIG},
	{"InvalidSecurityGroupId.*", SP_ECONFIG},
	{"InvalidSgId.*", SP_ECONFIG},
	{"InvalidKeyPairId.*", SP_ECONFIG},
	{"InvalidProjectId.*", SP_ECONFIG},
	{"InvalidHostId.*", SP_ECONFIG},
	{"InvalidClientToken.*", SP_ECONFIG},
	{"InvalidInstanceName.*", SP_ECONFIG},
	{"InvalidInstanceId.Malformed", SP_ECONFIG},
	{"InvalidFilter", SP_ECONFIG},
	{"InvalidFilterValue.*", SP_ECONFIG},
	{"InvalidPassword", SP_ECONFIG},
	{"InvalidAccount.*", SP_ECONFIG},
	{"AccountQualificationRestrictions", SP_ECONFIG},
	{"InvalidInstance.NotSupported", SP_ECONFIG},
	{"InvalidInstanceNotSupportedPrepaidInstance", SP_ECONFIG},
	{"FailedOperation.IllegalTagKey", SP_ECONFIG},
	{"FailedOperation.IllegalTagValue", SP_ECONFIG},
	{"FailedOperation.TagKeyReserved", SP_ECONFIG},
	{"LimitExceeded.AssociateUSGLimitExceeded", SP_ECONFIG},
	{"LimitExceeded.SingleUSGQuota", SP_ECONFIG},
	{"LimitExceeded.TagResourceQuota", SP_ECONFIG},
	{"UnauthorizedOperation.ImageNotBelongToAccount", SP_ECONFIG},
	{"UnsupportedOperation", SP_ECONFIG},
	{"UnsupportedOperation.InstanceChargeType", SP_ECONFIG},
	{"UnsupportedOperation.InstanceMixedPricingModel", SP_ECONFIG},
	{"UnsupportedOperation.InstanceMixedZoneType", SP_ECONFIG},
	{"UnsupportedOperation.InstancesProtected", SP_ECONFIG},
	{"UnsupportedOperation.InvalidInstanceNotSupportedProtectedInstance", SP_ECONFIG},
	{"UnsupportedOperation.RedHatInstanceTerminateUnsupported", SP_ECONFIG},
	{"UnsupportedOperation.SpecialInstanceType", SP_ECONFIG},
	{"UnsupportedOperation.SpotUnsupportedRegion", SP_ECONFIG},
	{"UnsupportedOperation.Region", SP_ECONFIG},
	{"UnsupportedOperation.KeyPairUnsupportedWindows", SP_ECONFIG},
	{"UnsupportedOperation.EncryptedImagesNotSupported", SP_ECONFIG},
	{"UnsupportedOperation.InvalidRegionDiskEncrypt", SP_ECONFIG},
	{"UnsupportedOperation.BandwidthPackageIdNotSupported", SP_ECONFIG},
	{"UnsupportedOperation.NoVpcNetwork", SP_ECONFIG},
	{"UnsupportedOperation.UnsupportedInternationalUser", SP_ECONFIG},
	/* A dry run that passed; cvm_run_instances turns it into success. Never retried. */
	{"DryRunOperation", SP_ECONFIG},

	/* Busy or broken for a moment on Tencent's side: retry with backoff. */
	{"InternalError.*", SP_ETRANSIENT},
	{"InternalServerError", SP_ETRANSIENT},
	{"ServiceUnavailable", SP_ETRANSIENT},
	{"FailedOperation.RequestTimeout", SP_ETRANSIENT},
	{"FailedOperation.InvalidImageState", SP_ETRANSIENT},
	{"InvalidParameterValue.InvalidImageState", SP_ETRANSIENT},
	{"ResourceInUse.*", SP_ETRANSIENT},
	{"ResourceUnavailable.SnapshotCreating", SP_ETRANSIENT},
	{"MutexOperation.TaskRunning", SP_ETRANSIENT},
	{"OperationDenied.InstanceOperationInProgress", SP_ETRANSIENT},
	{"InvalidInstanceState", SP_ETRANSIENT},
	{"UnsupportedOperation.InstanceStatePending", SP_ETRANSIENT},
	{"UnsupportedOperation.InstanceStateStarting", SP_ETRANSIENT},
	{"UnsupportedOperation.InstanceStateStopping", SP_ETRANSIENT},
	{"UnsupportedOperation.InstanceStateRebooting", SP_ETRANSIENT},
};

/* How specifically pattern matches code: 0 none, else longer is more specific. */
static size_t code_match(const char *pattern, const char *code)
{
	size_t n = strlen(pattern);
	if (n >= 2 && strcmp(pattern + n - 2, ".*") == 0) {
		n -= 2;
		return strncmp(code, pattern, n) == 0 && (code[n] == '\0' || code[n] == '.') ? 2 * n : 0;
	}
	return strcmp(code, pattern) == 0 ? 2 * n + 1 : 0;
}

/* The value of the entry of table (n entries) that matches code most specifically, or
 * fallback when none matches. */
static int most_specific(const struct code_entry *table, size_t n, const char *code, int fallback)
{
	size_t best = 0;
	int value = fallback;
	for (size_t i = 0; i < n; i++) {
		size_t m = code_match(table[i].code, code);
		if (m > best) {
			best = m;
			value = table[i].value;
		}
	}
	return value;
}

int cvm_classify_code(const char *code)
{
	/* unknown: the outcome is unknown too, so never final */
	return most_specific(code_classes, sizeof(code_classes) / sizeof(code_classes[0]), code, SP_ETRANSIENT);
}

/* Codes that mean this offering has no capacity (or is not sold there), from the SDK's
 * errors.go; same matching as code_classes (most specific wins). */
static const struct code_entry sold_out_codes[] = {
	{"ResourceInsufficient.*", true},  /* AvailabilityZoneSoldOut, SpecifiedInstanceType,
					    * ZoneSoldOutForSpecifiedInstance, CloudDiskSoldOut */
	{"ResourceInsufficient.DisasterRecoverGroupCvmQuota", false},  /* a placement group's quota */
	{"ResourceInsufficient.CloudDiskUnavailable", false},          /* disk parameters */
	{"ResourcesSoldOut.*", true},      /* AvailableZone, SpecifiedInstanceType */
	{"ResourcesSoldOut.EipInsufficient", false},  /* public IPs of the region, not the offering */
	{"ResourceUnavailable.InstanceType", true},   /* the zone does not sell this type */
	{"ResourceNotFound.InvalidZoneInstanceType", true},
	{"UnsupportedOperation.InvalidZone", true},   /* the zone is not on sale */
	{"UnsupportedOperation.NoInstanceTypeSupportSpot", true},
	{"InvalidParameterValue.InsufficientOffering", true},  /* not enough spot stock */
	{"InvalidParameterValue.InsufficientPrice", true},     /* the bid loses in this offering */
	{"InvalidParameterValue.ZoneNotSupported", true},
	{"InvalidParameter.InvalidCloudDiskSoldOut", true},    /* the zone's disks of that type */
};

bool cvm_code_is_sold_out(const char *code)
{
	return code && cvm_classify_code(code) == SP_ECAPACITY &&
	       most_specific(sold_out_codes, sizeof(sold_out_codes) / sizeof(sold_out_codes[0]), code, false);
}

static void observe(struct cvm_client *c, const char *action, const char *code, int64_t start_ms)
{
	if (c->observe)
		c->observe(c->observe_userdata, action, code, (double)(sp_mono_ms() - start_ms) / 1000.0);
}

/* How often a retry backoff looks at until, which the lease thread may move closer. */
#define CVM_DEADLINE_POLL_MS 20

/* Sleeps before retry number attempt + 1; false when a shutdown cut it short (at once:
 * http_abort_wait_until_ms). Ends when until passes (NULL = none) at the latest: the
 * attempt after it is not made anyway. */
static bool backoff_wait(int attempt, const _Atomic int64_t *until)
{
	int64_t end = sp_mono_ms() + (200L << attempt) + sp_mono_ms() % 100;
	for (int64_t now = sp_mono_ms(); now < end && sp_deadline_left_ms(until) > 0; now = sp_mono_ms())
		if (http_abort_wait_until_ms(now + CVM_DEADLINE_POLL_MS < end ? now + CVM_DEADLINE_POLL_MS : end))
			return false;
	return !http_aborting();
}

/* What differs between the services a client calls: CVM, regional, and STS's one call. */
struct service {
	const char *name;        /* the TC3 scope's service and the default host's first label */
	const char *version;     /* X-TC-Version */
	const char *endpoint;    /* NULL: https://<name>[.<region>].tencentcloudapi.com/ */
	bool regional;
	size_t max_response;
	long timeout_ms;         /* 0: the client's */
	int max_attempts;        /* 0: the client's */
};

static struct service cvm_service(const struct cvm_client *c)
{
	return (struct service){.name = "cvm", .version = CVM_API_VERSION, .endpoint = c->endpoint,
				.regional = true, .max_response = CVM_RESPONSE_MAX};
}

/* One HTTP exchange; fills ret_response on a well-formed non-error reply. */
static int call_once(struct cvm_client *c, const struct service *svc, const struct cvm_credentials *cred,
		     const char *url, const char *host, const char *region, const char *action, const char *body,
		     long timeout_ms, cJSON **ret_response, struct sp_error *err)
{
	int64_t start = sp_mono_ms();
	struct tc3_input in = {
		.secret_id = cred->secret_id, .secret_key = cred->secret_key, .service = svc->name,
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
	char *h_version = xasprintf("X-TC-Version: %s", svc->version);
	char *h_token = cred->token && *cred->token ? xasprintf("X-TC-Token: %s", cred->token) : NULL;
	explicit_bzero(&sig, sizeof(sig));
	const char *headers[] = {h_ct, h_host, h_action, h_version, h_ts, h_region, h_auth, h_token};
	struct http_request req = {
		.method = "POST", .url = url, .headers = headers,
		.n_headers = h_token ? 8 : 7, .body = body, .body_len = strlen(body),
		.timeout_ms = timeout_ms, .max_response = svc->max_response, .tls = c->tls,
		.refuse_after_abort = true,
	};
	struct http_response resp;
	r = http_do(c->http, &req, &resp, err);
	free(h_host), free(h_action), free(h_version), free(h_ts), free(h_region), free(h_auth);
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
	return cvm_call_until(c, cred, region, action, params, 0, ret_response, err);
}

static int service_call(struct cvm_client *c, const struct service *svc, const struct cvm_credentials *cred,
			const char *region, const char *action, const cJSON *params,
			const _Atomic int64_t *until, cJSON **ret_response, struct sp_error *err);

int cvm_call_until(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		   const char *action, const cJSON *params, const _Atomic int64_t *until,
		   cJSON **ret_response, struct sp_error *err)
{
	struct service svc = cvm_service(c);
	return service_call(c, &svc, cred, region, action, params, until, ret_response, err);
}

static int service_call(struct cvm_client *c, const struct service *svc, const struct cvm_credentials *cred,
			const char *region, const char *action, const cJSON *params,
			const _Atomic int64_t *until, cJSON **ret_response, struct sp_error *err)
{
	char *url, *host = NULL;
	int r;
	if (svc->endpoint) {
		url = xstrdup(svc->endpoint);
		if ((r = http_url_host(url, &host, err)) < 0) {
			free(url);
			return r;
		}
	} else {
		host = svc->regional ? xasprintf("%s.%s.tencentcloudapi.com", svc->name, region)
				     : xasprintf("%s.tencentcloudapi.com", svc->name);
		url = xasprintf("https://%s/", host);
	}
	int max_attempts = svc->max_attempts ? svc->max_attempts : c->max_attempts;
	char *body = cJSON_PrintUnformatted(params);
	/* With a ClientToken a repeat is idempotent, and a refusal answers only the repeat. */
	bool has_token = cJSON_GetObjectItemCaseSensitive(params, "ClientToken") != NULL;
	char uncertain[200] = "";  /* why an earlier attempt's outcome is unknown */
	struct sp_error local = {0};
	int64_t started_ms = sp_mono_ms();
	int attempts = 0;
	for (int attempt = 0;; attempt++) {
		attempts = attempt + 1;
		struct sp_error last = local;
		local = (struct sp_error){0};
		/* Every attempt, retries included, waits its turn at the (SecretId, region, action)
		 * rate limit; a shutdown or the deadline ends the wait. Past the deadline (a
		 * leader's renew deadline, or its step-down) another process may be acting on
		 * the same pool: no attempt starts then, and none is given longer than is left. */
		struct rate_grant grant = {0};
		int64_t left = sp_deadline_left_ms(until);
		if (left > 0) {
			r = rate_acquire_until(c->rate, cred->secret_id, region, action, until, &grant, &local);
			if (r < 0 && (http_aborting() || sp_deadline_left_ms(until) > 0))
				break;  /* a shutdown (or no bucket to be had) */
			left = sp_deadline_left_ms(until);  /* a token granted too late stays unused */
		}
		if (left <= 0) {
			r = sp_fail(&local, SP_ETRANSIENT, "%s: leadership ends before the call could be made%s%.300s",
				    action, attempt ? "; last attempt: " : "", attempt ? last.msg : "");
			break;
		}
		if (grant.waited >= 1)
			log_debug("%s: waited %.1f s for the rate limit", action, grant.waited);
		long timeout_ms = svc->timeout_ms && svc->timeout_ms < c->timeout_ms ? svc->timeout_ms : c->timeout_ms;
		if (left < timeout_ms)
			timeout_ms = (long)left;
		r = call_once(c, svc, cred, url, host, region, action, body, timeout_ms, ret_response, &local);
		if (r == SP_ETHROTTLED && strncmp(local.reason, "RequestLimitExceeded", 20) == 0)
			rate_throttled(c->rate, cred->secret_id, region, action);
		if (r == 0 || !(r == SP_ETHROTTLED || r == SP_ETRANSIENT || r == SP_EPROTO))
			break;
		/* Throttling means "not done"; anything else may have been done. */
		if (r != SP_ETHROTTLED && !*uncertain)
			snprintf(uncertain, sizeof(uncertain), "%s", local.msg);
		if (attempt + 1 >= max_attempts || http_aborting())
			break;
		log_debug("%s: attempt %d failed (%s), retrying", action, attempt + 1, local.msg);
		if (!backoff_wait(attempt, until)) {
			last = local;
			r = sp_fail(&local, SP_ETRANSIENT, "%s: aborted (shutting down) after: %.300s", action,
				    last.msg);
			break;
		}
	}
	if (has_token && *uncertain && (r == SP_ECAPACITY || r == SP_ECONFIG || r == SP_EAUTH)) {
		struct sp_error refusal = local;
		r = sp_fail(&local, SP_ETRANSIENT, "%s: outcome unknown: an earlier attempt may have "
			    "succeeded (%.150s); the retry was refused: %.250s", action, uncertain, refusal.msg);
		snprintf(local.reason, sizeof(local.reason), "%s", refusal.reason);
	}
	/* One line per call, success included: `dry-run -v` and logLevel debug show every call. */
	log_debug("%s %s region %s: %s in %lld ms (%d attempt%s)", svc->name, action, region,
		  r == 0 ? "Success" : *local.reason ? local.reason : sp_strerror(r),
		  (long long)(sp_mono_ms() - started_ms), attempts, attempts == 1 ? "" : "s");
	if (r < 0 && err)
		*err = local;
	cJSON_free(body);
	free(url);
	free(host);
	return r;
}


static void copy_field(char *dst, size_t cap, const cJSON *v)
{
	if (cJSON_IsArray(v))
		v = cJSON_GetArrayItem(v, 0);
	snprintf(dst, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* A tag's value; empty when absent or too long to be one of ours. Returns whether the
 * key is there at all (whatever its value). */
static bool copy_tag(char *dst, size_t cap, const cJSON *tags, const char *tag_key)
{
	const cJSON *t;
	bool present = false;
	*dst = '\0';
	if (!cJSON_IsArray(tags))
		return false;
	cJSON_ArrayForEach(t, tags) {
		const cJSON *key = cJSON_GetObjectItemCaseSensitive(t, "Key");
		const cJSON *value = cJSON_GetObjectItemCaseSensitive(t, "Value");
		if (!cJSON_IsString(key) || strcmp(key->valuestring, tag_key) != 0)
			continue;
		present = true;
		if (cJSON_IsString(value) && strlen(value->valuestring) < cap) {
			snprintf(dst, cap, "%s", value->valuestring);
			return true;
		}
	}
	return present;
}

/* A listing's items: TotalCount (an integer in [0, CVM_DESCRIBE_MAX_INSTANCES]) and the
 * set set_name (an array, or null for none), each item with a valid InstanceId and
 * InstanceState, written by fill into an array of elem_size records. */
static int parse_set(const cJSON *response, const char *action, const char *set_name, size_t elem_size,
		     void (*fill)(void *rec, const cJSON *item, const cJSON *id, const cJSON *state),
		     void **ret_list, size_t *ret_n, size_t *ret_total, struct sp_error *err)
{
	const cJSON *total = cJSON_GetObjectItemCaseSensitive(response, "TotalCount");
	const cJSON *set = cJSON_GetObjectItemCaseSensitive(response, set_name);
	if (!cJSON_IsNumber(total) || !(cJSON_IsArray(set) || cJSON_IsNull(set)))
		return sp_fail(err, SP_EPROTO, "%s: malformed response (TotalCount/%s)", action, set_name);
	/* Written this way round so that NaN fails too. */
	double t = total->valuedouble;
	if (!(t >= 0 && t <= CVM_DESCRIBE_MAX_INSTANCES) || (double)(size_t)t != t)
		return sp_fail(err, SP_EPROTO, "%s: malformed response (TotalCount %g is not "
			       "an integer from 0 to %d)", action, t, CVM_DESCRIBE_MAX_INSTANCES);
	size_t cap = (size_t)cJSON_GetArraySize(set), n = 0;
	char *list = cap ? xcalloc(cap, elem_size) : NULL;
	const cJSON *it;
	cJSON_ArrayForEach(it, set) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "InstanceId");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(it, "InstanceState");
		if (!cJSON_IsString(id) || !cJSON_IsString(state) || !*id->valuestring ||
		    strlen(id->valuestring) >= sizeof(((struct pool_instance *)0)->id)) {
			free(list);
			return sp_fail(err, SP_EPROTO, "%s: malformed response (an item of %s without a valid "
				       "InstanceId/InstanceState)", action, set_name);
		}
		fill(list + n++ * elem_size, it, id, state);
	}
	*ret_list = list;
	*ret_n = n;
	*ret_total = (size_t)t;
	return 0;
}

static void fill_status(void *rec, const cJSON *item, const cJSON *id, const cJSON *state)
{
	(void)item;
	struct pool_instance_status *st = rec;
	copy_field(st->id, sizeof(st->id), id);
	copy_field(st->state, sizeof(st->state), state);
}

int cvm_parse_status(const cJSON *response, struct pool_instance_status **ret_status, size_t *ret_n,
		     size_t *ret_total, struct sp_error *err)
{
	void *list = NULL;
	int r = parse_set(response, "DescribeInstancesStatus", "InstanceStatusSet", sizeof(**ret_status), fill_status,
			  &list, ret_n, ret_total, err);
	if (r == 0)
		*ret_status = list;
	return r;
}

static void fill_instance(void *rec, const cJSON *it, const cJSON *id, const cJSON *state)
{
	struct pool_instance *in = rec;
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
	in->created = sp_parse_time(in->created_time);
	const cJSON *tags = cJSON_GetObjectItemCaseSensitive(it, "Tags");
	copy_tag(in->pool_tag, sizeof(in->pool_tag), tags, POOL_TAG_KEY);
	copy_tag(in->launch_tag, sizeof(in->launch_tag), tags, POOL_LAUNCH_TAG_KEY);
	/* A cluster tag no spotpool writes (empty, too long) is still some other cluster's,
	 * never "launched before the tag existed": "?" matches no cluster name. */
	if (copy_tag(in->cluster_tag, sizeof(in->cluster_tag), tags, POOL_CLUSTER_TAG_KEY) &&
	    !*in->cluster_tag)
		snprintf(in->cluster_tag, sizeof(in->cluster_tag), "?");
}

int cvm_parse_instances(const cJSON *response, struct pool_instance **ret_instances, size_t *ret_n,
			size_t *ret_total, struct sp_error *err)
{
	void *list = NULL;
	int r = parse_set(response, "DescribeInstances", "InstanceSet", sizeof(**ret_instances), fill_instance, &list,
			  ret_n, ret_total, err);
	if (r == 0)
		*ret_instances = list;
	return r;
}

/* Open-addressing set of instance IDs, so that a 100,000-instance sweep stays linear. */
struct idset {
	char **slot;
	size_t cap;  /* a power of two, at least twice n */
	size_t n;
};

static size_t id_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;  /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

static char **idset_find(char **slot, size_t cap, const char *id)
{
	size_t i = id_hash(id) & (cap - 1);
	while (slot[i] && strcmp(slot[i], id) != 0)
		i = (i + 1) & (cap - 1);
	return &slot[i];
}

static bool idset_has(const struct idset *s, const char *id)
{
	return s->cap && *idset_find(s->slot, s->cap, id);
}

/* False when id was already there. */
static bool idset_add(struct idset *s, const char *id)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		char **slot = xcalloc(cap, sizeof(*slot));
		for (size_t i = 0; i < s->cap; i++)
			if (s->slot[i])
				*idset_find(slot, cap, s->slot[i]) = s->slot[i];
		free(s->slot);
		s->slot = slot;
		s->cap = cap;
	}
	char **at = idset_find(s->slot, s->cap, id);
	if (*at)
		return false;
	*at = xstrdup(id);
	s->n++;
	return true;
}

static void idset_free(struct idset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	*s = (struct idset){0};
}

/* What a DescribeInstances sweep (one or several queries) has found so far. */
struct sweep {
	struct pool_instance *v;
	size_t n, cap;
	struct idset listed;
	const struct idset *wanted;  /* lookups by ID keep only these; NULL keeps all */
	/* When set, each new instance goes here instead of into v. */
	void (*take)(void *userdata, const struct pool_instance *inst);
	void *take_userdata;
};

static int sweep_finish(struct sweep *sw, int r, struct pool_instance **ret_instances, size_t *ret_n)
{
	idset_free(&sw->listed);
	if (r < 0) {
		free(sw->v);
		return r;
	}
	*ret_instances = sw->v;
	*ret_n = sw->n;
	return 0;
}

/* Checks one page against what this query's earlier pages said, then keeps its new instances. */
static int take_page(struct sweep *sw, struct idset *query_seen, const struct pool_instance *page,
		     size_t n, size_t offset, size_t total, struct sp_error *err)
{
	if (n > CVM_PAGE_LIMIT)
		return sp_fail(err, SP_EPROTO, "DescribeInstances: malformed response (%zu instances in a page "
			       "of at most %d)", n, CVM_PAGE_LIMIT);
	if (n == 0 && offset < total)
		return sp_fail(err, SP_EPROTO, "DescribeInstances: inconsistent paging: empty page at offset %zu "
			       "of TotalCount %zu", offset, total);
	size_t added = 0;
	for (size_t i = 0; i < n; i++) {
		/* Paging over a changing set can repeat an instance; a whole page of them cannot. */
		added += idset_add(query_seen, page[i].id);
		if (sw->wanted && !idset_has(sw->wanted, page[i].id)) {
			log_debug("DescribeInstances: ignoring %s, which was not asked for", page[i].id);
			continue;
		}
		if (!idset_add(&sw->listed, page[i].id))
			continue;
		if (sw->take) {
			sw->take(sw->take_userdata, &page[i]);
			continue;
		}
		if (sw->n == sw->cap) {
			sw->cap = sw->cap ? 2 * sw->cap : CVM_PAGE_LIMIT;
			sw->v = xrealloc(sw->v, sw->cap * sizeof(*sw->v));
		}
		sw->v[sw->n++] = page[i];
	}
	if (n > 0 && added == 0)
		return sp_fail(err, SP_EPROTO, "DescribeInstances: inconsistent paging: the page at offset %zu "
			       "repeats instances already listed", offset);
	return 0;
}

/* Every page of query (Filters or InstanceIds) into sw. TotalCount only bounds the
 * sweep: it ends at a short page or once the offset reaches it, whichever is first. */
static int describe_pages(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
			  cJSON *query, const _Atomic int64_t *until, struct sweep *sw, struct sp_error *err)
{
	struct idset seen = {0};
	int r = 0;
	cJSON_AddNumberToObject(query, "Limit", CVM_PAGE_LIMIT);
	/* Each page moves the offset by Limit and TotalCount is at most
	 * CVM_DESCRIBE_MAX_INSTANCES, so this makes at most that / Limit requests. */
	for (size_t offset = 0;; offset += CVM_PAGE_LIMIT) {
		cJSON_DeleteItemFromObjectCaseSensitive(query, "Offset");
		cJSON_AddNumberToObject(query, "Offset", (double)offset);
		cJSON *resp = NULL;
		if ((r = cvm_call_until(c, cred, region, "DescribeInstances", query, until, &resp, err)) < 0)
			break;
		struct pool_instance *page = NULL;
		size_t n = 0, total = 0;
		r = cvm_parse_instances(resp, &page, &n, &total, err);
		cJSON_Delete(resp);
		if (r == 0)
			r = take_page(sw, &seen, page, n, offset, total, err);
		free(page);
		if (r < 0 || n < CVM_PAGE_LIMIT || offset + n >= total)
			break;
	}
	idset_free(&seen);
	return r;
}

/* {"Filters": [tag:<key> = value]}, or [tag-key = key] without a value. */
static cJSON *tag_query(const char *tag_key, const char *tag_value)
{
	cJSON *query = cJSON_CreateObject();
	cJSON *f = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(query, "Filters"), f);
	char *name = tag_value ? xasprintf("tag:%s", tag_key) : xstrdup("tag-key");
	cJSON_AddStringToObject(f, "Name", name);
	free(name);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(f, "Values"), cJSON_CreateString(tag_value ? tag_value : tag_key));
	return query;
}

int cvm_describe_tagged(struct cvm_client *c, const struct cvm_credentials *cred,
			const char *region, const char *tag_key, const char *tag_value,
			struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	cJSON *query = tag_query(tag_key, tag_value);
	struct sweep sw = {0};
	int r = describe_pages(c, cred, region, query, NULL, &sw, err);
	cJSON_Delete(query);
	return sweep_finish(&sw, r, ret_instances, ret_n);
}

int cvm_list_tagged(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		    const char *tag_key, void (*take)(void *userdata, const struct pool_instance *inst),
		    void *userdata, struct sp_error *err)
{
	cJSON *query = tag_query(tag_key, NULL);
	struct sweep sw = {.take = take, .take_userdata = userdata};
	int r = describe_pages(c, cred, region, query, NULL, &sw, err);
	cJSON_Delete(query);
	idset_free(&sw.listed);
	return r;
}

/* What cvm_find_launched keeps of a listing: only the instances of one launch. */
struct launch_hits {
	const char *client_token;
	struct pool_instance *v;
	size_t n;
};

static void keep_launched(void *userdata, const struct pool_instance *inst)
{
	struct launch_hits *h = userdata;
	if (strcmp(inst->launch_tag, h->client_token) != 0)
		return;
	h->v = xrealloc(h->v, (h->n + 1) * sizeof(*h->v));
	h->v[h->n++] = *inst;
}

int cvm_find_launched(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		      const char *zone, const char *client_token, const _Atomic int64_t *until,
		      struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	cJSON *query = cJSON_CreateObject();
	if (zone && *zone) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddItemToArray(cJSON_AddArrayToObject(query, "Filters"), f);
		cJSON_AddStringToObject(f, "Name", "zone");
		cJSON_AddItemToArray(cJSON_AddArrayToObject(f, "Values"), cJSON_CreateString(zone));
	}
	struct launch_hits hits = {.client_token = client_token};
	struct sweep sw = {.take = keep_launched, .take_userdata = &hits};
	int r = describe_pages(c, cred, region, query, until, &sw, err);
	cJSON_Delete(query);
	idset_free(&sw.listed);
	if (r < 0) {
		free(hits.v);
		return r;
	}
	*ret_instances = hits.v;
	*ret_n = hits.n;
	return 0;
}

/* {"InstanceIds": [ids[0], ..., ids[n - 1]]} */
static cJSON *ids_request(char *const *ids, size_t n)
{
	cJSON *req = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(req, "InstanceIds");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(ids[i]));
	return req;
}

static int describe_batch(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
			  char *const *ids, size_t n, const _Atomic int64_t *until, struct sweep *sw,
			  struct sp_error *err)
{
	cJSON *query = ids_request(ids, n);
	struct sp_error local = {0};
	int r = describe_pages(c, cred, region, query, until, sw, &local);
	cJSON_Delete(query);
	bool malformed = r < 0 && strcmp(local.reason, "InvalidInstanceId.Malformed") == 0;
	if ((r == SP_ENOTFOUND || malformed) && n > 1) {
		/* One gone or malformed ID fails the whole batch and hides the others. */
		for (size_t i = 0; i < n; i++)
			if ((r = describe_batch(c, cred, region, ids + i, 1, until, sw, err)) < 0)
				return r;
		return 0;
	}
	if (r == SP_ENOTFOUND)
		return 0;
	if (malformed)
		return sp_fail(err, SP_EINVAL, "DescribeInstances: malformed instance ID \"%s\": %s", ids[0],
			       local.msg);
	if (r < 0 && err)
		*err = local;
	return r;
}

int cvm_describe_ids(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		     const struct strv *ids, const _Atomic int64_t *until,
		     struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	struct idset wanted = {0};
	struct strv unique = {0};
	for (size_t i = 0; i < ids->n; i++)
		if (idset_add(&wanted, ids->v[i]))
			strv_push(&unique, ids->v[i]);
	struct sweep sw = {.wanted = &wanted};
	int r = 0;
	for (size_t off = 0; off < unique.n && r == 0; off += CVM_DESCRIBE_IDS_BATCH) {
		size_t n = unique.n - off < CVM_DESCRIBE_IDS_BATCH ? unique.n - off : CVM_DESCRIBE_IDS_BATCH;
		r = describe_batch(c, cred, region, unique.v + off, n, until, &sw, err);
	}
	strv_clear(&unique);
	idset_free(&wanted);
	return sweep_finish(&sw, r, ret_instances, ret_n);
}

/* One batch (at most CVM_DESCRIBE_IDS_BATCH IDs) of DescribeInstancesStatus, every page,
 * its asked-for answers appended to *v (*n of them, room for *cap). */
static int status_batch(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
			char *const *ids, size_t n_ids, struct pool_instance_status **v, size_t *n, size_t *cap,
			struct sp_error *err)
{
	cJSON *query = ids_request(ids, n_ids);
	cJSON_AddNumberToObject(query, "Limit", CVM_PAGE_LIMIT);
	int r = 0;
	/* TotalCount is at most n_ids <= Limit: one page, unless the cloud pages shorter. */
	for (size_t offset = 0; r == 0;) {
		cJSON_DeleteItemFromObjectCaseSensitive(query, "Offset");
		cJSON_AddNumberToObject(query, "Offset", (double)offset);
		cJSON *resp = NULL;
		struct sp_error local = {0};
		r = cvm_call(c, cred, region, "DescribeInstancesStatus", query, &resp, &local);
		if (r < 0) {
			const char *reason = local.reason;
			if (strcmp(reason, "InvalidInstanceId.Malformed") == 0 ||
			    strcmp(reason, "InvalidParameterValue.InstanceIdMalformed") == 0)
				r = sp_fail(&local, SP_EINVAL, "DescribeInstancesStatus: a malformed instance ID "
					    "among %zu from \"%s\": %s", n_ids, ids[0], local.msg);
			if (err)
				*err = local;
			break;
		}
		struct pool_instance_status *page = NULL;
		size_t got = 0, total = 0;
		r = cvm_parse_status(resp, &page, &got, &total, err);
		cJSON_Delete(resp);
		if (r == 0 && (total > n_ids || got > CVM_PAGE_LIMIT || (got == 0 && offset < total)))
			r = sp_fail(err, SP_EPROTO, "DescribeInstancesStatus: inconsistent paging (%zu statuses at "
				    "offset %zu of TotalCount %zu, %zu IDs asked)", got, offset, total, n_ids);
		for (size_t i = 0; r == 0 && i < got; i++) {
			bool asked = false;
			for (size_t k = 0; k < n_ids && !asked; k++)
				asked = strcmp(ids[k], page[i].id) == 0;
			if (!asked)
				continue;
			if (*n == *cap) {
				*cap = *cap ? 2 * *cap : CVM_PAGE_LIMIT;
				*v = xrealloc(*v, *cap * sizeof(**v));
			}
			(*v)[(*n)++] = page[i];
		}
		free(page);
		offset += got;
		if (offset >= total)
			break;
	}
	cJSON_Delete(query);
	return r;
}

int cvm_describe_status(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
			const struct strv *ids, struct pool_instance_status **ret_status, size_t *ret_n,
			struct sp_error *err)
{
	struct pool_instance_status *v = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	for (size_t off = 0; off < ids->n && r == 0; off += CVM_DESCRIBE_IDS_BATCH) {
		size_t k = ids->n - off < CVM_DESCRIBE_IDS_BATCH ? ids->n - off : CVM_DESCRIBE_IDS_BATCH;
		r = status_batch(c, cred, region, ids->v + off, k, &v, &n, &cap, err);
	}
	if (r < 0) {
		free(v);
		return r;
	}
	*ret_status = v;
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
	cJSON_AddStringToObject(cJSON_AddObjectToObject(req, "Placement"), "Zone", l->zone ? l->zone : s->zone);
	cJSON_AddStringToObject(req, "InstanceType", l->instance_type ? l->instance_type : s->instance_type);
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
	if (l->client_token)
		cJSON_AddItemToArray(tags, tag(POOL_LAUNCH_TAG_KEY, l->client_token));
	if (l->cluster && *l->cluster)
		cJSON_AddItemToArray(tags, tag(POOL_CLUSTER_TAG_KEY, l->cluster));
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
	int r = cvm_call_until(c, cred, launch->spec->region, "RunInstances", req, launch->until,
			       &resp, &local);
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
			   const char *region, char *const *ids, size_t n, const _Atomic int64_t *until,
			   struct sp_error *err)
{
	cJSON *req = ids_request(ids, n);
	cJSON *resp = NULL;
	int r = cvm_call_until(c, cred, region, "TerminateInstances", req, until, &resp, err);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return r;
}

int cvm_terminate_instances(struct cvm_client *c, const struct cvm_credentials *cred,
			    const char *region, const struct strv *ids, const _Atomic int64_t *until,
			    struct sp_error *err)
{
	for (size_t off = 0; off < ids->n; off += CVM_TERMINATE_BATCH) {
		size_t n = ids->n - off < CVM_TERMINATE_BATCH ? ids->n - off : CVM_TERMINATE_BATCH;
		int r = terminate_batch(c, cred, region, ids->v + off, n, until, err);
		if ((r == SP_ENOTFOUND || r == SP_ECONFIG) && n > 1) {
			/* One gone instance, or one of another charge type, fails the whole call:
			 * settle them one by one. */
			for (size_t i = 0; i < n; i++) {
				r = terminate_batch(c, cred, region, ids->v + off + i, 1, until, err);
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

/* A number of an InstanceTypeConfig: absent or null is 0; otherwise finite, within
 * [0, max] and, when integer, whole. */
static bool type_number(const cJSON *item, const char *field, double max, bool integer, double *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, field);
	*ret = 0;
	if (!v || cJSON_IsNull(v))
		return true;
	double d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !(d >= 0 && d <= max) || (integer && d != (double)(int64_t)d))
		return false;
	*ret = d;
	return true;
}

static bool fill_instance_type(const cJSON *item, struct cvm_instance_type *t)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "InstanceType");
	double cpu, memory, gpu, cards;
	/* Bounds well past any machine sold: a GPU instance has at most 8-16 GPUs, a
	 * host a few hundred cores and TiB. */
	if (!cJSON_IsString(type) || !*type->valuestring || strlen(type->valuestring) > POOL_INSTANCE_TYPE_MAX ||
	    !type_number(item, "CPU", 100000, true, &cpu) || !type_number(item, "Memory", 1e7, true, &memory) ||
	    !type_number(item, "GPU", 1024, true, &gpu) || !type_number(item, "GpuCount", 1024, false, &cards))
		return false;
	*t = (struct cvm_instance_type){.cpu = (int64_t)cpu, .memory_gib = (int64_t)memory, .gpu = (int64_t)gpu,
					.gpu_cards = cards};
	copy_field(t->instance_type, sizeof(t->instance_type), type);
	copy_field(t->family, sizeof(t->family), cJSON_GetObjectItemCaseSensitive(item, "InstanceFamily"));
	copy_field(t->gpu_type, sizeof(t->gpu_type), cJSON_GetObjectItemCaseSensitive(item, "GpuType"));
	return true;
}

/* By type name, then by position in the answer (qsort_r over indices into v). */
static int by_type_then_index(const void *a, const void *b, void *v)
{
	const struct cvm_instance_type *t = v;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = strcmp(t[i].instance_type, t[j].instance_type);
	return c ? c : i < j ? -1 : i > j;
}

int cvm_parse_instance_types(const cJSON *response, struct cvm_instance_type **ret_types, size_t *ret_n,
			     struct sp_error *err)
{
	const cJSON *set = cJSON_GetObjectItemCaseSensitive(response, "InstanceTypeConfigSet");
	if (!(cJSON_IsArray(set) || cJSON_IsNull(set)))
		return sp_fail(err, SP_EPROTO, "DescribeInstanceTypeConfigs: malformed response (InstanceTypeConfigSet)");
	int total = cJSON_GetArraySize(set);
	if (total > CVM_INSTANCE_TYPES_MAX)
		return sp_fail(err, SP_EPROTO, "DescribeInstanceTypeConfigs: %d entries, more than the %d expected",
			       total, CVM_INSTANCE_TYPES_MAX);
	struct cvm_instance_type *all = xcalloc((size_t)total + 1, sizeof(*all));
	size_t n = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, set) {
		if (!fill_instance_type(item, &all[n])) {
			free(all);
			return sp_fail(err, SP_EPROTO, "DescribeInstanceTypeConfigs: malformed response (entry %zu: "
				       "no InstanceType, or CPU, Memory, GPU or GpuCount not a count)", n);
		}
		n++;
	}
	/* One entry per zone: of a type listed again, the first is kept. */
	size_t *order = xcalloc(n + 1, sizeof(*order));
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_type_then_index, all);
	struct cvm_instance_type *v = xcalloc(n + 1, sizeof(*v));
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (kept == 0 || strcmp(v[kept - 1].instance_type, all[order[i]].instance_type) != 0)
			v[kept++] = all[order[i]];
	free(order);
	free(all);
	*ret_types = v;
	*ret_n = kept;
	return 0;
}

int cvm_describe_instance_types(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
				struct cvm_instance_type **ret_types, size_t *ret_n, struct sp_error *err)
{
	cJSON *query = cJSON_CreateObject();
	cJSON *resp = NULL;
	int r = cvm_call(c, cred, region, "DescribeInstanceTypeConfigs", query, &resp, err);
	cJSON_Delete(query);
	if (r == 0)
		r = cvm_parse_instance_types(resp, ret_types, ret_n, err);
	cJSON_Delete(resp);
	return r;
}

int cvm_parse_caller_identity(const cJSON *response, char ret_account[CVM_ACCOUNT_ID_MAX + 1],
			      struct sp_error *err)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(response, "AccountId");
	if (!cJSON_IsString(id))
		return sp_fail(err, SP_EPROTO, "GetCallerIdentity: AccountId: %s", id ? "not a string" : "missing");
	size_t n = strlen(id->valuestring);
	if (n == 0 || n > CVM_ACCOUNT_ID_MAX)
		return sp_fail(err, SP_EPROTO, "GetCallerIdentity: AccountId: %zu characters, want 1 to %d", n,
			       CVM_ACCOUNT_ID_MAX);
	if (strspn(id->valuestring, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-.") != n)
		return sp_fail(err, SP_EPROTO, "GetCallerIdentity: AccountId: not an account ID (0-9 A-Z a-z _ - .)");
	snprintf(ret_account, CVM_ACCOUNT_ID_MAX + 1, "%s", id->valuestring);
	return 0;
}

int cvm_caller_identity(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
			const _Atomic int64_t *until, char ret_account[CVM_ACCOUNT_ID_MAX + 1], struct sp_error *err)
{
	/* STS is one global endpoint (its regional ones answer the same); X-TC-Region is
	 * still sent, as the SDK does. */
	struct service sts = {.name = "sts", .version = CVM_STS_API_VERSION, .endpoint = c->sts_endpoint,
			      .max_response = CVM_STS_RESPONSE_MAX, .timeout_ms = CVM_STS_TIMEOUT_MS,
			      .max_attempts = 1};
	cJSON *req = cJSON_CreateObject(), *resp = NULL;
	int r = service_call(c, &sts, cred, region, "GetCallerIdentity", req, until, &resp, err);
	cJSON_Delete(req);
	if (r == 0)
		r = cvm_parse_caller_identity(resp, ret_account, err);
	cJSON_Delete(resp);
	return r;
}

static int api_caller_identity(void *ctx, const struct cvm_credentials *cred, const char *region,
			       const _Atomic int64_t *until, char ret_account[CVM_ACCOUNT_ID_MAX + 1],
			       struct sp_error *err)
{
	return cvm_caller_identity(ctx, cred, region, until, ret_account, err);
}

static int api_describe_ids(void *ctx, const struct cvm_credentials *cred, const char *region,
			    const struct strv *ids, const _Atomic int64_t *until,
			    struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	return cvm_describe_ids(ctx, cred, region, ids, until, ret_instances, ret_n, err);
}

static int api_run_instances(void *ctx, const struct cvm_credentials *cred, const struct cvm_launch *launch,
			     struct strv *ret_ids, struct sp_error *err)
{
	return cvm_run_instances(ctx, cred, launch, ret_ids, err);
}

static int api_terminate_instances(void *ctx, const struct cvm_credentials *cred, const char *region,
				   const struct strv *ids, const _Atomic int64_t *until, struct sp_error *err)
{
	return cvm_terminate_instances(ctx, cred, region, ids, until, err);
}

static int api_find_launched(void *ctx, const struct cvm_credentials *cred, const char *region,
			     const char *zone, const char *client_token, const _Atomic int64_t *until,
			     struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	return cvm_find_launched(ctx, cred, region, zone, client_token, until, ret_instances, ret_n, err);
}

struct cvm_api cvm_client_api(struct cvm_client *c)
{
	return (struct cvm_api){.describe_ids = api_describe_ids, .run_instances = api_run_instances,
				.terminate_instances = api_terminate_instances,
				.find_launched = api_find_launched, .caller_identity = api_caller_identity,
				.ctx = c};
}
