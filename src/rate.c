/* rate: a limiter's token buckets per (SecretId, region, action) behind its mutex, FIFO
 * waiters, multiplicative decrease on RequestLimitExceeded and additive recovery. */
#include "rate.h"
#include "http.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define RATE_CHAINS 1024  /* hash chains; a power of two */
/* How often, and after how long unused, buckets at rest are dropped. */
#define RATE_PRUNE_EVERY_US (10 * 1000000LL)

/* A caller waiting at a bucket; lives on its stack while it is queued. */
struct waiter {
	uint64_t ticket;
	struct waiter *next;
};

/* A key's parts are kept truncated, with a hash of the whole: two keys that differ only
 * beyond the kept length are still told apart (up to a 64-bit hash collision). */
struct key {
	uint64_t hash;
	char secret_id[80];
	char region[48];
	char action[64];
};

struct bucket {
	struct bucket *next;  /* in its hash chain */
	struct key key;
	double configured;    /* calls per second it recovers to */
	double per_second;    /* current rate */
	double tokens;
	int64_t last_us;      /* tokens and per_second are as of this time */
	int64_t hold_until_us;
	int64_t halved_us;    /* last halving; INT64_MIN: never */
	int64_t used_us;      /* last grant, for eviction */
	int64_t need_at_us;   /* when the head waiter gets its token; -1 when none waits for one */
	uint64_t next_ticket, served;
	struct waiter *head, *tail;
	size_t waiting;
	pthread_cond_t cond;
};

/* By limit_of(): describe, run, terminate, other. */
static const double default_limits[4] = {RATE_DEFAULT_DESCRIBE, RATE_DEFAULT_RUN, RATE_DEFAULT_TERMINATE,
					 RATE_DEFAULT_OTHER};

struct rate {
	pthread_mutex_t lock;
	struct bucket *chains[RATE_CHAINS];
	size_t n_buckets;
	int64_t pruned_us;  /* last prune_at_rest */
	double limits[4];  /* by limit_of(); set once by rate_new */
	struct rate_hooks hooks;
	rate_clock_fn clock_fn;
	void *clock_userdata;
};

static int64_t real_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_us(const struct rate *r)
{
	return r->clock_fn ? r->clock_fn(r->clock_userdata) : real_now_us();
}

/* Index into struct rate's limits[] of an action. */
static int limit_of(const char *action)
{
	if (strcmp(action, "DescribeInstances") == 0 || strcmp(action, "DescribeInstancesStatus") == 0)
		return 0;
	if (strcmp(action, "RunInstances") == 0)
		return 1;
	if (strcmp(action, "TerminateInstances") == 0)
		return 2;
	return 3;
}

static double burst_of(double per_second)
{
	return fmax(1.0, per_second * RATE_BURST_SECONDS);
}

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (h ^ 0xff) * 1099511628211ULL;  /* a separator, so ("ab", "c") != ("a", "bc") */
}

static void make_key(struct key *k, const char *secret_id, const char *region, const char *action)
{
	secret_id = secret_id ? secret_id : "";
	region = region ? region : "";
	action = action ? action : "";
	*k = (struct key){.hash = fnv(fnv(fnv(14695981039346656037ULL, secret_id), region), action)};
	snprintf(k->secret_id, sizeof(k->secret_id), "%s", secret_id);
	snprintf(k->region, sizeof(k->region), "%s", region);
	snprintf(k->action, sizeof(k->action), "%s", action);
}

static bool key_equal(const struct key *a, const struct key *b)
{
	return a->hash == b->hash && strcmp(a->secret_id, b->secret_id) == 0 &&
	       strcmp(a->region, b->region) == 0 && strcmp(a->action, b->action) == 0;
}

static struct bucket **chain_of(struct rate *r, const struct key *k)
{
	return &r->chains[k->hash & (RATE_CHAINS - 1)];
}

static struct bucket *bucket_find(struct rate *r, const struct key *k)
{
	for (struct bucket *b = *chain_of(r, k); b; b = b->next)
		if (key_equal(&b->key, k))
			return b;
	return NULL;
}

static void bucket_free(struct bucket *b)
{
	pthread_cond_destroy(&b->cond);
	free(b);
}

/* Drops the least recently used bucket nobody waits at; false when every one is busy. */
static bool evict_one(struct rate *r)
{
	struct bucket **victim = NULL;
	for (size_t i = 0; i < RATE_CHAINS; i++)
		for (struct bucket **p = &r->chains[i]; *p; p = &(*p)->next)
			if (!(*p)->waiting && (!victim || (*p)->used_us < (*victim)->used_us))
				victim = p;
	if (!victim)
		return false;
	struct bucket *b = *victim;
	*victim = b->next;
	bucket_free(b);
	r->n_buckets--;
	return true;
}

static void advance(struct bucket *b, int64_t now);

/* Whether b, brought up to now, is what bucket_get would create afresh: nobody waits,
 * the rate is back to the configured one and no longer held, a throttle report would
 * halve it, the tokens are full. Unused for RATE_PRUNE_EVERY_US, so a caller's grants
 * keep their order. */
static bool at_rest(struct bucket *b, int64_t now)
{
	if (b->waiting || now - b->used_us < RATE_PRUNE_EVERY_US)
		return false;
	advance(b, now);
	return b->per_second >= b->configured && b->hold_until_us <= now &&
	       (b->halved_us == INT64_MIN || now - b->halved_us >= RATE_THROTTLE_GAP_MS * 1000LL) &&
	       b->tokens >= burst_of(b->configured);
}

/* Drops the buckets at rest, at most every RATE_PRUNE_EVERY_US: the keys of pools gone
 * (each SecretId has its own) would otherwise stay up to RATE_BUCKETS_MAX. Under the
 * lock. */
static void prune_at_rest(struct rate *r, int64_t now)
{
	if (now - r->pruned_us < RATE_PRUNE_EVERY_US)
		return;
	r->pruned_us = now;
	for (size_t i = 0; i < RATE_CHAINS; i++)
		for (struct bucket **p = &r->chains[i]; *p;) {
			struct bucket *b = *p;
			if (at_rest(b, now)) {
				*p = b->next;
				bucket_free(b);
				r->n_buckets--;
			} else {
				p = &b->next;
			}
		}
}

void rate_prune(struct rate *r)
{
	pthread_mutex_lock(&r->lock);
	prune_at_rest(r, now_us(r));
	pthread_mutex_unlock(&r->lock);
}

/* The key's bucket, created full if new; NULL when the limiter is full of busy ones. */
static struct bucket *bucket_get(struct rate *r, const struct key *k, int64_t now)
{
	prune_at_rest(r, now);
	struct bucket *b = bucket_find(r, k);
	if (b)
		return b;
	if (r->n_buckets >= RATE_BUCKETS_MAX && !evict_one(r))
		return NULL;
	double limit = r->limits[limit_of(k->action)];
	b = xcalloc(1, sizeof(*b));
	*b = (struct bucket){
		.key = *k, .configured = limit, .per_second = limit, .tokens = burst_of(limit), .last_us = now,
		.hold_until_us = now, .halved_us = INT64_MIN, .used_us = now, .need_at_us = -1,
	};
	sp_cond_init_monotonic(&b->cond);
	struct bucket **chain = chain_of(r, k);
	b->next = *chain;
	*chain = b;
	r->n_buckets++;
	return b;
}

/* Brings tokens and rate up to now: the rate holds until hold_until_us, then climbs by
 * RATE_RECOVER_FRACTION of the configured rate per second until it is back there. */
static void advance(struct bucket *b, int64_t now)
{
	if (now <= b->last_us)
		return;
	double t = 0, end = (double)(now - b->last_us) / 1e6;  /* seconds since last_us */
	double r = b->per_second, tokens = b->tokens;
	double hold = (double)(b->hold_until_us - b->last_us) / 1e6;
	if (hold > 0) {
		t = fmin(end, hold);
		tokens += r * t;
	}
	if (t < end && r < b->configured) {
		double slope = RATE_RECOVER_FRACTION * b->configured;  /* per second, per second */
		double full = t + (b->configured - r) / slope;
		double e = fmin(end, full);
		double r2 = e >= full ? b->configured : fmin(b->configured, r + slope * (e - t));
		tokens += (r + r2) / 2 * (e - t);
		r = r2;
		t = e;
	}
	tokens += r * (end - t);
	b->per_second = r;
	b->tokens = fmin(tokens, burst_of(r));
	b->last_us = now;
}

static void dequeue(struct bucket *b, struct waiter *w)
{
	struct waiter *prev = NULL;
	for (struct waiter *p = b->head; p; prev = p, p = p->next) {
		if (p != w)
			continue;
		if (prev)
			prev->next = p->next;
		else
			b->head = p->next;
		if (b->tail == p)
			b->tail = prev;
		b->waiting--;
		return;
	}
}

/* Sleeps on b's condition (under r's lock) for at most wait_us of real time. */
static void timed_wait(struct rate *r, struct bucket *b, int64_t wait_us)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t ns = ts.tv_nsec + wait_us * 1000;
	ts.tv_sec += ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	pthread_cond_timedwait(&b->cond, &r->lock, &ts);
}

static void call_hooks(const struct rate_hooks *h, const char *action, double waited, double per_second,
		       bool granted)
{
	if (granted && h->waited)
		h->waited(h->userdata, action, waited);
	if (h->rate)
		h->rate(h->userdata, action, per_second);
}

int rate_acquire(struct rate *r, const char *secret_id, const char *region, const char *action,
		 struct rate_grant *ret_grant, struct sp_error *err)
{
	return rate_acquire_until(r, secret_id, region, action, NULL, ret_grant, err);
}

int rate_acquire_until(struct rate *r, const char *secret_id, const char *region, const char *action,
		       const _Atomic int64_t *until, struct rate_grant *ret_grant, struct sp_error *err)
{
	struct key k;
	make_key(&k, secret_id, region, action);
	if (http_aborting())
		return sp_fail(err, SP_ETRANSIENT, "%s: aborted (shutting down)", k.action);
	if (sp_deadline_left_ms(until) <= 0)
		return sp_fail(err, SP_ETRANSIENT, "%s: deadline passed before the rate limit was asked",
			       k.action);
	pthread_mutex_lock(&r->lock);
	int64_t start = now_us(r), now = start;
	struct bucket *b = bucket_get(r, &k, now);
	if (!b) {
		pthread_mutex_unlock(&r->lock);
		return sp_fail(err, SP_ETOOBIG, "%s: more than %d rate limit buckets are in use", k.action,
			       RATE_BUCKETS_MAX);
	}
	struct waiter me = {.ticket = b->next_ticket++};
	if (b->tail)
		b->tail->next = &me;
	else
		b->head = &me;
	b->tail = &me;
	b->waiting++;
	bool aborted = false, expired = false;
	for (;;) {
		if ((aborted = http_aborting()))
			break;
		/* The deadline is on the real monotonic clock (the caller's, e.g. the end of
		 * leadership), not the test clock: a token granted past it would start a call
		 * the caller may no longer make. */
		int64_t left_ms = sp_deadline_left_ms(until);
		if ((expired = left_ms <= 0))
			break;
		now = now_us(r);
		advance(b, now);
		if (b->head == &me && b->tokens >= 1)
			break;
		int64_t wait_us = RATE_ABORT_POLL_MS * 1000;
		if (b->head == &me) {
			double need = ceil((1 - b->tokens) / b->per_second * 1e6);
			int64_t need_us = need < 1 ? 1 : need > 3.6e9 ? (int64_t)3.6e9 : (int64_t)need;
			b->need_at_us = now + need_us;
			wait_us = need_us < wait_us ? need_us : wait_us;
		}
		if (left_ms < wait_us / 1000)
			wait_us = left_ms * 1000;
		timed_wait(r, b, wait_us);
	}
	if (b->head == &me)
		b->need_at_us = -1;
	dequeue(b, &me);
	struct rate_grant g = {.ticket = me.ticket, .waited = (double)(now - start) / 1e6};
	if (!aborted && !expired) {
		b->tokens -= 1;
		g.served = b->served++;
		b->used_us = now;
	}
	pthread_cond_broadcast(&b->cond);
	double per_second = b->per_second;
	pthread_mutex_unlock(&r->lock);
	if (aborted)
		return sp_fail(err, SP_ETRANSIENT, "%s: aborted (shutting down) while waiting for the rate limit",
			       k.action);
	if (expired)
		return sp_fail(err, SP_ETRANSIENT, "%s: deadline passed while waiting for the rate limit "
			       "(%.1f s)", k.action, g.waited);
	call_hooks(&r->hooks, k.action, g.waited, per_second, true);
	if (ret_grant)
		*ret_grant = g;
	return 0;
}

void rate_throttled(struct rate *r, const char *secret_id, const char *region, const char *action)
{
	struct key k;
	make_key(&k, secret_id, region, action);
	pthread_mutex_lock(&r->lock);
	int64_t now = now_us(r);
	struct bucket *b = bucket_get(r, &k, now);
	if (!b) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	advance(b, now);
	/* Calls in flight when the first answer came are refused too: one halving for them. */
	if (b->halved_us == INT64_MIN || now - b->halved_us >= RATE_THROTTLE_GAP_MS * 1000LL) {
		b->per_second = fmax(fmin(RATE_MIN_PER_SECOND, b->configured), b->per_second / 2);
		b->tokens = 0;
		b->halved_us = now;
	}
	b->hold_until_us = now + RATE_THROTTLE_HOLD_MS * 1000LL;
	double per_second = b->per_second;
	pthread_mutex_unlock(&r->lock);
	call_hooks(&r->hooks, k.action, 0, per_second, false);
}

struct rate *rate_new(const struct rate_config *cfg)
{
	struct rate *r = xcalloc(1, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	const double want[4] = {cfg->describe_per_second, cfg->run_per_second, cfg->terminate_per_second,
				cfg->other_per_second};
	for (int i = 0; i < 4; i++)
		r->limits[i] = want[i] > 0 ? want[i] : default_limits[i];
	if (cfg->hooks)
		r->hooks = *cfg->hooks;
	r->clock_fn = cfg->now_us;
	r->clock_userdata = cfg->clock_userdata;
	return r;
}

void rate_free(struct rate *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < RATE_CHAINS; i++) {
		while (r->chains[i]) {
			struct bucket *b = r->chains[i];
			r->chains[i] = b->next;
			bucket_free(b);
		}
	}
	pthread_mutex_destroy(&r->lock);
	free(r);
}

double rate_configured(const struct rate *r, const char *action)
{
	return r->limits[limit_of(action ? action : "")];
}

int rate_peek(struct rate *r, const char *secret_id, const char *region, const char *action,
	      struct rate_state *ret)
{
	struct key k;
	make_key(&k, secret_id, region, action);
	pthread_mutex_lock(&r->lock);
	struct bucket *b = bucket_find(r, &k);
	if (b) {
		advance(b, now_us(r));
		*ret = (struct rate_state){
			.per_second = b->per_second, .configured = b->configured, .burst = burst_of(b->per_second),
			.tokens = b->tokens, .throttled = b->per_second < b->configured, .waiting = b->waiting,
		};
	}
	pthread_mutex_unlock(&r->lock);
	return b ? 0 : SP_ENOTFOUND;
}

size_t rate_buckets(struct rate *r)
{
	pthread_mutex_lock(&r->lock);
	size_t n = r->n_buckets;
	pthread_mutex_unlock(&r->lock);
	return n;
}

void rate_wake(struct rate *r)
{
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < RATE_CHAINS; i++)
		for (struct bucket *b = r->chains[i]; b; b = b->next)
			pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&r->lock);
}

int64_t rate_next_wakeup(struct rate *r)
{
	int64_t next = -1;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < RATE_CHAINS; i++)
		for (struct bucket *b = r->chains[i]; b; b = b->next)
			if (b->need_at_us >= 0 && (next < 0 || b->need_at_us < next))
				next = b->need_at_us;
	pthread_mutex_unlock(&r->lock);
	return next;
}
