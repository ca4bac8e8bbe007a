/* util: sp_base64_decode (found by tests/fuzz/fuzz_kubeconfig: "====" wrote before its
 * buffer); monotonic condition waits (issue 19 item 6); edit distance and the nearest
 * known name (did-you-mean suggestions). */
#include "testutil.h"
#include "spotpool.h"

static void test_base64_valid(void **state)
{
	(void)state;
	size_t n = 99;
	char *s = sp_base64_decode("QQ==", &n);
	assert_non_null(s);
	assert_int_equal(n, 1);
	assert_string_equal(s, "A");
	free(s);
	s = sp_base64_decode("aGVsbG8h", &n);
	assert_string_equal(s, "hello!");
	assert_int_equal(n, 6);
	free(s);
	s = sp_base64_decode("", &n);
	assert_string_equal(s, "");
	assert_int_equal(n, 0);
	free(s);
}

static void test_base64_malformed_padding(void **state)
{
	(void)state;
	/* Each was accepted by EVP_DecodeBlock; "====" and longer runs of '=' then wrote
	 * out[-1], out[-2], ... (ASan: heap-buffer-overflow). */
	static const char *const bad[] = {
		"====", "========", "A===", "Q===", "QQ=A", "=QQQ", "QQ==QQ==", "QQ== ", "    QQ==",
		"QQ\n=", "QUJD\n", "QUJ-", "QUJ_", NULL,
	};
	size_t n = 99;
	for (size_t i = 0; bad[i]; i++) {
		char *s = sp_base64_decode(bad[i], &n);
		if (s)
			fail_msg("\"%s\" decoded to \"%s\"", bad[i], s);
	}
	assert_int_equal(n, 99);  /* untouched on failure */
}

/* The waits of inv, wq and rate end at a sp_mono_ms() time: the condition variable
 * must wait on that clock. On CLOCK_REALTIME (the default) a monotonic deadline lies
 * decades in the past and the wait returns at once; a wall-clock deadline would
 * stretch or cut with every clock step. */
static void test_cond_waits_on_the_monotonic_clock(void **state)
{
	(void)state;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cond;
	sp_cond_init_monotonic(&cond);
	pthread_mutex_lock(&lock);
	int64_t start = sp_mono_ms();
	sp_cond_wait_until_ms(&cond, &lock, start + 200);
	int64_t waited = sp_mono_ms() - start;
	assert_true(waited >= 190);
	assert_true(waited < 2000);
	start = sp_mono_ms();
	sp_cond_wait_until_ms(&cond, &lock, start - 1000);  /* past: returns at once */
	assert_true(sp_mono_ms() - start < 100);
	pthread_mutex_unlock(&lock);
	pthread_cond_destroy(&cond);
}

static void test_edit_distance(void **state)
{
	(void)state;
	assert_int_equal(sp_edit_distance("", ""), 0);
	assert_int_equal(sp_edit_distance("spec", ""), 4);
	assert_int_equal(sp_edit_distance("spce", "spec"), 1);      /* a swap is one edit */
	assert_int_equal(sp_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(sp_edit_distance("worker", "workers"), 1);
	assert_int_equal(sp_edit_distance("Spec", "spec"), 1);      /* case counts */
	char a[200], b[200];
	memset(a, 'a', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(b));
	b[150] = 'b';                                               /* past the first 64 */
	assert_int_equal(sp_edit_distance(a, b), 0);
}

static void test_nearest(void **state)
{
	(void)state;
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status"};
	assert_string_equal(sp_nearest("spce", top, 5), "spec");
	assert_string_equal(sp_nearest("metdata", top, 5), "metadata");
	assert_string_equal(sp_nearest("apiversion", top, 5), "apiVersion");
	assert_null(sp_nearest("spec", top, 5));        /* known: nothing to suggest */
	assert_null(sp_nearest("zzzz", top, 5));        /* nothing near */
	assert_null(sp_nearest("x", top, 0));
	static const char *const tie[] = {"ab", "ac"};
	assert_string_equal(sp_nearest("aa", tie, 2), "ab");  /* ties: the first */
}

/* Grows by doubling from 16; shrinks by halves once a quarter full, never below 16; the
 * elements kept survive both. */
static void test_vec_fit(void **state)
{
	(void)state;
	int *v = NULL;
	size_t cap = 0, n = 0;
	for (; n < 1000; n++) {
		v = sp_vec_fit(v, n + 1, &cap, sizeof(*v));
		v[n] = (int)n;
	}
	assert_int_equal(cap, 1024);
	size_t caps[4] = {0}, seen = 0;
	while (n > 3) {
		n--;
		size_t before = cap;
		v = sp_vec_fit(v, n, &cap, sizeof(*v));
		if (cap != before && seen < 4)
			caps[seen++] = cap;
		if (cap != before)
			assert_true(n <= before / 4);
	}
	assert_int_equal(caps[0], 512);   /* at 256 = 1024 / 4 */
	assert_int_equal(caps[1], 256);   /* at 128 */
	assert_int_equal(cap, 16);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(v[i], (int)i);
	v = sp_vec_fit(v, 40, &cap, sizeof(*v));  /* more than twice at once */
	assert_int_equal(cap, 64);
	free(v);
}

/* Strict RFC 3339 (issue 27 item 7): years before 1970, trailing junk and other shapes
 * were accepted, fractions made the whole time 0, and times before the epoch came back
 * negative, which one caller's "> 0" took for none and another's "!= 0" for a deadline.
 * 0 is the one answer for anything invalid. */
static void test_parse_time(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int64_t want;
	} rows[] = {
		{"1970-01-01T00:01:00Z", 60},
		{"1970-01-01T08:01:00+08:00", 60},
		{"1969-12-31T23:01:00-01:00", 0},          /* a year before 1970, even if offset after */
		{"2026-11-21T11:45:00Z", 1795261500},
		{"2000-01-01T00:00:00Z", 946684800},
		{"2024-02-29T00:00:00Z", 1709164800},      /* a leap day */
		{"2026-11-21T11:45:00.999Z", 1795261500},  /* a fraction: dropped */
		{"2026-11-21T11:45:00.5+00:00", 1795261500},
		{"2026-12-31T23:59:60Z", 1798761600},      /* a leap second */
		{"garbage", 0},
		{"", 0},
		{"1969-12-31T23:59:59Z", 0},               /* before 1970 */
		{"1900-01-01T00:00:00Z", 0},
		{"1970-01-01T00:00:00Z", 0},               /* the epoch itself: not a time after it */
		{"1970-01-01T00:30:00+01:00", 0},          /* before the epoch once offset */
		{"2026-11-21T11:45:00Zjunk", 0},           /* trailing junk */
		{"2026-11-21T11:45:00Z ", 0},
		{"2026-11-21T11:45:00+08:00x", 0},
		{"2026-11-21T11:45:00", 0},                /* no zone */
		{"2026-11-21t11:45:00z", 0},
		{"2026-11-21 11:45:00Z", 0},
		{"2026-11-21T11:45:00.Z", 0},              /* a dot without digits */
		{"2026-11-21T11:45Z", 0},
		{"2026-11-21T11:45:00+0800", 0},
		{"2026-11-21T11:45:00+24:00", 0},
		{"2026-11-21T11:45:00+08", 0},
		{" 2026-11-21T11:45:00Z", 0},
		{"+2026-11-21T11:45:00Z", 0},
		{"2026-13-01T00:00:00Z", 0},
		{"2026-02-29T00:00:00Z", 0},               /* not a leap year */
		{"2026-04-31T00:00:00Z", 0},
		{"2026-11-00T00:00:00Z", 0},
		{"2026-11-21T24:00:00Z", 0},
		{"2026-11-21T11:60:00Z", 0},
		{"2026-11-21T11:45:61Z", 0},
		{"2026-1a-21T11:45:00Z", 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu: %s\n", i, rows[i].in);
		assert_int_equal(sp_parse_time(rows[i].in), rows[i].want);
	}
	assert_int_equal(sp_parse_time(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edit_distance),
		cmocka_unit_test(test_nearest),
		cmocka_unit_test(test_vec_fit),
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_base64_valid),
		cmocka_unit_test(test_base64_malformed_padding),
		cmocka_unit_test(test_cond_waits_on_the_monotonic_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
