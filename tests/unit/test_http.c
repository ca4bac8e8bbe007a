/* http: the Retry-After parser (seconds form, capped) and the loopback and cleartext
 * checks that decide whether a credential may travel over plain http. */
#include "testutil.h"
#include "http.h"

static void retry_after_seconds(void **state)
{
	(void)state;
	assert_int_equal(http_retry_after("5", 60), 5);
	assert_int_equal(http_retry_after(" 0\r\n", 60), 0);
	assert_int_equal(http_retry_after("\t12 ", 60), 12);
	assert_int_equal(http_retry_after("120", 60), 60);                  /* capped */
	assert_int_equal(http_retry_after("99999999999999999999999", 60), 60);
	assert_int_equal(http_retry_after(NULL, 60), -1);
	assert_int_equal(http_retry_after("", 60), -1);
	assert_int_equal(http_retry_after("-1", 60), -1);
	assert_int_equal(http_retry_after("1.5", 60), -1);
	assert_int_equal(http_retry_after("5s", 60), -1);
	assert_int_equal(http_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 60), -1);  /* date form */
}

static void loopback_hosts(void **state)
{
	(void)state;
	static const char *const yes[] = {"localhost", "LOCALHOST", "localhost:8080", "localhost.",
					  "cvm.localhost", "127.0.0.1", "127.0.0.1:4000", "127.1.2.3",
					  "127.255.255.254:1", "::1", "[::1]", "[::1]:8443",
					  "0:0:0:0:0:0:0:1"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!http_host_loopback(yes[i]))
			fail_msg("%s should be loopback", yes[i]);
	static const char *const no[] = {"", "example.com", "localhost.example.com", "notlocalhost",
					 "128.0.0.1", "10.0.0.1:80", "0.0.0.0", "::", "[::2]", "[::1",
					 "127.0.0.1.nip.io", "::ffff:127.0.0.1x", "cvm.tencentcloudapi.com"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (http_host_loopback(no[i]))
			fail_msg("%s should not be loopback", no[i]);
}

static void cleartext_urls(void **state)
{
	(void)state;
	assert_true(http_url_cleartext("http://cvm.example.com/"));
	assert_true(http_url_cleartext("HTTP://127.0.0.1:4000"));
	assert_false(http_url_cleartext("https://cvm.tencentcloudapi.com/"));
	assert_false(http_url_cleartext("HTTPS://cvm.tencentcloudapi.com/"));
}

/* The transport refuses X-TC-Token over plain http to anything but loopback, before
 * connecting (the port is closed: a refusal cannot be a connection error). */
static void token_refused_over_cleartext(void **state)
{
	(void)state;
	assert_int_equal(http_global_init(), 0);
	struct http_client *c = http_client_new(NULL);
	const char *headers[] = {"Authorization: TC3-HMAC-SHA256 x", "X-TC-Token: secret-token"};
	struct http_request req = {.method = "POST", .url = "http://192.0.2.1:9/", .headers = headers,
				   .n_headers = 2, .body = "{}", .body_len = 2, .timeout_ms = 2000,
				   .connect_timeout_ms = 1000};
	struct http_response resp;
	struct sp_error err = {0};
	assert_int_equal(http_do(c, &req, &resp, &err), SP_ECONFIG);
	assert_contains(err.msg, "X-TC-Token");
	assert_null(strstr(err.msg, "secret-token"));
	http_response_free(&resp);
	/* Over https it goes ahead (and fails to connect here: a transport error). */
	req.url = "https://127.0.0.1:9/";
	assert_int_equal(http_do(c, &req, &resp, &err), SP_ETRANSIENT);
	http_response_free(&resp);
	/* So does loopback http (an emulator). */
	req.url = "http://127.0.0.1:9/";
	assert_int_equal(http_do(c, &req, &resp, &err), SP_ETRANSIENT);
	http_response_free(&resp);
	http_client_free(c);
	http_global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(retry_after_seconds),
		cmocka_unit_test(loopback_hosts),
		cmocka_unit_test(cleartext_urls),
		cmocka_unit_test(token_refused_over_cleartext),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
