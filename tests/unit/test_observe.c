/* observe: the credentials' precedence, what the cloud shows kept to the pool's own, the
 * recorded instances looked up where they live, and a failed read leaving nothing known. */
#include "testutil.h"

#include "observe.h"
#include "pool.h"

/* credentials ------------------------------------------------------------------------ */

struct fake_secrets {
	int rc;       /* what the read answers */
	int calls;
	char name[64];
};

static int fake_secret_read(void *ctx, const char *ns, const char *name, struct creds *ret, struct sp_error *err)
{
	struct fake_secrets *f = ctx;
	f->calls++;
	snprintf(f->name, sizeof(f->name), "%s/%s", ns, name);
	if (f->rc < 0)
		return sp_fail(err, f->rc, "Secret %s/%s: unreadable", ns, name);
	creds_set(ret, "AKIDsecret", "secret-key", "tok", "secret");
	return 0;
}

static void test_credentials_precedence(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		bool ref, inline_, dflt, reader;
		int secret_rc;
		int want_rc;           /* 0 or the error */
		const char *want_id;   /* the secretId chosen, or the error's text */
		int want_reads;
	} cases[] = {
		{"a Secret wins over inline and default", true, true, true, true, 0, 0, "AKIDsecret", 1},
		{"a Secret that cannot be read is an error, no fallback", true, true, true, true, SP_EAUTH, SP_EAUTH,
		 "Secret ns/creds: unreadable", 1},
		{"a Secret and no way to read one", true, false, true, false, 0, SP_EAUTH,
		 "named by spec.credentialsSecretRef: no Secrets can be read", 0},
		{"inline wins over the default", false, true, true, true, 0, 0, "AKIDinline", 0},
		{"the default when the pool names none", false, false, true, true, 0, 0, "AKIDdefault", 0},
		{"none at all", false, false, false, true, 0, SP_EAUTH, "no credentials here", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct pool_spec s = {0};
		s.credentials_secret = cases[i].ref ? "creds" : NULL;
		s.secret_id = cases[i].inline_ ? "AKIDinline" : NULL;
		s.secret_key = cases[i].inline_ ? "inline-key" : NULL;
		struct creds d = {0}, got = {0};
		creds_set(&d, "AKIDdefault", "default-key", NULL, "environment");
		struct fake_secrets f = {.rc = cases[i].secret_rc};
		struct observe_creds_source src = {.dflt = cases[i].dflt ? &d : NULL, .no_credentials = "no credentials here"};
		if (cases[i].reader)
			src.secrets = (struct secret_reader){.read = fake_secret_read, .ctx = &f};
		struct sp_error err = {0};
		int r = observe_credentials(&s, "ns", "p", &src, &got, &err);
		if (r != cases[i].want_rc)
			fail_msg("%s: rc %d, want %d", cases[i].what, r, cases[i].want_rc);
		if (r == 0)
			assert_string_equal(got.secret_id, cases[i].want_id);
		else
			assert_contains(err.msg, cases[i].want_id);
		assert_int_equal(f.calls, cases[i].want_reads);
		if (f.calls)
			assert_string_equal(f.name, "ns/creds");
		creds_clear(&d);
		creds_clear(&got);
		log_forget_owner("ns", "p");
	}
}

/* the cloud --------------------------------------------------------------------------- */

struct fake_cloud {
	int list_rc;
	char listed_with[32];
	struct strv asked;   /* "region:id" per lookup by ID */
};

static struct pool_instance inst(const char *id, const char *owner, const char *cluster, const char *zone)
{
	struct pool_instance i = {0};
	snprintf(i.id, sizeof(i.id), "%s", id);
	snprintf(i.state, sizeof(i.state), "RUNNING");
	snprintf(i.zone, sizeof(i.zone), "%s", zone);
	snprintf(i.pool_tag, sizeof(i.pool_tag), "%s", owner);
	snprintf(i.cluster_tag, sizeof(i.cluster_tag), "%s", cluster);
	return i;
}

static int fake_list(void *ctx, const struct cvm_credentials *cred, const char *region, const char *owner,
		     bool unsettled, int64_t timeout_ms, struct pool_instance **ret, size_t *ret_n,
		     struct sp_error *err)
{
	(void)unsettled;
	(void)timeout_ms;
	struct fake_cloud *f = ctx;
	snprintf(f->listed_with, sizeof(f->listed_with), "%s", cred->secret_id);
	assert_string_equal(region, "ap-singapore");
	assert_string_equal(owner, "ns/p");
	if (f->list_rc < 0) {
		sp_fail(err, f->list_rc, "listing refused");
		snprintf(err->reason, sizeof(err->reason), "RequestLimitExceeded");
		return f->list_rc;
	}
	*ret = xcalloc(3, sizeof(**ret));
	(*ret)[0] = inst("ins-own", "ns/p", "c1", "ap-singapore-1");
	(*ret)[1] = inst("ins-other-cluster", "ns/p", "c2", "ap-singapore-1");
	(*ret)[2] = inst("ins-other-pool", "ns/q", "c1", "ap-singapore-1");
	*ret_n = 3;
	return 0;
}

static int fake_describe_ids(void *ctx, const struct cvm_credentials *cred, const char *region,
			     const struct strv *ids, const _Atomic int64_t *until,
			     struct pool_instance **ret, size_t *ret_n, struct sp_error *err)
{
	(void)cred;
	(void)until;
	(void)err;
	struct fake_cloud *f = ctx;
	*ret = xcalloc(ids->n + 1, sizeof(**ret));
	*ret_n = 0;
	for (size_t i = 0; i < ids->n; i++) {
		char *s = xasprintf("%s:%s", region, ids->v[i]);
		strv_push(&f->asked, s);
		free(s);
		if (strcmp(ids->v[i], "ins-moved") == 0)  /* only it is still there */
			(*ret)[(*ret_n)++] = inst("ins-moved", "ns/p", "c1", "ap-tokyo-1");
	}
	return 0;
}

/* A pool ns/p in ap-singapore recording ins-own, ins-gone (ap-singapore-1) and ins-moved
 * (ap-tokyo-1). */
static cJSON *pool_object(void)
{
	return test_json("{'apiVersion':'devops.jokerbai.com/v1','kind':'Spotpool','metadata':{'name':'p',"
			 "'namespace':'ns','generation':3},'spec':{'region':'ap-singapore','availabilityZone':"
			 "'ap-singapore-1','instanceType':'T1','imageId':'img-1','minimum':1,'maximum':3},"
			 "'status':{'instances':[{'instanceId':'ins-own','zone':'ap-singapore-1','state':'RUNNING'},"
			 "{'instanceId':'ins-gone','zone':'ap-singapore-1','state':'RUNNING'},"
			 "{'instanceId':'ins-moved','zone':'ap-tokyo-1','state':'RUNNING'}]}}");
}

static void observe_world(cJSON *obj, struct fake_cloud *f, const struct creds *given, struct observation *o,
			  struct pool_spec **spec)
{
	struct sp_error err = {0};
	assert_int_equal(pool_spec_from_object(obj, "ns", spec, &err), 0);
	*o = (struct observation){.ns = "ns", .name = "p", .spec = *spec, .now = 1000, .now_ms = 5000};
	observe_object(o, obj, NULL);
	struct observe_ports ports = {.inv = {.read = fake_list, .ctx = f},
				      .cvm = {.describe_ids = fake_describe_ids, .ctx = f},
				      .clock = sp_clock_system};
	struct observe_options opt = {.cluster_name = "c1", .creds = given,
				      .source = {.no_credentials = "no credentials here"}};
	observe_pool(o, obj, &ports, &opt);
}

static void test_cloud_kept_to_the_pool(void **state)
{
	(void)state;
	cJSON *obj = pool_object();
	struct fake_cloud f = {0};
	struct creds given = {0};
	creds_set(&given, "AKIDgiven", "given-key", NULL, "test");
	struct observation o;
	struct pool_spec *spec = NULL;
	observe_world(obj, &f, &given, &o, &spec);
	assert_int_equal(o.code, 0);
	assert_string_equal(f.listed_with, "AKIDgiven");  /* the given credentials, not resolved */
	/* Another cluster's and another pool's instances are not the pool's; the recorded
	 * ones the listing lacks are looked up in their zone's region. */
	assert_int_equal(o.n_instances, 2);
	assert_string_equal(o.instances[0].id, "ins-own");
	assert_string_equal(o.instances[1].id, "ins-moved");
	assert_int_equal(f.asked.n, 2);
	assert_true(strv_contains(&f.asked, "ap-singapore:ins-gone"));
	assert_true(strv_contains(&f.asked, "ap-tokyo:ins-moved"));
	assert_true(*o.account_key);
	/* No caches given: nothing known of Nodes or notices, every offering available. */
	assert_null(o.nodes);
	assert_null(o.notice_at);
	assert_true(o.offers.n >= 1);
	assert_int_equal(o.offer_state[0], OFFER_AVAILABLE);
	assert_int_equal(o.soldout_ttl_ms, SOLDOUT_TTL_DEFAULT_MS);
	struct pass_input in;
	observe_input(&o, obj, &in);
	assert_int_equal(in.generation, 3);
	assert_int_equal(in.plan.n_instances, 2);
	assert_int_equal(in.plan.seen->n, 3);
	assert_int_equal(in.now_ms, 5000);
	assert_true(o.unsettled);  /* not Ready */
	observation_free(&o);
	pool_spec_free(spec);
	creds_clear(&given);
	strv_clear(&f.asked);
	cJSON_Delete(obj);
}

static void test_failed_read_knows_nothing(void **state)
{
	(void)state;
	cJSON *obj = pool_object();
	struct fake_cloud f = {.list_rc = SP_ETHROTTLED};
	struct creds given = {0};
	creds_set(&given, "AKIDgiven", "given-key", NULL, "test");
	struct observation o;
	struct pool_spec *spec = NULL;
	observe_world(obj, &f, &given, &o, &spec);
	assert_int_equal(o.code, SP_ETHROTTLED);
	assert_null(o.instances);
	assert_int_equal(o.n_instances, 0);
	assert_contains(o.message, "cannot read the pool's instances from the cloud");
	assert_contains(o.message, "listing refused");
	assert_string_equal(o.error.reason, "RequestLimitExceeded");  /* as the call answered */
	assert_int_equal(f.asked.n, 0);
	assert_false(*o.account_key);
	observation_free(&o);
	pool_spec_free(spec);
	creds_clear(&given);
	cJSON_Delete(obj);

	/* No credentials: the cloud is not asked at all. */
	obj = pool_object();
	f = (struct fake_cloud){0};
	observe_world(obj, &f, NULL, &o, &spec);
	assert_int_equal(o.code, SP_EAUTH);
	assert_string_equal(o.message, "no credentials here");
	assert_string_equal(f.listed_with, "");
	observation_free(&o);
	pool_spec_free(spec);
	cJSON_Delete(obj);
}

/* What the object records: a deletion, the Degraded condition, whether it is settled. */
static void test_object(void **state)
{
	(void)state;
	static const struct {
		const char *obj;
		bool deleting, unsettled;
		const char *degraded;
	} cases[] = {
		{"{'metadata':{},'status':{'conditions':[{'type':'Ready','status':'True'}]}}", false, false, NULL},
		{"{'metadata':{},'status':{'conditions':[{'type':'Ready','status':'False'},"
		 "{'type':'Degraded','status':'True','reason':'LaunchFailed'}]}}", false, true, "LaunchFailed"},
		{"{'metadata':{},'status':{'conditions':[{'type':'Degraded','status':'True'}]}}", false, true, "Unknown"},
		{"{'metadata':{'deletionTimestamp':'2026-01-01T00:00:00Z'},'status':{'conditions':"
		 "[{'type':'Ready','status':'True'}]}}", true, true, NULL},
		{"{}", false, true, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		cJSON *obj = test_json(cases[i].obj);
		struct observation o = {.ns = "ns", .name = "p"};
		observe_object(&o, obj, NULL);
		assert_int_equal(o.deleting, cases[i].deleting);
		assert_int_equal(o.deleted_at != 0, cases[i].deleting);
		assert_int_equal(o.unsettled, cases[i].unsettled);
		if (cases[i].degraded)
			assert_string_equal(o.start_degraded_reason, cases[i].degraded);
		else
			assert_null(o.start_degraded_reason);
		assert_string_equal(o.owner, "ns/p");
		observation_free(&o);
		cJSON_Delete(obj);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credentials_precedence),
		cmocka_unit_test(test_cloud_kept_to_the_pool),
		cmocka_unit_test(test_failed_read_knows_nothing),
		cmocka_unit_test(test_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
