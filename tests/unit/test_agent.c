/* The notice agent: the termination-time parse, the condition and SpotNotice it writes
 * and what the controller reads back, and its rounds through a fake metadata service,
 * a fake apiserver and a fake clock (include/agent.h). */
#include "testutil.h"

#include "agent.h"
#include "node.h"
#include "kube.h"

#include <cjson/cJSON.h>

/* 2026-11-25 10:29:16 UTC+8 */
#define T0 1795573756LL

/* The deadline the controller reads from a Node carrying (or a patch setting) the
 * condition: node_view_from_json's terminating_at, 0 for none or a malformed one. */
static int64_t node_deadline(const cJSON *status_holder)
{
	cJSON *node = cJSON_Duplicate(status_holder, true);
	cJSON *meta = cJSON_AddObjectToObject(node, "metadata");
	cJSON_AddStringToObject(meta, "name", "n");
	struct node_view v;
	assert_true(node_view_from_json(node, &v));
	cJSON_Delete(node);
	return v.terminating_at;
}

static void test_parse_termination_time(void **state)
{
	(void)state;
	int64_t t = 0;
	struct sp_error err = {0};
	assert_int_equal(agent_parse_termination_time("2026-11-25 10:29:16", 19, &t, &err), 0);
	assert_int_equal(t, T0);
	assert_int_equal(agent_parse_termination_time("2026-11-25 10:29:16\n", 20, &t, &err), 0);
	assert_int_equal(t, T0);
	/* midnight UTC+8 is the previous day in UTC */
	assert_int_equal(agent_parse_termination_time("2026-01-01 00:00:00", 19, &t, &err), 0);
	assert_int_equal(t, 1767225600LL - 8 * 3600);
	assert_int_equal(agent_parse_termination_time("2024-02-29 12:00:00", 19, &t, &err), 0);

	static const struct {
		const char *text, *why;
	} bad[] = {
		{"", "not shaped like YYYY-MM-DD HH:MM:SS"},
		{"2026-11-25T10:29:16", "character 11"},
		{"2026-11-25 10:29:16Z", "not shaped like"},
		{"2026-11-25 10:29", "not shaped like"},
		{" 2026-11-25 10:29:16", "not shaped like"},
		{"2026-11-25 10:29:16\n\n", "not shaped like"},
		{"2026/11/25 10:29:16", "character 5"},
		{"2026-13-25 10:29:16", "month 13 is out of range (1..12)"},
		{"2026-00-25 10:29:16", "month 0"},
		{"2025-02-29 10:29:16", "day 29 is out of range (1..28)"},
		{"2026-04-31 10:29:16", "day 31 is out of range (1..30)"},
		{"2026-11-25 24:00:00", "hour 24"},
		{"2026-11-25 10:60:16", "minute 60"},
		{"2026-11-25 10:29:60", "second 60"},
		{"1969-12-31 23:59:59", "year 1969"},
		{"<html>404</html>", "not shaped like"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = -1;
		err = (struct sp_error){0};
		assert_int_equal(agent_parse_termination_time(bad[i].text, strlen(bad[i].text), &t, &err), SP_EINVAL);
		assert_int_equal(t, -1);
		assert_contains(err.msg, "spot/termination-time: ");
		assert_contains(err.msg, bad[i].why);
	}
	/* a NUL inside is not a shorter answer */
	assert_int_equal(agent_parse_termination_time("2026-11-25\0010:29:16", 19, &t, NULL), SP_EINVAL);
}

static const cJSON *only_condition(const cJSON *patch)
{
	const cJSON *conds = cJSON_GetObjectItem(cJSON_GetObjectItem(patch, "status"), "conditions");
	assert_int_equal(cJSON_GetArraySize(conds), 1);
	assert_int_equal(cJSON_GetArraySize(patch), 1);  /* nothing but status.conditions */
	return cJSON_GetArrayItem(conds, 0);
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_condition_patch(void **state)
{
	(void)state;
	cJSON *patch = agent_condition_patch(T0, T0 - 118);
	const cJSON *c = only_condition(patch);
	assert_string_equal(str(c, "type"), "SpotTerminating");
	assert_string_equal(str(c, "status"), "True");
	assert_string_equal(str(c, "reason"), "SpotInstanceTerminating");
	assert_string_equal(str(c, "message"), "reclaim at 2026-11-25T02:29:16Z");
	assert_string_equal(str(c, "lastTransitionTime"), "2026-11-25T02:27:18Z");

	/* what the controller reads back from the Node */
	cJSON *node = cJSON_Parse("{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(node, "status"), "conditions"),
			     cJSON_Duplicate(c, true));
	assert_int_equal(node_deadline(node), T0);
	cJSON_Delete(patch);
	cJSON_Delete(node);

	patch = agent_condition_patch(0, T0);
	c = only_condition(patch);
	assert_string_equal(str(c, "status"), "False");
	assert_string_equal(str(c, "reason"), "SpotNoticeWithdrawn");
	cJSON_Delete(patch);
}

/* What the controller reads of a Node's condition (terminating_at), and what an agent
 * reads back as its own last report (agent_condition_read: a True condition it cannot
 * read is one to rewrite). */
static void test_node_deadline(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int64_t deadline, reported;
	} cases[] = {
		{"{}", 0, 0},
		{"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", 0, 0},
		{"{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",\"status\":\"False\","
		 "\"message\":\"reclaim at 2026-11-25T02:29:16Z\"}]}}", 0, 0},
		{"{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",\"status\":\"Unknown\"}]}}", 0, 0},
		{"{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",\"status\":\"True\"}]}}", 0,
		 AGENT_REPORTED_UNREADABLE},
		{"{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",\"status\":\"True\","
		 "\"message\":\"reclaim at 2026-11-25 10:29:16\"}]}}", 0, AGENT_REPORTED_UNREADABLE},
		{"{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",\"status\":\"True\","
		 "\"message\":\"reclaim at 2026-11-25T10:29:16+08:00\"}]}}", T0, AGENT_REPORTED_UNREADABLE},
		{"{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",\"status\":\"True\","
		 "\"message\":\"reclaim at 2026-11-25T02:29:16Z\"}]}}", T0, T0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *node = cJSON_Parse(cases[i].json);
		assert_int_equal(node_deadline(node), cases[i].deadline);
		assert_int_equal(agent_condition_read(node), cases[i].reported);
		cJSON_Delete(node);
	}
}

static void test_notice_object(void **state)
{
	(void)state;
	cJSON *o = agent_notice_object("ins-abcd1234", T0, "gpu-host-7", T0 - 100);
	assert_string_equal(str(o, "apiVersion"), "devops.jokerbai.com/v1");
	assert_string_equal(str(o, "kind"), "SpotNotice");
	const cJSON *meta = cJSON_GetObjectItem(o, "metadata");
	assert_string_equal(str(meta, "name"), "ins-abcd1234-1795573756");
	assert_string_equal(str(cJSON_GetObjectItem(meta, "labels"), "spotpool.jokerbai.com/instance-id"), "ins-abcd1234");
	const cJSON *spec = cJSON_GetObjectItem(o, "spec");
	assert_string_equal(str(spec, "reclaimAt"), "2026-11-25T02:29:16Z");
	assert_string_equal(str(spec, "host"), "gpu-host-7");
	char id[AGENT_INSTANCE_ID_MAX + 1] = "";
	int64_t deadline = 0;
	assert_int_equal(agent_notice_read(o, id, &deadline, NULL), 0);
	assert_string_equal(id, "ins-abcd1234");
	assert_int_equal(deadline, T0);
	cJSON_Delete(o);

	static const struct {
		const char *json, *why;
	} bad[] = {
		{"{}", "spec.instanceId is missing"},
		{"{\"spec\":{\"instanceId\":\"\",\"reclaimAt\":\"2026-11-25T02:29:16Z\"}}", "spec.instanceId"},
		{"{\"spec\":{\"instanceId\":\"ins-abcd1234\"}}", "spec.reclaimAt is missing"},
		{"{\"spec\":{\"instanceId\":\"ins-abcd1234\",\"reclaimAt\":\"soon\"}}", "SpotNotice: spec.reclaimAt: "},
		{"{\"spec\":{\"instanceId\":\"ins-abcd1234\",\"reclaimAt\":\"2026-02-30T00:00:00Z\"}}", "day 30"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = cJSON_Parse(bad[i].json);
		struct sp_error err = {0};
		strcpy(id, "untouched");
		assert_int_equal(agent_notice_read(o, id, &deadline, &err), SP_EPROTO);
		assert_string_equal(id, "untouched");
		assert_contains(err.msg, bad[i].why);
		cJSON_Delete(o);
	}
}

/* --- the rounds ----------------------------------------------------------------------- */

struct fake {
	struct test_clock clock;
	/* metadata */
	const char *instance_id;        /* NULL: instance-id answers 500 */
	const char *termination_time;   /* NULL: 404 */
	int metadata_rc;                /* < 0: no answer at all */
	unsigned polls;
	/* apiserver */
	int api_rc[8];                  /* answers of the next calls, in order (then 0) */
	const char *node_json;          /* the Node a call that wants an answer gets, NULL: {} */
	unsigned calls;
	char method[8], path[256], content_type[64];
	cJSON *body;
};

static int fake_get(void *ctx, const char *item, long *ret_status, char **ret_body, struct sp_error *err)
{
	struct fake *f = ctx;
	if (f->metadata_rc < 0)
		return sp_fail(err, f->metadata_rc, "connection refused");
	const char *v = !strcmp(item, "instance-id") ? f->instance_id : f->termination_time;
	f->polls += !strcmp(item, "spot/termination-time");
	*ret_status = v ? 200 : !strcmp(item, "instance-id") ? 500 : 404;
	*ret_body = xstrdup(v ? v : "<html>404</html>");
	return 0;
}

static int fake_request(void *ctx, const char *method, const char *path, const char *content_type, const cJSON *body,
			cJSON **ret, struct sp_error *err)
{
	struct fake *f = ctx;
	snprintf(f->method, sizeof(f->method), "%s", method);
	snprintf(f->path, sizeof(f->path), "%s", path);
	snprintf(f->content_type, sizeof(f->content_type), "%s", content_type);
	cJSON_Delete(f->body);
	f->body = cJSON_Duplicate(body, true);
	int rc = f->calls < 8 ? f->api_rc[f->calls] : 0;
	f->calls++;
	if (rc == 0 && ret)
		*ret = cJSON_Parse(f->node_json ? f->node_json : "{}");
	return rc < 0 ? sp_fail(err, rc, "fake apiserver says %d", rc) : 0;
}

struct rig {
	struct fake f;
	struct kube_api api;
	struct agent a;
};

static void rig_init(struct rig *r, const char *node)
{
	memset(r, 0, sizeof(*r));
	r->f.clock = (struct test_clock){.now = T0 - 120, .mono_ms = 1000000};
	r->f.instance_id = "ins-abcd1234";
	r->api = (struct kube_api){.request = fake_request, .ctx = &r->f};
	struct agent_options o = {.api = &r->api, .metadata = {.get = fake_get, .ctx = &r->f},
				  .clock = test_clock_port(&r->f.clock), .node_name = node, .namespace = "spotpool-system",
				  .host = "gpu-host-7"};
	agent_init(&r->a, &o);
}

/* Runs rounds for ms of fake time, each at the time the last one asked for. */
static void run_for(struct rig *r, int64_t ms)
{
	int64_t until = r->f.clock.mono_ms + ms;
	for (;;) {
		int64_t next = agent_step(&r->a);
		assert_true(next > r->f.clock.mono_ms);  /* never a busy loop */
		if (next > until)
			break;
		test_clock_advance_ms(&r->f.clock, next - r->f.clock.mono_ms);
	}
	test_clock_advance_ms(&r->f.clock, until - r->f.clock.mono_ms);
}

static void test_node_notice_once(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, "10.0.0.7");
	run_for(&r, 10000);
	assert_int_equal(r.f.polls, 6);  /* at once, then every 2 s */
	assert_int_equal(r.f.calls, 1);  /* no notice: the Node read back once, nothing written */
	assert_string_equal(r.f.path, "/api/v1/nodes/10.0.0.7/status");
	assert_int_equal(cJSON_GetArraySize(r.f.body), 0);
	assert_string_equal(r.a.instance_id, "ins-abcd1234");

	r.f.termination_time = "2026-11-25 10:29:16";
	run_for(&r, 2000);
	assert_int_equal(r.f.calls, 2);
	assert_string_equal(r.f.method, "PATCH");
	assert_string_equal(r.f.path, "/api/v1/nodes/10.0.0.7/status");
	assert_string_equal(r.f.content_type, "application/strategic-merge-patch+json");
	assert_int_equal(node_deadline(r.f.body), T0);

	run_for(&r, 20000);
	assert_int_equal(r.f.calls, 2);  /* once per notice */

	r.f.termination_time = "2026-11-25 10:30:16\n";  /* the reclaim moved: a new notice */
	run_for(&r, 2000);
	assert_int_equal(r.f.calls, 3);
	assert_int_equal(node_deadline(r.f.body), T0 + 60);

	r.f.termination_time = NULL;  /* withdrawn: the condition goes False */
	run_for(&r, 2000);
	assert_int_equal(r.f.calls, 4);
	assert_string_equal(str(only_condition(r.f.body), "status"), "False");
	run_for(&r, 10000);
	assert_int_equal(r.f.calls, 4);
	assert_int_equal(r.a.reports, 3);
	cJSON_Delete(r.f.body);
}

/* A Node agent whose metadata announces a reclaim at T0, and whose first n reports fail. */
static void rig_failing(struct rig *r, const int *rc, size_t n)
{
	rig_init(r, "n1");
	r->f.termination_time = "2026-11-25 10:29:16";
	memcpy(r->f.api_rc, rc, n * sizeof(*rc));
}

static void test_report_retried_with_backoff(void **state)
{
	(void)state;
	struct rig r;
	rig_failing(&r, (const int[]){SP_ETRANSIENT, SP_EFORBIDDEN, SP_ENOTFOUND, SP_ETHROTTLED}, 4);
	int64_t start = r.f.clock.mono_ms;
	agent_step(&r.a);
	assert_int_equal(r.f.calls, 1);
	/* retries 0.5, 1, 2 and 4 s after each failure: the fifth call succeeds 7.5 s on */
	int64_t at[] = {500, 1500, 3500, 7500};
	for (size_t i = 0; i < 4; i++) {
		run_for(&r, start + at[i] - 1 - r.f.clock.mono_ms);
		assert_int_equal(r.f.calls, i + 1);
		run_for(&r, 1);
		assert_int_equal(r.f.calls, i + 2);
	}
	run_for(&r, 30000);
	assert_int_equal(r.f.calls, 5);
	assert_int_equal(r.a.reports, 1);
	assert_int_equal(r.a.backoff_ms, 0);
	cJSON_Delete(r.f.body);
}

static void test_backoff_capped(void **state)
{
	(void)state;
	struct rig r;
	int rc[8];
	for (size_t i = 0; i < 8; i++)
		rc[i] = SP_ETRANSIENT;
	rig_failing(&r, rc, 8);
	/* 0.5 + 1 + 2 + 4 + 8 + 8 + 8 s: eight calls, the wait stays at the cap */
	run_for(&r, 31500);
	assert_int_equal(r.f.calls, 8);
	assert_int_equal(r.a.backoff_ms, AGENT_BACKOFF_MAX_MS);
	run_for(&r, AGENT_BACKOFF_MAX_MS - 1);
	assert_int_equal(r.f.calls, 8);
	run_for(&r, 1);
	assert_int_equal(r.f.calls, 9);
	assert_int_equal(r.a.reports, 1);  /* the ninth call went through */
	cJSON_Delete(r.f.body);
}

static void test_metadata_failures(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, "n1");
	r.f.instance_id = NULL;  /* 500 */
	r.f.termination_time = "2026-11-25 10:29:16";
	run_for(&r, 6000);
	assert_int_equal(r.f.calls, 0);  /* nothing reported before the instance is known */
	assert_true(r.a.poll_failing);
	r.f.instance_id = "ins-abcd1234\n";
	run_for(&r, 2000);
	assert_int_equal(r.f.calls, 1);
	assert_string_equal(r.a.instance_id, "ins-abcd1234");
	assert_false(r.a.poll_failing);

	r.f.termination_time = "tomorrow";  /* malformed: neither a notice nor a withdrawal */
	run_for(&r, 6000);
	assert_int_equal(r.f.calls, 1);
	assert_true(r.a.poll_failing);
	r.f.metadata_rc = SP_ETRANSIENT;  /* no answer at all */
	run_for(&r, 6000);
	assert_int_equal(r.f.calls, 1);
	cJSON_Delete(r.f.body);

	rig_init(&r, "n1");
	r.f.instance_id = "<html>oops</html>";
	run_for(&r, 4000);
	assert_string_equal(r.a.instance_id, "");
}

#define HOLDS_TRUE(msg) \
	"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"SpotTerminating\"," \
	"\"status\":\"True\",\"reason\":\"SpotInstanceTerminating\",\"message\":\"" msg "\"}]}}"

/* An agent (re)started on a Node reads back what the Node holds before it writes
 * anything, unless the metadata announces a notice (its report makes the Node agree at
 * once): a True condition whose notice the metadata no longer announces (withdrawn
 * while the agent was down) is set False; nothing else is written. The read-back is a
 * patch that changes nothing (the agent may not get Nodes); a Node that does not exist
 * holds nothing; a failed read-back is retried with backoff; nothing is read back or
 * withdrawn before the metadata has answered. */
static void test_restart_reads_back(void **state)
{
	(void)state;
	static const struct {
		const char *node;      /* what the Node holds */
		const char *announced; /* spot/termination-time, NULL: 404 */
		int first_rc;          /* the first call's answer */
		bool metadata_down;
		unsigned calls;        /* in 10 s */
		const char *last;      /* the last write's SpotTerminating status, NULL: only the read-back */
		int64_t deadline;      /* a True one's */
	} cases[] = {
		{HOLDS_TRUE("reclaim at 2026-11-25T02:29:16Z"), NULL, 0, false, 2, "False", 0},
		{HOLDS_TRUE("soon"), NULL, 0, false, 2, "False", 0},
		{"{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",\"status\":\"False\"}]}}", NULL, 0, false,
		 1, NULL, 0},
		{"{}", NULL, 0, false, 1, NULL, 0},
		{"{}", NULL, SP_ENOTFOUND, false, 1, NULL, 0},
		{HOLDS_TRUE("reclaim at 2026-11-25T02:29:16Z"), NULL, SP_ETRANSIENT, false, 3, "False", 0},
		{HOLDS_TRUE("reclaim at 2026-11-25T02:29:16Z"), "2026-11-25 10:29:16", 0, false, 1, "True", T0},
		{HOLDS_TRUE("reclaim at 2026-11-25T02:29:16Z"), "2026-11-25 10:30:16", 0, false, 1, "True", T0 + 60},
		{HOLDS_TRUE("reclaim at 2026-11-25T02:29:16Z"), NULL, 0, true, 0, NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rig r;
		rig_init(&r, "n1");
		r.f.node_json = cases[i].node;
		r.f.termination_time = cases[i].announced;
		r.f.api_rc[0] = cases[i].first_rc;
		r.f.metadata_rc = cases[i].metadata_down ? SP_ETRANSIENT : 0;
		run_for(&r, 10000);
		if (r.f.calls != cases[i].calls)
			fail_msg("case %zu: %u calls, want %u", i, r.f.calls, cases[i].calls);
		if (cases[i].calls)
			assert_string_equal(r.f.path, "/api/v1/nodes/n1/status");
		if (cases[i].last) {
			const cJSON *c = only_condition(r.f.body);
			assert_string_equal(str(c, "status"), cases[i].last);
			assert_int_equal(node_deadline(r.f.body), cases[i].deadline);
		} else if (cases[i].calls) {
			assert_int_equal(cJSON_GetArraySize(r.f.body), 0);  /* changes nothing */
		}
		cJSON_Delete(r.f.body);
	}
}

static void test_spot_notice_mode(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, NULL);
	r.f.termination_time = "2026-11-25 10:29:16";
	r.f.api_rc[0] = SP_ECONFLICT;  /* created before this agent restarted: reported */
	run_for(&r, 1000);
	assert_int_equal(r.f.calls, 1);
	assert_string_equal(r.f.method, "POST");
	assert_string_equal(r.f.path, "/apis/devops.jokerbai.com/v1/namespaces/spotpool-system/spotnotices");
	char id[AGENT_INSTANCE_ID_MAX + 1];
	int64_t deadline;
	assert_int_equal(agent_notice_read(r.f.body, id, &deadline, NULL), 0);
	assert_string_equal(id, "ins-abcd1234");
	assert_int_equal(deadline, T0);
	run_for(&r, 10000);
	assert_int_equal(r.f.calls, 1);
	r.f.termination_time = NULL;  /* withdrawn: a create-only agent has nothing to write */
	run_for(&r, 10000);
	assert_int_equal(r.f.calls, 1);
	r.f.termination_time = "2026-11-25 10:29:16";  /* announced again: reported again */
	run_for(&r, 2000);
	assert_int_equal(r.f.calls, 2);
	cJSON_Delete(r.f.body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_termination_time),
		cmocka_unit_test(test_condition_patch),
		cmocka_unit_test(test_node_deadline),
		cmocka_unit_test(test_notice_object),
		cmocka_unit_test(test_node_notice_once),
		cmocka_unit_test(test_report_retried_with_backoff),
		cmocka_unit_test(test_backoff_capped),
		cmocka_unit_test(test_metadata_failures),
		cmocka_unit_test(test_spot_notice_mode),
		cmocka_unit_test(test_restart_reads_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
