/* wq: de-duplicating work queue with delayed adds and per-key exponential backoff.
 * A key is handed to at most one worker at a time; adding a key while it is being
 * processed queues it again once that worker is done. Thread-safe. */
#ifndef SPOTPOOL_WQ_H
#define SPOTPOOL_WQ_H

#include "spotpool.h"

#define WQ_BACKOFF_BASE_MS 1000
#define WQ_BACKOFF_MAX_MS (5 * 60 * 1000)

struct wq;

struct wq *wq_new(void);
void wq_free(struct wq *q);
/* Queues key to become ready after delay_ms (0 = now); an earlier ready time wins. */
void wq_add(struct wq *q, const char *key, int64_t delay_ms);
/* Blocks until a key is ready and hands it out (caller frees); SP_EIO after shutdown. */
int wq_get(struct wq *q, char **ret_key);
/* Marks the key's processing finished. */
void wq_done(struct wq *q, const char *key);
/* Records a failure of key and returns its next backoff delay. */
int64_t wq_backoff(struct wq *q, const char *key);
/* Clears key's failure count after a success. */
void wq_forget(struct wq *q, const char *key);
void wq_shutdown(struct wq *q);
/* Keys queued (ready or delayed), not counting those being processed. */
size_t wq_len(struct wq *q);

#endif
