/* cfg: an empty environment variable is unset (the file's value stays, for every kind
 * of key), and an empty --namespace is refused instead of meaning all namespaces; bad
 * values are refused when set, file errors say what was expected, an unknown key gets
 * a suggestion, the default credentials file, and the one settings table. */
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

/* Loads text as a config file; the return of cfg_load_file, its message in err. */
static int load_text(struct cfg *c, const char *text, struct sp_error *err)
{
	char path[] = "/tmp/test_cfg_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cfg_defaults(c);
	int r = cfg_load_file(c, path, err);
	unlink(path);
	return r;
}

/* What run would refuse later is refused when set, naming where the value came from:
 * a flag's bad value is then a usage error, and --check-config catches it. */
static void bad_values_are_refused_when_set(void **state)
{
	(void)state;
	static const char *const cases[][4] = {
		/* key, value, source, what the message holds */
		{"clusterName", "bad name!", "--cluster-name", "--cluster-name: clusterName: must be 1 to 63"},
		{"listenAddress", "nonsense", "--listen", "--listen: listenAddress: metrics listen address \"nonsense\""},
		{"listenAddress", "127.0.0.1:70000", "--listen", "--listen: listenAddress"},
		{"cvmEndpoint", "cvm.example.com", "--endpoint", "must be an http:// or https:// URL"},
		{"namespaces", "team-a,Team_B", "SPOTPOOL_NAMESPACES", "SPOTPOOL_NAMESPACES: namespaces: \"Team_B\" is not"},
		{"namespaces", "-a", "--namespace", "\"-a\" is not a namespace name"},
		{"leaderElection.leaseNamespace", "kube.system", "--lease-namespace", "--lease-namespace:"},
		{"workers", "5x", "--workers", "got \"5x\""},
		{"workers", "99999999999999999999", "--workers", "got \"99999999999999999999\""},
		{"resyncSeconds", "30 ", "--resync", "got \"30 \""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfg c;
		cfg_defaults(&c);
		struct sp_error err = {0};
		assert_int_equal(cfg_set(&c, cases[i][0], cases[i][1], cases[i][2], &err), SP_EINVAL);
		assert_contains(err.msg, cases[i][3]);
		assert_string_equal(cfg_source(&c, cases[i][0]), "default");  /* untouched */
		cfg_free(&c);
	}
	static const char *const good[][2] = {
		{"clusterName", "prod-1.eu_west"}, {"listenAddress", ""}, {"listenAddress", "[::1]:0"},
		{"cvmEndpoint", "http://127.0.0.1:1"}, {"namespaces", "a,b-2"}, {"leaderElection.leaseNamespace", ""},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct cfg c;
		cfg_defaults(&c);
		struct sp_error err = {0};
		if (cfg_set(&c, good[i][0], good[i][1], "--x", &err) < 0)
			fail_msg("%s=%s: %s", good[i][0], good[i][1], err.msg);
		cfg_free(&c);
	}
}

/* Regression (review of ac9b495): a file's whole numbers written as YAML also writes
 * them (2.0, 1e1) were refused once the text was kept for messages, so a working
 * configuration stopped starting. A fraction still is refused, echoed as written. */
static void whole_numbers_in_any_yaml_form(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int workers;
	} ok[] = {{"workers: 2.0\n", 2}, {"workers: 1e1\n", 10}, {"workers: 4\n", 4}};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct cfg c;
		struct sp_error err = {0};
		if (load_text(&c, ok[i].text, &err) < 0)
			fail_msg("%s: %s", ok[i].text, err.msg);
		assert_int_equal(c.workers, ok[i].workers);
		cfg_free(&c);
	}
	static const char *const bad[] = {"workers: 2.5\n", "workers: 1e9\n", "workers: 65.0\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfg c;
		struct sp_error err = {0};
		assert_int_equal(load_text(&c, bad[i], &err), SP_EINVAL);
		assert_contains(err.msg, "workers: must be an integer from 1 to 64, got \"");
		cfg_free(&c);
	}
}

/* A directory, a list, a stray key: the file named, and what was expected. */
static void file_errors_say_what_was_expected(void **state)
{
	(void)state;
	struct cfg c;
	struct sp_error err = {0};
	cfg_defaults(&c);
	assert_true(cfg_load_file(&c, "/tmp", &err) < 0);
	assert_contains(err.msg, "/tmp: is a directory, expected a YAML file");
	cfg_free(&c);
	static const char *const cases[][2] = {
		{"- workers: 2\n", "expected a mapping of configuration keys (workers: 2, ...; see spotpool.yaml(5)), got a list"},
		{"workers\n", "got a string"},
		{"worker: 3\n", ":1: unknown key \"worker\" (did you mean \"workers\"?)"},
		{"leaderElection:\n  enabeld: true\n", ":2: unknown key \"leaderElection.enabeld\" (did you mean \"leaderElection.enabled\"?)"},
		{"leaderElektion: {}\n", "(did you mean \"leaderElection\"?)"},
		{"zzz: 1\n", "unknown key \"zzz\" (the keys are listed in spotpool.yaml(5))"},
		{"workers: 100000000000000000000000\n", "must be an integer from 1 to 64, got \"100000000000000000000000\""},
		{"workers: 1e3\n", "got \"1e3\""},
		{"namespaces: [ok, NotOk]\n", "\"NotOk\" is not a namespace name"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err = (struct sp_error){0};
		if (load_text(&c, cases[i][0], &err) == 0)
			fail_msg("accepted \"%s\"", cases[i][0]);
		assert_contains(err.msg, "/tmp/test_cfg_");
		assert_contains(err.msg, cases[i][1]);
		cfg_free(&c);
	}
}

/* An empty file, or one of comments only, sets nothing (--config /dev/null). */
static void empty_file_sets_nothing(void **state)
{
	(void)state;
	static const char *const texts[] = {"", "# only a comment\n", "---\n"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct cfg c;
		struct sp_error err = {0};
		if (load_text(&c, texts[i], &err) < 0)
			fail_msg("\"%s\": %s", texts[i], err.msg);
		assert_string_equal(cfg_source(&c, "workers"), "default");
		cfg_free(&c);
	}
}

/* Outside systemd, the host-wide file the unit would pass in is read directly. */
static void default_credentials_path(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_cfg_dir_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *etc = xasprintf("%s/tencentcloud.yaml", dir), *cred = xasprintf("%s/tencentcloud", dir);
	struct cfg c;
	cfg_defaults(&c);
	assert_null(cfg_default_credentials_path(&c, NULL, false, etc));  /* nothing there: environment */
	FILE *f = fopen(etc, "w");
	assert_non_null(f);
	fclose(f);
	char *p = cfg_default_credentials_path(&c, NULL, false, etc);   /* sudo spotpool run ... */
	assert_string_equal(p, etc);
	free(p);
	/* Review of 9dd3407: TENCENTCLOUD_* set by the user beat the file found by default
	 * (an unreadable one made run exit 1 for a user with the variables set). */
	assert_null(cfg_default_credentials_path(&c, NULL, true, etc));
	assert_null(cfg_default_credentials_path(&c, "/nonexistent", false, etc));  /* systemd passed none */
	f = fopen(cred, "w");
	assert_non_null(f);
	fclose(f);
	p = cfg_default_credentials_path(&c, dir, true, etc);           /* systemd's copy */
	assert_string_equal(p, cred);
	free(p);
	struct sp_error err = {0};
	assert_int_equal(cfg_set(&c, "credentialsFile", "/x/creds.yaml", "--credentials-file", &err), 0);
	p = cfg_default_credentials_path(&c, dir, true, etc);           /* configured: always */
	assert_string_equal(p, "/x/creds.yaml");
	free(p);
	cfg_free(&c);
	unlink(etc);
	unlink(cred);
	rmdir(dir);
	free(etc);
	free(cred);
}

/* The one table: every setting has help, flags and variables are unique, and the man
 * format names every key, flag and variable. */
static void settings_table(void **state)
{
	(void)state;
	size_t n = 0;
	for (const struct cfg_setting *s; (s = cfg_setting(n)); n++) {
		assert_true(s->help && *s->help);
		assert_true(!s->arg || s->flag);
		for (size_t j = 0; j < n; j++) {
			const struct cfg_setting *o = cfg_setting(j);
			assert_string_not_equal(o->key, s->key);
			assert_false(s->flag && o->flag && !strcmp(s->flag, o->flag));
			assert_false(s->env && o->env && !strcmp(s->env, o->env));
		}
		if (s->flag)
			assert_ptr_equal(cfg_setting_by_flag(s->flag), s);
	}
	assert_true(n > 20);
	assert_non_null(cfg_setting_by_flag("sold-out-seconds"));
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct sp_error err = {0};
	assert_int_equal(cfg_print_settings(f, "man", &err), 0);
	fclose(f);
	assert_contains(text, ".B soldOutSeconds\nFlag: \\fB\\-\\-sold\\-out\\-seconds\\fR \\fISECONDS\\fR.\n"
			      "Environment: \\fBSPOTPOOL_SOLD_OUT_SECONDS\\fR.\nDefault: 180; 1..86400.\n");
	assert_contains(text, ".B leaderElection.retryPeriodSeconds\nFile only.\n");
	free(text);
	assert_int_equal(cfg_print_settings(stdout, "html", &err), SP_EINVAL);
}

/* The namespace whose SpotNotices count for every pool: noticesNamespace, else in a
 * cluster the service account's; from a kubeconfig none, whatever its context's
 * namespace (or "default" when it names none) is. */
static void notices_namespace_is_never_the_contexts(void **state)
{
	(void)state;
	struct cfg c;
	cfg_defaults(&c);
	static const char *const kubeconfigs[] = {
		"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		"contexts: [{name: c, context: {cluster: k, user: u, namespace: team-x}}]\n"
		"clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {}}]\n",
		"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		"contexts: [{name: c, context: {cluster: k, user: u}}]\n"
		"clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {}}]\n",
	};
	for (size_t i = 0; i < 2; i++) {
		struct kube_config *kube = NULL;
		struct sp_error err = {0};
		assert_int_equal(kube_config_parse(kubeconfigs[i], strlen(kubeconfigs[i]), "/tmp/kc", &kube, &err), 0);
		assert_string_equal(kube->namespace, i == 0 ? "team-x" : "default");
		assert_null(cfg_notices_namespace(&c, kube));
		assert_int_equal(cfg_set(&c, "noticesNamespace", "ops", "--notices-namespace", &err), 0);
		assert_string_equal(cfg_notices_namespace(&c, kube), "ops");
		assert_int_equal(cfg_set(&c, "noticesNamespace", "", "--notices-namespace", &err), 0);
		kube_config_free(kube);
	}
	struct kube_config in_cluster = {.namespace = "spotpool-system", .sa_namespace = "spotpool-system"};
	assert_string_equal(cfg_notices_namespace(&c, &in_cluster), "spotpool-system");
	struct sp_error err = {0};
	assert_int_equal(cfg_set(&c, "noticesNamespace", "Not_A_Namespace", "--notices-namespace", &err), SP_EINVAL);
	cfg_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_env_keeps_file_values),
		cmocka_unit_test(set_env_still_wins),
		cmocka_unit_test(empty_namespace_flag_is_refused),
		cmocka_unit_test(bad_values_are_refused_when_set),
		cmocka_unit_test(file_errors_say_what_was_expected),
		cmocka_unit_test(empty_file_sets_nothing),
		cmocka_unit_test(default_credentials_path),
		cmocka_unit_test(whole_numbers_in_any_yaml_form),
		cmocka_unit_test(settings_table),
		cmocka_unit_test(notices_namespace_is_never_the_contexts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
