/* buf: growable byte buffers with a hard maximum. */
#include "buf.h"

#include <stdio.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
	*b = (struct buf){.max = max};
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	if (n > b->max || b->len > b->max - n)
		return SP_ETOOBIG;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	int r = buf_append(b, s, (size_t)n);
	free(s);
	return r;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->data, b->data + n, b->len - n);
		b->len -= n;
	}
	if (b->data)
		b->data[b->len] = '\0';
}

void buf_reset(struct buf *b)
{
	buf_consume(b, b->len);
}

char *buf_steal(struct buf *b)
{
	char *s = b->data ? b->data : xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return s;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
