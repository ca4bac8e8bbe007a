/* informer: the cache only moves forward. A lagging or replayed watch event must not
 * overwrite a newer cached object, a deleted uid must not come back, and a recreated
 * object (new uid) replaces the old one whatever its resourceVersion. */
#include "testutil.h"
#include "informer.h"

static int enqueued, deleted;

static void on_enqueue(void *ud, const char *key, bool at_once)
{
	(void)ud, (void)key, (void)at_once;
	enqueued++;
}

static void on_deleted(void *ud, const char *key)
{
	(void)ud, (void)key;
	deleted++;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rv_newer),
		cmocka_unit_test(test_older_event_ignored),
		cmocka_unit_test(test_opaque_rv_accepted),
		cmocka_unit_test(test_update_carrying_a_change_enqueues),
		cmocka_unit_test(test_recreated_replaces),
		cmocka_unit_test(test_delete_is_final),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
