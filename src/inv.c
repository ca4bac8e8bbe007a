/* inv: shared per-account instance inventory; see inv.h. */
#include "inv.h"
#include "creds.h"
#include "http.h"
#include "log.h"
#include "snap.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Sweeps asked for at once (pokes after launches) start at least this far apart, so a
 * burst of launches costs one sweep, not one each. */
#define INV_MIN_GAP_MS 500
/* Pools whose last mutation is remembered; older entries are dropped (a sweep has
 * long been taken since). */
#define INV_MUTATION_MEMORY_MS 60000

struct mutation {
	char *owner;
	int64_t at_ms;
};

struct poller {
	struct inv *inv;
	char *region;
	struct creds creds;
	struct cvm_client *cvm;
	pthread_t thread;
	struct snap *snap;            /* NULL until the first listing worked */
	int64_t taken_ms;             /* when the listing of snap started (monotonic) */
	int last_error;
	struct sp_error last_err;
	int64_t error_ms;             /* when the failed listing started */
	int64_t unsettled_until_ms;
	int64_t next_due_ms;
	int64_t last_sweep_ms;
	int64_t last_follow_ms;       /* when the last follow call started (monotonic) */
	size_t follow_at;             /* the next record of snap to follow */
	bool follow_failing;          /* the last follow call failed (logged once) */
	bool poke;
	struct mutation *muts;
	size_t n_muts;
	int64_t last_read_ms;         /* when a pool last asked for it (monotonic) */
	/* The pools (owner tags) whose last read came here. A pool that reads another pair
	 * (rotated credentials) or is deleted (inv_forget) leaves; the last one to leave
	 * retires the poller at once. */
	struct strv owners;
	/* Readers between an unlock and a relock: the janitor neither retires nor frees a
	 * poller someone is using. */
	int users;
	bool retired;                 /* off the list: its thread leaves its loop */
	bool done;                    /* its thread left its loop: joining is quick */
};

struct inv {
	struct inv_config cfg;
	/* Pollers start later than inv_new's caller keeps its strings: copies. */
	char *endpoint, *user_agent;
	pthread_mutex_t lock;
	pthread_cond_t cond;          /* a poller finished a sweep, or was poked */
	/* No cap: a poller lives while pools read it, so the pairs are bounded by the pools
	 * (a cap let one namespace's pairs lock out every other's). */
	struct poller **pollers;      /* found by (SecretId, region) */
	size_t n_pollers, cap_pollers;
	/* Retired pollers not freed yet: their threads may still be ending a sweep, or a
	 * reader still looks at them. */
	struct poller **retired;
	size_t n_retired, cap_retired;
	size_t n_reaping;             /* taken off retired by the janitor, being freed */
	/* The janitor retires pollers no pool uses (no owner left, or unread for
	 * retire_after_ms) and joins and frees retired ones, outside the lock (a join
	 * waits for a sweep to end). */
	pthread_t janitor;
	pthread_cond_t janitor_cond;  /* a poller was retired, finished, or let go */
	/* No read is served from a snapshot taken before this (inv_note_all_mutated): what
	 * another process did while this one was not leading is in none of them. */
	int64_t fresh_after_ms;
	bool stopping;
};

int64_t inv_next_interval_ms(size_t n_instances, bool unsettled, int64_t fast_interval_ms,
			     int idle_calls_per_minute)
{
	if (unsettled || idle_calls_per_minute <= 0)
		return fast_interval_ms;
	int64_t pages = n_instances ? (int64_t)((n_instances + CVM_PAGE_LIMIT - 1) / CVM_PAGE_LIMIT) : 1;
	int64_t spaced = pages * 60000 / idle_calls_per_minute;
	return spaced > fast_interval_ms ? spaced : fast_interval_ms;
}

int64_t inv_follow_gap_ms(size_t n_instances, int64_t list_interval_ms, int64_t fast_interval_ms,
			  int follow_calls_per_minute)
{
	if (follow_calls_per_minute <= 0 || n_instances == 0)
		return 0;
	int64_t calls = (int64_t)((n_instances + CVM_DESCRIBE_IDS_BATCH - 1) / CVM_DESCRIBE_IDS_BATCH);
	int64_t gap = (60000 + follow_calls_per_minute - 1) / follow_calls_per_minute;
	int64_t round = INV_FOLLOW_ROUND_FAST_INTERVALS * fast_interval_ms;
	int64_t spread = (round + calls - 1) / calls;
	if (spread > gap)
		gap = spread;
	return gap * calls < list_interval_ms ? gap : 0;
}

static int64_t mutation_at(const struct poller *p, const char *owner)
{
	for (size_t i = 0; i < p->n_muts; i++)
		if (strcmp(p->muts[i].owner, owner) == 0)
			return p->muts[i].at_ms;
	return 0;
}

static void forget_old_mutations(struct poller *p, int64_t now)
{
	for (size_t i = 0; i < p->n_muts;) {
		if (now - p->muts[i].at_ms > INV_MUTATION_MEMORY_MS) {
			free(p->muts[i].owner);
			p->muts[i] = p->muts[--p->n_muts];
		} else {
			i++;
		}
	}
}

static void timed_wait(struct inv *inv, int64_t ms)
{
	sp_cond_wait_until_ms(&inv->cond, &inv->lock, sp_mono_ms() + ms);
}

static void take(void *userdata, const struct pool_instance *inst)
{
	snap_add(userdata, inst);
}

/* The poller's key and token, registered for redaction in its own name (no namespace:
 * no pool's) while it holds them: the pool it took them from may be deleted first, and
 * its deletion forgets what the pool registered (log_forget_owner). */
static void poller_take_creds(struct poller *p, const struct cvm_credentials *cred)
{
	creds_set(&p->creds, cred->secret_id, cred->secret_key, cred->token, "pool");
	char *name = xasprintf("%s:%s", p->creds.secret_id, p->region);
	log_replace_secret("", name, "secretKey", cred->secret_key);
	log_replace_secret("", name, "token", cred->token);
	free(name);
}

/* Wipes p's key and token and lets go of their redaction (the SecretId stays for log
 * lines until the janitor frees p). */
static void poller_drop_creds(struct poller *p)
{
	sp_secure_free(p->creds.secret_key);
	sp_secure_free(p->creds.token);
	p->creds.secret_key = p->creds.token = NULL;
	char *name = xasprintf("%s:%s", p->creds.secret_id, p->region);
	log_forget_owner("", name);
	free(name);
}

/* Takes p off the list (a later read starts a new one), tells its thread to end and
 * wipes its key and token at once (a sweep under way signs with its own copies; the
 * SecretId stays for log lines until the janitor frees p). Called with the lock held. */
static void retire(struct inv *inv, struct poller *p)
{
	for (size_t i = 0; i < inv->n_pollers; i++)
		if (inv->pollers[i] == p) {
			inv->pollers[i] = inv->pollers[--inv->n_pollers];
			inv->pollers = sp_vec_fit(inv->pollers, inv->n_pollers, &inv->cap_pollers,
						  sizeof(*inv->pollers));
			break;
		}
	inv->retired = sp_vec_fit(inv->retired, inv->n_retired + 1, &inv->cap_retired, sizeof(*inv->retired));
	inv->retired[inv->n_retired++] = p;
	p->retired = true;
	poller_drop_creds(p);
	pthread_cond_broadcast(&inv->cond);
	pthread_cond_signal(&inv->janitor_cond);
}

/* Whether no pool uses p any more: none reads it now, and its pools have moved to other
 * credentials or been deleted. Called with the lock held. */
static bool unused(const struct poller *p)
{
	return p->users == 0 && p->owners.n == 0;
}

/* Drops owner from p's pools; true when it was there. */
static bool drop_owner(struct poller *p, const char *owner)
{
	for (size_t i = 0; i < p->owners.n; i++)
		if (strcmp(p->owners.v[i], owner) == 0) {
			free(p->owners.v[i]);
			p->owners.v[i] = p->owners.v[--p->owners.n];
			p->owners.v[p->owners.n] = NULL;
			return true;
		}
	return false;
}

/* owner's reads go to keep from now on (NULL: the pool is gone): every other poller it
 * used loses it, and one left without pools is retired. Called with the lock held. */
static void move_owner(struct inv *inv, const char *owner, struct poller *keep)
{
	for (size_t i = 0; i < inv->n_pollers;) {
		struct poller *q = inv->pollers[i];
		if (q != keep && drop_owner(q, owner) && unused(q)) {
			log_info("inventory %s (%s): no pool uses it any more, poller stopped", q->region,
				 q->creds.secret_id);
			retire(inv, q);  /* moves the last one into slot i */
			continue;
		}
		i++;
	}
	if (keep && !strv_contains(&keep->owners, owner))
		strv_push(&keep->owners, owner);
}

/* One sweep, called without the lock held. */
static void sweep(struct poller *p, const struct cvm_credentials *view)
{
	struct inv *inv = p->inv;
	struct snap *list = snap_new();
	struct sp_error err = {0};
	int64_t started = sp_mono_ms();
	int r = cvm_list_tagged(p->cvm, view, p->region, POOL_TAG_KEY, take, list, &err);
	if (r == 0)
		snap_seal(list);
	/* The listing before this one, compared after the unlock: changed takes other
	 * modules' locks (src/CONCURRENCY.md). */
	struct snap *before = NULL, *cur = NULL;
	pthread_mutex_lock(&inv->lock);
	if (r == 0) {
		before = p->snap;
		cur = list;
		log_debug("inventory %s (%s): %zu instances listed, %zu bytes kept", p->region, p->creds.secret_id,
			  snap_count(list), snap_bytes(list));
		p->snap = list;
		list = NULL;
		p->taken_ms = started;
		p->last_error = 0;
	} else {
		p->last_error = r;
		p->last_err = err;
		p->error_ms = started;
		/* Not a warning when our own shutdown aborted it (SIGTERM, Ctrl-C). */
		log_msg(http_aborting() ? LOG_LVL_DEBUG : LOG_LVL_WARN, "inventory %s (%s): listing failed: %s",
			p->region, p->creds.secret_id, err.msg);
		/* Credentials or region never proven: a mistyped SecretId, key or region
		 * keeps neither a thread nor the key. Readers waiting on it get this error. */
		if ((r == SP_EAUTH || r == SP_ECONFIG) && !p->snap && !p->retired) {
			log_info("inventory %s (%s): first listing refused, poller stopped", p->region,
				 p->creds.secret_id);
			retire(inv, p);
		}
	}
	int64_t now = sp_mono_ms();
	bool fast = r < 0 || now < p->unsettled_until_ms;
	p->next_due_ms = now + inv_next_interval_ms(snap_count(p->snap), fast, inv->cfg.fast_interval_ms,
						    inv->cfg.idle_calls_per_minute);
	forget_old_mutations(p, now);
	pthread_cond_broadcast(&inv->cond);
	pthread_mutex_unlock(&inv->lock);
	snap_free(list);
	/* Both stay valid: snapshots are read-only once sealed, and only this thread
	 * replaces or frees p->snap (the janitor after it has ended). */
	if (before && inv->cfg.changed)
		snap_diff(before, cur, inv->cfg.changed, inv->cfg.userdata);
	snap_free(before);
}

/* One follow call over the next (up to) 100 instances of the snapshot, called without
 * the lock held. */
static void follow(struct poller *p, const struct cvm_credentials *view)
{
	struct inv *inv = p->inv;
	/* Only this thread replaces p->snap: reading it unlocked is safe here. */
	size_t n = snap_count(p->snap);
	size_t from = p->follow_at < n ? p->follow_at : 0;
	size_t to = from + CVM_DESCRIBE_IDS_BATCH < n ? from + CVM_DESCRIBE_IDS_BATCH : n;
	struct strv ids = {0};
	for (size_t i = from; i < to; i++)
		strv_push(&ids, snap_id_at(p->snap, i));
	struct pool_instance_status *found = NULL;
	size_t n_found = 0;
	struct sp_error err = {0};
	int r = cvm_describe_status(p->cvm, view, p->region, &ids, &found, &n_found, &err);
	strv_clear(&ids);
	struct snap *cur = r == 0 ? snap_follow(p->snap, from, to, found, n_found) : NULL;
	free(found);
	struct snap *before = NULL;
	pthread_mutex_lock(&inv->lock);
	if (r < 0 && !p->follow_failing)
		log_msg(http_aborting() ? LOG_LVL_DEBUG : LOG_LVL_WARN,
			"inventory %s (%s): following by ID failed (the listing goes on): %s", p->region,
			p->creds.secret_id, err.msg);
	p->follow_failing = r < 0;
	if (cur) {
		log_debug("inventory %s (%s): following by ID: instances %zu-%zu changed", p->region,
			  p->creds.secret_id, from, to);
		before = p->snap;
		p->snap = cur;  /* taken_ms stays the listing's: it shows no newer launch */
		pthread_cond_broadcast(&inv->cond);
	}
	p->follow_at = to;
	pthread_mutex_unlock(&inv->lock);
	if (before && inv->cfg.changed)
		snap_diff(before, cur, inv->cfg.changed, inv->cfg.userdata);
	snap_free(before);
}

/* When the next follow call is due (INT64_MAX: none), with the lock held. */
static int64_t follow_due(const struct inv *inv, const struct poller *p, int64_t now)
{
	size_t n = snap_count(p->snap);
	int64_t list = inv_next_interval_ms(n, p->last_error || now < p->unsettled_until_ms,
					    inv->cfg.fast_interval_ms, inv->cfg.idle_calls_per_minute);
	int64_t gap = inv_follow_gap_ms(n, list, inv->cfg.fast_interval_ms, inv->cfg.follow_calls_per_minute);
	return gap ? p->last_follow_ms + gap : INT64_MAX;
}

static void *poller_main(void *arg)
{
	struct poller *p = arg;
	struct inv *inv = p->inv;
	pthread_mutex_lock(&inv->lock);
	while (!inv->stopping && !p->retired) {
		int64_t now = sp_mono_ms();
		int64_t due = p->poke ? p->last_sweep_ms + INV_MIN_GAP_MS : p->next_due_ms;
		int64_t follow_at = follow_due(inv, p, now);
		if (now < due && now < follow_at) {
			timed_wait(inv, (due < follow_at ? due : follow_at) - now);
			continue;
		}
		bool listing = now >= due;
		if (listing) {
			p->poke = false;
			p->last_sweep_ms = now;
		} else {
			p->last_follow_ms = now;
		}
		/* Copies: a reader may replace rotated credentials while the call runs. */
		char *id = xstrdup(p->creds.secret_id), *key = xstrdup(p->creds.secret_key);
		char *token = p->creds.token ? xstrdup(p->creds.token) : NULL;
		pthread_mutex_unlock(&inv->lock);
		struct cvm_credentials view = {.secret_id = id, .secret_key = key, .token = token};
		if (listing)
			sweep(p, &view);
		else
			follow(p, &view);
		free(id);
		sp_secure_free(key);
		sp_secure_free(token);
		pthread_mutex_lock(&inv->lock);
	}
	p->done = true;
	pthread_cond_signal(&inv->janitor_cond);
	pthread_mutex_unlock(&inv->lock);
	return NULL;
}

static void poller_free(struct poller *p)
{
	free(p->region);
	creds_clear(&p->creds);
	strv_clear(&p->owners);
	cvm_client_free(p->cvm);
	snap_free(p->snap);
	for (size_t i = 0; i < p->n_muts; i++)
		free(p->muts[i].owner);
	free(p->muts);
	free(p);
}

static void *janitor_main(void *arg)
{
	struct inv *inv = arg;
	pthread_mutex_lock(&inv->lock);
	while (!inv->stopping) {
		int64_t now = sp_mono_ms();
		int64_t next = now + inv->cfg.retire_after_ms;
		for (size_t i = 0; i < inv->n_pollers;) {
			struct poller *p = inv->pollers[i];
			int64_t due = p->last_read_ms + inv->cfg.retire_after_ms;
			if (p->users > 0) {  /* let_go restarts its idle time */
				i++;
				continue;
			}
			if (unused(p) || now >= due) {
				log_info("inventory %s (%s): %s %lld s, poller stopped", p->region, p->creds.secret_id,
					 unused(p) ? "no pool uses it; last read" : "not read for",
					 (long long)((now - p->last_read_ms) / 1000));
				retire(inv, p);  /* moves the last one into slot i */
				continue;
			}
			if (due < next)
				next = due;
			i++;
		}
		/* Ended and let go: joined and freed outside the lock. */
		struct poller **gone = NULL;
		size_t n_gone = 0;
		for (size_t i = 0; i < inv->n_retired;) {
			struct poller *p = inv->retired[i];
			if (p->done && p->users == 0) {
				gone = xrealloc(gone, (n_gone + 1) * sizeof(*gone));
				gone[n_gone++] = p;
				inv->retired[i] = inv->retired[--inv->n_retired];
			} else {
				i++;
			}
		}
		inv->retired = sp_vec_fit(inv->retired, inv->n_retired, &inv->cap_retired, sizeof(*inv->retired));
		if (!n_gone) {
			sp_cond_wait_until_ms(&inv->janitor_cond, &inv->lock, next);
			continue;
		}
		inv->n_reaping += n_gone;
		pthread_mutex_unlock(&inv->lock);
		for (size_t i = 0; i < n_gone; i++) {
			pthread_join(gone[i]->thread, NULL);
			poller_free(gone[i]);
		}
		free(gone);
		pthread_mutex_lock(&inv->lock);
		inv->n_reaping -= n_gone;
	}
	pthread_mutex_unlock(&inv->lock);
	return NULL;
}

struct inv *inv_new(const struct inv_config *cfg)
{
	struct inv *inv = xcalloc(1, sizeof(*inv));
	inv->cfg = *cfg;
	inv->endpoint = cfg->cvm.endpoint ? xstrdup(cfg->cvm.endpoint) : NULL;
	inv->user_agent = cfg->cvm.user_agent ? xstrdup(cfg->cvm.user_agent) : NULL;
	inv->cfg.cvm.endpoint = inv->endpoint;
	inv->cfg.cvm.user_agent = inv->user_agent;
	if (inv->cfg.fast_interval_ms <= 0)
		inv->cfg.fast_interval_ms = INV_FAST_INTERVAL_MS;
	if (inv->cfg.idle_calls_per_minute <= 0)
		inv->cfg.idle_calls_per_minute = INV_IDLE_CALLS_PER_MINUTE;
	if (inv->cfg.follow_calls_per_minute == 0)
		inv->cfg.follow_calls_per_minute = INV_FOLLOW_CALLS_PER_MINUTE;
	if (inv->cfg.retire_after_ms <= 0)
		inv->cfg.retire_after_ms = INV_RETIRE_AFTER_MS;
	pthread_mutex_init(&inv->lock, NULL);
	sp_cond_init_monotonic(&inv->cond);
	sp_cond_init_monotonic(&inv->janitor_cond);
	/* Like an allocation failure: without it pollers would pile up unnoticed. */
	if (pthread_create(&inv->janitor, NULL, janitor_main, inv) != 0) {
		log_error("inventory: cannot start the janitor thread");
		abort();
	}
	return inv;
}

void inv_free(struct inv *inv)
{
	if (!inv)
		return;
	pthread_mutex_lock(&inv->lock);
	inv->stopping = true;
	pthread_cond_broadcast(&inv->cond);
	pthread_cond_signal(&inv->janitor_cond);
	pthread_mutex_unlock(&inv->lock);
	/* The janitor first: it frees what it took before it saw stopping. */
	pthread_join(inv->janitor, NULL);
	for (size_t i = 0; i < inv->n_pollers; i++) {
		pthread_join(inv->pollers[i]->thread, NULL);
		poller_free(inv->pollers[i]);
	}
	for (size_t i = 0; i < inv->n_retired; i++) {
		pthread_join(inv->retired[i]->thread, NULL);
		poller_free(inv->retired[i]);
	}
	free(inv->pollers);
	free(inv->retired);
	pthread_cond_destroy(&inv->janitor_cond);
	pthread_cond_destroy(&inv->cond);
	pthread_mutex_destroy(&inv->lock);
	free(inv->endpoint);
	free(inv->user_agent);
	free(inv);
}

static struct poller *find_poller(struct inv *inv, const char *secret_id, const char *region)
{
	for (size_t i = 0; i < inv->n_pollers; i++)
		if (strcmp(inv->pollers[i]->creds.secret_id, secret_id) == 0 &&
		    strcmp(inv->pollers[i]->region, region) == 0)
			return inv->pollers[i];
	return NULL;
}

static bool differs(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") != 0;
}

/* Called with the lock held. */
static int get_poller(struct inv *inv, const struct cvm_credentials *cred, const char *region,
		      struct poller **ret, struct sp_error *err)
{
	struct poller *p = find_poller(inv, cred->secret_id, region);
	if (p) {
		p->last_read_ms = sp_mono_ms();
		*ret = p;
		return 0;
	}
	p = xcalloc(1, sizeof(*p));
	p->inv = inv;
	p->region = xstrdup(region);
	poller_take_creds(p, cred);
	p->cvm = cvm_client_new(&inv->cfg.cvm);
	p->poke = true;
	p->last_read_ms = sp_mono_ms();
	if (pthread_create(&p->thread, NULL, poller_main, p) != 0) {
		poller_drop_creds(p);
		poller_free(p);
		return sp_fail(err, SP_EIO, "inventory: cannot start a poller thread");
	}
	inv->pollers = sp_vec_fit(inv->pollers, inv->n_pollers + 1, &inv->cap_pollers, sizeof(*inv->pollers));
	inv->pollers[inv->n_pollers++] = p;
	*ret = p;
	return 0;
}

/* A reader is done with p (a read counts from its end: it may have waited long); the
 * last one lets the janitor free a retired poller, or retire one whose pools have all
 * left meanwhile. Called with the lock held. */
static void let_go(struct inv *inv, struct poller *p)
{
	p->last_read_ms = sp_mono_ms();
	if (--p->users == 0 && (p->retired || p->owners.n == 0))
		pthread_cond_signal(&inv->janitor_cond);
}

/* A pool offers a key (or token) the account's poller does not use: a rotated key, or
 * a wrong one. It proves itself with the pool's own listing (signed with it): if that
 * works the poller takes it over; if not, only this pool fails. */

static int check_other_key(struct inv *inv, struct cvm_client *cvm, struct poller *p,
			   const struct cvm_credentials *cred, const char *owner,
			   struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	pthread_mutex_unlock(&inv->lock);
	int r = cvm_describe_tagged(cvm, cred, p->region, POOL_TAG_KEY, owner, ret_instances, ret_n, err);
	pthread_mutex_lock(&inv->lock);
	if (r == 0 && !p->retired && (differs(p->creds.secret_key, cred->secret_key) || differs(p->creds.token, cred->token))) {
		poller_take_creds(p, cred);
		p->poke = true;
		pthread_cond_broadcast(&inv->cond);
	}
	return r;
}

int inv_read(struct inv *inv, struct cvm_client *cvm, const struct cvm_credentials *cred, const char *region,
	     const char *owner, bool unsettled, int64_t max_age_ms, int64_t timeout_ms,
	     struct pool_instance **ret_instances, size_t *ret_n, struct sp_error *err)
{
	pthread_mutex_lock(&inv->lock);
	struct poller *p = NULL;
	int r = get_poller(inv, cred, region, &p, err);
	if (r < 0) {
		pthread_mutex_unlock(&inv->lock);
		return r;
	}
	p->users++;
	move_owner(inv, owner, p);
	if (differs(p->creds.secret_key, cred->secret_key) || differs(p->creds.token, cred->token)) {
		r = check_other_key(inv, cvm, p, cred, owner, ret_instances, ret_n, err);
		let_go(inv, p);
		pthread_mutex_unlock(&inv->lock);
		return r;
	}
	int64_t now = sp_mono_ms();
	if (unsettled) {
		p->unsettled_until_ms = now + INV_UNSETTLED_HOLD_MS;
		/* Back on the fast cadence without waiting out a long idle pause. */
		if (p->next_due_ms > now + inv->cfg.fast_interval_ms) {
			p->next_due_ms = now + inv->cfg.fast_interval_ms;
			pthread_cond_broadcast(&inv->cond);
		}
	}
	int64_t need = mutation_at(p, owner);
	if (inv->fresh_after_ms > need)
		need = inv->fresh_after_ms;
	if (max_age_ms > 0 && now - max_age_ms > need)
		need = now - max_age_ms;
	int64_t deadline = now + timeout_ms;
	/* Strictly after: a listing that started in the same millisecond as the change
	 * may have started before it. */
	for (;;) {
		if (inv->fresh_after_ms > need)  /* leadership began while this read waited */
			need = inv->fresh_after_ms;
		if (p->last_error && p->error_ms > need && (!p->snap || p->error_ms > p->taken_ms)) {
			r = p->last_error;
			if (err)
				*err = p->last_err;
			break;
		}
		if (p->snap && p->taken_ms > need) {
			snap_owner(p->snap, owner, ret_instances, ret_n);
			r = 0;
			break;
		}
		/* Retired under us (its first listing was refused): no newer listing comes. */
		if (p->retired) {
			r = p->last_error ? p->last_error : SP_ETRANSIENT;
			if (err && p->last_error)
				*err = p->last_err;
			else
				sp_fail(err, r, "inventory: the poller of %s stopped", region);
			break;
		}
		now = sp_mono_ms();
		if (now >= deadline || http_aborting() || inv->stopping) {
			r = sp_fail(err, SP_ETRANSIENT, "inventory: no listing of %s newer than the pool's last "
				    "change within %lld ms", region, (long long)timeout_ms);
			break;
		}
		p->poke = true;
		pthread_cond_broadcast(&inv->cond);
		timed_wait(inv, deadline - now < 200 ? deadline - now : 200);
	}
	let_go(inv, p);
	pthread_mutex_unlock(&inv->lock);
	return r;
}

void inv_forget(struct inv *inv, const char *owner)
{
	pthread_mutex_lock(&inv->lock);
	move_owner(inv, owner, NULL);
	/* One still being read is retired by the janitor once let go. */
	pthread_mutex_unlock(&inv->lock);
}

size_t inv_poller_count(struct inv *inv, size_t *ret_live)
{
	pthread_mutex_lock(&inv->lock);
	size_t n = inv->n_pollers + inv->n_retired + inv->n_reaping;
	if (ret_live)
		*ret_live = inv->n_pollers;
	pthread_mutex_unlock(&inv->lock);
	return n;
}

void inv_note_all_mutated(struct inv *inv)
{
	pthread_mutex_lock(&inv->lock);
	int64_t now = sp_mono_ms();
	inv->fresh_after_ms = now;
	for (size_t i = 0; i < inv->n_pollers; i++) {
		inv->pollers[i]->unsettled_until_ms = now + INV_UNSETTLED_HOLD_MS;
		inv->pollers[i]->poke = true;
	}
	pthread_cond_broadcast(&inv->cond);
	pthread_mutex_unlock(&inv->lock);
}

void inv_note_mutation(struct inv *inv, const char *secret_id, const char *region, const char *owner)
{
	pthread_mutex_lock(&inv->lock);
	struct poller *p = find_poller(inv, secret_id, region);
	if (p) {
		int64_t now = sp_mono_ms();
		bool found = false;
		for (size_t i = 0; i < p->n_muts && !found; i++)
			if (strcmp(p->muts[i].owner, owner) == 0) {
				p->muts[i].at_ms = now;
				found = true;
			}
		if (!found) {
			p->muts = xrealloc(p->muts, (p->n_muts + 1) * sizeof(*p->muts));
			p->muts[p->n_muts++] = (struct mutation){.owner = xstrdup(owner), .at_ms = now};
		}
		p->unsettled_until_ms = now + INV_UNSETTLED_HOLD_MS;
		p->poke = true;
		pthread_cond_broadcast(&inv->cond);
	}
	pthread_mutex_unlock(&inv->lock);
}

static void api_note_all_mutated(void *ctx)
{
	inv_note_all_mutated(ctx);
}

static void api_forget(void *ctx, const char *owner)
{
	inv_forget(ctx, owner);
}

struct inv_api inv_api_bind(struct inv *inv)
{
	return (struct inv_api){.note_all_mutated = api_note_all_mutated, .forget = api_forget, .ctx = inv};
}

static int reader_read(void *ctx, const struct cvm_credentials *cred, const char *region, const char *owner,
		       bool unsettled, int64_t timeout_ms, struct pool_instance **ret_instances, size_t *ret_n,
		       struct sp_error *err)
{
	struct inv_reader_binding *b = ctx;
	return inv_read(b->inv, b->cvm, cred, region, owner, unsettled, 0, timeout_ms, ret_instances, ret_n, err);
}

static void reader_note_mutation(void *ctx, const char *secret_id, const char *region, const char *owner)
{
	inv_note_mutation(((struct inv_reader_binding *)ctx)->inv, secret_id, region, owner);
}

struct inv_reader inv_reader_bind(struct inv_reader_binding *b)
{
	return (struct inv_reader){.read = reader_read, .note_mutation = reader_note_mutation, .ctx = b};
}
