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

#include <cmocka.h>

#define assert_contains(haystack, needle)                                                    \
	do {                                                                                 \
		if (!strstr((haystack), (needle)))                                           \
			fail_msg("\"%s\" does not contain \"%s\"", (haystack), (needle));    \
	} while (0)

#endif
