/* status: the .status a pool shows (size, instances, conditions, the launch ledger) and
 * what the next pass reads back from it (ledger, recorded instances), plus the
 * plan_recorded rule that decides which instances a status records. */
#include "testutil.h"
#include "log.h"
#include "status.h"

#define NOW 1800000000 /* 2027-01-15T08:00:00Z */
#define NOW_TEXT "2027-01-15T08:00:00Z"
#define SECRET "AKIDsecretKEY0123456789abcdefXYZ"

static struct pool_instance inst(const char *id, const char *state)
{
	struct pool_instance in = {.created = 1};
	snprintf(in.id, sizeof(in.id), "%s", id);
	snprintf(in.state, sizeof(in.state), "%s", state);
	snprintf(in.zone, sizeof(in.zone), "ap-guangzhou-3");
	snprintf(in.instance_type, sizeof(in.instance_type), "GN7.2XLARGE32");
	snprintf(in.private_ip, sizeof(in.private_ip), "10.0.0.1");
	snprintf(in.created_time, sizeof(in.created_time), "2027-01-15T07:00:00Z");
	return in;
}

/* Instances named i0, i1, ... in the given states (NULL-terminated); returns the count. */
static size_t insts(const char *const *states, struct pool_instance *out)
{
	size_t n = 0;
	char id[16];
	for (; states && states[n]; n++) {
		snprintf(id, sizeof(id), "i%zu", n);
		out[n] = inst(id, states[n]);
	}
	return n;
}

static void push_n(struct strv *l, const char *prefix, int n)
{
	char id[32];
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s%d", prefix, i);
		strv_push(l, id);
	}
}

static struct status_input input(const struct plan *p, const struct pool_instance *in, size_t n)
{
	return (struct status_input){.selector = "spotpool.jokerbai.com/pool-name=p", .generation = 7,
				     .instances = in, .n_instances = n, .plan = p, .now = NOW};
}

/* Frees the status built last and builds the next one. */
static cJSON *rebuild(cJSON *st, const struct status_input *si)
{
	cJSON_Delete(st);
	return status_build(si);
}

/* A pool with nothing to do: target 0, no instances. */
static const struct plan empty_plan = {.target = 0};

static cJSON *parse(const char *json)
{
	cJSON *j = cJSON_Parse(json);
	assert_non_null(j);
	return j;
}

static void assert_cond(const cJSON *st, const char *type, const char *status, const char *reason)
{
	const char *s = status_condition(st, type, "status"), *r = status_condition(st, type, "reason");
	if (!s || !r || strcmp(s, status) != 0 || strcmp(r, reason) != 0)
		fail_msg("%s: got %s/%s, want %s/%s (message: %s)", type, s ? s : "(none)", r ? r : "(none)",
			 status, reason, status_condition(st, type, "message"));
	assert_non_null(status_condition(st, type, "message"));
	assert_non_null(status_condition(st, type, "lastTransitionTime"));
}

static void assert_cond_msg(const cJSON *st, const char *type, const char *needle)
{
	const char *m = status_condition(st, type, "message");
	assert_non_null(m);
	assert_contains(m, needle);
}

static int get_int(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	assert_true(cJSON_IsNumber(v));
	return v->valueint;
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static bool has(const cJSON *o, const char *key)
{
	return cJSON_HasObjectItem(o, key);
}

/* l holds exactly want (NULL-terminated), in order. */
static void assert_strv(const struct strv *l, const char *const *want)
{
	size_t n = 0;
	for (; want[n]; n++) {
		if (n >= l->n)
			fail_msg("list has %zu entries, want more (next: %s)", l->n, want[n]);
		assert_string_equal(l->v[n], want[n]);
	}
	assert_int_equal(l->n, n);
}

/* ---- status_build: size and instances ---- */

static void test_size_counts_live_instances_lists_all_given(void **state)
{
	(void)state;
	struct pool_instance in[6];
	size_t n = insts((const char *[]){"RUNNING", "PENDING", "LAUNCH_FAILED", "TERMINATING", "SHUTDOWN",
					  "STARTING", NULL}, in);
	struct plan p = {.observed = 3, .target = 3};
	struct status_input si = input(&p, in, n);
	cJSON *st = status_build(&si);
	assert_int_equal(get_int(st, "size"), 3); /* RUNNING, PENDING, STARTING */
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(st, "instances");
	assert_int_equal(cJSON_GetArraySize(list), 6);
	for (int i = 0; i < 6; i++) {
		const cJSON *e = cJSON_GetArrayItem(list, i);
		assert_string_equal(get_str(e, "instanceId"), in[i].id);
		assert_string_equal(get_str(e, "state"), in[i].state);
		assert_string_equal(get_str(e, "zone"), "ap-guangzhou-3");
		assert_string_equal(get_str(e, "instanceType"), "GN7.2XLARGE32");
		assert_string_equal(get_str(e, "privateIp"), "10.0.0.1");
		assert_string_equal(get_str(e, "publicIp"), "");
		assert_string_equal(get_str(e, "createdTime"), "2027-01-15T07:00:00Z");
	}
	assert_string_equal(get_str(st, "selector"), "spotpool.jokerbai.com/pool-name=p");
	assert_int_equal(get_int(st, "observedGeneration"), 7);
	cJSON_Delete(st);
}

static void test_empty_pool_has_size_zero_and_empty_list(void **state)
{
	(void)state;
	struct status_input si = input(&empty_plan, NULL, 0);
	si.selector = NULL;
	cJSON *st = status_build(&si);
	assert_int_equal(get_int(st, "size"), 0);
	assert_true(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(st, "instances")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "instances")), 0);
	assert_false(has(st, "selector"));
	cJSON_Delete(st);
}

/* accountFingerprint: written when given, else left out (a merge patch keeps it). */
static void test_account_fingerprint(void **state)
{
	(void)state;
	struct status_input si = input(&empty_plan, NULL, 0);
	si.account = "0123456789abcdef";
	cJSON *st = status_build(&si);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "accountFingerprint")),
			    "0123456789abcdef");
	cJSON_Delete(st);
	si.account = NULL;
	st = status_build(&si);
	assert_false(has(st, "accountFingerprint"));
	cJSON_Delete(st);
}

/* ---- status_build without a plan: the cloud could not be read ---- */

static cJSON *build_without_plan(int old_size, int minimum, const char *reason, const char *msg)
{
	char json[128];
	snprintf(json, sizeof(json), "{\"size\": %d, \"instances\": [{\"instanceId\": \"ins-1\"}]}", old_size);
	cJSON *old = parse(json);
	struct pool_instance in[] = {inst("ins-new", "RUNNING")};
	struct status_input si = input(NULL, in, 1); /* ignored without a plan */
	si.old_status = old;
	si.minimum = minimum;
	si.degraded_reason = reason;
	si.degraded_message = msg;
	cJSON *st = status_build(&si);
	cJSON_Delete(old);
	/* Left out, so a merge patch keeps the last known values. */
	assert_false(has(st, "size"));
	assert_false(has(st, "instances"));
	return st;
}

static void test_no_plan_below_minimum_uses_last_known_size(void **state)
{
	(void)state;
	cJSON *st = build_without_plan(1, 2, "CloudUnavailable", "DescribeInstances: timed out");
	assert_cond(st, "Progressing", "True", "BelowMinimum");
	assert_cond_msg(st, "Progressing", "1 of minimum 2");
	assert_cond_msg(st, "Progressing", "(last known)");
	assert_cond_msg(st, "Progressing", "DescribeInstances: timed out");
	assert_cond(st, "Ready", "False", "CloudUnavailable");
	assert_cond_msg(st, "Ready", "DescribeInstances: timed out");
	assert_cond(st, "Degraded", "True", "CloudUnavailable");
	cJSON_Delete(st);
}

static void test_no_plan_at_minimum_is_blocked(void **state)
{
	(void)state;
	cJSON *st = build_without_plan(2, 2, "AuthFailed", "credentials rejected: AuthFailure.SecretIdNotFound");
	assert_cond(st, "Progressing", "False", "Blocked");
	assert_cond_msg(st, "Progressing", "cannot reconcile: credentials rejected");
	assert_cond(st, "Ready", "False", "AuthFailed");
	assert_cond(st, "Degraded", "True", "AuthFailed");
	cJSON_Delete(st);
}

static void test_no_plan_not_degraded_is_not_ready(void **state)
{
	(void)state;
	cJSON *st = build_without_plan(2, 0, NULL, NULL);
	assert_cond(st, "Ready", "False", "Scaling");
	assert_cond(st, "Progressing", "False", "Stable");
	assert_cond(st, "Degraded", "False", "AsExpected");
	cJSON_Delete(st);
}

/* ---- status_build: Ready ---- */

struct ready_case {
	const char *states[4];
	int target, inflight;
	bool deleting;
	const char *degraded;
	bool ready;
	const char *reason;
};

static void test_ready_only_when_settled(void **state)
{
	(void)state;
	static const struct ready_case cases[] = {
		{{"RUNNING", "RUNNING"}, 2, 0, false, NULL, true, "PoolReady"},
		{{NULL}, 0, 0, false, NULL, true, "PoolReady"},
		/* a dead instance awaiting cleanup is not part of the size */
		{{"RUNNING", "RUNNING", "LAUNCH_FAILED"}, 2, 0, false, NULL, true, "PoolReady"},
		{{"RUNNING", "PENDING"}, 2, 0, false, NULL, false, "Scaling"},
		/* running == target but one more is live: not settled */
		{{"RUNNING", "RUNNING", "PENDING"}, 2, 0, false, NULL, false, "Scaling"},
		{{"RUNNING"}, 2, 0, false, NULL, false, "Scaling"},
		{{"RUNNING", "RUNNING"}, 2, 1, false, NULL, false, "Scaling"},
		{{"RUNNING", "RUNNING"}, 2, 0, false, "QuotaExceeded", false, "QuotaExceeded"},
		{{NULL}, 0, 0, true, NULL, false, "Deleting"},
		{{NULL}, 0, 0, true, "CloudUnavailable", false, "CloudUnavailable"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct ready_case *k = &cases[c];
		struct pool_instance in[4];
		size_t n = insts(k->states, in);
		struct plan p = {.target = k->target, .inflight = k->inflight};
		struct status_input si = input(&p, in, n);
		si.deleting = k->deleting;
		si.degraded_reason = k->degraded;
		si.degraded_message = k->degraded ? "something failed" : NULL;
		cJSON *st = status_build(&si);
		assert_cond(st, "Ready", k->ready ? "True" : "False", k->reason);
		char want[64];
		int running = 0;
		for (size_t i = 0; i < n; i++)
			running += strcmp(k->states[i], "RUNNING") == 0;
		snprintf(want, sizeof(want), "%d/%d instance(s) running", running, k->target);
		assert_cond_msg(st, "Ready", want);
		cJSON_Delete(st);
	}
}

/* ---- status_build: Progressing says what the pool is doing ---- */

struct progress_case {
	const char *reason;
	bool progressing;
	const char *msg; /* expected in the message */
	const char *states[4];
	struct plan plan; /* counters and flags; scale_down/cleanup filled from n_* */
	int n_scale_down, n_cleanup, minimum;
	bool deleting;
	const char *degraded, *progress_message;
};

static const struct progress_case progress_cases[] = {
	{"Deleting", true, "pool deleted: terminating 2 instance(s)", {"RUNNING", "RUNNING"},
	 {.target = 0}, 0, 2, 0, true, NULL, NULL},
	{"Deleting", true, "waiting for the outcome of a launch", {NULL},
	 {.waiting = true}, 0, 0, 0, true, NULL, NULL},
	{"Deleting", true, "pool deleted: cleaning up: TerminateInstances: throttled", {NULL},
	 {.target = 0}, 0, 0, 0, true, "Throttled", NULL},
	{"Launching", true, "launching 2 instance(s): 1 live, target 3", {"RUNNING"},
	 {.observed = 1, .target = 3, .launch = 2}, 0, 0, 0, false, NULL, NULL},
	{"Launching", true, "launching 1 instance(s): 1 live, target 2", {"RUNNING"},
	 {.observed = 1, .target = 2, .resume = 1, .waiting = true}, 0, 0, 0, false, NULL, NULL},
	{"WaitingForLaunch", true, "1 live, 2 in flight, target 3", {"RUNNING"},
	 {.observed = 1, .inflight = 2, .target = 3, .waiting = true}, 0, 0, 0, false, NULL, NULL},
	{"ScalingDown", true, "terminating 1 instance(s) above target 2", {"RUNNING", "RUNNING", "RUNNING"},
	 {.observed = 3, .target = 2}, 1, 0, 0, false, NULL, NULL},
	{"CleaningUp", true, "terminating 1 dead instance(s)", {"RUNNING", "LAUNCH_FAILED"},
	 {.observed = 1, .target = 1}, 0, 1, 0, false, NULL, NULL},
	{"WaitingForInstances", true, "1 of 2 instance(s) running", {"RUNNING", "PENDING"},
	 {.observed = 2, .target = 2}, 0, 0, 0, false, NULL, NULL},
	{"Stable", false, "pool is at its target size", {"RUNNING", "RUNNING"},
	 {.observed = 2, .target = 2}, 0, 0, 0, false, NULL, NULL},
	{"DryRun", true, "dry run: would launch 2 instance(s)", {NULL},
	 {.target = 2, .launch = 2}, 0, 0, 0, false, NULL, "dry run: would launch 2 instance(s)"},
	/* degraded and short of minimum, with a fresh count (no "(last known)") */
	{"BelowMinimum", true, "1 of minimum 2 instance(s) live: RunInstances: sold out", {"RUNNING"},
	 {.observed = 1, .target = 2, .launch = 1}, 0, 0, 2, false, "InsufficientCapacity", NULL},
	/* degraded but not short: says what it does */
	{"Launching", true, "launching 1 instance(s): 2 live, target 3", {"RUNNING", "RUNNING"},
	 {.observed = 2, .target = 3, .launch = 1}, 0, 0, 2, false, "InsufficientCapacity", NULL},
};

static const char *degraded_message_for(const char *reason)
{
	if (!reason)
		return NULL;
	if (strcmp(reason, "Throttled") == 0)
		return "TerminateInstances: throttled";
	return "RunInstances: sold out";
}

static void test_progressing_reasons(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(progress_cases) / sizeof(progress_cases[0]); c++) {
		const struct progress_case *k = &progress_cases[c];
		struct pool_instance in[4];
		size_t n = insts(k->states, in);
		struct plan p = k->plan;
		push_n(&p.scale_down, "down", k->n_scale_down);
		push_n(&p.cleanup, "dead", k->n_cleanup);
		struct status_input si = input(&p, in, n);
		si.minimum = k->minimum;
		si.deleting = k->deleting;
		si.degraded_reason = k->degraded;
		si.degraded_message = degraded_message_for(k->degraded);
		si.progress_message = k->progress_message;
		cJSON *st = status_build(&si);
		assert_cond(st, "Progressing", k->progressing ? "True" : "False", k->reason);
		assert_cond_msg(st, "Progressing", k->msg);
		assert_null(strstr(status_condition(st, "Progressing", "message"), "(last known)"));
		cJSON_Delete(st);
		plan_free(&p);
	}
}

/* ---- status_build: Degraded, InsecureCredentials, lastTransitionTime ---- */

static void test_degraded_carries_reason_and_message(void **state)
{
	(void)state;
	struct status_input si = input(&empty_plan, NULL, 0);
	cJSON *st = status_build(&si);
	assert_cond(st, "Degraded", "False", "AsExpected");
	assert_string_equal(status_condition(st, "Degraded", "message"), "no errors");

	si.degraded_reason = "InvalidSpec";
	si.degraded_message = "spec.instanceType: GN7.BOGUS is not offered in ap-guangzhou-3";
	st = rebuild(st, &si);
	assert_cond(st, "Degraded", "True", "InvalidSpec");
	assert_string_equal(status_condition(st, "Degraded", "message"), si.degraded_message);
	/* every condition reports the generation it describes */
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
		assert_int_equal(get_int(c, "observedGeneration"), 7);
	cJSON_Delete(st);
}

static void test_insecure_credentials_only_when_asked(void **state)
{
	(void)state;
	struct status_input si = input(&empty_plan, NULL, 0);
	cJSON *st = status_build(&si);
	assert_null(status_condition(st, "InsecureCredentials", "status"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "conditions")), 3);

	si.insecure_credentials = true;
	st = rebuild(st, &si);
	assert_cond(st, "InsecureCredentials", "True", "InlineCredentials");
	assert_cond_msg(st, "InsecureCredentials", "credentialsSecretRef");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "conditions")), 4);
	cJSON_Delete(st);
}

static void test_transition_time_moves_only_on_flip(void **state)
{
	(void)state;
	struct pool_instance in[] = {inst("a", "RUNNING")};
	struct plan p = {.observed = 1, .target = 1};
	struct status_input si = input(&p, in, 1);
	si.now = NOW - 3600;
	cJSON *first = status_build(&si);
	assert_cond(first, "Ready", "True", "PoolReady");
	char then[32];
	sp_format_time(NOW - 3600, then);
	assert_string_equal(status_condition(first, "Ready", "lastTransitionTime"), then);

	/* an hour later, nothing changed: times kept, and the patch is a no-op */
	si.old_status = first;
	si.now = NOW;
	cJSON *same = status_build(&si);
	assert_string_equal(status_condition(same, "Ready", "lastTransitionTime"), then);
	assert_string_equal(status_condition(same, "Degraded", "lastTransitionTime"), then);
	assert_true(status_patch_is_noop(same, first));

	/* Degraded flips to True, Ready to False: both move; Progressing (False) stays */
	si.degraded_reason = "CloudUnavailable";
	si.degraded_message = "DescribeInstances: timed out";
	cJSON *flipped = status_build(&si);
	assert_string_equal(status_condition(flipped, "Ready", "lastTransitionTime"), NOW_TEXT);
	assert_string_equal(status_condition(flipped, "Degraded", "lastTransitionTime"), NOW_TEXT);
	assert_string_equal(status_condition(flipped, "Progressing", "lastTransitionTime"), then);
	assert_false(status_patch_is_noop(flipped, first));
	cJSON_Delete(flipped);
	cJSON_Delete(same);
	cJSON_Delete(first);
}

/* A condition recorded without a time (hand-edited) gets one. */
static void test_transition_time_set_when_missing(void **state)
{
	(void)state;
	cJSON *old = parse("{\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}, 42]}");
	struct pool_instance in[] = {inst("a", "RUNNING")};
	struct plan p = {.observed = 1, .target = 1};
	struct status_input si = input(&p, in, 1);
	si.old_status = old;
	cJSON *st = status_build(&si);
	assert_cond(st, "Ready", "True", "PoolReady");
	assert_string_equal(status_condition(st, "Ready", "lastTransitionTime"), NOW_TEXT);
	cJSON_Delete(st);
	cJSON_Delete(old);
}

/* ---- status_build: redaction ---- */

static void assert_no_secret(const cJSON *st)
{
	char *text = cJSON_PrintUnformatted(st);
	assert_non_null(text);
	if (strstr(text, SECRET))
		fail_msg("secret in status: %s", text);
	assert_contains(text, "[redacted]");
	free(text);
}

static void test_messages_are_redacted(void **state)
{
	(void)state;
	log_add_secret(SECRET);
	struct plan p = {.target = 1, .launch = 1};
	struct status_input si = input(&p, NULL, 0);
	si.degraded_reason = "AuthFailed";
	si.degraded_message = "RunInstances: SecretId " SECRET " was rejected";
	si.minimum = 1;
	cJSON *st = status_build(&si);
	assert_cond(st, "Progressing", "True", "BelowMinimum");
	assert_no_secret(st);
	assert_cond_msg(st, "Degraded", "RunInstances: SecretId [redacted] was rejected");

	si.plan = NULL; /* Ready and Blocked repeat the message */
	si.minimum = 0;
	st = rebuild(st, &si);
	assert_cond(st, "Progressing", "False", "Blocked");
	assert_no_secret(st);

	si.plan = &p;
	si.degraded_reason = NULL;
	si.degraded_message = NULL;
	si.progress_message = "dry run with key " SECRET;
	st = rebuild(st, &si);
	assert_cond(st, "Progressing", "True", "DryRun");
	assert_no_secret(st);
	cJSON_Delete(st);
	log_remove_secret(SECRET);
}

/* A message longer than a condition's message is cut; the cut must come after redaction
 * (log.h, log_redact_copy), or the head of a secret straddling the cut survives. */
static void test_long_message_never_leaks_head_of_secret(void **state)
{
	(void)state;
	log_add_secret(SECRET);
	char msg[2 * SP_ERROR_MAX];
	/* "cannot reconcile: " + 480 chars + the secret: the cut at 511 falls in the secret */
	snprintf(msg, sizeof(msg), "%480s%s", "", SECRET);
	struct status_input si = input(NULL, NULL, 0);
	si.degraded_reason = "CloudUnavailable";
	si.degraded_message = msg;
	cJSON *st = status_build(&si);
	char *text = cJSON_PrintUnformatted(st);
	char head[9];
	snprintf(head, sizeof(head), "%.8s", SECRET);
	if (strstr(text, head))
		fail_msg("head of secret \"%s\" in status: %s", head, status_condition(st, "Progressing", "message"));
	free(text);
	cJSON_Delete(st);
	log_remove_secret(SECRET);
}

/* ---- status_build and status_ledger: the launch ledger ---- */

static struct plan_launch mkledger(const char *token, int count, const char *const *ids)
{
	struct plan_launch l = {.count = count, .started = NOW - 30, .ids_known = ids != NULL};
	snprintf(l.client_token, sizeof(l.client_token), "%s", token);
	for (size_t i = 0; ids && ids[i]; i++)
		strv_push(&l.instance_ids, ids[i]);
	return l;
}

static cJSON *build_with_ledger(const struct plan_launch *l)
{
	struct plan p = {.target = 2, .launch = 2};
	struct status_input si = input(&p, NULL, 0);
	si.ledger = l;
	si.launch_seq = 12;
	return status_build(&si);
}

static void test_ledger_null_when_none(void **state)
{
	(void)state;
	cJSON *st = build_with_ledger(NULL);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(st, "launch")));
	assert_int_equal(status_launch_seq(st), 12);
	struct plan_launch back = mkledger("untouched", 3, NULL);
	assert_false(status_ledger(st, &back));
	assert_string_equal(back.client_token, "untouched"); /* ret_* untouched on failure */
	cJSON_Delete(st);
}

static void test_ledger_round_trip(void **state)
{
	(void)state;
	static const char *const ids[] = {"ins-a", "ins-b", NULL};
	for (int known = 0; known < 2; known++) {
		struct plan_launch l = mkledger("spotpool-ns-p-12", 2, known ? ids : NULL);
		cJSON *st = build_with_ledger(&l);
		const cJSON *j = cJSON_GetObjectItemCaseSensitive(st, "launch");
		assert_string_equal(get_str(j, "clientToken"), "spotpool-ns-p-12");
		assert_int_equal(get_int(j, "count"), 2);
		char started[32];
		sp_format_time(NOW - 30, started);
		assert_string_equal(get_str(j, "startedAt"), started);
		assert_int_equal(has(j, "instanceIds"), known);

		struct plan_launch back;
		assert_true(status_ledger(st, &back));
		assert_string_equal(back.client_token, l.client_token);
		assert_int_equal(back.count, 2);
		assert_int_equal(back.started, NOW - 30);
		assert_int_equal(back.ids_known, known);
		assert_strv(&back.instance_ids, known ? ids : (const char *const[]){NULL});
		plan_launch_clear(&back);
		plan_launch_clear(&l);
		cJSON_Delete(st);
	}
}

/* The ledger keeps the offering it launched on, so that a resumed launch asks for the same
 * one; a ledger of the previous version (no offering) reads as the seed's (empty). */
static void test_ledger_offering(void **state)
{
	(void)state;
	struct plan_launch l = mkledger("spotpool-ns-p-13", 3, NULL);
	snprintf(l.zone, sizeof(l.zone), "ap-singapore-4");
	snprintf(l.instance_type, sizeof(l.instance_type), "GN10X.2XLARGE40");
	cJSON *st = build_with_ledger(&l);
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(st, "launch");
	assert_string_equal(get_str(j, "zone"), "ap-singapore-4");
	assert_string_equal(get_str(j, "instanceType"), "GN10X.2XLARGE40");
	struct plan_launch back;
	assert_true(status_ledger(st, &back));
	assert_string_equal(back.zone, "ap-singapore-4");
	assert_string_equal(back.instance_type, "GN10X.2XLARGE40");
	assert_int_equal(back.count, 3);
	plan_launch_clear(&back);
	cJSON_Delete(st);
	/* The seed's offering (empty fields) is written as before: no keys. */
	l.zone[0] = l.instance_type[0] = '\0';
	st = build_with_ledger(&l);
	j = cJSON_GetObjectItemCaseSensitive(st, "launch");
	assert_false(has(j, "zone"));
	assert_false(has(j, "instanceType"));
	cJSON_Delete(st);
	plan_launch_clear(&l);
	/* Written by the previous version. */
	st = parse("{\"launch\": {\"clientToken\": \"t\", \"count\": 1, \"startedAt\": \"" NOW_TEXT "\"}}");
	assert_true(status_ledger(st, &back));
	assert_string_equal(back.zone, "");
	assert_string_equal(back.instance_type, "");
	plan_launch_clear(&back);
	cJSON_Delete(st);
}

static bool ledger_accepts(const char *launch_json);

static void test_ledger_offering_rejects_insane_values(void **state)
{
	(void)state;
	char long_zone[POOL_ZONE_MAX + 2], long_type[POOL_INSTANCE_TYPE_MAX + 2], json[512];
	memset(long_zone, 'z', sizeof(long_zone) - 1);
	long_zone[sizeof(long_zone) - 1] = '\0';
	memset(long_type, 'T', sizeof(long_type) - 1);
	long_type[sizeof(long_type) - 1] = '\0';
#define OLEDGER(extra) "{\"clientToken\": \"t\", \"count\": 1, \"startedAt\": \"" NOW_TEXT "\", " extra "}"
	assert_true(ledger_accepts(OLEDGER("\"zone\": \"ap-singapore-3\", \"instanceType\": \"S5.LARGE8\"")));
	assert_true(ledger_accepts(OLEDGER("\"zone\": null")));
	assert_false(ledger_accepts(OLEDGER("\"zone\": 3")));
	assert_false(ledger_accepts(OLEDGER("\"instanceType\": [\"S5.LARGE8\"]")));
	snprintf(json, sizeof(json), OLEDGER("\"zone\": \"%s\""), long_zone);
	assert_false(ledger_accepts(json));
	long_zone[POOL_ZONE_MAX] = '\0';  /* the longest the spec allows fits */
	snprintf(json, sizeof(json), OLEDGER("\"zone\": \"%s\""), long_zone);
	assert_true(ledger_accepts(json));
	snprintf(json, sizeof(json), OLEDGER("\"instanceType\": \"%s\""), long_type);
	assert_false(ledger_accepts(json));
	long_type[POOL_INSTANCE_TYPE_MAX] = '\0';
	snprintf(json, sizeof(json), OLEDGER("\"instanceType\": \"%s\""), long_type);
	assert_true(ledger_accepts(json));
#undef OLEDGER
}

/* An empty list is a known answer (the launch created nothing), not an unknown one. */
static void test_ledger_empty_ids_are_known(void **state)
{
	(void)state;
	cJSON *st = parse("{\"launch\": {\"clientToken\": \"t\", \"count\": 1, \"startedAt\": \"" NOW_TEXT
			  "\", \"instanceIds\": []}}");
	struct plan_launch l;
	assert_true(status_ledger(st, &l));
	assert_true(l.ids_known);
	assert_int_equal(l.instance_ids.n, 0);
	assert_int_equal(l.started, NOW);
	plan_launch_clear(&l);
	cJSON_Delete(st);
}

/* A ledger whose instanceIds is ids_json: refused, or read as want_known and want. */
static void assert_ledger_ids(const char *ids_json, bool want_known, const char *const *want)
{
	char *json = xasprintf("{\"launch\": {\"clientToken\": \"t\", \"count\": 2, \"startedAt\": \"" NOW_TEXT
			       "\", \"instanceIds\": %s}}", ids_json);
	cJSON *st = parse(json);
	struct plan_launch l;
	if (status_ledger(st, &l)) {
		assert_int_equal(l.ids_known, want_known);
		assert_strv(&l.instance_ids, want);
		plan_launch_clear(&l);
	}
	cJSON_Delete(st);
	free(json);
}

/* Entries that are not IDs never become IDs to look up or terminate; a list that is not
 * a list is no answer (or the whole ledger is refused). */
static void test_ledger_ids_of_wrong_type(void **state)
{
	(void)state;
	assert_ledger_ids("[\"ins-a\", 7, null, {\"id\": \"ins-x\"}, \"ins-b\"]", true,
			  (const char *[]){"ins-a", "ins-b", NULL});
	assert_ledger_ids("\"ins-a\"", false, (const char *[]){NULL});
	assert_ledger_ids("{\"0\": \"ins-a\"}", false, (const char *[]){NULL});
}

static bool ledger_accepts(const char *launch_json)
{
	char *json = xasprintf("{\"launch\": %s}", launch_json);
	cJSON *st = parse(json);
	struct plan_launch l;
	bool ok = status_ledger(st, &l);
	if (ok)
		plan_launch_clear(&l);
	cJSON_Delete(st);
	free(json);
	return ok;
}

static void test_ledger_rejects_insane_values(void **state)
{
	(void)state;
	char token64[65], token65[66], json[256];
	memset(token64, 'a', 64);
	token64[64] = '\0';
	memset(token65, 'a', 65);
	token65[65] = '\0';
#define LEDGER(token, count, started) "{\"clientToken\": " token ", \"count\": " count ", \"startedAt\": " started "}"
	snprintf(json, sizeof(json), LEDGER("\"%s\"", "1", "\"" NOW_TEXT "\""), token64);
	assert_true(ledger_accepts(json));
	snprintf(json, sizeof(json), LEDGER("\"%s\"", "1", "\"" NOW_TEXT "\""), token65);
	assert_false(ledger_accepts(json));
	assert_true(ledger_accepts(LEDGER("\"t\"", "100", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("\"t\"", "101", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("\"t\"", "0", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("\"t\"", "-3", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("\"t\"", "1e300", "\"" NOW_TEXT "\"")));
	/* wrong types */
	assert_false(ledger_accepts(LEDGER("7", "1", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("null", "1", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("\"t\"", "\"1\"", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("\"t\"", "true", "\"" NOW_TEXT "\"")));
	assert_false(ledger_accepts(LEDGER("\"t\"", "1", "1800000000")));
	assert_false(ledger_accepts("{\"clientToken\": \"t\", \"count\": 1}"));
	assert_false(ledger_accepts("{\"count\": 1, \"startedAt\": \"" NOW_TEXT "\"}"));
	assert_false(ledger_accepts("{\"clientToken\": \"t\", \"startedAt\": \"" NOW_TEXT "\"}"));
	assert_false(ledger_accepts("\"t\""));
	assert_false(ledger_accepts("[]"));
	assert_false(ledger_accepts("null"));
#undef LEDGER
	struct plan_launch l;
	assert_false(status_ledger(NULL, &l));
}

/* Anyone who can write the status can write startedAt: a value that is not a time must
 * not become epoch 0, which makes every launched ID look past its grace at once. */
static void test_ledger_rejects_unparseable_start(void **state)
{
	(void)state;
	assert_false(ledger_accepts("{\"clientToken\": \"t\", \"count\": 1, \"startedAt\": \"yesterday\"}"));
	assert_false(ledger_accepts("{\"clientToken\": \"t\", \"count\": 1, \"startedAt\": \"\"}"));
}

/* ---- status_recorded ---- */

/* status_recorded(st) reads exactly these IDs, and of them these live ones. */
static void assert_recorded(const cJSON *st, const char *const *want_ids, const char *const *want_live)
{
	struct strv ids = {0}, live = {0};
	status_recorded(st, &ids, &live, NULL, NULL, NULL);
	assert_strv(&ids, want_ids);
	assert_strv(&live, want_live);
	strv_clear(&ids);
	strv_clear(&live);
}

static void assert_recorded_json(const char *status_json, const char *const *want_ids,
				 const char *const *want_live)
{
	cJSON *st = parse(status_json);
	assert_recorded(st, want_ids, want_live);
	cJSON_Delete(st);
}

static void test_recorded_ids_and_live(void **state)
{
	(void)state;
	assert_recorded_json("{\"instances\": ["
		 "{\"instanceId\": \"ins-run\", \"state\": \"RUNNING\"},"
		 "{\"instanceId\": \"ins-go\", \"state\": \"TERMINATING\"},"
		 "{\"instanceId\": \"ins-legacy\"},"                         /* earlier Go operator */
		 "{\"instanceId\": \"ins-dead\", \"state\": \"LAUNCH_FAILED\"},"
		 "{\"state\": \"RUNNING\"},"                                 /* no id */
		 "{\"instanceId\": \"\", \"state\": \"RUNNING\"},"
		 "{\"instanceId\": \"ins-0123456789abcdef0123456789ab\", \"state\": \"RUNNING\"}," /* 32 */
		 "{\"instanceId\": 12345, \"state\": \"RUNNING\"},"
		 "{\"instanceId\": null},"
		 "\"ins-bare-string\", 7, null, [],"
		 "{\"instanceId\": \"ins-0123456789abcdef0123456789a\", \"state\": \"PENDING\"}" /* 31 */
		 "]}",
		 (const char *[]){"ins-run", "ins-go", "ins-legacy", "ins-dead",
				  "ins-0123456789abcdef0123456789a", NULL},
		 (const char *[]){"ins-run", "ins-legacy", "ins-0123456789abcdef0123456789a", NULL});
	/* nothing recorded */
	static const char *const none[] = {NULL};
	assert_recorded_json("{\"instances\": null}", none, none);
	assert_recorded_json("{}", none, none);
	assert_recorded(NULL, none, none);
}

/* What status_build writes, the next pass reads back. */
static void test_recorded_reads_what_build_wrote(void **state)
{
	(void)state;
	struct pool_instance in[4];
	size_t n = insts((const char *[]){"RUNNING", "TERMINATING", "SHUTDOWN", "PENDING", NULL}, in);
	struct plan p = {.observed = 2, .target = 2};
	struct status_input si = input(&p, in, n);
	cJSON *st = status_build(&si);
	assert_recorded(st, (const char *[]){"i0", "i1", "i2", "i3", NULL}, (const char *[]){"i0", "i3", NULL});
	cJSON_Delete(st);
}

static void test_recorded_is_bounded(void **state)
{
	(void)state;
	cJSON *st = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(st, "instances");
	char id[32];
	for (int i = 0; i < STATUS_MAX_RECORDED + 5; i++) {
		cJSON *e = cJSON_CreateObject();
		snprintf(id, sizeof(id), "ins-%06d", i);
		cJSON_AddStringToObject(e, "instanceId", id);
		cJSON_AddItemToArray(list, e);
	}
	struct strv ids = {0}, live = {0};
	status_recorded(st, &ids, &live, NULL, NULL, NULL);
	assert_int_equal(ids.n, STATUS_MAX_RECORDED);
	assert_int_equal(live.n, STATUS_MAX_RECORDED);
	assert_string_equal(ids.v[0], "ins-000000");
	snprintf(id, sizeof(id), "ins-%06d", STATUS_MAX_RECORDED - 1);
	assert_string_equal(ids.v[STATUS_MAX_RECORDED - 1], id);
	strv_clear(&ids);
	strv_clear(&live);
	cJSON_Delete(st);
}

/* .status.nodeDeletions: what status_build writes, status_node_deletions reads back;
 * an empty list is written as null (a merge patch removes the key), an unknown one is
 * left out (the old list stays); entries without a name or UID that fit are skipped,
 * and the list is read up to its bound (anyone allowed to write the status can grow it). */
static void test_node_deletions(void **state)
{
	(void)state;
	struct node_ref refs[2] = {{.name = "10.0.0.7", .uid = "u-1", .instance_id = "ins-a"},
				   {.name = "n2", .uid = "u-2", .instance_id = "ins-b"}};
	struct status_input in = {.node_deletions = refs, .n_node_deletions = 2, .node_deletions_known = true};
	cJSON *st = status_build(&in);
	struct node_ref back[STATUS_MAX_NODE_DELETIONS];
	assert_int_equal(status_node_deletions(st, back, STATUS_MAX_NODE_DELETIONS), 2);
	assert_string_equal(back[0].name, "10.0.0.7");
	assert_string_equal(back[0].uid, "u-1");
	assert_string_equal(back[1].instance_id, "ins-b");
	cJSON_Delete(st);
	in.n_node_deletions = 0;
	st = status_build(&in);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(st, "nodeDeletions")));
	cJSON_Delete(st);
	in.node_deletions_known = false;
	st = status_build(&in);
	assert_false(cJSON_HasObjectItem(st, "nodeDeletions"));
	cJSON_Delete(st);

	st = cJSON_Parse("{\"nodeDeletions\":[{\"name\":\"a\"},{\"uid\":\"u\"},{\"name\":\"\",\"uid\":\"u\"},"
			 "{\"name\":\"b\",\"uid\":\"0123456789012345678901234567890123456\"},7,"
			 "{\"name\":\"c\",\"uid\":\"u-c\"}]}");
	assert_int_equal(status_node_deletions(st, back, STATUS_MAX_NODE_DELETIONS), 1);
	assert_string_equal(back[0].name, "c");
	assert_string_equal(back[0].instance_id, "");
	cJSON_Delete(st);
	st = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(st, "nodeDeletions");
	for (int i = 0; i < STATUS_MAX_NODE_DELETIONS + 5; i++)
		cJSON_AddItemToArray(list, cJSON_Parse("{\"name\":\"n\",\"uid\":\"u\"}"));
	assert_int_equal(status_node_deletions(st, back, STATUS_MAX_NODE_DELETIONS), STATUS_MAX_NODE_DELETIONS);
	assert_int_equal(status_node_deletions(NULL, back, STATUS_MAX_NODE_DELETIONS), 0);
	cJSON_Delete(st);
}

/* ---- status_patch_is_noop ---- */

static bool noop(const char *patch_json, const char *old_json)
{
	cJSON *patch = parse(patch_json), *old = old_json ? parse(old_json) : NULL;
	bool r = status_patch_is_noop(patch, old);
	cJSON_Delete(patch);
	cJSON_Delete(old);
	return r;
}

static void test_patch_is_noop(void **state)
{
	(void)state;
	assert_true(noop("{\"size\": 2, \"selector\": \"s\"}", "{\"size\": 2, \"selector\": \"s\", \"x\": 1}"));
	assert_true(noop("{}", "{\"size\": 2}"));
	assert_true(noop("{\"instances\": [{\"instanceId\": \"a\"}]}", "{\"instances\": [{\"instanceId\": \"a\"}]}"));
	assert_false(noop("{\"size\": 3}", "{\"size\": 2}"));
	assert_false(noop("{\"size\": 2, \"selector\": \"t\"}", "{\"size\": 2, \"selector\": \"s\"}"));
	assert_false(noop("{\"instances\": [{\"instanceId\": \"a\"}]}", "{\"instances\": [{\"instanceId\": \"b\"}]}"));
	assert_false(noop("{\"size\": 2}", "{\"selector\": \"s\"}"));
	assert_false(noop("{\"size\": \"2\"}", "{\"size\": 2}"));
	assert_true(noop("{\"launch\": null}", "{\"size\": 2}"));
	assert_true(noop("{\"launch\": null}", "{\"launch\": null}"));
	assert_false(noop("{\"launch\": null}", "{\"launch\": {\"clientToken\": \"t\"}}"));
	assert_false(noop("{\"size\": 2}", NULL));
	assert_false(noop("{}", NULL));
}

/* ---- plan_recorded ---- */

static void test_plan_recorded(void **state)
{
	(void)state;
	struct pool_instance known[] = {
		inst("run", "RUNNING"),          inst("going", "TERMINATING"), inst("ours-going", "TERMINATING"),
		inst("failed", "LAUNCH_FAILED"), inst("off", "SHUTDOWN"),      inst("ours-live", "RUNNING"),
		inst("down", "SHUTTING_DOWN"),   inst("pending", "PENDING"),   inst("ours-dead", "LAUNCH_FAILED"),
	};
	struct strv terminated = {0};
	strv_push(&terminated, "not-known"); /* terminated, but not in this list */
	strv_push(&terminated, "ours-going");
	strv_push(&terminated, "ours-live");
	strv_push(&terminated, "ours-dead");
	size_t n = 99;
	struct pool_instance *out = plan_recorded(known, sizeof(known) / sizeof(known[0]), &terminated, &n);
	static const char *const want[][2] = {
		{"run", "RUNNING"},        {"ours-going", "TERMINATING"}, {"failed", "LAUNCH_FAILED"},
		{"off", "SHUTDOWN"},       {"ours-live", "TERMINATING"},  {"pending", "PENDING"},
		{"ours-dead", "TERMINATING"},
	};
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(out[i].id, want[i][0]);
		assert_string_equal(out[i].state, want[i][1]);
		assert_string_equal(out[i].zone, "ap-guangzhou-3"); /* the rest is copied */
	}
	free(out);
	/* known instances are not changed */
	assert_string_equal(known[5].state, "RUNNING");

	out = plan_recorded(known, 2, NULL, &n);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].id, "run");
	free(out);
	out = plan_recorded(NULL, 0, &terminated, &n);
	assert_int_equal(n, 0);
	free(out);
	strv_clear(&terminated);
}

/* Shown TERMINATING, an instance spotpool terminated is recorded but not live: its
 * disappearance next pass is not a reclaim. */
static void test_recorded_terminated_not_live_next_pass(void **state)
{
	(void)state;
	struct pool_instance known[] = {inst("keep", "RUNNING"), inst("drop", "RUNNING")};
	struct strv terminated = {0};
	strv_push(&terminated, "drop");
	size_t n;
	struct pool_instance *rec = plan_recorded(known, 2, &terminated, &n);
	struct plan p = {.observed = 2, .target = 1};
	strv_push(&p.scale_down, "drop");
	struct status_input si = input(&p, rec, n);
	cJSON *st = status_build(&si);
	assert_int_equal(get_int(st, "size"), 1);
	assert_recorded(st, (const char *[]){"keep", "drop", NULL}, (const char *[]){"keep", NULL});
	cJSON_Delete(st);
	plan_free(&p);
	strv_clear(&terminated);
	free(rec);
}

/* ---- status_condition, status_launch_seq ---- */

static void test_condition_lookup(void **state)
{
	(void)state;
	cJSON *st = parse("{\"conditions\": [\"junk\", {\"type\": 3}, "
			  "{\"type\": \"Ready\", \"status\": \"True\", \"reason\": 5},"
			  "{\"type\": \"Degraded\", \"status\": \"False\"}]}");
	assert_string_equal(status_condition(st, "Ready", "status"), "True");
	assert_string_equal(status_condition(st, "Degraded", "status"), "False");
	assert_null(status_condition(st, "Ready", "reason"));   /* not a string */
	assert_null(status_condition(st, "Ready", "message"));  /* absent */
	assert_null(status_condition(st, "Progressing", "status"));
	assert_null(status_condition(st, "ready", "status"));   /* case-sensitive */
	assert_null(status_condition(NULL, "Ready", "status"));
	cJSON_Delete(st);
	st = parse("{\"conditions\": null}");
	assert_null(status_condition(st, "Ready", "status"));
	cJSON_Delete(st);
}

static void test_launch_seq(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		int64_t want;
	} cases[] = {
		{"{\"launchSeq\": 41}", 41},
		{"{\"launchSeq\": 1099511627776}", 1099511627776LL}, /* beyond 32 bits */
		{"{\"launchSeq\": \"41\"}", 0},
		{"{\"launchSeq\": null}", 0},
		{"{}", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *st = parse(cases[i].json);
		assert_int_equal(status_launch_seq(st), cases[i].want);
		cJSON_Delete(st);
	}
	assert_int_equal(status_launch_seq(NULL), 0);
}

static void test_format_time(void **state)
{
	(void)state;
	char out[32];
	sp_format_time(NOW, out);
	assert_string_equal(out, NOW_TEXT);
	sp_format_time(0, out);
	assert_string_equal(out, "1970-01-01T00:00:00Z");
}

static const cJSON *entry(const cJSON *st, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "instances"), i);
}

static void assert_entry(const cJSON *st, int i, const char *node, int ready, int seconds)
{
	const cJSON *e = entry(st, i);
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "node"), *r = cJSON_GetObjectItemCaseSensitive(e, "ready");
	const cJSON *sec = cJSON_GetObjectItemCaseSensitive(e, "nodeReadySeconds");
	if (node)
		assert_string_equal(cJSON_GetStringValue(n), node);
	else
		assert_null(n);
	if (ready < 0)
		assert_null(r);
	else
		assert_int_equal(cJSON_IsTrue(r), ready);
	if (seconds < 0)
		assert_null(sec);
	else
		assert_int_equal(sec->valueint, seconds);
}

/* Each instance shows its Node and whether it is Ready; nodeReadySeconds (launch ->
 * Ready) once Ready, kept afterwards (a Node that flaps does not move it); readyNodes
 * counts the Ready; Nodes not known keep what the old status said. status_newly_ready
 * gives the times shown for the first time. */
/* reclaimAt and reclaimNotFollowed (a false notice, issue 27): written as the pass says,
 * kept from the old status while the claims are not known yet (reclaim_at NULL), gone
 * with the claim; status_reclaim_at reads them back. */
static void test_reclaim_at(void **state)
{
	(void)state;
	const char *states[] = {"RUNNING", "RUNNING", NULL};
	struct pool_instance in[2];
	size_t n = insts(states, in);
	struct plan p = {.observed = 2, .target = 2};
	struct status_input si = input(&p, in, n);
	int64_t at[2] = {NOW + 120, NOW - 600};
	bool not_followed[2] = {false, true};
	si.reclaim_at = at;
	si.not_followed = not_followed;
	cJSON *st = status_build(&si);
	bool told;
	assert_int_equal(status_reclaim_at(st, in[0].id, &told), NOW + 120);
	assert_false(told);
	assert_int_equal(status_reclaim_at(st, in[1].id, &told), NOW - 600);
	assert_true(told);
	assert_int_equal(status_reclaim_at(st, "ins-other", &told), 0);
	si.old_status = st;
	si.reclaim_at = NULL;  /* not known yet: kept */
	cJSON *kept = status_build(&si);
	assert_int_equal(status_reclaim_at(kept, in[1].id, &told), NOW - 600);
	assert_true(told);
	int64_t none[2] = {0, 0};
	si.reclaim_at = none;  /* the claims withdrawn */
	cJSON *gone = status_build(&si);
	assert_int_equal(status_reclaim_at(gone, in[1].id, &told), 0);
	assert_false(told);
	cJSON_Delete(gone);
	cJSON_Delete(kept);
	cJSON_Delete(st);
}

static void test_nodes(void **state)
{
	(void)state;
	const char *states[] = {"RUNNING", "RUNNING", "PENDING", NULL};
	struct pool_instance in[3];
	size_t n = insts(states, in);
	for (size_t i = 0; i < n; i++)
		in[i].created = NOW - 600;
	struct node_view ready = {.name = "10.0.0.1", .ready = true, .ready_since = NOW - 500};
	struct node_view joining = {.name = "node-b"};
	const struct node_view *nodes[3] = {&ready, &joining, NULL};
	struct plan p = {.observed = 3, .target = 3};
	struct status_input si = input(&p, in, n);
	si.nodes = nodes;
	cJSON *st = status_build(&si);
	assert_entry(st, 0, "10.0.0.1", 1, 100);
	assert_entry(st, 1, "node-b", 0, -1);
	assert_entry(st, 2, NULL, 0, -1);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "readyNodes")->valueint, 1);
	int64_t secs[4];
	assert_int_equal(status_newly_ready(NULL, st, secs, 4), 1);
	assert_int_equal(secs[0], 100);
	assert_int_equal(status_newly_ready(st, st, secs, 4), 0);

	/* Next: b Ready; a NotReady (flapping), then Ready again later: its time stays. */
	cJSON *old = st;
	si.old_status = old;
	joining.ready = true;
	joining.ready_since = NOW - 400;
	ready.ready = false;
	st = status_build(&si);
	assert_entry(st, 0, "10.0.0.1", 0, 100);
	assert_entry(st, 1, "node-b", 1, 200);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "readyNodes")->valueint, 1);
	assert_int_equal(status_newly_ready(old, st, secs, 4), 1);
	assert_int_equal(secs[0], 200);
	ready.ready = true;
	ready.ready_since = NOW;
	cJSON_Delete(old);
	si.old_status = old = st;
	st = status_build(&si);
	assert_entry(st, 0, "10.0.0.1", 1, 100);
	assert_int_equal(status_newly_ready(old, st, secs, 4), 0);

	/* Nodes not known (the cache not listed yet): what the old status said stands. */
	si.nodes = NULL;
	cJSON_Delete(old);
	si.old_status = old = st;
	st = status_build(&si);
	assert_entry(st, 0, "10.0.0.1", 1, 100);
	assert_entry(st, 1, "node-b", 1, 200);
	assert_entry(st, 2, NULL, 0, -1);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(st, "readyNodes")->valueint, 2);
	cJSON_Delete(old);
	cJSON_Delete(st);

	/* Node features off from the start: no Node keys at all. */
	si.old_status = NULL;
	st = status_build(&si);
	assert_entry(st, 0, NULL, -1, -1);
	assert_false(cJSON_HasObjectItem(st, "readyNodes"));
	cJSON_Delete(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_reclaim_at),
		cmocka_unit_test(test_size_counts_live_instances_lists_all_given),
		cmocka_unit_test(test_empty_pool_has_size_zero_and_empty_list),
		cmocka_unit_test(test_account_fingerprint),
		cmocka_unit_test(test_no_plan_below_minimum_uses_last_known_size),
		cmocka_unit_test(test_no_plan_at_minimum_is_blocked),
		cmocka_unit_test(test_no_plan_not_degraded_is_not_ready),
		cmocka_unit_test(test_ready_only_when_settled),
		cmocka_unit_test(test_progressing_reasons),
		cmocka_unit_test(test_degraded_carries_reason_and_message),
		cmocka_unit_test(test_insecure_credentials_only_when_asked),
		cmocka_unit_test(test_transition_time_moves_only_on_flip),
		cmocka_unit_test(test_transition_time_set_when_missing),
		cmocka_unit_test(test_messages_are_redacted),
		cmocka_unit_test(test_long_message_never_leaks_head_of_secret),
		cmocka_unit_test(test_ledger_null_when_none),
		cmocka_unit_test(test_ledger_round_trip),
		cmocka_unit_test(test_ledger_empty_ids_are_known),
		cmocka_unit_test(test_ledger_ids_of_wrong_type),
		cmocka_unit_test(test_ledger_rejects_insane_values),
		cmocka_unit_test(test_ledger_offering),
		cmocka_unit_test(test_ledger_offering_rejects_insane_values),
		cmocka_unit_test(test_ledger_rejects_unparseable_start),
		cmocka_unit_test(test_recorded_ids_and_live),
		cmocka_unit_test(test_recorded_reads_what_build_wrote),
		cmocka_unit_test(test_recorded_is_bounded),
		cmocka_unit_test(test_node_deletions),
		cmocka_unit_test(test_patch_is_noop),
		cmocka_unit_test(test_plan_recorded),
		cmocka_unit_test(test_recorded_terminated_not_live_next_pass),
		cmocka_unit_test(test_condition_lookup),
		cmocka_unit_test(test_launch_seq),
		cmocka_unit_test(test_format_time),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	log_shutdown();
	return r;
}
