/* stop: a wait lasts its time unless stopped; a request from another thread or from a
 * signal handler wakes every waiter at once; the deadline arithmetic of the waits. */
#include "testutil.h"
#include "stop.h"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static void poll_timeout_from_a_monotonic_deadline(void **state)
{
	(void)state;
	assert_int_equal(stop_poll_timeout_ms(1000, 1000), 0);
	assert_int_equal(stop_poll_timeout_ms(999, 1000), 0);          /* past */
	assert_int_equal(stop_poll_timeout_ms(INT64_MIN, 1000), 0);
	assert_int_equal(stop_poll_timeout_ms(1250, 1000), 250);
	assert_int_equal(stop_poll_timeout_ms(INT64_MAX, 0), INT_MAX);  /* "forever" */
	assert_int_equal(stop_poll_timeout_ms((int64_t)INT_MAX + 7, 7), INT_MAX);
	assert_int_equal(stop_poll_timeout_ms((int64_t)INT_MAX + 7, 8), INT_MAX - 1);
}

/* Not stopped: the wait lasts its whole time (on the monotonic clock) and says so. */
static void wait_lasts_its_time(void **state)
{
	(void)state;
	struct stop s;
	stop_init(&s);
	int64_t start = sp_mono_ms();
	assert_false(stop_wait_ms(&s, 150));
	int64_t took = sp_mono_ms() - start;
	assert_true(took >= 150);
	assert_true(took < 1500);
	assert_false(stop_wait_until_ms(&s, start));  /* a deadline already past returns */
	assert_false(stop_requested(&s));
	stop_destroy(&s);
}

struct waiter {
	struct stop *s;
	pthread_t thread;
	bool stopped;
	int64_t took;
};

static void *wait_long(void *arg)
{
	struct waiter *w = arg;
	int64_t start = sp_mono_ms();
	w->stopped = stop_wait_ms(w->s, 20000);
	w->took = sp_mono_ms() - start;
	return NULL;
}

/* Every waiter wakes at once, the eventfd stays readable for later pollers, and waits
 * after the request return at once. */
static void request_wakes_every_waiter(void **state)
{
	(void)state;
	struct stop s;
	stop_init(&s);
	struct waiter w[4];
	for (size_t i = 0; i < 4; i++) {
		w[i] = (struct waiter){.s = &s};
		assert_int_equal(pthread_create(&w[i].thread, NULL, wait_long, &w[i]), 0);
	}
	usleep(100 * 1000);
	stop_request(&s);
	stop_request(&s);  /* repeats are harmless */
	for (size_t i = 0; i < 4; i++) {
		pthread_join(w[i].thread, NULL);
		assert_true(w[i].stopped);
		assert_true(w[i].took < 2000);
	}
	struct pollfd p = {.fd = stop_fd(&s), .events = POLLIN};
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_true(stop_requested(&s));
	int64_t start = sp_mono_ms();
	assert_true(stop_wait_ms(&s, 10000));
	assert_true(sp_mono_ms() - start < 100);
	stop_destroy(&s);
}

static struct stop signal_stop;

static void on_signal(int sig)
{
	(void)sig;
	stop_request(&signal_stop);
}

static void *send_signal(void *arg)
{
	usleep(100 * 1000);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

/* The daemon's SIGTERM handler stops it this way: the waiting thread itself takes the
 * signal (poll returns EINTR, the loop sees the flag), and so would any other. */
static void request_from_a_signal_handler(void **state)
{
	(void)state;
	stop_init(&signal_stop);
	struct sigaction sa = {.sa_handler = on_signal}, old;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	pthread_t self = pthread_self(), t;
	assert_int_equal(pthread_create(&t, NULL, send_signal, &self), 0);
	int64_t start = sp_mono_ms();
	assert_true(stop_wait_ms(&signal_stop, 20000));
	assert_true(sp_mono_ms() - start < 2000);
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	stop_destroy(&signal_stop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(poll_timeout_from_a_monotonic_deadline),
		cmocka_unit_test(wait_lasts_its_time),
		cmocka_unit_test(request_wakes_every_waiter),
		cmocka_unit_test(request_from_a_signal_handler),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
