/* kube: Kubernetes API client: kubeconfig and in-cluster configuration, JSON
 * REST calls (get, list, create, merge-patch, status), and watch streams. */
#ifndef SPOTPOOL_KUBE_H
#define SPOTPOOL_KUBE_H

#include "http.h"
#include "spotpool.h"

#include <cjson/cJSON.h>
#include <pthread.h>

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_RESPONSE_MAX (64 * 1024 * 1024)
#define KUBE_WATCH_EVENT_MAX (16 * 1024 * 1024)

/* Reports each request's outcome (for metrics), on the requesting thread with no lock
 * held: verb is the HTTP method or WATCH, resource a short fixed name ("spotpools",
 * "spotpools/status", "events", "leases", "secrets", "discovery", "other"), status the
 * HTTP status answered (also when the request failed afterwards), 0 when none came.  A
 * watch is reported when it ends.  request NULL: nothing is reported. */
struct kube_hooks {
	void (*request)(void *userdata, const char *verb, const char *resource, long status);
	void *userdata;
};

struct kube_config {
	char *server;         /* https://host:port, no trailing slash */
	char *namespace;      /* the context's (or service account's) namespace */
	/* In-cluster, the service account's namespace (KUBE_SA_DIR/namespace); NULL from a
	 * kubeconfig, or when that file is missing or empty. */
	char *sa_namespace;
	struct http_tls tls;  /* points into the owned strings below */
	char *ca_file, *ca_data, *cert_file, *cert_data, *key_file, *key_data;
	char *token_file;     /* re-read when it changes (projected SA tokens rotate) */
	char *source;         /* "in-cluster" or the kubeconfig path, for messages */
	/* Zero when loaded; whoever loaded it may set it before the first client is made. */
	struct kube_hooks hooks;

	pthread_mutex_t token_lock;
	char *token;
	int64_t token_mtime_ns;
};

/* path NULL: $KUBECONFIG, else in-cluster when KUBERNETES_SERVICE_HOST is set, else
 * ~/.kube/config. */
int kube_config_load(const char *path, struct kube_config **ret, struct sp_error *err);
/* Parses kubeconfig YAML text (what kube_config_load does after reading the file). path
 * names it in messages; relative file references resolve against its directory. Pure:
 * referenced files are not read here. */
int kube_config_parse(const char *text, size_t len, const char *path, struct kube_config **ret,
		      struct sp_error *err);
int kube_config_in_cluster(struct kube_config **ret, struct sp_error *err);
void kube_config_free(struct kube_config *cfg);

/* One per thread: owns a connection. */
struct kube_client;
struct kube_client *kube_client_new(struct kube_config *cfg, const char *user_agent);
/* Per-request timeout for this client (default 30 s). */
void kube_client_set_timeout(struct kube_client *c, long timeout_ms);
/* Every later request of this client is refused once until passes (SP_ETRANSIENT
 * "leadership ends ..."; read again before each attempt, as sp_deadline_left_ms) and
 * given no longer than is left: a leader's workers pass its renew deadline, so that no
 * write of theirs (status, finalizer, event) goes out after leadership ends. NULL: none. */
void kube_client_set_until(struct kube_client *c, const _Atomic int64_t *until);
void kube_client_free(struct kube_client *c);

/* method + path ("/apis/..."), optional JSON body and content type. Maps HTTP status to
 * SP_ENOTFOUND (404), SP_ECONFLICT (409), SP_EGONE (410), SP_EAUTH (401),
 * SP_EFORBIDDEN (403), SP_EINVAL (400, 422), SP_ETHROTTLED (429), SP_ETRANSIENT (5xx,
 * network); the Status message goes to err->msg and its reason to err->reason. A 429
 * with Retry-After (the apiserver did not process the request) is retried after the
 * time asked for, capped at HTTP_RETRY_AFTER_MAX, up to KUBE_THROTTLE_RETRIES times while
 * the waits add up to no more than the client's timeout, as client-go does; then it is
 * SP_ETHROTTLED. A Secret's response body is wiped. */
#define KUBE_THROTTLE_RETRIES 3
int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const cJSON *body, cJSON **ret, struct sp_error *err);
int kube_get(struct kube_client *c, const char *path, cJSON **ret, struct sp_error *err);

/* Receives each watch event: type ADDED/MODIFIED/DELETED/BOOKMARK/ERROR and the object.
 * Returning non-zero stops the watch. */
typedef int (*kube_event_fn)(void *userdata, const char *type, cJSON *object);

/* Decodes a watch body: one JSON event {type, object} per line, a partial line kept
 * until the next chunk (at most max bytes); fn is called per event. Pure: kube_watch
 * feeds it what the server sends. */
struct kube_watch_decoder {
	struct buf line;  /* the unfinished line */
	kube_event_fn fn;
	void *userdata;
	char *failure;    /* a Status object sent instead of events (an HTTP error body) */
	bool stopped;     /* fn returned non-zero */
	bool too_big;     /* a line longer than max */
};
void kube_watch_decoder_init(struct kube_watch_decoder *d, size_t max, kube_event_fn fn,
			     void *userdata);
/* Feeds the next chunk of the body; non-zero when decoding must stop (stopped or too_big). */
int kube_watch_feed(struct kube_watch_decoder *d, const char *data, size_t len);
void kube_watch_decoder_free(struct kube_watch_decoder *d);

/* Streams a watch until the server closes it, timeout_ms passes (a half-open
 * connection must not block forever), cancel is requested (NULL: never), or the
 * callback stops it.
 * The stream is read with a bounded buffer per event. */
int kube_watch(struct kube_client *c, const char *path, long timeout_ms, kube_event_fn fn,
	       void *userdata, const struct stop *cancel, struct sp_error *err);

/* The apiserver as a port: what informer, lease, reconcile and ctl call. kube_client_api
 * binds a kube_client (borrowed: it must outlive the port); unit tests bind canned
 * replies. request and watch behave as kube_request and kube_watch. */
struct kube_api {
	int (*request)(void *ctx, const char *method, const char *path, const char *content_type,
		       const cJSON *body, cJSON **ret, struct sp_error *err);
	int (*watch)(void *ctx, const char *path, long timeout_ms, kube_event_fn fn, void *userdata,
		     const struct stop *cancel, struct sp_error *err);
	void *ctx;
};
struct kube_api kube_client_api(struct kube_client *c);
int kube_api_get(const struct kube_api *api, const char *path, cJSON **ret, struct sp_error *err);
int kube_api_merge_patch(const struct kube_api *api, const char *path, const cJSON *patch, cJSON **ret,
			 struct sp_error *err);

/* Decoded value of key in a Secret object (data is base64), caller frees with
 * sp_secure_free; NULL when absent or malformed. Not registered for redaction: the
 * caller knows which values are secret and who owns them (log_replace_secret). */
char *kube_secret_value(const cJSON *secret, const char *key);
/* Zeroes every string in a Secret object in place (data, and any copy in annotations
 * such as last-applied-configuration); kube_secret_free then frees it. Both accept NULL:
 * cJSON_Delete alone would leave the values in freed memory. */
void kube_secret_wipe(cJSON *secret);
void kube_secret_free(cJSON *secret);
/* URL-escapes s for a query parameter; caller frees. */
char *kube_escape(const char *s);

#endif
