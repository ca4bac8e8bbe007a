/* nodes: the Node cache through a fake apiserver port and a fake clock: a paged list
 * fills it with views, events keep it current, a 410 relists and forgets what went, a
 * dropped watch backs off; the pools whose instances' Nodes changed are told (and only
 * when what spotpool reads of a Node changed); a forbidden list leaves finds unanswered;
 * nodes_delete takes a 404 for done; nodes_find_live matches every page the apiserver
 * lists. */
#include "testutil.h"
#include "fakekube.h"
#include "nodes.h"

static char told[512];

static void on_changed(void *ud, const char *pool)
{
	(void)ud;
	snprintf(told + strlen(told), sizeof(told) - strlen(told), "%s%s", *told ? " " : "", pool);
}

/* Node name's InternalIP is 10.9.<name>, the private IP of instance ins-<name> (want()). */
#define ADDRESS(name) "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.9." name "\"}]"
#define NODE(name, rv, extra)                                                              \
	"{\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"" extra "},"    \
	"\"status\":{" ADDRESS(name) "}}"
#define READY(name, rv, ready, beat)                                                       \
	"{\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"},"             \
	"\"spec\":{\"providerID\":\"qcloud:///900002/ins-" name "\"},"                       \
	"\"status\":{" ADDRESS(name) ",\"conditions\":[{\"type\":\"Ready\",\"status\":\"" ready "\"," \
	"\"lastHeartbeatTime\":\"" beat "\",\"lastTransitionTime\":\"2026-11-25T00:00:00Z\"}]}}"
#define LIST(rv, cont, items)                                                              \
	"{\"metadata\":{\"resourceVersion\":\"" rv "\",\"continue\":\"" cont "\"},\"items\":[" items "]}"
#define EVENT(type, obj) "{\"type\":\"" type "\",\"object\":" obj "}"
#define WATCH_FROM(rv) "/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=" rv

struct rig {
	struct test_clock clock;
	struct sp_clock port;
	struct fake_api api;
	struct kube_api kube;
	struct nodes *nodes;
};

static void rig_start(struct rig *g, const struct reply *replies, size_t n)
{
	*g = (struct rig){.clock = {.now = 1795000000, .mono_ms = 5000000}};
	g->port = test_clock_port(&g->clock);
	g->kube = fake_api_bind(&g->api, replies, n, &g->clock);
	struct nodes_config cfg = {.clock = &g->port, .changed = on_changed};
	*told = '\0';
	g->nodes = nodes_new(&cfg);
}

static void rig_end(struct rig *g)
{
	assert_int_equal(g->api.next, g->api.n);
	nodes_free(g->nodes);
}

/* Instance ins-<x> and its private IP 10.9.<x> (ADDRESS). */
static struct node_want want_of(const char *id)
{
	static char ips[4][32];
	static size_t k;
	char *ip = ips[k++ % 4];
	snprintf(ip, sizeof(ips[0]), "10.9.%s", id + strlen("ins-"));
	return (struct node_want){.id = id, .ip = ip};
}

/* The Node name found for instance id, "" for none. */
static const char *node_of(struct nodes *n, const char *pool, const char *id, struct node_view *v)
{
	struct node_want want = want_of(id);
	enum node_by by;
	assert_int_equal(nodes_find(n, pool, &want, 1, v, &by, NULL), 0);
	return v->name;
}

static void test_list_and_events(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", "/api/v1/nodes?limit=500", LIST("5", "next", READY("a", "3", "False", "t1")), 0, 0},
		{"GET", "/api/v1/nodes?limit=500&continue=next", LIST("6", "", READY("b", "4", "True", "t1")), 0, 0},
		{"WATCH", WATCH_FROM("6"),
		 "[" EVENT("MODIFIED", READY("a", "7", "False", "t2")) ","  /* a heartbeat: nothing read changed */
		 EVENT("BOOKMARK", "{\"metadata\":{\"resourceVersion\":\"8\"}}") ","
		 EVENT("MODIFIED", READY("a", "9", "True", "t3")) ","
		 EVENT("DELETED", READY("b", "10", "True", "t3")) ","
		 EVENT("ADDED", NODE("c", "11", ",\"labels\":{\"" NODE_LABEL_INSTANCE_ID "\":\"ins-c\"}")) "]",
		 0, 2000},
	};
	struct rig g;
	rig_start(&g, replies, 3);
	struct node_view v;
	struct node_want want = want_of("ins-a");
	enum node_by by;
	/* Not listed yet: nothing known, but the pool's instances are remembered. */
	assert_int_equal(nodes_find(g.nodes, "ns/p", &want, 1, &v, &by, NULL), SP_ETRANSIENT);
	assert_false(nodes_synced(g.nodes));
	struct node_want want_b = want_of("ins-b"), want_c = want_of("ins-c");
	assert_int_equal(nodes_find(g.nodes, "ns/q", &want_b, 1, &v, &by, NULL), SP_ETRANSIENT);
	assert_int_equal(nodes_get(g.nodes, "a", &v), SP_ETRANSIENT);
	assert_int_equal(nodes_round(g.nodes, &g.kube), 0);
	/* By name (the check of a Node deletion read back from the status). */
	assert_int_equal(nodes_get(g.nodes, "c", &v), 0);
	assert_string_equal(v.label_id, "ins-c");
	assert_int_equal(nodes_get(g.nodes, "b", &v), SP_ENOTFOUND);
	assert_true(nodes_synced(g.nodes));
	/* The list told each pool of its Node; the watch: p when a became Ready (not at its
	 * heartbeat), q when b went; nobody wants c yet. */
	assert_string_equal(told, "ns/p ns/q ns/p ns/q");
	assert_int_equal(nodes_count(g.nodes), 2);
	assert_string_equal(node_of(g.nodes, "ns/p", "ins-a", &v), "a");
	assert_true(v.ready);
	assert_string_equal(node_of(g.nodes, "ns/q", "ins-b", &v), "");
	assert_int_equal(nodes_find(g.nodes, "ns/r", &want_c, 1, &v, &by, NULL), 0);
	assert_string_equal(v.name, "c");
	assert_int_equal(by, NODE_BY_LABEL);
	/* A forgotten pool is told nothing more. */
	nodes_forget(g.nodes, "ns/r");
	*told = '\0';
	cJSON *c = cJSON_Parse(NODE("c", "12", ",\"labels\":{\"" NODE_LABEL_INSTANCE_ID "\":\"ins-c\"}"));
	nodes_apply_event(g.nodes, "DELETED", c);
	cJSON_Delete(c);
	assert_string_equal(told, "");
	assert_int_equal(nodes_count(g.nodes), 1);
	rig_end(&g);
}

/* A 410 relists: a Node missing from the new list is gone (its pool told); a dropped
 * watch reconnects from the last resourceVersion after 0.5 s, then 1 s. */
static void test_gone_relists_and_drops_back_off(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", "/api/v1/nodes?limit=500", LIST("5", "", READY("a", "3", "True", "t") "," READY("b", "4", "True", "t")), 0, 0},
		{"WATCH", WATCH_FROM("5"), "[{\"type\":\"ERROR\",\"object\":{\"code\":410}}]", 0, 10},
		{"GET", "/api/v1/nodes?limit=500", LIST("20", "", READY("a", "3", "True", "t")), 0, 0},
		{"WATCH", WATCH_FROM("20"), NULL, SP_ETRANSIENT, 10},
		{"WATCH", WATCH_FROM("20"), NULL, 0, 10},
	};
	struct rig g;
	rig_start(&g, replies, 5);
	struct node_view v;
	struct node_want want = want_of("ins-b");
	enum node_by by;
	nodes_find(g.nodes, "ns/p", &want, 1, &v, &by, NULL);
	assert_int_equal(nodes_round(g.nodes, &g.kube), 0);
	*told = '\0';
	assert_int_equal(nodes_round(g.nodes, &g.kube), 500);
	assert_string_equal(told, "ns/p");
	assert_int_equal(nodes_count(g.nodes), 1);
	assert_int_equal(nodes_round(g.nodes, &g.kube), 1000);
	rig_end(&g);
}

/* RBAC refuses the list: finds answer SP_EFORBIDDEN (no Node features, nothing to wait
 * for), the list is retried with the backoff. */
static void test_forbidden(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", "/api/v1/nodes?limit=500", NULL, SP_EFORBIDDEN, 0},
		{"GET", "/api/v1/nodes?limit=500", NULL, SP_EFORBIDDEN, 0},
	};
	struct rig g;
	rig_start(&g, replies, 2);
	assert_int_equal(nodes_round(g.nodes, &g.kube), 500);
	assert_int_equal(nodes_round(g.nodes, &g.kube), 1000);
	assert_false(nodes_synced(g.nodes));
	struct node_view v;
	struct node_want want = want_of("ins-a");
	enum node_by by;
	/* refused, not pending: passes go on without Node features (nothing to wait for) */
	assert_int_equal(nodes_find(g.nodes, "ns/p", &want, 1, &v, &by, NULL), SP_EFORBIDDEN);
	rig_end(&g);
}

/* What the cache keeps of a Node is its view, whatever the object's size. */
/* A Node's reclaim deadline is a claim bounded from when the cache first saw it (issue
 * 27 item 1, doom.h): the first sight is kept on the controller's clock while the Node
 * claims the same deadline (heartbeats, a relist), taken again when it claims another,
 * and forgotten with the claim. */
#define CLAIM(name, rv, at)                                                                \
	"{\"metadata\":{\"name\":\"" name "\",\"resourceVersion\":\"" rv "\"},"             \
	"\"spec\":{\"providerID\":\"qcloud:///900002/ins-" name "\"},"                       \
	"\"status\":{" ADDRESS(name) ",\"conditions\":[{\"type\":\"" NODE_CONDITION_TERMINATING "\","  \
	"\"status\":\"True\",\"message\":\"" NODE_TERMINATING_PREFIX at "\"}]}}"

static void test_claim_first_seen(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", "/api/v1/nodes?limit=500", LIST("5", "", ""), 0, 0},
		{"WATCH", WATCH_FROM("5"), "[]", 0, 0},
	};
	struct rig g;
	rig_start(&g, replies, 2);
	static const struct {
		const char *json;
		int64_t advance, claimed, seen;
	} rows[] = {
		{CLAIM("a", "1", "2036-11-25T07:15:09Z"), 0, 2111210109, 1795000000},
		{CLAIM("a", "2", "2036-11-25T07:15:09Z"), 30, 2111210109, 1795000000},  /* the same claim */
		{CLAIM("a", "3", "2000-01-01T00:00:00Z"), 30, 946684800, 1795000060},   /* another one */
		{READY("a", "4", "True", "t1"), 30, 0, 0},                              /* withdrawn */
		{CLAIM("a", "5", "2000-01-01T00:00:00Z"), 30, 946684800, 1795000120},   /* new again */
	};
	nodes_round(g.nodes, &g.kube);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		g.clock.now += rows[i].advance;
		cJSON *obj = cJSON_Parse(rows[i].json);
		nodes_apply_event(g.nodes, "MODIFIED", obj);
		cJSON_Delete(obj);
		struct node_view v;
		assert_string_equal(node_of(g.nodes, "ns/p", "ins-a", &v), "a");
		assert_int_equal(v.terminating_at, rows[i].claimed);
		assert_int_equal(v.terminating_seen, rows[i].seen);
	}
	rig_end(&g);
}

static void test_bounded_per_node(void **state)
{
	(void)state;
	assert_true(sizeof(struct node_view) <= 512);
}

static void test_delete(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"DELETE", "/api/v1/nodes/10.0.0.7", "{}", 0, 0},
		{"DELETE", "/api/v1/nodes/gone", NULL, SP_ENOTFOUND, 0},
		{"DELETE", "/api/v1/nodes/reused", NULL, SP_ECONFLICT, 0},
		{"DELETE", "/api/v1/nodes/kept", NULL, SP_EFORBIDDEN, 0},
		{"DELETE", "/api/v1/nodes/busy", NULL, SP_ETRANSIENT, 0},
	};
	struct test_clock clock = {0};
	struct fake_api api;
	struct kube_api kube = fake_api_bind(&api, replies, 5, &clock);
	struct sp_error err = {0};
	/* Only the Node of that UID: a name reused by a new Node is not deleted. */
	assert_int_equal(nodes_delete(&kube, "10.0.0.7", "u-1", &err), 0);
	assert_string_equal(api.last_body, "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
			    "\"preconditions\":{\"uid\":\"u-1\"}}");
	/* Gone, or the name is another Node's now (409, the precondition failed): not
	 * there any more, nothing to retry. */
	assert_int_equal(nodes_delete(&kube, "gone", "u-2", &err), SP_ENOTFOUND);
	assert_int_equal(nodes_delete(&kube, "reused", "u-3", &err), SP_ENOTFOUND);
	assert_int_equal(err.code, SP_ENOTFOUND);
	assert_int_equal(nodes_delete(&kube, "kept", "u-4", &err), SP_EFORBIDDEN);
	assert_int_equal(nodes_delete(&kube, "busy", "u-5", &err), SP_ETRANSIENT);
	assert_contains(err.msg, "deleting node busy (uid u-5): ");
	assert_int_equal(api.next, 5);
}

/* The live list: every page from the apiserver (no cache), matched by the same rules
 * (a: by providerID; b declares ins-x with another address: refused, and no Node of
 * ins-x); a page that fails writes nothing and says which list failed. */
static void test_find_live(void **state)
{
	(void)state;
	const struct reply replies[] = {
		{"GET", "/api/v1/nodes?limit=500", LIST("5", "next", READY("a", "3", "True", "t1")), 0, 0},
		{"GET", "/api/v1/nodes?limit=500&continue=next",
		 LIST("6", "", NODE("b", "4", ",\"labels\":{\"" NODE_LABEL_INSTANCE_ID "\":\"ins-x\"}")), 0, 0},
		{"GET", "/api/v1/nodes?limit=500", NULL, SP_ETRANSIENT, 0},
	};
	struct test_clock clock = {0};
	struct fake_api api;
	struct kube_api kube = fake_api_bind(&api, replies, 3, &clock);
	struct node_want want[2] = {want_of("ins-a"), want_of("ins-x")};
	struct node_view v[2];
	enum node_by by[2];
	struct node_refusals refused = {0};
	struct sp_error err = {0};
	assert_int_equal(nodes_find_live(&kube, want, 2, v, by, &refused, &err), 0);
	assert_string_equal(v[0].name, "a");
	assert_int_equal(by[0], NODE_BY_PROVIDER_ID);
	assert_true(v[0].ready);
	assert_string_equal(v[1].name, "");
	assert_int_equal(refused.n, 1);
	assert_string_equal(refused.v[0].node, "b");
	node_refusals_clear(&refused);
	v[0].ready = false;
	assert_int_equal(nodes_find_live(&kube, want, 2, v, by, &refused, &err), SP_ETRANSIENT);
	assert_false(v[0].ready);
	assert_contains(err.msg, "listing nodes: ");
	assert_int_equal(refused.n, 0);
	assert_int_equal(api.next, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_and_events),
		cmocka_unit_test(test_gone_relists_and_drops_back_off),
		cmocka_unit_test(test_forbidden),
		cmocka_unit_test(test_claim_first_seen),
		cmocka_unit_test(test_bounded_per_node),
		cmocka_unit_test(test_delete),
		cmocka_unit_test(test_find_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
