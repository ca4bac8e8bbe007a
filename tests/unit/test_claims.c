/* claims: a pool's claim is renewed (emptied, kept once) and forgotten by name in any
 * order, and a change names exactly the pools whose claims hold the ID or IP. */
#include "testutil.h"
#include "claims.h"

static void claim(struct claims *c, const char *pool, const char *id, const char *ip)
{
	struct claim *cl = claims_renew(c, pool);
	assert_string_equal(cl->pool, pool);
	if (id)
		strv_push(&cl->ids, id);
	if (ip)
		strv_push(&cl->ips, ip);
}

/* Pools named in a shuffled order (a stride coprime with n), each claiming its own ID
 * and IP; every other one forgotten; then each asks again. */
static void test_renew_and_forget_in_any_order(void **state)
{
	(void)state;
	enum { N = 1000, STRIDE = 617 };
	struct claims c = {0};
	char pool[32], id[32], ip[32];
	for (size_t k = 0; k < N; k++) {
		size_t i = k * STRIDE % N;
		snprintf(pool, sizeof(pool), "ns/p%zu", i);
		snprintf(id, sizeof(id), "ins-%zu", i);
		snprintf(ip, sizeof(ip), "10.0.%zu.%zu", i / 256, i % 256);
		claim(&c, pool, id, ip);
	}
	assert_int_equal(c.n, N);
	/* Renewing empties the claim and adds no second one. */
	claim(&c, "ns/p5", "ins-5b", NULL);
	assert_int_equal(c.n, N);
	for (size_t i = 0; i < N; i += 2) {
		snprintf(pool, sizeof(pool), "ns/p%zu", i);
		claims_forget(&c, pool);
	}
	claims_forget(&c, "ns/never");
	assert_int_equal(c.n, N / 2);
	for (size_t i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "ins-%zu", i);
		snprintf(ip, sizeof(ip), "10.0.%zu.%zu", i / 256, i % 256);
		const char *ids[] = {id};
		struct strv by_id = {0}, by_ip = {0};
		claims_find(&c, ids, 1, NULL, &by_id);
		claims_find(&c, NULL, 0, ip, &by_ip);
		snprintf(pool, sizeof(pool), "ns/p%zu", i);
		if (i % 2 == 0) {
			assert_int_equal(by_id.n, 0);
			assert_int_equal(by_ip.n, 0);
		} else if (i == 5) {
			/* Renewed with another ID and no IP: neither first one is claimed. */
			assert_int_equal(by_id.n, 0);
			assert_int_equal(by_ip.n, 0);
		} else {
			assert_int_equal(by_id.n, 1);
			assert_string_equal(by_id.v[0], pool);
			assert_int_equal(by_ip.n, 1);
			assert_string_equal(by_ip.v[0], pool);
		}
		strv_clear(&by_id);
		strv_clear(&by_ip);
	}
	/* Forgotten pools come back as new claims, the others are renewed. */
	for (size_t i = 0; i < N; i++) {
		snprintf(pool, sizeof(pool), "ns/p%zu", i);
		claim(&c, pool, NULL, NULL);
	}
	assert_int_equal(c.n, N);
	for (size_t i = 1; i < c.n; i++)
		assert_true(strcmp(c.v[i - 1].pool, c.v[i].pool) < 0);
	claims_free(&c);
}

/* One ID claimed by two pools (a stale claim and a new one): both are told, once each. */
static void test_find_names_each_pool_once(void **state)
{
	(void)state;
	struct claims c = {0};
	claim(&c, "b/pool", "ins-1", "10.0.0.1");
	claim(&c, "a/pool", "ins-1", NULL);
	claim(&c, "c/pool", "ins-2", NULL);
	const char *ids[] = {"ins-1", "", "ins-1"};
	struct strv out = {0};
	claims_find(&c, ids, 3, "10.0.0.1", &out);
	assert_int_equal(out.n, 2);
	assert_true(strv_contains(&out, "a/pool"));
	assert_true(strv_contains(&out, "b/pool"));
	strv_clear(&out);
	claims_free(&c);
	assert_int_equal(c.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_renew_and_forget_in_any_order),
		cmocka_unit_test(test_find_names_each_pool_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
