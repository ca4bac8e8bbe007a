/* acct: the account fingerprint of each SecretId, one entry per SecretId (acct.h). */
#include "acct.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct entry {
	unsigned char key[SHA256_DIGEST_LENGTH];  /* SHA-256 of the SecretId */
	char fp[ACCT_FP_MAX + 1];                 /* "": not known */
	int64_t next_ask_ms;                      /* unknown: no ask before */
	int64_t backoff_ms;                       /* the last failure's wait, 0: none failed */
	uint64_t used;                            /* the smallest goes first when full */
};

struct acct {
	pthread_mutex_t lock;
	struct entry *v;
	size_t n, cap, max;
	uint64_t clock;
};

struct acct *acct_new(size_t max)
{
	struct acct *a = xcalloc(1, sizeof(*a));
	a->max = max ? max : ACCT_MAX;
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

void acct_free(struct acct *a)
{
	if (!a)
		return;
	free(a->v);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* secret_id's entry, added (unknown, askable) when missing; called with the lock held. */
static struct entry *entry_of(struct acct *a, const char *secret_id)
{
	unsigned char key[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)secret_id, strlen(secret_id), key);
	struct entry *e = NULL;
	for (size_t i = 0; i < a->n && !e; i++)
		if (memcmp(a->v[i].key, key, sizeof(key)) == 0)
			e = &a->v[i];
	if (!e) {
		if (a->n == a->max) {
			size_t oldest = 0;
			for (size_t i = 1; i < a->n; i++)
				if (a->v[i].used < a->v[oldest].used)
					oldest = i;
			a->v[oldest] = a->v[--a->n];
		}
		a->v = sp_vec_fit(a->v, a->n + 1, &a->cap, sizeof(*a->v));
		e = &a->v[a->n++];
		*e = (struct entry){.next_ask_ms = INT64_MIN};
		memcpy(e->key, key, sizeof(key));
	}
	e->used = ++a->clock;
	return e;
}

enum acct_state acct_get(struct acct *a, const char *secret_id, int64_t now_ms, char ret_fp[ACCT_FP_MAX + 1])
{
	pthread_mutex_lock(&a->lock);
	struct entry *e = entry_of(a, secret_id);
	enum acct_state s = ACCT_WAIT;
	if (*e->fp) {
		snprintf(ret_fp, ACCT_FP_MAX + 1, "%s", e->fp);
		s = ACCT_KNOWN;
	} else if (now_ms >= e->next_ask_ms) {
		s = ACCT_ASK;
	}
	pthread_mutex_unlock(&a->lock);
	return s;
}

void acct_learned(struct acct *a, const char *secret_id, const char *fp)
{
	pthread_mutex_lock(&a->lock);
	struct entry *e = entry_of(a, secret_id);
	snprintf(e->fp, sizeof(e->fp), "%s", fp);
	pthread_mutex_unlock(&a->lock);
}

void acct_failed(struct acct *a, const char *secret_id, int64_t now_ms)
{
	pthread_mutex_lock(&a->lock);
	struct entry *e = entry_of(a, secret_id);
	e->backoff_ms = e->backoff_ms ? e->backoff_ms * 2 : ACCT_RETRY_MIN_MS;
	if (e->backoff_ms > ACCT_RETRY_MAX_MS)
		e->backoff_ms = ACCT_RETRY_MAX_MS;
	e->next_ask_ms = now_ms + e->backoff_ms;
	pthread_mutex_unlock(&a->lock);
}

size_t acct_count(struct acct *a)
{
	pthread_mutex_lock(&a->lock);
	size_t n = a->n;
	pthread_mutex_unlock(&a->lock);
	return n;
}
