/* podreq (issue 28 item 2, design D6): a pod's requests as the scheduler counts them
 * (containers summed, init containers and sidecars, overhead, limits-only resources),
 * the bounds on a hostile pod and errors naming the field, the constraints not
 * modelled, and which pods count as pending. */
#include "testutil.h"
#include "testpod.h"

/* The error parsing a pod's spec gives ("" when it parses). */
static char *pod_error(const char *spec)
{
	char *text = xasprintf("{'metadata':{'namespace':'ml','name':'p'},'spec':%s}", spec);
	cJSON *obj = test_json(text);
	struct podreq p = {0};
	struct sp_error err = {0};
	int rc = podreq_parse(obj, &p, &err);
	if (rc == 0)
		podreq_clear(&p);
	cJSON_Delete(obj);
	free(text);
	return xstrdup(rc < 0 ? err.msg : "");
}

static void test_requests(void **state)
{
	(void)state;
	static const struct {
		const char *spec;
		int64_t cpu, memory, gpu;
	} rows[] = {
		/* containers summed */
		{"{'containers':[{'resources':{'requests':{'cpu':'500m','memory':'1Gi','nvidia.com/gpu':'1'}}},"
		 "{'resources':{'requests':{'cpu':'1.5','memory':'512Mi','nvidia.com/gpu':'1'}}}]}",
		 2000, 1610612736, 2},
		/* no resources at all: only the pod itself */
		{"{'containers':[{'name':'a'}]}", 0, 0, 0},
		/* an init container larger than the containers */
		{"{'initContainers':[{'resources':{'requests':{'cpu':'4','memory':'1Gi'}}}],"
		 "'containers':[{'resources':{'requests':{'cpu':'1','memory':'2Gi'}}}]}",
		 4000, 2147483648, 0},
		/* a sidecar (restartPolicy Always) runs beside the later init containers and the
		 * containers: containers 1 + sidecar 1 = 2; the init after it 2 + 1 = 3 */
		{"{'initContainers':[{'restartPolicy':'Always','resources':{'requests':{'cpu':'1'}}},"
		 "{'resources':{'requests':{'cpu':'2'}}}],'containers':[{'resources':{'requests':{'cpu':'1'}}}]}",
		 3000, 0, 0},
		/* an init container before the sidecar does not run beside it */
		{"{'initContainers':[{'resources':{'requests':{'cpu':'2'}}},"
		 "{'restartPolicy':'Always','resources':{'requests':{'cpu':'1'}}}],"
		 "'containers':[{'resources':{'requests':{'cpu':'1'}}}]}",
		 2000, 0, 0},
		/* a sidecar alone: beside the containers (1 + 4), not twice over */
		{"{'initContainers':[{'restartPolicy':'Always','resources':{'requests':{'cpu':'4'}}}],"
		 "'containers':[{'resources':{'requests':{'cpu':'1'}}}]}",
		 5000, 0, 0},
		/* overhead (RuntimeClass) added */
		{"{'overhead':{'cpu':'250m','memory':'64Mi'},'containers':[{'resources':{'requests':{'cpu':'1','memory':'1Gi'}}}]}",
		 1250, 1140850688, 0},
		/* limits without requests request the limit, per resource */
		{"{'containers':[{'resources':{'limits':{'cpu':'2','nvidia.com/gpu':1},'requests':{'cpu':'1'}}}]}",
		 1000, 0, 1},
		/* YAML numbers */
		{"{'containers':[{'resources':{'requests':{'cpu':0.5,'memory':1e9,'nvidia.com/gpu':2}}}]}",
		 500, 1000000000, 2},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		struct podreq p = test_pod("p", rows[i].spec);
		assert_int_equal(qty_get(&p.requests, QTY_CPU), rows[i].cpu);
		assert_int_equal(qty_get(&p.requests, QTY_MEMORY), rows[i].memory);
		assert_int_equal(qty_get(&p.requests, QTY_GPU), rows[i].gpu);
		assert_int_equal(qty_get(&p.requests, QTY_PODS), 1);
		podreq_clear(&p);
	}
	struct podreq p = test_pod("x", "{'containers':[{'resources':{'requests':{'example.com/fpga':'3',"
				       "'ephemeral-storage':'10Gi','hugepages-2Mi':'4Mi'}}}]}");
	assert_string_equal(p.namespace, "ml");
	assert_string_equal(p.name, "x");
	assert_string_equal(p.uid, "u-x");
	assert_int_equal(qty_get(&p.requests, "example.com/fpga"), 3);
	assert_int_equal(qty_get(&p.requests, QTY_EPHEMERAL), 10737418240);
	assert_int_equal(qty_get(&p.requests, "hugepages-2Mi"), 4194304);
	podreq_clear(&p);
}

/* A JSON list of n copies of item. */
static char *repeat(const char *item, int n)
{
	size_t len = strlen(item) + 1;
	char *s = xcalloc((size_t)n * len + 3, 1);
	strcat(s, "[");
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(s, ",");
		strcat(s, item);
	}
	strcat(s, "]");
	return s;
}

static void test_pod_errors(void **state)
{
	(void)state;
	char *many_containers = repeat("{'name':'c'}", PODREQ_MAX_CONTAINERS + 1);
	char *many_tolerations = repeat("{'operator':'Exists'}", PODREQ_MAX_TOLERATIONS + 1);
	char *many_terms = repeat("{'matchExpressions':[{'key':'a','operator':'Exists'}]}", PODREQ_MAX_TERMS + 1);
	char *many_values = repeat("'v'", PODREQ_MAX_VALUES / 2 + 1);
	char res[2048] = "{";
	for (int i = 0; i <= QTY_MAX_RESOURCES; i++)
		snprintf(res + strlen(res), sizeof(res) - strlen(res), "%s'example.com/r%d':'1'", i ? "," : "", i);
	strcat(res, "}");
	char long_name[400];
	memset(long_name, 'n', 320);
	long_name[320] = '\0';
	struct {
		char *spec;
		const char *error;
	} rows[] = {
		{xasprintf("{'containers':[{},{'resources':{'requests':{'memory':'12Qi'}}}]}"),
		 "spec.containers[1].resources.requests.memory: \"12Qi\" is not a quantity"},
		{xasprintf("{'containers':[{'resources':{'limits':{'cpu':'-1'}}}]}"),
		 "spec.containers[0].resources.limits.cpu: \"-1\" is negative"},
		{xasprintf("{'containers':[{'resources':{'requests':{'cpu':{}}}}]}"),
		 "spec.containers[0].resources.requests.cpu: not a quantity"},
		{xasprintf("{'containers':[{'resources':{'requests':{'memory':'5E'}}},{'resources':{'requests':{'memory':'5E'}}}]}"),
		 "spec.containers: the total of memory is too large"},
		{xasprintf("{'overhead':{'cpu':'1e100'}}"), "spec.overhead.cpu: \"1e100\" is too large"},
		{xasprintf("{'initContainers':[{'resources':{'requests':{'cpu':'1x'}}}]}"),
		 "spec.initContainers[0].resources.requests.cpu"},
		{xasprintf("{'containers':%s}", many_containers), "spec.containers: more than 64 entries"},
		{xasprintf("{'containers':[{'resources':{'requests':%s}}]}", res),
		 "spec.containers[0].resources.requests: more than 32 resources"},
		{xasprintf("{'containers':'x'}"), "spec.containers: not a list"},
		{xasprintf("{'tolerations':%s}", many_tolerations), "spec.tolerations: more than 64 entries"},
		{xasprintf("{'tolerations':[{'key':5}]}"), "spec.tolerations[0].key: not a string"},
		{xasprintf("{'tolerations':[{'operator':'Maybe'}]}"), "spec.tolerations[0].operator: must be Exists or Equal"},
		{xasprintf("{'tolerations':[{'effect':'NoRun'}]}"), "spec.tolerations[0].effect: must be"},
		{xasprintf("{'nodeSelector':{'a':1}}"), "spec.nodeSelector.a: not a string"},
		{xasprintf("{'nodeSelector':{'a':'%s'}}", long_name), "spec.nodeSelector.a: not a string of at most 317"},
		{xasprintf("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
			   "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'a','operator':'Near'}]}]}}}}"),
		 "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
		 ".matchExpressions[0].operator: must be In"},
		{xasprintf("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
			   "{'nodeSelectorTerms':[{},{'matchExpressions':[{'key':'a','operator':'Gt','values':['1','2']}]}]}}}}"),
		 "nodeSelectorTerms[1].matchExpressions[0].values: Gt takes one integer"},
		{xasprintf("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
			   "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'a','operator':'Lt','values':['x']}]}]}}}}"),
		 "values: Lt takes one integer"},
		{xasprintf("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
			   "{'nodeSelectorTerms':[{'matchExpressions':[{'operator':'Exists'}]}]}}}}"),
		 "matchExpressions[0].key: missing"},
		{xasprintf("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
			   "{'nodeSelectorTerms':%s}}}}", many_terms),
		 "nodeSelectorTerms: more than 16 entries"},
		{xasprintf("{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
			   "{'nodeSelectorTerms':[{'matchExpressions':[{'key':'a','operator':'In','values':%s},"
			   "{'key':'b','operator':'In','values':%s}]}]}}}}", many_values, many_values),
		 "matchExpressions[1].values: more than 512 values in all terms"},
		{xasprintf("[1]"), "spec: missing"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		char *e = pod_error(rows[i].spec);
		assert_contains(e, rows[i].error);
		free(e);
		free(rows[i].spec);
	}
	/* metadata bounded too */
	char *text = xasprintf("{'metadata':{'name':'%.300s'},'spec':{}}", long_name);
	cJSON *obj = test_json(text);
	struct podreq p = {0};
	struct sp_error err = {0};
	assert_true(podreq_parse(obj, &p, &err) < 0);
	assert_contains(err.msg, "metadata.name: longer than 253 characters");
	cJSON_Delete(obj);
	free(text);
	free(many_containers);
	free(many_tolerations);
	free(many_terms);
	free(many_values);
}

static void test_unmodelled(void **state)
{
	(void)state;
	static const struct {
		const char *spec;
		const char *want;
	} rows[] = {
		{"{}", NULL},
		{"{'affinity':{'podAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'zone'}]}}}",
		 "required pod affinity"},
		{"{'affinity':{'podAntiAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'h'}]}}}",
		 "required pod anti-affinity"},
		/* preferred terms are ignored, as a scale-up simulation may */
		{"{'affinity':{'podAntiAffinity':{'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':1}]}}}", NULL},
		{"{'topologySpreadConstraints':[{'maxSkew':1,'whenUnsatisfiable':'ScheduleAnyway'}]}", NULL},
		{"{'topologySpreadConstraints':[{'maxSkew':1,'whenUnsatisfiable':'ScheduleAnyway'},"
		 "{'maxSkew':1,'whenUnsatisfiable':'DoNotSchedule'}]}",
		 "topology spread (DoNotSchedule)"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		struct podreq p = test_pod("p", rows[i].spec);
		if (rows[i].want)
			assert_string_equal(p.unmodelled, rows[i].want);
		else
			assert_null(p.unmodelled);
		podreq_clear(&p);
	}
}

static void test_pending(void **state)
{
	(void)state;
	static const struct {
		const char *pod;
		bool want;
	} rows[] = {
		{"{'spec':{},'status':{'phase':'Pending','conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", true},
		{"{'spec':{},'status':{'conditions':[{'type':'Ready','status':'False'},{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", true},
		{"{'spec':{},'status':{'nominatedNodeName':'','conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", true},
		{"{'metadata':{'ownerReferences':[{'kind':'ReplicaSet','name':'r'}]},'spec':{},'status':{'conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", true},
		/* not tried yet, or held by gates */
		{"{'spec':{},'status':{'phase':'Pending'}}", false},
		{"{'spec':{'schedulingGates':[{'name':'g'}]},'status':{'conditions':[{'type':'PodScheduled','status':'False','reason':'SchedulingGated'}]}}", false},
		{"{'spec':{},'status':{'conditions':[{'type':'PodScheduled','status':'True'}]}}", false},
		/* bound, going, preempting, a DaemonSet's or a mirror pod */
		{"{'spec':{'nodeName':'n1'},'status':{'conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", false},
		{"{'metadata':{'deletionTimestamp':'2026-11-28T12:00:00Z'},'spec':{},'status':{'conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", false},
		{"{'spec':{},'status':{'nominatedNodeName':'n1','conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", false},
		{"{'metadata':{'ownerReferences':[{'kind':'DaemonSet','name':'d'}]},'spec':{},'status':{'conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", false},
		{"{'metadata':{'ownerReferences':[{'kind':'Node','name':'n1'}]},'spec':{},'status':{'conditions':[{'type':'PodScheduled','status':'False','reason':'Unschedulable'}]}}", false},
		{"[]", false},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("row %zu\n", i);
		cJSON *obj = test_json(rows[i].pod);
		assert_int_equal(podreq_pending(obj), rows[i].want);
		cJSON_Delete(obj);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_pod_errors),
		cmocka_unit_test(test_unmodelled),
		cmocka_unit_test(test_pending),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
