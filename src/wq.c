/* wq: work queue. Linear scans keep it obvious; at 1,000 pools a scan is a few microseconds. */
#include "wq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum wq_state { WQ_IDLE, WQ_QUEUED, WQ_PROCESSING };

struct wq_entry {
	char *key;
	enum wq_state state;
	bool dirty;            /* re-added while processing */
	bool dirty_resync;     /* ... by resyncs only: the backoff deadline still applies */
	int64_t ready_at;      /* monotonic ms, when QUEUED (or dirty) */
	int64_t started_at;    /* monotonic ms, when PROCESSING */
	int failures;
	int64_t backoff_until; /* monotonic ms, set by wq_backoff() */
};

struct wq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct wq_entry *entries;
	size_t n, cap;
	/* Entries in WQ_QUEUED: written under the lock, read by report_depth after it. */
	atomic_size_t queued;
	struct wq_hooks hooks;
	bool shutdown;
};

struct wq *wq_new_with_hooks(const struct wq_hooks *hooks)
{
	struct wq *q = xcalloc(1, sizeof(*q));
	if (hooks)
		q->hooks = *hooks;
	pthread_mutex_init(&q->lock, NULL);
	sp_cond_init_monotonic(&q->cond);
	return q;
}

struct wq *wq_new(void)
{
	return wq_new_with_hooks(NULL);
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
	q->entries = sp_vec_fit(q->entries, q->n + 1, &q->cap, sizeof(*q->entries));
	e = &q->entries[q->n++];
	*e = (struct wq_entry){.key = xstrdup(key), .state = WQ_IDLE};
	return e;
}

/* Moves entries: e and every other entry pointer are stale afterwards. */
static void drop_if_idle(struct wq *q, struct wq_entry *e)
{
	if (e->state != WQ_IDLE || e->failures)
		return;
	free(e->key);
	*e = q->entries[--q->n];
	q->entries = sp_vec_fit(q->entries, q->n, &q->cap, sizeof(*q->entries));
}

static double seconds_since(int64_t then_ms, int64_t now_ms)
{
	return now_ms > then_ms ? (double)(now_ms - then_ms) / 1000.0 : 0.0;
}

/* Every state change goes through here, so that the depth count stays right. */
static void set_state(struct wq *q, struct wq_entry *e, enum wq_state state)
{
	if (e->state == state)
		return;
	if (e->state == WQ_QUEUED)
		atomic_fetch_sub(&q->queued, 1);
	if (state == WQ_QUEUED)
		atomic_fetch_add(&q->queued, 1);
	e->state = state;
}

/* Called after the unlock by whoever changed the depth (src/CONCURRENCY.md: no hook runs
 * under the queue's lock). Reports may cross, so each reporter checks after its call
 * that the depth is still what it reported and reports again if not: the last report
 * made is always the current depth. */
static void report_depth(struct wq *q, size_t before)
{
	size_t d = atomic_load(&q->queued);
	if (!q->hooks.depth || d == before)
		return;
	for (;;) {
		q->hooks.depth(q->hooks.userdata, d);
		size_t now = atomic_load(&q->queued);
		if (now == d)
			return;
		d = now;
	}
}

/* The earliest a resync asking for `at` may make e ready: its backoff deadline while
 * it is failing. */
static int64_t resync_floor(const struct wq_entry *e, int64_t at)
{
	return e->failures > 0 && e->backoff_until > at ? e->backoff_until : at;
}

/* Asks for e to be ready at `at`; the earlier of that and any pending time wins. */
static void schedule(struct wq *q, struct wq_entry *e, int64_t at, bool resync)
{
	if (e->state == WQ_PROCESSING) {
		if (!e->dirty || at < e->ready_at)
			e->ready_at = at;
		e->dirty_resync = resync && (!e->dirty || e->dirty_resync);
		e->dirty = true;
		return;
	}
	if (e->state == WQ_IDLE || at < e->ready_at)
		e->ready_at = at;
	set_state(q, e, WQ_QUEUED);
	pthread_cond_broadcast(&q->cond);
}

void wq_add(struct wq *q, const char *key, int64_t delay_ms)
{
	pthread_mutex_lock(&q->lock);
	size_t before = atomic_load(&q->queued);
	if (!q->shutdown)
		schedule(q, find_or_add(q, key), sp_mono_ms() + (delay_ms > 0 ? delay_ms : 0), false);
	pthread_mutex_unlock(&q->lock);
	report_depth(q, before);
}

void wq_add_resync(struct wq *q, const char *key, int64_t delay_ms)
{
	pthread_mutex_lock(&q->lock);
	size_t before = atomic_load(&q->queued);
	if (!q->shutdown) {
		struct wq_entry *e = find_or_add(q, key);
		int64_t at = sp_mono_ms() + (delay_ms > 0 ? delay_ms : 0);
		schedule(q, e, resync_floor(e, at), true);
	}
	pthread_mutex_unlock(&q->lock);
	report_depth(q, before);
}

int64_t wq_resync_offset_ms(const char *key, uint64_t round, int64_t spread_ms)
{
	if (spread_ms <= 0)
		return 0;
	uint64_t h = 1469598103934665603ull;
	for (const char *c = key; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	/* splitmix64 finaliser: nearby rounds and keys land far apart */
	h += round * 0x9e3779b97f4a7c15ull;
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (int64_t)(h % (uint64_t)spread_ms);
}

/* Sleeps on the condition until the monotonic time at_ms (or a signal). */
static void wait_until(struct wq *q, int64_t at_ms)
{
	sp_cond_wait_until_ms(&q->cond, &q->lock, at_ms);
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
			size_t before = atomic_load(&q->queued);
			set_state(q, best, WQ_PROCESSING);
			best->dirty = false;
			best->started_at = now;
			double waited = seconds_since(best->ready_at, now);
			*ret_key = xstrdup(best->key);
			pthread_mutex_unlock(&q->lock);
			report_depth(q, before);
			if (q->hooks.queue_latency)
				q->hooks.queue_latency(q->hooks.userdata, waited);
			return 0;
		}
		if (best)
			wait_until(q, earliest);
		else
			pthread_cond_wait(&q->cond, &q->lock);
	}
}

void wq_done(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	size_t before = atomic_load(&q->queued);
	double worked = -1;
	struct wq_entry *e = find(q, key);
	if (e && e->state == WQ_PROCESSING) {
		int64_t now = sp_mono_ms();
		worked = seconds_since(e->started_at, now);
		if (e->dirty) {
			/* A failure recorded during this run may have set a later deadline. */
			int64_t floor = resync_floor(e, now);
			if (e->dirty_resync && e->ready_at < floor)
				e->ready_at = floor;
			e->dirty = false;
			set_state(q, e, WQ_QUEUED);
			pthread_cond_broadcast(&q->cond);
		} else {
			set_state(q, e, WQ_IDLE);
			drop_if_idle(q, e);
		}
	}
	pthread_mutex_unlock(&q->lock);
	report_depth(q, before);
	if (worked >= 0 && q->hooks.work_duration)
		q->hooks.work_duration(q->hooks.userdata, worked);
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
	if (delay > WQ_BACKOFF_MAX_MS)
		delay = WQ_BACKOFF_MAX_MS;
	e->backoff_until = sp_mono_ms() + delay;
	pthread_mutex_unlock(&q->lock);
	if (q->hooks.retry)
		q->hooks.retry(q->hooks.userdata);
	return delay;
}

void wq_forget(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	struct wq_entry *e = find(q, key);
	if (e) {
		e->failures = 0;
		e->backoff_until = 0;
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
	return atomic_load(&q->queued);
}

int64_t wq_when(struct wq *q, const char *key)
{
	pthread_mutex_lock(&q->lock);
	const struct wq_entry *e = find(q, key);
	int64_t in = -1;
	if (e && (e->state == WQ_QUEUED || e->dirty)) {
		in = e->ready_at - sp_mono_ms();
		if (in < 0)
			in = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return in;
}
