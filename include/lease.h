/* lease: leader election on a coordination.k8s.io/v1 Lease. A candidate takes the
 * lease only after seeing it unrenewed for a whole lease duration (measured on its
 * own monotonic clock, so clock skew between hosts cannot cause two leaders); a
 * leader that cannot renew within the renew deadline stops leading before its
 * lease can expire for the others, and one whose read shows no Lease or another
 * holder stops at once (a standby that finds no Lease leads at once). */
#ifndef SPOTPOOL_LEASE_H
#define SPOTPOOL_LEASE_H

#include "kube.h"
#include "spotpool.h"

struct lease_options {
	/* The apiserver (a port), used by the election thread alone; borrowed until
	 * lease_stop. Its requests must end within lease_request_timeout_ms, or a hung call
	 * would keep a leader believing it leads. */
	struct kube_api api;
	const struct sp_clock *clock;   /* every decision's time; NULL: sp_clock_system */
	const char *namespace;
	const char *name;
	const char *identity;
	int duration_seconds;
	int renew_deadline_seconds;
	int retry_period_seconds;
	/* Called from the election thread whenever leadership starts or stops, and after
	 * every successful acquire or renew with the monotonic time (ms) until which this
	 * process may act: the renew deadline. Acting stops then even if this thread is
	 * stuck in a request. */
	void (*on_change)(void *userdata, bool leading);
	void (*on_renew)(void *userdata, int64_t act_until_ms);
	void *userdata;
};

struct lease;

/* An identity is shorter than this: well inside what holderIdentity takes. */
#define LEASE_IDENTITY_MAX 128
/* Writes hostname (cut to 63 characters) + "_" + rnd as a UUID (8-4-4-4-12 hex) + "_" +
 * pid. The random part is client-go's: hostname and pid alone are not unique (pid 1 in
 * every container; two hostNetwork pods on a node share the hostname and would both hold
 * the Lease). The pid stays last so operators and tests can tell which process holds it. */
void lease_identity(char *out, size_t n, const char *hostname, long pid, const unsigned char rnd[16]);
/* This process's identity from gethostname(), getrandom(2) and getpid(); caller frees. */
char *lease_new_identity(void);

/* Half the renew deadline. */
long lease_request_timeout_ms(int renew_deadline_seconds);

/* Starts the election thread: it runs lease_round, then waits as long as it says. */
int lease_start(const struct lease_options *opt, struct lease **ret, struct sp_error *err);
/* Stops campaigning; a leader releases the lease so a standby takes over at once. */
void lease_stop(struct lease *l);
/* The election without a thread, for unit tests: lease_new, lease_round as often as
 * wanted, lease_free (no release). */
struct lease *lease_new(const struct lease_options *opt);
/* One round at the clock's time: read the Lease, then create, renew or take over an
 * expired one, or step down (another holder, no Lease, or the renew deadline passed
 * since the last renewal), calling on_renew and on_change. Returns the milliseconds
 * until the next round: the retry period, after a success and a failure alike (a leader
 * keeps trying until its renew deadline, a candidate every period). */
int64_t lease_round(struct lease *l);
void lease_free(struct lease *l);
bool lease_leading(struct lease *l);
/* The election loop reached the apiserver recently (a healthy standby or leader). */
bool lease_healthy(struct lease *l);

#endif
