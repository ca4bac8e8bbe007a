/* qty: Kubernetes quantities and resource lists (qty.h). Pure. */
#include "qty.h"

#include <stdio.h>
#include <string.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- quantities ---- */

static const struct {
	const char *suffix;
	int exp10, bin;
} suffixes[] = {
	{"", 0, 0},    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},
	{"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
	{"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

enum { Q_BAD = 1, Q_NEGATIVE, Q_OVERFLOW };

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Exact: the significand's decimal digits times 2^bin, then scaled by 10^exp10 and
 * rounded up, so "0.1m" of cpu is 1 and "1.5Gi" is 1610612736 with no float in between. */
static int quantity(const char *s, bool milli, int64_t *ret)
{
	/* Significant digits (at most QTY_MAX_CHARS), then at most 19 more from 2^60. */
	unsigned char d[QTY_MAX_CHARS + 24];
	size_t n = 0;
	long exp10 = milli ? 3 : 0;
	bool neg = false, any = false, dot = false;
	const char *p = s;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	for (;; p++) {
		if (*p == '.' && !dot) {
			dot = true;
			continue;
		}
		if (!is_digit(*p))
			break;
		any = true;
		exp10 -= dot;
		if (n > 0 || *p != '0')
			d[n++] = (unsigned char)(*p - '0');
	}
	if (!any)
		return Q_BAD;
	int bin = 0;
	if ((*p == 'e' || *p == 'E') && (p[1] == '+' || p[1] == '-' || is_digit(p[1]))) {
		bool eneg = false;
		long e = 0;
		if (*++p == '+' || *p == '-')
			eneg = *p++ == '-';
		if (!is_digit(*p))
			return Q_BAD;
		for (; is_digit(*p); p++)
			e = e < 100000 ? e * 10 + (*p - '0') : e;
		if (*p)
			return Q_BAD;
		exp10 += eneg ? -e : e;
	} else {
		size_t i = 0;
		while (i < LEN(suffixes) && strcmp(p, suffixes[i].suffix) != 0)
			i++;
		if (i == LEN(suffixes))
			return Q_BAD;
		exp10 += suffixes[i].exp10;
		bin = suffixes[i].bin;
	}
	if (n == 0) {
		*ret = 0;
		return 0;
	}
	if (neg)
		return Q_NEGATIVE;
	for (size_t i = 0; i < n / 2; i++) { /* least significant digit first from here */
		unsigned char t = d[i];
		d[i] = d[n - 1 - i];
		d[n - 1 - i] = t;
	}
	for (int b = 0; b < bin; b++) {
		unsigned carry = 0;
		for (size_t i = 0; i < n; i++) {
			unsigned v = d[i] * 2u + carry;
			d[i] = (unsigned char)(v % 10);
			carry = v / 10;
		}
		if (carry)
			d[n++] = (unsigned char)carry;
	}
	/* Digits below the decimal point round up. */
	size_t lo = exp10 < 0 ? ((unsigned long)-exp10 < n ? (size_t)-exp10 : n) : 0;
	bool up = false;
	for (size_t i = 0; i < lo; i++)
		up |= d[i] != 0;
	int64_t v = 0;
	for (size_t i = n; i-- > lo;) {
		if (v > (INT64_MAX - d[i]) / 10)
			return Q_OVERFLOW;
		v = v * 10 + d[i];
	}
	for (long e = exp10; e > 0 && v; e--) {
		if (v > INT64_MAX / 10)
			return Q_OVERFLOW;
		v *= 10;
	}
	if (up && v == INT64_MAX)
		return Q_OVERFLOW;
	*ret = v + up;
	return 0;
}

int qty_parse(const char *s, bool milli, const char *field, int64_t *ret, struct sp_error *err)
{
	if (strlen(s) > QTY_MAX_CHARS)
		return sp_fail(err, SP_EINVAL, "%s: a quantity longer than %d characters", field,
			       QTY_MAX_CHARS);
	int64_t v;
	switch (quantity(s, milli, &v)) {
	case 0:
		*ret = v;
		return 0;
	case Q_NEGATIVE:
		return sp_fail(err, SP_EINVAL, "%s: \"%s\" is negative", field, s);
	case Q_OVERFLOW:
		return sp_fail(err, SP_EINVAL, "%s: \"%s\" is too large", field, s);
	default:
		return sp_fail(err, SP_EINVAL, "%s: \"%s\" is not a quantity such as 500m, 4, 1.5Gi or 1e3",
			       field, s);
	}
}

bool qty_parse_int(const char *s, int64_t *ret)
{
	bool neg = *s == '-';
	if (*s == '+' || *s == '-')
		s++;
	if (!*s)
		return false;
	uint64_t v = 0, max = neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
	for (; *s; s++) {
		if (!is_digit(*s) || v > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*ret = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* ---- resource lists ---- */

/* The index of name in r, or where it would go (*found false). */
static size_t res_find(const struct qty_list *r, const char *name, bool *found)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(r->v[mid].name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

int64_t qty_get(const struct qty_list *r, const char *name)
{
	bool found;
	size_t i = res_find(r, name, &found);
	return found ? r->v[i].value : 0;
}

bool qty_has(const struct qty_list *r, const char *name)
{
	bool found;
	res_find(r, name, &found);
	return found;
}

int qty_set(struct qty_list *r, const char *name, int64_t value)
{
	bool found;
	size_t i = res_find(r, name, &found);
	if (found) {
		r->v[i].value = value;
		return 0;
	}
	if (r->n >= QTY_MAX_RESOURCES)
		return SP_ETOOBIG;
	r->v = xrealloc(r->v, (r->n + 1) * sizeof(*r->v));
	memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
	r->v[i] = (struct qty_amount){xstrdup(name), value};
	r->n++;
	return 0;
}

void qty_sub(struct qty_list *r, const struct qty_list *minus)
{
	for (size_t i = 0; i < minus->n; i++) {
		bool found;
		size_t j = res_find(r, minus->v[i].name, &found);
		if (found)
			r->v[j].value = r->v[j].value > minus->v[i].value ? r->v[j].value - minus->v[i].value : 0;
	}
}

void qty_clear(struct qty_list *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].name);
	free(r->v);
	*r = (struct qty_list){0};
}

/* A quantity as the apiserver writes it (a string) or as YAML reads one (a number). */
static int quantity_json(const cJSON *v, bool milli, const char *field, int64_t *ret, struct sp_error *err)
{
	if (cJSON_IsString(v))
		return qty_parse(v->valuestring, milli, field, ret, err);
	if (cJSON_IsNumber(v)) {
		char text[40];
		snprintf(text, sizeof(text), "%.15g", v->valuedouble);
		return qty_parse(text, milli, field, ret, err);
	}
	return sp_fail(err, SP_EINVAL, "%s: not a quantity", field);
}

int qty_list_from_json(const cJSON *list, const char *field, struct qty_list *ret,
			    struct sp_error *err)
{
	struct qty_list r = {0};
	if (list && !cJSON_IsObject(list))
		return sp_fail(err, SP_EINVAL, "%s: not an object", field);
	const cJSON *c;
	cJSON_ArrayForEach(c, list) {
		char where[QTY_NAME_MAX + 160];
		snprintf(where, sizeof(where), "%s.%.*s", field, QTY_NAME_MAX, c->string);
		int64_t v = 0;
		int e = strlen(c->string) > QTY_NAME_MAX
				? sp_fail(err, SP_EINVAL, "%s: a resource name longer than %d characters",
					  field, QTY_NAME_MAX)
				: quantity_json(c, strcmp(c->string, QTY_CPU) == 0, where, &v, err);
		if (e == 0 && qty_set(&r, c->string, v) < 0)
			e = sp_fail(err, SP_ETOOBIG, "%s: more than %d resources", field, QTY_MAX_RESOURCES);
		if (e < 0) {
			qty_clear(&r);
			return e;
		}
	}
	qty_clear(ret);
	*ret = r;
	return 0;
}

