/* informer: the cache only moves forward. A lagging or replayed watch event must not
 * overwrite a newer cached object, a deleted uid must not come back, and a recreated
 * object (new uid) replaces the old one whatever its resourceVersion. And the
 * list+watch rounds, driven through a fake apiserver port and a fake clock: the list
 * fills the cache, events apply, a watch that drops resumes from the last
 * resourceVersion with a backoff, a 410 relists and forgets what disappeared,
 * bookmarks move the resourceVersion. */
#include "testutil.h"
#include "fakekube.h"
#include "informer.h"

static int enqueued, deleted;
/* What the owner was told, in order: "+key" (look now), "~key" (when its backoff
 * allows), "-key" (deleted), space-separated. */
static char told[1024];

static void tell(char sign, const char *key)
{
	size_t n = strlen(told);
	snprintf(told + n, sizeof(told) - n, "%s%c%s", n ? " " : "", sign, key);
}

static void on_enqueue(void *ud, const char *key, bool at_once)
{
	(void)ud;
	enqueued++;
	tell(at_once ? '+' : '~', key);
}

static void on_deleted(void *ud, const char *key)
{
	(void)ud;
	deleted++;
	tell('-', key);
}

static struct informer *new_informer(void)
{
	static struct strv none;
	struct informer_config cfg = {.namespaces = &none, .enqueue = on_enqueue, .deleted = on_deleted};
	enqueued = deleted = 0;
	return informer_new(&cfg);
}

static cJSON *pool(const char *uid, const char *rv, int replicas)
{
	char *json = xasprintf("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p\",\"uid\":\"%s\","
			       "\"resourceVersion\":\"%s\",\"generation\":%d},\"spec\":{\"replicas\":%d}}",
			       uid, rv, replicas, replicas);
	cJSON *obj = cJSON_Parse(json);
	free(json);
	assert_non_null(obj);
	return obj;
}

static void apply(struct informer *inf, const char *type, const char *uid, const char *rv, int replicas)
{
	cJSON *obj = pool(uid, rv, replicas);
	informer_apply_event(inf, type, obj);
	cJSON_Delete(obj);
}

/* The cached replicas and resourceVersion; -1 when not cached. */
static int cached_replicas(struct informer *inf, char *ret_rv, size_t n)
{
	cJSON *obj = informer_get(inf, "ns/p");
	if (!obj)
		return -1;
	int r = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"), "replicas")->valueint;
	if (ret_rv)
		snprintf(ret_rv, n, "%s", informer_resource_version(obj));
	cJSON_Delete(obj);
	return r;
}

static void test_rv_newer(void **state)
{
	(void)state;
	assert_false(informer_rv_newer("120", "100"));
	assert_false(informer_rv_newer("120", "120"));
	assert_true(informer_rv_newer("120", "130"));
	assert_true(informer_rv_newer("99", "100"));  /* numeric, not lexical */
	assert_false(informer_rv_newer("100", "99"));
	assert_true(informer_rv_newer("18446744073709551614", "18446744073709551615"));
	/* Not decimal uint64 on either side: opaque, take the event. */
	assert_true(informer_rv_newer("120", "abc"));
	assert_true(informer_rv_newer("abc", "100"));
	assert_true(informer_rv_newer("", "100"));
	assert_true(informer_rv_newer("120", "-5"));
	assert_true(informer_rv_newer("120", "18446744073709551616"));  /* overflows */
}

static void test_older_event_ignored(void **state)
{
	(void)state;
	struct informer *inf = new_informer();
	char rv[64];
	apply(inf, "ADDED", "u1", "120", 5);
	assert_int_equal(cached_replicas(inf, rv, sizeof(rv)), 5);
	/* A replay from an older resourceVersion: the HPA's 3 -> 5 must not read 3 again. */
	enqueued = 0;
	apply(inf, "MODIFIED", "u1", "100", 3);
	assert_int_equal(cached_replicas(inf, rv, sizeof(rv)), 5);
	assert_string_equal(rv, "120");
	assert_int_equal(enqueued, 0);
	apply(inf, "MODIFIED", "u1", "120", 3);  /* the same version again: nothing new */
	assert_int_equal(cached_replicas(inf, NULL, 0), 5);
	apply(inf, "MODIFIED", "u1", "130", 7);
	assert_int_equal(cached_replicas(inf, rv, sizeof(rv)), 7);
	assert_string_equal(rv, "130");
	assert_int_equal(enqueued, 1);
	informer_free(inf);
}

/* Review of the ordering fix: a pass read version 9; meanwhile the spec was edited (10);
 * the pass's write returned 11, which carries that edit. The watch's 10 and 11 are then
 * not newer than the cache and are dropped, so the update itself must enqueue the pool;
 * a status-only write does not. */
static void test_update_carrying_a_change_enqueues(void **state)
{
	(void)state;
	struct informer *inf = new_informer();
	apply(inf, "ADDED", "u1", "9", 2);
	cJSON *status_only = pool("u1", "10", 2);
	enqueued = 0;
	informer_update(inf, "ns/p", "9", status_only);
	assert_int_equal(enqueued, 0);
	cJSON *edited = pool("u1", "11", 4);  /* generation 4: the spec changed */
	informer_update(inf, "ns/p", "10", edited);
	assert_int_equal(enqueued, 1);
	apply(inf, "MODIFIED", "u1", "11", 4);  /* the watch's copy: not newer */
	assert_int_equal(enqueued, 1);
	assert_int_equal(cached_replicas(inf, NULL, 0), 4);
	cJSON_Delete(status_only);
	cJSON_Delete(edited);
	informer_free(inf);
}

static void test_opaque_rv_accepted(void **state)
{
	(void)state;
	struct informer *inf = new_informer();
	apply(inf, "ADDED", "u1", "120", 5);
	apply(inf, "MODIFIED", "u1", "opaque-1", 6);
	assert_int_equal(cached_replicas(inf, NULL, 0), 6);
	informer_free(inf);
}

static void test_recreated_replaces(void **state)
{
	(void)state;
	struct informer *inf = new_informer();
	char rv[64];
	apply(inf, "ADDED", "u1", "120", 5);
	/* Same name, new uid: a recreated object replaces even at a lower version. */
	apply(inf, "ADDED", "u2", "100", 2);
	assert_int_equal(cached_replicas(inf, rv, sizeof(rv)), 2);
	assert_string_equal(rv, "100");
	/* The old incarnation's late delete, older than the new object: it stays. */
	apply(inf, "DELETED", "u1", "90", 5);
	assert_int_equal(cached_replicas(inf, NULL, 0), 2);
	assert_int_equal(deleted, 0);
	informer_free(inf);
}

static void test_delete_is_final(void **state)
{
	(void)state;
	struct informer *inf = new_informer();
	apply(inf, "ADDED", "u1", "120", 5);
	/* A delete of the cached uid drops it, whatever its version says. */
	apply(inf, "DELETED", "u1", "110", 5);
	assert_int_equal(cached_replicas(inf, NULL, 0), -1);
	assert_int_equal(deleted, 1);
	/* A lagging update of the deleted uid does not bring it back. */
	apply(inf, "MODIFIED", "u1", "125", 5);
	assert_int_equal(cached_replicas(inf, NULL, 0), -1);
	assert_false(informer_has(inf, "ns/p"));
	/* A recreated object does. */
	apply(inf, "ADDED", "u2", "200", 1);
	assert_int_equal(cached_replicas(inf, NULL, 0), 1);
	informer_free(inf);
}

#define POOL(name, rv, gen)                                                                  \
	"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"" name "\",\"uid\":\"u-" name         \
	"\",\"resourceVersion\":\"" rv "\",\"generation\":" #gen "}}"
#define LIST(rv, items) "{\"metadata\":{\"resourceVersion\":\"" rv "\"},\"items\":[" items "]}"
#define EVENT(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}"
#define LIST_PATH "/apis/devops.jokerbai.com/v1/namespaces/ns/spotpools?limit=500"
#define WATCH_FROM(rv) "?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=" rv

/* An informer of namespaces "ns" and "other" on a fake clock; round() runs watcher 0
 * ("ns") against the replies. */
struct rig {
	struct test_clock clock;
	struct sp_clock port;
	struct strv namespaces;
	struct fake_api api;
	struct kube_api kube;
	struct informer *inf;
};

static void rig_start(struct rig *g, const struct reply *replies, size_t n)
{
	*g = (struct rig){.clock = {.now = 1795000000, .mono_ms = 5000000}};
	g->port = test_clock_port(&g->clock);
	strv_push(&g->namespaces, "ns");
	strv_push(&g->namespaces, "other");
	g->kube = fake_api_bind(&g->api, replies, n, &g->clock);
	struct informer_config cfg = {.clock = &g->port, .namespaces = &g->namespaces, .enqueue = on_enqueue,
				      .deleted = on_deleted};
	enqueued = deleted = 0;
	*told = '\0';
	g->inf = informer_new(&cfg);
}

static int64_t round_of(struct rig *g)
{
	*told = '\0';
	return informer_round(g->inf, 0, &g->kube);
}

/* Watcher 1 ("other") lists nothing at resourceVersion 7 and watches for watch_ms. */
static void round_of_other(struct rig *g, int64_t watch_ms)
{
	const struct reply replies[] = {
		{"GET", "/namespaces/other/spotpools?limit=500", LIST("7", ""), 0, 0},
		{"WATCH", WATCH_FROM("7"), NULL, 0, watch_ms},
	};
	struct fake_api api;
	struct kube_api kube = fake_api_bind(&api, replies, 2, &g->clock);
	informer_round(g->inf, 1, &kube);
	assert_int_equal(api.next, 2);
}

static void rig_end(struct rig *g)
{
	assert_int_equal(g->api.next, g->api.n);  /* every reply was asked for */
	informer_free(g->inf);
	strv_clear(&g->namespaces);
}

/* Cached keys, space-separated, in the informer's order. */
static void keys_of(struct informer *inf, char *out, size_t n)
{
	struct strv keys = {0};
	informer_keys(inf, &keys);
	*out = '\0';
	for (size_t i = 0; i < keys.n; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", keys.v[i]);
	strv_clear(&keys);
}

#define assert_keys(inf, expected)                                                          \
	do {                                                                                \
		char keys_[256];                                                            \
		keys_of((inf), keys_, sizeof(keys_));                                       \
		assert_string_equal(keys_, (expected));                                     \
	} while (0)

/* The first round lists every page (limit 500, then the continue token) into the
 * cache, tells the owner to look at each pool now, and watches from the list's
 * resourceVersion; only then is the watcher synced. */
static void test_list_fills_the_cache(void **state)
{
	(void)state;
	static const struct reply replies[] = {
		{"GET", LIST_PATH, "{\"metadata\":{\"resourceVersion\":\"90\",\"continue\":\"t 1\"},"
				   "\"items\":[" POOL("a", "50", 1) "]}", 0, 10},
		{"GET", LIST_PATH "&continue=t%201", LIST("100", POOL("b", "60", 1)), 0, 10},
		{"WATCH", WATCH_FROM("100"), NULL, 0, 300000},
	};
	struct rig g;
	rig_start(&g, replies, 3);
	assert_false(informer_synced(g.inf));
	assert_int_equal(round_of(&g), 0);  /* the watch ran its course: again at once */
	assert_string_equal(told, "+ns/a +ns/b");
	assert_keys(g.inf, "ns/a ns/b");
	assert_false(informer_synced(g.inf));  /* the "other" watcher has not listed */
	round_of_other(&g, 2000);
	assert_true(informer_synced(g.inf));
	rig_end(&g);
}

/* Events apply in order; a watch that drops resumes, without a list, from the
 * resourceVersion of the last event it delivered. */
static void test_watch_events_apply_and_resume(void **state)
{
	(void)state;
	static const struct reply replies[] = {
		{"GET", LIST_PATH, LIST("100", ""), 0, 0},
		{"WATCH", WATCH_FROM("100"),
		 "[" EVENT("ADDED", POOL("a", "101", 1)) "," EVENT("MODIFIED", POOL("a", "102", 2)) ","
		 EVENT("MODIFIED", POOL("a", "103", 2)) "," EVENT("ADDED", POOL("b", "104", 1)) ","
		 EVENT("DELETED", POOL("a", "105", 2)) "]", SP_ETRANSIENT, 20000},
		{"WATCH", WATCH_FROM("105"), "[" EVENT("MODIFIED", POOL("b", "106", 3)) "]", 0, 300000},
	};
	struct rig g;
	rig_start(&g, replies, 3);
	assert_int_equal(round_of(&g), 500);
	/* 103 changed only the status: cached, no look. */
	assert_string_equal(told, "+ns/a +ns/a +ns/b -ns/a");
	assert_keys(g.inf, "ns/b");
	assert_int_equal(round_of(&g), 0);
	assert_string_equal(told, "+ns/b");
	char rv[16];
	cJSON *b = informer_get(g.inf, "ns/b");
	snprintf(rv, sizeof(rv), "%s", informer_resource_version(b));
	cJSON_Delete(b);
	assert_string_equal(rv, "106");
	rig_end(&g);
}

/* How a watch ends decides the wait and what the next round asks: one MODIFIED event
 * (resourceVersion 105), then the ending. */
static const struct {
	const char *name;
	const char *ending;     /* an event after the MODIFIED, or "" */
	int rc;
	int64_t takes_ms;
	int64_t delay_ms;
	const struct reply next;
} endings[] = {
	{"server-side timeout", "", 0, 300000, 0, {"WATCH", WATCH_FROM("105"), NULL, 0, 0}},
	{"closed at once", "", 0, 100, 500, {"WATCH", WATCH_FROM("105"), NULL, 0, 0}},
	{"dropped", "", SP_ETRANSIENT, 40000, 500, {"WATCH", WATCH_FROM("105"), NULL, 0, 0}},
	{"410 Gone", "", SP_EGONE, 0, 0, {"GET", LIST_PATH, LIST("200", ""), 0, 0}},
	{"ERROR event 410", "," EVENT("ERROR", "{\"kind\":\"Status\",\"code\":410}"), 0, 5000, 0,
	 {"GET", LIST_PATH, LIST("200", ""), 0, 0}},
	{"ERROR event 500", "," EVENT("ERROR", "{\"kind\":\"Status\",\"code\":500}"), 0, 100, 500,
	 {"WATCH", WATCH_FROM("105"), NULL, 0, 0}},
};

static void test_watch_endings(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(endings) / sizeof(endings[0]); i++) {
		char *events = xasprintf("[" EVENT("MODIFIED", POOL("a", "105", 1)) "%s]", endings[i].ending);
		struct reply replies[] = {
			{"GET", LIST_PATH, LIST("100", POOL("a", "100", 1)), 0, 0},
			{"WATCH", WATCH_FROM("100"), events, endings[i].rc, endings[i].takes_ms},
			endings[i].next,
			{"WATCH", WATCH_FROM("200"), NULL, 0, 0},  /* after a relist */
		};
		size_t asked = strcmp(endings[i].next.kind, "GET") == 0 ? 4 : 3;
		struct rig g;
		rig_start(&g, replies, 2);
		int64_t delay = round_of(&g);
		if (delay != endings[i].delay_ms)
			fail_msg("%s: waits %lld ms", endings[i].name, (long long)delay);
		g.api.n = asked;
		round_of(&g);
		if (g.api.next != asked)
			fail_msg("%s: the next round did not ask %s", endings[i].name, endings[i].next.kind);
		rig_end(&g);
		free(events);
	}
}

/* A failed list and a watch that drops, each in a round of its own: the backoff each
 * asked for, and what was logged at info and above (to free). */
static char *failed_rounds(int64_t ret_delay[2])
{
	static const struct reply replies[] = {
		{"GET", LIST_PATH, NULL, SP_ETRANSIENT, 0},
		{"GET", LIST_PATH, LIST("100", ""), 0, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 20000},
	};
	struct rig g;
	rig_start(&g, replies, 3);
	struct test_log l;
	test_log_start(&l);
	ret_delay[0] = round_of(&g);
	ret_delay[1] = round_of(&g);
	char *text = (char *)test_log_end(&l);
	rig_end(&g);
	return text;
}

static int aborted_rounds(void *arg)
{
	(void)arg;
	http_abort_all();
	int64_t delay[2];
	char *text = failed_rounds(delay);
	bool ok = delay[0] == 500 && delay[1] == 1000 && !strstr(text, "warn") && !strstr(text, "spotpools (ns)");
	if (!ok)
		fprintf(stderr, "delays %lld, %lld; logged:\n%s", (long long)delay[0], (long long)delay[1], text);
	free(text);
	return ok ? 0 : 1;
}

/* A list that fails and a watch that drops are warnings (a lost watch is news). Once
 * the process is shutting down (http_abort_all, from SIGTERM or Ctrl-C) they are our
 * own stop, before the owner's comes: not a warning, though they back off the same.
 * The abort cannot be undone, so that half runs in a child. */
static void test_loss_is_a_warning_unless_shutting_down(void **state)
{
	(void)state;
	int64_t delay[2];
	char *text = failed_rounds(delay);
	assert_int_equal(delay[0], 500);
	assert_int_equal(delay[1], 1000);
	assert_contains(text, " warn  list spotpools (ns) failed, retrying in 500 ms: injected");
	assert_contains(text, " warn  watch spotpools (ns) ended: injected");
	free(text);
	test_in_child(aborted_rounds, NULL);
}

/* A watch the apiserver answers 429 (it asks us to come back, as while its cache of a
 * CRD just created initializes) is said at info for the first tries, then as a warning
 * when it goes on (backoff past 2 s); the backoff is that of any other loss. */
static void test_throttled_watch_is_info_at_first(void **state)
{
	(void)state;
	static const struct reply replies[] = {
		{"GET", LIST_PATH, LIST("100", ""), 0, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETHROTTLED, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETHROTTLED, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETHROTTLED, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETHROTTLED, 0},
	};
	static const int64_t delays[] = {500, 1000, 2000, 4000};
	static const char *const levels[] = {" info ", " info ", " info ", " warn "};
	struct rig g;
	rig_start(&g, replies, 5);
	for (size_t i = 0; i < 4; i++) {
		struct test_log l;
		test_log_start(&l);
		int64_t delay = round_of(&g);
		const char *text = test_log_end(&l);
		char *want = xasprintf("%s watch spotpools (ns) ended: injected", levels[i]);
		if (delay != delays[i] || !strstr(text, want))
			fail_msg("round %zu: waits %lld ms, logged: %s", i, (long long)delay, text);
		free(want);
		free(l.text);
	}
	rig_end(&g);
}

/* Failed lists and dropped watches back off 0.5 s, doubling up to 30 s; a watch that
 * runs its course resets the backoff. */
static void test_backoff(void **state)
{
	(void)state;
	static const struct reply replies[] = {
		{"GET", LIST_PATH, NULL, SP_ETRANSIENT, 0},
		{"GET", LIST_PATH, NULL, SP_EFORBIDDEN, 0},
		{"GET", LIST_PATH, LIST("100", ""), 0, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
		{"WATCH", WATCH_FROM("100"), NULL, 0, 300000},
		{"WATCH", WATCH_FROM("100"), NULL, SP_ETRANSIENT, 0},
	};
	static const int64_t delays[] = {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 0, 500};
	struct rig g;
	rig_start(&g, replies, sizeof(replies) / sizeof(replies[0]));
	for (size_t i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
		int64_t delay = round_of(&g);
		if (delay != delays[i])
			fail_msg("round %zu: waits %lld ms, expected %lld", i, (long long)delay, (long long)delays[i]);
		test_clock_advance_ms(&g.clock, delay);
	}
	rig_end(&g);
}

/* After a 410 the relist brings the cache to what the list says: a pool it no longer
 * shows is forgotten (and the owner told), one it shows unchanged is looked at only when
 * its backoff allows, a changed one at once. Another watcher's pools stay. */
static void test_relist_forgets_what_disappeared(void **state)
{
	(void)state;
	static const struct reply replies[] = {
		{"GET", LIST_PATH, LIST("100", POOL("a", "10", 1) "," POOL("b", "20", 1) "," POOL("c", "30", 1)), 0, 0},
		{"WATCH", WATCH_FROM("100"), NULL, SP_EGONE, 0},
		{"GET", LIST_PATH, LIST("300", POOL("a", "10", 1) "," POOL("c", "250", 2)), 0, 0},
		{"WATCH", WATCH_FROM("300"), NULL, 0, 300000},
	};
	struct rig g;
	rig_start(&g, replies, 4);
	cJSON *other = cJSON_Parse("{\"metadata\":{\"namespace\":\"other\",\"name\":\"x\",\"uid\":\"u-x\","
				   "\"resourceVersion\":\"5\"}}");
	informer_apply_event(g.inf, "ADDED", other);
	cJSON_Delete(other);
	assert_int_equal(round_of(&g), 0);
	assert_keys(g.inf, "other/x ns/a ns/b ns/c");
	assert_int_equal(round_of(&g), 0);
	assert_string_equal(told, "~ns/a +ns/c -ns/b");
	assert_keys(g.inf, "other/x ns/a ns/c");
	rig_end(&g);
}

/* A bookmark carries only a resourceVersion: nothing is cached or told, but the next
 * watch starts from it. */
static void test_bookmark_moves_the_resource_version(void **state)
{
	(void)state;
	static const struct reply replies[] = {
		{"GET", LIST_PATH, LIST("100", ""), 0, 0},
		{"WATCH", WATCH_FROM("100"),
		 "[" EVENT("BOOKMARK", "{\"kind\":\"Spotpool\",\"metadata\":{\"resourceVersion\":\"250\"}}") "]",
		 SP_ETRANSIENT, 60000},
		{"WATCH", WATCH_FROM("250"), NULL, 0, 300000},
	};
	struct rig g;
	rig_start(&g, replies, 3);
	assert_int_equal(round_of(&g), 500);
	assert_string_equal(told, "");
	assert_keys(g.inf, "");
	round_of(&g);
	rig_end(&g);
}

/* Healthy while every watcher showed life (a round started, an event came) within the
 * given quiet time, on the informer's clock. */
static void test_healthy_on_the_clock(void **state)
{
	(void)state;
	static const struct reply replies[] = {
		{"GET", LIST_PATH, LIST("100", ""), 0, 0},
		{"WATCH", WATCH_FROM("100"), "[" EVENT("ADDED", POOL("a", "101", 1)) "]", 0, 300000},
	};
	struct rig g;
	rig_start(&g, replies, 2);
	assert_true(informer_healthy(g.inf, 60000));
	test_clock_advance_ms(&g.clock, 60001);
	assert_false(informer_healthy(g.inf, 60000));
	round_of(&g);  /* the event came at the end of the 300 s watch */
	assert_false(informer_healthy(g.inf, 60000));  /* watcher 1 ("other") never ran */
	round_of_other(&g, 0);
	assert_true(informer_healthy(g.inf, 60000));
	test_clock_advance_ms(&g.clock, 60001);
	assert_false(informer_healthy(g.inf, 60000));
	rig_end(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rv_newer),
		cmocka_unit_test(test_older_event_ignored),
		cmocka_unit_test(test_opaque_rv_accepted),
		cmocka_unit_test(test_update_carrying_a_change_enqueues),
		cmocka_unit_test(test_recreated_replaces),
		cmocka_unit_test(test_delete_is_final),
		cmocka_unit_test(test_list_fills_the_cache),
		cmocka_unit_test(test_watch_events_apply_and_resume),
		cmocka_unit_test(test_watch_endings),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_loss_is_a_warning_unless_shutting_down),
		cmocka_unit_test(test_throttled_watch_is_info_at_first),
		cmocka_unit_test(test_relist_forgets_what_disappeared),
		cmocka_unit_test(test_bookmark_moves_the_resource_version),
		cmocka_unit_test(test_healthy_on_the_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
