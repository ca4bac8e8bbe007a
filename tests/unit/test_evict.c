/* evict: the exact requests of a node's drain through a fake apiserver port (method,
 * path, content type, body), and how each answer maps to an error. */
#include "testutil.h"
#include "buf.h"
#include "evict.h"

#define NOW 1800000000 /* 2027-01-15T08:00:00Z */

struct reply {
	int r;            /* what the request returns */
	const char *json; /* the body handed back on success, or NULL */
	const char *msg;  /* err->msg on failure */
};

struct fake {
	const struct reply *replies;
	size_t n_replies, calls;
	char log[EVICT_PAGES_MAX + 1][1024]; /* "METHOD PATH CONTENT-TYPE BODY" per call */
};

static int fake_request(void *ctx, const char *method, const char *path, const char *content_type,
			const cJSON *body, cJSON **ret, struct sp_error *err)
{
	struct fake *f = ctx;
	assert_true(f->calls < f->n_replies && f->calls < sizeof(f->log) / sizeof(f->log[0]));
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	snprintf(f->log[f->calls], sizeof(f->log[0]), "%s %s %s %s", method, path,
		 content_type ? content_type : "-", text ? text : "-");
	cJSON_free(text);
	const struct reply *rep = &f->replies[f->calls++];
	if (rep->r < 0) {
		sp_fail(err, rep->r, "%s", rep->msg);
		if (err)
			snprintf(err->reason, sizeof(err->reason), "Reason%d", -rep->r);
		return rep->r;
	}
	if (ret) {
		*ret = cJSON_Parse(rep->json ? rep->json : "{}");
		assert_non_null(*ret);
	}
	return 0;
}

static struct kube_api fake_api(struct fake *f, const struct reply *replies, size_t n)
{
	memset(f, 0, sizeof(*f));
	f->replies = replies;
	f->n_replies = n;
	return (struct kube_api){.request = fake_request, .ctx = f};
}

#define GET_NODE "GET /api/v1/nodes/n1 - -"
#define PATCH_NODE "PATCH /api/v1/nodes/n1 application/merge-patch+json "
#define OTHER_TAINT "{\"key\":\"gpu\",\"value\":\"a100\",\"effect\":\"NoSchedule\"}"
#define OUR_TAINT "{\"key\":\"spotpool.jokerbai.com/draining\",\"effect\":\"NoSchedule\"}"

/* A node as GET answers it, and the merge patch expected on it (NULL: none). */
struct node_case {
	const char *what, *node, *patch;
};

static int start_n1(const struct kube_api *api, struct sp_error *err)
{
	return evict_start(api, "n1", "u1", NOW, err);
}

static int undo_n1(const struct kube_api *api, struct sp_error *err)
{
	return evict_undo(api, "n1", "u1", 0, err);
}

static int give_up_n1(const struct kube_api *api, struct sp_error *err)
{
	return evict_undo(api, "n1", "u1", NOW, err);
}

static void check_node_cases(const struct node_case *cases, size_t n,
			     int (*call)(const struct kube_api *api, struct sp_error *err))
{
	for (size_t i = 0; i < n; i++) {
		struct fake f;
		const struct reply replies[] = {{0, cases[i].node, NULL}, {0, "{}", NULL}};
		struct kube_api api = fake_api(&f, replies, 2);
		struct sp_error err = {0};
		if (call(&api, &err) != 0)
			fail_msg("%s: %s", cases[i].what, err.msg);
		assert_int_equal(f.calls, cases[i].patch ? 2 : 1);
		assert_string_equal(f.log[0], GET_NODE);
		if (cases[i].patch) {
			char want[1024];
			snprintf(want, sizeof(want), PATCH_NODE "%s", cases[i].patch);
			if (strcmp(f.log[1], want) != 0)
				fail_msg("%s:\n  got  %s\n  want %s", cases[i].what, f.log[1], want);
		}
	}
}

/* Starting keeps every other taint, records the start and whether the node was cordoned
 * before, and guards the write with the resourceVersion read. */
static void test_start(void **state)
{
	(void)state;
	static const struct node_case cases[] = {
		{"schedulable, one taint of someone else's",
		 "{\"metadata\":{\"uid\":\"u1\",\"name\":\"n1\",\"resourceVersion\":\"41\"},\"spec\":{\"taints\":[" OTHER_TAINT "]}}",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"41\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T08:00:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"false\"}},"
		 "\"spec\":{\"taints\":[" OTHER_TAINT "," OUR_TAINT "],\"unschedulable\":true}}"},
		{"cordoned by someone before, no taints",
		 "{\"metadata\":{\"uid\":\"u1\",\"name\":\"n1\",\"resourceVersion\":\"7\"},\"spec\":{\"unschedulable\":true}}",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"7\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T08:00:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"true\"}},"
		 "\"spec\":{\"taints\":[" OUR_TAINT "],\"unschedulable\":true}}"},
		{"started before, then uncordoned by someone: the first start's record stays",
		 "{\"metadata\":{\"uid\":\"u1\",\"name\":\"n1\",\"resourceVersion\":\"9\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T07:55:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"false\"}},\"spec\":{\"taints\":[" OUR_TAINT "]}}",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"9\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T07:55:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"false\"}},"
		 "\"spec\":{\"taints\":[" OUR_TAINT "],\"unschedulable\":true}}"},
		{"already started, tainted and cordoned: nothing written",
		 "{\"metadata\":{\"uid\":\"u1\",\"name\":\"n1\",\"resourceVersion\":\"9\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T07:55:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"false\"}},"
		 "\"spec\":{\"unschedulable\":true,\"taints\":[" OUR_TAINT "]}}", NULL},
	};
	check_node_cases(cases, sizeof(cases) / sizeof(cases[0]), start_n1);
}

/* A conflict reads the node again and writes on what it reads then; after
 * EVICT_NODE_ATTEMPTS conflicts a transient failure is returned (not a conflict: the
 * pass would take it for its pool's and stop at once). Other errors end at once. */
static void test_start_conflicts(void **state)
{
	(void)state;
	const char *v1 = "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"1\"},\"spec\":{}}";
	const char *v2 = "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"2\"},\"spec\":{\"unschedulable\":true}}";
	struct fake f;
	const struct reply once[] = {{0, v1, NULL}, {SP_ECONFLICT, NULL, "conflict"}, {0, v2, NULL}, {0, "{}", NULL}};
	struct kube_api api = fake_api(&f, once, 4);
	assert_int_equal(evict_start(&api, "n1", "u1", NOW, NULL), 0);
	assert_int_equal(f.calls, 4);
	assert_contains(f.log[1], "\"resourceVersion\":\"1\"");
	assert_contains(f.log[1], "was-unschedulable\":\"false\"");
	assert_string_equal(f.log[2], GET_NODE);
	assert_contains(f.log[3], "\"resourceVersion\":\"2\"");
	assert_contains(f.log[3], "was-unschedulable\":\"true\"");

	struct reply always[2 * EVICT_NODE_ATTEMPTS];
	for (size_t i = 0; i < 2 * EVICT_NODE_ATTEMPTS; i += 2) {
		always[i] = (struct reply){0, v1, NULL};
		always[i + 1] = (struct reply){SP_ECONFLICT, NULL, "PATCH: HTTP 409: the object has been modified"};
	}
	api = fake_api(&f, always, 2 * EVICT_NODE_ATTEMPTS);
	struct sp_error err = {0};
	assert_int_equal(evict_start(&api, "n1", "u1", NOW, &err), SP_ETRANSIENT);
	assert_int_equal(err.code, SP_ETRANSIENT);
	assert_int_equal(f.calls, 2 * EVICT_NODE_ATTEMPTS);
	assert_string_equal(err.msg, "node n1: PATCH: HTTP 409: the object has been modified");

	const struct reply gone[] = {{SP_ENOTFOUND, NULL, "GET: HTTP 404: nodes \"n1\" not found"}};
	api = fake_api(&f, gone, 1);
	assert_int_equal(evict_start(&api, "n1", "u1", NOW, &err), SP_ENOTFOUND);
	assert_int_equal(f.calls, 1);
	assert_string_equal(err.msg, "node n1: GET: HTTP 404: nodes \"n1\" not found");

	const struct reply forbidden[] = {{0, v1, NULL}, {SP_EFORBIDDEN, NULL, "PATCH: HTTP 403"}};
	api = fake_api(&f, forbidden, 2);
	assert_int_equal(evict_start(&api, "n1", "u1", NOW, &err), SP_EFORBIDDEN);
	assert_int_equal(f.calls, 2);
}

/* A Node re-registered under the name (TKE names Nodes by private IP) is another Node: a
 * start or undo decided on the old one (uid u1) writes nothing on it, start answering
 * SP_ENOTFOUND (the step is dropped), undo 0 (nothing of the old one's to undo); so too
 * when the name is reused between the read and the write (409, read again). */
static void test_name_reused(void **state)
{
	(void)state;
	const char *old = "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"1\"},\"spec\":{}}";
	const char *reused = "{\"metadata\":{\"uid\":\"u2\",\"resourceVersion\":\"5\"},\"spec\":{}}";
	struct fake f;
	struct sp_error err = {0};
	const struct reply now[] = {{0, reused, NULL}};
	struct kube_api api = fake_api(&f, now, 1);
	assert_int_equal(evict_start(&api, "n1", "u1", NOW, &err), SP_ENOTFOUND);
	assert_int_equal(f.calls, 1);
	assert_string_equal(err.msg, "node n1: metadata.uid is u2, not u1: the name is another Node's now");
	api = fake_api(&f, now, 1);
	assert_int_equal(evict_undo(&api, "n1", "u1", 0, &err), 0);
	assert_int_equal(f.calls, 1);
	const struct reply meanwhile[] = {{0, old, NULL}, {SP_ECONFLICT, NULL, "409"}, {0, reused, NULL}};
	api = fake_api(&f, meanwhile, 3);
	assert_int_equal(evict_start(&api, "n1", "u1", NOW, &err), SP_ENOTFOUND);
	assert_int_equal(f.calls, 3);
	assert_contains(f.log[1], "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"1\",");
}

/* Undo removes only our taint and annotations, and uncordons only a node that was
 * schedulable when the drain started. */
static void test_undo(void **state)
{
	(void)state;
	static const struct node_case cases[] = {
		{"schedulable before: uncordoned, the other taint kept",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"5\",\"annotations\":{\"team\":\"ml\","
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T07:50:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"false\"}},"
		 "\"spec\":{\"unschedulable\":true,\"taints\":[" OUR_TAINT "," OTHER_TAINT "]}}",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"5\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":null,\"spotpool.jokerbai.com/was-unschedulable\":null}},"
		 "\"spec\":{\"taints\":[" OTHER_TAINT "],\"unschedulable\":false}}"},
		{"cordoned before: stays cordoned",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"6\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T07:50:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"true\"}},"
		 "\"spec\":{\"unschedulable\":true,\"taints\":[" OUR_TAINT "]}}",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"6\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":null,\"spotpool.jokerbai.com/was-unschedulable\":null}},"
		 "\"spec\":{\"taints\":[]}}"},
		{"our taint without our annotations: the taint goes, the cordon state is not ours to change",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"8\"},\"spec\":{\"unschedulable\":true,\"taints\":[" OUR_TAINT "]}}",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"8\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":null,\"spotpool.jokerbai.com/was-unschedulable\":null}},"
		 "\"spec\":{\"taints\":[]}}"},
		{"none of ours: nothing written",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"3\",\"annotations\":{\"team\":\"ml\"}},"
		 "\"spec\":{\"unschedulable\":true,\"taints\":[" OTHER_TAINT "]}}", NULL},
	};
	check_node_cases(cases, sizeof(cases) / sizeof(cases[0]), undo_n1);
	/* A drain given up says when on the Node, so it is not drained again at once. */
	static const struct node_case gave_up[] = {
		{"given up: recorded",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"7\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":\"2027-01-15T07:50:00Z\","
		 "\"spotpool.jokerbai.com/was-unschedulable\":\"false\"}},"
		 "\"spec\":{\"unschedulable\":true,\"taints\":[" OUR_TAINT "]}}",
		 "{\"metadata\":{\"uid\":\"u1\",\"resourceVersion\":\"7\",\"annotations\":{"
		 "\"spotpool.jokerbai.com/drain-started\":null,\"spotpool.jokerbai.com/was-unschedulable\":null,"
		 "\"spotpool.jokerbai.com/drain-given-up\":\"2027-01-15T08:00:00Z\"}},"
		 "\"spec\":{\"taints\":[],\"unschedulable\":false}}"},
	};
	check_node_cases(gave_up, 1, give_up_n1);
	/* A node that is gone has nothing to undo. */
	struct fake f;
	const struct reply gone[] = {{SP_ENOTFOUND, NULL, "HTTP 404"}};
	struct kube_api api = fake_api(&f, gone, 1);
	assert_int_equal(evict_undo(&api, "n1", "u1", 0, NULL), 0);
	assert_int_equal(f.calls, 1);
}

#define POD(ns, name, extra) "{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" name "\"" extra "}}"

/* Paged by the continue token (escaped), each pod classified. */
static void test_list_pods(void **state)
{
	(void)state;
	struct fake f;
	const struct reply replies[] = {
		{0, "{\"metadata\":{\"continue\":\"a+b/c=\"},\"items\":[" POD("ml", "train-0", "") ","
		    POD("kube-system", "proxy", ",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"controller\":true}]") "]}",
		 NULL},
		{0, "{\"metadata\":{\"continue\":\"\"},\"items\":[" POD("ml", "pinned",
		    ",\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"false\"}") "]}", NULL},
	};
	struct kube_api api = fake_api(&f, replies, 2);
	struct drain_pod *pods = NULL;
	size_t n = 0;
	assert_int_equal(evict_list_pods(&api, "10.0.0.7", &pods, &n, NULL), 0);
	assert_int_equal(f.calls, 2);
	assert_string_equal(f.log[0], "GET /api/v1/pods?fieldSelector=spec.nodeName%3D10.0.0.7%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&limit=500 - -");
	assert_string_equal(f.log[1],
			    "GET /api/v1/pods?fieldSelector=spec.nodeName%3D10.0.0.7%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&limit=500&continue=a%2Bb%2Fc%3D - -");
	assert_int_equal(n, 3);
	assert_string_equal(pods[0].name, "train-0");
	assert_int_equal(pods[0].cls, DRAIN_POD_EVICT);
	assert_string_equal(pods[1].namespace, "kube-system");
	assert_int_equal(pods[1].cls, DRAIN_POD_DAEMONSET);
	assert_int_equal(pods[2].cls, DRAIN_POD_BLOCKING);
	free(pods);

	/* An empty node. */
	const struct reply empty[] = {{0, "{\"metadata\":{},\"items\":[]}", NULL}};
	api = fake_api(&f, empty, 1);
	pods = NULL;
	assert_int_equal(evict_list_pods(&api, "n1", &pods, &n, NULL), 0);
	assert_int_equal(n, 0);
	free(pods);
}

static void test_list_pods_bounded(void **state)
{
	(void)state;
	/* A server that never stops paging. */
	struct reply endless[EVICT_PAGES_MAX + 1];
	for (size_t i = 0; i <= EVICT_PAGES_MAX; i++)
		endless[i] = (struct reply){0, "{\"metadata\":{\"continue\":\"more\"},\"items\":[]}", NULL};
	struct fake f;
	struct kube_api api = fake_api(&f, endless, EVICT_PAGES_MAX + 1);
	struct drain_pod *pods = NULL;
	size_t n = 7;
	struct sp_error err = {0};
	assert_int_equal(evict_list_pods(&api, "n1", &pods, &n, &err), SP_ETOOBIG);
	assert_int_equal(f.calls, EVICT_PAGES_MAX);
	assert_string_equal(err.msg, "listing the pods of node n1: more than 16 pages");
	assert_null(pods);
	assert_int_equal(n, 7);

	/* More pods than EVICT_PODS_MAX. */
	struct buf b;
	buf_init(&b, 1 << 20);
	buf_puts(&b, "{\"metadata\":{},\"items\":[");
	for (int i = 0; i <= EVICT_PODS_MAX; i++)
		buf_printf(&b, "%s{\"metadata\":{\"namespace\":\"ml\",\"name\":\"p%d\"}}", i ? "," : "", i);
	buf_puts(&b, "]}");
	const struct reply many[] = {{0, b.data, NULL}};
	api = fake_api(&f, many, 1);
	assert_int_equal(evict_list_pods(&api, "n1", &pods, &n, &err), SP_ETOOBIG);
	assert_string_equal(err.msg, "listing the pods of node n1: more than 2000 pods not finished");
	buf_free(&b);

	/* Finished pods (a Job's, by the thousand) do not count against the cap, whether or
	 * not the apiserver honoured the field selector: 2,500 finished and 2 to evict. */
	buf_init(&b, 1 << 20);
	buf_puts(&b, "{\"metadata\":{},\"items\":[");
	for (int i = 0; i < EVICT_PODS_MAX + 500; i++)
		buf_printf(&b, "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"job-%d\"},"
			   "\"status\":{\"phase\":\"%s\"}},", i, i % 2 ? "Succeeded" : "Failed");
	buf_puts(&b, POD("ml", "w1", "") "," POD("ml", "w2", "") "]}");
	const struct reply finished[] = {{0, b.data, NULL}};
	api = fake_api(&f, finished, 1);
	pods = NULL;
	assert_int_equal(evict_list_pods(&api, "n1", &pods, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(pods[0].name, "w1");
	assert_string_equal(pods[1].name, "w2");
	free(pods);
	pods = NULL;
	buf_free(&b);

	/* A malformed page and a pod without a name. */
	const struct reply malformed[] = {{0, "{\"kind\":\"Status\"}", NULL}};
	api = fake_api(&f, malformed, 1);
	assert_int_equal(evict_list_pods(&api, "n1", &pods, &n, &err), SP_EPROTO);
	assert_contains(err.msg, "a pod list without items");
	const struct reply nameless[] = {{0, "{\"items\":[{\"metadata\":{\"namespace\":\"ml\"}}]}", NULL}};
	api = fake_api(&f, nameless, 1);
	assert_int_equal(evict_list_pods(&api, "n1", &pods, &n, &err), SP_EPROTO);
	const struct reply forbidden[] = {{SP_EFORBIDDEN, NULL, "HTTP 403: pods is forbidden"}};
	api = fake_api(&f, forbidden, 1);
	assert_int_equal(evict_list_pods(&api, "n1", &pods, &n, &err), SP_EFORBIDDEN);
	assert_string_equal(err.msg, "listing the pods of node n1: HTTP 403: pods is forbidden");
	assert_null(pods);
}

/* The Eviction POST and what its answers mean. */
static void test_evict_pod(void **state)
{
	(void)state;
	static const struct {
		int answer;
		int want;
		const char *msg;
	} cases[] = {
		{0, 0, ""},                /* 200/201: accepted */
		{SP_ENOTFOUND, 0, ""},     /* 404: already gone */
		{SP_ETHROTTLED, SP_ETHROTTLED,
		 "evicting pod ml/train-0: a PodDisruptionBudget refuses it now; retry later (POST: HTTP 429: "
		 "Cannot evict pod as it would violate the pod's disruption budget.)"},
		{SP_ECONFLICT, SP_ECONFLICT, "evicting pod ml/train-0: a conflict; retry (POST: HTTP 409: conflict)"},
		{SP_EFORBIDDEN, SP_EFORBIDDEN, "evicting pod ml/train-0: POST: HTTP 403: forbidden"},
	};
	const char *answer_msg[] = {"", "HTTP 404", "POST: HTTP 429: Cannot evict pod as it would violate the pod's disruption budget.",
				    "POST: HTTP 409: conflict", "POST: HTTP 403: forbidden"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake f;
		const struct reply replies[] = {{cases[i].answer, "{\"kind\":\"Status\",\"status\":\"Success\"}", answer_msg[i]}};
		struct kube_api api = fake_api(&f, replies, 1);
		struct sp_error err = {0};
		assert_int_equal(evict_pod(&api, "ml", "train-0", &err), cases[i].want);
		assert_int_equal(f.calls, 1);
		assert_string_equal(f.log[0], "POST /api/v1/namespaces/ml/pods/train-0/eviction application/json "
				    "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":"
				    "{\"name\":\"train-0\",\"namespace\":\"ml\"}}");
		assert_string_equal(err.msg, cases[i].msg);
		if (cases[i].want < 0) {
			char reason[16];
			snprintf(reason, sizeof(reason), "Reason%d", -cases[i].answer);
			assert_string_equal(err.reason, reason);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_start_conflicts),
		cmocka_unit_test(test_name_reused),
		cmocka_unit_test(test_undo),
		cmocka_unit_test(test_list_pods),
		cmocka_unit_test(test_list_pods_bounded),
		cmocka_unit_test(test_evict_pod),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
