/* httpd: the HTTP server of /metrics, /healthz and /readyz over libmicrohttpd; the page
 * is the exposition's (exposition.h), the probes the caller's. */
#include "httpd.h"
#include "exposition.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct httpd {
	struct MHD_Daemon *daemon;
	struct httpd_health health;
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
	char *page = exposition_render();
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
	const struct httpd *s = cls;
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

int httpd_listen_address_check(const char *listen_address, struct sp_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	return parse_listen(listen_address, &ss, &len, err);
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
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, HTTPD_CONNECTION_LIMIT) < 0 ||
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

int httpd_listen_try(const char *listen_address, struct sp_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int port, fd = parse_listen(listen_address, &ss, &len, err);
	if (fd == 0)
		fd = listen_on(listen_address, &ss, len, &port, err);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int httpd_serve(const char *listen_address, const struct httpd_health *health, struct httpd **ret,
		int *ret_port, struct sp_error *err)
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
	struct httpd *s = xcalloc(1, sizeof(*s));
	if (health)
		s->health = *health;
	unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	/* MHD owns the listening socket from here on and closes it even when it fails to start. */
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, s,
				     MHD_OPTION_LISTEN_SOCKET, fd,
				     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTPD_CONNECTION_LIMIT,
				     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)HTTPD_PER_IP_CONNECTION_LIMIT,
				     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTPD_CONNECTION_TIMEOUT_S,
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

void httpd_stop(struct httpd *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->daemon);
	free(s);
}
