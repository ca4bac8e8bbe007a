/* Fuzzes what spotpool reads of a pending pod (podreq_pending, podreq_parse) and what
 * it decides with it: the input is a pod as JSON. A parsed pod's requests are
 * non-negative and within QTY_MAX_RESOURCES, pods 1; its fit onto a node template agrees
 * with the packing of it alone, the pool choice and its count as a DaemonSet's. The
 * input as a quantity (qty_parse) must agree in units and millis: ceil(millis / 1000)
 * is the value in units. */
#include "fit.h"
#include "fuzz.h"

#include <string.h>

static struct tmpl_node node;
static struct fit_template tmpl = {.node = &node};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_setup();
	cJSON *nt = cJSON_Parse("{\"labels\":{\"gpu-pool\":\"a10\",\"gen\":\"5\"},\"taints\":"
				"[{\"key\":\"nvidia.com/gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}]}");
	struct sp_error err = {0};
	if (tmpl_parse(nt, &node, &err) < 0)
		abort();
	cJSON_Delete(nt);
	fit_tke_allocatable(&(struct fit_instance_type){32, 131072, 4, 100, 110}, &tmpl.allocatable);
	return 0;
}

static void check_quantity(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstring(data, size);
	int64_t units = -1, millis = -1;
	struct sp_error e1 = {0}, e2 = {0};
	int r1 = qty_parse(s, false, "q", &units, &e1), r2 = qty_parse(s, true, "q", &millis, &e2);
	fuzz_check_error(r1, &e1);
	fuzz_check_error(r2, &e2);
	if ((r1 == 0 && units < 0) || (r2 == 0 && millis < 0) || (r2 == 0 && r1 < 0) ||
	    (r1 == 0 && r2 == 0 && millis / 1000 + (millis % 1000 != 0) != units)) {
		fprintf(stderr, "fuzz: quantity \"%s\": %lld units, %lld millis\n", s, (long long)units,
			(long long)millis);
		abort();
	}
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size <= QTY_MAX_CHARS + 1)
		check_quantity(data, size);
	cJSON *obj = cJSON_ParseWithLength((const char *)data, size);
	if (!obj)
		return 0;
	podreq_pending(obj);
	struct podreq p;
	struct sp_error err = {0};
	int r = podreq_parse(obj, &p, &err);
	fuzz_check_error(r, &err);
	cJSON_Delete(obj);
	if (r < 0)
		return 0;
	if (p.requests.n > QTY_MAX_RESOURCES || qty_get(&p.requests, QTY_PODS) != 1)
		abort();
	for (size_t i = 0; i < p.requests.n; i++)
		if (p.requests.v[i].value < 0 || (i && strcmp(p.requests.v[i - 1].name, p.requests.v[i].name) >= 0))
			abort();
	const struct podreq *pods[] = {&p};
	struct fit_why why;
	struct qty_list overhead = {0};
	fit_daemon_overhead(&tmpl, pods, 1, &overhead);
	enum fit_reason reason = fit_check(&tmpl, &p, &why);
	if ((reason == FIT_OK) != (qty_get(&overhead, QTY_PODS) == 1))
		abort();
	qty_clear(&overhead);
	char line[512];
	fit_why_format(&why, line, sizeof(line));
	struct fit_place place;
	size_t n = fit_pack(&tmpl, pods, 1, NULL, 0, 1, &place);
	const struct fit_template *pools[] = {&tmpl};
	int chosen = fit_choose_pool(&p, pools, 1, NULL);
	if ((reason == FIT_OK) != (n == 1 && place.kind == FIT_PLACE_NEW) || (reason == FIT_OK) != (chosen == 0)) {
		fprintf(stderr, "fuzz: fit %s, packed %zu, chosen %d\n", fit_reason_name(reason), n, chosen);
		abort();
	}
	podreq_clear(&p);
	return 0;
}
