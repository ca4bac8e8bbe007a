/* claims: which pool last asked for which instances (by ID and private IP), so a cache
 * of objects about instances (Nodes, SpotNotices) can tell the pools concerned when one
 * of them changes. Pure: the caches hold it under their own lock. */
#ifndef SPOTPOOL_CLAIMS_H
#define SPOTPOOL_CLAIMS_H

#include "spotpool.h"

struct claim {
	char *pool;
	struct strv ids, ips;
};

struct claims {
	struct claim *v;
	size_t n, cap;
};

/* Pool's claim, emptied (made when missing): the caller pushes what it asks for now. */
struct claim *claims_renew(struct claims *c, const char *pool);
/* The pool asks for nothing any more. */
void claims_forget(struct claims *c, const char *pool);
/* Appends to out (once each) the pools whose claims name one of ids (n_ids, empty
 * strings skipped) or ip (NULL or empty: none). */
void claims_find(const struct claims *c, const char *const *ids, size_t n_ids, const char *ip, struct strv *out);
/* Calls changed for each of pools (collected under the cache's lock, called after it:
 * src/CONCURRENCY.md rule 1) and empties pools. */
void claims_tell(struct strv *pools, void (*changed)(void *userdata, const char *pool), void *userdata);
void claims_free(struct claims *c);

#endif
