/* buf: growable byte buffers with a hard maximum. */
#include "buf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	char *s;
	int n = vasprintf(&s, fmt, ap);
	if (n < 0)
		abort();
	int r = buf_append(b, s, (size_t)n);
	free(s);
	return r;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = buf_vprintf(b, fmt, ap);
	va_end(ap);
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

int buf_read_file(struct buf *b, const char *path, struct sp_error *err)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
	if (!f)
		return sp_fail(err, SP_EIO, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		if (f != stdin)
			fclose(f);
		return sp_fail(err, SP_EIO, "%s: is a directory, expected a YAML file", path);
	}
	char chunk[8192];
	size_t n;
	int r = 0;
	while (r == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		r = buf_append(b, chunk, n);
	if (r < 0)
		sp_fail(err, r, "%s: larger than %zu bytes", path, b->max);
	else if (ferror(f))
		r = sp_fail(err, SP_EIO, "%s: read error: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	return r;
}
