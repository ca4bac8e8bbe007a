/* fit (issue 28 item 2, design D5-D6): a pod's requests as the scheduler
 * counts them, the fit of a pod onto a pool's node template (each reason), first-fit
 * decreasing bin-packing, the one pool a pod grows, and a property test of the packing. */
#include "testutil.h"
#include "testpod.h"
#include "fit.h"
#include "tmpl.h"

/* Node templates as pools' specs give them (tmpl_parse), read once for every test. a10:
 * gpu-pool=a10, gen=5, tainted nvidia.com/gpu=true:NoSchedule and a PreferNoSchedule
 * taint no pod needs to tolerate; t4: gpu-pool=t4, no taint. */
static struct tmpl_node a10_node, t4_node;

static int parse_nodes(void **state)
{
	(void)state;
	static const struct {
		const char *json;
		struct tmpl_node *node;
	} nodes[] = {
		{"{'labels':{'gpu-pool':'a10','gen':'5','zone':'ap-1'},'taints':["
		 "{'key':'nvidia.com/gpu','value':'true','effect':'NoSchedule'},"
		 "{'key':'soft','value':'x','effect':'PreferNoSchedule'}]}", &a10_node},
		{"{'labels':{'gpu-pool':'t4'}}", &t4_node},
	};
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		cJSON *nt = test_json(nodes[i].json);
		struct sp_error err = {0};
		int rc = tmpl_parse(nt, nodes[i].node, &err);
		cJSON_Delete(nt);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int clear_nodes(void **state)
{
	(void)state;
	tmpl_clear(&a10_node);
	tmpl_clear(&t4_node);
	return 0;
}

/* A node of the a10 template with gpus and cpu_milli. */
static void a10_template(struct fit_template *t, const char *name, int64_t gpus, int64_t cpu_milli)
{
	*t = (struct fit_template){.node = &a10_node};
	snprintf(t->namespace, sizeof(t->namespace), "default");
	snprintf(t->name, sizeof(t->name), "%s", name);
	qty_set(&t->allocatable, QTY_GPU, gpus);
	qty_set(&t->allocatable, QTY_CPU, cpu_milli);
	qty_set(&t->allocatable, QTY_MEMORY, 100LL << 30);
	qty_set(&t->allocatable, QTY_PODS, 110);
}

#define TOL "'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists','effect':'NoSchedule'}]"
#define REQ(terms) "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':" terms "}}}"
#define GPU(n) "'containers':[{'resources':{'requests':{'nvidia.com/gpu':'" #n "'}}}]"

static void test_check(void **state)
{
	(void)state;
	struct fit_template t;
	a10_template(&t, "a10", 4, 30000);
	static const struct {
		const char *spec;
		enum fit_reason want;
		const char *what;
	} rows[] = {
		{"{" TOL "," GPU(4) "}", FIT_OK, NULL},
		{"{" GPU(1) "}", FIT_TAINT, "nvidia.com/gpu"},
		{"{'tolerations':[{'key':'nvidia.com/gpu','value':'false','effect':'NoSchedule'}]," GPU(1) "}", FIT_TAINT,
		 "nvidia.com/gpu"},
		{"{'tolerations':[{'key':'nvidia.com/gpu','operator':'Equal','value':'true'}]," GPU(1) "}", FIT_OK, NULL},
		{"{'tolerations':[{'operator':'Exists'}]," GPU(1) "}", FIT_OK, NULL},     /* every taint */
		{"{'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists','effect':'NoExecute'}]}", FIT_TAINT,
		 "nvidia.com/gpu"},
		{"{" TOL "," GPU(5) "}", FIT_TOO_BIG, "nvidia.com/gpu"},
		{"{" TOL ",'containers':[{'resources':{'requests':{'cpu':'30001m'}}}]}", FIT_TOO_BIG, "cpu"},
		{"{" TOL ",'containers':[{'resources':{'requests':{'example.com/fpga':'1'}}}]}", FIT_TOO_BIG, "example.com/fpga"},
		{"{" TOL ",'containers':[{'resources':{'requests':{'example.com/fpga':'0'}}}]}", FIT_OK, NULL},
		{"{" TOL ",'nodeSelector':{'gpu-pool':'a10','gen':'5'}}", FIT_OK, NULL},
		{"{" TOL ",'nodeSelector':{'gpu-pool':'t4'}}", FIT_SELECTOR, "gpu-pool"},
		{"{" TOL ",'nodeSelector':{'disk':'ssd'}}", FIT_SELECTOR, "disk"},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gpu-pool','operator':'In','values':['t4','a10']}]}]") "}", FIT_OK, NULL},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gpu-pool','operator':'NotIn','values':['a10']}]}]") "}",
		 FIT_AFFINITY, "gpu-pool"},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'disk','operator':'NotIn','values':['hdd']}]}]") "}", FIT_OK, NULL},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gen','operator':'Exists'}]}]") "}", FIT_OK, NULL},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gen','operator':'DoesNotExist'}]}]") "}", FIT_AFFINITY, "gen"},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'disk','operator':'DoesNotExist'}]}]") "}", FIT_OK, NULL},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gen','operator':'Gt','values':['4']}]}]") "}", FIT_OK, NULL},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gen','operator':'Gt','values':['5']}]}]") "}", FIT_AFFINITY, "gen"},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gen','operator':'Lt','values':['6']}]}]") "}", FIT_OK, NULL},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gen','operator':'Lt','values':['-5']}]}]") "}", FIT_AFFINITY, "gen"},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'zone','operator':'Gt','values':['1']}]}]") "}", FIT_AFFINITY, "zone"},
		/* terms ORed, expressions ANDed */
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gpu-pool','operator':'In','values':['t4']}]},"
				 "{'matchExpressions':[{'key':'gen','operator':'Exists'}]}]") "}", FIT_OK, NULL},
		{"{" TOL "," REQ("[{'matchExpressions':[{'key':'gen','operator':'Exists'},"
				 "{'key':'gpu-pool','operator':'In','values':['t4']}]}]") "}", FIT_AFFINITY, "gpu-pool"},
		/* matchFields names an existing Node (a DaemonSet pod): never a new one */
		{"{" TOL "," REQ("[{'matchFields':[{'key':'metadata.name','operator':'In','values':['n1']}]}]") "}",
		 FIT_AFFINITY, "matchFields"},
		{"{" TOL "," REQ("[{'matchFields':[{'key':'metadata.name','operator':'In','values':['n1']}],"
				 "'matchExpressions':[{'key':'gen','operator':'Exists'}]}]") "}", FIT_AFFINITY, "matchFields"},
		{"{" TOL "," REQ("[]") "}", FIT_AFFINITY, "no terms"},
		{"{" TOL "," REQ("[{}]") "}", FIT_AFFINITY, "an empty term"},
		/* preferred node affinity ignored */
		{"{" TOL ",'affinity':{'nodeAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':1,"
		 "'preference':{'matchExpressions':[{'key':'x','operator':'Exists'}]}}]}}}", FIT_OK, NULL},
		/* not modelled comes first */
		{"{'topologySpreadConstraints':[{'whenUnsatisfiable':'DoNotSchedule'}]," GPU(9) "}", FIT_NOT_MODELLED,
		 "topology spread (DoNotSchedule)"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		struct podreq p = test_pod("p", rows[i].spec);
		struct fit_why w;
		assert_int_equal(fit_check(&t, &p, &w), rows[i].want);
		assert_int_equal(w.reason, rows[i].want);
		if (rows[i].what)
			assert_string_equal(w.what, rows[i].what);
		assert_int_equal(fit_check(&t, &p, NULL), rows[i].want);
		podreq_clear(&p);
	}
	/* what the dry run says */
	struct podreq p = test_pod("p", "{" TOL ",'containers':[{'resources':{'requests':{'cpu':'31','nvidia.com/gpu':'2'}}}]}");
	struct fit_why w;
	char line[200];
	fit_check(&t, &p, &w);
	assert_int_equal(w.need, 31000);
	assert_int_equal(w.have, 30000);
	fit_why_format(&w, line, sizeof(line));
	assert_string_equal(line, "needs 31000m cpu, the node has 30000m");
	assert_string_equal(fit_reason_name(w.reason), "TooBig");
	static const struct {
		struct fit_why why;
		const char *line;
	} lines[] = {
		{{FIT_OK, NULL, 0, 0}, "fits"},
		{{FIT_NOT_MODELLED, "required pod affinity", 0, 0}, "has required pod affinity, which spotpool does not model"},
		{{FIT_SELECTOR, "gpu-pool", 0, 0}, "nodeSelector gpu-pool does not match the node's labels"},
		{{FIT_AFFINITY, "gen", 0, 0}, "required node affinity does not match the node (first term: gen)"},
		{{FIT_TAINT, "nvidia.com/gpu", 0, 0}, "does not tolerate the node's taint nvidia.com/gpu"},
		{{FIT_TOO_BIG, "nvidia.com/gpu", 8, 4}, "needs 8 nvidia.com/gpu, the node has 4"},
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		fit_why_format(&lines[i].why, line, sizeof(line));
		assert_string_equal(line, lines[i].line);
	}
	podreq_clear(&p);
	fit_template_clear(&t);
}

/* The DaemonSets a node of the pool runs take their requests off it; those that would
 * not run there do not. */
static void test_daemon_overhead(void **state)
{
	(void)state;
	struct fit_template t;
	a10_template(&t, "a10", 4, 30000);
	static const char *const specs[] = {
		/* the device plugin and kube-proxy tolerate everything */
		"{'tolerations':[{'operator':'Exists'}],'containers':[{'resources':{'requests':{'cpu':'50m','memory':'100Mi'}}}]}",
		"{'tolerations':[{'operator':'Exists'}],'containers':[{'resources':{'requests':{'cpu':'100m'}}}]}",
		/* for other nodes, not tolerating the GPU taint, or asking what the node lacks */
		"{'tolerations':[{'operator':'Exists'}],'nodeSelector':{'gpu-pool':'t4'},'containers':[{'resources':{'requests':{'cpu':'1'}}}]}",
		"{'containers':[{'resources':{'requests':{'cpu':'1'}}}]}",
		"{'tolerations':[{'operator':'Exists'}],'containers':[{'resources':{'requests':{'cpu':'1','example.com/x':'1'}}}]}",
	};
	struct podreq ds[5];
	const struct podreq *ptrs[5];
	for (size_t i = 0; i < 5; i++) {
		ds[i] = test_pod("ds", specs[i]);
		ptrs[i] = &ds[i];
	}
	struct qty_list overhead = {0};
	fit_daemon_overhead(&t, ptrs, 5, &overhead);
	assert_int_equal(overhead.n, 3);
	assert_int_equal(qty_get(&overhead, QTY_CPU), 150);
	assert_int_equal(qty_get(&overhead, QTY_MEMORY), 100LL << 20);
	assert_int_equal(qty_get(&overhead, QTY_PODS), 2);
	qty_sub(&t.allocatable, &overhead);
	assert_int_equal(qty_get(&t.allocatable, QTY_CPU), 29850);
	assert_int_equal(qty_get(&t.allocatable, QTY_PODS), 108);
	assert_int_equal(qty_get(&t.allocatable, QTY_GPU), 4);
	fit_daemon_overhead(&t, ptrs, 0, &overhead);
	assert_int_equal(overhead.n, 0);
	for (size_t i = 0; i < 5; i++)
		podreq_clear(&ds[i]);
	fit_template_clear(&t);
}

/* TKE's published examples (docs/demand.md#node-size). */
static void test_tke_allocatable(void **state)
{
	(void)state;
	static const struct {
		int64_t cores, mib;
		int64_t cpu, memory;
	} rows[] = {
		{4, 4096, 3900, 4096LL * 1048576 - 1024LL * 1048576 - FIT_EVICTION_MEMORY},
		{32, 32768, 31200, 32768LL * 1048576 - 3732930 * 1024LL - FIT_EVICTION_MEMORY}, /* 3645.44 MiB */
		{96, 8192, 94000, 8192LL * 1048576 - 1887437 * 1024LL - FIT_EVICTION_MEMORY},   /* 1843.2 MiB */
		{196, 327680, 193260, 327680LL * 1048576 - 13799260 * 1024LL - FIT_EVICTION_MEMORY}, /* 13475.84 MiB */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		struct qty_list r = {0};
		struct fit_instance_type it = {rows[i].cores, rows[i].mib, 4, 100, 110};
		fit_tke_allocatable(&it, &r);
		assert_int_equal(qty_get(&r, QTY_CPU), rows[i].cpu);
		/* within a KiB of the published MiB figure */
		int64_t m = qty_get(&r, QTY_MEMORY);
		assert_true(m <= rows[i].memory + 1024 && m >= rows[i].memory - 1024);
		assert_int_equal(qty_get(&r, QTY_GPU), 4);
		assert_int_equal(qty_get(&r, QTY_PODS), 110);
		assert_int_equal(qty_get(&r, QTY_EPHEMERAL), 100LL * 1073741824 / 100 * FIT_DISK_PERCENT);
		qty_clear(&r);
	}
	struct qty_list r = {0};
	fit_tke_allocatable(&(struct fit_instance_type){1, 100, 0, 0, 10}, &r);
	assert_int_equal(qty_get(&r, QTY_MEMORY), 0); /* all reserved */
	assert_int_equal(r.n, 3);                                   /* no GPU, no disk */
	qty_clear(&r);
}

/* A pod by its requests alone. */
static struct podreq *bare_pod(const char *name, int64_t gpu, int64_t cpu, int64_t memory)
{
	struct podreq *p = xcalloc(1, sizeof(*p));
	snprintf(p->namespace, sizeof(p->namespace), "ml");
	snprintf(p->name, sizeof(p->name), "%s", name);
	if (gpu)
		qty_set(&p->requests, QTY_GPU, gpu);
	if (cpu)
		qty_set(&p->requests, QTY_CPU, cpu);
	if (memory)
		qty_set(&p->requests, QTY_MEMORY, memory);
	qty_set(&p->requests, QTY_PODS, 1);
	return p;
}

static void free_pods(struct podreq **pods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		podreq_clear(pods[i]);
		free(pods[i]);
	}
	free(pods);
}

/* A template with no labels or taints. */
static void plain_template(struct fit_template *t, int64_t gpus, int64_t cpu, int64_t pods)
{
	*t = (struct fit_template){0};
	qty_set(&t->allocatable, QTY_GPU, gpus);
	qty_set(&t->allocatable, QTY_CPU, cpu);
	qty_set(&t->allocatable, QTY_MEMORY, 64LL << 30);
	qty_set(&t->allocatable, QTY_PODS, pods);
}

static void test_pack_200(void **state)
{
	(void)state;
	struct fit_template t;
	plain_template(&t, 4, 30000, 110);
	struct podreq **pods = xcalloc(200, sizeof(*pods));
	for (int i = 0; i < 200; i++) {
		char name[16];
		snprintf(name, sizeof(name), "job-%03d", 199 - i); /* listed in reverse */
		pods[i] = bare_pod(name, 1, 1000, 1LL << 30);
	}
	struct fit_place place[200];
	assert_int_equal(fit_pack(&t, (const struct podreq *const *)pods, 200, NULL, 0, 1000, place), 50);
	int per_node[50] = {0};
	for (int i = 0; i < 200; i++) {
		assert_int_equal(place[i].kind, FIT_PLACE_NEW);
		per_node[place[i].index]++;
	}
	for (int i = 0; i < 50; i++)
		assert_int_equal(per_node[i], 4);
	/* under the pool's maximum: 3 more nodes, the rest said so */
	assert_int_equal(fit_pack(&t, (const struct podreq *const *)pods, 200, NULL, 0, 3, place), 3);
	int counted = 0;
	for (int i = 0; i < 200; i++) {
		counted += place[i].kind == FIT_PLACE_NEW;
		assert_true(place[i].kind == FIT_PLACE_NEW || place[i].kind == FIT_PLACE_NO_ROOM);
	}
	assert_int_equal(counted, 12);
	/* placed in namespace/name order among equals, not as listed: job-000..job-003
	 * (the last four) on node 0, job-012 the first left out */
	assert_int_equal(place[199].kind, FIT_PLACE_NEW);
	assert_int_equal(place[199].index, 0);
	assert_int_equal(place[196].index, 0);
	assert_int_equal(place[195].index, 1);
	assert_int_equal(place[188].kind, FIT_PLACE_NEW);
	assert_int_equal(place[187].kind, FIT_PLACE_NO_ROOM);
	free_pods(pods, 200);
	fit_template_clear(&t);
}

static void test_pack_cases(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		int64_t node_gpu, node_cpu, node_pods;
		struct {
			int64_t gpu, cpu;
		} pods[8];
		size_t n_pods;
		int64_t room_gpu[3];   /* free GPUs of rooms with 100 cpu and 10 pods free */
		size_t n_rooms, max_new, want;
		enum fit_place_kind kinds[8];
		size_t index[8];
	} rows[] = {
		{"mixed sizes: 3+1, 3+1, 2+2", 4, 64000, 110,
		 {{1, 0}, {3, 0}, {2, 0}, {1, 0}, {3, 0}, {2, 0}}, 6, {0}, 0, 10, 3,
		 {FIT_PLACE_NEW, FIT_PLACE_NEW, FIT_PLACE_NEW, FIT_PLACE_NEW, FIT_PLACE_NEW, FIT_PLACE_NEW},
		 {0, 0, 2, 1, 1, 2}},
		{"free room first: 2 + 1 free GPUs, then one new node", 4, 64000, 110,
		 {{1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}}, 5, {2, 1}, 2, 10, 1,
		 {FIT_PLACE_ROOM, FIT_PLACE_ROOM, FIT_PLACE_ROOM, FIT_PLACE_NEW, FIT_PLACE_NEW}, {0, 0, 1, 0, 0}},
		{"a pod bigger than a node is not counted", 4, 64000, 110,
		 {{8, 0}, {1, 0}}, 2, {0}, 0, 10, 1, {FIT_PLACE_NONE, FIT_PLACE_NEW}, {0, 0}},
		{"room that is not enough is skipped", 4, 64000, 110,
		 {{3, 0}}, 1, {2}, 1, 10, 1, {FIT_PLACE_NEW}, {0}},
		{"cpu binds before GPUs: 3 + 1 pods of 10 cores", 4, 30000, 110,
		 {{1, 10000}, {1, 10000}, {1, 10000}, {1, 10000}}, 4, {0}, 0, 10, 2,
		 {FIT_PLACE_NEW, FIT_PLACE_NEW, FIT_PLACE_NEW, FIT_PLACE_NEW}, {0, 0, 0, 1}},
		{"pods per node: 2", 4, 30000, 2,
		 {{0, 100}, {0, 100}, {0, 100}}, 3, {0}, 0, 10, 2, {FIT_PLACE_NEW, FIT_PLACE_NEW, FIT_PLACE_NEW}, {0, 0, 1}},
		{"no pods, no nodes", 4, 30000, 110, {{0, 0}}, 0, {1}, 1, 10, 0, {FIT_PLACE_NONE}, {0}},
		{"at maximum already", 4, 30000, 110, {{1, 0}}, 1, {0}, 0, 0, 0, {FIT_PLACE_NO_ROOM}, {0}},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu: %s\n", i, rows[i].what);
		struct fit_template t;
		plain_template(&t, rows[i].node_gpu, rows[i].node_cpu, rows[i].node_pods);
		struct podreq **pods = xcalloc(rows[i].n_pods + 1, sizeof(*pods));
		for (size_t k = 0; k < rows[i].n_pods; k++) {
			char name[8];
			snprintf(name, sizeof(name), "p%zu", k);
			pods[k] = bare_pod(name, rows[i].pods[k].gpu, rows[i].pods[k].cpu, 0);
		}
		struct qty_list rooms[3] = {{0}};
		for (size_t r = 0; r < rows[i].n_rooms; r++) {
			qty_set(&rooms[r], QTY_GPU, rows[i].room_gpu[r]);
			qty_set(&rooms[r], QTY_CPU, 100000);
			qty_set(&rooms[r], QTY_MEMORY, 64LL << 30);
			qty_set(&rooms[r], QTY_PODS, 10);
		}
		struct fit_place place[8];
		assert_int_equal(fit_pack(&t, (const struct podreq *const *)pods, rows[i].n_pods, rooms, rows[i].n_rooms,
					  rows[i].max_new, place),
				 rows[i].want);
		for (size_t k = 0; k < rows[i].n_pods; k++) {
			print_message("pod %zu\n", k);
			assert_int_equal(place[k].kind, rows[i].kinds[k]);
			if (place[k].kind == FIT_PLACE_NEW || place[k].kind == FIT_PLACE_ROOM)
				assert_int_equal(place[k].index, rows[i].index[k]);
		}
		for (size_t r = 0; r < 3; r++)
			qty_clear(&rooms[r]);
		free_pods(pods, rows[i].n_pods);
		fit_template_clear(&t);
	}
}

static void test_choose_pool(void **state)
{
	(void)state;
	struct fit_template a8, b4, a4, c4, t4;
	a10_template(&a8, "a8", 8, 60000);
	a10_template(&b4, "b4", 4, 30000);
	a10_template(&a4, "a4", 4, 30000);
	a10_template(&c4, "c4", 4, 16000);
	a10_template(&t4, "t4", 4, 8000);
	t4.node = &t4_node; /* and no taint */
	const struct fit_template *pools[] = {&a8, &b4, &a4, &c4, &t4};
	const struct fit_template *reversed[] = {&t4, &c4, &a4, &b4, &a8};
	static const struct {
		const char *spec;
		const char *want; /* NULL: none */
	} rows[] = {
		/* fewest GPUs, then fewest cpu: c4 (t4 has the fewest cpu, but its labels differ) */
		{"{" TOL ",'nodeSelector':{'gpu-pool':'a10'}," GPU(1) "}", "c4"},
		/* t4 takes it: fewest cpu, no taint to tolerate */
		{"{" GPU(1) "}", "t4"},
		/* 20 cores: c4 and t4 too small; a4 and b4 tie, a4 by name */
		{"{" TOL ",'nodeSelector':{'gpu-pool':'a10'},'containers':[{'resources':{'requests':{'cpu':'20','nvidia.com/gpu':'1'}}}]}",
		 "a4"},
		{"{" TOL "," GPU(6) "}", "a8"},
		{"{" TOL "," GPU(9) "}", NULL},
		{"{'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{}]}}," GPU(1) "}", NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		struct podreq p = test_pod("p", rows[i].spec);
		struct fit_why why[5];
		int got = fit_choose_pool(&p, pools, 5, why);
		int again = fit_choose_pool(&p, reversed, 5, NULL);
		if (!rows[i].want) {
			assert_int_equal(got, -1);
			assert_int_equal(again, -1);
		} else {
			assert_true(got >= 0 && again >= 0);
			assert_string_equal(pools[got]->name, rows[i].want);
			assert_ptr_equal(pools[got], reversed[again]); /* whatever the order */
			assert_int_equal(why[got].reason, FIT_OK);
		}
		for (size_t k = 0; k < 5; k++)
			assert_int_equal(why[k].reason, fit_check(pools[k], &p, NULL));
		podreq_clear(&p);
	}
	/* the reasons per pool the dry run shows */
	struct podreq p = test_pod("p", "{" GPU(6) "}");
	struct fit_why why[5];
	assert_int_equal(fit_choose_pool(&p, pools, 5, why), -1);
	assert_int_equal(why[0].reason, FIT_TAINT);
	assert_int_equal(why[4].reason, FIT_TOO_BIG);
	assert_int_equal(why[4].need, 6);
	assert_int_equal(why[4].have, 4);
	podreq_clear(&p);
	assert_int_equal(fit_choose_pool(&p, pools, 0, NULL), -1);
	for (size_t k = 0; k < 5; k++)
		fit_template_clear((struct fit_template *)pools[k]);
}

/* Random pods, rooms and node sizes: every placement within capacity, the count never
 * above the pods placed on new nodes nor max_new, at least the GPU lower bound, and
 * NONE/NO_ROOM only where they apply. */
static void test_pack_property(void **state)
{
	(void)state;
	srand(28);
	for (int round = 0; round < 2000; round++) {
		struct fit_template t;
		int64_t gpus = 1 + rand() % 8, cpu = 4000 + rand() % 60000, pods_max = 1 + rand() % 20;
		plain_template(&t, gpus, cpu, pods_max);
		size_t n = (size_t)(rand() % 40), n_rooms = (size_t)(rand() % 4), max_new = (size_t)(rand() % 30);
		struct podreq **pods = xcalloc(n + 1, sizeof(*pods));
		for (size_t k = 0; k < n; k++) {
			char name[8];
			snprintf(name, sizeof(name), "p%zu", k);
			pods[k] = bare_pod(name, rand() % 10, rand() % 70000, (int64_t)(rand() % 80) << 30);
		}
		struct qty_list rooms[4] = {{0}};
		for (size_t r = 0; r < n_rooms; r++) {
			qty_set(&rooms[r], QTY_GPU, rand() % 8);
			qty_set(&rooms[r], QTY_CPU, rand() % 64000);
			qty_set(&rooms[r], QTY_MEMORY, (int64_t)(rand() % 64) << 30);
			qty_set(&rooms[r], QTY_PODS, rand() % 10);
		}
		struct fit_place *place = xcalloc(n + 1, sizeof(*place));
		size_t count = fit_pack(&t, (const struct podreq *const *)pods, n, rooms, n_rooms, max_new, place);
		assert_true(count <= n && count <= max_new);
		/* used[node][resource] for rooms then new nodes */
		int64_t used[4 + 30][4] = {{0}};
		size_t on_new = 0, gpu_on_new = 0;
		bool no_room = false;
		for (size_t k = 0; k < n; k++) {
			bool fits = fit_check(&t, pods[k], NULL) == FIT_OK;
			size_t node = 0;
			switch (place[k].kind) {
			case FIT_PLACE_NONE:
				assert_false(fits);
				continue;
			case FIT_PLACE_NO_ROOM:
				assert_true(fits);
				no_room = true;
				continue;
			case FIT_PLACE_ROOM:
				assert_true(fits && place[k].index < n_rooms);
				node = place[k].index;
				break;
			case FIT_PLACE_NEW:
				assert_true(fits && place[k].index < count);
				node = 4 + place[k].index;
				on_new++;
				gpu_on_new += (size_t)qty_get(&pods[k]->requests, QTY_GPU);
				break;
			}
			for (size_t d = 0; d < t.allocatable.n; d++)
				used[node][d] += qty_get(&pods[k]->requests, t.allocatable.v[d].name);
		}
		assert_true(count <= on_new);
		assert_true(!no_room || count == max_new);
		assert_true(count * (size_t)gpus >= gpu_on_new);
		for (size_t node = 0; node < 4 + count; node++) {
			if (node >= n_rooms && node < 4)
				continue;
			for (size_t d = 0; d < t.allocatable.n; d++) {
				int64_t cap = node < 4 ? qty_get(&rooms[node], t.allocatable.v[d].name)
						       : t.allocatable.v[d].value;
				assert_true(used[node][d] <= cap);
			}
		}
		/* every new node holds a pod (no empty node launched) */
		for (size_t node = 4; node < 4 + count; node++)
			assert_true(used[node][3] > 0); /* "pods" sorts last of cpu, memory, nvidia.com/gpu, pods */
		free(place);
		for (size_t r = 0; r < 4; r++)
			qty_clear(&rooms[r]);
		free_pods(pods, n);
		fit_template_clear(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_daemon_overhead),
		cmocka_unit_test(test_tke_allocatable),
		cmocka_unit_test(test_pack_200),
		cmocka_unit_test(test_pack_cases),
		cmocka_unit_test(test_choose_pool),
		cmocka_unit_test(test_pack_property),
	};
	return cmocka_run_group_tests(tests, parse_nodes, clear_nodes);
}
