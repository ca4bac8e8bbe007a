/* podreq: a pod's requests and placement constraints, read as the scheduler reads
 * them (podreq.h). Pure. */
#include "podreq.h"

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

/* A string member, NULL when absent; fails on another type or past PODREQ_MAX_STRING. */
static int get_string(const cJSON *obj, const char *key, const char *where, const char **ret, struct sp_error *err)
{
	const cJSON *v = field(obj, key);
	*ret = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return sp_fail(err, SP_EINVAL, "%s.%s: not a string", where, key);
	if (strlen(v->valuestring) > PODREQ_MAX_STRING)
		return sp_fail(err, SP_EINVAL, "%s.%s: longer than %d characters", where, key, PODREQ_MAX_STRING);
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

/* A map of strings (nodeSelector) of at most PODREQ_MAX_LABELS entries. */
static int parse_labels(const cJSON *map, const char *where, struct tmpl_label **ret, size_t *ret_n,
			struct sp_error *err)
{
	if (!map)
		return 0;
	if (!cJSON_IsObject(map))
		return sp_fail(err, SP_EINVAL, "%s: not an object", where);
	int n = cJSON_GetArraySize(map);
	if (n > PODREQ_MAX_LABELS)
		return sp_fail(err, SP_ETOOBIG, "%s: more than %d entries", where, PODREQ_MAX_LABELS);
	struct tmpl_label *l = xcalloc((size_t)n + 1, sizeof(*l));
	size_t k = 0;
	for (const cJSON *c = map->child; c; c = c->next, k++) {
		if (!cJSON_IsString(c) || strlen(c->string) > PODREQ_MAX_STRING ||
		    strlen(c->valuestring) > PODREQ_MAX_STRING) {
			labels_free(l, k);
			return sp_fail(err, SP_EINVAL, "%s.%.*s: not a string of at most %d characters", where,
				       PODREQ_MAX_STRING, c->string, PODREQ_MAX_STRING);
		}
		l[k] = (struct tmpl_label){xstrdup(c->string), xstrdup(c->valuestring)};
	}
	*ret = l;
	*ret_n = k;
	return 0;
}

static void term_free(struct podreq_term *t)
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
	[PODREQ_OP_IN] = "In", [PODREQ_OP_NOT_IN] = "NotIn", [PODREQ_OP_EXISTS] = "Exists",
	[PODREQ_OP_DOES_NOT_EXIST] = "DoesNotExist", [PODREQ_OP_GT] = "Gt", [PODREQ_OP_LT] = "Lt",
};

static int parse_requirement(const cJSON *e, const char *where, size_t *values_left, struct podreq_requirement *r,
			     struct sp_error *err)
{
	const char *key, *op;
	const cJSON *values;
	int rc;
	if (!cJSON_IsObject(e))
		return sp_fail(err, SP_EINVAL, "%s: not an object", where);
	if ((rc = get_string(e, "key", where, &key, err)) < 0 || (rc = get_string(e, "operator", where, &op, err)) < 0 ||
	    (rc = get_array(e, "values", where, PODREQ_MAX_VALUES, &values, err)) < 0)
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
		return sp_fail(err, SP_ETOOBIG, "%s.values: more than %d values in all terms", where, PODREQ_MAX_VALUES);
	*values_left -= n;
	*r = (struct podreq_requirement){.key = xstrdup(key), .op = (enum podreq_op)o, .values = xcalloc(n + 1, sizeof(char *))};
	for (const cJSON *v = values ? values->child : NULL; v; v = v->next) {
		if (!cJSON_IsString(v) || strlen(v->valuestring) > PODREQ_MAX_STRING)
			return sp_fail(err, SP_EINVAL, "%s.values[%zu]: not a string of at most %d characters", where,
				       r->n_values, PODREQ_MAX_STRING);
		r->values[r->n_values++] = xstrdup(v->valuestring);
	}
	if ((r->op == PODREQ_OP_GT || r->op == PODREQ_OP_LT) && (r->n_values != 1 || !qty_parse_int(r->values[0], &r->number)))
		return sp_fail(err, SP_EINVAL, "%s.values: %s takes one integer", where, op);
	return 0;
}

static int parse_node_affinity(const cJSON *spec, struct podreq *p, struct sp_error *err)
{
	static const char where[] =
		"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
	const cJSON *req = field(field(field(spec, "affinity"), "nodeAffinity"),
				 "requiredDuringSchedulingIgnoredDuringExecution");
	const cJSON *terms;
	int rc;
	if (!req)
		return 0;
	if ((rc = get_array(req, "nodeSelectorTerms", where, PODREQ_MAX_TERMS, &terms, err)) < 0)
		return rc;
	p->affinity = true;
	p->terms = xcalloc((size_t)cJSON_GetArraySize(terms) + 1, sizeof(*p->terms));
	size_t values_left = PODREQ_MAX_VALUES;
	for (const cJSON *t = terms ? terms->child : NULL; t; t = t->next) {
		char at[160], at_e[200];
		snprintf(at, sizeof(at), "%s.nodeSelectorTerms[%zu]", where, p->n_terms);
		struct podreq_term *term = &p->terms[p->n_terms++];
		const cJSON *exprs, *fields;
		if (!cJSON_IsObject(t))
			return sp_fail(err, SP_EINVAL, "%s: not an object", at);
		if ((rc = get_array(t, "matchExpressions", at, PODREQ_MAX_EXPRESSIONS, &exprs, err)) < 0 ||
		    (rc = get_array(t, "matchFields", at, PODREQ_MAX_EXPRESSIONS, &fields, err)) < 0)
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

static int parse_tolerations(const cJSON *spec, struct podreq *p, struct sp_error *err)
{
	const cJSON *list;
	int rc = get_array(spec, "tolerations", "spec", PODREQ_MAX_TOLERATIONS, &list, err);
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
		struct podreq_toleration *tol = &p->tolerations[p->n_tolerations++];
		*tol = (struct podreq_toleration){dup_or_empty(key), dup_or_empty(value), op && strcmp(op, "Exists") == 0,
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
	if ((rc = get_array(spec, "containers", "spec", PODREQ_MAX_CONTAINERS, &containers, err)) < 0 ||
	    (rc = get_array(spec, "initContainers", "spec", PODREQ_MAX_CONTAINERS, &inits, err)) < 0)
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

int podreq_parse(const cJSON *pod, struct podreq *ret, struct sp_error *err)
{
	struct podreq p = {0};
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
		podreq_clear(&p);
		return rc;
	}
	p.unmodelled = unmodelled(spec);
	*ret = p;
	return 0;
}

bool podreq_pending(const cJSON *pod)
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

static void tolerations_free(struct podreq_toleration *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(t[i].key);
		free(t[i].value);
	}
	free(t);
}

void podreq_clear(struct podreq *p)
{
	qty_clear(&p->requests);
	labels_free(p->selector, p->n_selector);
	for (size_t i = 0; i < p->n_terms; i++)
		term_free(&p->terms[i]);
	free(p->terms);
	tolerations_free(p->tolerations, p->n_tolerations);
	*p = (struct podreq){0};
}
