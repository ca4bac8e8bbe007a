/* http: bounded libcurl transport. */
#include "http.h"
#include "log.h"
#include "stop.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Requested from a signal handler (stop_request is async-signal-safe). Its eventfd is
 * opened by http_global_init or the first client, before any transfer can wait on it. */
static struct stop aborting = {.fd = -1};
static pthread_once_t aborting_once = PTHREAD_ONCE_INIT;

static void aborting_init(void)
{
	stop_init(&aborting);
}

/* A multi handle (which keeps the connections) driving one easy handle per transfer, so
 * a transfer waits in curl_multi_poll together with the stop eventfds and ends at once
 * when one is requested. The easy handle goes with its transfer, and with it the
 * options' copies (URL, method, user agent, TLS files), the response's headers and the
 * receive buffer, which libcurl keeps until the next transfer or the handle's end: a
 * client idle after a busy time kept them where they were allocated then, pinning heap
 * pages (BENCHMARKS.md, "Churn"). */
struct http_client {
	CURLM *multi;
	char *user_agent;
};

struct transfer {
	const struct http_request *req;
	struct http_response *resp;
	int failure;  /* SP_E* that made us abort the write, if any */
	bool abortable; /* running when http_abort_all() came, or refuse_after_abort */
	bool aborted;   /* ended by http_abort_all() */
};

void http_abort_all(void)
{
	stop_request(&aborting);
}

bool http_aborting(void)
{
	return stop_requested(&aborting);
}

bool http_abort_wait_until_ms(int64_t at_mono_ms)
{
	return stop_wait_until_ms(&aborting, at_mono_ms);
}

int http_global_init(void)
{
	pthread_once(&aborting_once, aborting_init);
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : SP_EIO;
}

void http_global_cleanup(void)
{
	curl_global_cleanup();
}

struct http_client *http_client_new(const char *user_agent)
{
	pthread_once(&aborting_once, aborting_init);
	struct http_client *c = xcalloc(1, sizeof(*c));
	c->multi = curl_multi_init();
	if (!c->multi)
		abort();
	c->user_agent = xstrdup(user_agent ? user_agent : "spotpool/" SPOTPOOL_VERSION);
	return c;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	curl_multi_cleanup(c->multi);
	free(c->user_agent);
	free(c);
}

void http_response_free(struct http_response *r)
{
	buf_free(&r->body);
}

int http_retry_after(const char *v, int cap)
{
	if (!v)
		return -1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (!isdigit((unsigned char)*v))
		return -1;
	char *end;
	errno = 0;
	long s = strtol(v, &end, 10);
	while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
		end++;
	if (*end)
		return -1;
	return errno == ERANGE || s > cap ? cap : (int)s;
}

bool http_host_loopback(const char *host)
{
	char h[256];
	size_t n = strlen(host);
	if (n >= sizeof(h))
		return false;
	if (*host == '[') {  /* [::1] or [::1]:port */
		const char *close = strchr(host, ']');
		if (!close)
			return false;
		snprintf(h, sizeof(h), "%.*s", (int)(close - host - 1), host + 1);
	} else {
		snprintf(h, sizeof(h), "%s", host);
		char *colon = strchr(h, ':');
		if (colon && !strchr(colon + 1, ':'))  /* host:port, not a bare IPv6 address */
			*colon = '\0';
	}
	n = strlen(h);
	if (n && h[n - 1] == '.')
		h[--n] = '\0';
	if (strcasecmp(h, "localhost") == 0 || (n > 10 && strcasecmp(h + n - 10, ".localhost") == 0))
		return true;
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, h, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, h, &a6) == 1 && memcmp(&a6, &in6addr_loopback, sizeof(a6)) == 0;
}

bool http_url_cleartext(const char *url)
{
	return strncasecmp(url, "https://", 8) != 0;
}

/* Credentials over plain http: X-TC-Token to anything but loopback is refused; other
 * requests to a host that is not loopback are warned about once per process. Loopback
 * (an emulator, a local proxy) never crosses a network, so it stays quiet: a debug line.
 * Returns 0 or SP_ECONFIG. */
static int check_cleartext(const struct http_request *req, struct sp_error *err)
{
	static atomic_bool warned;
	if (!http_url_cleartext(req->url))
		return 0;
	bool token = false, creds = false;
	for (size_t i = 0; i < req->n_headers; i++) {
		const char *h = req->headers[i];
		if (strncasecmp(h, "X-TC-Token:", 11) == 0)
			token = creds = true;
		else if (strncasecmp(h, "Authorization:", 14) == 0)
			creds = true;
	}
	if (!creds)
		return 0;
	char *host = NULL;
	bool loopback = http_url_host(req->url, &host, NULL) == 0 && http_host_loopback(host);
	int r = 0;
	if (token && !loopback)
		r = sp_fail(err, SP_ECONFIG, "%s %s: refusing to send the X-TC-Token credential over plain "
			    "http to a host that is not loopback; use an https endpoint", req->method, req->url);
	else if (!atomic_exchange(&warned, true))
		log_msg(loopback ? LOG_LVL_DEBUG : LOG_LVL_WARN, "%s is plain http: requests to it, "
			"including their credentials (Authorization%s), travel unencrypted; use https",
			host ? host : req->url, token ? ", X-TC-Token" : "");
	free(host);
	return r;
}

/* Picks Retry-After out of the response headers (the last response's, after a 100). */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct transfer *t = ud;
	size_t n = size * nmemb;
	if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0)
		t->resp->retry_after = -1;
	else if (n > 12 && strncasecmp(ptr, "Retry-After:", 12) == 0) {
		char v[64];
		snprintf(v, sizeof(v), "%.*s", (int)(n - 12 < sizeof(v) - 1 ? n - 12 : sizeof(v) - 1), ptr + 12);
		t->resp->retry_after = http_retry_after(v, HTTP_RETRY_AFTER_MAX);
	}
	return n;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct transfer *t = ud;
	size_t n = size * nmemb;
	if (t->req->on_data) {
		if (t->req->on_data(t->req->userdata, ptr, n) != 0) {
			t->failure = SP_EPROTO;
			return 0;
		}
		return n;
	}
	if (buf_append(&t->resp->body, ptr, n) < 0) {
		t->failure = SP_ETOOBIG;
		return 0;
	}
	return n;
}

/* Whether the transfer must end now: a shutdown (if it may abort it) or its cancel. */
static bool stopped(struct transfer *t)
{
	if (t->abortable && http_aborting()) {
		t->aborted = true;
		return true;
	}
	return t->req->cancel && stop_requested(t->req->cancel);
}

/* The longest one wait in curl_multi_poll: its sockets, curl's own timers (it waits
 * less when one is due) and the stops' eventfds end a wait, so a long watch that sees
 * no event wakes twice a minute, not every second. */
#define HTTP_POLL_MAX_MS 30000

/* Runs the transfer on c's multi handle, waiting for its sockets and for the stops
 * that end it; CURLE_ABORTED_BY_CALLBACK when one did. */
static CURLcode perform(struct http_client *c, CURL *curl, struct transfer *t)
{
	struct curl_waitfd fds[2];
	unsigned n = 0;
	if (t->abortable)
		fds[n++] = (struct curl_waitfd){.fd = stop_fd(&aborting), .events = CURL_WAIT_POLLIN};
	if (t->req->cancel)
		fds[n++] = (struct curl_waitfd){.fd = stop_fd(t->req->cancel), .events = CURL_WAIT_POLLIN};
	if (curl_multi_add_handle(c->multi, curl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	CURLcode rc = CURLE_OK;
	int running = 1;
	while (running) {
		if (stopped(t)) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		CURLMcode mc = curl_multi_perform(c->multi, &running);
		if (mc == CURLM_OK && running)
			mc = curl_multi_poll(c->multi, fds, n, HTTP_POLL_MAX_MS, NULL);
		if (mc != CURLM_OK) {
			rc = CURLE_FAILED_INIT;
			break;
		}
	}
	int left;
	CURLMsg *msg;
	while (!running && (msg = curl_multi_info_read(c->multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == curl)
			rc = msg->data.result;
	curl_multi_remove_handle(c->multi, curl);
	return rc;
}

static void blob_opt(CURL *curl, CURLoption opt, const char *data)
{
	struct curl_blob blob = {.data = (void *)data, .len = strlen(data), .flags = CURL_BLOB_COPY};
	curl_easy_setopt(curl, opt, &blob);
}

static void apply_tls(CURL *curl, const struct http_tls *tls)
{
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	if (!tls)
		return;
	if (tls->insecure) {
		curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (tls->ca_file)
		curl_easy_setopt(curl, CURLOPT_CAINFO, tls->ca_file);
	if (tls->ca_data)
		blob_opt(curl, CURLOPT_CAINFO_BLOB, tls->ca_data);
	if (tls->cert_file)
		curl_easy_setopt(curl, CURLOPT_SSLCERT, tls->cert_file);
	if (tls->cert_data)
		blob_opt(curl, CURLOPT_SSLCERT_BLOB, tls->cert_data);
	if (tls->key_file)
		curl_easy_setopt(curl, CURLOPT_SSLKEY, tls->key_file);
	if (tls->key_data)
		blob_opt(curl, CURLOPT_SSLKEY_BLOB, tls->key_data);
}

int http_do(struct http_client *c, const struct http_request *req, struct http_response *ret,
	    struct sp_error *err)
{
	*ret = (struct http_response){.retry_after = -1};
	buf_init(&ret->body, req->max_response ? req->max_response : 1024 * 1024);
	struct transfer t = {.req = req, .resp = ret,
			     .abortable = req->refuse_after_abort || !http_aborting()};
	if (req->refuse_after_abort && http_aborting())
		return sp_fail(err, SP_ETRANSIENT, "%s %s: aborted (shutting down)", req->method, req->url);
	int r = check_cleartext(req, err);
	if (r < 0)
		return r;
	CURL *curl = curl_easy_init();
	if (!curl)
		abort();

	curl_easy_setopt(curl, CURLOPT_URL, req->url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	/* One transfer at a time per client, so HTTP/2's multiplexing buys nothing, and its
	 * header tables (HPACK: up to 4 KiB per connection, every entry an allocation of its
	 * own, replaced by each response's Audit-Id) keep the last responses' headers of
	 * every idle client: after 1,000 pools created and deleted they pinned about 100
	 * pages of the heap (BENCHMARKS.md, "Churn"). */
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req->method);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
			 req->connect_timeout_ms ? req->connect_timeout_ms : 5000L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
	if (req->body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	} else if (strcmp(req->method, "GET") == 0) {
		curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
	}
	apply_tls(curl, req->tls);

	struct curl_slist *hdrs = NULL;
	for (size_t i = 0; i < req->n_headers; i++)
		hdrs = curl_slist_append(hdrs, req->headers[i]);
	/* We send exact bodies; "Expect: 100-continue" would only add a round trip. */
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);

	CURLcode rc = perform(c, curl, &t);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &ret->status);
	curl_easy_cleanup(curl);  /* its connection stays with the multi handle */
	curl_slist_free_all(hdrs);

	if (rc == CURLE_OK)
		return 0;
	if (t.failure == SP_ETOOBIG)
		return sp_fail(err, SP_ETOOBIG, "%s %s: response larger than %zu bytes", req->method,
			       req->url, req->max_response);
	if (t.failure)
		return sp_fail(err, t.failure, "%s %s: stream aborted by the reader", req->method, req->url);
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return sp_fail(err, SP_ETRANSIENT, "%s %s: %s", req->method, req->url,
			       t.aborted ? "aborted (shutting down)" : "cancelled");
	if (rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL)
		return sp_fail(err, SP_EINVAL, "%s: %s", req->url, curl_easy_strerror(rc));
	return sp_fail(err, SP_ETRANSIENT, "%s %s: %s", req->method, req->url, curl_easy_strerror(rc));
}

int http_url_host(const char *url, char **ret_host, struct sp_error *err)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL;
	int r = 0;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		r = sp_fail(err, SP_EINVAL, "invalid URL \"%s\"", url);
		goto out;
	}
	/* An explicit port is part of the Host header; a default one is not. */
	if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK)
		*ret_host = xasprintf("%s:%s", host, port);
	else
		*ret_host = xstrdup(host);
out:
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return r;
}
