/* lease: the holder identity is hostname + "_" + a random UUID, unique per process even
 * with the same hostname and pid, and short enough for holderIdentity. Against a fake
 * apiserver holding one Lease: a leader whose read shows another holder, or no Lease
 * at all, stops leading at once, not at its renew deadline. */
#include "testutil.h"
#include "lease.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static void identity_format(void **state)
{
	(void)state;
	unsigned char rnd[16];
	for (int i = 0; i < 16; i++)
		rnd[i] = (unsigned char)(0x10 * i + i);
	char out[LEASE_IDENTITY_MAX];
	lease_identity(out, sizeof(out), "node-1", 1, rnd);
	assert_string_equal(out, "node-1_00112233-4455-6677-8899-aabbccddeeff_1");
	lease_identity(out, sizeof(out), "", 42, rnd);
	assert_string_equal(out, "unknown_00112233-4455-6677-8899-aabbccddeeff_42");
}

static void long_hostname_is_cut(void **state)
{
	(void)state;
	char host[300];
	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	unsigned char rnd[16] = {0};
	char out[LEASE_IDENTITY_MAX];
	lease_identity(out, sizeof(out), host, 9223372036854775807L, rnd);
	assert_int_equal(strlen(out), 63 + 1 + 36 + 1 + 19);
	assert_true(strlen(out) < 128);
	/* The random part survives the cut: it is what tells two processes apart. */
	assert_string_equal(out + 64, "00000000-0000-0000-0000-000000000000_9223372036854775807");
}

static void two_identities_differ(void **state)
{
	(void)state;
	char *a = lease_new_identity(), *b = lease_new_identity();
	assert_string_not_equal(a, b);
	assert_true(strlen(a) < 128 && strlen(b) < 128);
	/* Same hostname and pid: only the random part tells them apart. */
	char *pid = strrchr(a, '_');
	assert_non_null(pid);
	assert_int_equal(atol(pid + 1), (long)getpid());
	assert_true(pid - a > 37 && pid[-37] == '_' && pid[-28] == '-');  /* _UUID_ */
	free(a);
	free(b);
}

/* A fake apiserver with one Lease (or none), one request per connection. */
struct apiserver {
	int fd, port;
	pthread_t thread;
	pthread_mutex_t lock;
	cJSON *lease;  /* NULL: 404 */
	int rv;
	int requests;
};

static void reply(int c, int status, const cJSON *body)
{
	char *text = body ? cJSON_PrintUnformatted(body)
			  : strdup("{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}");
	char head[256];
	snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nConnection: close\r\n"
		 "Content-Length: %zu\r\n\r\n", status, strlen(text));
	if (write(c, head, strlen(head)) < 0 || write(c, text, strlen(text)) < 0)
		fprintf(stderr, "fake apiserver: write failed\n");
	free(text);
}

static void *serve(void *arg)
{
	struct apiserver *a = arg;
	for (;;) {
		int c = accept(a->fd, NULL, NULL);
		if (c < 0)
			break;
		char req[16384];
		test_read_request(c, req, sizeof(req));
		char *body = strstr(req, "\r\n\r\n");
		cJSON *in = body ? cJSON_Parse(body + 4) : NULL;
		pthread_mutex_lock(&a->lock);
		a->requests++;
		if (strncmp(req, "GET ", 4) == 0) {
			reply(c, a->lease ? 200 : 404, a->lease);
		} else if ((strncmp(req, "POST ", 5) == 0 && !a->lease) || (strncmp(req, "PUT ", 4) == 0 && a->lease)) {
			cJSON_Delete(a->lease);
			a->lease = in;
			in = NULL;
			cJSON *md = cJSON_GetObjectItemCaseSensitive(a->lease, "metadata");
			cJSON_DeleteItemFromObject(md, "resourceVersion");
			char rv[16];
			snprintf(rv, sizeof(rv), "%d", ++a->rv);
			cJSON_AddStringToObject(md, "resourceVersion", rv);
			reply(c, 200, a->lease);
		} else {
			cJSON *st = cJSON_Parse("{\"kind\":\"Status\",\"code\":409}");
			reply(c, strncmp(req, "POST ", 5) == 0 ? 409 : 404, st);
			cJSON_Delete(st);
		}
		pthread_mutex_unlock(&a->lock);
		cJSON_Delete(in);
		close(c);
	}
	return NULL;
}

static void apiserver_start(struct apiserver *a)
{
	*a = (struct apiserver){.lock = PTHREAD_MUTEX_INITIALIZER};
	a->fd = test_listen_loopback(16, &a->port);
	assert_int_equal(pthread_create(&a->thread, NULL, serve, a), 0);
}

static void apiserver_stop(struct apiserver *a)
{
	shutdown(a->fd, SHUT_RDWR);
	close(a->fd);
	pthread_join(a->thread, NULL);
	cJSON_Delete(a->lease);
}

/* Someone else's doing: the Lease names another holder (just renewed), or is deleted. */
static void apiserver_set_holder(struct apiserver *a, const char *holder)
{
	pthread_mutex_lock(&a->lock);
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(a->lease, "spec");
	cJSON_ReplaceItemInObject(spec, "holderIdentity", cJSON_CreateString(holder));
	cJSON_ReplaceItemInObject(spec, "renewTime", cJSON_CreateString("2026-11-24T20:00:00.000000Z"));
	pthread_mutex_unlock(&a->lock);
}

static void apiserver_delete(struct apiserver *a)
{
	pthread_mutex_lock(&a->lock);
	cJSON_Delete(a->lease);
	a->lease = NULL;
	pthread_mutex_unlock(&a->lock);
}

static char *apiserver_holder(struct apiserver *a)
{
	pthread_mutex_lock(&a->lock);
	const char *h = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(a->lease, "spec"), "holderIdentity"));
	char *copy = strdup(h ? h : "(none)");
	pthread_mutex_unlock(&a->lock);
	return copy;
}

/* What the election told the process, as run.c's callbacks see it. */
struct seen {
	const struct sp_clock *clock;  /* for lost_at */
	atomic_bool leading;
	_Atomic int64_t active_until;
	_Atomic int64_t lost_at;
	atomic_int changes;
};

static void on_change(void *ud, bool leading)
{
	struct seen *s = ud;
	atomic_store(&s->leading, leading);
	atomic_fetch_add(&s->changes, 1);
	if (!leading) {
		atomic_store(&s->active_until, 0);
		atomic_store(&s->lost_at, s->clock->mono_ms(s->clock->ctx));
	}
}

static void on_renew(void *ud, int64_t until)
{
	struct seen *s = ud;
	atomic_store(&s->active_until, until);
}

static bool wait_leading(struct seen *s, bool leading, int ms)
{
	for (int64_t end = sp_mono_ms() + ms; sp_mono_ms() < end;) {
		if (atomic_load(&s->leading) == leading)
			return true;
		usleep(10 * 1000);
	}
	return atomic_load(&s->leading) == leading;
}

static struct kube_config *config_for(const struct apiserver *a)
{
	char text[512];
	snprintf(text, sizeof(text), "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
		 "clusters: [{name: t, cluster: {server: \"http://127.0.0.1:%d\"}}]\n"
		 "users: [{name: t, user: {}}]\ncontexts: [{name: t, context: {cluster: t, user: t}}]\n",
		 a->port);
	struct kube_config *cfg = NULL;
	struct sp_error err = {0};
	if (kube_config_parse(text, strlen(text), "test", &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	return cfg;
}

/* A renew deadline of 20 s, retries every second: before the fix a leader whose Lease
 * was taken over or deleted went on acting for up to those 20 s. */
static void lost_lease(void **state, bool deleted)
{
	(void)state;
	struct apiserver a;
	apiserver_start(&a);
	struct kube_config *cfg = config_for(&a);
	struct kube_client *kc = kube_client_new(cfg, "test");
	kube_client_set_timeout(kc, lease_request_timeout_ms(20));
	struct seen s = {.clock = &sp_clock_system};
	struct lease_options opt = {.api = kube_client_api(kc), .namespace = "default", .name = "spotpool-test",
				    .identity = "me_1", .duration_seconds = 30, .renew_deadline_seconds = 20,
				    .retry_period_seconds = 1, .on_change = on_change, .on_renew = on_renew,
				    .userdata = &s};
	struct lease *l = NULL;
	assert_int_equal(lease_start(&opt, &l, NULL), 0);
	assert_true(wait_leading(&s, true, 3000));
	assert_true(lease_leading(l));
	assert_true(atomic_load(&s.active_until) > sp_mono_ms() + 15000);
	char *h = apiserver_holder(&a);
	assert_string_equal(h, "me_1");
	free(h);

	int64_t taken = sp_mono_ms();
	if (deleted)
		apiserver_delete(&a);
	else
		apiserver_set_holder(&a, "other_2");
	/* The next round (within the retry period) sees it and steps down. */
	assert_true(wait_leading(&s, false, 2500));
	int64_t took = atomic_load(&s.lost_at) - taken;
	if (took > 1000 + 500)
		fail_msg("stepped down %lld ms after the lease was %s", (long long)took, deleted ? "deleted" : "taken");
	assert_int_equal(atomic_load(&s.active_until), 0);
	assert_false(lease_leading(l));
	if (!deleted) {
		/* Another holder who renewed recently: it stays a candidate, and the Lease stays
		 * theirs. */
		usleep(1500 * 1000);
		assert_false(atomic_load(&s.leading));
		h = apiserver_holder(&a);
		assert_string_equal(h, "other_2");
		free(h);
	} else {
		/* No Lease: as a candidate the next round creates it again and leads. */
		assert_true(wait_leading(&s, true, 3000));
		h = apiserver_holder(&a);
		assert_string_equal(h, "me_1");
		free(h);
	}
	lease_stop(l);
	kube_client_free(kc);
	kube_config_free(cfg);
	apiserver_stop(&a);
}

static void steps_down_when_another_holds(void **state)
{
	lost_lease(state, false);
}

static void steps_down_when_lease_deleted(void **state)
{
	lost_lease(state, true);
}

/* Regression (review of 893151e): a standby that found the Lease deleted created it and
 * led at once, while the holder it had seen acted on until its next read (one retry
 * period, plus calls in flight): two leaders could pick different victims. It now holds
 * the Lease at once but acts only a lease duration later. */
static void standby_waits_after_a_deleted_lease(void **state)
{
	(void)state;
	struct apiserver a;
	apiserver_start(&a);
	pthread_mutex_lock(&a.lock);
	a.lease = cJSON_Parse("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
			      "\"metadata\":{\"name\":\"spotpool-test\",\"namespace\":\"default\"},"
			      "\"spec\":{\"holderIdentity\":\"other_1\",\"leaseDurationSeconds\":3,"
			      "\"renewTime\":\"2026-11-24T19:00:00.000000Z\"}}");
	pthread_mutex_unlock(&a.lock);
	apiserver_set_holder(&a, "other_1");
	struct kube_config *cfg = config_for(&a);
	struct kube_client *kc = kube_client_new(cfg, "test");
	kube_client_set_timeout(kc, lease_request_timeout_ms(2));
	struct seen s = {.clock = &sp_clock_system};
	struct lease_options opt = {.api = kube_client_api(kc), .namespace = "default", .name = "spotpool-test",
				    .identity = "me_2", .duration_seconds = 3, .renew_deadline_seconds = 2,
				    .retry_period_seconds = 1, .on_change = on_change, .on_renew = on_renew,
				    .userdata = &s};
	struct lease *l = NULL;
	assert_int_equal(lease_start(&opt, &l, NULL), 0);
	usleep(1200 * 1000);
	assert_false(atomic_load(&s.leading));  /* held by other_1, renewed recently */
	apiserver_delete(&a);
	int64_t deleted = sp_mono_ms();
	for (char *h = NULL; sp_mono_ms() < deleted + 2500; usleep(20 * 1000)) {
		h = apiserver_holder(&a);
		bool held = strcmp(h, "me_2") == 0;
		free(h);
		if (held)
			break;
	}
	char *h = apiserver_holder(&a);
	assert_string_equal(h, "me_2");  /* held at once, so no third process takes it */
	free(h);
	int64_t created = sp_mono_ms();
	assert_false(atomic_load(&s.leading));
	assert_int_equal(atomic_load(&s.active_until), 0);
	assert_true(wait_leading(&s, true, 6000));
	int64_t waited = sp_mono_ms() - created;
	if (waited < 2500)
		fail_msg("acted %lld ms after creating the deleted Lease (duration 3 s)", (long long)waited);
	lease_stop(l);
	kube_client_free(kc);
	kube_config_free(cfg);
	apiserver_stop(&a);
}

/* The apiserver as a port (no thread, no socket) holding one Lease or none: GET, POST
 * (create; 409 when it exists), PUT (replace; 404 when it does not). The next requests
 * may be answered by the errors queued in fail (0: answer normally). calls lists the
 * methods asked, in order. */
struct fake_api {
	cJSON *lease;
	int fail[32];
	size_t n_fail, next_fail;
	char calls[256];
};

static int fake_request(void *ctx, const char *method, const char *path, const char *content_type,
			const cJSON *body, cJSON **ret, struct sp_error *err)
{
	struct fake_api *f = ctx;
	(void)path, (void)content_type;
	snprintf(f->calls + strlen(f->calls), sizeof(f->calls) - strlen(f->calls), "%s%s", *f->calls ? " " : "",
		 method);
	int code = f->next_fail < f->n_fail ? f->fail[f->next_fail++] : 0;
	if (code)
		return sp_fail(err, code, "injected %s", sp_strerror(code));
	bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
	if (!f->lease && !post)
		return sp_fail(err, SP_ENOTFOUND, "leases \"spotpool-test\" not found");
	if (f->lease && post)
		return sp_fail(err, SP_ECONFLICT, "leases \"spotpool-test\" already exists");
	if (!get) {
		cJSON_Delete(f->lease);
		f->lease = cJSON_Duplicate(body, 1);
	}
	if (ret)
		*ret = cJSON_Duplicate(f->lease, 1);
	return 0;
}

static void fake_fail(struct fake_api *f, const int *codes, size_t n)
{
	f->n_fail = f->next_fail = 0;
	for (size_t i = 0; i < n; i++)
		f->fail[f->n_fail++] = codes[i];
}

/* Another process's record: holder, renewed at renew_time. */
static void fake_set_holder(struct fake_api *f, const char *holder, const char *renew_time)
{
	cJSON_Delete(f->lease);
	char *json = xasprintf("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
			       "{\"name\":\"spotpool-test\",\"namespace\":\"default\"},\"spec\":{\"holderIdentity\":"
			       "\"%s\",\"leaseDurationSeconds\":15,\"renewTime\":\"%s\",\"leaseTransitions\":4}}",
			       holder, renew_time);
	f->lease = cJSON_Parse(json);
	free(json);
}

static const char *fake_spec_str(const struct fake_api *f, const char *key)
{
	const char *v = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f->lease, "spec"), key));
	return v ? v : "(none)";
}

static int fake_transitions(const struct fake_api *f)
{
	return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f->lease, "spec"),
						"leaseTransitions")->valueint;
}

/* One election driven round by round on a fake clock, with client-go's default timings:
 * lease duration 15 s, renew deadline 10 s, retry period 2 s. */
struct election {
	struct test_clock clock;
	struct sp_clock port;
	struct fake_api api;
	struct seen seen;
	struct lease *lease;
};

#define T0 1000000  /* the fake clock's start, ms */

static void election_start(struct election *e, const char *identity)
{
	*e = (struct election){.clock = {.now = 1795000000, .mono_ms = T0}};
	e->port = test_clock_port(&e->clock);
	e->seen.clock = &e->port;
	struct lease_options opt = {
		.api = {.request = fake_request, .ctx = &e->api}, .clock = &e->port, .namespace = "default",
		.name = "spotpool-test", .identity = identity, .duration_seconds = 15,
		.renew_deadline_seconds = 10, .retry_period_seconds = 2, .on_change = on_change,
		.on_renew = on_renew, .userdata = &e->seen,
	};
	e->lease = lease_new(&opt);
}

static void election_end(struct election *e)
{
	lease_free(e->lease);
	cJSON_Delete(e->api.lease);
}

/* A round, then the wait it asks for (always the retry period). */
static void round_and_wait(struct election *e)
{
	*e->api.calls = '\0';
	int64_t wait = lease_round(e->lease);
	assert_int_equal(wait, 2000);
	test_clock_advance_ms(&e->clock, wait);
}

/* The round just run (and waited for) asked calls and holds the Lease: leading, acting
 * until the renew deadline counted from that round's start. */
static void assert_led(const struct election *e, const char *calls, const char *identity)
{
	assert_string_equal(e->api.calls, calls);
	assert_true(atomic_load(&e->seen.leading));
	assert_string_equal(fake_spec_str(&e->api, "holderIdentity"), identity);
	assert_int_equal(atomic_load(&e->seen.active_until), e->clock.mono_ms - 2000 + 10000);
}

/* No Lease: the first round creates it and leads at once, acting until the renew
 * deadline from when the round started; each later round renews and moves it. */
static void acquires_a_free_lease_and_renews(void **state)
{
	(void)state;
	struct election e;
	election_start(&e, "me_1");
	round_and_wait(&e);
	assert_led(&e, "GET POST", "me_1");
	assert_true(lease_leading(e.lease));
	assert_int_equal(atomic_load(&e.seen.active_until), T0 + 10000);
	assert_int_equal(fake_transitions(&e.api), 0);
	round_and_wait(&e);
	assert_led(&e, "GET PUT", "me_1");
	assert_int_equal(atomic_load(&e.seen.changes), 1);
	assert_int_equal(fake_transitions(&e.api), 0);  /* a renewal is no transition */
	election_end(&e);
}

/* A leader's round after what happened on the apiserver since its last renewal. */
static const struct {
	const char *name;
	const char *holder;      /* non-NULL: another process holds the Lease now */
	bool deleted;            /* the Lease was deleted */
	int fail[2];             /* errors for the round's GET and PUT */
	const char *calls;
	bool leading;            /* still leading after the round */
	bool renewed;            /* on_renew moved the deadline */
} leader_rounds[] = {
	{"renewed", NULL, false, {0, 0}, "GET PUT", true, true},
	{"another holder (a lease lost mid-pass)", "other_2", false, {0, 0}, "GET", false, false},
	{"Lease deleted (404 on read)", NULL, true, {0, 0}, "GET", false, false},
	{"deleted between read and renewal (404 on update)", NULL, false, {0, SP_ENOTFOUND}, "GET PUT", false, false},
	{"409 conflict on update", NULL, false, {0, SP_ECONFLICT}, "GET PUT", true, false},
	{"transient read error", NULL, false, {SP_ETRANSIENT, 0}, "GET", true, false},
	{"throttled update", NULL, false, {0, SP_ETHROTTLED}, "GET PUT", true, false},
};

static void leader_round_outcomes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(leader_rounds) / sizeof(leader_rounds[0]); i++) {
		struct election e;
		election_start(&e, "me_1");
		round_and_wait(&e);
		assert_true(atomic_load(&e.seen.leading));
		if (leader_rounds[i].holder)
			fake_set_holder(&e.api, leader_rounds[i].holder, "2026-11-24T20:00:00.000000Z");
		if (leader_rounds[i].deleted) {
			cJSON_Delete(e.api.lease);
			e.api.lease = NULL;
		}
		fake_fail(&e.api, leader_rounds[i].fail, 2);
		round_and_wait(&e);
		if (strcmp(e.api.calls, leader_rounds[i].calls) != 0 ||
		    atomic_load(&e.seen.leading) != leader_rounds[i].leading)
			fail_msg("%s: calls \"%s\", leading %d", leader_rounds[i].name, e.api.calls,
				 atomic_load(&e.seen.leading));
		int64_t until = atomic_load(&e.seen.active_until);
		int64_t expected = !leader_rounds[i].leading ? 0 : leader_rounds[i].renewed ? T0 + 2000 + 10000
												: T0 + 10000;
		if (until != expected)
			fail_msg("%s: acting until %lld, expected %lld", leader_rounds[i].name, (long long)until,
				 (long long)expected);
		election_end(&e);
	}
}

/* The apiserver stops answering: the leader retries every retry period; it acts until
 * the renew deadline of its last renewal (what its passes' calls check), and steps down
 * at its first round past that deadline, while the Lease is still its own in everyone
 * else's eyes (15 s). Once the apiserver answers again it leads again. */
static void steps_down_at_the_renew_deadline(void **state)
{
	(void)state;
	struct election e;
	election_start(&e, "me_1");
	round_and_wait(&e);
	int failing[32];
	for (size_t i = 0; i < 32; i++)
		failing[i] = SP_ETRANSIENT;
	fake_fail(&e.api, failing, 32);
	while (atomic_load(&e.seen.leading)) {
		assert_int_equal(atomic_load(&e.seen.active_until), T0 + 10000);  /* not extended */
		assert_true(e.clock.mono_ms <= T0 + 12000);
		round_and_wait(&e);
		assert_string_equal(e.api.calls, "GET");
	}
	/* Rounds at +2, +4, +6, +8, +10 s kept it; +12 s is past the deadline (and before
	 * +15 s, when the others may take the Lease). */
	assert_int_equal(atomic_load(&e.seen.lost_at), T0 + 12000);
	assert_int_equal(atomic_load(&e.seen.active_until), 0);
	assert_int_equal(atomic_load(&e.seen.changes), 2);
	/* The apiserver was last heard at T0: no longer healthy past retry + deadline. */
	assert_false(lease_healthy(e.lease));
	fake_fail(&e.api, NULL, 0);
	round_and_wait(&e);
	assert_led(&e, "GET PUT", "me_1");
	assert_true(lease_healthy(e.lease));
	election_end(&e);
}

/* A candidate takes over only when the holder's record has not changed for a whole
 * lease duration (15 s) on its own clock; each renewal starts that over. The takeover
 * counts a transition. */
static const struct {
	const char *name;
	int renewals;           /* by the holder, every 5th round (10 s) from the first */
	int64_t takeover_at;    /* the start of the round that takes the Lease */
} takeovers[] = {
	{"never renewed", 1, T0 + 16000},
	{"renewed every 10 s for 30 s", 3, T0 + 36000},  /* last renewal seen at +20 s */
};

static void candidate_takes_over_an_expired_lease(void **state)
{
	(void)state;
	for (size_t t = 0; t < sizeof(takeovers) / sizeof(takeovers[0]); t++) {
		struct election e;
		election_start(&e, "me_2");
		for (int i = 0; !atomic_load(&e.seen.leading); i++) {
			if (i % 5 == 0 && i / 5 < takeovers[t].renewals) {
				char renewed[40];
				snprintf(renewed, sizeof(renewed), "2026-11-24T20:00:%02dZ", i * 2);
				fake_set_holder(&e.api, "other_1", renewed);
			}
			round_and_wait(&e);
			if (!atomic_load(&e.seen.leading))
				assert_string_equal(e.api.calls, "GET");
		}
		if (e.clock.mono_ms - 2000 != takeovers[t].takeover_at)
			fail_msg("%s: took over at %lld", takeovers[t].name, (long long)(e.clock.mono_ms - 2000));
		assert_led(&e, "GET PUT", "me_2");
		assert_int_equal(fake_transitions(&e.api), 5);
		election_end(&e);
	}
}

/* The Lease deleted while another process held it: the candidate creates it at once
 * (so no third process takes it) and acts only a lease duration later, when that
 * holder has stopped for sure; a Lease deleted while it held it itself is led again
 * at once. */
static void deleted_lease_waits_a_lease_duration(void **state)
{
	(void)state;
	struct election e;
	election_start(&e, "me_2");
	fake_set_holder(&e.api, "other_1", "2026-11-24T20:00:00.000000Z");
	round_and_wait(&e);
	assert_false(atomic_load(&e.seen.leading));
	cJSON_Delete(e.api.lease);
	e.api.lease = NULL;
	int64_t created = e.clock.mono_ms;
	round_and_wait(&e);
	assert_string_equal(e.api.calls, "GET POST");
	assert_string_equal(fake_spec_str(&e.api, "holderIdentity"), "me_2");
	assert_false(atomic_load(&e.seen.leading));
	assert_int_equal(atomic_load(&e.seen.active_until), 0);
	while (!atomic_load(&e.seen.leading)) {
		assert_string_equal(fake_spec_str(&e.api, "holderIdentity"), "me_2");  /* held meanwhile */
		round_and_wait(&e);
	}
	assert_led(&e, "GET PUT", "me_2");
	assert_int_equal(e.clock.mono_ms - 2000, created + 16000);  /* the first round at or past 15 s */
	/* Now deleted while this process held it: it steps down, then leads again at once. */
	cJSON_Delete(e.api.lease);
	e.api.lease = NULL;
	round_and_wait(&e);
	assert_false(atomic_load(&e.seen.leading));
	round_and_wait(&e);
	assert_led(&e, "GET POST", "me_2");
	election_end(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(identity_format),
		cmocka_unit_test(long_hostname_is_cut),
		cmocka_unit_test(two_identities_differ),
		cmocka_unit_test(steps_down_when_another_holds),
		cmocka_unit_test(steps_down_when_lease_deleted),
		cmocka_unit_test(standby_waits_after_a_deleted_lease),
		cmocka_unit_test(acquires_a_free_lease_and_renews),
		cmocka_unit_test(leader_round_outcomes),
		cmocka_unit_test(steps_down_at_the_renew_deadline),
		cmocka_unit_test(candidate_takes_over_an_expired_lease),
		cmocka_unit_test(deleted_lease_waits_a_lease_duration),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
