/* notices: the SpotNotice cache through a fake apiserver port and a fake clock: a list
 * fills it, events keep it current, what does not read as a notice is skipped; a pool is
 * told when a notice of one of its instances comes or goes; an instance's deadline is the
 * earliest of its notices; a notice an hour past its deadline is deleted (404 = done); a
 * list refused by RBAC or a cluster without the CRD leaves every deadline unknown and is
 * retried with backoff; one watch per namespace, each relist forgetting only its own. */
#include "testutil.h"
#include "fakekube.h"
#include "notices.h"

static char told[512];

static void on_changed(void *ud, const char *pool)
{
	(void)ud;
	snprintf(told + strlen(told), sizeof(told) - strlen(told), "%s%s", *told ? " " : "", pool);
}

/* The rig's clock: 2026-11-18T11:06:40Z. */
#define NOW 1795000000
#define NOTICE(ns, name, rv, id, at)                                                            \
	"{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"}," \
	"\"spec\":{\"instanceId\":\"" id "\",\"reclaimAt\":\"" at "\",\"reportedAt\":\"" at "\"}}"
#define LIST(rv, items) "{\"metadata\":{\"resourceVersion\":\"" rv "\"},\"items\":[" items "]}"
#define EVENT(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}"
#define ALL "/apis/devops.jokerbai.com/v1/spotnotices"
#define IN(ns) "/apis/devops.jokerbai.com/v1/namespaces/" ns "/spotnotices"
#define WATCH(path, rv) path "?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=" rv

struct rig {
	struct test_clock clock;
	struct sp_clock port;
	struct fake_api api;
	struct kube_api kube;
	struct strv namespaces;
	struct notices *notices;
};

static void rig_start(struct rig *g, const struct reply *replies, size_t n, const char *const *namespaces)
{
	*g = (struct rig){.clock = {.now = NOW, .mono_ms = 5000000}};
	g->port = test_clock_port(&g->clock);
	g->kube = fake_api_bind(&g->api, replies, n, &g->clock);
	for (size_t i = 0; namespaces && namespaces[i]; i++)
		strv_push(&g->namespaces, namespaces[i]);
	struct notices_config cfg = {.clock = &g->port, .namespaces = &g->namespaces, .changed = on_changed};
	*told = '\0';
	g->notices = notices_new(&cfg);
}

static void rig_end(struct rig *g)
{
	assert_int_equal(g->api.next, g->api.n);
	notices_free(g->notices);
	strv_clear(&g->namespaces);
}

static int64_t deadline_of(struct notices *n, const char *pool, const char *id)
{
	int64_t at = -1;
	notices_find(n, pool, &id, 1, &at);
	return at;
}

static void test_list_events_and_find(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", ALL "?limit=500",
		 LIST("5", NOTICE("a", "ins-a-1", "3", "ins-a", "2026-11-18T11:08:40Z") ","
			   NOTICE("b", "ins-b-1", "4", "ins-b", "2026-11-18T11:09:00Z") ","
			   /* no instance: skipped */
			   "{\"metadata\":{\"namespace\":\"a\",\"name\":\"bad\"},\"spec\":{\"reclaimAt\":\"x\"}}"),
		 0, 0},
		{"WATCH", WATCH(ALL, "5"),
		 "[" EVENT("ADDED", NOTICE("a", "ins-a-2", "6", "ins-a", "2026-11-18T11:08:00Z")) ","
		 EVENT("MODIFIED", NOTICE("b", "ins-b-1", "7", "ins-b", "2026-11-18T11:09:00Z")) ","
		 EVENT("DELETED", NOTICE("b", "ins-b-1", "8", "ins-b", "2026-11-18T11:09:00Z")) "]",
		 0, 2000},
	};
	struct rig g;
	rig_start(&g, replies, 2, NULL);
	/* Not listed yet: no deadline, but the pools' instances are remembered. */
	const char *ids[] = {"ins-a", "ins-x"};
	int64_t at[2] = {-1, -1};
	notices_find(g.notices, "ns/p", ids, 2, at);
	assert_int_equal(at[0], 0);
	assert_int_equal(at[1], 0);
	assert_false(notices_synced(g.notices));
	assert_int_equal(deadline_of(g.notices, "ns/q", "ins-b"), 0);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_true(notices_synced(g.notices));
	/* Told: p and q by the list, p by ins-a's second notice, q when ins-b's went (not
	 * at its MODIFIED: a notice's spec cannot change). */
	assert_string_equal(told, "ns/p ns/q ns/p ns/q");
	assert_int_equal(notices_count(g.notices), 2);
	/* The earliest of ins-a's two notices governs. */
	assert_int_equal(deadline_of(g.notices, "ns/p", "ins-a"), NOW + 80);
	assert_int_equal(deadline_of(g.notices, "ns/q", "ins-b"), 0);
	/* A forgotten pool is told nothing more. */
	notices_forget(g.notices, "ns/p");
	*told = '\0';
	cJSON *gone = cJSON_Parse(NOTICE("a", "ins-a-2", "9", "ins-a", "2026-11-18T11:08:00Z"));
	notices_apply_event(g.notices, 0, "DELETED", gone);
	cJSON_Delete(gone);
	assert_string_equal(told, "");
	assert_int_equal(deadline_of(g.notices, "ns/r", "ins-a"), NOW + 120);
	rig_end(&g);
}

/* A notice more than NOTICES_KEEP_SECONDS past its deadline is deleted after the round
 * (a 404: someone did it first, done); a younger one stays. */
static void test_expired_deleted(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", ALL "?limit=500",
		 LIST("5", NOTICE("a", "old", "3", "ins-a", "2026-11-18T10:06:39Z") ","
			   NOTICE("a", "older", "3", "ins-c", "2026-11-18T09:00:00Z") ","
			   NOTICE("b", "recent", "4", "ins-b", "2026-11-18T10:06:45Z")),
		 0, 0},
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
		{"DELETE", IN("a") "/old", "{}", 0, 0},
		{"DELETE", IN("a") "/older", NULL, SP_ENOTFOUND, 0},
	};
	struct rig g;
	rig_start(&g, replies, 4, NULL);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	/* The deletions come back as watch events. */
	assert_int_equal(notices_count(g.notices), 3);
	rig_end(&g);
}

/* RBAC refuses the list, or the CRD is not installed: no deadline known, no deletion,
 * the list retried with backoff. */
static void test_unavailable(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", ALL "?limit=500", NULL, SP_EFORBIDDEN, 0},
		{"GET", ALL "?limit=500", NULL, SP_ENOTFOUND, 0},
		{"GET", ALL "?limit=500", LIST("5", NOTICE("a", "n", "3", "ins-a", "2026-11-18T11:08:40Z")), 0, 0},
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
	};
	struct rig g;
	rig_start(&g, replies, 4, NULL);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 500);
	assert_int_equal(deadline_of(g.notices, "ns/p", "ins-a"), 0);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 1000);
	assert_false(notices_synced(g.notices));
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_of(g.notices, "ns/p", "ins-a"), NOW + 120);
	rig_end(&g);
}

/* One watch per namespace; a 410 relist of one forgets the notices its new list lacks,
 * never another namespace's. */
static void test_namespaces(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", IN("a") "?limit=500", LIST("5", NOTICE("a", "n1", "3", "ins-a", "2026-11-18T11:08:40Z")), 0, 0},
		{"WATCH", WATCH(IN("a"), "5"), NULL, 0, 2000},
		{"GET", IN("b") "?limit=500", LIST("6", NOTICE("b", "n2", "4", "ins-b", "2026-11-18T11:08:40Z")), 0, 0},
		{"WATCH", WATCH(IN("b"), "6"), "[{\"type\":\"ERROR\",\"object\":{\"code\":410}}]", 0, 10},
		{"GET", IN("b") "?limit=500", LIST("9", ""), 0, 0},
		{"WATCH", WATCH(IN("b"), "9"), NULL, 0, 2000},
	};
	const char *const namespaces[] = {"a", "b", NULL};
	struct rig g;
	rig_start(&g, replies, 6, namespaces);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_false(notices_synced(g.notices));
	assert_int_equal(notices_round(g.notices, 1, &g.kube), 0);
	assert_true(notices_synced(g.notices));
	const char *ids[] = {"ins-a", "ins-b"};
	int64_t at[2];
	notices_find(g.notices, "a/p", ids, 2, at);
	assert_int_equal(at[0], NOW + 120);
	assert_int_equal(at[1], NOW + 120);
	*told = '\0';
	assert_int_equal(notices_round(g.notices, 1, &g.kube), 0);
	assert_string_equal(told, "a/p");
	notices_find(g.notices, "a/p", ids, 2, at);
	assert_int_equal(at[0], NOW + 120);
	assert_int_equal(at[1], 0);
	rig_end(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_events_and_find),
		cmocka_unit_test(test_expired_deleted),
		cmocka_unit_test(test_unavailable),
		cmocka_unit_test(test_namespaces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
