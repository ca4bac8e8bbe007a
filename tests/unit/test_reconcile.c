/* reconcile: whole passes of reconcile_pool through fake ports: an apiserver answering
 * GET/PATCH/POST from the pool object it holds (merge patches applied, resourceVersion
 * bumped), a CVM API and an inventory answering from a small table, a test clock. Every
 * call is recorded; each test asserts the calls in order. */
#include "testutil.h"
#include "log.h"
#include "pass.h"
#include "reconcile.h"


#define NOW 1800000000
#define CALLS_MAX 512

struct fake {
	cJSON *obj;                 /* the pool as the apiserver has it */
	int rv;
	char calls[CALLS_MAX][256];
	size_t n_calls;
	/* The PATCH (as the call list names it, "status ledger" say) answered 409 */
	const char *conflict_patch;
	struct pool_instance listed[8];  /* what the inventory lists for the pool */
	size_t n_listed;
	/* RunInstances: zones answering "sold out"; a transient failure; losing leadership */
	const char *sold_out_zone;
	bool sold_out_everywhere;
	int run_code;
	bool lose_leadership_on_run;
	int launched;
	struct node_view nodes[4];  /* the cluster's Nodes (node reader) */
	int delete_rc;              /* what a DELETE answers */
	size_t n_nodes;
	/* The Nodes the apiserver lists (n_live > 0; else nodes: the cache is up to date);
	 * list_rc: what the list answers. */
	struct node_view live[4];
	size_t n_live;
	int list_rc;
	struct pool_instance swept[4];  /* what a listing without a tag filter finds */
	size_t n_swept;
	/* What lookups by ID find: the instances of the account, each in its zone's region. */
	struct pool_instance cloud[4];
	size_t n_cloud;
	const char *notice_id;      /* the instance a SpotNotice dooms (notice reader), at notice_at */
	int64_t notice_at;
	_Atomic int64_t active_until;
	struct test_clock clock;
};

static void record(struct fake *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void record(struct fake *f, const char *fmt, ...)
{
	assert_true(f->n_calls < CALLS_MAX);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->calls[f->n_calls++], sizeof(f->calls[0]), fmt, ap);
	va_end(ap);
}

/* RFC 7386 merge patch of patch into target. */
static void merge(cJSON *target, const cJSON *patch)
{
	const cJSON *p;
	cJSON_ArrayForEach(p, patch) {
		cJSON *t = cJSON_GetObjectItemCaseSensitive(target, p->string);
		if (cJSON_IsNull(p)) {
			cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
		} else if (cJSON_IsObject(p) && cJSON_IsObject(t)) {
			merge(t, p);
		} else {
			cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
			cJSON_AddItemToObject(target, p->string, cJSON_Duplicate(p, true));
		}
	}
}

/* What a PATCH was, for the call list. */
static void describe_patch(const cJSON *body, char *out, size_t size)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(body, "status");
	const cJSON *launch = cJSON_GetObjectItemCaseSensitive(st, "launch");
	const cJSON *fin = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "metadata"),
							    "finalizers");
	if (fin)
		snprintf(out, size, "finalizers=%d", cJSON_GetArraySize(fin));
	else if (cJSON_IsObject(launch))
		snprintf(out, size, "status ledger");
	else if (cJSON_IsNull(launch))
		snprintf(out, size, "status clear-ledger");
	else
		snprintf(out, size, "status");
}

/* Node v as the apiserver has it (what spotpool reads of it; read back, it is v). */
static cJSON *node_json(const struct node_view *v)
{
	char t[32];
	cJSON *o = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(o, "metadata");
	cJSON *spec = cJSON_AddObjectToObject(o, "spec"), *st = cJSON_AddObjectToObject(o, "status");
	cJSON_AddStringToObject(md, "name", v->name);
	cJSON_AddStringToObject(md, "uid", v->uid);
	if (v->created) {
		sp_format_time(v->created, t);
		cJSON_AddStringToObject(md, "creationTimestamp", t);
	}
	if (*v->label_id)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), NODE_LABEL_INSTANCE_ID, v->label_id);
	cJSON *ann = cJSON_AddObjectToObject(md, "annotations");
	if (v->drain_started) {
		sp_format_time(v->drain_started, t);
		cJSON_AddStringToObject(ann, NODE_ANNOTATION_DRAIN_STARTED, t);
	}
	if (*v->provider_id) {
		char *id = xasprintf("qcloud:///900002/%s", v->provider_id);
		cJSON_AddStringToObject(spec, "providerID", id);
		free(id);
	}
	if (v->unschedulable)
		cJSON_AddTrueToObject(spec, "unschedulable");
	if (v->drain_taint)
		cJSON_AddItemToObject(spec, "taints", cJSON_Parse("[{\"key\":\"" NODE_TAINT_DRAINING "\",\"effect\":"
								 "\"NoSchedule\"}]"));
	cJSON *addresses = cJSON_AddArrayToObject(st, "addresses"), *conds = cJSON_AddArrayToObject(st, "conditions");
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "type", "InternalIP");
	cJSON_AddStringToObject(a, "address", v->internal_ip);
	cJSON_AddItemToArray(addresses, a);
	if (v->ready || v->ready_unknown) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "type", "Ready");
		cJSON_AddStringToObject(c, "status", v->ready ? "True" : "Unknown");
		sp_format_time(v->ready_since, t);
		if (v->ready_since)
			cJSON_AddStringToObject(c, "lastTransitionTime", t);
		cJSON_AddItemToArray(conds, c);
	}
	if (v->terminating_at) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "type", NODE_CONDITION_TERMINATING);
		cJSON_AddStringToObject(c, "status", "True");
		sp_format_time(v->terminating_at, t);
		char *m = xasprintf(NODE_TERMINATING_PREFIX "%s", t);
		cJSON_AddStringToObject(c, "message", m);
		free(m);
		cJSON_AddItemToArray(conds, c);
	}
	struct node_view back = {0}, want = *v;
	want.terminating_seen = 0;
	assert_true(node_view_from_json(o, &back));
	assert_memory_equal(&back, &want, sizeof(want));  /* the fields the tests set */
	return o;
}

/* GET /api/v1/nodes?limit=...: the Nodes the apiserver has, in one page. */
static int fake_list_nodes(struct fake *f, cJSON **ret, struct sp_error *err)
{
	record(f, "GET nodes");
	if (f->list_rc)
		return sp_fail(err, f->list_rc, "injected %s", sp_strerror(f->list_rc));
	const struct node_view *v = f->n_live ? f->live : f->nodes;
	size_t n = f->n_live ? f->n_live : f->n_nodes;
	*ret = cJSON_Parse("{\"metadata\":{},\"items\":[]}");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(*ret, "items"), node_json(&v[i]));
	return 0;
}

static int fake_kube_request(void *ctx, const char *method, const char *path, const char *content_type,
			const cJSON *body, cJSON **ret, struct sp_error *err)
{
	(void)content_type;
	struct fake *f = ctx;
	if (strcmp(method, "GET") == 0 && strncmp(path, "/api/v1/nodes?", 14) == 0)
		return fake_list_nodes(f, ret, err);
	if (strcmp(method, "POST") == 0 && strstr(path, "/eviction")) {
		record(f, "POST eviction");
		return 0;
	}
	if (strcmp(method, "POST") == 0) {
		record(f, "POST event %s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "reason")));
		return 0;
	}
	if (strcmp(method, "DELETE") == 0) {
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(body, "preconditions"),
								    "uid");
		record(f, "DELETE %s uid=%s", path, uid ? cJSON_GetStringValue(uid) : "none");
		return f->delete_rc ? sp_fail(err, f->delete_rc, "injected %s", sp_strerror(f->delete_rc)) : 0;
	}
	if (strcmp(method, "GET") == 0 && strncmp(path, "/api/v1/pods?", 13) == 0) {
		record(f, "GET pods");  /* a drain's: one pod on every Node */
		*ret = cJSON_Parse("{\"metadata\":{},\"items\":[{\"metadata\":{\"namespace\":\"app\",\"name\":"
				   "\"web\"},\"spec\":{},\"status\":{\"phase\":\"Running\"}}]}");
		return 0;
	}
	if (strcmp(method, "GET") == 0 && strncmp(path, "/api/v1/nodes/", 14) == 0) {
		record(f, "GET");  /* a drain's read of its Node before the patch */
		const struct node_view *v = f->n_live ? f->live : f->nodes;
		size_t n = f->n_live ? f->n_live : f->n_nodes;
		for (size_t i = 0; i < n; i++)
			if (strcmp(v[i].name, path + 14) == 0) {
				*ret = node_json(&v[i]);
				return 0;
			}
		return sp_fail(err, SP_ENOTFOUND, "nodes \"%s\" not found", path + 14);
	}
	if (strcmp(method, "GET") == 0) {
		record(f, "GET");
		*ret = cJSON_Duplicate(f->obj, true);
		return 0;
	}
	if (strncmp(path, "/api/v1/nodes/", 14) == 0) {
		record(f, "PATCH %s", path);  /* a drain's cordon, taint, annotations */
		return 0;
	}
	char what[64];
	describe_patch(body, what, sizeof(what));
	record(f, "PATCH %s", what);
	assert_non_null(strstr(path, "/namespaces/ns/spotpools/p"));
	const char *rv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(body, "metadata"), "resourceVersion"));
	char cur[16];
	snprintf(cur, sizeof(cur), "%d", f->rv);
	if (!rv || strcmp(rv, cur) != 0 || (f->conflict_patch && strcmp(what, f->conflict_patch) == 0))
		return sp_fail(err, SP_ECONFLICT, "the object has been modified");
	cJSON *p = cJSON_Duplicate(body, true);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItemCaseSensitive(p, "metadata"), "resourceVersion");
	merge(f->obj, p);
	cJSON_Delete(p);
	snprintf(cur, sizeof(cur), "%d", ++f->rv);
	cJSON *md = cJSON_GetObjectItemCaseSensitive(f->obj, "metadata");
	cJSON_DeleteItemFromObject(md, "resourceVersion");
	cJSON_AddStringToObject(md, "resourceVersion", cur);
	if (ret)
		*ret = cJSON_Duplicate(f->obj, true);
	return 0;
}

static int fake_inv_read(void *ctx, const struct cvm_credentials *cred, const char *region, const char *owner,
		    bool unsettled, int64_t timeout_ms, struct pool_instance **ret, size_t *ret_n,
		    struct sp_error *err)
{
	(void)cred, (void)region, (void)unsettled, (void)timeout_ms, (void)err;
	struct fake *f = ctx;
	record(f, "list %s", owner);
	*ret = xcalloc(f->n_listed + 1, sizeof(**ret));
	memcpy(*ret, f->listed, f->n_listed * sizeof(**ret));
	*ret_n = f->n_listed;
	return 0;
}

static void fake_inv_note(void *ctx, const char *secret_id, const char *region, const char *owner)
{
	(void)ctx, (void)secret_id, (void)region, (void)owner;
}

static int cvm_describe_ids_fake(void *ctx, const struct cvm_credentials *cred, const char *region,
				 const struct strv *ids, const _Atomic int64_t *until,
				 struct pool_instance **ret, size_t *ret_n, struct sp_error *err)
{
	(void)cred, (void)until, (void)err;
	struct fake *f = ctx;
	record(f, "DescribeInstances %s ids=%zu", region, ids->n);
	*ret = xcalloc(f->n_cloud + 1, sizeof(**ret));
	*ret_n = 0;
	for (size_t i = 0; i < f->n_cloud; i++) {
		char in[64];
		if (strv_contains(ids, f->cloud[i].id) && pool_zone_region(f->cloud[i].zone, in, sizeof(in)) &&
		    strcmp(in, region) == 0)
			(*ret)[(*ret_n)++] = f->cloud[i];
	}
	return 0;
}

static int fake_cvm_run(void *ctx, const struct cvm_credentials *cred, const struct cvm_launch *l, struct strv *ids,
		   struct sp_error *err)
{
	(void)cred;
	struct fake *f = ctx;
	record(f, "RunInstances%s count=%d %s", l->dry_run ? " DryRun" : "", l->count, l->zone);
	if (f->lose_leadership_on_run)
		atomic_store(&f->active_until, 0);
	if (f->sold_out_everywhere || (f->sold_out_zone && strcmp(l->zone, f->sold_out_zone) == 0)) {
		snprintf(err->reason, sizeof(err->reason), "ResourcesSoldOut.SpecifiedInstanceType");
		return sp_fail(err, SP_ECAPACITY, "sold out");
	}
	if (f->run_code)
		return sp_fail(err, f->run_code, "InternalError");
	for (int i = 0; i < l->count && !l->dry_run; i++) {
		char id[32];
		snprintf(id, sizeof(id), "ins-new%d", ++f->launched);
		strv_push(ids, id);
	}
	return 0;
}

static int fake_cvm_terminate(void *ctx, const struct cvm_credentials *cred, const char *region, const struct strv *ids,
			 const _Atomic int64_t *until, struct sp_error *err)
{
	(void)cred, (void)until, (void)err;
	struct fake *f = ctx;
	char joined[128] = "";
	for (size_t i = 0; i < ids->n; i++)
		snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? "," : "", ids->v[i]);
	record(f, "TerminateInstances %s %s", region, joined);
	return 0;
}

static int fake_cvm_find(void *ctx, const struct cvm_credentials *cred, const char *region, const char *zone,
		    const char *token, const _Atomic int64_t *until, struct pool_instance **ret, size_t *ret_n,
		    struct sp_error *err)
{
	(void)cred, (void)region, (void)zone, (void)until, (void)err;
	struct fake *f = ctx;
	record(f, "FindLaunched %s", token);
	*ret = f->n_swept ? xcalloc(f->n_swept, sizeof(**ret)) : NULL;
	if (f->n_swept)
		memcpy(*ret, f->swept, f->n_swept * sizeof(**ret));
	*ret_n = f->n_swept;
	return 0;
}

/* STS: a SecretId with "other" in it is account 100000000002's, with "outage" unanswered,
 * any other 100000000001's. */
static int fake_caller_identity(void *ctx, const struct cvm_credentials *cred, const char *region,
				const _Atomic int64_t *until, char ret_account[CVM_ACCOUNT_ID_MAX + 1],
				struct sp_error *err)
{
	(void)until;
	struct fake *f = ctx;
	record(f, "GetCallerIdentity %s %s", region, cred->secret_id);
	if (strstr(cred->secret_id, "outage"))
		return sp_fail(err, SP_ETRANSIENT, "GetCallerIdentity: network error");
	snprintf(ret_account, CVM_ACCOUNT_ID_MAX + 1, "%s", strstr(cred->secret_id, "other") ? "100000000002" : "100000000001");
	return 0;
}

static int fake_find_notices(void *ctx, const char *pool, const char *const *ids, size_t n, int64_t *ret_at)
{
	struct fake *f = ctx;
	assert_string_equal(pool, "ns/p");
	for (size_t i = 0; i < n; i++)
		ret_at[i] = f->notice_id && strcmp(ids[i], f->notice_id) == 0 ? f->notice_at : 0;
	return 0;
}

static int fake_find_nodes(void *ctx, const char *pool, const struct node_want *want, size_t n,
			   struct node_view *ret, enum node_by *ret_by, struct node_refusals *ret_refused)
{
	struct fake *f = ctx;
	assert_string_equal(pool, "ns/p");
	int index[16];
	assert_true(n <= 16);
	node_match(f->nodes, f->n_nodes, want, n, index, ret_by, ret_refused);
	for (size_t i = 0; i < n; i++)
		ret[i] = index[i] >= 0 ? f->nodes[index[i]] : (struct node_view){0};
	return 0;
}

static int fake_get_node(void *ctx, const char *name, struct node_view *ret)
{
	struct fake *f = ctx;
	for (size_t i = 0; i < f->n_nodes; i++)
		if (strcmp(f->nodes[i].name, name) == 0) {
			*ret = f->nodes[i];
			return 0;
		}
	return SP_ENOTFOUND;
}

struct world {
	struct fake f;
	struct creds creds;
	struct reconcile_options opt;
	struct reconciler r;
	struct reconcile_result res;
};

/* A pool ns/p of [min, max] in ap-singapore-1 (and -2 when two_zones), with our finalizer. */
static void world_init(struct world *w, int min, int max, bool two_zones)
{
	*w = (struct world){0};
	char *text = xasprintf(
		"{\"apiVersion\":\"devops.jokerbai.com/v1\",\"kind\":\"Spotpool\",\"metadata\":{\"name\":\"p\","
		"\"namespace\":\"ns\",\"uid\":\"u1\",\"generation\":1,\"resourceVersion\":\"1\",\"finalizers\":"
		"[\"" POOL_FINALIZER "\"]},\"spec\":{\"region\":\"ap-singapore\",\"availabilityZone\":\"ap-singapore-1\","
		"%s\"instanceType\":\"T1\",\"imageId\":\"img-1\",\"minimum\":%d,\"maximum\":%d}}",
		two_zones ? "\"availabilityZones\":[\"ap-singapore-2\"]," : "", min, max);
	w->f.obj = cJSON_Parse(text);
	free(text);
	assert_non_null(w->f.obj);
	w->f.rv = 1;
	w->f.clock = (struct test_clock){.now = NOW, .mono_ms = 1000000};
	atomic_store(&w->f.active_until, INT64_MAX);
	creds_set(&w->creds, "AKIDtest", "key", NULL, "test");
	w->opt = (struct reconcile_options){.default_creds = &w->creds, .identity = "test", .launch_grace_seconds = 60,
					    .cluster_name = "c1"};
	w->r = (struct reconciler){
		.opt = &w->opt,
		.kube = {.request = fake_kube_request, .ctx = &w->f},
		.cvm = {.describe_ids = cvm_describe_ids_fake, .run_instances = fake_cvm_run,
			.terminate_instances = fake_cvm_terminate, .find_launched = fake_cvm_find, .ctx = &w->f},
		.inv = {.read = fake_inv_read, .note_mutation = fake_inv_note, .ctx = &w->f},
		.clock = test_clock_port(&w->f.clock),
		.answers = answers_new(16),
		.soldout = soldout_new(0),
		.active_until_ms = &w->f.active_until,
	};
}

static void instance_init(struct pool_instance *i, const char *id, const char *state)
{
	*i = (struct pool_instance){.created = NOW - 600};
	snprintf(i->id, sizeof(i->id), "%s", id);
	snprintf(i->state, sizeof(i->state), "%s", state);
	snprintf(i->zone, sizeof(i->zone), "ap-singapore-1");
	snprintf(i->instance_type, sizeof(i->instance_type), "T1");
	snprintf(i->pool_tag, sizeof(i->pool_tag), "ns/p");
	snprintf(i->cluster_tag, sizeof(i->cluster_tag), "c1");
}

static void world_list(struct world *w, const char *id, const char *state)
{
	instance_init(&w->f.listed[w->f.n_listed++], id, state);
}

/* The pool's listed instance id, RUNNING, under a SpotNotice of deadline at. */
static void world_noticed(struct world *w, const char *id, int64_t at)
{
	world_list(w, id, "RUNNING");
	w->r.notices = (struct notice_reader){.find = fake_find_notices, .ctx = &w->f};
	w->f.notice_id = id;
	w->f.notice_at = at;
}

/* One pass over the apiserver's copy of the pool. */
static void world_pass(struct world *w)
{
	w->f.n_calls = 0;
	cJSON_Delete(w->res.obj);
	reconcile_pool(&w->r, cJSON_Duplicate(w->f.obj, true), &w->res);
}

static void world_free(struct world *w)
{
	cJSON_Delete(w->res.obj);
	cJSON_Delete(w->f.obj);
	creds_clear(&w->creds);
	answers_free(w->r.answers);
	soldout_free(w->r.soldout);
}

static void assert_calls(const struct world *w, const char *const *want, size_t n)
{
	for (size_t i = 0; i < n && i < w->f.n_calls; i++)
		assert_string_equal(w->f.calls[i], want[i]);
	if (w->f.n_calls != n) {
		for (size_t i = 0; i < w->f.n_calls; i++)
			print_message("call %zu: %s\n", i, w->f.calls[i]);
		fail_msg("%zu calls, want %zu", w->f.n_calls, n);
	}
}

#define ASSERT_CALLS(w, ...)                                                                 \
	do {                                                                                 \
		static const char *const want_[] = {__VA_ARGS__};                            \
		assert_calls((w), want_, sizeof(want_) / sizeof(want_[0]));                  \
	} while (0)

/* Whether the apiserver's copy of the pool records a launch (.status.launch). */
static bool ledger_recorded(const struct world *w)
{
	return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(w->f.obj, "status"), "launch"));
}

/* Below minimum: the ledger is written before RunInstances, the status after; the next
 * pass finds the launched instances and clears the ledger. */
static void test_launch(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 2, 3, false);
	world_pass(&w);
	/* The status the ledger write carried stands: the answered IDs stay in memory until
	 * the next pass resolves them (no second write). */
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "RunInstances count=2 ap-singapore-1", "POST event Launched");
	assert_int_equal(w.res.error, 0);
	assert_int_equal(w.res.requeue_ms, PASS_REQUEUE_PROGRESS_MS);
	assert_true(ledger_recorded(&w));
	assert_non_null(w.res.obj);
	/* Next pass: the launch is listed; the ledger is resolved. */
	world_list(&w, "ins-new1", "RUNNING");
	world_list(&w, "ins-new2", "RUNNING");
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status clear-ledger");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
							  "size")->valueint, 2);
	assert_false(ledger_recorded(&w));
	world_free(&w);
}

/* What a pass reports through reconcile_options.hooks (metrics binds them), as text. */
static char reported[512];

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	size_t n = strlen(reported);
	if (n)
		n += (size_t)snprintf(reported + n, sizeof(reported) - n, "; ");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reported + n, sizeof(reported) - n, fmt, ap);
	va_end(ap);
}

static void on_sizes(void *ud, const char *ns, const char *pool, int minimum, int maximum, int desired, int current)
{
	report("%s sizes %s/%s %d %d %d %d", (const char *)ud, ns, pool, minimum, maximum, desired, current);
}

static void on_launch(void *ud, const char *ns, const char *pool, int code, const char *reason)
{
	report("%s launch %s/%s %d %s", (const char *)ud, ns, pool, code, reason);
}

static void on_offering(void *ud, const char *zone, const char *instance_type, int code, const char *reason)
{
	report("%s offering %s %s %d %s", (const char *)ud, zone, instance_type, code, reason);
}

static void on_launched(void *ud, const char *ns, const char *pool, int n)
{
	report("%s launched %s/%s %d", (const char *)ud, ns, pool, n);
}

static void on_terminated(void *ud, const char *ns, const char *pool, enum pass_why why, int n)
{
	report("%s terminated %s/%s why=%d %d", (const char *)ud, ns, pool, (int)why, n);
}

/* A launch and a scale-down report their outcomes, sizes and counts to the hooks, with
 * the hooks' userdata. */
static void test_hooks(void **state)
{
	(void)state;
	static const struct reconcile_hooks hooks = {
		.pool_sizes = on_sizes, .launch_request = on_launch, .offering_launch = on_offering,
		.instances_launched = on_launched, .instances_terminated = on_terminated, .userdata = "m",
	};
	struct world w;
	world_init(&w, 2, 3, false);
	w.opt.hooks = &hooks;
	reported[0] = '\0';
	world_pass(&w);
	assert_string_equal(reported, "m sizes ns/p 2 3 2 0; m launch ns/p 0 ; m offering ap-singapore-1 T1 0 ; "
				      "m launched ns/p 2");
	world_free(&w);
	world_init(&w, 0, 1, false);
	w.opt.hooks = &hooks;
	world_list(&w, "ins-a", "RUNNING");
	world_list(&w, "ins-b", "RUNNING");
	reported[0] = '\0';
	world_pass(&w);
	assert_string_equal(reported, "m sizes ns/p 0 1 1 2; m terminated ns/p why=1 1");
	world_free(&w);
}

/* Above maximum: the newest is terminated, then the status written. */
static void test_scale_down(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, 1, false);
	world_list(&w, "ins-a", "RUNNING");
	world_list(&w, "ins-b", "RUNNING");
	w.f.listed[1].created = NOW - 60;
	world_pass(&w);
	/* The guarded write showing the victim TERMINATING comes first (the status after
	 * the terminate says the same: not written again). */
	ASSERT_CALLS(&w, "list ns/p", "PATCH status clear-ledger", "TerminateInstances ap-singapore ins-b",
		     "POST event Terminated");
	assert_int_equal(w.res.error, 0);
	assert_int_equal(w.res.requeue_ms, PASS_REQUEUE_PROGRESS_MS);
	world_free(&w);
}

/* Fault campaign seed 44: a pass that read an old spec (a new leader's cache, a lagging
 * watch) must not scale down on it: the guarded write before the terminate conflicts,
 * the pool is read again and nothing is terminated. */
static size_t calls_starting(const struct world *w, const char *prefix)
{
	size_t n = 0;
	for (size_t i = 0; i < w->f.n_calls; i++)
		n += strncmp(w->f.calls[i], prefix, strlen(prefix)) == 0;
	return n;
}

static const cJSON *status_entry(const struct world *w, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(w->f.obj, "status"), "instances"), i);
}

/* With the Node cache: the status shows each instance's Node and Ready (by providerID,
 * and by private IP), and readyNodes; the Node of a reclaimed instance is deleted after
 * the reclaim is noticed, a Node of an instance the pool never had is left alone. */
static void test_nodes(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 2, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .ctx = &w.f};
	world_list(&w, "ins-a", "RUNNING");
	world_list(&w, "ins-b", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	snprintf(w.f.listed[1].private_ip, sizeof(w.f.listed[1].private_ip), "10.0.0.2");
	w.f.nodes[0] = (struct node_view){.name = "n-a", .uid = "u-a", .provider_id = "ins-a", .internal_ip = "10.0.0.1",
					  .ready = true, .ready_since = NOW - 500};
	w.f.nodes[1] = (struct node_view){.name = "10.0.0.2", .uid = "u-b", .internal_ip = "10.0.0.2"};
	w.f.nodes[2] = (struct node_view){.name = "n-x", .provider_id = "ins-x", .ready = true};
	w.f.n_nodes = 3;
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(status_entry(&w, 0), "node")), "n-a");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status_entry(&w, 0), "ready")));
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(status_entry(&w, 0), "nodeReadySeconds")->valueint, 100);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(status_entry(&w, 1), "node")),
			    "10.0.0.2");
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status_entry(&w, 1), "ready")));
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
							  "readyNodes")->valueint, 1);
	/* ins-a is reclaimed: gone from the listing and from the lookup by ID. Its Node's
	 * deletion (only of that UID) answers 500: the pass fails (backoff) and the status
	 * keeps the Node to delete, though the instance left it. */
	w.f.listed[0] = w.f.listed[1];
	w.f.n_listed = 1;
	w.f.delete_rc = SP_ETRANSIENT;
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "DescribeInstances ap-singapore ids=1", "POST event InstanceReclaimed",
		     "DELETE /api/v1/nodes/n-a uid=u-a", "POST event NodeDeletionFailed", "PATCH status");
	assert_int_equal(w.res.error, SP_ETRANSIENT);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(w.f.obj, "status");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "nodeDeletions"), 0), "uid")), "u-a");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "instances")), 1);
	/* Retried, from the status alone (the Node cache no longer has it), and done. */
	w.f.delete_rc = 0;
	w.f.nodes[0] = w.f.nodes[2];
	w.f.n_nodes = 2;
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "DELETE /api/v1/nodes/n-a uid=u-a", "POST event NodeDeleted", "PATCH status");
	assert_int_equal(w.res.error, 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
						     "nodeDeletions"));
	/* Nothing more to delete: the gone instance is no longer recorded. */
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p");
	/* A Node re-registered under the name with a new UID answers 409 to the
	 * precondition: not deleted, not retried, and no conflict of the pool's. */
	w.f.delete_rc = SP_ECONFLICT;
	cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"), "nodeDeletions",
			      cJSON_Parse("[{\"name\":\"n-a\",\"uid\":\"u-old\",\"instanceId\":\"ins-a\"}]"));
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "DELETE /api/v1/nodes/n-a uid=u-old", "PATCH status");
	assert_int_equal(w.res.error, 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
						     "nodeDeletions"));
	w.f.delete_rc = 0;
	/* ins-b goes away (TERMINATING: the last pass that records it): its Node (matched by
	 * its private IP, as an observed instance's) is deleted. */
	snprintf(w.f.listed[0].state, sizeof(w.f.listed[0].state), "TERMINATING");
	world_pass(&w);
	assert_true(calls_starting(&w, "DELETE /api/v1/nodes/10.0.0.2") == 1);
	assert_true(calls_starting(&w, "DELETE /api/v1/nodes/n-x") == 0);
	world_free(&w);
}

/* .status.nodeDeletions is the pool's status, which others than spotpool may write (a
 * namespace role with resources "*"): an entry carried from it is honoured only while
 * that Node (by name and UID, in the Node cache) declares the entry's instance ID and
 * that instance is not live in the pool. One naming another Node (a control-plane one,
 * which declares none; one declaring another instance; the Node of the pool's live
 * ins-a) is not deleted, said by a Warning event and dropped; one whose Node declares
 * the gone instance (the retry of a failed deletion) is deleted. */
static void test_carried_node_deletions_checked(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 2, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .get = fake_get_node, .ctx = &w.f};
	world_list(&w, "ins-a", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	w.f.nodes[0] = (struct node_view){.name = "n-a", .uid = "u-a", .label_id = "ins-a", .internal_ip = "10.0.0.1",
					  .ready = true};
	w.f.nodes[1] = (struct node_view){.name = "control-plane-1", .uid = "u-cp", .internal_ip = "10.9.0.1", .ready = true};
	w.f.nodes[2] = (struct node_view){.name = "n-o", .uid = "u-o", .provider_id = "ins-other", .internal_ip = "10.0.0.7",
					  .ready = true};
	w.f.nodes[3] = (struct node_view){.name = "n-g", .uid = "u-g", .label_id = "ins-gone", .internal_ip = "10.0.0.8"};
	w.f.n_nodes = 4;
	world_pass(&w);
	cJSON *st = cJSON_GetObjectItemCaseSensitive(w.f.obj, "status");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "nodeDeletions");
	cJSON_AddItemToObject(st, "nodeDeletions", cJSON_Parse(
		"[{\"name\":\"control-plane-1\",\"uid\":\"u-cp\",\"instanceId\":\"ins-gone\"},"
		"{\"name\":\"control-plane-1\",\"uid\":\"u-cp\"},"
		"{\"name\":\"n-o\",\"uid\":\"u-o\",\"instanceId\":\"ins-gone\"},"
		"{\"name\":\"n-a\",\"uid\":\"u-a\",\"instanceId\":\"ins-a\"},"
		"{\"name\":\"n-g\",\"uid\":\"u-g\",\"instanceId\":\"ins-gone\"}]"));
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/control-plane-1"), 0);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/n-a"), 0);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/n-o"), 0);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/n-g uid=u-g"), 1);
	assert_int_equal(calls_starting(&w, "POST event NodeDeletionRefused"), 4);
	assert_int_equal(w.res.error, 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
						     "nodeDeletions"));
	world_free(&w);
}

static void set_deleting(struct world *w, const char *policy)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(w->f.obj, "metadata");
	cJSON_AddStringToObject(md, "deletionTimestamp", "2027-01-15T08:00:00Z");
	if (policy)
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(w->f.obj, "spec"), "deletionPolicy", policy);
}

/* D3: spec.region edited (a CRD without the transition rule): the recorded instances are
 * looked up, and terminated, in their zone's region, where they live; their absence from
 * the new region's listing deletes no Node and launches nothing. */
static void test_region_edited(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 2, 2, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .ctx = &w.f};
	world_list(&w, "ins-a", "RUNNING");
	world_list(&w, "ins-b", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	snprintf(w.f.listed[1].private_ip, sizeof(w.f.listed[1].private_ip), "10.0.0.2");
	w.f.nodes[0] = (struct node_view){.name = "n-a", .provider_id = "ins-a", .internal_ip = "10.0.0.1", .ready = true};
	w.f.nodes[1] = (struct node_view){.name = "n-b", .provider_id = "ins-b", .internal_ip = "10.0.0.2", .ready = true};
	w.f.n_nodes = 2;
	memcpy(w.f.cloud, w.f.listed, 2 * sizeof(*w.f.cloud));
	w.f.n_cloud = 2;
	world_pass(&w);
	assert_int_equal(w.res.live, 2);
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(w.f.obj, "spec");
	cJSON_ReplaceItemInObject(spec, "region", cJSON_CreateString("ap-guangzhou"));
	cJSON_ReplaceItemInObject(spec, "availabilityZone", cJSON_CreateString("ap-guangzhou-1"));
	w.f.n_listed = 0;  /* the new region's listing has none of them */
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DescribeInstances ap-singapore ids=2"), 1);
	assert_int_equal(calls_starting(&w, "DELETE"), 0);
	assert_int_equal(calls_starting(&w, "RunInstances"), 0);
	assert_int_equal(calls_starting(&w, "POST event InstanceReclaimed"), 0);
	assert_int_equal(w.res.live, 2);
	set_deleting(&w, NULL);
	w.r.nodes.find = NULL;  /* no drain first: the termination itself is looked at */
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "TerminateInstances ap-singapore ins-a,ins-b"), 1);
	assert_int_equal(calls_starting(&w, "DELETE"), 0);
	world_free(&w);
}

static const char *status_str(const struct world *w, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w->f.obj, "status"), key));
}

/* The pass held the pool with AccountChanged: nothing launched, one event, the recorded
 * fingerprint fp kept. */
static void assert_held(struct world *w, const char *fp)
{
	assert_int_equal(calls_starting(w, "RunInstances"), 0);
	assert_int_equal(calls_starting(w, "POST event AccountChanged"), 1);
	assert_string_equal(status_condition(cJSON_GetObjectItemCaseSensitive(w->f.obj, "status"), "Degraded", "reason"),
			    "AccountChanged");
	assert_string_equal(status_str(w, "accountFingerprint"), fp);
}

/* D3, account: the status records the fingerprint of the account its instances are in;
 * credentials that see none of them change nothing (AccountChanged), a rotated key that
 * sees them is adopted. */
static void test_account_followed(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .ctx = &w.f};
	world_list(&w, "ins-a", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	w.f.nodes[0] = (struct node_view){.name = "n-a", .provider_id = "ins-a", .internal_ip = "10.0.0.1", .ready = true};
	w.f.n_nodes = 1;
	w.f.cloud[0] = w.f.listed[0];
	world_pass(&w);
	char fp[PASS_KEY_FP_LEN + 1];
	pass_key_fingerprint("AKIDtest", fp);
	assert_string_equal(status_str(&w, "accountFingerprint"), fp);
	/* Another account: its listing and lookups show none of the pool's instances. */
	creds_set(&w.creds, "AKIDother", "key2", NULL, "test");
	w.f.n_listed = 0;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DescribeInstances ap-singapore ids=1"), 1);
	assert_int_equal(calls_starting(&w, "DELETE"), 0);
	assert_held(&w, fp);
	/* A rotated key of the same account: the lookup by ID shows ins-a. */
	creds_set(&w.creds, "AKIDrotated", "key3", NULL, "test");
	w.f.n_cloud = 1;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DELETE"), 0);
	assert_int_equal(calls_starting(&w, "RunInstances"), 0);
	pass_key_fingerprint("AKIDrotated", fp);
	assert_string_equal(status_str(&w, "accountFingerprint"), fp);
	assert_string_equal(status_condition(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"), "Degraded", "status"),
			    "False");
	world_free(&w);
}

/* The account behind the credentials, from STS (issue 27 item 3's false AccountChanged):
 * an older status's key fingerprint is rewritten to the account's; a key rotated after
 * every recorded instance was reclaimed refills the pool; another account is held; STS
 * not answering falls back on the instances (held while none shows), asked again only
 * after a backoff; each SecretId asked once. */
static void test_account_learned(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	world_list(&w, "ins-a", "RUNNING");
	w.f.cloud[0] = w.f.listed[0];
	w.f.n_cloud = 1;
	world_pass(&w);  /* an older version: the key's fingerprint */
	char key_fp[PASS_KEY_FP_LEN + 1], main_fp[PASS_ACCOUNT_FP_LEN + 1];
	pass_key_fingerprint("AKIDtest", key_fp);
	pass_account_fingerprint("100000000001", main_fp);
	assert_string_equal(status_str(&w, "accountFingerprint"), key_fp);
	w.r.cvm.caller_identity = fake_caller_identity;
	w.r.accounts = acct_new(0);
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GetCallerIdentity ap-singapore AKIDtest"), 1);
	assert_string_equal(status_str(&w, "accountFingerprint"), main_fp);
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GetCallerIdentity"), 0);  /* remembered */
	/* ins-a reclaimed, and the key rotated before any pass saw it gone. */
	creds_set(&w.creds, "AKIDrotated", "key2", NULL, "test");
	w.f.n_listed = 0;
	w.f.n_cloud = 0;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GetCallerIdentity ap-singapore AKIDrotated"), 1);
	assert_int_equal(calls_starting(&w, "POST event AccountChanged"), 0);
	assert_int_equal(calls_starting(&w, "RunInstances count=1"), 1);
	assert_string_equal(status_str(&w, "accountFingerprint"), main_fp);
	char *text = cJSON_PrintUnformatted(w.f.obj);
	assert_null(strstr(text, "100000000001"));  /* never the AccountId itself */
	free(text);
	/* Another account's key: the new instance does not show to it; held. */
	w.f.n_listed = 0;
	creds_set(&w.creds, "AKIDother", "key3", NULL, "test");
	world_pass(&w);
	assert_held(&w, main_fp);
	/* STS not answering: the recorded instance shows, so the key is adopted, and the
	 * account's fingerprint stays; STS is not asked again before the backoff. */
	creds_set(&w.creds, "AKIDoutage", "key4", NULL, "test");
	world_list(&w, "ins-new1", "RUNNING");
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GetCallerIdentity ap-singapore AKIDoutage"), 1);
	assert_int_equal(calls_starting(&w, "RunInstances"), 0);
	assert_string_equal(status_condition(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"), "Degraded", "status"),
			    "False");
	assert_string_equal(status_str(&w, "accountFingerprint"), main_fp);
	w.f.clock.mono_ms += ACCT_RETRY_MIN_MS - 1;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GetCallerIdentity"), 0);
	w.f.clock.mono_ms += 1;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GetCallerIdentity ap-singapore AKIDoutage"), 1);
	acct_free(w.r.accounts);
	world_free(&w);
}

/* The pool's condition type's field, or NULL. */
static const char *pool_condition(const struct world *w, const char *type, const char *field)
{
	return status_condition(cJSON_GetObjectItemCaseSensitive(w->f.obj, "status"), type, field);
}

/* Issue 27: a Node control-plane-1 (another InternalIP) listed first with the label of
 * the pool's instance and a reclaim 30 s ahead, beside the instance's own Node (the
 * label, the instance's private IP) as examples/bootstrap/kubeadm-join.sh registers it.
 * control-plane-1 is never drained (no patch, no pod listed), the instance is neither
 * doomed nor replaced, one NodeClaimRejected event names the claim, and when the instance
 * is reclaimed its own Node is deleted, never control-plane-1. */
static void test_forged_claim(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 2, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .ctx = &w.f};
	world_list(&w, "ins-a", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	w.f.nodes[0] = (struct node_view){.name = "control-plane-1", .uid = "u-cp", .label_id = "ins-a", .internal_ip = "10.9.9.9",
					  .ready = true, .terminating_at = NOW + 30};
	w.f.nodes[1] = (struct node_view){.name = "n-a", .uid = "u-a", .label_id = "ins-a", .internal_ip = "10.0.0.1",
					  .ready = true};
	w.f.n_nodes = 2;
	for (int pass = 0; pass < 3; pass++) {
		world_pass(&w);
		assert_int_equal(calls_starting(&w, "PATCH /api/v1/nodes/control-plane-1"), 0);
		assert_int_equal(calls_starting(&w, "GET pods"), 0);
		assert_int_equal(calls_starting(&w, "RunInstances"), 0);
		assert_int_equal(calls_starting(&w, "TerminateInstances"), 0);
		/* told once: the condition holds the episode */
		assert_int_equal(calls_starting(&w, "POST event NodeClaimRejected"), pass == 0);
		w.f.clock.now += 10;
	}
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(status_entry(&w, 0), "node")), "n-a");
	assert_null(cJSON_GetObjectItemCaseSensitive(status_entry(&w, 0), "reclaimAt"));
	assert_string_equal(pool_condition(&w, "NodeClaimsRefused", "status"), "True");
	assert_string_equal(pool_condition(&w, "NodeClaimsRefused", "reason"), "NodeClaimRejected");
	assert_non_null(strstr(pool_condition(&w, "NodeClaimsRefused", "message"),
			       "Node control-plane-1 (InternalIP 10.9.9.9) claims instance ins-a by ID"));
	/* ins-a is reclaimed: its Node goes, by ID and the private IP the status recorded. */
	w.f.n_listed = 0;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/n-a"), 1);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/control-plane-1"), 0);
	/* Once ins-a is no longer recorded, control-plane-1 claims nothing of the pool's:
	 * the condition goes False. */
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DELETE"), 0);
	assert_string_equal(pool_condition(&w, "NodeClaimsRefused", "status"), "False");
	world_free(&w);
}

/* A recorded instance gone, claimed only by a Node with another InternalIP than the
 * status recorded (its own Node long gone): that Node is not the instance's, and stays. */
static void test_gone_instance_forged_node_kept(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, 2, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .ctx = &w.f};
	world_list(&w, "ins-a", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	world_pass(&w);
	w.f.nodes[0] = (struct node_view){.name = "control-plane-1", .uid = "u-cp", .provider_id = "ins-a", .internal_ip = "10.9.9.9"};
	w.f.n_nodes = 1;
	w.f.n_listed = 0;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DescribeInstances"), 1);
	assert_int_equal(calls_starting(&w, "DELETE"), 0);
	assert_int_equal(calls_starting(&w, "POST event NodeClaimRejected"), 1);
	world_free(&w);
}

static int fake_pending_nodes(void *ctx, const char *pool, const struct node_want *want, size_t n,
			      struct node_view *ret, enum node_by *ret_by, struct node_refusals *ret_refused)
{
	(void)ctx, (void)pool, (void)want, (void)n, (void)ret, (void)ret_by, (void)ret_refused;
	return SP_ETRANSIENT;  /* not listed yet */
}

/* A pool of [min, max] with the Node cache, listing ins-a RUNNING at 10.0.0.1. */
static void world_ins_a(struct world *w, int min, int max)
{
	world_init(w, min, max, false);
	w->r.nodes = (struct node_reader){.find = fake_find_nodes, .get = fake_get_node, .ctx = &w->f};
	world_list(w, "ins-a", "RUNNING");
	snprintf(w->f.listed[0].private_ip, sizeof(w->f.listed[0].private_ip), "10.0.0.1");
}

/* The Node cache lags behind the apiserver. Fault campaign seed 476: a deleted pool's
 * instance whose Node (named by its IP) the cache did not show yet was terminated, its
 * pod never evicted: now the Nodes are listed live first, and its Node is drained.
 * Seed 465: a controller just restarted found an instance gone before its Node cache
 * was listed, and forgot it: its Node was never deleted; now it is. */
static void test_node_cache_lags(void **state)
{
	(void)state;
	struct world w;
	world_ins_a(&w, 0, 1);
	w.f.live[0] = (struct node_view){.name = "10.0.0.1", .uid = "u-a", .internal_ip = "10.0.0.1", .ready = true};
	w.f.n_live = 1;
	world_pass(&w);
	set_deleting(&w, NULL);
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "GET nodes", "GET pods", "GET", "PATCH /api/v1/nodes/10.0.0.1",
		     "POST event DrainStarted", "POST eviction", "PATCH status");
	assert_int_equal(calls_starting(&w, "TerminateInstances"), 0);
	/* The same with no Node anywhere: one list, then the instance goes. */
	w.f.n_live = 0;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GET nodes"), 1);
	assert_int_equal(calls_starting(&w, "TerminateInstances ap-singapore ins-a"), 1);
	world_free(&w);

	world_ins_a(&w, 1, 1);
	world_pass(&w);
	w.f.live[0] = (struct node_view){.name = "n-a", .uid = "u-a", .provider_id = "ins-a", .internal_ip = "10.0.0.1"};
	w.f.n_live = 1;
	w.f.n_listed = 0;  /* reclaimed */
	w.r.nodes.find = fake_pending_nodes;
	/* A list that fails forgets nothing: no status written, retried with backoff. */
	w.f.list_rc = SP_ETRANSIENT;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GET nodes"), 1);
	assert_int_equal(calls_starting(&w, "PATCH"), 0);
	assert_int_equal(calls_starting(&w, "POST event InstanceReclaimed"), 0);
	assert_int_equal(w.res.error, SP_ETRANSIENT);
	w.f.list_rc = 0;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "GET nodes"), 1);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/n-a uid=u-a"), 1);
	assert_int_equal(calls_starting(&w, "POST event InstanceReclaimed"), 1);
	world_free(&w);
}

/* Fault campaign seed 476, as it happened: a deleted pool's launch of unknown outcome
 * is swept for (a listing without a tag filter), which finds its instance; the Nodes
 * were matched before, to the instances observed then, so the swept one had no Node
 * and was terminated at once, its Node's pods never evicted. Now the Nodes are listed
 * again, with it, and its Node is drained first. */
static void test_swept_instance_drained(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, 1, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .get = fake_get_node, .ctx = &w.f};
	instance_init(&w.f.swept[w.f.n_swept++], "ins-s", "RUNNING");
	snprintf(w.f.swept[0].private_ip, sizeof(w.f.swept[0].private_ip), "10.0.0.5");
	w.f.nodes[0] = (struct node_view){.name = "n-s", .uid = "u-s", .provider_id = "ins-s", .internal_ip = "10.0.0.5",
					  .ready = true};
	w.f.n_nodes = 1;
	cJSON *l = cJSON_AddObjectToObject(cJSON_AddObjectToObject(w.f.obj, "status"), "launch");
	cJSON_AddStringToObject(l, "clientToken", "tok-1");
	cJSON_AddNumberToObject(l, "count", 1);
	cJSON_AddStringToObject(l, "startedAt", "2027-01-15T07:00:00Z");
	set_deleting(&w, NULL);
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "FindLaunched tok-1"), 1);
	assert_int_equal(calls_starting(&w, "TerminateInstances"), 0);
	assert_int_equal(calls_starting(&w, "GET nodes"), 1);
	assert_int_equal(calls_starting(&w, "PATCH /api/v1/nodes/n-s"), 1);
	assert_int_equal(calls_starting(&w, "POST eviction"), 1);
	world_free(&w);
}

/* Review of issue 27: a Node declaring no instance (TKE names Nodes by private IP),
 * matched by its InternalIP, was never deleted once its instance had gone between two
 * passes (a gone instance's Node was looked for by ID only), and its address could be a
 * new instance's by then. Now the Node the status recorded for the instance, at the
 * recorded private IP, is the gone one's: kept in .status.nodeDeletions (with the IP)
 * while a kubelet still reports it, deleted with its UID once none does (Ready Unknown),
 * even with its IP a new instance's; that new instance's own Node is left. */
static void test_gone_instance_ip_node(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, 2, false);
	w.r.nodes = (struct node_reader){.find = fake_find_nodes, .get = fake_get_node, .ctx = &w.f};
	world_list(&w, "ins-a", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	w.f.nodes[0] = (struct node_view){.name = "10.0.0.1", .uid = "u-old", .internal_ip = "10.0.0.1", .ready = true,
					  .created = NOW - 500};
	w.f.n_nodes = 1;
	world_pass(&w);
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(w.f.obj, "status");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "instances"), 0), "node")), "10.0.0.1");
	/* ins-a gone; its kubelet's Node not marked yet: waits, recorded with its address */
	w.f.n_listed = 0;
	w.f.clock.now += 10;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DELETE"), 0);
	st = cJSON_GetObjectItemCaseSensitive(w.f.obj, "status");
	const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "nodeDeletions"), 0);
	assert_non_null(e);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "privateIp")), "10.0.0.1");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "instanceId")), "ins-a");
	assert_int_equal(w.res.error, 0);
	/* a new instance got the address and registered its own Node; no kubelet reports the
	 * old one now */
	w.f.clock.now += 60;
	world_list(&w, "ins-b", "RUNNING");
	snprintf(w.f.listed[0].private_ip, sizeof(w.f.listed[0].private_ip), "10.0.0.1");
	w.f.listed[0].created = NOW + 30;
	w.f.nodes[0].ready = false;
	w.f.nodes[0].ready_unknown = true;
	w.f.nodes[1] = (struct node_view){.name = "n-b", .uid = "u-b", .internal_ip = "10.0.0.1", .ready = true,
					  .created = NOW + 50};
	w.f.n_nodes = 2;
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/10.0.0.1 uid=u-old"), 1);
	assert_int_equal(calls_starting(&w, "DELETE /api/v1/nodes/n-b"), 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
						     "nodeDeletions"));
	world_free(&w);
}

static void test_scale_down_on_stale_spec(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 0, 1, false);
	world_list(&w, "ins-a", "RUNNING");
	world_list(&w, "ins-b", "RUNNING");
	w.f.conflict_patch = "status clear-ledger";
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status clear-ledger", "GET");
	assert_int_equal(w.res.requeue_ms, PASS_REQUEUE_CONFLICT_MS);
	world_free(&w);
}

/* Deletion, Delete: instances terminated first; once gone, the finalizer goes. */
static void test_deletion_delete(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	world_list(&w, "ins-a", "RUNNING");
	set_deleting(&w, NULL);
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "TerminateInstances ap-singapore ins-a", "POST event Terminated", "PATCH status");
	assert_int_equal(w.res.requeue_ms, PASS_REQUEUE_PROGRESS_MS);
	w.f.n_listed = 0;
	world_pass(&w);
	/* ins-a is recorded: looked up by ID before its absence is believed. */
	ASSERT_CALLS(&w, "list ns/p", "DescribeInstances ap-singapore ids=1", "PATCH finalizers=0");
	assert_null(w.res.obj);
	world_free(&w);
}

/* Deletion, Retain: nothing terminated, an event, the finalizer removed. */
static void test_deletion_retain(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	world_list(&w, "ins-a", "RUNNING");
	set_deleting(&w, "Retain");
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "POST event Retained", "PATCH finalizers=0");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(w.f.obj, "metadata"), "finalizers")), 0);
	assert_int_equal(w.res.error, 0);
	world_free(&w);
}

/* A deleted pool with a SpotNotice for its one listed instance and a launch of unknown
 * outcome past the grace: the sweep finds three more instances, which no notice dooms
 * (the notices were read for the instances observed before the sweep: reading theirs
 * for the swept ones read past the end, ASan's heap-buffer-overflow). All four go. */
static void test_notice_and_sweep(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	world_noticed(&w, "ins-a", NOW + 100);
	const char *swept[] = {"ins-s1", "ins-s2", "ins-s3"};
	for (size_t i = 0; i < 3; i++)
		instance_init(&w.f.swept[w.f.n_swept++], swept[i], "RUNNING");
	cJSON *st = cJSON_AddObjectToObject(w.f.obj, "status");
	cJSON *l = cJSON_AddObjectToObject(st, "launch");
	cJSON_AddStringToObject(l, "clientToken", "tok-1");
	cJSON_AddNumberToObject(l, "count", 3);
	cJSON_AddStringToObject(l, "startedAt", "2027-01-15T07:00:00Z");
	set_deleting(&w, NULL);
	world_pass(&w);
	assert_int_equal(calls_starting(&w, "FindLaunched tok-1"), 1);
	assert_int_equal(calls_starting(&w, "TerminateInstances ap-singapore ins-a,ins-s1,ins-s2,ins-s3"), 1);
	char at[32];
	sp_format_time(NOW + 100, at);
	const cJSON *inst = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
							     "instances"), *e;
	size_t doomed = 0;
	cJSON_ArrayForEach(e, inst) {
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "instanceId"));
		const char *reclaim = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "reclaimAt"));
		if (reclaim) {
			assert_string_equal(id, "ins-a");
			assert_string_equal(reclaim, at);
			doomed++;
		}
	}
	assert_int_equal(doomed, 1);
	world_free(&w);
}

/* The ledger write conflicts: no RunInstances, the pool read again, requeued at once. */
static void test_ledger_conflict(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	w.f.conflict_patch = "status ledger";
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "GET");
	assert_int_equal(w.res.requeue_ms, PASS_REQUEUE_CONFLICT_MS);
	assert_int_equal(w.res.error, 0);
	world_free(&w);
}

/* Leadership lost while RunInstances is in flight: no cloud call, event or apiserver
 * write after it; a standby has nothing to requeue. */
static void test_leadership_lost_mid_pass(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 2, 2, false);
	world_list(&w, "ins-old", "RUNNING");
	w.f.lose_leadership_on_run = true;
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "RunInstances count=1 ap-singapore-1");
	/* The ledger stays recorded: whoever leads next repeats the launch with its token. */
	assert_true(ledger_recorded(&w));
	assert_int_equal(w.res.error, 0);
	assert_int_equal(w.res.requeue_ms, 0);
	world_free(&w);
}

/* Sold out in -1: marked, the ledger cleared, -2 launched in the same pass. */
static void test_sold_out_next_offering(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, true);
	w.f.sold_out_zone = "ap-singapore-1";
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "RunInstances count=1 ap-singapore-1", "POST event CapacityUnavailable",
		     "PATCH status clear-ledger", "PATCH status ledger", "RunInstances count=1 ap-singapore-2", "POST event Launched",
		     "PATCH status");
	assert_int_equal(w.res.error, 0);
	struct soldout_key k = {.secret_id = "AKIDtest", .region = "ap-singapore", .zone = "ap-singapore-1",
				.instance_type = "T1"};
	int64_t probe_at = 0;
	assert_int_equal(soldout_peek(w.r.soldout, &k, w.f.clock.mono_ms, &probe_at), OFFER_SOLD_OUT);
	world_free(&w);
}

/* A SpotNotice dooms ins-a in -1 (a host without a Node): its replacement goes to -2,
 * which answers sold out, so the same pass launches on -1 (avoided only while another
 * offering is available); the status names only -2 sold out, and the pool is not
 * Degraded. */
static void test_replacement_falls_back_to_doomed_offering(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, true);
	world_noticed(&w, "ins-a", NOW + 100);
	w.f.sold_out_zone = "ap-singapore-2";
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "RunInstances count=1 ap-singapore-2", "POST event CapacityUnavailable",
		     "PATCH status clear-ledger", "PATCH status ledger", "RunInstances count=1 ap-singapore-1", "POST event Launched",
		     "PATCH status");
	assert_int_equal(w.res.error, 0);
	assert_int_equal(w.res.requeue_ms, PASS_REQUEUE_PROGRESS_MS);
	const cJSON *conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w.f.obj, "status"),
							      "conditions"), *c;
	int seen = 0;
	cJSON_ArrayForEach(c, conds) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
		const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "status"));
		const char *message = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "message"));
		if (strcmp(type, "Degraded") == 0 && ++seen)
			assert_string_equal(status, "False");
		if (strcmp(type, "CapacityAvailable") == 0 && ++seen)
			assert_string_equal(message, "sold out: T1 in ap-singapore-2; next probe in 180 s");
	}
	assert_int_equal(seen, 2);
	world_free(&w);
}

/* A transient failure of RunInstances: the ledger stays (the outcome is unknown), the
 * failure is Degraded with one event, the pass returns the error for a backoff. */
static void test_transient_failure(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	w.f.run_code = SP_ETRANSIENT;
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "RunInstances count=1 ap-singapore-1", "POST event CloudAPIError",
		     "PATCH status");
	assert_int_equal(w.res.error, SP_ETRANSIENT);
	assert_true(ledger_recorded(&w));
	/* The next pass repeats the recorded launch with its token. */
	w.f.run_code = 0;
	world_pass(&w);
	assert_string_equal(w.f.calls[1], "RunInstances count=1 ap-singapore-1");
	world_free(&w);
}

static const struct soldout_key t1_zone1 = {.secret_id = "AKIDtest", .region = "ap-singapore",
					  .zone = "ap-singapore-1", .instance_type = "T1"};

/* A clock over the world's test clock that at its k-th monotonic read (at) makes this
 * process the leader (a Lease renewed or acquired while a pass runs) or has another
 * pool take t1_zone1's probe; and that moves wall time jump_s ahead after its first
 * wall-time read (time passing during the pass's calls). */
struct flip_clock {
	struct test_clock *c;
	int mono_calls, at;
	_Atomic int64_t *active_until;  /* set: leading from the at-th read */
	struct soldout *soldout;        /* set: the probe taken at the at-th read */
	int now_calls;
	int64_t jump_s;
};

static int64_t flip_mono_ms(void *ctx)
{
	struct flip_clock *x = ctx;
	if (++x->mono_calls == x->at && x->active_until)
		atomic_store(x->active_until, INT64_MAX);
	if (x->mono_calls == x->at && x->soldout)
		assert_true(soldout_probe(x->soldout, &t1_zone1, x->c->mono_ms));
	return x->c->mono_ms;
}

static int64_t flip_now(void *ctx)
{
	struct flip_clock *x = ctx;
	return x->c->now + (x->now_calls++ ? x->jump_s : 0);
}

/* A pass that began as a standby never acts, whenever during it leadership comes: had
 * it planned without observing, a deleted pool would be released with its instance
 * running and a live one would report its instance reclaimed and write size 0. */
static void test_leadership_gained_mid_pass(void **state)
{
	(void)state;
	for (int deleting = 0; deleting <= 1; deleting++) {
		for (int k = 1; k <= 8; k++) {
			struct world w;
			world_init(&w, 1, 2, false);
			world_list(&w, "ins-a", "RUNNING");
			world_pass(&w);  /* records ins-a */
			if (deleting)
				set_deleting(&w, NULL);
			struct flip_clock x = {.c = &w.f.clock, .active_until = &w.f.active_until, .at = k};
			w.r.clock = (struct sp_clock){.now = flip_now, .mono_ms = flip_mono_ms, .ctx = &x};
			atomic_store(&w.f.active_until, 0);
			world_pass(&w);
			/* Leading from the pass's first read: it observes and acts. */
			if (k == 1)
				assert_true(w.f.n_calls > 0);
			if (w.f.n_calls)
				assert_string_equal(w.f.calls[0], "list ns/p");
			for (size_t i = 0; i < w.f.n_calls; i++) {
				assert_string_not_equal(w.f.calls[i], "PATCH finalizers=0");
				assert_string_not_equal(w.f.calls[i], "POST event InstanceReclaimed");
			}
			world_free(&w);
		}
	}
}

/* A launch 59 s into its 60 s grace, not listed yet: a pass whose calls take 2 s judges
 * the grace at the time it observed, so it waits (judged at the time of a later plan,
 * the launch would look lost: the ledger cleared and a second instance launched). */
static void test_grace_judged_at_observation(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	world_pass(&w);  /* launches ins-new1, remembered */
	assert_int_equal(w.f.launched, 1);
	test_clock_advance_ms(&w.f.clock, 59000);
	struct flip_clock x = {.c = &w.f.clock, .jump_s = 2};
	w.r.clock = (struct sp_clock){.now = flip_now, .mono_ms = flip_mono_ms, .ctx = &x};
	world_pass(&w);
	for (size_t i = 0; i < w.f.n_calls; i++)
		assert_null(strstr(w.f.calls[i], "RunInstances"));
	assert_int_equal(w.f.launched, 1);
	assert_true(ledger_recorded(&w));
	world_free(&w);
}

/* A conflict ends the pass at once, never with the sold-out memory wrong: a probe taken
 * whose ledger write conflicted is given back (held, it would keep the offering sold
 * out for the probe lease for every pool of the account); a sold-out answer whose
 * ledger clear conflicted is still marked. */
static void test_conflict_keeps_soldout_memory(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	soldout_mark(w.r.soldout, &t1_zone1, w.f.clock.mono_ms - SOLDOUT_TTL_DEFAULT_MS - 1000, 0);
	int64_t probe_at = 0;
	assert_int_equal(soldout_peek(w.r.soldout, &t1_zone1, w.f.clock.mono_ms, &probe_at), OFFER_PROBE_ALLOWED);
	w.f.conflict_patch = "status ledger";
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "GET");
	assert_int_equal(soldout_peek(w.r.soldout, &t1_zone1, w.f.clock.mono_ms, &probe_at), OFFER_PROBE_ALLOWED);
	world_free(&w);

	world_init(&w, 1, 1, false);
	w.f.sold_out_zone = "ap-singapore-1";
	w.f.conflict_patch = "status clear-ledger";
	world_pass(&w);
	ASSERT_CALLS(&w, "list ns/p", "PATCH status ledger", "RunInstances count=1 ap-singapore-1",
		     "POST event CapacityUnavailable", "PATCH status clear-ledger", "GET");
	assert_int_equal(soldout_peek(w.r.soldout, &t1_zone1, w.f.clock.mono_ms, &probe_at), OFFER_SOLD_OUT);
	world_free(&w);
}

static int aborting_inv_read(void *ctx, const struct cvm_credentials *cred, const char *region,
			     const char *owner, bool unsettled, int64_t timeout_ms, struct pool_instance **ret,
			     size_t *ret_n, struct sp_error *err)
{
	(void)cred, (void)region, (void)unsettled, (void)timeout_ms, (void)ret, (void)ret_n;
	record(ctx, "list %s", owner);
	http_abort_all();
	return sp_fail(err, SP_ETRANSIENT, "aborted (shutting down)");
}

static int shutdown_during_observation(void *arg)
{
	(void)arg;
	struct world w;
	world_init(&w, 1, 1, false);
	w.r.inv.read = aborting_inv_read;
	struct test_log l;
	test_log_start(&l);
	world_pass(&w);
	const char *text = test_log_end(&l);
	bool ok = w.f.n_calls == 1 && strcmp(w.f.calls[0], "list ns/p") == 0 && w.res.error == SP_ETRANSIENT &&
		  !strstr(text, " warn ") && !strstr(text, " error ");
	for (size_t i = 0; !ok && i < w.f.n_calls; i++)
		fprintf(stderr, "call %zu: %s\n", i, w.f.calls[i]);
	if (!ok)
		fprintf(stderr, "logged:\n%s", text);
	free(l.text);
	world_free(&w);
	return ok ? 0 : 1;
}

/* SIGTERM aborts the observation's read: the pass ends there, with no CloudAPIError
 * event and no Degraded status written on the way out, and no warning logged (the
 * failure is our own stop). In a child: the abort cannot be undone. */
static void test_shutdown_during_observation(void **state)
{
	(void)state;
	test_in_child(shutdown_during_observation, NULL);
}

/* 11 zones x 11 types, every one sold out: each pass tries PASS_LAUNCH_ATTEMPTS_MAX
 * offerings, leaves no ledger behind, writes its status and comes back soon for the
 * next ones (the ones tried stay marked). */
static void test_many_offerings_sold_out(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(w.f.obj, "spec");
	cJSON *zones = cJSON_AddArrayToObject(spec, "availabilityZones");
	cJSON *types = cJSON_AddArrayToObject(spec, "instanceTypes");
	for (int i = 2; i <= 11; i++) {
		char name[32];
		snprintf(name, sizeof(name), "ap-singapore-%d", i);
		cJSON_AddItemToArray(zones, cJSON_CreateString(name));
		snprintf(name, sizeof(name), "T%d", i);
		cJSON_AddItemToArray(types, cJSON_CreateString(name));
	}
	w.f.sold_out_everywhere = true;
	for (int pass = 1; pass <= 2; pass++) {
		world_pass(&w);
		assert_int_equal(calls_starting(&w, "RunInstances"), PASS_LAUNCH_ATTEMPTS_MAX);
		assert_string_equal(w.f.calls[w.f.n_calls - 1], "PATCH status");
		assert_false(ledger_recorded(&w));
		assert_int_equal(w.res.error, 0);
		assert_int_equal(w.res.requeue_ms, PASS_REQUEUE_PROGRESS_MS);
		assert_int_equal(soldout_unavailable(w.r.soldout, w.f.clock.mono_ms), pass * PASS_LAUNCH_ATTEMPTS_MAX);
	}
	world_free(&w);
}

/* A sold-out offering whose probe another pool takes between this pass's observation
 * and its own take: counted as sold out, nothing launched, and no warning (nothing
 * failed). */
static void test_probe_taken_elsewhere(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1, false);
	soldout_mark(w.r.soldout, &t1_zone1, w.f.clock.mono_ms - SOLDOUT_TTL_DEFAULT_MS - 1000, 0);
	struct flip_clock x = {.c = &w.f.clock, .at = 2, .soldout = w.r.soldout};
	w.r.clock = (struct sp_clock){.now = flip_now, .mono_ms = flip_mono_ms, .ctx = &x};
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	log_set_output(out);
	world_pass(&w);
	log_set_output(NULL);
	fclose(out);
	assert_int_equal(calls_starting(&w, "RunInstances"), 0);
	assert_int_equal(calls_starting(&w, "PATCH status ledger"), 0);
	assert_true(x.mono_calls >= 2);
	assert_null(strstr(text, "take-probe"));
	free(text);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launch),
		cmocka_unit_test(test_scale_down),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_scale_down_on_stale_spec),
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_carried_node_deletions_checked),
		cmocka_unit_test(test_region_edited),
		cmocka_unit_test(test_account_followed),
		cmocka_unit_test(test_account_learned),
		cmocka_unit_test(test_forged_claim),
		cmocka_unit_test(test_gone_instance_forged_node_kept),
		cmocka_unit_test(test_node_cache_lags),
		cmocka_unit_test(test_swept_instance_drained),
		cmocka_unit_test(test_gone_instance_ip_node),
		cmocka_unit_test(test_deletion_delete),
		cmocka_unit_test(test_deletion_retain),
		cmocka_unit_test(test_notice_and_sweep),
		cmocka_unit_test(test_ledger_conflict),
		cmocka_unit_test(test_leadership_lost_mid_pass),
		cmocka_unit_test(test_sold_out_next_offering),
		cmocka_unit_test(test_replacement_falls_back_to_doomed_offering),
		cmocka_unit_test(test_transient_failure),
		cmocka_unit_test(test_leadership_gained_mid_pass),
		cmocka_unit_test(test_grace_judged_at_observation),
		cmocka_unit_test(test_conflict_keeps_soldout_memory),
		cmocka_unit_test(test_shutdown_during_observation),
		cmocka_unit_test(test_many_offerings_sold_out),
		cmocka_unit_test(test_probe_taken_elsewhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
