/* answers: the instance IDs RunInstances answered for each pool's latest fresh launch,
 * kept in memory (writing them would cost a status write per launch). A later pass whose
 * ledger has the same token but no IDs takes them and confirms them by ID. Lost with
 * the process: the launch tag and a repeat of the token then resolve the launch.
 * One table per controller, shared by its workers (thread-safe). */
#ifndef SPOTPOOL_ANSWERS_H
#define SPOTPOOL_ANSWERS_H

#include "spotpool.h"

/* Most pools remembered at once; past it the one remembered longest ago goes (a
 * launch answered that long ago has been confirmed by then, or the repeat of its
 * token resolves it). */
#define ANSWERS_MAX 10000

struct answers;

struct answers *answers_new(size_t max);
void answers_free(struct answers *a);
/* Replaces what owner's pool remembers by token and ids. */
void answers_remember(struct answers *a, const char *owner, const char *token, const struct strv *ids);
/* Appends the remembered IDs of owner's launch token to ret_ids: true when there were. */
bool answers_recall(struct answers *a, const char *owner, const char *token, struct strv *ret_ids);
void answers_forget(struct answers *a, const char *owner);
size_t answers_count(struct answers *a);

#endif
