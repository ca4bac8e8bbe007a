/* kube: Kubernetes REST and watch client over http. */
#include "kube.h"
#include "log.h"
#include "manifest.h"

#include <curl/curl.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct kube_client {
	struct kube_config *cfg;
	struct http_client *http;
	long timeout_ms;
	const _Atomic int64_t *until;  /* kube_client_set_until; NULL: none */
};

static char *read_file(const char *path, size_t max, struct sp_error *err)
{
	struct buf b;
	buf_init(&b, max);
	if (buf_read_file(&b, path, err) < 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

static void trim_newlines(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
}

static struct kube_config *config_new(const char *source)
{
	struct kube_config *cfg = xcalloc(1, sizeof(*cfg));
	pthread_mutex_init(&cfg->token_lock, NULL);
	cfg->source = xstrdup(source);
	return cfg;
}

static void config_link_tls(struct kube_config *cfg)
{
	cfg->tls.ca_file = cfg->ca_file;
	cfg->tls.ca_data = cfg->ca_data;
	cfg->tls.cert_file = cfg->cert_file;
	cfg->tls.cert_data = cfg->cert_data;
	cfg->tls.key_file = cfg->key_file;
	cfg->tls.key_data = cfg->key_data;
	log_add_secret(cfg->key_data);
}

void kube_config_free(struct kube_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->server);
	free(cfg->namespace);
	free(cfg->sa_namespace);
	free(cfg->ca_file);
	free(cfg->ca_data);
	free(cfg->cert_file);
	free(cfg->cert_data);
	free(cfg->key_file);
	sp_secure_free(cfg->key_data);
	free(cfg->token_file);
	free(cfg->source);
	sp_secure_free(cfg->token);
	pthread_mutex_destroy(&cfg->token_lock);
	free(cfg);
}

int kube_config_in_cluster(struct kube_config **ret, struct sp_error *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !*host || !port || !*port)
		return sp_fail(err, SP_EINVAL, "in-cluster configuration needs KUBERNETES_SERVICE_HOST "
			       "and KUBERNETES_SERVICE_PORT");
	struct kube_config *cfg = config_new("in-cluster");
	cfg->server = strchr(host, ':') ? xasprintf("https://[%s]:%s", host, port)
					: xasprintf("https://%s:%s", host, port);
	cfg->ca_file = xstrdup(KUBE_SA_DIR "/ca.crt");
	cfg->token_file = xstrdup(KUBE_SA_DIR "/token");
	char *ns = read_file(KUBE_SA_DIR "/namespace", 256, NULL);
	if (ns)
		trim_newlines(ns);
	cfg->sa_namespace = ns && *ns ? xstrdup(ns) : NULL;
	cfg->namespace = ns && *ns ? ns : (free(ns), xstrdup("default"));
	struct stat st;
	if (stat(cfg->token_file, &st) < 0 || stat(cfg->ca_file, &st) < 0) {
		int r = sp_fail(err, SP_EIO, "in-cluster configuration: %s: %s", KUBE_SA_DIR, strerror(errno));
		kube_config_free(cfg);
		return r;
	}
	config_link_tls(cfg);
	*ret = cfg;
	return 0;
}

/* The named entry's inner object of a kubeconfig list (clusters, contexts, users). */
static const cJSON *named(const cJSON *root, const char *list, const char *name, const char *inner)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, list)) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return cJSON_GetObjectItemCaseSensitive(it, inner);
	}
	return NULL;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) && *v->valuestring ? v->valuestring : NULL;
}

/* File references in a kubeconfig are relative to the kubeconfig's directory. */
static char *resolve_path(const char *dir, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", dir, p);
}

static int decode_data(const char *value, const char *field, char **out, struct sp_error *err)
{
	*out = sp_base64_decode(value, NULL);
	if (!*out)
		return sp_fail(err, SP_EINVAL, "kubeconfig: %s is not valid base64", field);
	return 0;
}

static int parse_kubeconfig(const cJSON *root, const char *dir, struct kube_config *cfg,
			    struct sp_error *err)
{
	const char *current = str(root, "current-context");
	if (!current)
		return sp_fail(err, SP_EINVAL, "kubeconfig: current-context is not set");
	const cJSON *ctx = named(root, "contexts", current, "context");
	if (!ctx)
		return sp_fail(err, SP_EINVAL, "kubeconfig: context \"%s\" not found", current);
	const char *cluster_name = str(ctx, "cluster"), *user_name = str(ctx, "user");
	const cJSON *cluster = cluster_name ? named(root, "clusters", cluster_name, "cluster") : NULL;
	if (!cluster || !str(cluster, "server"))
		return sp_fail(err, SP_EINVAL, "kubeconfig: cluster of context \"%s\" not found or has no "
			       "server", current);
	const cJSON *user = user_name ? named(root, "users", user_name, "user") : NULL;
	cfg->server = xstrdup(str(cluster, "server"));
	size_t n = strlen(cfg->server);
	while (n && cfg->server[n - 1] == '/')
		cfg->server[--n] = '\0';
	cfg->namespace = xstrdup(str(ctx, "namespace") ? str(ctx, "namespace") : "default");
	cfg->tls.insecure = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cluster, "insecure-skip-tls-verify"));
	int r = 0;
	const char *v;
	if ((v = str(cluster, "certificate-authority")))
		cfg->ca_file = resolve_path(dir, v);
	if ((v = str(cluster, "certificate-authority-data")))
		r = decode_data(v, "certificate-authority-data", &cfg->ca_data, err);
	if (r == 0 && (v = str(user, "client-certificate")))
		cfg->cert_file = resolve_path(dir, v);
	if (r == 0 && (v = str(user, "client-certificate-data")))
		r = decode_data(v, "client-certificate-data", &cfg->cert_data, err);
	if (r == 0 && (v = str(user, "client-key")))
		cfg->key_file = resolve_path(dir, v);
	if (r == 0 && (v = str(user, "client-key-data")))
		r = decode_data(v, "client-key-data", &cfg->key_data, err);
	if (r == 0 && (v = str(user, "token"))) {
		cfg->token = xstrdup(v);
		log_add_secret(cfg->token);
	}
	if (r == 0 && (v = str(user, "tokenFile")))
		cfg->token_file = resolve_path(dir, v);
	if (r == 0 && cJSON_GetObjectItemCaseSensitive(user, "exec"))
		r = sp_fail(err, SP_EINVAL, "kubeconfig: user \"%s\" uses an exec credential plugin, which "
			    "spotpool does not run; use a token, tokenFile or client certificate", user_name);
	return r;
}

/* The kubeconfig in set (read from path) into a new configuration. */
static int config_from_set(const struct manifest_set *set, const char *path, struct kube_config **ret,
			   struct sp_error *err)
{
	struct kube_config *cfg = config_new(path);
	int r = 0;
	if (set->n != 1)
		r = sp_fail(err, SP_EINVAL, "%s: expected one YAML document", path);
	if (r == 0) {
		char *copy = xstrdup(path);
		r = parse_kubeconfig(set->docs[0].object, dirname(copy), cfg, err);
		free(copy);
		if (r < 0)
			sp_error_prefix(err, "%s: ", path);
	}
	if (r < 0) {
		kube_config_free(cfg);
		return r;
	}
	config_link_tls(cfg);
	*ret = cfg;
	return 0;
}

int kube_config_parse(const char *text, size_t len, const char *path, struct kube_config **ret,
		      struct sp_error *err)
{
	struct manifest_set set = {0};
	int r = manifest_parse(text, len, path, &set, err);
	if (r == 0)
		r = config_from_set(&set, path, ret, err);
	manifest_set_free(&set);
	return r;
}

int kube_config_load(const char *path, struct kube_config **ret, struct sp_error *err)
{
	char *owned = NULL;
	if (!path || !*path) {
		const char *env = getenv("KUBECONFIG");
		if (env && *env) {
			owned = xstrdup(env);
		} else if (getenv("KUBERNETES_SERVICE_HOST")) {
			return kube_config_in_cluster(ret, err);
		} else if (getenv("HOME")) {
			owned = xasprintf("%s/.kube/config", getenv("HOME"));
		} else {
			return sp_fail(err, SP_EINVAL, "no kubeconfig: pass --kubeconfig or set KUBECONFIG");
		}
		path = owned;
	}
	/* Only the first file of a KUBECONFIG list (a:b) is read; merging is not supported. */
	if (strchr(path, ':') && access(path, F_OK) < 0) {
		char *first = xstrndup(path, strcspn(path, ":"));
		free(owned);
		path = owned = first;
	}
	/* manifest_load_file, not a read + kube_config_parse, so the manifest reader's file
	 * limits apply; the rest is kube_config_parse's. */
	struct manifest_set set = {0};
	int r = manifest_load_file(path, &set, err);
	if (r == 0)
		r = config_from_set(&set, path, ret, err);
	manifest_set_free(&set);
	free(owned);
	return r;
}

/* Current bearer token ("Authorization: Bearer ..." header line) or NULL; the token file
 * is re-read whenever its modification time changes. Caller frees with sp_secure_free. */
static char *auth_header(struct kube_config *cfg)
{
	pthread_mutex_lock(&cfg->token_lock);
	if (cfg->token_file) {
		struct stat st;
		if (stat(cfg->token_file, &st) == 0) {
			int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
			if (mtime != cfg->token_mtime_ns || !cfg->token) {
				char *t = read_file(cfg->token_file, 64 * 1024, NULL);
				if (t) {
					trim_newlines(t);
					log_remove_secret(cfg->token);
					sp_secure_free(cfg->token);
					cfg->token = t;
					cfg->token_mtime_ns = mtime;
					log_add_secret(t);
				}
			}
		}
	}
	char *h = cfg->token ? xasprintf("Authorization: Bearer %s", cfg->token) : NULL;
	pthread_mutex_unlock(&cfg->token_lock);
	return h;
}

struct kube_client *kube_client_new(struct kube_config *cfg, const char *user_agent)
{
	struct kube_client *c = xcalloc(1, sizeof(*c));
	c->cfg = cfg;
	c->http = http_client_new(user_agent);
	c->timeout_ms = 30000;
	return c;
}

void kube_client_set_timeout(struct kube_client *c, long timeout_ms)
{
	c->timeout_ms = timeout_ms;
}

void kube_client_set_until(struct kube_client *c, const _Atomic int64_t *until)
{
	c->until = until;
}

void kube_client_free(struct kube_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	free(c);
}

static int status_to_error(long status, const char *body, const char *method, const char *path,
			   struct sp_error *err)
{
	int code = status == 404 ? SP_ENOTFOUND : status == 409 ? SP_ECONFLICT : status == 410 ? SP_EGONE :
		   status == 401 ? SP_EAUTH : status == 403 ? SP_EFORBIDDEN :
		   status == 400 || status == 422 ? SP_EINVAL : status == 429 ? SP_ETHROTTLED :
		   status >= 500 ? SP_ETRANSIENT : SP_EPROTO;
	cJSON *st = body ? cJSON_Parse(body) : NULL;
	const char *msg = str(st, "message"), *reason = str(st, "reason");
	sp_fail(err, code, "%s %s: HTTP %ld: %.300s", method, path, status, msg ? msg : sp_strerror(code));
	if (err)
		snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
	cJSON_Delete(st);
	return code;
}

/* What path names, for spotpool_kube_requests_total: a short fixed name, never a
 * namespace or object name, so the metric stays bounded. */
static const char *resource_of(const char *path)
{
	size_t n = strcspn(path, "?");
	if (memmem(path, n, "/spotpools", 10))
		return n >= 7 && memcmp(path + n - 7, "/status", 7) == 0 ? "spotpools/status" : "spotpools";
	static const char *const known[] = {"events", "leases", "secrets", "nodes", "pods"};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		char seg[16];
		int len = snprintf(seg, sizeof(seg), "/%s", known[i]);
		if (memmem(path, n, seg, (size_t)len))
			return known[i];
	}
	return strncmp(path, "/version", 8) == 0 || !memmem(path, n, "/namespaces/", 12) ? "discovery" : "other";
}

/* Sleeps ms unless a shutdown starts; false when it did. */
static bool throttle_sleep(long ms)
{
	return !http_abort_wait_until_ms(sp_mono_ms() + ms);
}

static void report(const struct kube_client *c, const char *verb, const char *resource, long status)
{
	if (c->cfg->hooks.request)
		c->cfg->hooks.request(c->cfg->hooks.userdata, verb, resource, status);
}

int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const cJSON *body, cJSON **ret, struct sp_error *err)
{
	char *url = xasprintf("%s%s", c->cfg->server, path);
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	char *ct = xasprintf("Content-Type: %s", content_type ? content_type : "application/json");
	char *auth = auth_header(c->cfg);
	const char *headers[] = {"Accept: application/json", ct, auth};
	const char *resource = resource_of(path);
	struct http_request req = {
		.method = method, .url = url, .headers = headers, .n_headers = auth ? 3 : 2,
		.body = text, .body_len = text ? strlen(text) : 0, .timeout_ms = c->timeout_ms,
		.max_response = KUBE_RESPONSE_MAX, .tls = &c->cfg->tls,
	};
	struct http_response resp;
	int r;
	long waited_ms = 0;
	for (int attempt = 0;; attempt++) {
		/* A leader's writes end with its leadership: none is sent past it, and none is
		 * given longer than is left (kube_client_set_until). */
		int64_t left = sp_deadline_left_ms(c->until);
		if (left <= 0) {
			r = sp_fail(err, SP_ETRANSIENT, "%s %s: leadership ends before the request could be made",
				    method, path);
			resp = (struct http_response){.retry_after = -1};
			break;
		}
		req.timeout_ms = left < c->timeout_ms ? (long)left : c->timeout_ms;
		r = http_do(c->http, &req, &resp, err);
		report(c, method, resource, resp.status);
		long wait_ms = resp.retry_after * 1000L;
		/* The waits stay within the request timeout: the lease's client has half a renew
		 * deadline, and sleeping past it would cost the leadership. */
		if (!(r == 0 && resp.status == 429 && resp.retry_after >= 0 && attempt < KUBE_THROTTLE_RETRIES &&
		      waited_ms + wait_ms <= c->timeout_ms && wait_ms < sp_deadline_left_ms(c->until)))
			break;
		/* Priority and fairness rejected it unprocessed: any verb may be repeated. */
		log_debug("%s %s: HTTP 429, retrying after %d s as the apiserver asks", method, path,
			  resp.retry_after);
		waited_ms += wait_ms;
		http_response_free(&resp);
		if (!throttle_sleep(wait_ms)) {
			r = sp_fail(err, SP_ETHROTTLED, "%s %s: HTTP 429, not retried (shutting down)", method, path);
			resp = (struct http_response){.retry_after = -1};
			break;
		}
	}
	sp_secure_free(auth);
	free(ct);
	cJSON_free(text);
	if (r == 0 && (resp.status < 200 || resp.status > 299))
		r = status_to_error(resp.status, resp.body.data, method, path, err);
	if (r == 0 && ret) {
		cJSON *parsed = cJSON_ParseWithLength(resp.body.data ? resp.body.data : "", resp.body.len);
		if (parsed)
			*ret = parsed;
		else
			r = sp_fail(err, SP_EPROTO, "%s %s: malformed JSON from the apiserver", method, path);
	}
	/* A Secret's body holds its values (base64 is no protection): wipe before freeing. */
	if (strcmp(resource, "secrets") == 0 && resp.body.data)
		explicit_bzero(resp.body.data, resp.body.len);
	http_response_free(&resp);
	free(url);
	return r;
}

int kube_get(struct kube_client *c, const char *path, cJSON **ret, struct sp_error *err)
{
	return kube_request(c, "GET", path, NULL, NULL, ret, err);
}

static int client_request(void *ctx, const char *method, const char *path, const char *content_type,
			  const cJSON *body, cJSON **ret, struct sp_error *err)
{
	return kube_request(ctx, method, path, content_type, body, ret, err);
}

static int client_watch(void *ctx, const char *path, long timeout_ms, kube_event_fn fn, void *userdata,
			const struct stop *cancel, struct sp_error *err)
{
	return kube_watch(ctx, path, timeout_ms, fn, userdata, cancel, err);
}

struct kube_api kube_client_api(struct kube_client *c)
{
	return (struct kube_api){.request = client_request, .watch = client_watch, .ctx = c};
}

int kube_api_get(const struct kube_api *api, const char *path, cJSON **ret, struct sp_error *err)
{
	return api->request(api->ctx, "GET", path, NULL, NULL, ret, err);
}

int kube_api_merge_patch(const struct kube_api *api, const char *path, const cJSON *patch, cJSON **ret,
			 struct sp_error *err)
{
	return api->request(api->ctx, "PATCH", path, "application/merge-patch+json", patch, ret, err);
}

void kube_watch_decoder_init(struct kube_watch_decoder *d, size_t max, kube_event_fn fn,
			     void *userdata)
{
	*d = (struct kube_watch_decoder){.fn = fn, .userdata = userdata};
	buf_init(&d->line, max);
}

void kube_watch_decoder_free(struct kube_watch_decoder *d)
{
	cJSON_free(d->failure);
	d->failure = NULL;
	buf_free(&d->line);
}

int kube_watch_feed(struct kube_watch_decoder *d, const char *data, size_t len)
{
	if (buf_append(&d->line, data, len) < 0) {
		d->too_big = true;
		return 1;
	}
	char *nl;
	/* One JSON object per line; a partial line waits for the next chunk. */
	while ((nl = memchr(d->line.data, '\n', d->line.len))) {
		size_t n = (size_t)(nl - d->line.data);
		cJSON *ev = cJSON_ParseWithLength(d->line.data, n);
		buf_consume(&d->line, n + 1);
		if (!ev)
			continue;
		const char *type = str(ev, "type");
		cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
		if (!type && !d->failure && str(ev, "kind") && strcmp(str(ev, "kind"), "Status") == 0)
			d->failure = cJSON_PrintUnformatted(ev);
		int stop = type && obj ? d->fn(d->userdata, type, obj) : 0;
		cJSON_Delete(ev);
		if (stop) {
			d->stopped = true;
			return 1;
		}
	}
	return 0;
}

static int on_watch_data(void *ud, const char *data, size_t len)
{
	return kube_watch_feed(ud, data, len);
}

int kube_watch(struct kube_client *c, const char *path, long timeout_ms, kube_event_fn fn,
	       void *userdata, const struct stop *cancel, struct sp_error *err)
{
	char *url = xasprintf("%s%s", c->cfg->server, path);
	char *auth = auth_header(c->cfg);
	const char *headers[] = {"Accept: application/json", auth};
	struct kube_watch_decoder w;
	kube_watch_decoder_init(&w, KUBE_WATCH_EVENT_MAX, fn, userdata);
	struct http_request req = {
		.method = "GET", .url = url, .headers = headers, .n_headers = auth ? 2 : 1,
		.timeout_ms = timeout_ms, .tls = &c->cfg->tls, .on_data = on_watch_data, .userdata = &w,
		.cancel = cancel,
	};
	struct http_response resp;
	int r = http_do(c->http, &req, &resp, err);
	report(c, "WATCH", resource_of(path), resp.status);
	sp_secure_free(auth);
	if (w.stopped)
		r = 0;
	else if (w.too_big)
		r = sp_fail(err, SP_ETOOBIG, "watch %s: event larger than %d bytes", path, KUBE_WATCH_EVENT_MAX);
	else if (r == 0 && (resp.status < 200 || resp.status > 299))
		r = status_to_error(resp.status, w.failure ? w.failure : w.line.data, "watch", path, err);
	kube_watch_decoder_free(&w);
	http_response_free(&resp);
	free(url);
	return r;
}

char *kube_secret_value(const cJSON *secret, const char *key)
{
	const char *v = str(cJSON_GetObjectItemCaseSensitive(secret, "data"), key);
	if (!v)
		return NULL;
	return sp_base64_decode(v, NULL);
}

static void wipe_strings(cJSON *n)
{
	for (; n; n = n->next) {
		if (n->valuestring)
			explicit_bzero(n->valuestring, strlen(n->valuestring));
		wipe_strings(n->child);
	}
}

void kube_secret_wipe(cJSON *secret)
{
	if (secret)
		wipe_strings(secret->child);
}

void kube_secret_free(cJSON *secret)
{
	kube_secret_wipe(secret);
	cJSON_Delete(secret);
}

char *kube_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	if (!e)
		abort();
	char *out = xstrdup(e);
	curl_free(e);
	return out;
}
