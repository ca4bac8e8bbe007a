/* util: error helpers, abort-on-OOM allocation, string lists, clocks. */
#include "spotpool.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int sp_fail(struct sp_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

void sp_error_prefix(struct sp_error *err, const char *fmt, ...)
{
	if (!err)
		return;
	char prefix[SP_ERROR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	/* Truncation is fine: the prefix matters most, the tail least. */
	size_t pl = strlen(prefix), ml = strlen(err->msg);
	if (pl >= SP_ERROR_MAX - 1)
		pl = SP_ERROR_MAX - 1;
	if (pl + ml >= SP_ERROR_MAX)
		ml = SP_ERROR_MAX - 1 - pl;
	memmove(err->msg + pl, err->msg, ml);
	memcpy(err->msg, prefix, pl);
	err->msg[pl + ml] = '\0';
}

const char *sp_strerror(int code)
{
	switch (code) {
	case SP_OK: return "ok";
	case SP_EINVAL: return "invalid input";
	case SP_EIO: return "I/O error";
	case SP_ETOOBIG: return "too large";
	case SP_EPROTO: return "malformed reply";
	case SP_EAUTH: return "authentication failed";
	case SP_ECONFIG: return "rejected parameters";
	case SP_ECAPACITY: return "capacity unavailable";
	case SP_ETHROTTLED: return "throttled";
	case SP_ETRANSIENT: return "transient failure";
	case SP_ENOTFOUND: return "not found";
	case SP_ECONFLICT: return "conflict";
	case SP_EGONE: return "resource version expired";
	case SP_EFORBIDDEN: return "forbidden";
	default: return "unknown error";
	}
}

static void *oom(void)
{
	fputs("spotpool: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	return p ? p : oom();
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	return p ? p : oom();
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	return q ? q : oom();
}

void *sp_vec_fit(void *p, size_t n, size_t *cap, size_t size)
{
	enum { SMALLEST = 16 };
	size_t c = *cap;
	if (n > c) {
		for (c = c ? c : SMALLEST; c < n; c *= 2)
			;
	} else if (c > SMALLEST && n <= c / 4) {
		/* Moved, not shrunk in place: realloc would leave it where the table grew to,
		 * high in the heap, among the holes of what went with it, where it keeps a
		 * page that malloc_trim would otherwise give back (BENCHMARKS.md, "Churn"). */
		void *q = xmalloc(c / 2 * size);
		memcpy(q, p, n * size);
		free(p);
		*cap = c / 2;
		return q;
	} else {
		return p;
	}
	*cap = c;
	return xrealloc(p, c * size);
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	return p ? p : oom();
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	return p ? p : oom();
}

char *xasprintf(const char *fmt, ...)
{
	char *s;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? oom() : s;
}

void strv_push(struct strv *l, const char *s)
{
	l->v = xrealloc(l->v, (l->n + 2) * sizeof(char *));
	l->v[l->n++] = xstrdup(s);
	l->v[l->n] = NULL;
}

void strv_clear(struct strv *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

bool strv_contains(const struct strv *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

void sp_secure_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

int64_t sp_now(void)
{
	return (int64_t)time(NULL);
}

int64_t sp_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t system_now(void *ctx)
{
	(void)ctx;
	return sp_now();
}

static int64_t system_mono_ms(void *ctx)
{
	(void)ctx;
	return sp_mono_ms();
}

const struct sp_clock sp_clock_system = {.now = system_now, .mono_ms = system_mono_ms};

void sp_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
}

void sp_cond_wait_until_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t at_mono_ms)
{
	struct timespec ts = {.tv_sec = at_mono_ms / 1000, .tv_nsec = (at_mono_ms % 1000) * 1000000};
	pthread_cond_timedwait(cond, lock, &ts);
}

size_t sp_edit_distance(const char *a, const char *b)
{
	enum { MAX = 64 };
	size_t n = strnlen(a, MAX), m = strnlen(b, MAX);
	size_t d[MAX + 1][MAX + 1];
	for (size_t i = 0; i <= n; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= m; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= n; i++) {
		for (size_t j = 1; j <= m; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[n][m];
}

const char *sp_nearest(const char *word, const char *const *candidates, size_t n)
{
	size_t limit = strlen(word) / 3 > 1 ? strlen(word) / 3 : 1, best = SIZE_MAX;
	const char *found = NULL;
	for (size_t i = 0; i < n; i++) {
		size_t dist = sp_edit_distance(word, candidates[i]);
		if (dist == 0)
			return NULL;
		if (dist <= limit && dist < best) {
			best = dist;
			found = candidates[i];
		}
	}
	return found;
}

void sp_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

char *sp_base64_decode(const char *in, size_t *ret_len)
{
	size_t n = strlen(in), pad = 0;
	while (pad < n && in[n - 1 - pad] == '=')
		pad++;
	/* Only the alphabet, then at most two '=': EVP_DecodeBlock alone also takes '=' inside
	 * the data and "====", and subtracting more padding than it decoded wrote before out. */
	if (n % 4 || pad > 2 ||
	    strspn(in, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != n - pad)
		return NULL;
	unsigned char *out = xmalloc(n / 4 * 3 + 1);
	int len = EVP_DecodeBlock(out, (const unsigned char *)in, (int)n);
	if (len < 0) {
		free(out);
		return NULL;
	}
	/* EVP_DecodeBlock counts padding as data; drop it. */
	for (size_t i = n; i > 0 && in[i - 1] == '='; i--)
		len--;
	out[len] = '\0';
	if (ret_len)
		*ret_len = (size_t)len;
	return (char *)out;
}

void sp_format_time(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The number s[0..n) spells in decimal digits, -1 when a character is not one (a NUL
 * included: nothing past it is read). */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (y >= 1970). */
static int64_t days_since_epoch(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = y / 400, yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

int64_t sp_parse_time(const char *iso)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	const char *s = iso;
	if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
		return 0;
	int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
	int h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 60)
		return 0;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] + (mo == 2 && leap))
		return 0;
	const char *p = s + 19;
	if (*p == '.') {  /* a fraction of a second: within the second, dropped */
		if (digits(++p, 1) < 0)
			return 0;
		while (digits(p, 1) >= 0)
			p++;
	}
	int64_t offset = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh = digits(p + 1, 2), om = oh < 0 || p[3] != ':' ? -1 : digits(p + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return 0;
		offset = (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
		p += 6;
	} else {
		return 0;
	}
	if (*p)
		return 0;
	int64_t t = days_since_epoch(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset;
	return t > 0 ? t : 0;
}
