/* cfg: an empty environment variable is unset (the file's value stays, for every kind
 * of key), and an empty --namespace is refused instead of meaning all namespaces. */
#include "testutil.h"
#include "cfg.h"

#include <unistd.h>

static const char *const file_text =
	"dryRun: true\n"
	"namespaces: [team-a]\n"
	"workers: 7\n"
	"clusterName: prod-1\n"
	"logLevel: debug\n"
	"leaderElection:\n"
	"  enabled: true\n"
	"  leaseName: pools\n";

static const char *const vars[] = {
	"SPOTPOOL_DRY_RUN", "SPOTPOOL_LEADER_ELECT", "SPOTPOOL_NAMESPACES", "SPOTPOOL_WORKERS",
	"SPOTPOOL_CLUSTER_NAME", "SPOTPOOL_LOG_LEVEL", "SPOTPOOL_LEASE_NAME",
};

static void load(struct cfg *c)
{
	char path[] = "/tmp/test_cfg_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, file_text, strlen(file_text)), (ssize_t)strlen(file_text));
	close(fd);
	struct sp_error err = {0};
	cfg_defaults(c);
	int r = cfg_load_file(c, path, &err);
	unlink(path);
	if (r < 0)
		fail_msg("%s", err.msg);
}

static void unset_all(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static void empty_env_keeps_file_values(void **state)
{
	(void)state;
	struct cfg c;
	load(&c);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		setenv(vars[i], "", 1);
	struct sp_error err = {0};
	int r = cfg_apply_env(&c, &err);
	unset_all();
	assert_int_equal(r, 0);
	assert_true(c.dry_run);                                    /* bool */
	assert_true(c.leader_elect);                               /* bool */
	assert_int_equal(c.namespaces.n, 1);                       /* list */
	assert_string_equal(c.namespaces.v[0], "team-a");
	assert_int_equal(c.workers, 7);                            /* number */
	assert_string_equal(c.cluster_name, "prod-1");             /* string */
	assert_string_equal(c.lease_name, "pools");
	assert_int_equal(c.log_level, LOG_LVL_DEBUG);              /* enumeration */
	assert_contains(cfg_source(&c, "dryRun"), "/tmp/test_cfg_");
	assert_contains(cfg_source(&c, "namespaces"), "/tmp/test_cfg_");
	cfg_free(&c);
}

static void set_env_still_wins(void **state)
{
	(void)state;
	struct cfg c;
	load(&c);
	setenv("SPOTPOOL_DRY_RUN", "false", 1);
	setenv("SPOTPOOL_NAMESPACES", "team-b,team-c", 1);
	setenv("SPOTPOOL_WORKERS", "3", 1);
	struct sp_error err = {0};
	int r = cfg_apply_env(&c, &err);
	unset_all();
	assert_int_equal(r, 0);
	assert_false(c.dry_run);
	assert_int_equal(c.namespaces.n, 2);
	assert_int_equal(c.workers, 3);
	assert_string_equal(cfg_source(&c, "dryRun"), "SPOTPOOL_DRY_RUN");
	cfg_free(&c);
}

static void empty_namespace_flag_is_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {"", ",", "team-a,", ",team-a", "team-a,,team-b"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfg c;
		load(&c);
		struct sp_error err = {0};
		assert_int_equal(cfg_set(&c, "namespaces", bad[i], "--namespace", &err), SP_EINVAL);
		assert_contains(err.msg, "--namespace");
		assert_int_equal(c.namespaces.n, 1);  /* untouched */
		cfg_free(&c);
	}
	struct cfg c;
	load(&c);
	struct sp_error err = {0};
	assert_int_equal(cfg_set(&c, "namespaces", "x,y", "--namespace", &err), 0);
	assert_int_equal(c.namespaces.n, 2);
	cfg_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_env_keeps_file_values),
		cmocka_unit_test(set_env_still_wins),
		cmocka_unit_test(empty_namespace_flag_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
