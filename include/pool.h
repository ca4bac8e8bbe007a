/* pool: the Spotpool resource's spec model and its validation, shared by
 * manifests on disk and objects read from the apiserver. Pure: no I/O. */
#ifndef SPOTPOOL_POOL_H
#define SPOTPOOL_POOL_H

#include "spotpool.h"
#include "tmpl.h"

#include <cjson/cJSON.h>

#define POOL_API_GROUP "devops.jokerbai.com"
#define POOL_API_VERSION POOL_API_GROUP "/v1"
#define POOL_KIND "Spotpool"
/* Tag every owned instance carries: key fixed for all pools (one tag-key filter finds
 * them all), value pool_owner_tag() (a tag:<key> filter finds one pool's). */
#define POOL_TAG_KEY "spotpool.jokerbai.com/pool"
/* Tencent's tag service takes values of at most 255 characters; "<namespace>/<name>" of
 * a Kubernetes object reaches 63 + 1 + 253 = 317. */
#define POOL_TAG_VALUE_MAX 255
/* Label values (the /scale selector) are at most 63 characters. */
#define POOL_LABEL_VALUE_MAX 63
/* Held on every pool until its instances are confirmed gone (or retained). */
#define POOL_FINALIZER "spotpool.jokerbai.com/finalizer"
/* Tag of each launched instance naming its launch (the ClientToken): a launch whose
 * reply was lost is resolved as soon as its instances are seen. */
#define POOL_LAUNCH_TAG_KEY "spotpool.jokerbai.com/launch"
/* Tag of each launched instance naming the Kubernetes cluster whose controller launched
 * it (--cluster-name, default the kube-system namespace's UID): two clusters sharing an
 * account and a pool's namespace/name never count each other's instances. Instances
 * launched before this tag existed carry none and stay their pool's (plan_owns). */
#define POOL_CLUSTER_TAG_KEY "spotpool.jokerbai.com/cluster"
/* A cluster name is a tag value: 1..POOL_CLUSTER_NAME_MAX chars of [A-Za-z0-9._-]. */
#define POOL_CLUSTER_NAME_MAX 63
#define POOL_MAX_INSTANCES 1000
#define POOL_USER_DATA_MAX 16384
/* Longest availability zone and instance type names the spec accepts. */
#define POOL_ZONE_MAX 48
#define POOL_INSTANCE_TYPE_MAX 64
/* Most entries of spec.instanceTypes and of spec.availabilityZones (each besides the
 * seed's instanceType and availabilityZone). */
#define POOL_OFFERING_LIST_MAX 10
/* spec.drainTimeout: how long a node is drained before its instance is terminated (see
 * docs/how-it-works.md, "Draining"); 0 = no drain. A duration of whole hours, minutes and
 * seconds ("10m", "90s", "1h30m"), at most 5 digits per unit, within 0s..24h. */
#define POOL_DRAIN_TIMEOUT_DEFAULT (10 * 60)
#define POOL_DRAIN_TIMEOUT_MAX (24 * 3600)

/* spec.autoscaling's timers (docs/spotpool-reference.md): durations of the drainTimeout
 * form. How long a Node may stay idle before it goes, and how long an instance has to
 * become a Node. */
#define POOL_UNNEEDED_TIME_DEFAULT (10 * 60)
#define POOL_REGISTRATION_TIMEOUT_DEFAULT (15 * 60)
#define POOL_AUTOSCALING_TIME_MAX (24 * 3600)

enum pool_deletion_policy { POOL_DELETE, POOL_RETAIN };
/* spec.allocationStrategy: prioritized (default: the first available offering in
 * preference order) or spread (balance over the available zones). */
enum pool_allocation { POOL_PRIORITIZED, POOL_SPREAD };

/* One owned instance as DescribeInstances reports it. */
struct pool_instance {
	char id[32];
	char state[24];
	char zone[48];
	char instance_type[48];
	char private_ip[48];   /* empty when none */
	char public_ip[48];    /* empty when none: normal, not an error */
	char created_time[32]; /* ISO 8601 as reported */
	int64_t created;       /* epoch seconds, 0 if unparseable */
	char pool_tag[POOL_TAG_VALUE_MAX + 1]; /* value of POOL_TAG_KEY (the owner), empty if none */
	char launch_tag[65];   /* value of POOL_LAUNCH_TAG_KEY, empty if none or too long */
	char cluster_tag[64];  /* value of POOL_CLUSTER_TAG_KEY; empty if none, "?" if not a
				* cluster name (empty or too long): never ours */
};

/* One instance's state as DescribeInstancesStatus reports it. */
struct pool_instance_status {
	char id[32];
	char state[24];
};

struct pool_tag {
	char *key;
	char *value;
};

/* spec.autoscaling (opt-in): the pool follows demand. Absent (enabled false): the pool is
 * held at its count exactly as before; the timers keep their defaults. */
struct pool_autoscaling {
	bool enabled;                 /* the block is present */
	bool pending_pods;            /* grow for unschedulable pods that fit */
	int64_t unneeded_time;        /* seconds (scaleDownUnneededTime) */
	int64_t registration_timeout; /* seconds (nodeRegistrationTimeout), at least 1 */
};

struct pool_spec {
	char *namespace;
	char *name;
	char *uid;              /* empty for manifests read from disk */
	int64_t generation;

	char *secret_id;        /* inline credentials (discouraged), or NULL */
	char *secret_key;
	char *credentials_secret; /* credentialsSecretRef.name, or NULL */

	char *region;
	char *zone;             /* availabilityZone: the first preference */
	char *instance_type;    /* instanceType: the first preference */
	struct strv zones;      /* availabilityZones: further zones, in preference order */
	struct strv instance_types; /* instanceTypes: further types, in preference order */
	enum pool_allocation allocation;
	int minimum;
	int maximum;
	bool has_replicas;
	int replicas;
	char *vpc_id;           /* both NULL: the account's default VPC */
	char *subnet_id;
	struct strv security_group_ids;
	char *image_id;
	char *charge_type;      /* SPOTPAID (default) or POSTPAID_BY_HOUR */
	char *max_price;        /* spot bid as a decimal string, or NULL (market price) */
	int internet_max_bandwidth_out; /* Mbit/s; 0 = no public IP */
	char *system_disk_type;
	int system_disk_size;   /* GiB; 0 = image default */
	struct strv key_ids;
	char *user_data;        /* base64 */
	struct pool_tag *tags;  /* extra instance tags */
	size_t n_tags;
	enum pool_deletion_policy deletion_policy;
	int64_t drain_timeout;  /* seconds (drainTimeout); 0 = terminate without draining */
	/* maximumIncludesDoomed: instances under a reclaim notice keep counting toward maximum
	 * (the pool waits for them to go before it replaces them beyond maximum). */
	bool maximum_includes_doomed;
	struct pool_autoscaling autoscaling;
	struct tmpl_node node_template; /* spec.nodeTemplate; empty when absent */
};

/* Validates a whole Spotpool object (apiVersion, kind, metadata, spec) and builds
 * the model. default_namespace applies when metadata.namespace is absent. Errors
 * name the field ("spec.minimum: ..."). */
int pool_spec_from_object(const cJSON *obj, const char *default_namespace,
			  struct pool_spec **ret_spec, struct sp_error *err);
/* Every problem of one object, in the order pool_spec_from_object meets them; `more`
 * counts those past POOL_ERRORS_MAX. */
#define POOL_ERRORS_MAX 16
struct pool_errors {
	struct sp_error v[POOL_ERRORS_MAX];
	size_t n;
	size_t more;
};
/* pool_spec_from_object that goes on after a problem to report them all: 0 and *ret_spec,
 * or SP_EINVAL with errs->n >= 1 (ret_spec untouched). */
int pool_spec_check(const cJSON *obj, const char *default_namespace, struct pool_spec **ret_spec,
		    struct pool_errors *errs);
/* Only what deleting a pool needs (metadata, credentials, region, deletionPolicy,
 * drainTimeout: the default when it does not validate), so a pool whose spec no longer
 * validates can still be cleaned up. Other fields stay unset. */
int pool_spec_for_cleanup(const cJSON *obj, const char *default_namespace,
			  struct pool_spec **ret_spec, struct sp_error *err);
void pool_spec_free(struct pool_spec *spec);

/* The owner tag value of the pool namespace/name, a function of those two alone:
 * "<namespace>/<name>" when it fits in a tag value; otherwise its first 222 characters,
 * '#' and 32 hex digits of its SHA-256 (255 in all; '#' never occurs in a Kubernetes
 * name, so the two forms cannot meet). Every name Kubernetes accepts gets a distinct
 * value that Tencent accepts. Caller frees. */
char *pool_owner_tag(const char *namespace, const char *name);
/* pool_owner_tag of the spec's namespace and name; caller frees. */
char *pool_tag_value(const struct pool_spec *spec);
/* The value of the /scale selector's spotpool.jokerbai.com/pool-name label: the name
 * when it is a valid label value (at most 63 characters), otherwise its first 30
 * characters, '-' and 32 hex digits of its SHA-256. Caller frees. */
char *pool_label_value(const char *name);
/* The JSON type of v as errors name it ("string", "list", "object", ...). */
const char *pool_json_type(const cJSON *v);
/* "path.field: unknown field", with the nearest of known (NULL-terminated) suggested;
 * returns SP_EINVAL. */
int pool_unknown_field(struct sp_error *err, const char *path, const char *field, const char *const *known);
/* A non-negative integer field (metadata.generation, ...); 0 when absent, not a number
 * or out of int64's range. */
int64_t pool_json_int64(const cJSON *v);
/* Whether our finalizer (POOL_FINALIZER) is in the object's metadata.finalizers. */
bool pool_has_finalizer(const cJSON *obj);
/* Reads a duration of whole units: one or more <1-5 digits><h|m|s> ("10m", "1h30m",
 * "0s"), the form spec.drainTimeout takes; -1 when s is not one. */
int64_t pool_parse_duration(const char *s);
/* Seconds in that form, into buf: 5400 -> "1h30m", 90 -> "1m30s", 0 -> "0s". */
void pool_format_duration(int64_t s, char *buf, size_t n);
/* value limited to [minimum, maximum]. */
int pool_clamp(int value, int minimum, int maximum);
/* The region of a zone ("ap-singapore-2" -> "ap-singapore": all before the last '-'),
 * into out; false when zone is not of that form or out is too small. Instances live in
 * their zone's region (docs/how-it-works.md, "Where instances live"). */
bool pool_zone_region(const char *zone, char *out, size_t size);
/* A DNS-1123 label (a namespace name): 1 to 63 of a-z 0-9 -, starting and ending with a
 * letter or digit. */
bool pool_dns_label_valid(const char *s);

#endif
