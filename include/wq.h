/* wq: de-duplicating work queue with delayed adds and per-key exponential backoff.
 * A key is handed to at most one worker at a time; adding a key while it is being
 * processed queues it again once that worker is done. Thread-safe.
 *
 * Two kinds of add:
 *   wq_add()         something happened (a watch event, a timer the caller asked for):
 *                    the earlier ready time wins, so an event runs a key at once even
 *                    while it is backing off;
 *   wq_add_resync()  a periodic resync or relist, which carries no news: while a key is
 *                    backing off (it has failures and its backoff deadline, set by
 *                    wq_backoff(), is still ahead) the key does not become ready before
 *                    that deadline, so a sold-out launch is retried at 1 s, 2 s, 4 s ...
 *                    5 min, not at every resync.
 * A key's failures are counted by wq_backoff() and cleared by wq_forget().
 *
 * Instrumentation goes through struct wq_hooks, so the queue knows nothing of metrics. */
#ifndef SPOTPOOL_WQ_H
#define SPOTPOOL_WQ_H

#include "spotpool.h"

#define WQ_BACKOFF_BASE_MS 1000
#define WQ_BACKOFF_MAX_MS (5 * 60 * 1000)

/* Optional observers; any member may be NULL.  They are called after the queue's lock
 * is released (src/CONCURRENCY.md), so they may call back into the queue. Depth reports
 * from several threads may cross, but the last one made is always the current depth. */
struct wq_hooks {
	/* wq_len() changed to depth. */
	void (*depth)(void *userdata, size_t depth);
	/* wq_get() handed out a key that had been ready (added without delay, or its delay
	 * over) for this long: the wait for a free worker. */
	void (*queue_latency)(void *userdata, double seconds);
	/* wq_done(): the key was processed for this long since wq_get(). */
	void (*work_duration)(void *userdata, double seconds);
	/* wq_backoff() recorded a failure: the key will be retried. */
	void (*retry)(void *userdata);
	void *userdata;  /* borrowed until wq_free() */
};

struct wq;

struct wq *wq_new(void);
/* Same, reporting to hooks (copied; NULL for none). */
struct wq *wq_new_with_hooks(const struct wq_hooks *hooks);
void wq_free(struct wq *q);
/* Queues key to become ready after delay_ms (0 = now); an earlier ready time wins. */
void wq_add(struct wq *q, const char *key, int64_t delay_ms);
/* Queues key to become ready after delay_ms (its place in a spread-out resync), or at
 * its backoff deadline while it is backing off if that is later; never delays a key
 * already queued for earlier. */
void wq_add_resync(struct wq *q, const char *key, int64_t delay_ms);
/* The delay in [0, spread_ms) of key in resync round `round`: hashed from both, so a
 * resync of many keys is spread evenly and no key is always last. 0 if spread_ms <= 0. */
int64_t wq_resync_offset_ms(const char *key, uint64_t round, int64_t spread_ms);
/* Blocks until a key is ready and hands it out (caller frees); SP_EIO after shutdown. */
int wq_get(struct wq *q, char **ret_key);
/* Marks the key's processing finished. */
void wq_done(struct wq *q, const char *key);
/* Records a failure of key and returns its next backoff delay: WQ_BACKOFF_BASE_MS,
 * doubling with each further failure up to WQ_BACKOFF_MAX_MS.  The key's backoff
 * deadline becomes now + that delay; queue it with wq_add(q, key, delay). */
int64_t wq_backoff(struct wq *q, const char *key);
/* Clears key's failure count and backoff deadline after a success. */
void wq_forget(struct wq *q, const char *key);
void wq_shutdown(struct wq *q);
/* Keys queued (ready or delayed), not counting those being processed. */
size_t wq_len(struct wq *q);
/* Milliseconds until key is next ready (0: ready now), counting a re-add made while it
 * is being processed; -1 when it is not queued. */
int64_t wq_when(struct wq *q, const char *key);

#endif
