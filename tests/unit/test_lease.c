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
		atomic_store(&s->lost_at, sp_mono_ms());
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
	struct seen s = {0};
	struct lease_options opt = {.kube = cfg, .namespace = "default", .name = "spotpool-test",
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(identity_format),
		cmocka_unit_test(long_hostname_is_cut),
		cmocka_unit_test(two_identities_differ),
		cmocka_unit_test(steps_down_when_another_holds),
		cmocka_unit_test(steps_down_when_lease_deleted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
