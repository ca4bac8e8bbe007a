/* metrics: Prometheus registry and HTTP endpoints.  Series live in small arrays scanned
 * linearly: a few thousand pools cost microseconds per update and a millisecond per scrape,
 * far below the scrape interval, and the code stays obvious. */
#include "metrics.h"
#include "buf.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define N_POOL_COUNTERS (METRICS_RECLAIMS + 1)

static const double bucket_bounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define N_BOUNDS (sizeof(bucket_bounds) / sizeof(bucket_bounds[0]))

struct histogram {
	uint64_t counts[N_BOUNDS + 1];  /* per bucket, not cumulative; the last is +Inf */
	double sum;
};

/* Label sets are escaped once, when a series is created, so rendering only copies them. */
struct pool_series {
	char *ns, *name;
	char *labels;  /* namespace="...",name="..." */
	bool has_sizes;
	int desired, observed;
	uint64_t counters[N_POOL_COUNTERS];
};

struct cvm_requests {
	char *action, *code;
	char *labels;  /* action="...",code="..." */
	uint64_t n;
};

struct cvm_duration {
	char *action;
	char *labels;  /* action="..." */
	struct histogram h;
};

struct registry {
	struct pool_series *pools;
	size_t n_pools, cap_pools;
	struct cvm_requests *requests;
	size_t n_requests, cap_requests;
	struct cvm_duration *durations;
	size_t n_durations, cap_durations;
	struct strv actions, codes;  /* label values admitted so far */
	struct histogram reconcile;
	uint64_t reconciles, reconcile_errors;
	bool leader;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct registry reg;

/* Makes room for one more element of size sz in *p holding n of *cap. */
static void *grow(void *p, size_t n, size_t *cap, size_t sz)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	return xrealloc(p, *cap * sz);
}

/* Appends v as a label value: backslash, double quote and newline are escaped. */
static void escape_into(struct buf *b, const char *v)
{
	for (; *v; v++) {
		const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
		if (esc)
			buf_puts(b, esc);
		else
			buf_append(b, v, 1);
	}
}

/* Builds k1="v1"[,k2="v2"] with the values escaped.  No maximum is needed: values are
 * Kubernetes names or went through admit(). */
static char *label_set(const char *k1, const char *v1, const char *k2, const char *v2)
{
	struct buf b;
	buf_init(&b, SIZE_MAX);
	buf_printf(&b, "%s=\"", k1);
	escape_into(&b, v1);
	buf_puts(&b, "\"");
	if (k2) {
		buf_printf(&b, ",%s=\"", k2);
		escape_into(&b, v2);
		buf_puts(&b, "\"");
	}
	return buf_steal(&b);
}

static void histogram_observe(struct histogram *h, double seconds)
{
	/* A stepped clock or a caller bug must not poison _sum with a negative or NaN. */
	if (!(seconds >= 0))
		seconds = 0;
	size_t i = 0;
	while (i < N_BOUNDS && seconds > bucket_bounds[i])
		i++;
	h->counts[i]++;
	h->sum += seconds;
}

static struct pool_series *pool_find(const char *ns, const char *name)
{
	for (size_t i = 0; i < reg.n_pools; i++)
		if (strcmp(reg.pools[i].ns, ns) == 0 && strcmp(reg.pools[i].name, name) == 0)
			return &reg.pools[i];
	return NULL;
}

static struct pool_series *pool_get(const char *ns, const char *name)
{
	struct pool_series *p = pool_find(ns, name);
	if (p)
		return p;
	reg.pools = grow(reg.pools, reg.n_pools, &reg.cap_pools, sizeof(*reg.pools));
	p = &reg.pools[reg.n_pools++];
	*p = (struct pool_series){.ns = xstrdup(ns), .name = xstrdup(name),
				  .labels = label_set("namespace", ns, "name", name)};
	return p;
}

void metrics_pool_set(const char *ns, const char *name, int desired, int observed)
{
	pthread_mutex_lock(&lock);
	struct pool_series *p = pool_get(ns, name);
	p->has_sizes = true;
	p->desired = desired;
	p->observed = observed;
	pthread_mutex_unlock(&lock);
}

void metrics_pool_add(const char *ns, const char *name, enum metrics_pool_counter which, int n)
{
	if (n <= 0 || which < METRICS_LAUNCHES || which > METRICS_RECLAIMS)
		return;
	pthread_mutex_lock(&lock);
	pool_get(ns, name)->counters[which] += (uint64_t)n;
	pthread_mutex_unlock(&lock);
}

static void pool_series_free(struct pool_series *p)
{
	free(p->ns);
	free(p->name);
	free(p->labels);
}

void metrics_pool_forget(const char *ns, const char *name)
{
	pthread_mutex_lock(&lock);
	struct pool_series *p = pool_find(ns, name);
	if (p) {
		pool_series_free(p);
		/* memmove rather than swap keeps the exposition order stable between scrapes. */
		size_t i = (size_t)(p - reg.pools);
		memmove(p, p + 1, (reg.n_pools - i - 1) * sizeof(*p));
		reg.n_pools--;
	}
	pthread_mutex_unlock(&lock);
}

/* v if it is already known or there is room for it, else "other". */
static const char *admit(struct strv *seen, const char *v)
{
	if (strv_contains(seen, v))
		return v;
	if (seen->n >= METRICS_LABEL_VALUES_MAX || strlen(v) > METRICS_LABEL_VALUE_LEN_MAX)
		return "other";
	strv_push(seen, v);
	return v;
}

static struct cvm_requests *requests_get(const char *action, const char *code)
{
	for (size_t i = 0; i < reg.n_requests; i++)
		if (strcmp(reg.requests[i].action, action) == 0 && strcmp(reg.requests[i].code, code) == 0)
			return &reg.requests[i];
	reg.requests = grow(reg.requests, reg.n_requests, &reg.cap_requests, sizeof(*reg.requests));
	struct cvm_requests *r = &reg.requests[reg.n_requests++];
	*r = (struct cvm_requests){.action = xstrdup(action), .code = xstrdup(code),
				   .labels = label_set("action", action, "code", code)};
	return r;
}

static struct cvm_duration *duration_get(const char *action)
{
	for (size_t i = 0; i < reg.n_durations; i++)
		if (strcmp(reg.durations[i].action, action) == 0)
			return &reg.durations[i];
	reg.durations = grow(reg.durations, reg.n_durations, &reg.cap_durations, sizeof(*reg.durations));
	struct cvm_duration *d = &reg.durations[reg.n_durations++];
	*d = (struct cvm_duration){.action = xstrdup(action),
				   .labels = label_set("action", action, NULL, NULL)};
	return d;
}

void metrics_cvm_observe(void *userdata, const char *action, const char *code, double seconds)
{
	(void)userdata;
	pthread_mutex_lock(&lock);
	action = admit(&reg.actions, action);
	code = admit(&reg.codes, code);
	requests_get(action, code)->n++;
	histogram_observe(&duration_get(action)->h, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_reconcile_observe(double seconds, bool failed)
{
	pthread_mutex_lock(&lock);
	reg.reconciles++;
	if (failed)
		reg.reconcile_errors++;
	histogram_observe(&reg.reconcile, seconds);
	pthread_mutex_unlock(&lock);
}

void metrics_set_leader(bool leading)
{
	pthread_mutex_lock(&lock);
	reg.leader = leading;
	pthread_mutex_unlock(&lock);
}

void metrics_reset(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < reg.n_pools; i++)
		pool_series_free(&reg.pools[i]);
	for (size_t i = 0; i < reg.n_requests; i++) {
		free(reg.requests[i].action);
		free(reg.requests[i].code);
		free(reg.requests[i].labels);
	}
	for (size_t i = 0; i < reg.n_durations; i++) {
		free(reg.durations[i].action);
		free(reg.durations[i].labels);
	}
	free(reg.pools);
	free(reg.requests);
	free(reg.durations);
	strv_clear(&reg.actions);
	strv_clear(&reg.codes);
	reg = (struct registry){0};
	pthread_mutex_unlock(&lock);
}

/* Rendering: the first failed append (page too large) is remembered and ends the render. */
struct page {
	struct buf b;
	int err;
};

static void emit(struct page *pg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct page *pg, const char *fmt, ...)
{
	if (pg->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	pg->err = buf_vprintf(&pg->b, fmt, ap);
	va_end(ap);
}

static void family(struct page *pg, const char *name, const char *type, const char *help)
{
	emit(pg, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The shortest of %.15g and %.17g that reads back as v: 0.3, not 0.29999999999999999. */
static void format_double(char out[32], double v)
{
	snprintf(out, 32, "%.15g", v);
	if (strtod(out, NULL) != v)
		snprintf(out, 32, "%.17g", v);
}

/* labels is a pre-escaped label set, "" for none. */
static void histogram_render(struct page *pg, const char *name, const char *labels,
			     const struct histogram *h)
{
	const char *sep = *labels ? "," : "";
	uint64_t cumulative = 0;
	for (size_t i = 0; i < N_BOUNDS; i++) {
		cumulative += h->counts[i];
		emit(pg, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep, bucket_bounds[i],
		     cumulative);
	}
	cumulative += h->counts[N_BOUNDS];
	emit(pg, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cumulative);
	const char *open = *labels ? "{" : "", *close = *labels ? "}" : "";
	char sum[32];
	format_double(sum, h->sum);
	emit(pg, "%s_sum%s%s%s %s\n", name, open, labels, close, sum);
	emit(pg, "%s_count%s%s%s %" PRIu64 "\n", name, open, labels, close, cumulative);
}

static void render_pools(struct page *pg)
{
	family(pg, "spotpool_pool_desired_instances", "gauge", "Instances the pool should have.");
	for (size_t i = 0; i < reg.n_pools; i++)
		if (reg.pools[i].has_sizes)
			emit(pg, "spotpool_pool_desired_instances{%s} %d\n", reg.pools[i].labels,
			     reg.pools[i].desired);
	family(pg, "spotpool_pool_observed_instances", "gauge", "Instances the pool has, as last observed.");
	for (size_t i = 0; i < reg.n_pools; i++)
		if (reg.pools[i].has_sizes)
			emit(pg, "spotpool_pool_observed_instances{%s} %d\n", reg.pools[i].labels,
			     reg.pools[i].observed);
	static const char *const counter_names[N_POOL_COUNTERS][2] = {
		[METRICS_LAUNCHES] = {"spotpool_pool_launches_total", "Instances launched for the pool."},
		[METRICS_TERMINATIONS] = {"spotpool_pool_terminations_total", "Instances terminated by the pool."},
		[METRICS_RECLAIMS] = {"spotpool_pool_reclaims_total", "Spot instances reclaimed by the cloud."},
	};
	for (int c = 0; c < N_POOL_COUNTERS; c++) {
		family(pg, counter_names[c][0], "counter", counter_names[c][1]);
		for (size_t i = 0; i < reg.n_pools; i++)
			emit(pg, "%s{%s} %" PRIu64 "\n", counter_names[c][0], reg.pools[i].labels,
			     reg.pools[i].counters[c]);
	}
}

static void render_cvm(struct page *pg)
{
	family(pg, "spotpool_cvm_requests_total", "counter", "Tencent Cloud CVM API calls by result code.");
	for (size_t i = 0; i < reg.n_requests; i++)
		emit(pg, "spotpool_cvm_requests_total{%s} %" PRIu64 "\n", reg.requests[i].labels,
		     reg.requests[i].n);
	family(pg, "spotpool_cvm_request_duration_seconds", "histogram",
	       "Duration of Tencent Cloud CVM API calls, retries included.");
	for (size_t i = 0; i < reg.n_durations; i++)
		histogram_render(pg, "spotpool_cvm_request_duration_seconds", reg.durations[i].labels,
				 &reg.durations[i].h);
}

static void render_controller(struct page *pg)
{
	family(pg, "spotpool_reconcile_duration_seconds", "histogram", "Duration of pool reconciles.");
	histogram_render(pg, "spotpool_reconcile_duration_seconds", "", &reg.reconcile);
	family(pg, "spotpool_reconciles_total", "counter", "Pool reconciles.");
	emit(pg, "spotpool_reconciles_total %" PRIu64 "\n", reg.reconciles);
	family(pg, "spotpool_reconcile_errors_total", "counter", "Pool reconciles that failed.");
	emit(pg, "spotpool_reconcile_errors_total %" PRIu64 "\n", reg.reconcile_errors);
	family(pg, "spotpool_leader", "gauge", "1 when this process leads (or election is off), else 0.");
	emit(pg, "spotpool_leader %d\n", reg.leader ? 1 : 0);
}

char *metrics_render(void)
{
	struct page pg = {0};
	buf_init(&pg.b, METRICS_RENDER_MAX);
	pthread_mutex_lock(&lock);
	family(&pg, "spotpool_build_info", "gauge", "Build information; the value is always 1.");
	emit(&pg, "spotpool_build_info{version=\"%s\"} 1\n", SPOTPOOL_VERSION);
	render_pools(&pg);
	render_cvm(&pg);
	render_controller(&pg);
	pthread_mutex_unlock(&lock);
	if (pg.err) {
		log_error("metrics: the page would exceed %d bytes; not serving it", METRICS_RENDER_MAX);
		buf_free(&pg.b);
		return NULL;
	}
	return buf_steal(&pg.b);
}

/* HTTP */

struct metrics_server {
	struct MHD_Daemon *daemon;
	struct metrics_health health;
};

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned int status, struct MHD_Response *r)
{
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static struct MHD_Response *response(size_t len, void *data, enum MHD_ResponseMemoryMode mode,
				     const char *content_type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, data, mode);
	/* MHD only fails here when out of memory, which is fatal in this daemon as everywhere. */
	if (!r)
		abort();
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	return r;
}

static struct MHD_Response *text_response(const char *text)
{
	return response(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT, "text/plain; charset=utf-8");
}

static enum MHD_Result serve_metrics(struct MHD_Connection *conn)
{
	char *page = metrics_render();
	if (!page)
		return queue(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, text_response("metrics too large\n"));
	return queue(conn, MHD_HTTP_OK, response(strlen(page), page, MHD_RESPMEM_MUST_FREE,
						 "text/plain; version=0.0.4; charset=utf-8"));
}

static enum MHD_Result serve_probe(struct MHD_Connection *conn, bool (*probe)(void *), void *userdata,
				   const char *failure)
{
	if (!probe || probe(userdata))
		return queue(conn, MHD_HTTP_OK, text_response("ok\n"));
	return queue(conn, MHD_HTTP_SERVICE_UNAVAILABLE, text_response(failure));
}

/* Every request is answered on the first call, right after its headers: no endpoint takes
 * a body, and MHD closes the connection after replying if a client sent one anyway. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_data_size,
			      void **req_cls)
{
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	const struct metrics_server *s = cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		struct MHD_Response *r = text_response("method not allowed\n");
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
		return queue(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	}
	if (strcmp(url, "/metrics") == 0)
		return serve_metrics(conn);
	if (strcmp(url, "/healthz") == 0)
		return serve_probe(conn, s->health.alive, s->health.userdata, "unhealthy\n");
	if (strcmp(url, "/readyz") == 0)
		return serve_probe(conn, s->health.ready, s->health.userdata, "not ready\n");
	return queue(conn, MHD_HTTP_NOT_FOUND, text_response("not found\n"));
}

static int bad_address(const char *addr, struct sp_error *err)
{
	return sp_fail(err, SP_EINVAL,
		       "metrics listen address \"%s\": expected IPV4:PORT or [IPV6]:PORT with a port 0-65535",
		       addr);
}

static bool parse_port(const char *s, in_port_t *ret_port)
{
	if (*s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	long p = strtol(s, &end, 10);
	if (errno || *end || p > 65535)
		return false;
	*ret_port = htons((uint16_t)p);
	return true;
}

/* Parses "1.2.3.4:80" or "[::1]:80"; host names are refused so that the bound address
 * is exactly what the operator wrote. */
static int parse_listen(const char *addr, struct sockaddr_storage *ss, socklen_t *ret_len,
			struct sp_error *err)
{
	const char *colon = strrchr(addr, ':');
	if (!colon)
		return bad_address(addr, err);
	_cleanup_free_ char *host = xstrndup(addr, (size_t)(colon - addr));
	size_t n = strlen(host);
	memset(ss, 0, sizeof(*ss));
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		host[n - 1] = '\0';
		a->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1 || !parse_port(colon + 1, &a->sin6_port))
			return bad_address(addr, err);
		*ret_len = sizeof(*a);
		return 0;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &a->sin_addr) != 1 || !parse_port(colon + 1, &a->sin_port))
		return bad_address(addr, err);
	*ret_len = sizeof(*a);
	return 0;
}

/* Binding ourselves (rather than letting MHD do it) yields the errno for the message
 * and, through getsockname, the port picked for port 0. */
static int listen_on(const char *addr, const struct sockaddr_storage *ss, socklen_t len, int *ret_port,
		     struct sp_error *err)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sp_fail(err, SP_EIO, "metrics listen address \"%s\": socket: %s", addr, strerror(errno));
	int one = 1;
	/* A restarted daemon must not be locked out by its predecessor's TIME_WAIT sockets. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_storage bound;
	socklen_t bound_len = sizeof(bound);
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, METRICS_CONNECTION_LIMIT) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &bound_len) < 0) {
		int e = errno;
		close(fd);
		return sp_fail(err, SP_EIO, "metrics listen address \"%s\": %s", addr, strerror(e));
	}
	in_port_t port = bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						     : ((struct sockaddr_in *)&bound)->sin_port;
	*ret_port = ntohs(port);
	return fd;
}

int metrics_serve(const char *listen_address, const struct metrics_health *health,
		  struct metrics_server **ret, int *ret_port, struct sp_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	int r = parse_listen(listen_address, &ss, &len, err);
	if (r < 0)
		return r;
	int port = 0;
	int fd = listen_on(listen_address, &ss, len, &port, err);
	if (fd < 0)
		return fd;
	struct metrics_server *s = xcalloc(1, sizeof(*s));
	if (health)
		s->health = *health;
	unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	/* MHD owns the listening socket from here on and closes it even when it fails to start. */
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
				     MHD_OPTION_LISTEN_SOCKET, fd,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONNECTION_LIMIT,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_CONNECTION_TIMEOUT_S,
				     MHD_OPTION_END);
	if (!s->daemon) {
		free(s);
		return sp_fail(err, SP_EIO, "metrics listen address \"%s\": cannot start the HTTP server",
			       listen_address);
	}
	*ret = s;
	*ret_port = port;
	return 0;
}

void metrics_server_stop(struct metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->daemon);
	free(s);
}
