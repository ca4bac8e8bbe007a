/* stop: a stop request that wakes every thread waiting for it at once, instead of
 * flags each thread polls. An atomic flag says whether it was requested; an eventfd,
 * readable from then on, wakes poll(2) (stop_wait_*), curl_multi_poll (http) and
 * anything else that waits on file descriptors. Requesting is async-signal-safe, so a
 * signal handler may stop the daemon. A request cannot be taken back.
 * src/CONCURRENCY.md says which thread waits on which stop. */
#ifndef SPOTPOOL_STOP_H
#define SPOTPOOL_STOP_H

#include "spotpool.h"

struct stop {
	atomic_bool requested;
	int fd;  /* eventfd, -1 before stop_init */
};

/* Opens the eventfd; like an allocation failure, not having one aborts. */
void stop_init(struct stop *s);
void stop_destroy(struct stop *s);
/* Sets the flag and makes the eventfd readable. Async-signal-safe; repeats are no-ops. */
void stop_request(struct stop *s);
bool stop_requested(const struct stop *s);
/* Readable (POLLIN) once stopped; never read, so it stays readable for every waiter. */
int stop_fd(const struct stop *s);
/* Sleeps until at_mono_ms (sp_mono_ms() time) or a stop request, whichever comes
 * first; returns whether stop was requested. poll(2) counts its timeout on the
 * monotonic clock, so a wall-clock step neither stretches nor cuts the wait. */
bool stop_wait_until_ms(const struct stop *s, int64_t at_mono_ms);
bool stop_wait_ms(const struct stop *s, int64_t ms);
/* poll(2)'s timeout for a wait until at_mono_ms when it is now_mono_ms: 0 when past,
 * at most INT_MAX. */
int stop_poll_timeout_ms(int64_t at_mono_ms, int64_t now_mono_ms);

#endif
