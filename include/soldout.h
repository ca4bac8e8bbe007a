/* soldout: the memory of sold-out offerings, one per controller, shared by every pool
 * (the controller creates it and hands it to the passes).
 *
 * Keyed by (credentials identity, region, zone, instance type); the identity is the
 * SecretId only, never the key. A RunInstances answer meaning "no capacity here"
 * (cvm_code_is_sold_out) marks the offering SOLD_OUT for a TTL (default 180 s,
 * soldout_new). Once the TTL is over, exactly one caller is granted the probe
 * (PROBE_ALLOWED); the offering stays SOLD_OUT for everyone else until the prober calls
 * soldout_mark (still sold out: a new TTL), soldout_clear (it launched: available
 * again) or soldout_return_probe (the probe never reached the cloud), or until the probe lease (SOLDOUT_PROBE_LEASE_MS) expires (the prober died or
 * its outcome was unknown): then the next caller may probe. So at most one probe launch
 * per offering per TTL, across all pools.
 *
 * Intended use in a reconcile pass:
 *   for each offering: state[i] = soldout_peek(so, &key_i, now, &due[i]);   (grants nothing)
 *   the pass planner (pass.h) chooses; a probe is taken with soldout_probe first (refused:
 *   the offering counts as SOLD_OUT, choose again); a sold-out answer -> soldout_mark (and
 *   choose again); success of a probe -> soldout_clear; a probe that never reached the
 *   cloud -> soldout_return_probe.
 *
 * Thread-safe (one mutex), bounded (SOLDOUT_ENTRIES_MAX entries, the oldest mark evicted
 * first). Times are caller-supplied monotonic milliseconds (sp_mono_ms()), so tests
 * inject the clock. */
#ifndef SPOTPOOL_SOLDOUT_H
#define SPOTPOOL_SOLDOUT_H

#include "offer.h"
#include "spotpool.h"

#define SOLDOUT_ENTRIES_MAX 4096
#define SOLDOUT_TTL_DEFAULT_MS (180 * 1000)
/* How long a granted probe keeps the offering SOLD_OUT for others without an answer. */
#define SOLDOUT_PROBE_LEASE_MS (60 * 1000)

/* All borrowed; NULL is read as "". */
struct soldout_key {
	const char *secret_id;  /* credentials identity: the SecretId, never the SecretKey */
	const char *region;
	const char *zone;
	const char *instance_type;
};

struct soldout;

/* An empty table; ttl_ms <= 0: SOLDOUT_TTL_DEFAULT_MS. */
struct soldout *soldout_new(int64_t ttl_ms);
void soldout_free(struct soldout *s);
/* The TTL soldout_new was given (it does not change). */
int64_t soldout_ttl(struct soldout *s);

/* The offering answered sold out at now_ms: SOLD_OUT until now_ms + ttl_ms (ttl_ms <= 0:
 * the configured TTL). Ends any probe lease on it. */
void soldout_mark(struct soldout *s, const struct soldout_key *k, int64_t now_ms, int64_t ttl_ms);
/* The offering launched: forgotten (AVAILABLE). */
void soldout_clear(struct soldout *s, const struct soldout_key *k);
/* The probe held on the offering ends without an answer (it never reached the cloud):
 * the next caller may probe at once. */
void soldout_return_probe(struct soldout *s, const struct soldout_key *k);

/* The offering's state at now_ms without taking anything: AVAILABLE (unknown to the
 * table), SOLD_OUT, or PROBE_ALLOWED (a probe is due and nobody holds it). When not
 * AVAILABLE and ret_probe_at_ms is not NULL, it receives when the next probe is due
 * (now_ms or earlier when it is due now; the lease's end while someone probes). */
enum offer_state soldout_peek(struct soldout *s, const struct soldout_key *k, int64_t now_ms, int64_t *ret_probe_at_ms);
/* As soldout_peek, but PROBE_ALLOWED is granted: returned to exactly one caller, who then
 * holds the probe lease (every other caller sees SOLD_OUT until mark, clear, or the
 * lease's end). */
enum offer_state soldout_state(struct soldout *s, const struct soldout_key *k, int64_t now_ms, int64_t *ret_probe_at_ms);
/* Takes the probe of an offering soldout_peek called PROBE_ALLOWED: true for exactly one
 * caller (soldout_state(...) == OFFER_PROBE_ALLOWED). */
bool soldout_probe(struct soldout *s, const struct soldout_key *k, int64_t now_ms);

/* Offerings currently SOLD_OUT at now_ms (within their TTL, or being probed): for the
 * spotpool_offerings_unavailable gauge. */
size_t soldout_unavailable(struct soldout *s, int64_t now_ms);
/* Entries held (sold out, or due for a probe). */
size_t soldout_size(struct soldout *s);

#endif
