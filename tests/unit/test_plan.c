/* plan: the pool-size semantics and invariants of design.md section 3. */
#include "testutil.h"
#include "plan.h"

#define NOW 1800000000

static struct pool_spec spec(int min, int max)
{
	return (struct pool_spec){.namespace = "ns", .name = "p", .minimum = min, .maximum = max};
}

static struct pool_instance inst(const char *id, const char *state, int64_t created)
{
	struct pool_instance in = {.created = created};
	snprintf(in.id, sizeof(in.id), "%s", id);
	snprintf(in.state, sizeof(in.state), "%s", state);
	return in;
}

static struct plan run(const struct pool_spec *s, const struct pool_instance *in, size_t n,
		       const struct plan_launch *l, size_t nl)
{
	struct plan_input input = {.spec = s, .instances = in, .n_instances = n, .launches = l,
				   .n_launches = nl, .now = NOW};
	struct plan p;
	plan_compute(&input, &p);
	return p;
}

static void test_empty_pool_launches_minimum(void **state)
{
	(void)state;
	struct pool_spec s = spec(2, 5);
	struct plan p = run(&s, NULL, 0, NULL, 0);
	assert_int_equal(p.observed, 0);
	assert_int_equal(p.target, 2);
	assert_int_equal(p.launch, 2);
	assert_int_equal(p.scale_down.n, 0);
	plan_free(&p);
}

static void test_in_range_does_nothing(void **state)
{
	(void)state;
	struct pool_spec s = spec(1, 5);
	struct pool_instance in[] = {inst("a", "RUNNING", 1), inst("b", "RUNNING", 2), inst("c", "PENDING", 3)};
	struct plan p = run(&s, in, 3, NULL, 0);
	assert_int_equal(p.observed, 3);
	assert_int_equal(p.target, 3);
	assert_int_equal(p.launch, 0);
	assert_int_equal(p.scale_down.n, 0);
	plan_free(&p);
}

static void test_above_maximum_terminates_pending_then_newest(void **state)
{
	(void)state;
	struct pool_spec s = spec(0, 2);
	struct pool_instance in[] = {
		inst("old", "RUNNING", 100), inst("newest", "RUNNING", 400), inst("pending", "PENDING", 50),
		inst("mid", "RUNNING", 300), inst("starting", "STARTING", 10),
	};
	struct plan p = run(&s, in, 5, NULL, 0);
	assert_int_equal(p.observed, 5);
	assert_int_equal(p.target, 2);
	assert_int_equal(p.launch, 0);
	assert_int_equal(p.scale_down.n, 3);
	/* not yet RUNNING first (newest of them first), then the newest RUNNING */
	assert_string_equal(p.scale_down.v[0], "pending");
	assert_string_equal(p.scale_down.v[1], "starting");
	assert_string_equal(p.scale_down.v[2], "newest");
	plan_free(&p);
}

static void test_dead_instances_are_cleaned_and_replaced(void **state)
{
	(void)state;
	struct pool_spec s = spec(3, 3);
	struct pool_instance in[] = {
		inst("ok", "RUNNING", 1), inst("failed", "LAUNCH_FAILED", 2), inst("stopped", "STOPPED", 3),
		inst("shut", "SHUTDOWN", 4), inst("going", "TERMINATING", 5),
	};
	struct plan p = run(&s, in, 5, NULL, 0);
	assert_int_equal(p.observed, 1);
	assert_int_equal(p.launch, 2);
	assert_int_equal(p.cleanup.n, 3);
	assert_true(strv_contains(&p.cleanup, "failed"));
	assert_true(strv_contains(&p.cleanup, "stopped"));
	assert_true(strv_contains(&p.cleanup, "shut"));
	assert_false(strv_contains(&p.cleanup, "going"));
	assert_int_equal(p.scale_down.n, 0);
	plan_free(&p);
}

static void test_pending_and_no_public_ip_count_as_live(void **state)
{
	(void)state;
	struct pool_spec s = spec(2, 2);
	struct pool_instance in[] = {inst("a", "PENDING", 1), inst("b", "RUNNING", 2)};
	/* no public IP on either: that is normal and must not stall the pool */
	struct plan p = run(&s, in, 2, NULL, 0);
	assert_int_equal(p.observed, 2);
	assert_int_equal(p.launch, 0);
	assert_int_equal(p.scale_down.n, 0);
	plan_free(&p);
}

static void test_replicas_scale_up_and_down(void **state)
{
	(void)state;
	struct pool_spec s = spec(1, 10);
	s.has_replicas = true;
	s.replicas = 4;
	struct pool_instance in[] = {inst("a", "RUNNING", 1), inst("b", "RUNNING", 2)};
	struct plan p = run(&s, in, 2, NULL, 0);
	assert_int_equal(p.target, 4);
	assert_int_equal(p.launch, 2);
	plan_free(&p);

	s.replicas = 1;
	p = run(&s, in, 2, NULL, 0);
	assert_int_equal(p.target, 1);
	assert_int_equal(p.launch, 0);
	assert_int_equal(p.scale_down.n, 1);
	assert_string_equal(p.scale_down.v[0], "b");
	plan_free(&p);
}

static void test_replicas_clamped_to_bounds(void **state)
{
	(void)state;
	struct pool_spec s = spec(2, 3);
	s.has_replicas = true;
	s.replicas = 9;
	struct plan p = run(&s, NULL, 0, NULL, 0);
	assert_int_equal(p.target, 3);
	assert_int_equal(p.launch, 3);
	plan_free(&p);
	s.replicas = 0;
	p = run(&s, NULL, 0, NULL, 0);
	assert_int_equal(p.target, 2);
	plan_free(&p);
}

/* Instances launched but not yet visible in DescribeInstances still count. */
static void test_invisible_launch_counts_toward_maximum(void **state)
{
	(void)state;
	struct pool_spec s = spec(3, 3);
	struct pool_instance in[] = {inst("a", "RUNNING", 1)};
	struct plan_launch l = {.count = 2, .started = NOW - 5, .ids_known = true};
	strv_push(&l.instance_ids, "a");
	strv_push(&l.instance_ids, "new1");
	strv_push(&l.instance_ids, "new2");
	struct plan p = run(&s, in, 1, &l, 1);
	assert_int_equal(p.observed, 1);
	assert_int_equal(p.inflight, 2);
	assert_int_equal(p.launch, 0);
	assert_int_equal(p.scale_down.n, 0);
	plan_free(&p);
	plan_launch_clear(&l);
}

/* A launch whose reply was lost (crash, timeout) is assumed to have happened and is
 * resumed with its ClientToken before anything new is launched. */
static void test_unresolved_launch_is_resumed_not_repeated(void **state)
{
	(void)state;
	struct pool_spec s = spec(4, 4);
	struct plan_launch l = {.client_token = "tok-1", .count = 2, .started = NOW - 1};
	struct plan p = run(&s, NULL, 0, &l, 1);
	assert_int_equal(p.inflight, 2);
	assert_int_equal(p.launch, 0);
	assert_non_null(p.resume);
	assert_string_equal(p.resume->client_token, "tok-1");
	plan_free(&p);
}

/* Review finding: raising replicas while launched instances are still invisible must
 * not launch again (the new launch would replace the ledger of the first). */
static void test_no_second_launch_while_first_is_invisible(void **state)
{
	(void)state;
	struct pool_spec s = spec(0, 4);
	s.has_replicas = true;
	s.replicas = 4;
	struct plan_launch l = {.count = 2, .started = NOW - 3, .ids_known = true};
	strv_push(&l.instance_ids, "x");
	strv_push(&l.instance_ids, "y");
	struct plan p = run(&s, NULL, 0, &l, 1);
	assert_int_equal(p.inflight, 2);
	assert_int_equal(p.launch, 0);
	plan_free(&p);
	/* once both are visible the rest is launched */
	struct pool_instance in[] = {inst("x", "PENDING", 1), inst("y", "PENDING", 2)};
	p = run(&s, in, 2, &l, 1);
	assert_int_equal(p.inflight, 0);
	assert_int_equal(p.launch, 2);
	plan_free(&p);
	plan_launch_clear(&l);
}

/* Review finding: an unresolved launch whose instances are already visible counts them
 * twice; scaling down in that pass would terminate the pool's own new instances. */
static void test_no_scale_down_while_a_launch_is_unresolved(void **state)
{
	(void)state;
	struct pool_spec s = spec(3, 3);
	struct pool_instance in[] = {inst("a", "PENDING", 1), inst("b", "PENDING", 2), inst("c", "PENDING", 3)};
	struct plan_launch l = {.client_token = "t", .count = 3, .started = NOW - 1};
	struct plan p = run(&s, in, 3, &l, 1);
	assert_non_null(p.resume);
	assert_int_equal(p.launch, 0);
	assert_int_equal(p.scale_down.n, 0);
	plan_free(&p);
}

static void test_expired_launch_is_forgotten(void **state)
{
	(void)state;
	struct pool_spec s = spec(2, 2);
	struct plan_launch l = {.count = 2, .started = NOW - PLAN_LAUNCH_GRACE_SECONDS - 1, .ids_known = true};
	strv_push(&l.instance_ids, "reclaimed-before-visible");
	struct plan p = run(&s, NULL, 0, &l, 1);
	assert_int_equal(p.expired_launches, 1);
	assert_int_equal(p.inflight, 0);
	assert_int_equal(p.launch, 2);
	plan_free(&p);
	plan_launch_clear(&l);
}

static void test_launch_capped_per_call(void **state)
{
	(void)state;
	struct pool_spec s = spec(250, 300);
	struct plan p = run(&s, NULL, 0, NULL, 0);
	assert_int_equal(p.target, 250);
	assert_int_equal(p.launch, PLAN_MAX_LAUNCH_PER_CALL);
	plan_free(&p);
}

static void test_zero_pool_terminates_all(void **state)
{
	(void)state;
	struct pool_spec s = spec(0, 0);
	struct pool_instance in[] = {inst("a", "RUNNING", 1), inst("b", "PENDING", 2)};
	struct plan p = run(&s, in, 2, NULL, 0);
	assert_int_equal(p.target, 0);
	assert_int_equal(p.scale_down.n, 2);
	plan_free(&p);
}

static void test_deleting_terminates_every_live_instance(void **state)
{
	(void)state;
	struct pool_spec s = spec(2, 5);
	struct pool_instance in[] = {inst("a", "RUNNING", 1), inst("b", "PENDING", 2), inst("c", "TERMINATING", 3),
				     inst("d", "LAUNCH_FAILED", 4)};
	struct plan_input input = {.spec = &s, .instances = in, .n_instances = 4, .now = NOW, .deleting = true};
	struct plan p;
	plan_compute(&input, &p);
	assert_int_equal(p.target, 0);
	assert_int_equal(p.launch, 0);
	assert_int_equal(p.scale_down.n, 2);
	assert_int_equal(p.cleanup.n, 1);
	plan_free(&p);
}

/* Property: for every combination of sizes, states and in-flight launches, the planned
 * live count never exceeds maximum and never launches while at or above target. */
static void test_never_plans_beyond_maximum(void **state)
{
	(void)state;
	static const char *const states[] = {"RUNNING", "PENDING", "LAUNCH_FAILED", "TERMINATING", "STOPPED", "REBOOTING"};
	struct pool_instance in[8];
	for (int min = 0; min <= 4; min++)
		for (int max = min; max <= 5; max++)
			for (int n = 0; n <= 7; n++)
				for (int inflight = 0; inflight <= 3; inflight++)
					for (int seed = 0; seed < 6; seed++) {
						for (int i = 0; i < n; i++) {
							char id[16];
							snprintf(id, sizeof(id), "i%d", i);
							in[i] = inst(id, states[(i + seed) % 6], i);
						}
						struct pool_spec s = spec(min, max);
						struct plan_launch l = {.count = inflight, .started = NOW, .ids_known = false};
						struct plan p = run(&s, in, (size_t)n, &l, inflight ? 1 : 0);
						int live_after = p.observed + p.inflight + p.launch - (int)p.scale_down.n;
						if (p.launch > 0)
							assert_true(live_after <= max);
						if (p.observed + p.inflight <= max)
							assert_true(live_after <= max);
						assert_true(p.launch == 0 || p.scale_down.n == 0);
						assert_true(live_after >= 0);
						plan_free(&p);
					}
}

static void test_state_classes(void **state)
{
	(void)state;
	assert_int_equal(plan_classify_state("PENDING"), PLAN_LIVE);
	assert_int_equal(plan_classify_state("RUNNING"), PLAN_LIVE);
	assert_int_equal(plan_classify_state("STARTING"), PLAN_LIVE);
	assert_int_equal(plan_classify_state("REBOOTING"), PLAN_LIVE);
	assert_int_equal(plan_classify_state("LAUNCH_FAILED"), PLAN_DEAD);
	assert_int_equal(plan_classify_state("SHUTDOWN"), PLAN_DEAD);
	assert_int_equal(plan_classify_state("STOPPED"), PLAN_DEAD);
	assert_int_equal(plan_classify_state("TERMINATING"), PLAN_GOING);
	assert_int_equal(plan_classify_state("SOMETHING_NEW"), PLAN_LIVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_pool_launches_minimum),
		cmocka_unit_test(test_in_range_does_nothing),
		cmocka_unit_test(test_above_maximum_terminates_pending_then_newest),
		cmocka_unit_test(test_dead_instances_are_cleaned_and_replaced),
		cmocka_unit_test(test_pending_and_no_public_ip_count_as_live),
		cmocka_unit_test(test_replicas_scale_up_and_down),
		cmocka_unit_test(test_replicas_clamped_to_bounds),
		cmocka_unit_test(test_invisible_launch_counts_toward_maximum),
		cmocka_unit_test(test_unresolved_launch_is_resumed_not_repeated),
		cmocka_unit_test(test_no_second_launch_while_first_is_invisible),
		cmocka_unit_test(test_no_scale_down_while_a_launch_is_unresolved),
		cmocka_unit_test(test_expired_launch_is_forgotten),
		cmocka_unit_test(test_launch_capped_per_call),
		cmocka_unit_test(test_zero_pool_terminates_all),
		cmocka_unit_test(test_deleting_terminates_every_live_instance),
		cmocka_unit_test(test_never_plans_beyond_maximum),
		cmocka_unit_test(test_state_classes),
	};
	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
