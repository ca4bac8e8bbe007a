/* lease: leader election, following client-go's leaderelection semantics. */
#include "lease.h"
#include "log.h"
#include "stop.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <unistd.h>
#include <time.h>

struct lease {
	struct lease_options opt;
	const struct sp_clock *clock;
	char *path;
	pthread_t thread;
	struct stop stop;               /* lease_stop: ends the wait between rounds at once */
	atomic_bool leading;
	atomic_llong last_contact_ms;   /* last answer from the apiserver */
	int64_t last_renew_ms;          /* last successful acquire or renew */
	char observed[256];             /* holder + renewTime last seen */
	int64_t observed_ms;            /* when that record last changed */
	bool other_held;                /* the last read showed another holder */
	/* Holding, but not acting before this (see try_acquire_or_renew). */
	int64_t act_after_ms;
};

void lease_identity(char *out, size_t n, const char *hostname, long pid, const unsigned char rnd[16])
{
	char hex[33];
	sp_hex(rnd, 16, hex);
	snprintf(out, n, "%.63s_%.8s-%.4s-%.4s-%.4s-%.12s_%ld", *hostname ? hostname : "unknown", hex,
		 hex + 8, hex + 12, hex + 16, hex + 20, pid);
}

char *lease_new_identity(void)
{
	char host[256] = "unknown";
	gethostname(host, sizeof(host) - 1);
	unsigned char rnd[16] = {0};
	size_t got = 0;
	while (got < sizeof(rnd)) {
		ssize_t r = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got < sizeof(rnd)) {
		/* No getrandom (old kernel, seccomp): pid and clocks still tell processes apart
		 * far better than pid alone. */
		int64_t mix[2] = {sp_mono_ms() ^ ((int64_t)getpid() << 32), (int64_t)sp_now() ^ (intptr_t)&got};
		memcpy(rnd, mix, sizeof(rnd));
	}
	char out[LEASE_IDENTITY_MAX];
	lease_identity(out, sizeof(out), host, (long)getpid(), rnd);
	return xstrdup(out);
}

static int64_t mono_ms(const struct lease *l)
{
	return l->clock->mono_ms(l->clock->ctx);
}

/* MicroTime: RFC 3339 with microseconds, as the Lease API expects. */
static void micro_time(char out[40])
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	struct tm tm;
	gmtime_r(&tv.tv_sec, &tm);
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 40 - n, ".%06ldZ", (long)tv.tv_usec);
}

static const char *spec_str(const cJSON *spec, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static void fill_spec(struct lease *l, cJSON *spec, bool new_holder)
{
	char now[40];
	micro_time(now);
	cJSON_DeleteItemFromObject(spec, "holderIdentity");
	cJSON_DeleteItemFromObject(spec, "renewTime");
	cJSON_DeleteItemFromObject(spec, "leaseDurationSeconds");
	cJSON_AddStringToObject(spec, "holderIdentity", l->opt.identity);
	cJSON_AddStringToObject(spec, "renewTime", now);
	cJSON_AddNumberToObject(spec, "leaseDurationSeconds", l->opt.duration_seconds);
	if (new_holder) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(spec, "leaseTransitions");
		int transitions = cJSON_IsNumber(t) ? t->valueint + 1 : 0;
		cJSON_DeleteItemFromObject(spec, "leaseTransitions");
		cJSON_DeleteItemFromObject(spec, "acquireTime");
		cJSON_AddNumberToObject(spec, "leaseTransitions", transitions);
		cJSON_AddStringToObject(spec, "acquireTime", now);
	}
}

static bool create_lease(struct lease *l)
{
	cJSON *obj = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "apiVersion", "coordination.k8s.io/v1");
	cJSON_AddStringToObject(obj, "kind", "Lease");
	cJSON *md = cJSON_AddObjectToObject(obj, "metadata");
	cJSON_AddStringToObject(md, "name", l->opt.name);
	cJSON_AddStringToObject(md, "namespace", l->opt.namespace);
	fill_spec(l, cJSON_AddObjectToObject(obj, "spec"), true);
	char *coll = xasprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->opt.namespace);
	struct sp_error err = {0};
	int r = l->opt.api.request(l->opt.api.ctx, "POST", coll, NULL, obj, NULL, &err);
	free(coll);
	cJSON_Delete(obj);
	if (r < 0 && r != SP_ECONFLICT)
		log_warn("leader election: cannot create lease %s/%s: %s", l->opt.namespace, l->opt.name, err.msg);
	return r == 0;
}

/* What one round found. */
enum round {
	ROUND_HELD,     /* created, renewed or taken over: this process holds the lease */
	ROUND_NOT_NOW,  /* held by another (as a candidate), or the apiserver did not answer */
	ROUND_LOST,     /* as the leader: the Lease is gone or names another holder */
};

/* One round: create, renew, or take over an expired lease. A leader whose read shows
 * no Lease or another holder does neither: someone else may already act on the pools
 * (a standby that finds no Lease creates one and leads at once), so it stops now
 * rather than at its renew deadline, and comes back as a candidate next round. */
static enum round try_acquire_or_renew(struct lease *l)
{
	bool leading = atomic_load(&l->leading);
	cJSON *obj = NULL;
	struct sp_error err = {0};
	int r = kube_api_get(&l->opt.api, l->path, &obj, &err);
	if (r == SP_ENOTFOUND) {
		atomic_store(&l->last_contact_ms, mono_ms(l));
		if (leading) {
			log_warn("leader election: lease %s/%s is gone: stepping down", l->opt.namespace,
				 l->opt.name);
			return ROUND_LOST;
		}
		if (!create_lease(l))
			return ROUND_NOT_NOW;
		/* Deleted while another held it: that holder acts until it reads the 404 or
		 * reaches its renew deadline, at most a lease duration after its last renewal.
		 * Hold the Lease (so no third process takes it) but act only after that. A
		 * Lease never seen held by another (a first start) is led at once. */
		if (l->other_held) {
			l->act_after_ms = mono_ms(l) + 1000LL * l->opt.duration_seconds;
			log_warn("leader election: lease %s/%s was deleted while another process held it: "
				 "created it, acting in %d s (when that process has stopped for sure)",
				 l->opt.namespace, l->opt.name, l->opt.duration_seconds);
		}
		l->other_held = false;
		return ROUND_HELD;
	}
	if (r < 0) {
		log_warn("leader election: %s", err.msg);
		return ROUND_NOT_NOW;
	}
	atomic_store(&l->last_contact_ms, mono_ms(l));
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	if (!spec)
		spec = cJSON_AddObjectToObject(obj, "spec");
	const char *holder = spec_str(spec, "holderIdentity");
	const cJSON *dur = cJSON_GetObjectItemCaseSensitive(spec, "leaseDurationSeconds");
	int64_t duration_ms = 1000LL * (cJSON_IsNumber(dur) ? dur->valueint : l->opt.duration_seconds);
	char record[256];
	snprintf(record, sizeof(record), "%s|%s", holder, spec_str(spec, "renewTime"));
	int64_t now = mono_ms(l);
	if (strcmp(record, l->observed) != 0) {
		snprintf(l->observed, sizeof(l->observed), "%s", record);
		l->observed_ms = now;
	}
	bool mine = strcmp(holder, l->opt.identity) == 0;
	l->other_held = *holder && !mine;
	if (leading && !mine) {
		log_warn("leader election: lease %s/%s is held by \"%.128s\" now: stepping down",
			 l->opt.namespace, l->opt.name, holder);
		cJSON_Delete(obj);
		return ROUND_LOST;
	}
	if (*holder && !mine && now - l->observed_ms < duration_ms) {
		cJSON_Delete(obj);
		return ROUND_NOT_NOW;  /* held by someone who renewed recently */
	}
	fill_spec(l, spec, !mine);
	r = l->opt.api.request(l->opt.api.ctx, "PUT", l->path, NULL, obj, NULL, &err);
	cJSON_Delete(obj);
	if (r < 0 && r != SP_ECONFLICT)
		log_warn("leader election: cannot update lease: %s", err.msg);
	if (leading && r == SP_ENOTFOUND)
		return ROUND_LOST;  /* deleted between the read and the renewal */
	return r == 0 ? ROUND_HELD : ROUND_NOT_NOW;
}

static void set_leading(struct lease *l, bool leading)
{
	if (atomic_exchange(&l->leading, leading) == leading)
		return;
	log_info("leader election: %s lease %s/%s as %s", leading ? "acquired" : "lost",
		 l->opt.namespace, l->opt.name, l->opt.identity);
	if (l->opt.on_change)
		l->opt.on_change(l->opt.userdata, leading);
}

static void release(struct lease *l)
{
	cJSON *obj = NULL;
	if (kube_api_get(&l->opt.api, l->path, &obj, NULL) < 0)
		return;
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	if (spec && strcmp(spec_str(spec, "holderIdentity"), l->opt.identity) == 0) {
		/* An empty holder with a one-second duration lets a standby take over at once. */
		fill_spec(l, spec, false);
		cJSON_ReplaceItemInObject(spec, "holderIdentity", cJSON_CreateString(""));
		cJSON_ReplaceItemInObject(spec, "leaseDurationSeconds", cJSON_CreateNumber(1));
		struct sp_error err = {0};
		if (l->opt.api.request(l->opt.api.ctx, "PUT", l->path, NULL, obj, NULL, &err) == 0)
			log_info("leader election: released lease %s/%s", l->opt.namespace, l->opt.name);
	}
	cJSON_Delete(obj);
}

int64_t lease_round(struct lease *l)
{
	int64_t now = mono_ms(l);
	enum round round = try_acquire_or_renew(l);
	if (round == ROUND_HELD && now < l->act_after_ms) {
		l->last_renew_ms = now;  /* held, not acting yet */
	} else if (round == ROUND_HELD) {
		/* The grant starts when the request was sent, not when it answered. */
		l->last_renew_ms = now;
		if (l->opt.on_renew)
			l->opt.on_renew(l->opt.userdata, now + 1000LL * l->opt.renew_deadline_seconds);
		set_leading(l, true);
	} else if (round == ROUND_LOST) {
		set_leading(l, false);  /* at once: another process may be acting already */
	} else if (atomic_load(&l->leading) && now - l->last_renew_ms > 1000LL * l->opt.renew_deadline_seconds) {
		/* Stop acting while the lease is still ours in everyone else's eyes. */
		set_leading(l, false);
	}
	return 1000LL * l->opt.retry_period_seconds;
}

static void *lease_main(void *arg)
{
	struct lease *l = arg;
	while (!stop_requested(&l->stop)) {
		stop_wait_ms(&l->stop, lease_round(l));
	}
	/* Released while waiting to act too (it holds the Lease): the next process
	 * should not wait out a whole expiry. release() checks the holder is this one. */
	if (atomic_load(&l->leading) || mono_ms(l) < l->act_after_ms) {
		set_leading(l, false);
		release(l);
	}
	return NULL;
}

long lease_request_timeout_ms(int renew_deadline_seconds)
{
	return 500L * renew_deadline_seconds;
}

struct lease *lease_new(const struct lease_options *opt)
{
	struct lease *l = xcalloc(1, sizeof(*l));
	l->opt = *opt;
	l->clock = opt->clock ? opt->clock : &sp_clock_system;
	l->path = xasprintf("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", opt->namespace, opt->name);
	stop_init(&l->stop);
	return l;
}

void lease_free(struct lease *l)
{
	if (!l)
		return;
	stop_destroy(&l->stop);
	free(l->path);
	free(l);
}

int lease_start(const struct lease_options *opt, struct lease **ret, struct sp_error *err)
{
	struct lease *l = lease_new(opt);
	if (pthread_create(&l->thread, NULL, lease_main, l) != 0) {
		lease_free(l);
		return sp_fail(err, SP_EIO, "cannot start the leader election thread");
	}
	*ret = l;
	return 0;
}

void lease_stop(struct lease *l)
{
	if (!l)
		return;
	stop_request(&l->stop);
	pthread_join(l->thread, NULL);
	lease_free(l);
}

bool lease_leading(struct lease *l)
{
	return atomic_load(&l->leading);
}

bool lease_healthy(struct lease *l)
{
	int64_t limit = 1000LL * (l->opt.retry_period_seconds + l->opt.renew_deadline_seconds);
	return mono_ms(l) - atomic_load(&l->last_contact_ms) < limit;
}
