/* claims: pools and the instances they asked for; see claims.h. */
#include "claims.h"

#include <string.h>

static void claim_clear(struct claim *c)
{
	free(c->pool);
	strv_clear(&c->ids);
	strv_clear(&c->ips);
}

struct claim *claims_renew(struct claims *c, const char *pool)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i].pool, pool) == 0) {
			strv_clear(&c->v[i].ids);
			strv_clear(&c->v[i].ips);
			return &c->v[i];
		}
	c->v = sp_vec_fit(c->v, c->n + 1, &c->cap, sizeof(*c->v));
	struct claim *cl = &c->v[c->n++];
	*cl = (struct claim){.pool = xstrdup(pool)};
	return cl;
}

void claims_forget(struct claims *c, const char *pool)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i].pool, pool) == 0) {
			claim_clear(&c->v[i]);
			c->v[i] = c->v[--c->n];
			c->v = sp_vec_fit(c->v, c->n, &c->cap, sizeof(*c->v));
			return;
		}
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
