/* Shared includes for cmocka unit tests. */
#ifndef SPOTPOOL_TESTUTIL_H
#define SPOTPOOL_TESTUTIL_H

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cmocka.h>

#define assert_contains(haystack, needle)                                                    \
	do {                                                                                 \
		if (!strstr((haystack), (needle)))                                           \
			fail_msg("\"%s\" does not contain \"%s\"", (haystack), (needle));    \
	} while (0)

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

#endif
