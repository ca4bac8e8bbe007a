/* acct: the account behind each SecretId, as STS GetCallerIdentity named it (a
 * fingerprint of it: pass_account_fingerprint), remembered for the life of the process:
 * a SecretId's account never changes. A failed ask is tried again after a backoff, and
 * until then the account is unknown: the pass falls back on what the cloud shows
 * (pass_account_check), it never waits on STS. Keyed by the SecretId's SHA-256 (no
 * SecretId is kept). One table per controller, shared by its workers (thread-safe). */
#ifndef SPOTPOOL_ACCT_H
#define SPOTPOOL_ACCT_H

#include "spotpool.h"

/* SecretIds remembered at once; past it the one used longest ago goes (asked again if it
 * comes back). Rotations bring a new SecretId each time, so the table must not grow with
 * them. */
#define ACCT_MAX 4096
/* The longest fingerprint kept. */
#define ACCT_FP_MAX 32
/* After a failed ask: the next after 5 s, doubling to 5 min. */
#define ACCT_RETRY_MIN_MS 5000
#define ACCT_RETRY_MAX_MS 300000

enum acct_state {
	ACCT_KNOWN,  /* ret_fp filled */
	/* unknown: the caller asks now, then calls acct_learned or acct_failed. Callers
	 * that meet the same unknown SecretId at once each ask (at most one per worker,
	 * once): one waiting for another's answer would decide without the account. */
	ACCT_ASK,
	ACCT_WAIT,   /* unknown: a failure's backoff runs */
};

struct acct;

struct acct *acct_new(size_t max);
void acct_free(struct acct *a);
/* What is known of secret_id's account at now_ms (monotonic). */
enum acct_state acct_get(struct acct *a, const char *secret_id, int64_t now_ms, char ret_fp[ACCT_FP_MAX + 1]);
void acct_learned(struct acct *a, const char *secret_id, const char *fp);
void acct_failed(struct acct *a, const char *secret_id, int64_t now_ms);
size_t acct_count(struct acct *a);

#endif
