/* ctl: the controller's decisions, through its ports (a fake clock, a fake inventory, a
 * scripted pass) with no thread started: how long an unread inventory poller lives,
 * when it starts acting (the inventory noted stale, every pool queued) and when not, the
 * spread of a resync, and the retry with backoff after a failed pass. */
#include "testutil.h"
#include "ctl.h"
#include "notices.h"
#include "informer.h"
#include "nodes.h"
#include "reconcile.h"
#include "wq.h"

/* Regression (review of 05bae91): pollers unread for 4 resync periods (2 min by
 * default) retired while every pool of the account backed off for up to 5 min; each
 * pass then met a new poller whose first listing of a large account outlasted the
 * 15 s read, failed, backed off again, and the poller went again: the pools never
 * recovered. The retire time now outlasts the longest backoff and a read on each side. */
static void test_pollers_outlive_the_longest_backoff(void **state)
{
	(void)state;
	const int64_t floor_ms = WQ_BACKOFF_MAX_MS + 2 * RECONCILE_READ_TIMEOUT_MS;
	static const int resyncs[] = {0, 1, 2, 30, 60, 82};
	for (size_t i = 0; i < sizeof(resyncs) / sizeof(resyncs[0]); i++)
		assert_int_equal(ctl_poller_retire_ms(resyncs[i]), floor_ms);
	assert_int_equal(ctl_poller_retire_ms(600), 4 * 600 * 1000LL);      /* four periods */
	assert_int_equal(ctl_poller_retire_ms(86400), 4 * 86400 * 1000LL);
}

/* The inventory port: what the controller told it. */
struct fake_inv {
	int noted;            /* note_all_mutated calls */
	char forgotten[256];  /* owners, space-separated */
};

static void fake_note_all_mutated(void *ctx)
{
	((struct fake_inv *)ctx)->noted++;
}

static void fake_forget(void *ctx, const char *owner)
{
	struct fake_inv *f = ctx;
	size_t n = strlen(f->forgotten);
	snprintf(f->forgotten + n, sizeof(f->forgotten) - n, "%s%s", n ? " " : "", owner);
}

/* The pass port: each pass returns the next scripted outcome (its reconciler is the
 * first member, so the pass finds the script from it). */
struct script {
	struct reconciler rc;
	struct reconcile_result outcome;
	int passes;
};

static void (*during_pass)(void);  /* what happens while a pass runs, if anything */

static void scripted_pass(struct reconciler *rc, cJSON *obj, struct reconcile_result *ret)
{
	struct script *s = (struct script *)rc;
	s->passes++;
	*ret = s->outcome;
	cJSON_Delete(obj);
	if (during_pass)
		during_pass();
}

struct rig {
	struct test_clock clock;
	struct sp_clock clock_port;
	struct fake_inv inv;
	struct inv_api inv_port;
	struct script script;
	struct ctl *ctl;
};

static void rig_end(struct rig *g)
{
	ctl_free(g->ctl);
}

/* A watch event about pool ns/<name> (version rv, spec generation gen). */
static void event(struct rig *g, const char *type, const char *name, int rv, int gen)
{
	char *json = xasprintf("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"%s\",\"uid\":\"u-%s\","
			       "\"resourceVersion\":\"%d\",\"generation\":%d}}", name, name, rv, gen);
	cJSON *obj = cJSON_Parse(json);
	informer_apply_event(ctl_informer(g->ctl), type, obj);
	cJSON_Delete(obj);
	free(json);
}

/* Runs passes until no key is ready now; returns how many. */
static int drain(struct rig *g)
{
	struct wq *q = ctl_queue(g->ctl);
	int n = 0;
	static const char *names[] = {"ns/a", "ns/b", "ns/c"};
	for (bool ready = true; ready; n++) {
		ready = false;
		for (size_t i = 0; i < 3 && !ready; i++)
			ready = wq_when(q, names[i]) == 0;
		if (ready)
			assert_int_equal(ctl_work(g->ctl, &g->script.rc), 0);
	}
	return n - 1;
}

/* A controller on its ports, with n_pools (up to 3: ns/a, ns/b, ns/c) cached and their
 * first passes run: a new pool is looked at whatever the leadership. */
static void rig_start_nodes(struct rig *g, int n_pools, bool nodes)
{
	*g = (struct rig){.clock = {.now = 1795000000, .mono_ms = 7000000}, .script.outcome = {.live = -1}};
	g->clock_port = test_clock_port(&g->clock);
	g->inv_port = (struct inv_api){.note_all_mutated = fake_note_all_mutated, .forget = fake_forget,
				       .ctx = &g->inv};
	struct ctl_options opt = {.clock = &g->clock_port, .inv = &g->inv_port, .pass = scripted_pass, .nodes = nodes};
	g->ctl = ctl_new(&opt);
	static const char *names[] = {"a", "b", "c"};
	for (int i = 0; i < n_pools; i++)
		event(g, "ADDED", names[i], 10 + i, 1);
	assert_int_equal(drain(g), n_pools);
}

static void rig_start(struct rig *g, int n_pools)
{
	rig_start_nodes(g, n_pools, false);
}

/* Milliseconds until key is ready (the queue counts real time: within 200 ms of want). */
static void assert_ready_in(struct rig *g, const char *key, int64_t want)
{
	int64_t when = wq_when(ctl_queue(g->ctl), key);
	if (when > want || when < want - 200)
		fail_msg("%s ready in %lld ms, expected %lld", key, (long long)when, (long long)want);
}

#define STANDBY INT64_MIN  /* until_ms 0 */
#define ALWAYS INT64_MAX   /* until_ms INT64_MAX */

/* ctl_set_active_until, step by step on the fake clock, with three cached pools. */
static const struct {
	const char *name;
	int64_t advance_ms;
	int64_t until;          /* from now, or STANDBY / ALWAYS */
	int noted;              /* note_all_mutated calls so far */
	int passes;             /* passes it caused */
} activations[] = {
	{"a standby", 0, STANDBY, 0, 0},
	{"an until already passed", 1000, -1, 0, 0},
	{"starts acting", 0, 10000, 1, 3},
	{"renewed in time", 2000, 10000, 1, 0},
	{"renewed after the last until passed (a lease lost mid-pass)", 10001, 10000, 2, 3},
	{"steps down", 0, STANDBY, 2, 0},
	{"standby again", 5000, STANDBY, 2, 0},
	{"acts without leader election", 0, ALWAYS, 3, 3},
	{"always, again", 60000, ALWAYS, 3, 0},
};

static void test_acting_starts_with_every_pool(void **state)
{
	(void)state;
	struct rig g;
	rig_start(&g, 3);
	for (size_t i = 0; i < sizeof(activations) / sizeof(activations[0]); i++) {
		test_clock_advance_ms(&g.clock, activations[i].advance_ms);
		int64_t until = activations[i].until;
		ctl_set_active_until(g.ctl, until == STANDBY ? 0 : until == ALWAYS ? INT64_MAX : g.clock.mono_ms + until);
		int passes = drain(&g);
		if (g.inv.noted != activations[i].noted || passes != activations[i].passes)
			fail_msg("%s: inventory noted %d times, %d passes", activations[i].name, g.inv.noted, passes);
	}
	rig_end(&g);
}

/* A resync queues every pool at its own point of the window (wq_resync_offset_ms of its
 * round), not all at once; a window of 0 queues them now. */
static void test_resync_spreads_every_pool(void **state)
{
	(void)state;
	struct rig g;
	rig_start(&g, 3);
	ctl_resync(g.ctl, 60000);
	static const char *keys[] = {"ns/a", "ns/b", "ns/c"};
	bool spread = false;
	for (size_t i = 0; i < 3; i++) {
		int64_t at = wq_resync_offset_ms(keys[i], 0, 60000);
		assert_true(at >= 0 && at < 60000);
		assert_ready_in(&g, keys[i], at);
		spread |= at != wq_resync_offset_ms(keys[0], 0, 60000);
	}
	assert_true(spread);
	assert_int_equal(wq_len(ctl_queue(g.ctl)), 3);
	rig_end(&g);

	rig_start(&g, 1);
	ctl_resync(g.ctl, 0);
	assert_int_equal(drain(&g), 1);
	rig_end(&g);
}

/* A failed pass is retried after the queue's backoff: 1 s, doubling. Each pass here
 * follows a watch event (a spec change), which runs the pool at once even while it
 * backs off; a resync, or starting to act, does not cut a backoff short. A success
 * forgets the failures, and a pass that asks to look again is queued for then. */
static const struct {
	const char *what;
	int error;
	int64_t requeue_ms;
	int64_t ready_in;       /* -1: not queued */
} passes[] = {
	{"fails", SP_ETRANSIENT, 0, WQ_BACKOFF_BASE_MS},
	{"fails again", SP_ETRANSIENT, 0, 2 * WQ_BACKOFF_BASE_MS},
	{"fails a third time", SP_ECAPACITY, 0, 4 * WQ_BACKOFF_BASE_MS},
	{"succeeds", 0, 0, -1},
	{"succeeds and asks for a look in 5 s", 0, 5000, 5000},
	{"fails after a success", SP_ETRANSIENT, 0, WQ_BACKOFF_BASE_MS},
};

static void test_retry_with_backoff_after_a_failed_pass(void **state)
{
	(void)state;
	struct rig g;
	rig_start(&g, 0);
	for (int i = 0; i < (int)(sizeof(passes) / sizeof(passes[0])); i++) {
		g.script.outcome = (struct reconcile_result){.error = passes[i].error,
							     .requeue_ms = passes[i].requeue_ms, .live = -1};
		event(&g, i ? "MODIFIED" : "ADDED", "a", 10 + i, 1 + i);
		assert_int_equal(drain(&g), 1);
		if (passes[i].ready_in < 0) {
			assert_int_equal(wq_when(ctl_queue(g.ctl), "ns/a"), -1);
			continue;
		}
		assert_ready_in(&g, "ns/a", passes[i].ready_in);
		if (!passes[i].error)
			continue;
		ctl_resync(g.ctl, 0);
		ctl_set_active_until(g.ctl, 0);
		ctl_set_active_until(g.ctl, g.clock.mono_ms + 10000);
		assert_ready_in(&g, "ns/a", passes[i].ready_in);
	}
	assert_int_equal(g.script.passes, 6);
	rig_end(&g);
}

/* A deleted pool gives up its claim on the inventory. */
static void test_deleted_pool_forgotten_by_the_inventory(void **state)
{
	(void)state;
	struct rig g;
	rig_start(&g, 2);
	event(&g, "DELETED", "a", 12, 1);
	assert_string_equal(g.inv.forgotten, "ns/a");
	rig_end(&g);
}

/* A pass that sees its pool deleted while it runs: the DELETED event arrives (and the
 * inventory forgets the pool) before the pass, reading the cached copy, registered with
 * the inventory poller again. */
static struct rig *deleting_rig;

static void delete_a(void)
{
	event(deleting_rig, "DELETED", "a", 13, 1);
}

/* The pool is forgotten again once its pass ends, not left owning an inventory poller
 * (which lingered four resyncs: test_churn's one thread over the baseline). A pool
 * still there after its pass is not forgotten. */
static void test_pool_deleted_during_its_pass_forgotten_after_it(void **state)
{
	(void)state;
	struct rig g;
	rig_start(&g, 2);
	assert_string_equal(g.inv.forgotten, "");
	wq_add(ctl_queue(g.ctl), "ns/b", 0);
	assert_int_equal(drain(&g), 1);
	assert_string_equal(g.inv.forgotten, "");
	deleting_rig = &g;
	during_pass = delete_a;
	wq_add(ctl_queue(g.ctl), "ns/a", 0);
	assert_int_equal(drain(&g), 1);
	during_pass = NULL;
	assert_string_equal(g.inv.forgotten, "ns/a ns/a");
	rig_end(&g);
}

/* A Node of a pool's instance that appears or changes queues that pool (and no other);
 * a deleted pool's instances are no longer looked for. */
static void test_node_change_queues_its_pool(void **state)
{
	(void)state;
	struct rig g;
	rig_start_nodes(&g, 2, true);
	assert_non_null(ctl_nodes(g.ctl));
	struct node_want want = {.id = "ins-a"};
	struct node_view v;
	enum node_by by;
	/* What a pass of ns/a asks (the cache not listed yet: nothing known). */
	assert_int_equal(nodes_find(ctl_nodes(g.ctl), "ns/a", &want, 1, &v, &by, NULL), SP_ETRANSIENT);
	cJSON *node = cJSON_Parse("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"providerID\":\"qcloud:///900002/ins-a\"}}");
	nodes_apply_event(ctl_nodes(g.ctl), "ADDED", node);
	assert_int_equal(wq_when(ctl_queue(g.ctl), "ns/a"), 0);
	assert_true(wq_when(ctl_queue(g.ctl), "ns/b") < 0);
	assert_int_equal(drain(&g), 1);
	event(&g, "DELETED", "a", 12, 1);
	nodes_apply_event(ctl_nodes(g.ctl), "DELETED", node);
	assert_true(wq_when(ctl_queue(g.ctl), "ns/a") < 0);
	cJSON_Delete(node);
	rig_end(&g);
}

/* A SpotNotice of an instance a pool's status records is kept whatever made-up ones fill
 * the namespace's share (NOTICES_NAMESPACE_MAX unclaimed), already when the pool is
 * listed, before its first pass asks about its instances (a restart, a new leader): the
 * real one was ignored until a relist minutes later (review of issue 27). */
static void test_recorded_instances_claim_their_notices(void **state)
{
	(void)state;
	struct rig g;
	rig_start(&g, 0);
	cJSON *pool = cJSON_Parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"uid\":\"u-a\","
				  "\"resourceVersion\":\"10\",\"generation\":1},"
				  "\"status\":{\"instances\":[{\"instanceId\":\"ins-real\",\"state\":\"RUNNING\"}]}}");
	informer_apply_event(ctl_informer(g.ctl), "ADDED", pool);
	cJSON_Delete(pool);
	struct notices *n = ctl_notices(g.ctl);
	for (int i = 0; i <= NOTICES_NAMESPACE_MAX; i++) {
		char id[32] = "ins-real";
		if (i < NOTICES_NAMESPACE_MAX)
			snprintf(id, sizeof(id), "ins-madeup%d", i);
		char *json = xasprintf("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"n%d\"},\"spec\":{\"instanceId\":"
				       "\"%s\",\"reclaimAt\":\"2026-11-25T02:29:16Z\",\"reportedAt\":\"2026-11-25T02:27:16Z\"}}",
				       i, id);
		cJSON *obj = cJSON_Parse(json);
		notices_apply_event(n, 0, "ADDED", obj);
		cJSON_Delete(obj);
		free(json);
	}
	assert_int_equal(notices_count(n), NOTICES_NAMESPACE_MAX + 1);
	rig_end(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pollers_outlive_the_longest_backoff),
		cmocka_unit_test(test_acting_starts_with_every_pool),
		cmocka_unit_test(test_resync_spreads_every_pool),
		cmocka_unit_test(test_retry_with_backoff_after_a_failed_pass),
		cmocka_unit_test(test_deleted_pool_forgotten_by_the_inventory),
		cmocka_unit_test(test_pool_deleted_during_its_pass_forgotten_after_it),
		cmocka_unit_test(test_node_change_queues_its_pool),
		cmocka_unit_test(test_recorded_instances_claim_their_notices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
