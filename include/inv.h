/* inv: one shared view of the instances of every pool, per (region, credentials
 * identity). One poller thread per account lists every instance carrying the pool tag
 * key (one paged tag-key listing, Limit 100), so the cloud calls do not grow with the
 * number of pools; pools read their instances from the latest snapshot; a difference
 * between two snapshots wakes only the pools whose instances changed.
 *
 * Cadence. While any pool of the account is unsettled (launching, below target,
 * deleting) the account is listed every fast interval (2 s). When all are settled the
 * sweeps are spaced so the listing costs at most idle_calls_per_minute calls: a sweep
 * of N instances costs ceil(N/100) calls (N = 10,000: 100 calls a sweep, one sweep
 * every 200 s at 30 calls/min).
 *
 * Follow. Between two listings the poller follows the instances its snapshot holds by
 * ID (DescribeInstancesStatus, 100 a call, its own rate limit), spending at most
 * follow_calls_per_minute calls a minute: one call every max(60 s / budget, 5 fast
 * intervals / calls a round), so a round over N instances takes
 * max(10 s, ceil(N/100) x 60 s / budget) (N = 1,000: 10 calls in 10 s; N = 10,000 at
 * 600/min: 100 calls in 10 s). An
 * instance found gone or in another state (SHUTDOWN, TERMINATING, ...) makes a new
 * snapshot, taken at the same time as the listing it came from, and wakes its pool
 * exactly as a listing would. It does not follow when the listing comes at least as
 * often as a round would (up to 100 instances, or while unsettled). New instances are
 * found by the listing only.
 *
 * The listing goes through Tencent's lagging tag index: it is a hint. Reconcile still
 * confirms by ID what a pool recorded and the snapshot lacks (plan.h). */
#ifndef SPOTPOOL_INV_H
#define SPOTPOOL_INV_H

#include "cvm.h"
#include "pool.h"
#include "spotpool.h"

#define INV_FAST_INTERVAL_MS 2000
#define INV_IDLE_CALLS_PER_MINUTE 30
/* 10/s: a quarter of DescribeInstancesStatus's documented 40/s; 10,000 instances every
 * 10 s. */
#define INV_FOLLOW_CALLS_PER_MINUTE 600
/* A follow round takes at least this many fast intervals (10 s by default): a reclaim
 * is noticed within it at any fleet the budget covers, and 1,000 instances cost 60
 * calls a minute, not 300. */
#define INV_FOLLOW_ROUND_FAST_INTERVALS 5
/* A pool counts as unsettled this long after it last said so. */
#define INV_UNSETTLED_HOLD_MS 10000
/* A poller no pool has read for this long is stopped and freed, whatever pools it
 * thinks it has (a pool whose passes stopped without inv_forget). The controller uses
 * four resync periods (CTL_RETIRE_RESYNCS); this is the default of inv_new's callers
 * that give none: four times the default resync of 30 s. */
#define INV_RETIRE_AFTER_MS 120000

struct inv_config {
	struct cvm_config cvm;            /* how the pollers call the cloud */
	int64_t fast_interval_ms;         /* 0: INV_FAST_INTERVAL_MS */
	int idle_calls_per_minute;        /* 0: INV_IDLE_CALLS_PER_MINUTE */
	int follow_calls_per_minute;      /* 0: INV_FOLLOW_CALLS_PER_MINUTE; negative: no follow */
	/* 0: INV_RETIRE_AFTER_MS. Keep it well above the resync period: a pool read less
	 * often than this restarts its poller (and waits for a first listing) on each read,
	 * and misses the wake-ups of a listing in between. */
	int64_t retire_after_ms;
	/* Called (from a poller thread) for each pool whose instances changed between two
	 * snapshots; owner is the pool tag value "<namespace>/<name>". */
	void (*changed)(void *userdata, const char *owner);
	void *userdata;
};

struct inv;

/* Copies what cfg points to. */
struct inv *inv_new(const struct inv_config *cfg);
/* Stops and joins every poller; forgets the credentials it held. */
void inv_free(struct inv *inv);

/* Poller lifetime. A poller serves one (SecretId, region) and the pools (owner tags)
 * whose last read named that pair. It is retired (its thread told to end, its key and
 * token wiped) and then joined and freed by inv's janitor thread when:
 *  - its first listing is refused (SP_EAUTH: wrong SecretId or key; SP_ECONFIG: a
 *    region the cloud rejects): the readers waiting for it get that listing's error;
 *  - its last pool reads another pair (rotated credentials: each new SecretId moves
 *    the pool) or is forgotten (inv_forget: the pool was deleted), and no read of it is
 *    under way;
 *  - no pool has read it for retire_after_ms (a backstop: a pool whose passes stopped).
 * There is no cap: the pairs kept are the pairs the pools use, with proven credentials,
 * so one namespace cannot take slots from another. */

/* The pool owner is gone: its pollers lose it, and those left without pools end. */
void inv_forget(struct inv *inv, const char *owner);
/* Pollers not yet joined (live, or retired and ending): each has a thread; inv has one
 * more, the janitor. ret_live (may be NULL): those not retired, one per pair in use. */
size_t inv_poller_count(struct inv *inv, size_t *ret_live);

/* The instances tagged owner in the account of cred, in region, from a snapshot taken
 * after the pool's last mutation (inv_note_mutation) and not older than max_age_ms
 * (0: any age). Starts the account's poller on first use (it keeps a copy of cred,
 * until its first listing is refused), makes it owner's poller (see Poller lifetime),
 * and waits up to timeout_ms for a fresh enough snapshot. unsettled keeps the account
 * on the fast cadence. A failed listing is returned as the error of that listing.
 * A key other than the poller's (rotated, or wrong) is first proven by the pool's own
 * listing through cvm (the caller's client): a working one replaces the poller's, a
 * wrong one fails only this read. */
int inv_read(struct inv *inv, struct cvm_client *cvm, const struct cvm_credentials *cred, const char *region,
	     const char *owner, bool unsettled, int64_t max_age_ms, int64_t timeout_ms,
	     struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err);
/* The pool just launched or terminated: its next read waits for a later snapshot, and
 * the account is listed at once. */
void inv_note_mutation(struct inv *inv, const char *secret_id, const char *region, const char *owner);
/* Everything may have changed (this process starts leading: another acted meanwhile):
 * every read waits for a snapshot taken after now, and every account is listed at once. */
void inv_note_all_mutated(struct inv *inv);

/* The inventory as the controller drives it (a port: inv_api_bind binds an inv, which
 * must outlive the port; unit tests bind a fake): inv_note_all_mutated and inv_forget. */
struct inv_api {
	void (*note_all_mutated)(void *ctx);
	void (*forget)(void *ctx, const char *owner);
	void *ctx;
};
struct inv_api inv_api_bind(struct inv *inv);

/* The inventory as reconcile reads it (a port): read and note_mutation behave as
 * inv_read (with the bound cvm client) and inv_note_mutation. inv_reader_bind binds an
 * inventory and a worker's cvm client (b and what it points to are borrowed: they must
 * outlive the port); unit tests bind canned listings. */
struct inv_reader {
	int (*read)(void *ctx, const struct cvm_credentials *cred, const char *region, const char *owner,
		    bool unsettled, int64_t timeout_ms, struct pool_instance **ret_instances, size_t *ret_n,
		    struct sp_error *err);
	void (*note_mutation)(void *ctx, const char *secret_id, const char *region, const char *owner);
	void *ctx;
};
struct inv_reader_binding {
	struct inv *inv;
	struct cvm_client *cvm;
};
struct inv_reader inv_reader_bind(struct inv_reader_binding *b);

/* Pure parts, for tests. */
/* The pause before the next sweep: fast while unsettled, else spaced to the budget. */
int64_t inv_next_interval_ms(size_t n_instances, bool unsettled, int64_t fast_interval_ms,
			     int idle_calls_per_minute);
/* The pause between two follow calls (one per 100 instances) of an account whose listing
 * comes every list_interval_ms: a round spread over INV_FOLLOW_ROUND_FAST_INTERVALS fast
 * intervals, or longer if the budget needs; 0 when following is off
 * (follow_calls_per_minute <= 0), there is nothing to follow, or a round would not come
 * sooner than the listing. */
int64_t inv_follow_gap_ms(size_t n_instances, int64_t list_interval_ms, int64_t fast_interval_ms,
			  int follow_calls_per_minute);

#endif
