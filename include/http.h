/* http: a thin, bounded HTTP/1.1 client over libcurl (one handle per thread,
 * connections reused). Used by the CVM and Kubernetes clients. */
#ifndef SPOTPOOL_HTTP_H
#define SPOTPOOL_HTTP_H

#include "buf.h"
#include "spotpool.h"
#include "stop.h"

struct http_tls {
	const char *ca_file;    /* PEM bundle; NULL = system store */
	const char *ca_data;    /* PEM text instead of a file */
	const char *cert_file;  /* client certificate (PEM) */
	const char *cert_data;
	const char *key_file;   /* client key (PEM) */
	const char *key_data;
	bool insecure;          /* only when a user explicitly asks for it */
};

/* Called with each chunk of a streamed body; non-zero aborts the transfer. */
typedef int (*http_data_fn)(void *userdata, const char *data, size_t len);

struct http_request {
	const char *method;               /* GET, POST, PATCH, PUT, DELETE */
	const char *url;
	const char *const *headers;       /* "Name: value" lines */
	size_t n_headers;
	const char *body;
	size_t body_len;
	long timeout_ms;                  /* whole transfer; 0 = none (streams) */
	long connect_timeout_ms;
	size_t max_response;              /* buffered body limit */
	const struct http_tls *tls;
	http_data_fn on_data;             /* streams the body instead of buffering it */
	void *userdata;
	const struct stop *cancel;        /* requested: ends the transfer at once (NULL: none) */
	/* Also fail at once when started after http_abort_all(): set by calls that start
	 * new cloud work, which must not begin during a shutdown. */
	bool refuse_after_abort;
};

struct http_response {
	long status;
	struct buf body;
	int retry_after;  /* Retry-After in seconds (capped at HTTP_RETRY_AFTER_MAX), -1 = none */
};

/* Longest Retry-After honoured: a peer asking for more still gets retried after this. */
#define HTTP_RETRY_AFTER_MAX 60

struct http_client;

int http_global_init(void);
void http_global_cleanup(void);
struct http_client *http_client_new(const char *user_agent);
void http_client_free(struct http_client *c);

/* Performs the request. Transport failures (DNS, connect, TLS, timeout) are
 * SP_ETRANSIENT; a body beyond max_response is SP_ETOOBIG; any HTTP status is
 * success here and left to the caller. An X-TC-Token header (a temporary credential)
 * is never sent over plain http except to loopback (an emulator): SP_ECONFIG, nothing
 * sent; the first plain-http request carrying credentials to a host that is not
 * loopback logs a warning (loopback never crosses a network: a debug line). ret is initialised by this function and
 * must be released with http_response_free() even on failure. */
int http_do(struct http_client *c, const struct http_request *req, struct http_response *ret,
	    struct sp_error *err);
void http_response_free(struct http_response *r);

/* Shutdown: aborts every transfer in progress at once (its wait in curl_multi_poll
 * includes the abort's eventfd); they fail with SP_ETRANSIENT "aborted (shutting
 * down)". Async-signal-safe (stop_request), and irreversible. Transfers started afterwards run normally, bounded by their timeouts,
 * so the shutdown itself can still record status and release its lease, unless the
 * request sets refuse_after_abort. */
void http_abort_all(void);
bool http_aborting(void);
/* Sleeps until at_mono_ms (sp_mono_ms() time) unless http_abort_all() comes first;
 * returns whether it did (stop_wait_until_ms). */
bool http_abort_wait_until_ms(int64_t at_mono_ms);

/* A Retry-After header's value in its seconds form ("120"), capped at cap; -1 when
 * absent, negative, malformed or an HTTP-date (not worth a date parser here). */
int http_retry_after(const char *value, int cap);
/* The host names this machine: localhost (and *.localhost), 127.0.0.0/8 or ::1, with or
 * without IPv6 brackets, a trailing dot or a :port. */
bool http_host_loopback(const char *host);
/* The URL is plain http (anything but https travels unencrypted). */
bool http_url_cleartext(const char *url);

/* Host part of a URL as it appears in the Host header ("h", "h:port"), caller frees. */
int http_url_host(const char *url, char **ret_host, struct sp_error *err);

#endif
