/* answers: remembered launch answers, one entry per pool (answers.h). */
#include "answers.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct answer {
	char *owner;
	char token[65];
	struct strv ids;
	uint64_t seq;  /* when remembered: the smallest goes first when full */
};

struct answers {
	pthread_mutex_t lock;
	struct answer *v;
	size_t n, cap, max;
	uint64_t next_seq;
};

struct answers *answers_new(size_t max)
{
	struct answers *a = xcalloc(1, sizeof(*a));
	a->max = max ? max : ANSWERS_MAX;
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

static void drop(struct answers *a, size_t i)
{
	free(a->v[i].owner);
	strv_clear(&a->v[i].ids);
	a->v[i] = a->v[--a->n];
	a->v = sp_vec_fit(a->v, a->n, &a->cap, sizeof(*a->v));
}

void answers_free(struct answers *a)
{
	if (!a)
		return;
	while (a->n)
		drop(a, a->n - 1);
	free(a->v);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static struct answer *find(struct answers *a, const char *owner)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i].owner, owner) == 0)
			return &a->v[i];
	return NULL;
}

static void copy_ids(struct strv *dst, const struct strv *src)
{
	for (size_t i = 0; i < src->n; i++)
		strv_push(dst, src->v[i]);
}

void answers_remember(struct answers *a, const char *owner, const char *token, const struct strv *ids)
{
	pthread_mutex_lock(&a->lock);
	struct answer *e = find(a, owner);
	if (!e) {
		if (a->n == a->max) {
			size_t oldest = 0;
			for (size_t i = 1; i < a->n; i++)
				if (a->v[i].seq < a->v[oldest].seq)
					oldest = i;
			drop(a, oldest);
		}
		a->v = sp_vec_fit(a->v, a->n + 1, &a->cap, sizeof(*a->v));
		e = &a->v[a->n++];
		*e = (struct answer){.owner = xstrdup(owner)};
	}
	snprintf(e->token, sizeof(e->token), "%s", token);
	strv_clear(&e->ids);
	copy_ids(&e->ids, ids);
	e->seq = a->next_seq++;
	pthread_mutex_unlock(&a->lock);
}

bool answers_recall(struct answers *a, const char *owner, const char *token, struct strv *ret_ids)
{
	pthread_mutex_lock(&a->lock);
	const struct answer *e = find(a, owner);
	bool hit = e && strcmp(e->token, token) == 0;
	if (hit)
		copy_ids(ret_ids, &e->ids);
	pthread_mutex_unlock(&a->lock);
	return hit;
}

void answers_forget(struct answers *a, const char *owner)
{
	pthread_mutex_lock(&a->lock);
	struct answer *e = find(a, owner);
	if (e)
		drop(a, (size_t)(e - a->v));
	pthread_mutex_unlock(&a->lock);
}

size_t answers_count(struct answers *a)
{
	pthread_mutex_lock(&a->lock);
	size_t n = a->n;
	pthread_mutex_unlock(&a->lock);
	return n;
}
