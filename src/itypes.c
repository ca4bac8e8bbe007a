/* itypes: per-region cache of the instance type catalogue; see itypes.h. */
#include "itypes.h"

#include <string.h>

struct region {
	char *name;
	struct cvm_instance_type *types;  /* sorted by name (cvm_describe_instance_types) */
	size_t n;
	bool have;              /* a catalogue was fetched (types may still be empty) */
	int64_t fetched_ms;     /* monotonic, of the catalogue held */
	int64_t failed_ms;      /* of the last failed refresh, 0 if none since */
	bool fetching;          /* a call is in flight (by one caller, the lock released) */
	uint64_t round;         /* fetches finished, so that a waiter sees its fetch end */
	int code;               /* the last fetch's outcome and error */
	struct sp_error error;
};

struct itypes {
	pthread_mutex_t lock;
	pthread_cond_t done;    /* a fetch finished */
	itypes_fetch_fn fetch;
	void *ctx;
	const struct sp_clock *clock;
	int64_t ttl_ms;
	struct region *regions;
	size_t n_regions, cap_regions;
};

static int cvm_fetch(void *ctx, const struct cvm_credentials *cred, const char *region,
		     struct cvm_instance_type **ret_types, size_t *ret_n, struct sp_error *err)
{
	return cvm_describe_instance_types(ctx, cred, region, ret_types, ret_n, err);
}

struct itypes *itypes_new(const struct itypes_config *cfg)
{
	struct itypes *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
	c->fetch = cfg->fetch ? cfg->fetch : cvm_fetch;
	c->ctx = cfg->ctx;
	c->clock = cfg->clock ? cfg->clock : &sp_clock_system;
	c->ttl_ms = cfg->ttl_ms > 0 ? cfg->ttl_ms : ITYPES_TTL_MS;
	return c;
}

void itypes_free(struct itypes *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_regions; i++) {
		free(c->regions[i].name);
		free(c->regions[i].types);
	}
	free(c->regions);
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* The entry of name, added if new. Regions are few (a few dozen at most). The index
 * stays valid while the lock is held or regions are only added. */
static size_t region_of(struct itypes *c, const char *name)
{
	for (size_t i = 0; i < c->n_regions; i++)
		if (strcmp(c->regions[i].name, name) == 0)
			return i;
	c->regions = sp_vec_fit(c->regions, c->n_regions + 1, &c->cap_regions, sizeof(*c->regions));
	c->regions[c->n_regions] = (struct region){.name = xstrdup(name)};
	return c->n_regions++;
}

/* Whether region r's catalogue should be fetched now (the lock held). */
static bool wants_fetch(const struct itypes *c, const struct region *r, int64_t now)
{
	if (r->fetching)
		return false;
	if (!r->have)
		return true;
	if (r->failed_ms && now - r->failed_ms < ITYPES_RETRY_MS)
		return false;
	return now - r->fetched_ms >= c->ttl_ms;
}

/* Fetches region i's catalogue with the lock released, then records the outcome: a new
 * catalogue replaces the old; a failure keeps the old one. */
static void fetch_region(struct itypes *c, size_t i, const struct cvm_credentials *cred)
{
	struct region *r = &c->regions[i];
	char *name = xstrdup(r->name);
	r->fetching = true;
	pthread_mutex_unlock(&c->lock);
	struct cvm_instance_type *types = NULL;
	size_t n = 0;
	struct sp_error e = {0};
	int code = c->fetch(c->ctx, cred, name, &types, &n, &e);
	int64_t now = c->clock->mono_ms(c->clock->ctx);
	pthread_mutex_lock(&c->lock);
	r = &c->regions[i];
	r->fetching = false;
	r->round++;
	r->code = code;
	r->error = e;
	if (code == 0) {
		free(r->types);
		r->types = types;
		r->n = n;
		r->have = true;
		r->fetched_ms = now;
		r->failed_ms = 0;
	} else {
		r->failed_ms = now;
	}
	free(name);
	pthread_cond_broadcast(&c->done);
}

static int by_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct cvm_instance_type *)elem)->instance_type);
}

int itypes_get(struct itypes *c, const struct cvm_credentials *cred, const char *region, const char *instance_type,
	       struct cvm_instance_type *ret, struct sp_error *err)
{
	pthread_mutex_lock(&c->lock);
	size_t i = region_of(c, region);
	int64_t now = c->clock->mono_ms(c->clock->ctx);
	if (wants_fetch(c, &c->regions[i], now)) {
		fetch_region(c, i, cred);
	} else if (c->regions[i].fetching && !c->regions[i].have) {
		/* Nothing to answer from: wait for the call in flight. */
		uint64_t round = c->regions[i].round;
		while (c->regions[i].round == round)
			pthread_cond_wait(&c->done, &c->lock);
	}
	struct region *r = &c->regions[i];
	int code = 0;
	if (!r->have) {
		code = r->code < 0 ? r->code : SP_ETRANSIENT;
		if (err)
			*err = r->error;
		sp_error_prefix(err, "instance types of %s: ", region);
	} else {
		const struct cvm_instance_type *t = bsearch(instance_type, r->types, r->n, sizeof(*r->types), by_name);
		if (t)
			*ret = *t;
		else
			code = sp_fail(err, SP_ENOTFOUND, "instance type %.64s is not in the catalogue of region %s "
				       "(DescribeInstanceTypeConfigs)", instance_type, region);
	}
	pthread_mutex_unlock(&c->lock);
	return code;
}
