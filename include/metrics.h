/* metrics: Prometheus text metrics and /metrics, /healthz, /readyz over libmicrohttpd.
 *
 * One process-wide registry behind one mutex: every function here may be called from
 * any thread, and no initialisation is needed.  Labels are only ever namespace, name,
 * action and code, so no secret can reach the output. */
#ifndef SPOTPOOL_METRICS_H
#define SPOTPOOL_METRICS_H

#include "spotpool.h"

/* Distinct cvm action or code label values kept, and their longest length; further or
 * longer ones are folded into "other" so that a misbehaving peer cannot grow the
 * registry without bound. */
#define METRICS_LABEL_VALUES_MAX 64
#define METRICS_LABEL_VALUE_LEN_MAX 128
/* metrics_render() gives up (NULL, HTTP 500) rather than build a larger page. */
#define METRICS_RENDER_MAX (32 * 1024 * 1024)
/* At most this many concurrent scrapes; idle connections are dropped after the timeout. */
#define METRICS_CONNECTION_LIMIT 32
#define METRICS_CONNECTION_TIMEOUT_S 10

enum metrics_pool_counter { METRICS_LAUNCHES, METRICS_TERMINATIONS, METRICS_RECLAIMS };

/* Sets spotpool_pool_desired_instances and spotpool_pool_observed_instances. */
void metrics_pool_set(const char *ns, const char *name, int desired, int observed);
/* Adds n (> 0; anything else is ignored, counters never go down) to a pool's
 * spotpool_pool_{launches,terminations,reclaims}_total. */
void metrics_pool_add(const char *ns, const char *name, enum metrics_pool_counter which, int n);
/* The pool was deleted: drops all its series. */
void metrics_pool_forget(const char *ns, const char *name);
/* Counts one CVM API call in spotpool_cvm_requests_total{action,code} and its duration in
 * spotpool_cvm_request_duration_seconds{action}.  Same signature as cvm_observe_fn so it
 * can be passed directly; userdata is ignored. */
void metrics_cvm_observe(void *userdata, const char *action, const char *code, double seconds);
/* Counts one reconcile: spotpool_reconciles_total, spotpool_reconcile_duration_seconds and,
 * when failed, spotpool_reconcile_errors_total. */
void metrics_reconcile_observe(double seconds, bool failed);
/* spotpool_leader: true when this process leads or leader election is off. */
void metrics_set_leader(bool leading);
/* The whole registry in Prometheus text exposition format 0.0.4; caller frees.  NULL only
 * when the page would exceed METRICS_RENDER_MAX. */
char *metrics_render(void);
/* Drops every series and frees the registry's memory (tests, shutdown). */
void metrics_reset(void);

/* Probes for the health endpoints; called on the HTTP server's thread, so they must be
 * thread-safe and quick.  A NULL probe always answers healthy. */
struct metrics_health {
	bool (*alive)(void *userdata);  /* /healthz: the main loop is alive */
	bool (*ready)(void *userdata);  /* /readyz: synced, and leading or standing by healthily */
	void *userdata;                 /* borrowed until metrics_server_stop() */
};

struct metrics_server;

/* Serves GET/HEAD /metrics, /healthz and /readyz on listen_address, "HOST:PORT" with an
 * IPv4 literal or "[IPv6]:PORT"; port 0 picks a free one.  Binds to that address only.
 * *ret_port receives the bound port.  SP_EINVAL for a malformed address, SP_EIO when it
 * cannot be bound or the server cannot start; both messages name the address. */
int metrics_serve(const char *listen_address, const struct metrics_health *health,
		  struct metrics_server **ret, int *ret_port, struct sp_error *err);
/* Stops serving (waits for in-flight requests) and frees s; NULL is fine. */
void metrics_server_stop(struct metrics_server *s);

#endif
