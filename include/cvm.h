/* cvm: Tencent Cloud CVM API client (DescribeInstances, DescribeInstancesStatus,
 * RunInstances, TerminateInstances, DescribeInstanceTypeConfigs) over http, signed with tc3,
 * and the one STS call it needs (GetCallerIdentity: which account credentials belong
 * to). Request building, response parsing and error classification are pure and
 * unit-tested on their own. */
#ifndef SPOTPOOL_CVM_H
#define SPOTPOOL_CVM_H

#include "http.h"
#include "pool.h"
#include "rate.h"
#include "spotpool.h"

#include <cjson/cJSON.h>

#define CVM_API_VERSION "2017-03-12"
#define CVM_PAGE_LIMIT 100
#define CVM_TERMINATE_BATCH 100
#define CVM_RESPONSE_MAX (8 * 1024 * 1024)
#define CVM_DESCRIBE_MAX_INSTANCES 100000
#define CVM_DESCRIBE_IDS_BATCH 100
#define CVM_STS_API_VERSION "2018-08-13"
/* A GetCallerIdentity reply is a few hundred bytes: more is not one. */
#define CVM_STS_RESPONSE_MAX (16 * 1024)
/* An STS call is asked once, briefly: its cache retries it later (reconcile), and a pass
 * does not wait on an STS outage. */
#define CVM_STS_TIMEOUT_MS 5000
/* The longest AccountId (a Uin: digits) taken from STS. */
#define CVM_ACCOUNT_ID_MAX 64

struct cvm_credentials {
	const char *secret_id;
	const char *secret_key;
	const char *token;  /* temporary credentials' session token, or NULL */
};

/* Reports each API call's outcome (for metrics); code is "Success", a Tencent error
 * code, or "HTTP<status>"/"NetworkError"/"MalformedResponse". */
typedef void (*cvm_observe_fn)(void *userdata, const char *action, const char *code, double seconds);

struct cvm_config {
	const char *endpoint;     /* NULL: https://cvm.<region>.tencentcloudapi.com/ */
	const char *sts_endpoint; /* NULL: https://sts.tencentcloudapi.com/ */
	const char *user_agent;
	long timeout_ms;          /* per request; 0 = 15 s */
	int max_attempts;         /* throttled/transient retries with backoff; 0 = 3 */
	const struct http_tls *tls;
	cvm_observe_fn observe;
	void *observe_userdata;
	/* Required, borrowed: the limiter every call paces itself by (rate.h); it outlives
	 * the client. Tencent's limits are per account, so every client of a process is
	 * given the same one; there is no unpaced client. */
	struct rate *rate;
};

struct cvm_launch {
	const struct pool_spec *spec;
	int count;                /* 1..100 */
	const char *client_token; /* <= 64 ASCII; same token => same launch */
	const char *cluster;      /* POOL_CLUSTER_TAG_KEY value; NULL or empty: no such tag */
	bool dry_run;             /* check parameters, quota and stock only */
	/* The offering to launch on (offer_choose); NULL: the spec's availabilityZone and
	 * instanceType. */
	const char *zone;
	const char *instance_type;
	/* As cvm_call_until's until: NULL = none. */
	const _Atomic int64_t *until;
};

struct cvm_client;

struct cvm_client *cvm_client_new(const struct cvm_config *cfg);
void cvm_client_free(struct cvm_client *c);

/* One signed call; on success ret_response is the detached "Response" object.
 * Errors carry the Tencent code in err->reason and a class in the return value:
 * SP_EAUTH, SP_ECONFIG, SP_ECAPACITY, SP_ETHROTTLED, SP_ETRANSIENT, SP_ENOTFOUND.
 * Throttled, transient and malformed answers are retried with backoff. A call carrying
 * a ClientToken whose earlier attempt had an unknown outcome (network error, 5xx,
 * malformed reply, unknown code) is never reported as refused: a later refusal is
 * SP_ETRANSIENT ("outcome unknown"), since the first attempt may have been done.
 * Every attempt first waits for a token of the (SecretId, region, action) rate limit
 * of the client's limiter (cvm_config.rate); a RequestLimitExceeded* answer slows that
 * limit down (rate_throttled).
 * After http_abort_all() calls fail promptly with SP_ETRANSIENT "aborted (shutting down)".
 * cvm_call_until also takes until (sp_deadline_left_ms(); NULL = none): a leader passes
 * its renew deadline, past which (or once it stepped down, which sets it to 0) another
 * process may act on the same pools. It is read again before every attempt, during the
 * rate-limit wait and the backoff: none goes on past it (SP_ETRANSIENT "leadership ends
 * before the call could be made") and each attempt's HTTP timeout is capped at the time
 * left then. An attempt already sent is not recalled. */
int cvm_call(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
	     const char *action, const cJSON *params, cJSON **ret_response, struct sp_error *err);
int cvm_call_until(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		   const char *action, const cJSON *params, const _Atomic int64_t *until,
		   cJSON **ret_response, struct sp_error *err);

/* All instances carrying tag_key (=tag_value when not NULL), every page: at most
 * CVM_DESCRIBE_MAX_INSTANCES / CVM_PAGE_LIMIT requests. Paging that does not add up
 * (TotalCount out of range, a page larger than Limit, a page of instances already
 * listed, an empty page before TotalCount) is SP_EPROTO, never a short list. */
int cvm_describe_tagged(struct cvm_client *c, const struct cvm_credentials *cred,
			const char *region, const char *tag_key, const char *tag_value,
			struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err);
/* Every instance carrying tag_key, as cvm_describe_tagged finds them, handed to take one
 * at a time as each page arrives, so that a caller keeping a compact copy never holds
 * the whole listing as full records. On failure take may have seen part of it. */
int cvm_list_tagged(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		    const char *tag_key, void (*take)(void *userdata, const struct pool_instance *inst),
		    void *userdata, struct sp_error *err);
/* The instances among ids that exist, looked up by ID (batches of 100). An ID the cloud
 * does not know is simply absent from the result; a malformed one is SP_EINVAL naming
 * it. Any instance of the account is found this way: check pool_tag for ownership.
 * until as for cvm_call_until (a leader's lookups are part of its pass). */
int cvm_describe_ids(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		     const struct strv *ids, const _Atomic int64_t *until,
		     struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err);
/* The states of the instances among ids that exist (DescribeInstancesStatus: its own
 * rate limit, 40/s documented; batches of CVM_DESCRIBE_IDS_BATCH with Limit 100, each
 * page of a batch asked until its TotalCount). An ID the cloud does not know is simply
 * absent from the result (the API answers no NotFound), as is anything answered that
 * was not asked for; a malformed ID is SP_EINVAL. Paging that does not add up
 * (TotalCount above the IDs asked, a page larger than Limit, an empty page before
 * TotalCount) is SP_EPROTO, never a short answer. */
int cvm_describe_status(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
			const struct strv *ids, struct pool_instance_status **ret_status, size_t *ret_n,
			struct sp_error *err);
/* The instances of region (in zone, when not NULL or empty) that carry the launch tag
 * client_token, found by listing them all without a tag filter: slower than a tag
 * listing (every instance of the zone, 100 per call) but answered from the instances
 * themselves, which a lagging tag index cannot hide. until as for cvm_call_until. */
int cvm_find_launched(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
		      const char *zone, const char *client_token, const _Atomic int64_t *until,
		      struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err);
/* Launches (or dry-runs) instances; ret_ids receives the new IDs (none for a dry run). */
int cvm_run_instances(struct cvm_client *c, const struct cvm_credentials *cred,
		      const struct cvm_launch *launch, struct strv *ret_ids, struct sp_error *err);
/* Terminates ids in batches of 100; instances already gone or terminating count as done.
 * until as for cvm_call_until, read again before every batch and attempt: a deposed
 * leader must not go on terminating victims a new leader may have chosen too. */
int cvm_terminate_instances(struct cvm_client *c, const struct cvm_credentials *cred,
			    const char *region, const struct strv *ids, const _Atomic int64_t *until,
			    struct sp_error *err);

/* Most entries a region's DescribeInstanceTypeConfigs may answer (one per zone and type;
 * a region sells a few hundred types in a few zones): more is SP_EPROTO, never a
 * silently short catalogue. */
#define CVM_INSTANCE_TYPES_MAX 20000
/* One instance type's resources, as DescribeInstanceTypeConfigs answers them (the SDK's
 * InstanceTypeConfig). */
struct cvm_instance_type {
	char instance_type[POOL_INSTANCE_TYPE_MAX + 1];
	char family[32];        /* InstanceFamily, empty when not answered */
	int64_t cpu;            /* CPU: cores */
	int64_t memory_gib;     /* Memory: GiB */
	int64_t gpu;            /* GPU: the GPUs the instance has (nvidia.com/gpu), 0 when absent */
	/* GpuCount: the physical cards the type maps, below 1 for a vGPU type (a share of
	 * one card, which the instance sees as one GPU); 0 when not answered. */
	double gpu_cards;
	char gpu_type[64];      /* GpuType (the GPU model), empty when not answered */
};
/* Every instance type of region (DescribeInstanceTypeConfigs without filters: one call,
 * the whole catalogue), one entry per type sorted by name (a type is listed once per
 * zone; the figures first answered are kept). The caller frees *ret_types. */
int cvm_describe_instance_types(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
				struct cvm_instance_type **ret_types, size_t *ret_n, struct sp_error *err);
/* The account credentials belong to, as STS GetCallerIdentity names it (its AccountId,
 * the root account's Uin: the same for every key of the account, temporary ones
 * included). One attempt of at most CVM_STS_TIMEOUT_MS, a reply of at most
 * CVM_STS_RESPONSE_MAX bytes; errors as cvm_call_until's. */
int cvm_caller_identity(struct cvm_client *c, const struct cvm_credentials *cred, const char *region,
			const _Atomic int64_t *until, char ret_account[CVM_ACCOUNT_ID_MAX + 1], struct sp_error *err);

/* The CVM API as a port: what reconcile calls. cvm_client_api binds a cvm_client
 * (borrowed: it must outlive the port); unit tests bind canned replies. Each function
 * behaves as the cvm_ function of the same name. */
struct cvm_api {
	int (*describe_ids)(void *ctx, const struct cvm_credentials *cred, const char *region,
			    const struct strv *ids, const _Atomic int64_t *until,
			    struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err);
	int (*run_instances)(void *ctx, const struct cvm_credentials *cred, const struct cvm_launch *launch,
			     struct strv *ret_ids, struct sp_error *err);
	int (*terminate_instances)(void *ctx, const struct cvm_credentials *cred, const char *region,
				   const struct strv *ids, const _Atomic int64_t *until, struct sp_error *err);
	int (*find_launched)(void *ctx, const struct cvm_credentials *cred, const char *region,
			     const char *zone, const char *client_token, const _Atomic int64_t *until,
			     struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err);
	/* NULL: the account cannot be learned (the instance check decides alone). */
	int (*caller_identity)(void *ctx, const struct cvm_credentials *cred, const char *region,
			       const _Atomic int64_t *until, char ret_account[CVM_ACCOUNT_ID_MAX + 1],
			       struct sp_error *err);
	void *ctx;
};
struct cvm_api cvm_client_api(struct cvm_client *c);

/* Pure parts. */
/* The class of a Tencent Error.Code (table from the SDK's errors.go, most specific
 * entry wins); an unknown code is SP_ETRANSIENT, never a definitive refusal. */
int cvm_classify_code(const char *code);
/* Whether code means "this offering (zone, instance type) has no capacity or is not sold
 * there", so that another offering may launch: ResourceInsufficient.* (stock, zone sold
 * out), ResourcesSoldOut.* (but not EipInsufficient: public IPs, not the offering),
 * ResourceUnavailable.InstanceType and ResourceNotFound.InvalidZoneInstanceType (type
 * not sold in the zone), UnsupportedOperation.InvalidZone, UnsupportedOperation.
 * NoInstanceTypeSupportSpot, InvalidParameterValue.InsufficientOffering/
 * InsufficientPrice/ZoneNotSupported, InvalidParameter.InvalidCloudDiskSoldOut. Not account-wide limits (LimitExceeded.SpotQuota,
 * LimitExceeded.UserSpotQuota, LimitExceeded.InstanceQuota, InstancesQuotaLimitExceeded,
 * ...), subnet exhaustion, or anything not SP_ECAPACITY: those must not mark an offering. */
bool cvm_code_is_sold_out(const char *code);
cJSON *cvm_run_request(const struct cvm_launch *launch);
/* One DescribeInstances page, as listed (no deduplication). TotalCount must be an
 * integer in [0, CVM_DESCRIBE_MAX_INSTANCES]. */
int cvm_parse_instances(const cJSON *response, struct pool_instance **ret_instances, size_t *ret_n,
			size_t *ret_total, struct sp_error *err);
/* One DescribeInstancesStatus page, as answered. TotalCount must be an integer in
 * [0, CVM_DESCRIBE_MAX_INSTANCES]. */
int cvm_parse_status(const cJSON *response, struct pool_instance_status **ret_status, size_t *ret_n,
		     size_t *ret_total, struct sp_error *err);
/* A GetCallerIdentity Response's AccountId: 1 to CVM_ACCOUNT_ID_MAX of 0-9 A-Z a-z _ - .
 * (a Uin is digits); anything else, or none, is SP_EPROTO naming the field. */
int cvm_parse_caller_identity(const cJSON *response, char ret_account[CVM_ACCOUNT_ID_MAX + 1],
			      struct sp_error *err);

/* A DescribeInstanceTypeConfigs answer: InstanceTypeConfigSet (null: none) of at most
 * CVM_INSTANCE_TYPES_MAX entries, each with an InstanceType and integer CPU, Memory and
 * GPU (absent: 0) within bounds, GpuCount a number; types deduplicated as above. */
int cvm_parse_instance_types(const cJSON *response, struct cvm_instance_type **ret_types, size_t *ret_n,
			     struct sp_error *err);

#endif
