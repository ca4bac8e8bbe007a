/* notices: the SpotNotice cache through a fake apiserver port and a fake clock: a list
 * fills it, events keep it current, what does not read as a notice is skipped; a pool is
 * told when a notice of one of its instances comes or goes; an instance's deadline is the
 * earliest of its notices; a notice counts only in its pool's namespace or the home one;
 * its deadline is bounded from when the cache first saw it (doom.h); finds say "pending" until every watch
 * listed (not when RBAC or a missing CRD keeps them from ever listing); a notice 10 minutes
 * past its deadline is deleted by the leader (404 = done; a refusal not retried before
 * the next list; none by a standby or in dry-run); one watch per namespace plus the home
 * one, each relist forgetting only its own; room shared fairly: notices of instances no
 * pool asked about are bounded per namespace and in all, and cannot crowd out others. */
#include "testutil.h"
#include "fakekube.h"
#include "notices.h"
#include "buf.h"
#include "doom.h"

static char told[512];
/* The cache being told, and what a find from the callback answered (during the watch
 * that follows a list, finds no longer wait). */
static struct notices *telling;
static int find_while_told;

static void on_changed(void *ud, const char *pool)
{
	(void)ud;
	snprintf(told + strlen(told), sizeof(told) - strlen(told), "%s%s", *told ? " " : "", pool);
	if (telling) {
		const char *id = "ins-x";
		int64_t at;
		find_while_told = notices_find(telling, "z/z", &id, 1, &at);
	}
}

/* The rig's clock: 2026-11-18T11:06:40Z. */
#define NOW 1795000000
/* A notice created at its deadline (within the window), or at created. */
#define NOTICE(ns, name, rv, id, at) NOTICE_CREATED(ns, name, rv, id, at, at)
#define NOTICE_CREATED(ns, name, rv, id, at, created)                                           \
	"{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"," \
	"\"creationTimestamp\":\"" created "\"},"                                                 \
	"\"spec\":{\"instanceId\":\"" id "\",\"reclaimAt\":\"" at "\",\"reportedAt\":\"" at "\"}}"
#define LIST(rv, items) "{\"metadata\":{\"resourceVersion\":\"" rv "\"},\"items\":[" items "]}"
#define EVENT(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}"
#define ALL "/apis/devops.jokerbai.com/v1/spotnotices"
#define IN(ns) "/apis/devops.jokerbai.com/v1/namespaces/" ns "/spotnotices"
#define WATCH(path, rv) path "?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=" rv
/* The replies of a round of all namespaces: the list (body, at rv), a watch that ends. */
#define LISTED(body, rv) {"GET", ALL "?limit=50", body, 0, 0}, {"WATCH", WATCH(ALL, rv), NULL, 0, 2000}

struct rig {
	struct test_clock clock;
	struct sp_clock port;
	struct fake_api api;
	struct kube_api kube;
	struct strv namespaces;
	struct notices *notices;
};

/* cfg: what the test sets (clock, namespaces and callback are the rig's). */
static void rig_start(struct rig *g, const struct reply *replies, size_t n, const char *const *namespaces,
		      struct notices_config cfg)
{
	*g = (struct rig){.clock = {.now = NOW, .mono_ms = 5000000}};
	g->port = test_clock_port(&g->clock);
	g->kube = fake_api_bind(&g->api, replies, n, &g->clock);
	for (size_t i = 0; namespaces && namespaces[i]; i++)
		strv_push(&g->namespaces, namespaces[i]);
	cfg.clock = &g->port;
	cfg.namespaces = &g->namespaces;
	cfg.changed = on_changed;
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
		{"GET", ALL "?limit=50",
		 LIST("5", NOTICE("a", "ins-a-1", "3", "ins-a", "2026-11-18T11:10:00Z") ","
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
	rig_start(&g, replies, 2, NULL, (struct notices_config){0});
	/* Not listed yet: pending, no deadline, but the pools' instances are remembered. */
	const char *ids[] = {"ins-a", "ins-x"};
	int64_t at[2] = {-1, -1};
	assert_int_equal(notices_find(g.notices, "a/p", ids, 2, at), SP_ETRANSIENT);
	assert_int_equal(at[0], 0);
	assert_int_equal(at[1], 0);
	assert_false(notices_synced(g.notices));
	assert_int_equal(deadline_of(g.notices, "b/q", "ins-b"), 0);
	telling = g.notices;
	find_while_told = 1;
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	telling = NULL;
	assert_int_equal(find_while_told, 0);  /* the last event was told during the watch */
	assert_true(notices_synced(g.notices));
	assert_int_equal(notices_find(g.notices, "a/p", ids, 2, at), 0);
	/* Told: p and q by the list, p by ins-a's second notice, q when ins-b's went (not
	 * at its MODIFIED: a notice's spec cannot change). */
	assert_string_equal(told, "a/p b/q a/p b/q");
	assert_int_equal(notices_count(g.notices), 2);
	/* The earliest of ins-a's two notices governs: NOW + 80, given the two minutes of a
	 * drain from when the watch brought it (its reply took 2 s). */
	assert_int_equal(deadline_of(g.notices, "a/p", "ins-a"), NOW + 2 + DOOM_DRAIN_MIN_SECONDS);
	assert_int_equal(deadline_of(g.notices, "b/q", "ins-b"), 0);
	/* A notice in namespace a does not count for a pool of namespace b. */
	assert_int_equal(deadline_of(g.notices, "b/q", "ins-a"), 0);
	assert_int_equal(deadline_of(g.notices, "ab/q", "ins-a"), 0);
	/* A forgotten pool is told nothing more. */
	notices_forget(g.notices, "a/p");
	*told = '\0';
	cJSON *gone = cJSON_Parse(NOTICE("a", "ins-a-2", "9", "ins-a", "2026-11-18T11:08:00Z"));
	notices_apply_event(g.notices, 0, "DELETED", gone);
	cJSON_Delete(gone);
	assert_string_equal(told, "");
	assert_int_equal(deadline_of(g.notices, "a/r", "ins-a"), NOW + 200);
	rig_end(&g);
}

/* The home namespace's notices count for every pool (and tell them). A deadline is a
 * claim bounded from when the cache first saw the notice, on our clock (issue 27 item 1):
 * a past one still gets a drain's two minutes, a far one (ten years ahead) ten minutes,
 * whatever its creation time says, and one without a creation time counts the same. */
static void test_trust_and_bounds(void **state)
{
	(void)state;
	const struct reply listed[] = {{"GET", ALL "?limit=50", LIST("1", ""), 0, 0},
				       {"WATCH", WATCH(ALL, "1"), NULL, 0, 2000}};
	struct rig g;
	rig_start(&g, listed, 2, NULL, (struct notices_config){.home_namespace = "spotpool-system"});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	const int64_t seen = g.clock.now;
	const char *ids[] = {"ins-h", "ins-past", "ins-late", "ins-far", "ins-none"};
	int64_t at[5];
	notices_find(g.notices, "team-a/p", ids, 5, at);
	const char *events[] = {
		NOTICE_CREATED("spotpool-system", "h", "3", "ins-h", "2026-11-18T11:11:40Z", "2026-11-18T11:06:40Z"),
		NOTICE_CREATED("team-a", "past", "4", "ins-past", "2000-01-01T00:00:00Z", "2026-11-18T11:06:40Z"),
		NOTICE_CREATED("team-a", "late", "5", "ins-late", "2026-11-18T11:21:41Z", "2026-11-18T11:06:40Z"),
		NOTICE_CREATED("team-a", "far", "6", "ins-far", "2036-11-18T11:06:40Z", "2026-11-18T11:06:40Z"),
		"{\"metadata\":{\"namespace\":\"team-a\",\"name\":\"none\"},"
		"\"spec\":{\"instanceId\":\"ins-none\",\"reclaimAt\":\"2026-11-18T11:10:40Z\"}}",
	};
	for (size_t i = 0; i < 5; i++) {
		cJSON *o = cJSON_Parse(events[i]);
		notices_apply_event(g.notices, 0, "ADDED", o);
		cJSON_Delete(o);
		g.clock.now += 10;  /* each first seen 10 s after the one before */
	}
	assert_int_equal(notices_count(g.notices), 5);
	notices_find(g.notices, "team-a/p", ids, 5, at);
	assert_int_equal(at[0], NOW + 300);
	assert_int_equal(at[1], seen + 10 + DOOM_DRAIN_MIN_SECONDS);
	assert_int_equal(at[2], seen + 20 + DOOM_WINDOW_SECONDS);
	assert_int_equal(at[3], seen + 30 + DOOM_WINDOW_SECONDS);
	assert_int_equal(at[4], NOW + 240);
	assert_int_equal(deadline_of(g.notices, "team-b/q", "ins-h"), NOW + 300);
	assert_int_equal(deadline_of(g.notices, "team-b/q", "ins-far"), 0);
	rig_end(&g);
}

/* The apiserver's clock an hour ahead of ours: the notice's deadline (2 minutes after
 * its creation there) is bounded from when we first saw it: DOOM_WINDOW_SECONDS on our
 * clock. A relist keeps that first sight. */
static void test_deadline_clamped_to_our_clock(void **state)
{
	(void)state;
#define AHEAD NOTICE_CREATED("a", "n", "3", "ins-a", "2026-11-18T12:08:40Z", "2026-11-18T12:06:40Z")
	const struct reply replies[] = {LISTED(LIST("5", AHEAD), "5")};
	struct rig g;
	rig_start(&g, replies, 2, NULL, (struct notices_config){0});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_of(g.notices, "a/p", "ins-a"), NOW + DOOM_WINDOW_SECONDS);
	g.clock.now += 300;
	cJSON *again = cJSON_Parse(AHEAD);
	notices_apply_event(g.notices, 0, "MODIFIED", again);
	cJSON_Delete(again);
	assert_int_equal(deadline_of(g.notices, "a/p", "ins-a"), NOW + DOOM_WINDOW_SECONDS);
#undef AHEAD
	rig_end(&g);
}

/* A notice more than NOTICES_KEEP_SECONDS past its deadline is deleted after the round
 * (a 404: someone did it first, done); a younger one stays. A refused deletion is not
 * tried again before the next list; a standby and a dry run delete none. */
static void test_expired_deleted(void **state)
{
	(void)state;
	const char *list = LIST("5", NOTICE("a", "old", "3", "ins-a", "2026-11-18T10:56:39Z") ","
					 NOTICE("a", "older", "3", "ins-c", "2026-11-18T09:00:00Z") ","
					 NOTICE("b", "recent", "4", "ins-b", "2026-11-18T10:56:45Z"));
	const struct reply replies[] = {
		LISTED(list, "5"),
		{"DELETE", IN("a") "/old", "{}", 0, 0},
		{"DELETE", IN("a") "/older", NULL, SP_ENOTFOUND, 0},
	};
	struct rig g;
	rig_start(&g, replies, 4, NULL, (struct notices_config){0});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	/* The deletions come back as watch events. */
	assert_int_equal(notices_count(g.notices), 3);
	rig_end(&g);

	const struct reply refused[] = {
		{"GET", ALL "?limit=50", list, 0, 0},
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
		{"DELETE", IN("a") "/old", NULL, SP_EFORBIDDEN, 0},
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
	};
	rig_start(&g, refused, 4, NULL, (struct notices_config){0});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	rig_end(&g);

	static const _Atomic int64_t standby = 0;
	const struct notices_config passive[] = {{.active_until_ms = &standby}, {.read_only = true}};
	for (size_t i = 0; i < 2; i++) {
		rig_start(&g, replies, 2, NULL, passive[i]);
		assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
		rig_end(&g);
	}
}

/* A rig of all namespaces whose first list fails: its round waits 500 ms. */
static void rig_first_list_fails(struct rig *g, const struct reply *replies, size_t n)
{
	rig_start(g, replies, n, NULL, (struct notices_config){0});
	assert_int_equal(notices_round(g->notices, 0, &g->kube), 500);
}

static _Atomic int64_t leading_until = INT64_MAX;

/* The apiserver, and leadership lost once a DELETE went. */
static int request_then_deposed(void *ctx, const char *method, const char *path, const char *content_type,
				const cJSON *body, cJSON **ret, struct sp_error *err)
{
	int r = fake_request(ctx, method, path, content_type, body, ret, err);
	if (strcmp(method, "DELETE") == 0)
		atomic_store(&leading_until, 0);
	return r;
}

/* Deletions are paced: leadership is checked before each (a deposed leader deletes no
 * more), and a round deletes at most NOTICES_DELETES_PER_ROUND (the rest go after the
 * next watch). */
static void test_expired_deletions_paced(void **state)
{
	(void)state;
	const char *list = LIST("5", NOTICE("a", "old", "3", "ins-a", "2026-11-18T10:56:39Z") ","
				     NOTICE("a", "older", "3", "ins-c", "2026-11-18T09:00:00Z"));
	const struct reply replies[] = {
		{"GET", ALL "?limit=50", list, 0, 0},
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
		{"DELETE", IN("a") "/old", "{}", 0, 0},
	};
	struct rig g;
	atomic_store(&leading_until, INT64_MAX);
	rig_start(&g, replies, 3, NULL, (struct notices_config){.active_until_ms = &leading_until});
	g.kube.request = request_then_deposed;
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	rig_end(&g);

	enum { EXPIRED = NOTICES_DELETES_PER_ROUND + 50 };
	struct buf body;
	buf_init(&body, 1 << 20);
	buf_puts(&body, "{\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[");
	static struct reply many[EXPIRED + 2];
	static char paths[EXPIRED][64];
	for (int i = 0; i < EXPIRED; i++) {
		char obj[512];
		snprintf(obj, sizeof(obj), "%s" NOTICE("a", "n%03d", "3", "ins-%03d", "2026-11-18T09:00:00Z"),
			 i ? "," : "", i, i);
		buf_puts(&body, obj);
		snprintf(paths[i], sizeof(paths[i]), IN("a") "/n%03d", i);
		many[i + 2] = (struct reply){"DELETE", paths[i], "{}", 0, 0};
	}
	buf_puts(&body, "]}");
	many[0] = (struct reply){"GET", ALL "?limit=50", body.data, 0, 0};
	many[1] = (struct reply){"WATCH", WATCH(ALL, "5"), NULL, 0, 2000};
	rig_start(&g, many, NOTICES_DELETES_PER_ROUND + 2, NULL, (struct notices_config){0});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	rig_end(&g);
	buf_free(&body);
}

/* RBAC refuses the list, or the CRD is not installed: no deadline known, no deletion,
 * finds not pending (notices are off, nothing to wait for), the list retried with
 * backoff. */
static void test_unavailable(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", ALL "?limit=50", NULL, SP_EFORBIDDEN, 0},
		{"GET", ALL "?limit=50", NULL, SP_ENOTFOUND, 0},
		{"GET", ALL "?limit=50", LIST("5", NOTICE("a", "n", "3", "ins-a", "2026-11-18T11:11:40Z")), 0, 0},
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
	};
	const char *id = "ins-a";
	int64_t at = -1;
	struct rig g;
	rig_first_list_fails(&g, replies, 4);
	assert_int_equal(notices_find(g.notices, "a/p", &id, 1, &at), 0);
	assert_int_equal(at, 0);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 1000);
	assert_false(notices_synced(g.notices));
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_of(g.notices, "a/p", "ins-a"), NOW + 300);
	rig_end(&g);
}

/* A list that keeps failing otherwise (a 5xx from a broken webhook, a page too large):
 * finds are pending for NOTICES_LIST_PATIENCE_SECONDS, then notices count as off (not
 * pending: only the scale-down waited for them) until a list works. Pages are small:
 * NOTICES_PAGE_LIMIT notices each. */
static void test_failing_list_turns_off(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", ALL "?limit=50", NULL, SP_ETRANSIENT, 0},
		{"GET", ALL "?limit=50", NULL, SP_ETRANSIENT, 0},
		{"GET", ALL "?limit=50", NULL, SP_ETOOBIG, 0},
		{"GET", ALL "?limit=50", LIST("5", NOTICE("a", "n", "3", "ins-a", "2026-11-18T11:11:40Z")), 0, 0},
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
	};
	const char *id = "ins-a";
	int64_t at;
	struct rig g;
	rig_first_list_fails(&g, replies, 5);
	assert_int_equal(notices_find(g.notices, "a/p", &id, 1, &at), SP_ETRANSIENT);
	test_clock_advance_ms(&g.clock, (NOTICES_LIST_PATIENCE_SECONDS - 1) * 1000);
	notices_round(g.notices, 0, &g.kube);
	assert_int_equal(notices_find(g.notices, "a/p", &id, 1, &at), SP_ETRANSIENT);
	test_clock_advance_ms(&g.clock, 1000);
	notices_round(g.notices, 0, &g.kube);
	assert_int_equal(notices_find(g.notices, "a/p", &id, 1, &at), 0);
	assert_int_equal(at, 0);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_of(g.notices, "a/p", "ins-a"), NOW + 300);
	rig_end(&g);
}

/* Healthy while every watcher's thread shows life: a round, an event. */
static void test_healthy(void **state)
{
	(void)state;
	const struct reply replies[] = {LISTED(LIST("1", ""), "1")};
	struct rig g;
	rig_start(&g, replies, 2, NULL, (struct notices_config){0});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_true(notices_healthy(g.notices, 10000));
	test_clock_advance_ms(&g.clock, 10001);
	assert_false(notices_healthy(g.notices, 10000));
	rig_end(&g);
}

/* A relist RBAC refuses (a role revoked) or of a CRD deleted after earlier lists forgets
 * that watch's notices: withdrawn ones must not doom instances any more. */
static void test_refused_relist_forgets(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		const struct reply replies[] = {
			{"GET", ALL "?limit=50", LIST("5", NOTICE("a", "n", "3", "ins-a", "2026-11-18T11:11:40Z")), 0, 0},
			{"WATCH", WATCH(ALL, "5"), "[{\"type\":\"ERROR\",\"object\":{\"code\":410}}]", 0, 10},
			{"GET", ALL "?limit=50", NULL, c == 0 ? SP_EFORBIDDEN : SP_ENOTFOUND, 0},
		};
		struct rig g;
		rig_start(&g, replies, 3, NULL, (struct notices_config){0});
		assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
		assert_int_equal(deadline_of(g.notices, "a/p", "ins-a"), NOW + 300);
		*told = '\0';
		assert_int_equal(notices_round(g.notices, 0, &g.kube), 500);
		assert_int_equal(deadline_of(g.notices, "a/p", "ins-a"), 0);
		assert_int_equal(notices_count(g.notices), 0);
		assert_string_equal(told, "a/p");
		rig_end(&g);
	}
}

/* One watch per namespace (a repeated one once) and one of the home namespace; a 410
 * relist of one forgets the notices its new list lacks, never another namespace's;
 * finds are pending until every watch listed. */
static void test_namespaces(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", IN("a") "?limit=50", LIST("5", NOTICE("a", "n1", "3", "ins-a", "2026-11-18T11:11:40Z")), 0, 0},
		{"WATCH", WATCH(IN("a"), "5"), NULL, 0, 2000},
		{"GET", IN("home") "?limit=50", LIST("6", NOTICE("home", "n2", "4", "ins-b", "2026-11-18T11:11:40Z")), 0, 0},
		{"WATCH", WATCH(IN("home"), "6"), "[{\"type\":\"ERROR\",\"object\":{\"code\":410}}]", 0, 10},
		{"GET", IN("home") "?limit=50", LIST("9", ""), 0, 0},
		{"WATCH", WATCH(IN("home"), "9"), NULL, 0, 2000},
	};
	const char *const namespaces[] = {"a", "a", NULL};
	struct rig g;
	rig_start(&g, replies, 6, namespaces, (struct notices_config){.home_namespace = "home"});
	const char *ids[] = {"ins-a", "ins-b"};
	int64_t at[2];
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(notices_find(g.notices, "a/p", ids, 2, at), SP_ETRANSIENT);
	assert_int_equal(notices_round(g.notices, 1, &g.kube), 0);
	assert_true(notices_synced(g.notices));
	assert_int_equal(notices_find(g.notices, "a/p", ids, 2, at), 0);
	assert_int_equal(at[0], NOW + 300);
	assert_int_equal(at[1], NOW + 300);
	*told = '\0';
	assert_int_equal(notices_round(g.notices, 1, &g.kube), 0);
	assert_string_equal(told, "a/p");
	notices_find(g.notices, "a/p", ids, 2, at);
	assert_int_equal(at[0], NOW + 300);
	assert_int_equal(at[1], 0);
	rig_end(&g);
}

/* Adds notice ns/n<name> of instance ins-<ns>-<id> through watcher 0. */
static void add_notice_of(struct notices *n, const char *type, const char *ns, int name, int id)
{
	char obj[512];
	snprintf(obj, sizeof(obj), NOTICE("%s", "n%05d", "3", "ins-%s-%05d", "2026-11-18T11:11:40Z"), ns, name, ns, id);
	cJSON *o = cJSON_Parse(obj);
	notices_apply_event(n, 0, type, o);
	cJSON_Delete(o);
}

/* Adds notice ns/n<i> of instance ins-<ns>-<i>. */
static void add_notice(struct notices *n, const char *type, const char *ns, int i)
{
	add_notice_of(n, type, ns, i, i);
}

/* The replies of four rounds of all namespaces: an empty list and its watch, two more
 * watches, then a relist that holds only notice, and its watch. */
#define RELISTED(notice)                                                                              \
	{                                                                                              \
		{"GET", ALL "?limit=50", LIST("1", ""), 0, 0}, {"WATCH", WATCH(ALL, "1"), NULL, 0, 2000},      \
		{"WATCH", WATCH(ALL, "1"), NULL, 0, 2000}, {"WATCH", WATCH(ALL, "1"), NULL, 0, 2000},          \
		{"GET", ALL "?limit=50", LIST("2", notice), 0, 0}, {"WATCH", WATCH(ALL, "2"), NULL, 0, 2000}, \
	}

static int64_t deadline_in(struct notices *n, const char *ns, int i)
{
	char id[64], pool[64];
	snprintf(id, sizeof(id), "ins-%s-%05d", ns, i);
	snprintf(pool, sizeof(pool), "%s/p", ns);
	return deadline_of(n, pool, id);
}

/* Notices of instances no pool asked about: at most NOTICES_NAMESPACE_MAX of one
 * namespace are kept (another namespace's still are; the home namespace has no such
 * share), and at most NOTICES_UNCLAIMED_MAX in all; a notice of an instance a pool trusting it asked about is kept beyond both,
 * at most NOTICES_INSTANCE_MAX of one instance in one namespace. One more is ignored
 * until one goes, then the round that ends relists (the watch does not bring it
 * again). */
static void test_bounded(void **state)
{
	(void)state;
	const struct reply replies[] = RELISTED(NOTICE("a", "n00100", "3", "ins-a-00100", "2026-11-18T11:11:40Z"));
	struct rig g;
	rig_start(&g, replies, 6, NULL, (struct notices_config){.home_namespace = "home"});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	for (int i = 0; i <= NOTICES_NAMESPACE_MAX; i++)
		add_notice(g.notices, "ADDED", "a", i);
	add_notice(g.notices, "ADDED", "b", 0);
	assert_int_equal(notices_count(g.notices), NOTICES_NAMESPACE_MAX + 1);
	for (int i = 0; i <= NOTICES_NAMESPACE_MAX; i++)
		add_notice(g.notices, "ADDED", "home", i);
	assert_int_equal(notices_count(g.notices), 2 * NOTICES_NAMESPACE_MAX + 2);
	assert_int_equal(deadline_of(g.notices, "x/p", "ins-a-00100"), 0);  /* x/p does not trust a */
	assert_int_equal(deadline_of(g.notices, "x/p", "ins-a-00042"), 0);
	assert_int_equal(deadline_in(g.notices, "a", 42), NOW + 300);
	assert_int_equal(deadline_in(g.notices, "b", 0), NOW + 300);
	char ns[16];
	for (int k = 0; notices_count(g.notices) < NOTICES_UNCLAIMED_MAX; k++)
		for (int i = 0; i < NOTICES_NAMESPACE_MAX && notices_count(g.notices) < NOTICES_UNCLAIMED_MAX; i++) {
			snprintf(ns, sizeof(ns), "c%d", k);
			add_notice(g.notices, "ADDED", ns, i);
		}
	add_notice(g.notices, "ADDED", "b", 1);
	assert_int_equal(notices_count(g.notices), NOTICES_UNCLAIMED_MAX);
	/* d/p's instance: kept though the unclaimed are full, NOTICES_INSTANCE_MAX of ten. */
	assert_int_equal(deadline_in(g.notices, "d", 0), 0);
	for (int i = 0; i < 10; i++)
		add_notice_of(g.notices, "ADDED", "d", i, 0);
	assert_int_equal(notices_count(g.notices), NOTICES_UNCLAIMED_MAX + NOTICES_INSTANCE_MAX);
	assert_int_equal(deadline_in(g.notices, "d", 0), NOW + 300);
	/* Still full: the round ends without a relist. */
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	/* One of a's goes (during the next watch): that round's end asks for a relist, and
	 * the next round's list keeps a's skipped notice. */
	add_notice(g.notices, "DELETED", "a", 0);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(notices_count(g.notices), NOTICES_UNCLAIMED_MAX + NOTICES_INSTANCE_MAX - 1);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_in(g.notices, "a", NOTICES_NAMESPACE_MAX), NOW + 300);
	rig_end(&g);
}

/* One tenant's namespaces cannot crowd out another's: ten namespaces holding 1,000
 * notices each for made-up instances, then a notice in an eleventh namespace for an
 * instance a pool there asked about is kept and honoured; so is one for an instance no
 * pool asked about yet (a pool's first pass after a restart comes after the first
 * list). One skipped because its namespace's unclaimed share is full (a wave of notices
 * before the pools' first passes) is kept once a pool there asks about its instance, by
 * the relist that ends the round; made-up ones never ask for a relist. */
static void test_no_crowding(void **state)
{
	(void)state;
	const struct reply replies[] = RELISTED(NOTICE("w", "n00100", "3", "ins-w-00100", "2026-11-18T11:11:40Z"));
	struct rig g;
	rig_start(&g, replies, 6, NULL, (struct notices_config){0});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_in(g.notices, "k", 0), 0);  /* pool k/p's pass: ins-k-00000 is its */
	char ns[16];
	for (int k = 0; k < 10; k++)
		for (int i = 0; i < 1000; i++) {
			snprintf(ns, sizeof(ns), "c%d", k);
			add_notice(g.notices, "ADDED", ns, i);
		}
	add_notice(g.notices, "ADDED", "k", 0);
	assert_int_equal(deadline_in(g.notices, "k", 0), NOW + 300);
	add_notice(g.notices, "ADDED", "j", 0);
	assert_int_equal(deadline_in(g.notices, "j", 0), NOW + 300);
	for (int i = 0; i <= NOTICES_NAMESPACE_MAX; i++)
		add_notice(g.notices, "ADDED", "w", i);
	size_t count = notices_count(g.notices);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);  /* nothing would be kept: no relist */
	assert_int_equal(deadline_in(g.notices, "w", NOTICES_NAMESPACE_MAX), 0);  /* w/p asks */
	assert_int_equal(notices_count(g.notices), count);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);  /* relisted after it */
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_in(g.notices, "w", NOTICES_NAMESPACE_MAX), NOW + 300);
	rig_end(&g);
}

static bool z_has_pools;

static bool pools_in(void *ud, const char *ns)
{
	(void)ud;
	return strcmp(ns, "a") == 0 || (z_has_pools && strcmp(ns, "z") == 0);
}

/* Notices of a namespace where no pool is (but the home one) are not kept: one may not
 * fill the cache from there. Once a pool comes there, the round that ends relists. */
static void test_untrusted_not_kept(void **state)
{
	(void)state;
#define OF(ns) NOTICE(ns, "n", "3", "ins-" ns, "2026-11-18T11:11:40Z")
	const char *list = LIST("5", OF("a") "," OF("home") "," OF("z"));
#undef OF
	const struct reply replies[] = {
		LISTED(list, "5"),
		{"WATCH", WATCH(ALL, "5"), NULL, 0, 2000},
		LISTED(list, "5"),
	};
	struct rig g;
	z_has_pools = false;
	rig_start(&g, replies, 5, NULL,
		  (struct notices_config){.home_namespace = "home", .namespace_wanted = pools_in});
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(notices_count(g.notices), 2);
	assert_int_equal(deadline_of(g.notices, "z/p", "ins-z"), 0);
	assert_int_equal(deadline_of(g.notices, "z/p", "ins-home"), NOW + 300);
	z_has_pools = true;  /* during the next watch */
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(notices_round(g.notices, 0, &g.kube), 0);
	assert_int_equal(deadline_of(g.notices, "z/p", "ins-z"), NOW + 300);
	rig_end(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_events_and_find),
		cmocka_unit_test(test_trust_and_bounds),
		cmocka_unit_test(test_expired_deleted),
		cmocka_unit_test(test_expired_deletions_paced),
		cmocka_unit_test(test_unavailable),
		cmocka_unit_test(test_namespaces),
		cmocka_unit_test(test_refused_relist_forgets),
		cmocka_unit_test(test_healthy),
		cmocka_unit_test(test_deadline_clamped_to_our_clock),
		cmocka_unit_test(test_failing_list_turns_off),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_no_crowding),
		cmocka_unit_test(test_untrusted_not_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
