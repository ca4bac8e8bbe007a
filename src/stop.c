/* stop: a stop request that wakes every waiter at once; see stop.h. */
#include "stop.h"
#include "log.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* A lock-free flag, so that setting it from a signal handler is async-signal-safe. */
_Static_assert(ATOMIC_BOOL_LOCK_FREE == 2, "stop_request needs a lock-free atomic bool");

void stop_init(struct stop *s)
{
	atomic_init(&s->requested, false);
	s->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->fd < 0) {
		log_error("cannot create an eventfd: %s", strerror(errno));
		abort();
	}
}

void stop_destroy(struct stop *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

void stop_request(struct stop *s)
{
	if (atomic_exchange(&s->requested, true))
		return;
	int saved = errno;  /* a signal handler must leave errno as it found it */
	uint64_t one = 1;
	if (s->fd >= 0 && write(s->fd, &one, sizeof(one)) < 0) {
		/* Cannot fail: the counter is far from its maximum. */
	}
	errno = saved;
}

bool stop_requested(const struct stop *s)
{
	return atomic_load(&s->requested);
}

int stop_fd(const struct stop *s)
{
	return s->fd;
}

int stop_poll_timeout_ms(int64_t at_mono_ms, int64_t now_mono_ms)
{
	if (at_mono_ms <= now_mono_ms)
		return 0;
	return at_mono_ms - now_mono_ms > INT_MAX ? INT_MAX : (int)(at_mono_ms - now_mono_ms);
}

bool stop_wait_until_ms(const struct stop *s, int64_t at_mono_ms)
{
	for (;;) {
		if (stop_requested(s))
			return true;
		int timeout = stop_poll_timeout_ms(at_mono_ms, sp_mono_ms());
		if (timeout == 0)
			return false;
		struct pollfd p = {.fd = s->fd, .events = POLLIN};
		poll(&p, 1, timeout);  /* EINTR: go round, the deadline is recomputed */
	}
}

bool stop_wait_ms(const struct stop *s, int64_t ms)
{
	return stop_wait_until_ms(s, sp_mono_ms() + (ms > 0 ? ms : 0));
}
