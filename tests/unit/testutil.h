/* Shared includes for cmocka unit tests. */
#ifndef SPOTPOOL_TESTUTIL_H
#define SPOTPOOL_TESTUTIL_H

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "http.h"
#include "log.h"
#include "spotpool.h"

#define assert_contains(haystack, needle)                                                    \
	do {                                                                                 \
		if (!strstr((haystack), (needle)))                                           \
			fail_msg("\"%s\" does not contain \"%s\"", (haystack), (needle));    \
	} while (0)

/* JSON written with ' for ", so that tables of objects read; bad JSON fails the test. */
static inline cJSON *test_json(const char *text)
{
	char *s = xstrdup(text);
	for (char *c = s; *c; c++)
		if (*c == '\'')
			*c = '"';
	cJSON *obj = cJSON_Parse(s);
	if (!obj)
		fail_msg("bad JSON in the test: %s", s);
	free(s);
	return obj;
}

/* A listening TCP socket on 127.0.0.1 at a free port (stored in ret_port), for fake
 * servers. */
static inline int test_listen_loopback(int backlog, int *ret_port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, backlog), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

/* Reads one HTTP request (headers and a Content-Length body) into buf, NUL-terminated;
 * what does not fit in cap - 1 bytes is left unread. Whether the whole request came. */
static inline bool test_read_request(int fd, char *buf, size_t cap)
{
	size_t got = 0, want = 0;
	buf[0] = '\0';
	while (got < cap - 1) {
		ssize_t r = read(fd, buf + got, cap - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		buf[got] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (end && !want) {
			char *cl = strcasestr(buf, "\r\nContent-Length:");
			want = (size_t)(end + 4 - buf) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
		}
		if (want && got >= want)
			return true;
	}
	return false;
}

/* A clock the test moves by hand (struct sp_clock's fake): wall seconds and monotonic
 * milliseconds advance together through test_clock_advance_ms. */
struct test_clock {
	int64_t now;      /* epoch seconds */
	int64_t mono_ms;
	int64_t spare_ms; /* milliseconds not yet a whole wall second */
};

static inline int64_t test_clock_now(void *ctx)
{
	return ((struct test_clock *)ctx)->now;
}

static inline int64_t test_clock_mono_ms(void *ctx)
{
	return ((struct test_clock *)ctx)->mono_ms;
}

static inline struct sp_clock test_clock_port(struct test_clock *c)
{
	return (struct sp_clock){.now = test_clock_now, .mono_ms = test_clock_mono_ms, .ctx = c};
}

static inline void test_clock_advance_ms(struct test_clock *c, int64_t ms)
{
	c->mono_ms += ms;
	c->spare_ms += ms;
	c->now += c->spare_ms / 1000;
	c->spare_ms %= 1000;
}

/* Runs fn(arg) on a thread and waits up to ms for it to return; false if it has not (it
 * waits for a lock the caller holds, say). test_probe_join joins it either way. */
struct test_probe {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	void (*fn)(void *);
	void *arg;
};

static inline void *test_probe_main(void *arg)
{
	struct test_probe *p = arg;
	p->fn(p->arg);
	pthread_mutex_lock(&p->lock);
	p->done = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static inline bool test_probe_run(struct test_probe *p, void (*fn)(void *), void *arg, int64_t ms)
{
	*p = (struct test_probe){.fn = fn, .arg = arg};
	pthread_mutex_init(&p->lock, NULL);
	sp_cond_init_monotonic(&p->cond);
	pthread_mutex_lock(&p->lock);
	assert_int_equal(pthread_create(&p->thread, NULL, test_probe_main, p), 0);
	int64_t until = sp_mono_ms() + ms;
	while (!p->done && sp_mono_ms() < until)
		sp_cond_wait_until_ms(&p->cond, &p->lock, until);
	bool done = p->done;
	pthread_mutex_unlock(&p->lock);
	return done;
}

static inline void test_probe_join(struct test_probe *p)
{
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
}

/* Runs fn(arg) in a child process and asserts it returned 0: for what cannot be undone
 * in this one, such as http_abort_all. */
static inline void test_in_child(int (*fn)(void *), void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn(arg));
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A thread that calls http_abort_all (as SIGTERM does) 100 ms after it starts. */
static inline void *test_abort_soon(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	http_abort_all();
	return NULL;
}

/* What is logged (at info and above, plain) between the two calls, as one string. */
struct test_log {
	FILE *out;
	char *text;
	size_t size;
};

static inline void test_log_start(struct test_log *l)
{
	*l = (struct test_log){0};
	l->out = open_memstream(&l->text, &l->size);
	assert_non_null(l->out);
	log_setup(LOG_FMT_PLAIN, LOG_LVL_INFO);
	log_set_output(l->out);
}

static inline const char *test_log_end(struct test_log *l)
{
	log_set_output(NULL);
	fclose(l->out);
	return l->text;
}

#endif
