/* rate: pacing of cloud API calls, one token bucket per (credentials identity, region,
 * action), in a limiter object (struct rate). The limits are per account, so every
 * cloud client of a process shares one: the controller makes it and lends it to each
 * (cvm.h: struct cvm_config); a limiter knows nothing of any other.
 *
 * The identity is the SecretId, never the key. Each bucket refills at its rate and holds
 * a small burst; callers that find it empty wait their turn in arrival order (FIFO), so
 * no worker starves however many wait. A RequestLimitExceeded answer halves that
 * bucket's rate (not below 1/s, at most once a second), holds it for
 * RATE_THROTTLE_HOLD_MS, then recovers by RATE_RECOVER_FRACTION of the configured rate
 * per second. A limiter keeps at most RATE_BUCKETS_MAX buckets, evicting the least
 * recently used idle one. Every function may be called from any thread.
 *
 * Defaults are 90% of Tencent's documented limits (DescribeInstances and
 * DescribeInstancesStatus 40/s, RunInstances and TerminateInstances 10/s, other CVM
 * actions 10/s or more), leaving headroom for clock skew between us and the cloud
 * and for other tools on the same account. The burst is a tenth of a second's worth
 * (at least 1): a bucket admits at most burst + rate x T calls in any T seconds, so
 * any one-second window sees at most 1.1 x rate, within the documented limit. */
#ifndef SPOTPOOL_RATE_H
#define SPOTPOOL_RATE_H

#include "spotpool.h"

#define RATE_DEFAULT_DESCRIBE 36  /* per second; documented 40 */
#define RATE_DEFAULT_RUN 9        /* documented 10 */
#define RATE_DEFAULT_TERMINATE 9  /* documented 10 */
#define RATE_DEFAULT_OTHER 9      /* any other action; documented 10 or more */
#define RATE_MIN_PER_SECOND 1.0   /* throttling never paces below this */
#define RATE_BURST_SECONDS 0.1    /* burst = max(1, rate x this) */
#define RATE_THROTTLE_HOLD_MS 10000
#define RATE_THROTTLE_GAP_MS 1000 /* throttle reports closer than this halve only once */
#define RATE_RECOVER_FRACTION 0.1 /* of the configured rate, per second */
#define RATE_BUCKETS_MAX 4096
#define RATE_ABORT_POLL_MS 20     /* how often a waiter looks at http_aborting() */

/* Called outside the limiter's lock; userdata is the hooks' own. */
struct rate_hooks {
	/* A caller of action was granted a token after waiting seconds (0 when it did not). */
	void (*waited)(void *userdata, const char *action, double seconds);
	/* action's bucket paces at per_second now (on every grant and every throttle). */
	void (*rate)(void *userdata, const char *action, double per_second);
	void *userdata;
};

/* Tests: a clock in monotonic microseconds. */
typedef int64_t (*rate_clock_fn)(void *userdata);

struct rate_config {
	/* Calls per second; 0 keeps the default. */
	double describe_per_second;   /* DescribeInstances, DescribeInstancesStatus */
	double run_per_second;        /* RunInstances */
	double terminate_per_second;  /* TerminateInstances */
	double other_per_second;      /* every other action */
	const struct rate_hooks *hooks;  /* NULL: none; copied (userdata must outlive the limiter) */
	/* Tests: NULL is CLOCK_MONOTONIC. Waits still sleep in real time (at most
	 * RATE_ABORT_POLL_MS at once), so a test that moves its clock calls rate_wake(). */
	rate_clock_fn now_us;
	void *clock_userdata;
};

/* A limiter with no buckets yet. */
struct rate *rate_new(const struct rate_config *cfg);
/* No caller may be waiting at it, and no client that borrowed it may be used again. */
void rate_free(struct rate *r);
/* Drops the buckets at rest (as a call would, at most every 10 s): called at each
 * resync, so the buckets of SecretIds gone go even when no call comes (BENCHMARKS.md,
 * "Churn"). */
void rate_prune(struct rate *r);
/* The configured rate of action (before any throttling). */
double rate_configured(const struct rate *r, const char *action);

struct rate_grant {
	uint64_t ticket;  /* arrival order at the bucket, from 0 */
	uint64_t served;  /* grant order at the bucket; equal to ticket unless a waiter left */
	double waited;    /* seconds spent waiting */
};

/* Takes one token of the (secret_id, region, action) bucket, waiting in FIFO order
 * until there is one. After http_abort_all() fails promptly (within about
 * RATE_ABORT_POLL_MS) with SP_ETRANSIENT "aborted (shutting down)", also when a token
 * is available: no new cloud call starts during a shutdown. ret_grant may be NULL. */
int rate_acquire(struct rate *r, const char *secret_id, const char *region, const char *action,
		 struct rate_grant *ret_grant, struct sp_error *err);
/* rate_acquire that gives up once until passes (sp_deadline_left_ms(): read again at
 * every wake-up, at least every RATE_ABORT_POLL_MS; NULL = none) with SP_ETRANSIENT
 * "deadline passed ...", leaving its place in the queue to the next caller: a caller
 * whose right to act ends then (a leader's renew deadline, or its step-down) must not be
 * granted a token after it. The deadline is on the real monotonic clock, also when a
 * test clock is set. */
int rate_acquire_until(struct rate *r, const char *secret_id, const char *region, const char *action,
		       const _Atomic int64_t *until, struct rate_grant *ret_grant, struct sp_error *err);
/* The cloud answered RequestLimitExceeded for this key: halve, hold, recover. */
void rate_throttled(struct rate *r, const char *secret_id, const char *region, const char *action);

struct rate_state {
	double per_second;   /* current rate */
	double configured;   /* the rate it recovers to */
	double burst;        /* tokens it holds at most */
	double tokens;       /* tokens now */
	bool throttled;      /* below its configured rate */
	size_t waiting;      /* callers queued */
};
/* A bucket's state now; SP_ENOTFOUND when the limiter has none for the key. */
int rate_peek(struct rate *r, const char *secret_id, const char *region, const char *action,
	      struct rate_state *ret);
/* Buckets the limiter holds. */
size_t rate_buckets(struct rate *r);

/* Tests. rate_wake() wakes every waiter to look at the clock again. rate_next_wakeup()
 * is the earliest clock time at which a waiting caller gets a token (-1 when none waits
 * for a token), so a test can jump its clock there. */
void rate_wake(struct rate *r);
int64_t rate_next_wakeup(struct rate *r);

#endif
