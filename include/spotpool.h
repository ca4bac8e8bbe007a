/* spotpool: keeps pools of Tencent Cloud GPU spot instances at a declared size.
 *
 * Conventions used by every module
 * --------------------------------
 * Errors.  A function that can fail returns int: 0 (or a non-negative count) on
 *   success, a negative SP_E* code on failure.  When it also takes a
 *   `struct sp_error *err` (may be NULL), it writes a human-readable message
 *   there on failure, naming the field, file or call that failed.  Messages
 *   never contain secrets.  Out-parameters are named ret_* and are left
 *   untouched on failure.
 *
 * Ownership.  Pointers passed in are borrowed for the duration of the call.
 *   What a function hands back through ret_* or as a return value belongs to
 *   the caller and is released with the module's *_free() function (all
 *   *_free() accept NULL).  Struct members are owned by their struct.
 *   Allocation failure aborts the process (xmalloc and friends): a daemon
 *   that cannot allocate a few bytes cannot do anything useful or safe.
 *
 * Bounds.  Every buffer that grows from network or file input has a maximum
 *   (struct buf); exceeding it is SP_ETOOBIG, never unbounded growth.
 *
 * Prefixes.  buf_ (bounded buffers), log_ (logging), tc3_ (request signing),
 *   http_ (libcurl transport), rate_ (cloud API pacing), cvm_ (Tencent CVM
 *   client), itypes_ (instance types' resources per region, cached), pool_ (Spotpool
 *   spec model and validation), tmpl_ (a pool's node template: labels, taints; pure),
 *   manifest_ (YAML files),
 *   plan_ (pure planner), pass_ (pure pass planner: a pass's ordered actions; pass.c
 *   and its parts pass_launch, pass_drain, pass_delete, pass_notice, pass_account,
 *   sharing the internal pass_walk.h),
 *   offer_ (offerings: zone x type preference and choice),
 *   drain_ (pure: a node's drain before termination, victim order),
 *   evict_ (a drain's apiserver calls: taint, cordon, list and evict pods),
 *   soldout_ (sold-out memory, one per controller),
 *   status_ (a pool's .status), observe_ (what a pass knows before it plans, for run and
 *   both dry-runs), reconcile_ (one pass over one pool: executes its actions),
 *   answers_ (launch answers kept in memory), acct_ (the account behind each SecretId),
 *   inv_ (shared per-account instance inventory), snap_ (its compact instance
 *   snapshots), creds_ (credentials),
 *   kube_ (Kubernetes API client), informer_ (list+watch cache of pools),
 *   node_ (a Node's compact view, instances matched to Nodes; pure),
 *   nodes_ (list+watch cache of the cluster's Node views),
 *   notices_ (list+watch cache of SpotNotices: instance, deadline),
 *   doom_ (a claimed reclaim deadline bounded on the controller's clock; pure),
 *   qty_ (Kubernetes quantities and resource lists; pure), podreq_ (what is read of
 *   a pod to place it: pending, requests, node selection, tolerations; pure),
 *   fit_ (pending pods against a pool's node template, bin-packing, pool choice; pure),
 *   claims_ (which pool asked for which instances, for the caches above),
 *   wq_ (work queue), ctl_ (controller), lease_ (leader election), cfg_ (daemon
 *   config), metrics_ (the Prometheus registry: what domain events update),
 *   exposition_ (the registry as the Prometheus text page), httpd_ (the HTTP server of
 *   /metrics and the health probes), stop_ (a stop request that
 *   wakes every waiting thread at once), agent_ (the spot notice agent: reclaim notices
 *   from the instance metadata to a Node condition or a SpotNotice).
 */
#ifndef SPOTPOOL_H
#define SPOTPOOL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef SPOTPOOL_VERSION
#define SPOTPOOL_VERSION "0.1.0"
#endif

enum sp_err {
	SP_OK = 0,
	SP_EINVAL = -1,      /* bad input: manifest, flag, config, parameter */
	SP_EIO = -2,         /* local I/O: files, sockets */
	SP_ETOOBIG = -3,     /* a bounded buffer or list would exceed its maximum */
	SP_EPROTO = -4,      /* a peer answered something malformed */
	SP_EAUTH = -5,       /* credentials rejected or missing */
	SP_ECONFIG = -6,     /* the cloud or apiserver rejected our parameters */
	SP_ECAPACITY = -7,   /* sold out, quota or stock exhausted */
	SP_ETHROTTLED = -8,  /* rate limited: retry later */
	SP_ETRANSIENT = -9,  /* network, timeout, 5xx: retry later */
	SP_ENOTFOUND = -10,  /* the object does not exist (or is already gone) */
	SP_ECONFLICT = -11,  /* optimistic concurrency conflict */
	SP_EGONE = -12,      /* watch resourceVersion too old: relist */
	SP_EFORBIDDEN = -13, /* authenticated but not allowed (RBAC) */
};

#define SP_ERROR_MAX 512

struct sp_error {
	int code;
	char msg[SP_ERROR_MAX];
	/* Machine-readable reason from the peer (a Tencent Error.Code, a Kubernetes
	 * Status reason), empty when there is none. */
	char reason[96];
};

/* Sets err (if not NULL) and returns code, so callers can `return sp_fail(...)`. */
int sp_fail(struct sp_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefixes the message already in err with more context ("file.yaml: " ...). */
void sp_error_prefix(struct sp_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *sp_strerror(int code);

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The array p of *cap elements of size bytes, resized for n: doubled (from 16) when n is
 * more, halved (into a new allocation, the first n elements copied) when n falls to a
 * quarter, so a table that once held a thousand pools does not keep their room, nor
 * its place. Call with the new count before adding and after removing. */
void *sp_vec_fit(void *p, size_t n, size_t *cap, size_t size);

/* A NULL-terminated, owned list of owned strings. */
struct strv {
	char **v;
	size_t n;
};
void strv_push(struct strv *l, const char *s);
void strv_clear(struct strv *l);
bool strv_contains(const struct strv *l, const char *s);

/* Wipes memory that held a secret before it is freed. */
void sp_secure_free(char *s);

/* Wall clock (epoch seconds) and a monotonic clock in milliseconds. */
int64_t sp_now(void);
int64_t sp_mono_ms(void);
/* The clock as a port: code that decides by time reads it from here, so that unit tests
 * drive time with a fake (tests/unit/testutil.h). */
struct sp_clock {
	int64_t (*now)(void *ctx);      /* wall clock, epoch seconds */
	int64_t (*mono_ms)(void *ctx);  /* monotonic, milliseconds */
	void *ctx;
};
/* sp_now and sp_mono_ms. */
extern const struct sp_clock sp_clock_system;
/* Condition variables whose timed waits use the monotonic clock (a wall-clock step
 * neither stretches nor cuts a wait short): init, then wait until at_mono_ms
 * (sp_mono_ms() time) at the latest. */
void sp_cond_init_monotonic(pthread_cond_t *cond);
void sp_cond_wait_until_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t at_mono_ms);

/* Levenshtein distance between a and b (insertions, deletions, substitutions, and a
 * swap of two neighbours counting as one), case-sensitive; words longer than 64
 * characters are compared on their first 64. */
size_t sp_edit_distance(const char *a, const char *b);
/* The candidate nearest to word, for "did you mean ...?": NULL when none is within
 * max(1, strlen(word) / 3) edits, or when word is one of them. Ties go to the first. */
const char *sp_nearest(const char *word, const char *const *candidates, size_t n);

/* A deadline that can move while a call waits: the sp_mono_ms() time it holds is read
 * again at every check. A leader passes its renew deadline, which a renewal extends and
 * a step-down sets to 0 (already past); NULL is no deadline. Milliseconds left (<= 0:
 * passed), INT64_MAX for none. */
static inline int64_t sp_deadline_left_ms(const _Atomic int64_t *until)
{
	if (!until)
		return INT64_MAX;
	int64_t at = atomic_load(until);
	return at == INT64_MAX ? INT64_MAX : at - sp_mono_ms();
}

/* Parses an RFC 3339 time, "2026-11-21T11:45:00Z" or with an offset ("+08:00"), into
 * epoch seconds, always > 0; 0 means invalid, and nothing else does: NULL, any other shape
 * (lowercase t or z, no zone, anything after it), a field out of range (a day the month
 * does not have; second 60, a leap second, is allowed), and times not after
 * 1970-01-01T00:00:00Z. A fraction of a second (".5") is allowed and dropped (the
 * time's second, not rounded up). Callers test for 0 only: no parsed time is negative. */
int64_t sp_parse_time(const char *iso);
/* Epoch seconds as "2026-11-21T11:45:00Z" (the form Kubernetes writes). */
void sp_format_time(int64_t t, char out[32]);

void sp_hex(const unsigned char *in, size_t n, char *out);
/* Decodes standard base64; NULL when malformed. The result is NUL-terminated and its
 * length stored in ret_len when not NULL. */
char *sp_base64_decode(const char *in, size_t *ret_len);

static inline void sp_freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(sp_freep)))

#endif
