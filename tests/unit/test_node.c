/* node: a Node's view from its JSON (odd input included) and the match of instances to
 * Nodes by providerID, label and InternalIP. */
#include "testutil.h"
#include "node.h"

static struct node_view view_of(const char *json)
{
	cJSON *obj = cJSON_Parse(json);
	assert_non_null(obj);
	struct node_view v;
	assert_true(node_view_from_json(obj, &v));
	cJSON_Delete(obj);
	return v;
}

static void test_view_full(void **state)
{
	(void)state;
	struct node_view v = view_of(
		"{\"metadata\":{\"name\":\"10.0.0.7\",\"uid\":\"6f1c2d3e-0000-4000-8000-00000000abcd\",\"labels\":{\"" NODE_LABEL_INSTANCE_ID "\":\"ins-lab\"},"
		"\"annotations\":{\"" NODE_ANNOTATION_DRAIN_STARTED "\":\"2026-11-25T03:00:00Z\","
		"\"" NODE_ANNOTATION_WAS_UNSCHEDULABLE "\":\"true\",\"" NODE_ANNOTATION_SCALE_DOWN_DISABLED "\":\"true\"}},"
		"\"spec\":{\"providerID\":\"qcloud:///900002/ins-abc\",\"unschedulable\":true,"
		"\"taints\":[{\"key\":\"other\",\"effect\":\"NoSchedule\"},"
		"{\"key\":\"" NODE_TAINT_DRAINING "\",\"effect\":\"NoSchedule\"}]},"
		"\"status\":{\"addresses\":[{\"type\":\"Hostname\",\"address\":\"h\"},"
		"{\"type\":\"InternalIP\",\"address\":\"10.0.0.7\"}],"
		"\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
		"{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"1970-01-01T00:01:40Z\"},"
		"{\"type\":\"SpotTerminating\",\"status\":\"True\",\"reason\":\"SpotInstanceTerminating\","
		"\"message\":\"reclaim at 1970-01-01T00:03:20Z\",\"lastTransitionTime\":\"1970-01-01T00:01:00Z\"}]}}");
	assert_string_equal(v.name, "10.0.0.7");
	assert_string_equal(v.uid, "6f1c2d3e-0000-4000-8000-00000000abcd");
	assert_string_equal(v.provider_id, "ins-abc");
	assert_string_equal(v.label_id, "ins-lab");
	assert_string_equal(node_instance_id(&v), "ins-abc");
	assert_string_equal(v.internal_ip, "10.0.0.7");
	assert_true(v.ready);
	assert_int_equal(v.ready_since, 100);
	assert_int_equal(v.terminating_at, 200);
	assert_true(v.unschedulable);
	assert_true(v.drain_taint);
	assert_int_equal(v.drain_started, 1795575600);
	assert_true(v.was_unschedulable);
	assert_true(v.scale_down_disabled);
}

/* Odd Nodes: each row a Node's JSON and what its view must say. */
static void test_view_odd_input(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		const char *provider_id, *label_id, *ip;
		bool ready, drain_taint;
		int64_t terminating_at;
	} rows[] = {
		/* nothing but a name */
		{"{\"metadata\":{\"name\":\"n\"}}", "", "", "", false, false, 0},
		/* a providerID without a slash is no provider URI; one ending in a slash names nothing */
		{"{\"metadata\":{\"name\":\"n\"},\"spec\":{\"providerID\":\"ins-abc\"}}", "", "", "", false, false, 0},
		{"{\"metadata\":{\"name\":\"n\"},\"spec\":{\"providerID\":\"qcloud:///900002/\"}}", "", "", "", false, false, 0},
		/* an ID longer than any instance's */
		{"{\"metadata\":{\"name\":\"n\"},\"spec\":{\"providerID\":\"qcloud:///1/ins-0123456789012345678901234567890\"}}",
		 "", "", "", false, false, 0},
		/* the TKE label when the spotpool label is absent or empty */
		{"{\"metadata\":{\"name\":\"n\",\"labels\":{\"" NODE_LABEL_TKE_INSTANCE_ID "\":\"ins-tke\"}}}",
		 "", "ins-tke", "", false, false, 0},
		{"{\"metadata\":{\"name\":\"n\",\"labels\":{\"" NODE_LABEL_INSTANCE_ID "\":\"\",\"" NODE_LABEL_TKE_INSTANCE_ID
		 "\":\"ins-tke\"}}}", "", "ins-tke", "", false, false, 0},
		/* wrong types everywhere */
		{"{\"metadata\":{\"name\":\"n\",\"labels\":[1]},\"spec\":{\"providerID\":7,\"taints\":{}},"
		 "\"status\":{\"addresses\":\"x\",\"conditions\":[{\"type\":\"Ready\",\"status\":true}]}}",
		 "", "", "", false, false, 0},
		/* Ready False or Unknown is not ready; a taint of ours with another effect is not the drain's */
		{"{\"metadata\":{\"name\":\"n\"},\"spec\":{\"taints\":[{\"key\":\"" NODE_TAINT_DRAINING
		 "\",\"effect\":\"NoExecute\"}]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}",
		 "", "", "", false, false, 0},
		/* SpotTerminating without a readable deadline, or not True */
		{"{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\","
		 "\"status\":\"True\",\"message\":\"soon\"}]}}", "", "", "", false, false, 0},
		{"{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\","
		 "\"status\":\"False\",\"message\":\"reclaim at 1970-01-01T00:03:20Z\"}]}}", "", "", "", false, false, 0},
		/* an InternalIP that is too long for an address */
		{"{\"metadata\":{\"name\":\"n\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
		 "\"0123456789012345678901234567890123456789012345678901234567890\"}]}}", "", "", "", false, false, 0},
		/* a dual-stack Node listing its IPv6 InternalIP first: the IPv4 one, which is what
		 * the cloud reports as the instance's private IP (else it never matches and its
		 * instance is taken as Node-less: terminated without a drain) */
		{"{\"metadata\":{\"name\":\"n\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
		 "\"fd00::7\"},{\"type\":\"InternalIP\",\"address\":\"10.0.0.7\"},{\"type\":\"InternalIP\","
		 "\"address\":\"10.0.0.8\"}]}}", "", "", "10.0.0.7", false, false, 0},
		/* IPv6 only: that one */
		{"{\"metadata\":{\"name\":\"n\"},\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
		 "\"fd00::7\"}]}}", "", "", "fd00::7", false, false, 0},
		/* Ready True without a time: ready, since unknown */
		{"{\"metadata\":{\"name\":\"n\"},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
		 "", "", "", true, false, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		struct node_view v = view_of(rows[i].json);
		assert_string_equal(v.name, "n");
		assert_string_equal(v.provider_id, rows[i].provider_id);
		assert_string_equal(v.label_id, rows[i].label_id);
		assert_string_equal(v.internal_ip, rows[i].ip);
		assert_int_equal(v.ready, rows[i].ready);
		assert_int_equal(v.ready_since, 0);
		assert_int_equal(v.drain_taint, rows[i].drain_taint);
		assert_int_equal(v.terminating_at, rows[i].terminating_at);
	}
}

static void test_view_names(void **state)
{
	(void)state;
	char name[NODE_NAME_MAX + 2];
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	static const char *const refused[] = {"{}", "{\"metadata\":{}}", "{\"metadata\":{\"name\":\"\"}}",
					      "{\"metadata\":{\"name\":5}}", "[]"};
	struct node_view v;
	for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
		cJSON *obj = cJSON_Parse(refused[i]);
		assert_false(node_view_from_json(obj, &v));
		cJSON_Delete(obj);
	}
	/* 254 characters: no Node's name; 253: kept whole */
	cJSON *obj = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(obj, "metadata"), "name", name);
	assert_false(node_view_from_json(obj, &v));
	cJSON_Delete(obj);
	name[NODE_NAME_MAX] = '\0';
	obj = cJSON_CreateObject();
	cJSON_AddStringToObject(cJSON_AddObjectToObject(obj, "metadata"), "name", name);
	assert_true(node_view_from_json(obj, &v));
	assert_int_equal(strlen(v.name), NODE_NAME_MAX);
	assert_string_equal(v.name, name);
	cJSON_Delete(obj);
}

static struct node_view node(const char *name, const char *provider_id, const char *label_id, const char *ip)
{
	struct node_view v = {0};
	snprintf(v.name, sizeof(v.name), "%s", name);
	snprintf(v.provider_id, sizeof(v.provider_id), "%s", provider_id);
	snprintf(v.label_id, sizeof(v.label_id), "%s", label_id);
	snprintf(v.internal_ip, sizeof(v.internal_ip), "%s", ip);
	return v;
}

#define MAXN 6

/* The claims refused, as "C" conflict / "R" rejected : instance : Node in node_match's
 * order, are want; r is cleared. */
static void expect_refused(struct node_refusals *r, const char *what, const char *want)
{
	char got[512] = "";
	for (size_t k = 0; k < r->n; k++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s:%s:%s", k ? " " : "",
			 r->v[k].conflict ? "C" : "R", r->v[k].instance, r->v[k].node);
	if (strcmp(got, want) != 0)
		fail_msg("%s: refused \"%s\", expected \"%s\"", what, got, want);
	node_refusals_clear(r);
}

/* Each row: Nodes, wanted instances, the Node name each gets ("" none) and how, and the
 * claims refused ("C" conflict / "R" rejected : instance : Node, in node_match's order). */
static void test_match(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		struct { const char *name, *provider_id, *label_id, *ip; } nodes[MAXN];
		struct node_want want[MAXN];
		struct { const char *name; enum node_by by; } expect[MAXN];
		const char *refused;
	} rows[] = {
		{"label + the instance's IP: honoured",
		 {{"n-a", "", "ins-a", "10.0.0.1"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"n-a", NODE_BY_LABEL}}, ""},
		{"providerID + the instance's IP: honoured",
		 {{"n-a", "ins-a", "", "10.0.0.1"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"n-a", NODE_BY_PROVIDER_ID}}, ""},
		{"label + another IP: refused",
		 {{"control-plane-1", "", "ins-a", "10.9.9.9"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"", NODE_BY_NONE}}, "R:ins-a:control-plane-1"},
		{"providerID + another IP: refused",
		 {{"control-plane-1", "ins-a", "", "10.9.9.9"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"", NODE_BY_NONE}}, "R:ins-a:control-plane-1"},
		{"a forged label listed first beside the instance's own Node: its own",
		 {{"control-plane-1", "", "ins-a", "10.9.9.9"}, {"n-a", "", "ins-a", "10.0.0.1"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"n-a", NODE_BY_LABEL}}, "R:ins-a:control-plane-1"},
		{"two Nodes claiming one instance by ID with its IP: none",
		 {{"n2", "ins-a", "", "10.0.0.1"}, {"n1", "", "ins-a", "10.0.0.1"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"", NODE_BY_NONE}}, "C:ins-a:n1 C:ins-a:n2"},
		{"one by ID, one by the same IP alone: none",
		 {{"n1", "", "ins-a", "10.0.0.1"}, {"n2", "", "", "10.0.0.1"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"", NODE_BY_NONE}}, "C:ins-a:n1 C:ins-a:n2"},
		{"a Node declaring no ID: by its IP; one declaring another instance's ID: not by IP",
		 {{"10.0.0.3", "", "", "10.0.0.3"}, {"n1", "", "ins-other", "10.0.0.5"}},
		 {{"ins-c", "10.0.0.3", false, NULL, 0}, {"ins-b", "10.0.0.5", false, NULL, 0}},
		 {{"10.0.0.3", NODE_BY_IP}, {"", NODE_BY_NONE}}, ""},
		{"two Nodes with the same IP: neither",
		 {{"n1", "", "", "10.0.0.5"}, {"n2", "", "", "10.0.0.5"}},
		 {{"ins-b", "10.0.0.5", false, NULL, 0}},
		 {{"", NODE_BY_NONE}}, "C:ins-b:n1 C:ins-b:n2"},
		{"the same IP wanted twice: neither instance",
		 {{"n1", "", "", "10.0.0.5"}},
		 {{"ins-a", "10.0.0.5", false, NULL, 0}, {"ins-b", "10.0.0.5", false, NULL, 0}},
		 {{"", NODE_BY_NONE}, {"", NODE_BY_NONE}}, "C:ins-a:n1 C:ins-b:n1"},
		{"an instance without a private IP yet has no Node; no ID, NULL match nothing",
		 {{"n1", "ins-a", "", "10.0.0.1"}, {"blank", "", "", ""}},
		 {{"ins-a", "", false, NULL, 0}, {"", "", false, NULL, 0}, {NULL, NULL, false, NULL, 0}},
		 {{"", NODE_BY_NONE}, {"", NODE_BY_NONE}, {"", NODE_BY_NONE}}, ""},
		{"recorded: by ID and the recorded IP, never by that IP alone",
		 {{"n-old", "", "ins-g", "10.0.0.7"}, {"n-ip", "", "", "10.0.0.8"}, {"n-cp", "ins-h", "", "10.9.9.9"}},
		 {{"ins-g", "10.0.0.7", true, NULL, 0}, {"ins-h", "10.0.0.8", true, NULL, 0}},
		 {{"n-old", NODE_BY_LABEL}, {"", NODE_BY_NONE}}, "R:ins-h:n-cp"},
		{"a gone instance's IP reused by an observed one: the observed one's",
		 {{"n-new", "", "", "10.0.0.5"}},
		 {{"ins-new", "10.0.0.5", false, NULL, 0}, {"ins-gone", "10.0.0.5", true, NULL, 0}},
		 {{"n-new", NODE_BY_IP}, {"", NODE_BY_NONE}}, ""},
		{"providerID and label naming the same instance: one claim",
		 {{"n1", "ins-a", "ins-a", "10.0.0.1"}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"n1", NODE_BY_PROVIDER_ID}}, ""},
		{"no Nodes",
		 {{NULL, NULL, NULL, NULL}},
		 {{"ins-a", "10.0.0.1", false, NULL, 0}},
		 {{"", NODE_BY_NONE}}, ""},
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(*rows); r++) {
		struct node_view nodes[MAXN];
		size_t n_nodes = 0, n_want = 0;
		while (n_nodes < MAXN && rows[r].nodes[n_nodes].name) {
			nodes[n_nodes] = node(rows[r].nodes[n_nodes].name, rows[r].nodes[n_nodes].provider_id,
					      rows[r].nodes[n_nodes].label_id, rows[r].nodes[n_nodes].ip);
			n_nodes++;
		}
		while (n_want < MAXN && rows[r].expect[n_want].name)
			n_want++;
		int index[MAXN];
		enum node_by by[MAXN];
		struct node_refusals refused;
		node_match(nodes, n_nodes, rows[r].want, n_want, index, by, &refused);
		for (size_t i = 0; i < n_want; i++) {
			const char *got = index[i] >= 0 ? nodes[index[i]].name : "";
			if (strcmp(got, rows[r].expect[i].name) != 0 || by[i] != rows[r].expect[i].by)
				fail_msg("%s: instance %zu matched \"%s\" (by %d), expected \"%s\" (by %d)", rows[r].what, i,
					 got, by[i], rows[r].expect[i].name, rows[r].expect[i].by);
		}
		expect_refused(&refused, rows[r].what, rows[r].refused);
	}
}

/* Review of issue 27: a Node that declares no instance is matched to a gone (recorded)
 * instance by the Node name and private IP its status recorded (NODE_BY_RECORD), and an
 * observed instance that reused the address is not its (so not contested by it) when no
 * kubelet reports that Node and it was created before the instance launched. Otherwise
 * (a kubelet reports it: maybe the new instance's, registered under the same name) the
 * claims conflict and neither instance gets it. */
static void test_match_by_record(void **state)
{
	(void)state;
	enum { T0 = 1800000000 };
	static const struct {
		const char *what;
		const char *old_label;   /* the old Node's instance-id label */
		const char *old_ip;
		bool unknown;            /* its Ready is Unknown */
		int64_t old_created;     /* from T0 */
		bool observed;           /* ins-new observed at 10.0.0.5, launched T0 + 100, its Node n-new */
		const char *gone_gets, *new_gets;
		enum node_by gone_by;
		const char *refused;
	} rows[] = {
		{"recorded name and IP, declaring none: the gone one's", "", "10.0.0.5", false, 0, false, "n-old", "",
		 NODE_BY_RECORD, ""},
		{"recorded name, another IP: not its", "", "10.0.0.6", true, 0, false, "", "", NODE_BY_NONE, ""},
		{"recorded name, declaring another instance: not by record", "ins-x", "10.0.0.5", true, 0, false, "", "",
		 NODE_BY_NONE, ""},
		{"IP reused, no kubelet reports the old Node, created before: each its own", "", "10.0.0.5", true, 0,
		 true, "n-old", "n-new", NODE_BY_RECORD, ""},
		{"IP reused, a kubelet reports the old Node: neither", "", "10.0.0.5", false, 0, true, "", "",
		 NODE_BY_NONE, "C:ins-gone:n-old C:ins-new:n-new C:ins-new:n-old"},
		{"IP reused, the old Node created after the launch: neither", "", "10.0.0.5", true, 200, true, "", "",
		 NODE_BY_NONE, "C:ins-gone:n-old C:ins-new:n-new C:ins-new:n-old"},
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(*rows); r++) {
		struct node_view nodes[2] = {node("n-old", "", rows[r].old_label, rows[r].old_ip),
					     node("n-new", "", "", "10.0.0.5")};
		nodes[0].ready_unknown = rows[r].unknown;
		nodes[0].ready = !rows[r].unknown;
		nodes[0].created = T0 + rows[r].old_created;
		nodes[1].created = T0 + 150;
		struct node_want want[2] = {{"ins-gone", "10.0.0.5", true, "n-old", 0},
					    {"ins-new", "10.0.0.5", false, NULL, T0 + 100}};
		size_t n_want = rows[r].observed ? 2 : 1, n_nodes = rows[r].observed ? 2 : 1;
		int index[2];
		enum node_by by[2];
		struct node_refusals refused;
		node_match(nodes, n_nodes, want, n_want, index, by, &refused);
		const char *gone = index[0] >= 0 ? nodes[index[0]].name : "";
		const char *fresh = n_want > 1 && index[1] >= 0 ? nodes[index[1]].name : "";
		if (strcmp(gone, rows[r].gone_gets) != 0 || by[0] != rows[r].gone_by || strcmp(fresh, rows[r].new_gets) != 0)
			fail_msg("%s: gone got \"%s\" (by %d), new \"%s\"", rows[r].what, gone, by[0], fresh);
		expect_refused(&refused, rows[r].what, rows[r].refused);
	}
}

/* A gone instance's Node matched by its address: deleted once no kubelet reports it,
 * waited for up to NODE_ADDRESS_WAIT_SECONDS, never when it is another Node now. */
static void test_address_judge(void **state)
{
	(void)state;
	enum { T0 = 1800000000 };
	static const struct {
		const char *what;
		bool none;
		const char *uid, *label, *ip;
		bool unknown;
		int64_t now;  /* from since */
		enum node_address want;
	} rows[] = {
		{"no kubelet reports it: deleted", false, "u1", "", "10.0.0.5", true, 0, NODE_ADDRESS_DELETE},
		{"still reported: waits", false, "u1", "", "10.0.0.5", false, 0, NODE_ADDRESS_WAIT},
		{"still reported at the end of the wait: left", false, "u1", "", "10.0.0.5", false,
		 NODE_ADDRESS_WAIT_SECONDS, NODE_ADDRESS_REPORTED},
		{"marked after a long wait: deleted", false, "u1", "", "10.0.0.5", true, 5000, NODE_ADDRESS_DELETE},
		{"gone", true, "", "", "", false, 0, NODE_ADDRESS_GONE},
		{"the name another Node's (another UID)", false, "u2", "", "10.0.0.5", true, 0, NODE_ADDRESS_GONE},
		{"declares an instance now", false, "u1", "ins-b", "10.0.0.5", true, 0, NODE_ADDRESS_CHANGED},
		{"another address now", false, "u1", "", "10.0.0.9", true, 0, NODE_ADDRESS_CHANGED},
	};
	/* What the view reads of it: Ready Unknown (the node lifecycle controller's mark) and
	 * when it was created. */
	cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"n-old\",\"uid\":\"u1\",\"creationTimestamp\":"
				 "\"2027-01-15T08:00:00Z\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
				 "\"status\":\"Unknown\",\"reason\":\"NodeStatusUnknown\"}]}}");
	struct node_view read;
	assert_true(node_view_from_json(obj, &read));
	assert_true(read.ready_unknown);
	assert_false(read.ready);
	assert_int_equal(read.created, 1800000000);
	cJSON_Delete(obj);
	struct node_ref ref = {.name = "n-old", .uid = "u1", .instance_id = "ins-a", .ip = "10.0.0.5", .since = T0};
	for (size_t r = 0; r < sizeof(rows) / sizeof(*rows); r++) {
		struct node_view v = node("n-old", "", rows[r].label, rows[r].ip);
		snprintf(v.uid, sizeof(v.uid), "%s", rows[r].uid);
		v.ready_unknown = rows[r].unknown;
		if (node_address_judge(&ref, rows[r].none ? NULL : &v, T0 + rows[r].now) != rows[r].want)
			fail_msg("%s", rows[r].what);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view_full),
		cmocka_unit_test(test_view_odd_input),
		cmocka_unit_test(test_view_names),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_match_by_record),
		cmocka_unit_test(test_address_judge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
