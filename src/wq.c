/* wq: work queue. Linear scans keep it obvious; at 1,000 pools a scan is a few microseconds. */
#include "wq.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

enum wq_state { WQ_IDLE, WQ_QUEUED, WQ_PROCESSING };

struct wq_entry {
	char *key;
	enum wq_state state;
	bool dirty;            /* re-added while processing */
	int64_t ready_at;      /* monotonic ms, when QUEUED (or dirty) */
	int failures;
};

struct wq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct wq_entry *entries;
	size_t n, cap;
	bool shutdown;
};

struct wq *wq_new(void)
{
	struct wq *q = xcalloc(1, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cond, &attr);
	pthread_condattr_destroy(&attr);
	return q;
}

void wq_free(struct wq *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		free(q->entries[i].key);
	free(q->entries);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q);
}

static struct wq_entry *find(struct wq *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->entries[i].key, key) == 0)
			return &q->entries[i];
	return NULL;
}

static struct wq_entry *find_or_add(struct wq *q, const char *key)
{
	struct wq_entry *e = find(q, key);
	if (e)
		return e;
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 64;
		q->entries = xrealloc(q->entries, q->cap * sizeof(*q->entries));
	}
	e = &q->entries[q->n++];
	*e = (struct wq_entry){.key = xstrdup(key), .state = WQ_IDLE};
	return e;
}

static void drop_if_idle(struct wq *q, struct wq_entry *e)
{
	if (e->state != WQ_IDLE || e->failures)
		return;
	free(e->key);
	*e = q->entries[--q->n];
}

void wq_add(struct wq *q, const char *key, int64_t delay_ms)
{
	pthread_mutex_lock(&q->lock);
	if (!q->shutdown) {
		int64_t at = sp_mono_ms() + (delay_ms > 0 ? delay_ms : 0);
		struct wq_entry *e = find_or_add(q, key);
		if (e->state == WQ_PROCESSING) {
			e->ready_at = e->dirty && e->ready_at < at ? e->ready_at : at;
			e->dirty = true;
		} else {
			if (e->state == WQ_IDLE || at < e->ready_at)
				e->ready_at = at;
			e->state = WQ_QUEUED;
			pthread_cond_broadcast(&q->cond);
		}
	}
	pthread_mutex_unlock(&q->lock);
}

int wq_get(struct wq *q, char **ret_key)
{
	pthread_mutex_lock(&q->lock);
	for (;;) {
		if (q->shutdown) {
			pthread_mutex_unlock(&q->lock);
			return SP_EIO;
		}
		int64_t now = sp_mono_ms(), earliest = INT64_MAX;
		struct wq_entry *best = NULL;
		for (size_t i = 0; i < q->n; i++) {
			struct wq_entry *e = &q->entries[i];
			if (e->state == WQ_QUEUED && e->ready_at < earliest) {
				earliest = e->ready_at;
				best = e;
			}
		}
		if (best && earliest <= now) {
			best->state = WQ_PROCESSING;
			best->dirty = false;
			*ret_key = xstrdup(best->key);
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		if (best) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			int64_t wait = earliest - now;
			ts.tv_sec += wait / 1000;
			ts.tv_nsec += (wait % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&q->cond, &q->lock, &ts);
		} else {
			pthread_cond_wait(&q->cond, &q->lock);
		}
	}
}

void wq_done(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	struct wq_entry *e = find(q, key);
	if (e && e->state == WQ_PROCESSING) {
		if (e->dirty) {
			e->state = WQ_QUEUED;
			e->dirty = false;
			pthread_cond_broadcast(&q->cond);
		} else {
			e->state = WQ_IDLE;
			drop_if_idle(q, e);
		}
	}
	pthread_mutex_unlock(&q->lock);
}

int64_t wq_backoff(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	struct wq_entry *e = find_or_add(q, key);
	if (e->failures < 30)
		e->failures++;
	int64_t delay = WQ_BACKOFF_BASE_MS;
	for (int i = 1; i < e->failures && delay < WQ_BACKOFF_MAX_MS; i++)
		delay *= 2;
	pthread_mutex_unlock(&q->lock);
	return delay < WQ_BACKOFF_MAX_MS ? delay : WQ_BACKOFF_MAX_MS;
}

void wq_forget(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	struct wq_entry *e = find(q, key);
	if (e) {
		e->failures = 0;
		drop_if_idle(q, e);
	}
	pthread_mutex_unlock(&q->lock);
}

void wq_shutdown(struct wq *q)
{
	pthread_mutex_lock(&q->lock);
	q->shutdown = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

size_t wq_len(struct wq *q)
{
	pthread_mutex_lock(&q->lock);
	size_t n = 0;
	for (size_t i = 0; i < q->n; i++)
		n += q->entries[i].state == WQ_QUEUED;
	pthread_mutex_unlock(&q->lock);
	return n;
}
