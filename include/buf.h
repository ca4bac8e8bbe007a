/* buf: growable byte buffers with a hard maximum, always NUL-terminated. */
#ifndef SPOTPOOL_BUF_H
#define SPOTPOOL_BUF_H

#include "spotpool.h"

struct buf {
	char *data;  /* NUL-terminated; NULL until the first append */
	size_t len;
	size_t cap;
	size_t max;  /* appends beyond this many bytes fail with SP_ETOOBIG */
};

void buf_init(struct buf *b, size_t max);
int buf_append(struct buf *b, const void *p, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Drops the first n bytes (used by stream framing). */
void buf_consume(struct buf *b, size_t n);
void buf_reset(struct buf *b);
/* Hands the contents to the caller (never NULL) and resets the buffer. */
char *buf_steal(struct buf *b);
void buf_free(struct buf *b);
/* Appends a whole file ("-" = standard input); errors name the path. */
int buf_read_file(struct buf *b, const char *path, struct sp_error *err);

#endif
