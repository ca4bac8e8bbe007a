/* snap: records come back exactly as added, grouped by owner; diffs wake only the
 * owners whose instances changed; a lookup by ID drops the gone and takes new states; 10,000 instances fit in about 100 bytes each. */
#include "testutil.h"
#include "snap.h"

static struct pool_instance inst(const char *owner, const char *id, const char *state)
{
	struct pool_instance in = {.created = 1795000000};
	snprintf(in.id, sizeof(in.id), "%s", id);
	snprintf(in.state, sizeof(in.state), "%s", state);
	snprintf(in.pool_tag, sizeof(in.pool_tag), "%s", owner);
	snprintf(in.zone, sizeof(in.zone), "ap-singapore-2");
	snprintf(in.instance_type, sizeof(in.instance_type), "GN7.2XLARGE32");
	snprintf(in.created_time, sizeof(in.created_time), "2026-11-19T08:26:40Z");
	return in;
}

static struct snap *snap_of(const struct pool_instance *v, size_t n)
{
	struct snap *s = snap_new();
	for (size_t i = 0; i < n; i++)
		snap_add(s, &v[i]);
	snap_seal(s);
	return s;
}

static void test_owner_gets_its_records_back_sorted_by_id(void **state)
{
	(void)state;
	struct pool_instance full = inst("ns/a", "ins-9", "RUNNING");
	snprintf(full.private_ip, sizeof(full.private_ip), "10.0.0.9");
	snprintf(full.public_ip, sizeof(full.public_ip), "43.0.0.9");
	snprintf(full.launch_tag, sizeof(full.launch_tag), "0123456789abcdef0123456789abcdef");
	snprintf(full.cluster_tag, sizeof(full.cluster_tag), "prod-1");
	struct pool_instance v[] = {inst("ns/b", "ins-2", "RUNNING"), full, inst("ns/b", "ins-1", "PENDING"),
				    inst("ns/a", "ins-3", "RUNNING"), inst("", "ins-0", "RUNNING")};
	struct snap *s = snap_of(v, 5);
	assert_int_equal(snap_count(s), 5);
	struct pool_instance *got = NULL;
	size_t n = 0;
	snap_owner(s, "ns/a", &got, &n);
	assert_int_equal(n, 2);
	assert_string_equal(got[0].id, "ins-3");
	/* every field, none dropped */
	assert_string_equal(got[1].id, full.id);
	assert_string_equal(got[1].state, full.state);
	assert_string_equal(got[1].zone, full.zone);
	assert_string_equal(got[1].instance_type, full.instance_type);
	assert_string_equal(got[1].private_ip, full.private_ip);
	assert_string_equal(got[1].public_ip, full.public_ip);
	assert_string_equal(got[1].created_time, full.created_time);
	assert_int_equal(got[1].created, full.created);
	assert_string_equal(got[1].pool_tag, full.pool_tag);
	assert_string_equal(got[1].launch_tag, full.launch_tag);
	assert_string_equal(got[1].cluster_tag, full.cluster_tag);
	free(got);
	snap_owner(s, "ns/b", &got, &n);
	assert_int_equal(n, 2);
	assert_string_equal(got[0].id, "ins-1");
	assert_string_equal(got[0].state, "PENDING");
	assert_string_equal(got[1].id, "ins-2");
	free(got);
	snap_owner(s, "ns/c", &got, &n);  /* a prefix of nobody, after everybody */
	assert_int_equal(n, 0);
	free(got);
	snap_owner(s, "ns/", &got, &n);
	assert_int_equal(n, 0);
	free(got);
	snap_free(s);
	/* an empty listing is a snapshot too */
	s = snap_of(NULL, 0);
	snap_owner(s, "ns/a", &got, &n);
	assert_int_equal(n, 0);
	free(got);
	snap_free(s);
}

struct seen {
	char owners[8][32];
	int n;
};

static void record(void *userdata, const char *owner)
{
	struct seen *s = userdata;
	assert_true(s->n < 8);
	snprintf(s->owners[s->n++], sizeof(s->owners[0]), "%s", owner);
}

static void test_diff_reports_each_changed_owner_once(void **state)
{
	(void)state;
	struct pool_instance old[] = {
		inst("ns/a", "ins-1", "RUNNING"), inst("ns/a", "ins-2", "RUNNING"), inst("ns/b", "ins-3", "RUNNING"),
		inst("ns/c", "ins-4", "PENDING"), inst("ns/e", "ins-9", "RUNNING"),
	};
	struct pool_instance cur[] = {
		inst("ns/e", "ins-9", "RUNNING"),                                   /* e: unchanged */
		inst("ns/a", "ins-1", "RUNNING"),                                   /* a: ins-2 gone */
		inst("ns/c", "ins-4", "RUNNING"),                                   /* c: state */
		inst("ns/d", "ins-5", "PENDING"), inst("ns/d", "ins-6", "PENDING"), /* d: new */
		inst("ns/b", "ins-3", "RUNNING"),                                   /* b: unchanged */
	};
	struct snap *a = snap_of(old, 5), *b = snap_of(cur, 6);
	struct seen s = {0};
	snap_diff(a, b, record, &s);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.owners[0], "ns/a");
	assert_string_equal(s.owners[1], "ns/c");
	assert_string_equal(s.owners[2], "ns/d");
	/* an IP appearing is a change too (status shows it) */
	struct pool_instance ip = cur[1];
	snprintf(ip.public_ip, sizeof(ip.public_ip), "43.0.0.1");
	struct snap *one = snap_of(&cur[1], 1), *one_ip = snap_of(&ip, 1);
	s.n = 0;
	snap_diff(one, one_ip, record, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.owners[0], "ns/a");
	/* identical snapshots wake nobody; untagged entries are never reported */
	s.n = 0;
	snap_diff(b, b, record, &s);
	struct pool_instance untagged = inst("", "ins-7", "RUNNING");
	struct snap *u = snap_of(&untagged, 1);
	snap_diff(NULL, u, record, &s);
	assert_int_equal(s.n, 0);
	/* everything in a first snapshot is new */
	snap_diff(NULL, one, record, &s);
	assert_int_equal(s.n, 1);
	snap_free(a);
	snap_free(b);
	snap_free(one);
	snap_free(one_ip);
	snap_free(u);
}

/* The records of owner in s, which must be n (the caller frees them). */
static struct pool_instance *owned(const struct snap *s, const char *owner, size_t n)
{
	struct pool_instance *list = NULL;
	size_t got = 0;
	snap_owner(s, owner, &list, &got);
	assert_int_equal(got, n);
	return list;
}

/* A lookup by ID of part of a snapshot: an instance not found is gone, one found in
 * another state changes; what was not looked up stays; the diff then wakes exactly the
 * pools a listing showing the same would wake. */
static void test_follow_drops_the_gone_and_takes_new_states(void **state)
{
	(void)state;
	struct pool_instance v[] = {
		inst("ns/a", "ins-1", "RUNNING"), inst("ns/a", "ins-2", "RUNNING"), inst("ns/b", "ins-3", "RUNNING"),
		inst("ns/c", "ins-4", "RUNNING"), inst("ns/d", "ins-5", "RUNNING"),
	};
	struct snap *s = snap_of(v, 5);
	assert_string_equal(snap_id_at(s, 0), "ins-1");
	assert_string_equal(snap_id_at(s, 4), "ins-5");
	/* [0, 4) looked up: ins-2 gone, ins-4 SHUTDOWN; ins-5 (not looked up) stays */
	const struct pool_instance_status found[] = {
		{"ins-4", "SHUTDOWN"}, {"ins-1", "RUNNING"}, {"ins-3", "RUNNING"},
	};
	struct snap *f = snap_follow(s, 0, 4, found, 3);
	assert_non_null(f);
	assert_int_equal(snap_count(f), 4);
	struct pool_instance *list = owned(f, "ns/a", 1);
	assert_string_equal(list[0].id, "ins-1");
	assert_string_equal(list[0].zone, "ap-singapore-2");  /* the rest of the record kept */
	free(list);
	list = owned(f, "ns/c", 1);
	assert_string_equal(list[0].state, "SHUTDOWN");
	free(list);
	free(owned(f, "ns/d", 1));
	struct seen seen = {0};
	snap_diff(s, f, record, &seen);
	assert_int_equal(seen.n, 2);
	assert_string_equal(seen.owners[0], "ns/a");
	assert_string_equal(seen.owners[1], "ns/c");
	/* all found as they were: nothing new */
	const struct pool_instance_status same_states[] = {{"ins-5", "RUNNING"}};
	assert_null(snap_follow(s, 4, 5, same_states, 1));
	/* a range past the end is cut at the end; nothing found there is gone */
	struct snap *g = snap_follow(s, 4, 100, NULL, 0);
	assert_non_null(g);
	assert_int_equal(snap_count(g), 4);
	snap_free(g);
	snap_free(f);
	snap_free(s);
}

/* What the inventory keeps at 1,000 pools x 10 instances: a full record is ~600 bytes;
 * shared strings are stored once, so a snapshot stays near 100 bytes an instance. */
static void test_ten_thousand_instances_fit_in_about_a_megabyte(void **state)
{
	(void)state;
	struct snap *s = snap_new();
	for (int i = 0; i < 10000; i++) {
		char owner[32], id[32];
		snprintf(owner, sizeof(owner), "default/pool-%04d", i / 10);
		snprintf(id, sizeof(id), "ins-%08x", (unsigned)i * 2654435761u);
		struct pool_instance in = inst(owner, id, "RUNNING");
		snprintf(in.private_ip, sizeof(in.private_ip), "10.0.%d.%d", i / 256, i % 256);
		snprintf(in.public_ip, sizeof(in.public_ip), "43.0.%d.%d", i / 256, i % 256);
		snprintf(in.launch_tag, sizeof(in.launch_tag), "%032x", i / 10);
		snap_add(s, &in);
	}
	snap_seal(s);
	assert_int_equal(snap_count(s), 10000);
	assert_true(snap_bytes(s) < 10000 * 120);
	struct pool_instance *got = NULL;
	size_t n = 0;
	snap_owner(s, "default/pool-0420", &got, &n);
	assert_int_equal(n, 10);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(got[i].pool_tag, "default/pool-0420");
		assert_string_equal(got[i].launch_tag, "000000000000000000000000000001a4");
		assert_string_equal(got[i].zone, "ap-singapore-2");
		assert_int_equal(got[i].created, 1795000000);
		if (i)
			assert_true(strcmp(got[i - 1].id, got[i].id) < 0);
	}
	free(got);
	snap_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_owner_gets_its_records_back_sorted_by_id),
		cmocka_unit_test(test_diff_reports_each_changed_owner_once),
		cmocka_unit_test(test_follow_drops_the_gone_and_takes_new_states),
		cmocka_unit_test(test_ten_thousand_instances_fit_in_about_a_megabyte),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
