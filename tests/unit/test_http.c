/* http: the Retry-After parser (seconds form, capped) and the loopback and cleartext
 * checks that decide whether a credential may travel over plain http; a cancelled
 * transfer ends at once. */
#include "testutil.h"
#include "http.h"
#include "kube.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* A one-thread apiserver on loopback: answers each request (one per connection) with
 * the next canned response. */
struct fake {
	int fd;
	int port;
	const char *const *answers;
	int n_answers;
	atomic_int served;
	pthread_t thread;
};

static void *fake_serve(void *ud)
{
	struct fake *f = ud;
	for (int i = 0; i < f->n_answers; i++) {
		int c = accept(f->fd, NULL, NULL);
		if (c < 0)
			break;
		char req[8192];
		test_read_request(c, req, sizeof(req));
		atomic_fetch_add(&f->served, 1);
		const char *a = f->answers[i];
		assert_int_equal(write(c, a, strlen(a)), (ssize_t)strlen(a));
		close(c);
	}
	return NULL;
}

static void fake_start(struct fake *f, const char *const *answers, int n)
{
	*f = (struct fake){.answers = answers, .n_answers = n};
	f->fd = test_listen_loopback(16, &f->port);
	pthread_create(&f->thread, NULL, fake_serve, f);
}

static void fake_stop(struct fake *f)
{
	shutdown(f->fd, SHUT_RDWR);
	close(f->fd);
	pthread_join(f->thread, NULL);
}

#define ANSWER(status, extra, body)                                                          \
	"HTTP/1.1 " status "\r\nContent-Type: application/json\r\nConnection: close\r\n" extra \
	"Content-Length: " #body "\r\n\r\n"

static struct kube_client *fake_client(const struct fake *f, struct kube_config **cfg)
{
	char *text = xasprintf("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
			       "clusters: [{name: t, cluster: {server: \"http://127.0.0.1:%d\"}}]\n"
			       "users: [{name: t, user: {}}]\n"
			       "contexts: [{name: t, context: {cluster: t, user: t}}]\n", f->port);
	struct sp_error err = {0};
	if (kube_config_parse(text, strlen(text), "test", cfg, &err) < 0)
		fail_msg("%s", err.msg);
	free(text);
	struct kube_client *c = kube_client_new(*cfg, NULL);
	kube_client_set_timeout(c, 5000);
	return c;
}

static const char *const throttled_then_ok[] = {
	ANSWER("429 Too Many Requests", "Retry-After: 1\r\n", 2) "{}",
	ANSWER("200 OK", "", 11) "{\"ok\":true}",
};

/* The apiserver's 429 with Retry-After: 1 is waited out and the request repeated. */
static void kube_honours_retry_after(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, throttled_then_ok, 2);
	struct kube_config *cfg;
	struct kube_client *c = fake_client(&f, &cfg);
	cJSON *obj = NULL;
	struct sp_error err = {0};
	int64_t t0 = sp_mono_ms();
	int r = kube_get(c, "/api/v1/namespaces/default/configmaps/x", &obj, &err);
	int64_t took = sp_mono_ms() - t0;
	if (r < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(atomic_load(&f.served), 2);
	assert_true(took >= 900);  /* waited as asked */
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(obj, "ok")));
	cJSON_Delete(obj);
	kube_client_free(c);
	kube_config_free(cfg);
	fake_stop(&f);
}

/* Without Retry-After a 429 is reported at once (the caller's backoff applies). */
static void kube_429_without_retry_after(void **state)
{
	(void)state;
	static const char *const answers[] = {ANSWER("429 Too Many Requests", "", 2) "{}"};
	struct fake f;
	fake_start(&f, answers, 1);
	struct kube_config *cfg;
	struct kube_client *c = fake_client(&f, &cfg);
	struct sp_error err = {0};
	assert_int_equal(kube_get(c, "/api/v1/namespaces/default/configmaps/x", NULL, &err), SP_ETHROTTLED);
	assert_int_equal(atomic_load(&f.served), 1);
	kube_client_free(c);
	kube_config_free(cfg);
	fake_stop(&f);
}

/* A client with a deadline (a leader's worker): nothing is sent once it passed, a
 * request that hangs is cut at it, and a Retry-After that reaches past it is not waited. */
static void kube_until(void **state)
{
	(void)state;
	struct fake f;
	fake_start(&f, throttled_then_ok, 2);
	struct kube_config *cfg;
	struct kube_client *c = fake_client(&f, &cfg);
	_Atomic int64_t until = 0;
	kube_client_set_until(c, &until);
	struct sp_error err = {0};
	assert_int_equal(kube_get(c, "/api/v1/namespaces/default/configmaps/x", NULL, &err), SP_ETRANSIENT);
	assert_contains(err.msg, "leadership ends before the request could be made");
	assert_int_equal(atomic_load(&f.served), 0);
	atomic_store(&until, sp_mono_ms() + 500);
	err = (struct sp_error){0};
	assert_int_equal(kube_get(c, "/api/v1/namespaces/default/configmaps/x", NULL, &err), SP_ETHROTTLED);
	assert_int_equal(atomic_load(&f.served), 1);
	kube_client_free(c);
	kube_config_free(cfg);
	fake_stop(&f);

	fake_start(&f, NULL, 0);  /* connects, never answers */
	c = fake_client(&f, &cfg);
	kube_client_set_until(c, &until);
	int64_t t0 = sp_mono_ms();
	atomic_store(&until, t0 + 300);
	err = (struct sp_error){0};
	assert_int_equal(kube_get(c, "/api/v1/namespaces/default/configmaps/x", NULL, &err), SP_ETRANSIENT);
	int64_t took = sp_mono_ms() - t0;
	if (took < 250 || took > 1500)
		fail_msg("a hanging request with 300 ms left took %lld ms", (long long)took);
	kube_client_free(c);
	kube_config_free(cfg);
	fake_stop(&f);
}

/* A wait beyond the request timeout is not taken (the lease would lose its deadline). */
static void kube_retry_after_beyond_timeout(void **state)
{
	(void)state;
	static const char *const answers[] = {ANSWER("429 Too Many Requests", "Retry-After: 30\r\n", 2) "{}"};
	struct fake f;
	fake_start(&f, answers, 1);
	struct kube_config *cfg;
	struct kube_client *c = fake_client(&f, &cfg);
	struct sp_error err = {0};
	int64_t t0 = sp_mono_ms();
	assert_int_equal(kube_get(c, "/api/v1/namespaces/default/configmaps/x", NULL, &err), SP_ETHROTTLED);
	assert_true(sp_mono_ms() - t0 < 3000);
	assert_int_equal(atomic_load(&f.served), 1);
	kube_client_free(c);
	kube_config_free(cfg);
	fake_stop(&f);
}

/* Every string of a Secret (data and any copy elsewhere) is zeroed before it is freed. */
static void secret_wiped(void **state)
{
	(void)state;
	cJSON *s = cJSON_Parse("{\"kind\":\"Secret\",\"data\":{\"secretKey\":\"c2VjcmV0\"},"
			       "\"metadata\":{\"annotations\":{\"last\":\"{stringData:secret}\"}}}");
	assert_non_null(s);
	cJSON *key = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "data"), "secretKey");
	cJSON *ann = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "metadata"),
							      "annotations"), "last");
	size_t nk = strlen(key->valuestring), na = strlen(ann->valuestring);
	kube_secret_wipe(s);
	for (size_t i = 0; i < nk; i++)
		assert_int_equal(key->valuestring[i], 0);
	for (size_t i = 0; i < na; i++)
		assert_int_equal(ann->valuestring[i], 0);
	kube_secret_free(s);
	kube_secret_free(NULL);
}

static void *cancel_soon(void *arg)
{
	usleep(100 * 1000);
	stop_request(arg);
	return NULL;
}

/* A transfer waiting for an answer that never comes (a watch) ends as soon as its
 * cancel is requested: it waits in curl_multi_poll on the stop's eventfd too, not
 * for libcurl's next progress call (about once a second). */
static void cancel_ends_a_waiting_transfer_at_once(void **state)
{
	(void)state;
	int port, fd = test_listen_loopback(4, &port);  /* connects, never answers */
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/watch", port);
	struct stop cancel;
	stop_init(&cancel);
	struct http_client *c = http_client_new(NULL);
	struct http_request req = {.method = "GET", .url = url, .timeout_ms = 20000, .cancel = &cancel};
	struct http_response resp;
	struct sp_error err = {0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, cancel_soon, &cancel), 0);
	int64_t start = sp_mono_ms();
	assert_int_equal(http_do(c, &req, &resp, &err), SP_ETRANSIENT);
	int64_t took = sp_mono_ms() - start;
	pthread_join(t, NULL);
	assert_contains(err.msg, "cancelled");
	assert_true(took >= 100);
	assert_true(took < 500);
	http_response_free(&resp);
	/* The client is still usable: a requested cancel fails the next transfer at once. */
	start = sp_mono_ms();
	assert_int_equal(http_do(c, &req, &resp, &err), SP_ETRANSIENT);
	assert_true(sp_mono_ms() - start < 100);
	http_response_free(&resp);
	http_client_free(c);
	stop_destroy(&cancel);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(retry_after_seconds),
		cmocka_unit_test(loopback_hosts),
		cmocka_unit_test(cleartext_urls),
		cmocka_unit_test(token_refused_over_cleartext),
		cmocka_unit_test(kube_honours_retry_after),
		cmocka_unit_test(kube_429_without_retry_after),
		cmocka_unit_test(kube_retry_after_beyond_timeout),
		cmocka_unit_test(kube_until),
		cmocka_unit_test(secret_wiped),
		cmocka_unit_test(cancel_ends_a_waiting_transfer_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
