/* fit: pods against a pool's node template, bin-packing and pool choice (fit.h). Pure. */
#include "fit.h"

#include <stdio.h>
#include <string.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static const cJSON *field(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
	return cJSON_IsNull(v) ? NULL : v;
}

static int too_many_resources(const char *field_name, struct sp_error *err)
{
	return sp_fail(err, SP_ETOOBIG, "%s: more than %d resources", field_name, QTY_MAX_RESOURCES);
}

/* r += add, or r = max(r, add) per resource. */
static int res_combine(struct qty_list *r, const struct qty_list *add, bool max, const char *field_name,
		       struct sp_error *err)
{
	for (size_t i = 0; i < add->n; i++) {
		int64_t have = qty_get(r, add->v[i].name), v = add->v[i].value;
		if (max)
			v = have > v ? have : v;
		else if (v > INT64_MAX - have)
			return sp_fail(err, SP_EINVAL, "%s: the total of %s is too large", field_name, add->v[i].name);
		else
			v += have;
		if (qty_set(r, add->v[i].name, v) < 0)
			return too_many_resources(field_name, err);
	}
	return 0;
}

/* ---- reading a pod ---- */

/* A string member, NULL when absent; fails on another type or past FIT_MAX_STRING. */
static int get_string(const cJSON *obj, const char *key, const char *where, const char **ret, struct sp_error *err)
{
	const cJSON *v = field(obj, key);
	*ret = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return sp_fail(err, SP_EINVAL, "%s.%s: not a string", where, key);
	if (strlen(v->valuestring) > FIT_MAX_STRING)
		return sp_fail(err, SP_EINVAL, "%s.%s: longer than %d characters", where, key, FIT_MAX_STRING);
	*ret = v->valuestring;
	return 0;
}

static char *dup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

/* An array member (NULL when absent) of at most max elements. */
static int get_array(const cJSON *obj, const char *key, const char *where, int max, const cJSON **ret,
		     struct sp_error *err)
{
	const cJSON *v = field(obj, key);
	*ret = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsArray(v))
		return sp_fail(err, SP_EINVAL, "%s.%s: not a list", where, key);
	int n = 0;
	for (const cJSON *c = v->child; c; c = c->next)
		if (++n > max)
			return sp_fail(err, SP_ETOOBIG, "%s.%s: more than %d entries", where, key, max);
	*ret = v;
	return 0;
}

static void labels_free(struct tmpl_label *l, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

/* A map of strings (nodeSelector) of at most FIT_MAX_LABELS entries. */
static int parse_labels(const cJSON *map, const char *where, struct tmpl_label **ret, size_t *ret_n,
			struct sp_error *err)
{
	if (!map)
		return 0;
	if (!cJSON_IsObject(map))
		return sp_fail(err, SP_EINVAL, "%s: not an object", where);
	int n = cJSON_GetArraySize(map);
	if (n > FIT_MAX_LABELS)
		return sp_fail(err, SP_ETOOBIG, "%s: more than %d entries", where, FIT_MAX_LABELS);
	struct tmpl_label *l = xcalloc((size_t)n + 1, sizeof(*l));
	size_t k = 0;
	for (const cJSON *c = map->child; c; c = c->next, k++) {
		if (!cJSON_IsString(c) || strlen(c->string) > FIT_MAX_STRING ||
		    strlen(c->valuestring) > FIT_MAX_STRING) {
			labels_free(l, k);
			return sp_fail(err, SP_EINVAL, "%s.%.*s: not a string of at most %d characters", where,
				       FIT_MAX_STRING, c->string, FIT_MAX_STRING);
		}
		l[k] = (struct tmpl_label){xstrdup(c->string), xstrdup(c->valuestring)};
	}
	*ret = l;
	*ret_n = k;
	return 0;
}

static void term_free(struct fit_term *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].key);
		for (size_t j = 0; j < t->v[i].n_values; j++)
			free(t->v[i].values[j]);
		free(t->v[i].values);
	}
	free(t->v);
}

static const char *const op_names[] = {
	[FIT_OP_IN] = "In", [FIT_OP_NOT_IN] = "NotIn", [FIT_OP_EXISTS] = "Exists",
	[FIT_OP_DOES_NOT_EXIST] = "DoesNotExist", [FIT_OP_GT] = "Gt", [FIT_OP_LT] = "Lt",
};

static int parse_requirement(const cJSON *e, const char *where, size_t *values_left, struct fit_requirement *r,
			     struct sp_error *err)
{
	const char *key, *op;
	const cJSON *values;
	int rc;
	if (!cJSON_IsObject(e))
		return sp_fail(err, SP_EINVAL, "%s: not an object", where);
	if ((rc = get_string(e, "key", where, &key, err)) < 0 || (rc = get_string(e, "operator", where, &op, err)) < 0 ||
	    (rc = get_array(e, "values", where, FIT_MAX_VALUES, &values, err)) < 0)
		return rc;
	if (!key)
		return sp_fail(err, SP_EINVAL, "%s.key: missing", where);
	size_t o = 0;
	while (o < LEN(op_names) && (!op || strcmp(op, op_names[o]) != 0))
		o++;
	if (o == LEN(op_names))
		return sp_fail(err, SP_EINVAL, "%s.operator: must be In, NotIn, Exists, DoesNotExist, Gt or Lt", where);
	size_t n = (size_t)cJSON_GetArraySize(values);
	if (n > *values_left)
		return sp_fail(err, SP_ETOOBIG, "%s.values: more than %d values in all terms", where, FIT_MAX_VALUES);
	*values_left -= n;
	*r = (struct fit_requirement){.key = xstrdup(key), .op = (enum fit_op)o, .values = xcalloc(n + 1, sizeof(char *))};
	for (const cJSON *v = values ? values->child : NULL; v; v = v->next) {
		if (!cJSON_IsString(v) || strlen(v->valuestring) > FIT_MAX_STRING)
			return sp_fail(err, SP_EINVAL, "%s.values[%zu]: not a string of at most %d characters", where,
				       r->n_values, FIT_MAX_STRING);
		r->values[r->n_values++] = xstrdup(v->valuestring);
	}
	if ((r->op == FIT_OP_GT || r->op == FIT_OP_LT) && (r->n_values != 1 || !qty_parse_int(r->values[0], &r->number)))
		return sp_fail(err, SP_EINVAL, "%s.values: %s takes one integer", where, op);
	return 0;
}

static int parse_node_affinity(const cJSON *spec, struct fit_pod *p, struct sp_error *err)
{
	static const char where[] =
		"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
	const cJSON *req = field(field(field(spec, "affinity"), "nodeAffinity"),
				 "requiredDuringSchedulingIgnoredDuringExecution");
	const cJSON *terms;
	int rc;
	if (!req)
		return 0;
	if ((rc = get_array(req, "nodeSelectorTerms", where, FIT_MAX_TERMS, &terms, err)) < 0)
		return rc;
	p->affinity = true;
	p->terms = xcalloc((size_t)cJSON_GetArraySize(terms) + 1, sizeof(*p->terms));
	size_t values_left = FIT_MAX_VALUES;
	for (const cJSON *t = terms ? terms->child : NULL; t; t = t->next) {
		char at[160], at_e[200];
		snprintf(at, sizeof(at), "%s.nodeSelectorTerms[%zu]", where, p->n_terms);
		struct fit_term *term = &p->terms[p->n_terms++];
		const cJSON *exprs, *fields;
		if (!cJSON_IsObject(t))
			return sp_fail(err, SP_EINVAL, "%s: not an object", at);
		if ((rc = get_array(t, "matchExpressions", at, FIT_MAX_EXPRESSIONS, &exprs, err)) < 0 ||
		    (rc = get_array(t, "matchFields", at, FIT_MAX_EXPRESSIONS, &fields, err)) < 0)
			return rc;
		term->match_fields = cJSON_GetArraySize(fields) > 0;
		term->v = xcalloc((size_t)cJSON_GetArraySize(exprs) + 1, sizeof(*term->v));
		for (const cJSON *e = exprs ? exprs->child : NULL; e; e = e->next) {
			snprintf(at_e, sizeof(at_e), "%s.matchExpressions[%zu]", at, term->n);
			if ((rc = parse_requirement(e, at_e, &values_left, &term->v[term->n++], err)) < 0)
				return rc;
		}
	}
	return 0;
}

static int parse_tolerations(const cJSON *spec, struct fit_pod *p, struct sp_error *err)
{
	const cJSON *list;
	int rc = get_array(spec, "tolerations", "spec", FIT_MAX_TOLERATIONS, &list, err);
	if (rc < 0 || !list)
		return rc;
	p->tolerations = xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(*p->tolerations));
	for (const cJSON *t = list->child; t; t = t->next) {
		char at[48];
		snprintf(at, sizeof(at), "spec.tolerations[%zu]", p->n_tolerations);
		const char *key, *op, *value, *effect;
		if (!cJSON_IsObject(t))
			return sp_fail(err, SP_EINVAL, "%s: not an object", at);
		if ((rc = get_string(t, "key", at, &key, err)) < 0 || (rc = get_string(t, "operator", at, &op, err)) < 0 ||
		    (rc = get_string(t, "value", at, &value, err)) < 0 ||
		    (rc = get_string(t, "effect", at, &effect, err)) < 0)
			return rc;
		struct fit_toleration *tol = &p->tolerations[p->n_tolerations++];
		*tol = (struct fit_toleration){dup_or_empty(key), dup_or_empty(value), op && strcmp(op, "Exists") == 0,
					       !effect || !*effect, TMPL_NO_SCHEDULE};
		if (op && *op && strcmp(op, "Exists") != 0 && strcmp(op, "Equal") != 0)
			return sp_fail(err, SP_EINVAL, "%s.operator: must be Exists or Equal", at);
		if (!tol->any_effect && tmpl_effect_parse(effect, &tol->effect) < 0)
			return sp_fail(err, SP_EINVAL, "%s.effect: must be NoSchedule, PreferNoSchedule or NoExecute",
				       at);
	}
	return 0;
}

/* A container's requests, a resource it only limits requesting its limit. */
static int container_requests(const cJSON *c, const char *at, struct qty_list *ret, struct sp_error *err)
{
	char where[128];
	struct qty_list limits = {0};
	const cJSON *res = field(c, "resources");
	if (!cJSON_IsObject(c))
		return sp_fail(err, SP_EINVAL, "%s: not an object", at);
	snprintf(where, sizeof(where), "%s.resources.requests", at);
	int rc = qty_list_from_json(field(res, "requests"), where, ret, err);
	snprintf(where, sizeof(where), "%s.resources.limits", at);
	if (rc == 0)
		rc = qty_list_from_json(field(res, "limits"), where, &limits, err);
	for (size_t i = 0; rc == 0 && i < limits.n; i++) {
		if (!qty_has(ret, limits.v[i].name) && qty_set(ret, limits.v[i].name, limits.v[i].value) < 0)
			rc = too_many_resources(where, err);
	}
	qty_clear(&limits);
	return rc;
}

/* The scheduler's pod requests (component-helpers resource.PodRequests, Kubernetes
 * 1.32): containers summed with the restartable init containers (sidecars), against
 * each init container's own plus the sidecars started before it; plus the overhead. */
static int pod_requests(const cJSON *spec, struct qty_list *ret, struct sp_error *err)
{
	const cJSON *containers, *inits;
	struct qty_list c = {0}, sidecars = {0}, init = {0}, overhead = {0};
	int rc;
	if ((rc = get_array(spec, "containers", "spec", FIT_MAX_CONTAINERS, &containers, err)) < 0 ||
	    (rc = get_array(spec, "initContainers", "spec", FIT_MAX_CONTAINERS, &inits, err)) < 0)
		return rc;
	size_t i = 0;
	for (const cJSON *k = containers ? containers->child : NULL; rc == 0 && k; k = k->next, i++) {
		char at[48];
		snprintf(at, sizeof(at), "spec.containers[%zu]", i);
		if ((rc = container_requests(k, at, &c, err)) == 0)
			rc = res_combine(ret, &c, false, "spec.containers", err);
	}
	i = 0;
	for (const cJSON *k = inits ? inits->child : NULL; rc == 0 && k; k = k->next, i++) {
		char at[48];
		snprintf(at, sizeof(at), "spec.initContainers[%zu]", i);
		const char *restart = NULL;
		if ((rc = container_requests(k, at, &c, err)) < 0 || (rc = get_string(k, "restartPolicy", at, &restart, err)) < 0)
			break;
		if (restart && strcmp(restart, "Always") == 0) {
			if ((rc = res_combine(ret, &c, false, "spec.initContainers", err)) < 0 ||
			    (rc = res_combine(&sidecars, &c, false, "spec.initContainers", err)) < 0)
				break;
			qty_clear(&c);
		}
		if ((rc = res_combine(&c, &sidecars, false, "spec.initContainers", err)) == 0)
			rc = res_combine(&init, &c, true, "spec.initContainers", err);
	}
	if (rc == 0)
		rc = res_combine(ret, &init, true, "spec.initContainers", err);
	if (rc == 0 && (rc = qty_list_from_json(field(spec, "overhead"), "spec.overhead", &overhead, err)) == 0)
		rc = res_combine(ret, &overhead, false, "spec.overhead", err);
	if (rc == 0 && qty_set(ret, QTY_PODS, 1) < 0)
		rc = too_many_resources("spec", err);
	qty_clear(&c);
	qty_clear(&sidecars);
	qty_clear(&init);
	qty_clear(&overhead);
	return rc;
}

/* Constraints that could keep a pod off a new node, which spotpool does not model. */
static const char *unmodelled(const cJSON *spec)
{
	const cJSON *aff = field(spec, "affinity");
	if (cJSON_GetArraySize(field(field(aff, "podAffinity"), "requiredDuringSchedulingIgnoredDuringExecution")) > 0)
		return "required pod affinity";
	if (cJSON_GetArraySize(field(field(aff, "podAntiAffinity"), "requiredDuringSchedulingIgnoredDuringExecution")) > 0)
		return "required pod anti-affinity";
	const cJSON *c;
	cJSON_ArrayForEach(c, field(spec, "topologySpreadConstraints")) {
		const cJSON *when = field(c, "whenUnsatisfiable");
		if (!cJSON_IsString(when) || strcmp(when->valuestring, "ScheduleAnyway") != 0)
			return "topology spread (DoNotSchedule)";
	}
	return NULL;
}

static int copy_meta(const cJSON *meta, const char *key, char *out, size_t size, struct sp_error *err)
{
	const char *v;
	int rc = get_string(meta, key, "metadata", &v, err);
	if (rc == 0 && v && strlen(v) >= size)
		rc = sp_fail(err, SP_EINVAL, "metadata.%s: longer than %zu characters", key, size - 1);
	if (rc == 0)
		snprintf(out, size, "%s", v ? v : "");
	return rc;
}

int fit_pod_parse(const cJSON *pod, struct fit_pod *ret, struct sp_error *err)
{
	struct fit_pod p = {0};
	const cJSON *meta = field(pod, "metadata"), *spec = field(pod, "spec");
	int rc;
	if (!cJSON_IsObject(spec))
		return sp_fail(err, SP_EINVAL, "spec: missing");
	if ((rc = copy_meta(meta, "namespace", p.namespace, sizeof(p.namespace), err)) < 0 ||
	    (rc = copy_meta(meta, "name", p.name, sizeof(p.name), err)) < 0 ||
	    (rc = copy_meta(meta, "uid", p.uid, sizeof(p.uid), err)) < 0 ||
	    (rc = pod_requests(spec, &p.requests, err)) < 0 ||
	    (rc = parse_labels(field(spec, "nodeSelector"), "spec.nodeSelector", &p.selector, &p.n_selector, err)) < 0 ||
	    (rc = parse_node_affinity(spec, &p, err)) < 0 || (rc = parse_tolerations(spec, &p, err)) < 0) {
		fit_pod_clear(&p);
		return rc;
	}
	p.unmodelled = unmodelled(spec);
	*ret = p;
	return 0;
}

bool fit_pod_pending(const cJSON *pod)
{
	const cJSON *meta = field(pod, "metadata"), *spec = field(pod, "spec"), *status = field(pod, "status");
	if (field(spec, "nodeName") || field(meta, "deletionTimestamp"))
		return false;
	const cJSON *nominated = field(status, "nominatedNodeName");
	if (cJSON_IsString(nominated) && *nominated->valuestring)
		return false;
	const cJSON *c;
	cJSON_ArrayForEach(c, field(meta, "ownerReferences")) {
		const cJSON *kind = field(c, "kind");
		if (cJSON_IsString(kind) && (strcmp(kind->valuestring, "DaemonSet") == 0 || strcmp(kind->valuestring, "Node") == 0))
			return false;
	}
	cJSON_ArrayForEach(c, field(status, "conditions")) {
		const cJSON *type = field(c, "type"), *st = field(c, "status"), *reason = field(c, "reason");
		if (cJSON_IsString(type) && strcmp(type->valuestring, "PodScheduled") == 0)
			return cJSON_IsString(st) && strcmp(st->valuestring, "False") == 0 && cJSON_IsString(reason) &&
			       strcmp(reason->valuestring, "Unschedulable") == 0;
	}
	return false;
}

static void tolerations_free(struct fit_toleration *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(t[i].key);
		free(t[i].value);
	}
	free(t);
}

void fit_pod_clear(struct fit_pod *p)
{
	qty_clear(&p->requests);
	labels_free(p->selector, p->n_selector);
	for (size_t i = 0; i < p->n_terms; i++)
		term_free(&p->terms[i]);
	free(p->terms);
	tolerations_free(p->tolerations, p->n_tolerations);
	*p = (struct fit_pod){0};
}

/* ---- templates ---- */

void fit_template_clear(struct fit_template *t)
{
	qty_clear(&t->allocatable);
	*t = (struct fit_template){0};
}

/* The part of x between lo and hi, times rate / 10000, summed over TKE's tiers. */
static int64_t tiered(int64_t x, const int64_t *bounds, const int64_t *rates, size_t n)
{
	int64_t total = 0, lo = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t hi = bounds[i];
		if (x > lo)
			total += ((x < hi ? x : hi) - lo) * rates[i];
		lo = hi;
	}
	return total;
}

void fit_tke_allocatable(const struct fit_instance_type *it, struct qty_list *ret)
{
	/* CPU in millicores x 10000: 0.1 core for up to 4, then 2.5%, 1.25%, 0.5%. */
	static const int64_t cpu_bounds[] = {4000, 64000, 128000, INT64_MAX};
	static const int64_t cpu_rates[] = {0, 250, 125, 50};
	/* Memory in MiB x 10000: 25% of the first 4 GiB, 20% to 8, 10% to 16, 6% to 128, 2%. */
	static const int64_t mem_bounds[] = {4096, 8192, 16384, 131072, INT64_MAX};
	static const int64_t mem_rates[] = {2500, 2000, 1000, 600, 200};
	struct qty_list r = {0};
	int64_t cpu = it->cores * 1000, mem = it->memory_mib;
	int64_t cpu_reserve = 100 + (tiered(cpu, cpu_bounds, cpu_rates, LEN(cpu_rates)) + 9999) / 10000;
	/* In bytes, rounded up: the reserve in MiB x 10000 x 2^20 / 10000. */
	int64_t mem_reserve = (tiered(mem, mem_bounds, mem_rates, LEN(mem_rates)) * 1048576 + 9999) / 10000 +
			      FIT_EVICTION_MEMORY;
	qty_set(&r, QTY_CPU, cpu > cpu_reserve ? cpu - cpu_reserve : 0);
	qty_set(&r, QTY_MEMORY, mem * 1048576 > mem_reserve ? mem * 1048576 - mem_reserve : 0);
	qty_set(&r, QTY_PODS, it->pods);
	if (it->gpus > 0)
		qty_set(&r, QTY_GPU, it->gpus);
	if (it->disk_gib > 0)
		qty_set(&r, QTY_EPHEMERAL, it->disk_gib * 1073741824 / 100 * FIT_DISK_PERCENT);
	qty_clear(ret);
	*ret = r;
}

/* ---- fit ---- */

static const char *label_value(const struct fit_template *t, const char *key)
{
	for (size_t i = 0; t->node && i < t->node->n_labels; i++)
		if (strcmp(t->node->labels[i].key, key) == 0)
			return t->node->labels[i].value;
	return NULL;
}

static bool requirement_holds(const struct fit_template *t, const struct fit_requirement *r)
{
	const char *v = label_value(t, r->key);
	int64_t x;
	switch (r->op) {
	case FIT_OP_IN:
	case FIT_OP_NOT_IN: {
		bool in = false;
		for (size_t i = 0; v && !in && i < r->n_values; i++)
			in = strcmp(v, r->values[i]) == 0;
		return r->op == FIT_OP_IN ? in : !in;
	}
	case FIT_OP_EXISTS:
		return v != NULL;
	case FIT_OP_DOES_NOT_EXIST:
		return v == NULL;
	case FIT_OP_GT:
	case FIT_OP_LT:
		return v && qty_parse_int(v, &x) && (r->op == FIT_OP_GT ? x > r->number : x < r->number);
	}
	return false;
}

/* A term matches when it has requirements, no matchFields, and every one holds; *what
 * gets why not. */
static bool term_holds(const struct fit_template *t, const struct fit_term *term, const char **what)
{
	if (term->match_fields) {
		*what = "matchFields";
		return false;
	}
	if (term->n == 0) {
		*what = "an empty term";
		return false;
	}
	for (size_t i = 0; i < term->n; i++)
		if (!requirement_holds(t, &term->v[i])) {
			*what = term->v[i].key;
			return false;
		}
	return true;
}

static bool tolerates(const struct fit_toleration *tol, const struct tmpl_taint *taint)
{
	if (!tol->any_effect && tol->effect != taint->effect)
		return false;
	if (*tol->key && strcmp(tol->key, taint->key) != 0)
		return false;
	return tol->exists || strcmp(tol->value, taint->value) == 0;
}

enum fit_reason fit_check(const struct fit_template *t, const struct fit_pod *p, struct fit_why *ret_why)
{
	struct fit_why w = {.reason = FIT_OK};
	if (p->unmodelled) {
		w = (struct fit_why){FIT_NOT_MODELLED, p->unmodelled, 0, 0};
		goto out;
	}
	for (size_t i = 0; i < p->n_selector; i++) {
		const char *v = label_value(t, p->selector[i].key);
		if (!v || strcmp(v, p->selector[i].value) != 0) {
			w = (struct fit_why){FIT_SELECTOR, p->selector[i].key, 0, 0};
			goto out;
		}
	}
	if (p->affinity) {
		const char *first = "no terms", *what = NULL;
		bool any = false;
		for (size_t i = 0; !any && i < p->n_terms; i++) {
			any = term_holds(t, &p->terms[i], &what);
			if (i == 0)
				first = what;
		}
		if (!any) {
			w = (struct fit_why){FIT_AFFINITY, first, 0, 0};
			goto out;
		}
	}
	for (size_t i = 0; t->node && i < t->node->n_taints; i++) {
		const struct tmpl_taint *taint = &t->node->taints[i];
		bool ok = taint->effect == TMPL_PREFER_NO_SCHEDULE;
		for (size_t j = 0; !ok && j < p->n_tolerations; j++)
			ok = tolerates(&p->tolerations[j], taint);
		if (!ok) {
			w = (struct fit_why){FIT_TAINT, taint->key, 0, 0};
			goto out;
		}
	}
	for (size_t i = 0; i < p->requests.n; i++) {
		const struct qty_amount *a = &p->requests.v[i];
		int64_t have = qty_get(&t->allocatable, a->name);
		if (a->value > have) {
			w = (struct fit_why){FIT_TOO_BIG, a->name, a->value, have};
			goto out;
		}
	}
out:
	if (ret_why)
		*ret_why = w;
	return w.reason;
}

void fit_daemon_overhead(const struct fit_template *t, const struct fit_pod *const *daemon_pods, size_t n,
			 struct qty_list *ret)
{
	struct qty_list sum = {0};
	for (size_t i = 0; i < n; i++) {
		if (fit_check(t, daemon_pods[i], NULL) != FIT_OK)
			continue;
		for (size_t k = 0; k < t->allocatable.n; k++) {
			const char *name = t->allocatable.v[k].name;
			int64_t v = qty_get(&daemon_pods[i]->requests, name), have = qty_get(&sum, name);
			if (v > 0) /* at most t's names: QTY_MAX_RESOURCES */
				qty_set(&sum, name, v > INT64_MAX - have ? INT64_MAX : have + v);
		}
	}
	qty_clear(ret);
	*ret = sum;
}

const char *fit_reason_name(enum fit_reason r)
{
	static const char *const names[] = {[FIT_OK] = "Fits", [FIT_NOT_MODELLED] = "NotModelled",
					    [FIT_SELECTOR] = "NodeSelector", [FIT_AFFINITY] = "NodeAffinity",
					    [FIT_TAINT] = "Taint", [FIT_TOO_BIG] = "TooBig"};
	return (size_t)r < LEN(names) ? names[r] : "Unknown";
}

void fit_why_format(const struct fit_why *w, char *out, size_t size)
{
	static const struct {
		const char *before, *after;
	} words[] = {
		[FIT_OK] = {"fits", ""},
		[FIT_NOT_MODELLED] = {"has ", ", which spotpool does not model"},
		[FIT_SELECTOR] = {"nodeSelector ", " does not match the node's labels"},
		[FIT_AFFINITY] = {"required node affinity does not match the node (first term: ", ")"},
		[FIT_TAINT] = {"does not tolerate the node's taint ", ""},
	};
	const char *what = w->what ? w->what : "";
	const char *unit = strcmp(what, QTY_CPU) == 0 ? "m" : "";
	if (w->reason == FIT_TOO_BIG)
		snprintf(out, size, "needs %lld%s %s, the node has %lld%s", (long long)w->need, unit, what,
			 (long long)w->have, unit);
	else if ((size_t)w->reason < LEN(words))
		snprintf(out, size, "%s%s%s", words[w->reason].before, what, words[w->reason].after);
	else
		snprintf(out, size, "unknown reason %d", (int)w->reason);
}

/* ---- packing ---- */

struct pack_item {
	const struct fit_pod *pod;
	size_t index;
	int64_t gpu, cpu, memory;
};

static int cmp_i64_desc(int64_t a, int64_t b)
{
	return a > b ? -1 : a < b;
}

static int pack_cmp(const void *x, const void *y)
{
	const struct pack_item *a = x, *b = y;
	int c;
	if ((c = cmp_i64_desc(a->gpu, b->gpu)) || (c = cmp_i64_desc(a->cpu, b->cpu)) ||
	    (c = cmp_i64_desc(a->memory, b->memory)) || (c = strcmp(a->pod->namespace, b->pod->namespace)) ||
	    (c = strcmp(a->pod->name, b->pod->name)) || (c = strcmp(a->pod->uid, b->pod->uid)))
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Takes need from room (both over the template's resources) if it all fits. */
static bool take(int64_t *room, const int64_t *need, size_t d)
{
	for (size_t i = 0; i < d; i++)
		if (need[i] > room[i])
			return false;
	for (size_t i = 0; i < d; i++)
		room[i] -= need[i];
	return true;
}

size_t fit_pack(const struct fit_template *t, const struct fit_pod *const *pods, size_t n_pods,
		const struct qty_list *rooms, size_t n_rooms, size_t max_new, struct fit_place *ret_place)
{
	/* Only the template's resources count: a pod that fits it requests no other. */
	const size_t d = t->allocatable.n;
	struct pack_item *items = xcalloc(n_pods + 1, sizeof(*items));
	for (size_t i = 0; i < n_pods; i++)
		items[i] = (struct pack_item){pods[i], i, qty_get(&pods[i]->requests, QTY_GPU),
					      qty_get(&pods[i]->requests, QTY_CPU),
					      qty_get(&pods[i]->requests, QTY_MEMORY)};
	qsort(items, n_pods, sizeof(*items), pack_cmp);
	int64_t *free_room = xcalloc(n_rooms * d + 1, sizeof(int64_t));
	for (size_t r = 0; r < n_rooms; r++)
		for (size_t k = 0; k < d; k++)
			free_room[r * d + k] = qty_get(&rooms[r], t->allocatable.v[k].name);
	int64_t *fresh = NULL, *need = xcalloc(d + 1, sizeof(int64_t));
	size_t opened = 0;
	for (size_t i = 0; i < n_pods; i++) {
		struct fit_place *place = &ret_place[items[i].index];
		if (fit_check(t, items[i].pod, NULL) != FIT_OK) {
			*place = (struct fit_place){FIT_PLACE_NONE, 0};
			continue;
		}
		for (size_t k = 0; k < d; k++)
			need[k] = qty_get(&items[i].pod->requests, t->allocatable.v[k].name);
		size_t r = 0;
		while (r < n_rooms && !take(&free_room[r * d], need, d))
			r++;
		if (r < n_rooms) {
			*place = (struct fit_place){FIT_PLACE_ROOM, r};
			continue;
		}
		r = 0;
		while (r < opened && !take(&fresh[r * d], need, d))
			r++;
		if (r == opened && opened < max_new) {
			fresh = xrealloc(fresh, (opened + 1) * d * sizeof(int64_t) + 1);
			for (size_t k = 0; k < d; k++)
				fresh[opened * d + k] = t->allocatable.v[k].value;
			take(&fresh[opened * d], need, d);
			opened++;
		}
		*place = r < opened ? (struct fit_place){FIT_PLACE_NEW, r} : (struct fit_place){FIT_PLACE_NO_ROOM, 0};
	}
	free(items);
	free(free_room);
	free(fresh);
	free(need);
	return opened;
}

/* ---- pool choice ---- */

static int rank_cmp(const struct fit_template *a, const struct fit_template *b)
{
	int c;
	if ((c = -cmp_i64_desc(qty_get(&a->allocatable, QTY_GPU),
			       qty_get(&b->allocatable, QTY_GPU))) ||
	    (c = -cmp_i64_desc(qty_get(&a->allocatable, QTY_CPU),
			       qty_get(&b->allocatable, QTY_CPU))) ||
	    (c = strcmp(a->namespace, b->namespace)))
		return c;
	return strcmp(a->name, b->name);
}

int fit_choose_pool(const struct fit_pod *p, const struct fit_template *const *pools, size_t n,
		    struct fit_why *ret_why)
{
	int best = -1;
	for (size_t i = 0; i < n; i++) {
		struct fit_why w;
		if (fit_check(pools[i], p, &w) == FIT_OK && (best < 0 || rank_cmp(pools[i], pools[best]) < 0))
			best = (int)i;
		if (ret_why)
			ret_why[i] = w;
	}
	return best;
}
