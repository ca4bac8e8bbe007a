/* log: record fields in each format (plain, JSON, journal), JSON escaping,
 * redaction of the message and every field, and redaction before truncation. */
#include "testutil.h"
#include "log.h"

#include <cjson/cJSON.h>

#define SECRET "S3cr3tKeyThatMustNeverBeLogged42"

/* Output of the records logged since capture_start(), as one string. */
static FILE *capture;
static char *captured;
static size_t captured_len;

static void capture_start(enum log_format fmt)
{
	free(captured);
	captured = NULL;
	capture = open_memstream(&captured, &captured_len);
	assert_non_null(capture);
	log_set_output(capture);
	log_setup(fmt, LOG_LVL_DEBUG);
}

static const char *capture_end(void)
{
	log_set_output(NULL);
	fclose(capture);
	capture = NULL;
	return captured;
}

/* Journal records sent through the test sender: the items of the last record. */
static char *journal_items[16];
static int journal_n;
static int journal_result;

static void journal_reset(void)
{
	for (int i = 0; i < journal_n; i++)
		free(journal_items[i]);
	journal_n = 0;
}

static int fake_sendv(const struct iovec *iov, int n)
{
	journal_reset();
	for (int i = 0; i < n && i < 16; i++)
		journal_items[journal_n++] = strndup(iov[i].iov_base, iov[i].iov_len);
	return journal_result;
}

/* The value of KEY= in the last journal record, or NULL. */
static const char *journal_field(const char *key)
{
	size_t kl = strlen(key);
	for (int i = 0; i < journal_n; i++)
		if (strncmp(journal_items[i], key, kl) == 0 && journal_items[i][kl] == '=')
			return journal_items[i] + kl + 1;
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	log_add_secret(SECRET);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	log_set_output(NULL);
	log_set_journal_sender(NULL);
	journal_reset();
	log_shutdown();
	free(captured);
	captured = NULL;
	return 0;
}

static void test_plain_without_fields_unchanged(void **state)
{
	(void)state;
	capture_start(LOG_FMT_PLAIN);
	log_info("hello %d", 42);
	log_debug("debug %s", "too");
	const char *out = capture_end();
	/* "2026-11-23T06:16:51.123Z info  hello 42" */
	char level[8], msg[32];
	assert_int_equal(sscanf(out, "%*4d-%*2d-%*2dT%*2d:%*2d:%*2d.%*3dZ %7s %31[^\n]", level, msg), 2);
	assert_string_equal(level, "info");
	assert_string_equal(msg, "hello 42");
	assert_contains(out, "debug debug too\n");
	assert_null(strstr(out, "="));
}

static void test_plain_fields_as_key_value(void **state)
{
	(void)state;
	capture_start(LOG_FMT_PLAIN);
	log_fields_msg(LOG_LVL_WARN,
		       &(struct log_fields){.ns = "team-a", .pool = "gpu", .action = "launch",
					    .request_id = "req-1", .error_code = "ResourcesSoldOut.X",
					    .duration_ms = 0, .has_duration = true},
		       "launch failed");
	log_fields_msg(LOG_LVL_INFO, &(struct log_fields){.pool = "gpu", .action = "", .duration_ms = 7},
		       "partial");
	log_fields_msg(LOG_LVL_INFO, &(struct log_fields){.action = "say \"hi\" a=b", .error_code = "x\\y"},
		       "quoted");
	log_fields_msg(LOG_LVL_INFO, NULL, "no fields");
	const char *out = capture_end();
	assert_contains(out, " warn  launch failed namespace=team-a pool=gpu action=launch request_id=req-1 "
			     "error_code=ResourcesSoldOut.X duration_ms=0\n");
	/* Empty strings and a duration without has_duration are absent. */
	assert_contains(out, " info  partial pool=gpu\n");
	assert_contains(out, " info  quoted action=\"say \\\"hi\\\" a=b\" error_code=\"x\\\\y\"\n");
	assert_contains(out, " info  no fields\n");
}

static cJSON *parse_line(const char *line)
{
	cJSON *o = cJSON_Parse(line);
	if (!o)
		fail_msg("not JSON: %s", line);
	return o;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_json_fields_top_level_and_escaped(void **state)
{
	(void)state;
	capture_start(LOG_FMT_JSON);
	log_fields_msg(LOG_LVL_ERROR,
		       &(struct log_fields){.ns = "default", .pool = "p\"q\\r", .action = "tab\there",
					    .request_id = "line1\nline2", .error_code = "\x01ctl",
					    .duration_ms = 1234, .has_duration = true},
		       "msg with \"quotes\" and \\ and unicode é");
	log_info("plain message");
	const char *out = capture_end();
	const char *nl = strchr(out, '\n');
	assert_non_null(nl);
	size_t lines = 0;
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 2);
	char *first = strndup(out, (size_t)(nl - out));
	cJSON *o = parse_line(first);
	assert_string_equal(jstr(o, "level"), "error");
	assert_non_null(jstr(o, "time"));
	assert_string_equal(jstr(o, "msg"), "msg with \"quotes\" and \\ and unicode é");
	assert_string_equal(jstr(o, "namespace"), "default");
	assert_string_equal(jstr(o, "pool"), "p\"q\\r");
	assert_string_equal(jstr(o, "action"), "tab\there");
	/* A newline in a field would forge a record in plain output: it becomes a space. */
	assert_string_equal(jstr(o, "request_id"), "line1 line2");
	assert_string_equal(jstr(o, "error_code"), "\x01ctl");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "duration_ms");
	assert_true(cJSON_IsNumber(d));
	assert_int_equal(d->valueint, 1234);
	cJSON_Delete(o);
	free(first);

	o = parse_line(nl + 1);
	assert_string_equal(jstr(o, "msg"), "plain message");
	assert_int_equal(cJSON_GetArraySize(o), 3);  /* time, level, msg: no empty fields */
	cJSON_Delete(o);
}

static void test_journal_fields(void **state)
{
	(void)state;
	log_set_journal_sender(fake_sendv);
	journal_result = 0;
	capture_start(LOG_FMT_JOURNAL);
	log_fields_msg(LOG_LVL_WARN,
		       &(struct log_fields){.ns = "default", .pool = "gpu", .action = "terminate",
					    .request_id = "abc-123", .error_code = "InternalError",
					    .duration_ms = 15, .has_duration = true},
		       "terminate %s", "ins-1");
	assert_string_equal(journal_field("MESSAGE"), "terminate ins-1");
	assert_string_equal(journal_field("PRIORITY"), "4");
	assert_string_equal(journal_field("SYSLOG_IDENTIFIER"), "spotpool");
	assert_string_equal(journal_field("SPOTPOOL_NAMESPACE"), "default");
	assert_string_equal(journal_field("SPOTPOOL_POOL"), "gpu");
	assert_string_equal(journal_field("SPOTPOOL_ACTION"), "terminate");
	assert_string_equal(journal_field("SPOTPOOL_REQUEST_ID"), "abc-123");
	assert_string_equal(journal_field("SPOTPOOL_ERROR_CODE"), "InternalError");
	assert_string_equal(journal_field("SPOTPOOL_DURATION_MS"), "15");

	log_fields_msg(LOG_LVL_INFO, &(struct log_fields){.pool = "gpu"}, "only a pool");
	assert_int_equal(journal_n, 4);
	assert_null(journal_field("SPOTPOOL_NAMESPACE"));
	assert_null(journal_field("SPOTPOOL_DURATION_MS"));
	assert_string_equal(journal_field("PRIORITY"), "6");
	/* Nothing went to the stream while the journal accepted the records. */
	assert_string_equal(capture_end(), "");
}

static void test_journal_unavailable_falls_back_to_plain(void **state)
{
	(void)state;
	log_set_journal_sender(fake_sendv);
	journal_result = -2;  /* -ENOENT: no journald socket */
	capture_start(LOG_FMT_JOURNAL);
	log_fields_msg(LOG_LVL_INFO, &(struct log_fields){.pool = "gpu"}, "still visible");
	assert_contains(capture_end(), " info  still visible pool=gpu\n");
}

/* A secret in the message or in any field never reaches any format. */
static void test_secret_never_in_any_field(void **state)
{
	(void)state;
	const struct log_fields f = {
		.ns = "ns-" SECRET, .pool = SECRET, .action = "a " SECRET " b", .request_id = SECRET "x",
		.error_code = "code:" SECRET, .duration_ms = 1, .has_duration = true,
	};
	static const enum log_format fmts[] = {LOG_FMT_PLAIN, LOG_FMT_JSON};
	for (size_t i = 0; i < 2; i++) {
		capture_start(fmts[i]);
		log_fields_msg(LOG_LVL_INFO, &f, "key=%s", SECRET);
		const char *out = capture_end();
		assert_null(strstr(out, "S3cr3t"));
		assert_contains(out, "[redacted]");
	}
	log_set_journal_sender(fake_sendv);
	journal_result = 0;
	log_setup(LOG_FMT_JOURNAL, LOG_LVL_INFO);
	log_fields_msg(LOG_LVL_INFO, &f, "key=%s", SECRET);
	assert_int_equal(journal_n, 3 + 6);
	for (int i = 0; i < journal_n; i++)
		assert_null(strstr(journal_items[i], "S3cr3t"));
	assert_string_equal(journal_field("SPOTPOOL_POOL"), "[redacted]");
	assert_string_equal(journal_field("SPOTPOOL_ERROR_CODE"), "code:[redacted]");
}

/* A longer secret containing a registered shorter one is replaced whole. */
static void test_longer_secret_replaced_whole(void **state)
{
	(void)state;
	log_add_secret("abcdefghijklmnop");
	log_add_secret("xxabcdefghijklmnopyyzz");
	capture_start(LOG_FMT_PLAIN);
	log_info("token xxabcdefghijklmnopyyzz and abcdefghijklmnop");
	const char *out = capture_end();
	assert_contains(out, "token [redacted] and [redacted]\n");
	log_remove_secret("abcdefghijklmnop");
	capture_start(LOG_FMT_PLAIN);
	log_info("token xxabcdefghijklmnopyyzz and abcdefghijklmnop");
	assert_contains(capture_end(), "token [redacted] and abcdefghijklmnop\n");
	log_remove_secret("xxabcdefghijklmnopyyzz");
}

/* The message's head of n bytes, then SECRET, then more: SECRET straddles the cut. */
static char *straddling(size_t n)
{
	size_t head = n - 10;
	char *s = malloc(head + sizeof(SECRET) + 16);
	memset(s, 'x', head);
	strcpy(s + head, SECRET " tail");
	return s;
}

/* Regression: cutting the message to LOG_LINE_MAX before redacting left the head of
 * a secret that straddled the cut, which no longer matched the secret. */
static void test_redact_before_truncating_message(void **state)
{
	(void)state;
	char *m = straddling(LOG_LINE_MAX - 1);
	for (int json = 0; json < 2; json++) {
		capture_start(json ? LOG_FMT_JSON : LOG_FMT_PLAIN);
		log_info("%s", m);
		const char *out = capture_end();
		assert_null(strstr(out, "S3cr3"));
		assert_contains(out, "xxxxxxxxxx[reda");
		assert_true(strlen(out) < LOG_LINE_MAX + 100);
	}
	free(m);
}

static void test_redact_before_truncating_fields(void **state)
{
	(void)state;
	char *v = straddling(LOG_FIELD_MAX - 1);
	capture_start(LOG_FMT_JSON);
	log_fields_msg(LOG_LVL_INFO, &(struct log_fields){.pool = v, .request_id = v}, "long fields");
	const char *out = capture_end();
	assert_null(strstr(out, "S3cr3"));
	cJSON *o = parse_line(out);
	assert_int_equal(strlen(jstr(o, "pool")), LOG_FIELD_MAX - 1);
	cJSON_Delete(o);
	free(v);
}

static void test_redact_copy(void **state)
{
	(void)state;
	char dst[32];
	char *src = straddling(sizeof(dst) - 1);
	log_redact_copy(dst, sizeof(dst), src);
	assert_null(strstr(dst, "S3cr3"));
	assert_string_equal(dst, "xxxxxxxxxxxxxxxxxxxxx[redacted]");
	free(src);
	/* Cut on a UTF-8 boundary: "é" is two bytes and does not fit whole. */
	char small[4];
	log_redact_copy(small, sizeof(small), "abé");
	assert_string_equal(small, "ab");
	log_redact_copy(small, sizeof(small), "ok");
	assert_string_equal(small, "ok");
}

/* Regression (issue 19 item 10): every value of a Secret was registered, so a tenant's
 * secretId "ins-" hid every instance ID from everybody's output. Only values of
 * LOG_SECRET_MIN characters and more are taken, and the Secret reader registers only
 * secretKey and token. */
static void test_short_value_not_redacted(void **state)
{
	(void)state;
	char line[128];
	size_t base = log_secret_count();
	log_add_secret("ins-");
	log_replace_secret("tenant", "creds", "token", "ins-1a2b");
	assert_int_equal(log_secret_count(), base);
	log_replace_secret("tenant", "creds", "secretKey", "0123456789abcdef0123456789abcdef");
	snprintf(line, sizeof(line), "launched ins-1a2b3c4d with 0123456789abcdef0123456789abcdef");
	assert_string_equal(log_redact(line, sizeof(line)), "launched ins-1a2b3c4d with [redacted]");
	log_replace_secret("tenant", "creds", "secretKey", NULL);
	assert_int_equal(log_secret_count(), base);
}

/* A rotated key is forgotten when its Secret registers the next one: 1,000 rotations
 * leave one value. */
static void test_rotation_forgets(void **state)
{
	(void)state;
	size_t base = log_secret_count();
	char key[40], old[40], line[128];
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "rotated-secret-key-%06d", i);
		log_replace_secret("tenant", "creds", "secretKey", key);
		log_replace_secret("tenant", "creds", "token", NULL);
	}
	assert_int_equal(log_secret_count(), base + 1);
	snprintf(old, sizeof(old), "rotated-secret-key-%06d", 998);
	snprintf(line, sizeof(line), "%s %s", old, key);
	assert_string_equal(log_redact(line, sizeof(line)), "rotated-secret-key-000998 [redacted]");
	log_replace_secret("tenant", "creds", "secretKey", NULL);
	assert_int_equal(log_secret_count(), base);
}

/* Regression (review of af42319): one key copied into two Secrets was forgotten when
 * the first of them rotated, though the second still held it. */
static void test_shared_value_stays_while_owned(void **state)
{
	(void)state;
	const char *shared = "shared-secret-key-0123456789";
	char line[128];
	size_t base = log_secret_count();
	log_replace_secret("team-a", "creds", "secretKey", shared);
	log_replace_secret("team-b", "creds", "secretKey", shared);
	assert_int_equal(log_secret_count(), base + 1);
	log_replace_secret("team-a", "creds", "secretKey", "team-a-rotated-key-000001");
	snprintf(line, sizeof(line), "%s", shared);
	assert_string_equal(log_redact(line, sizeof(line)), "[redacted]");
	log_replace_secret("team-b", "creds", "secretKey", NULL);
	snprintf(line, sizeof(line), "%s", shared);
	assert_string_equal(log_redact(line, sizeof(line)), shared);
	/* A process secret that a tenant also used stays when the tenant lets go. */
	log_add_secret("process-own-secret-key-42");
	log_replace_secret("team-b", "creds", "secretKey", "process-own-secret-key-42");
	log_replace_secret("team-b", "creds", "secretKey", NULL);
	snprintf(line, sizeof(line), "process-own-secret-key-42");
	assert_string_equal(log_redact(line, sizeof(line)), "[redacted]");
	log_shutdown();
}

/* A deleted pool's values go with it (its owners' prefix "ns/name/" only), unless
 * another pool still holds them or they are the process's own. */
static void test_forget_owner(void **state)
{
	(void)state;
	char line[160];
	size_t base = log_secret_count();
	log_add_secret("process-own-secret-key-43");
	log_replace_secret("team-a", "p1", "secretKey", "p1-secret-key-0123456789");
	log_replace_secret("team-a", "p1", "token", "p1-session-token-0123456789");
	log_replace_secret("team-a", "p10", "secretKey", "p10-secret-key-0123456789");
	log_replace_secret("team-b", "p1", "secretKey", "p1-secret-key-0123456789");
	log_replace_secret("team-a", "p2", "secretKey", "process-own-secret-key-43");
	assert_int_equal(log_secret_count(), base + 4);
	log_forget_owner("team-a", "p1");
	assert_int_equal(log_secret_count(), base + 3);  /* the token: team-a/p1's only */
	log_forget_owner("team-b", "p1");
	log_forget_owner("team-a", "p2");
	snprintf(line, sizeof(line), "p1-secret-key-0123456789 p10-secret-key-0123456789 process-own-secret-key-43");
	assert_string_equal(log_redact(line, sizeof(line)),
			    "p1-secret-key-0123456789 [redacted] [redacted]");
	log_forget_owner("team-a", "p10");
	assert_int_equal(log_secret_count(), base + 1);
	log_shutdown();
}

/* Regression (review of af42319): tenants' values evicted the process's own (its
 * environment key, kubeconfig key, service-account token) once 256 were registered.
 * The list stays bounded; the least recently registered tenant value goes first. */
static void test_list_bounded_process_secrets_stay(void **state)
{
	(void)state;
	char key[48], line[160];
	log_add_secret("process-environment-secret-key");
	for (int i = 0; i < 2 * LOG_SECRETS_MAX; i++) {
		snprintf(key, sizeof(key), "tenant-%06d", i);
		char value[48];
		snprintf(value, sizeof(value), "tenant-secret-value-%06d", i);
		log_replace_secret("ns", key, "secretKey", value);
		if (i % 100 == 0)  /* one in use all along, registered by every pass */
			log_replace_secret("ns", "busy", "secretKey", "busy-tenant-secret-value");
	}
	assert_int_equal(log_secret_count(), LOG_SECRETS_MAX);
	snprintf(line, sizeof(line), "process-environment-secret-key tenant-secret-value-%06d "
		 "tenant-secret-value-000000 busy-tenant-secret-value", 2 * LOG_SECRETS_MAX - 1);
	assert_string_equal(log_redact(line, sizeof(line)),
			    "[redacted] [redacted] tenant-secret-value-000000 [redacted]");
	log_shutdown();
	assert_int_equal(log_secret_count(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain_without_fields_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_fields_as_key_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_json_fields_top_level_and_escaped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_unavailable_falls_back_to_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_never_in_any_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_longer_secret_replaced_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redact_before_truncating_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redact_before_truncating_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redact_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_value_not_redacted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rotation_forgets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_value_stays_while_owned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_bounded_process_secrets_stay, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
