/* itypes: the resources of instance types (CPU cores, memory, GPUs), per region, from
 * DescribeInstanceTypeConfigs. The catalogue changes rarely: a region's is fetched whole
 * once and kept an hour; at most one call per region is in flight, and whoever asks
 * meanwhile waits for it, or is answered from the hour-old catalogue while it refreshes.
 * Shared by every pool of a process (thread-safe). Not used by the planner yet
 * (docs/how-it-works.md, "Cloud calls"). */
#ifndef SPOTPOOL_ITYPES_H
#define SPOTPOOL_ITYPES_H

#include "cvm.h"
#include "spotpool.h"

#define ITYPES_TTL_MS (3600 * 1000)
/* After a failed refresh, the catalogue a region has is used this long before the next
 * try (a failing API is not asked at every pass). */
#define ITYPES_RETRY_MS (60 * 1000)

/* What fetches one region's catalogue: cvm_describe_instance_types's contract. */
typedef int (*itypes_fetch_fn)(void *ctx, const struct cvm_credentials *cred, const char *region,
			       struct cvm_instance_type **ret_types, size_t *ret_n, struct sp_error *err);

struct itypes_config {
	itypes_fetch_fn fetch;  /* NULL: cvm_describe_instance_types on ctx, a cvm_client */
	void *ctx;
	const struct sp_clock *clock;  /* NULL: sp_clock_system */
	int64_t ttl_ms;                /* 0: ITYPES_TTL_MS */
};

struct itypes;
struct itypes *itypes_new(const struct itypes_config *cfg);
void itypes_free(struct itypes *c);

/* The resources of instance_type in region, into ret. The catalogue of region is
 * fetched with cred when the cache has none or it is older than the TTL. SP_ENOTFOUND
 * when the region does not sell that type; the fetch's error when there is no
 * catalogue to answer from. */
int itypes_get(struct itypes *c, const struct cvm_credentials *cred, const char *region, const char *instance_type,
	       struct cvm_instance_type *ret, struct sp_error *err);

#endif
