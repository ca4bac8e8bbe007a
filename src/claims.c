/* claims: pools and the instances they asked for; see claims.h. */
#include "claims.h"

#include <string.h>

static void claim_clear(struct claim *c)
{
	free(c->pool);
	strv_clear(&c->ids);
	strv_clear(&c->ips);
}

/* Where pool's claim is, or would go: claims are sorted by pool, since every pass of
 * every pool renews its claim in two caches (a linear search cost 4 million string
 * comparisons a minute at 1,000 pools). */
static size_t locate(const struct claims *c, const char *pool, bool *found)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(c->v[mid].pool, pool) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < c->n && strcmp(c->v[lo].pool, pool) == 0;
	return lo;
}

struct claim *claims_renew(struct claims *c, const char *pool)
{
	bool found;
	size_t i = locate(c, pool, &found);
	if (found) {
		strv_clear(&c->v[i].ids);
		strv_clear(&c->v[i].ips);
		return &c->v[i];
	}
	c->v = sp_vec_fit(c->v, c->n + 1, &c->cap, sizeof(*c->v));
	memmove(&c->v[i + 1], &c->v[i], (c->n - i) * sizeof(*c->v));
	c->n++;
	c->v[i] = (struct claim){.pool = xstrdup(pool)};
	return &c->v[i];
}

void claims_forget(struct claims *c, const char *pool)
{
	bool found;
	size_t i = locate(c, pool, &found);
	if (!found)
		return;
	claim_clear(&c->v[i]);
	memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof(*c->v));
	c->n--;
	c->v = sp_vec_fit(c->v, c->n, &c->cap, sizeof(*c->v));
}

void claims_find(const struct claims *c, const char *const *ids, size_t n_ids, const char *ip, struct strv *out)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct claim *cl = &c->v[i];
		bool hit = ip && *ip && strv_contains(&cl->ips, ip);
		for (size_t k = 0; k < n_ids && !hit; k++)
			hit = *ids[k] && strv_contains(&cl->ids, ids[k]);
		if (hit && !strv_contains(out, cl->pool))
			strv_push(out, cl->pool);
	}
}

void claims_tell(struct strv *pools, void (*changed)(void *userdata, const char *pool), void *userdata)
{
	for (size_t i = 0; i < pools->n; i++)
		changed(userdata, pools->v[i]);
	strv_clear(pools);
}

void claims_free(struct claims *c)
{
	for (size_t i = 0; i < c->n; i++)
		claim_clear(&c->v[i]);
	free(c->v);
	*c = (struct claims){0};
}
