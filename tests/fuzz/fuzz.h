/* Shared by the libFuzzer targets in this directory (see the Makefile's fuzz target). */
#ifndef SPOTPOOL_FUZZ_H
#define SPOTPOOL_FUZZ_H

#include "log.h"
#include "spotpool.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Only errors, so the fuzzer's own output stays readable. */
static inline void fuzz_setup(void)
{
	log_setup(LOG_FMT_PLAIN, LOG_LVL_ERROR);
}

/* Forgets the secrets an input registered for redaction, so the list (which is global
 * and lives as long as the process) does not grow from one input to the next. */
static inline void fuzz_forget_secrets(void)
{
	log_shutdown();
}

/* The error convention (spotpool.h): a failure writes a message, terminated within the
 * buffer, and a negative code. */
static inline void fuzz_check_error(int r, const struct sp_error *err)
{
	if (r < 0 && (err->code >= 0 || !err->msg[0] || memchr(err->msg, '\0', sizeof(err->msg)) == NULL ||
		      memchr(err->reason, '\0', sizeof(err->reason)) == NULL)) {
		fprintf(stderr, "fuzz: failure %d with a bad sp_error (code %d)\n", r, err->code);
		abort();
	}
}

/* The input as a NUL-terminated copy, for APIs that take C strings. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size)
{
	return xstrndup((const char *)data, size);
}

#endif
