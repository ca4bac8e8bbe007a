/* httpd: the HTTP server of GET/HEAD /metrics (the exposition's page, exposition.h),
 * /healthz and /readyz (the caller's probes), over libmicrohttpd's own thread. */
#ifndef SPOTPOOL_HTTPD_H
#define SPOTPOOL_HTTPD_H

#include "spotpool.h"

/* Connections to /metrics, /healthz and /readyz. The listener is reachable from every
 * pod, and slow clients must not starve the kubelet's probes: one client address holds
 * at most HTTPD_PER_IP_CONNECTION_LIMIT connections (further ones are refused at
 * once), far below the total, so it takes HTTPD_CONNECTION_LIMIT / 8 = 32 addresses
 * to fill the server. The timeout is of inactivity (libmicrohttpd restarts it on every
 * byte), short so that idle sockets go quickly. A scrape or probe is one short request:
 * 8 connections per address is ample for Prometheus and the kubelet. */
#define HTTPD_CONNECTION_LIMIT 256
#define HTTPD_PER_IP_CONNECTION_LIMIT 8
#define HTTPD_CONNECTION_TIMEOUT_S 5

/* Probes for the health endpoints; called on the HTTP server's thread, so they must be
 * thread-safe and quick.  A NULL probe always answers healthy. */
struct httpd_health {
	bool (*alive)(void *userdata);  /* /healthz: the main loop is alive */
	bool (*ready)(void *userdata);  /* /readyz: synced, and leading or standing by healthily */
	void *userdata;                 /* borrowed until httpd_stop() */
};

struct httpd;

/* Checks a listen address as httpd_serve() parses it (IPV4:PORT or [IPV6]:PORT, port
 * 0-65535, no host names) without binding: SP_EINVAL and a message naming it. */
int httpd_listen_address_check(const char *listen_address, struct sp_error *err);
/* Binds listen_address as httpd_serve() would and closes the socket at once: SP_EIO
 * and the reason ("Address already in use") when it cannot be listened on now. */
int httpd_listen_try(const char *listen_address, struct sp_error *err);

/* Serves GET/HEAD /metrics, /healthz and /readyz on listen_address, "HOST:PORT" with an
 * IPv4 literal or "[IPv6]:PORT"; port 0 picks a free one.  Binds to that address only.
 * *ret_port receives the bound port.  SP_EINVAL for a malformed address, SP_EIO when it
 * cannot be bound or the server cannot start; both messages name the address.  A page
 * that exposition_render() refuses (too large) is HTTP 500. */
int httpd_serve(const char *listen_address, const struct httpd_health *health, struct httpd **ret,
		int *ret_port, struct sp_error *err);
/* Stops serving (waits for in-flight requests) and frees s; NULL is fine. */
void httpd_stop(struct httpd *s);

#endif
