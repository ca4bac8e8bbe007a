/* evict: a node's drain on the apiserver; see evict.h and docs/how-it-works.md
 * ("Draining"). */
#include "evict.h"

#include <stdio.h>
#include <string.h>

#define MERGE_PATCH "application/merge-patch+json"

static const cJSON *member(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static const char *annotation(const cJSON *node, const char *key)
{
	const cJSON *v = member(member(member(node, "metadata"), "annotations"), key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is_drain_taint(const cJSON *taint)
{
	const cJSON *key = member(taint, "key");
	return cJSON_IsString(key) && strcmp(key->valuestring, NODE_TAINT_DRAINING) == 0;
}

/* The node's taints without ours, as a new array; *ret_had: ours was there. */
static cJSON *other_taints(const cJSON *node, bool *ret_had)
{
	cJSON *out = cJSON_CreateArray();
	const cJSON *t;
	*ret_had = false;
	cJSON_ArrayForEach(t, member(member(node, "spec"), "taints")) {
		if (is_drain_taint(t))
			*ret_had = true;
		else
			cJSON_AddItemToArray(out, cJSON_Duplicate(t, true));
	}
	return out;
}

/* What to write on node, or NULL when nothing needs writing. */
typedef cJSON *(*node_change)(const cJSON *node, int64_t now);

static const char *string_member(const cJSON *obj, const char *key)
{
	const cJSON *v = member(obj, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

/* {"metadata": {"uid": <the node's>, "resourceVersion": <the node's>, "annotations": {}},
 * "spec": {"taints": taints}}: the patch fails with a conflict (409) if the node changed
 * since it was read, a new Node of that name included, so the taints written replace only
 * what was read; and the apiserver refuses to change a uid (422). */
static cJSON *guarded_patch(const cJSON *node, cJSON *taints, cJSON **ret_annotations, cJSON **ret_spec)
{
	const cJSON *meta = member(node, "metadata");
	cJSON *patch = cJSON_CreateObject(), *md = cJSON_AddObjectToObject(patch, "metadata");
	cJSON_AddStringToObject(md, "uid", string_member(meta, "uid"));
	cJSON_AddStringToObject(md, "resourceVersion", string_member(meta, "resourceVersion"));
	*ret_annotations = cJSON_AddObjectToObject(md, "annotations");
	*ret_spec = cJSON_AddObjectToObject(patch, "spec");
	cJSON_AddItemToObject(*ret_spec, "taints", taints);
	return patch;
}

static cJSON *start_change(const cJSON *node, int64_t now)
{
	bool had;
	cJSON *taints = other_taints(node, &had);
	bool cordoned = cJSON_IsTrue(member(member(node, "spec"), "unschedulable"));
	const char *started = annotation(node, NODE_ANNOTATION_DRAIN_STARTED);
	const char *was = annotation(node, NODE_ANNOTATION_WAS_UNSCHEDULABLE);
	if (had && cordoned && started && was) {
		cJSON_Delete(taints);
		return NULL;
	}
	cJSON *taint = cJSON_CreateObject();
	cJSON_AddStringToObject(taint, "key", NODE_TAINT_DRAINING);
	cJSON_AddStringToObject(taint, "effect", DRAIN_TAINT_EFFECT);
	cJSON_AddItemToArray(taints, taint);
	cJSON *annotations, *spec, *patch = guarded_patch(node, taints, &annotations, &spec);
	cJSON_AddBoolToObject(spec, "unschedulable", true);
	char at[32];
	sp_format_time(now, at);
	/* Already started (a start repeated after a crash): the first start's record stays,
	 * and the node, cordoned by that start, is not taken for cordoned before. */
	cJSON_AddStringToObject(annotations, NODE_ANNOTATION_DRAIN_STARTED, started ? started : at);
	cJSON_AddStringToObject(annotations, NODE_ANNOTATION_WAS_UNSCHEDULABLE,
				was ? was : cordoned ? "true" : "false");
	return patch;
}

/* now > 0: the drain was given up then (NODE_ANNOTATION_DRAIN_GIVEN_UP). */
static cJSON *undo_change(const cJSON *node, int64_t now)
{
	bool had;
	cJSON *taints = other_taints(node, &had);
	const char *started = annotation(node, NODE_ANNOTATION_DRAIN_STARTED);
	const char *was = annotation(node, NODE_ANNOTATION_WAS_UNSCHEDULABLE);
	if (!had && !started && !was) {
		cJSON_Delete(taints);
		return NULL;
	}
	cJSON *annotations, *spec, *patch = guarded_patch(node, taints, &annotations, &spec);
	cJSON_AddNullToObject(annotations, NODE_ANNOTATION_DRAIN_STARTED);
	cJSON_AddNullToObject(annotations, NODE_ANNOTATION_WAS_UNSCHEDULABLE);
	if (now > 0) {
		char at[32];
		sp_format_time(now, at);
		cJSON_AddStringToObject(annotations, NODE_ANNOTATION_DRAIN_GIVEN_UP, at);
	}
	if (started && !(was && strcmp(was, "true") == 0))
		cJSON_AddBoolToObject(spec, "unschedulable", false);
	return patch;
}

/* Reads node, and merge-patches what change makes of it; a conflict reads it again. A
 * node still changing after EVICT_NODE_ATTEMPTS is SP_ETRANSIENT: its conflict is the
 * Node's, not the pool's (a pass stops at once on a pool's conflict). A node of that name
 * whose metadata.uid is not uid is another Node (the name reused): SP_ENOTFOUND, nothing
 * written. */
static int change_node(const struct kube_api *api, const char *node, const char *uid, node_change change,
		       int64_t now, struct sp_error *err)
{
	char *path = xasprintf("/api/v1/nodes/%s", node);
	int r = 0;
	for (int attempt = 1; attempt <= EVICT_NODE_ATTEMPTS; attempt++) {
		cJSON *obj = NULL;
		if ((r = kube_api_get(api, path, &obj, err)) < 0)
			break;
		const char *got = string_member(member(obj, "metadata"), "uid");
		if (strcmp(got, uid) != 0) {
			r = sp_fail(err, SP_ENOTFOUND, "metadata.uid is %s, not %s: the name is another Node's now",
				    *got ? got : "(none)", uid);
			cJSON_Delete(obj);
			break;
		}
		cJSON *patch = change(obj, now);
		cJSON_Delete(obj);
		if (!patch)
			break;
		r = api->request(api->ctx, "PATCH", path, MERGE_PATCH, patch, NULL, err);
		cJSON_Delete(patch);
		if (r != SP_ECONFLICT)
			break;
	}
	free(path);
	if (r == SP_ECONFLICT) {
		r = SP_ETRANSIENT;
		if (err)
			err->code = r;
	}
	if (r < 0)
		sp_error_prefix(err, "node %s: ", node);
	return r;
}

int evict_start(const struct kube_api *api, const char *node, const char *uid, int64_t now, struct sp_error *err)
{
	return change_node(api, node, uid, start_change, now, err);
}

int evict_undo(const struct kube_api *api, const char *node, const char *uid, int64_t gave_up_at,
	       struct sp_error *err)
{
	int r = change_node(api, node, uid, undo_change, gave_up_at, err);
	return r == SP_ENOTFOUND ? 0 : r;
}

/* Appends the classified items of one page to *pods. */
static int add_page(const cJSON *page, struct drain_pod **pods, size_t *n, struct sp_error *err)
{
	const cJSON *items = member(page, "items"), *item;
	if (!cJSON_IsArray(items))
		return sp_fail(err, SP_EPROTO, "a pod list without items");
	/* Finished pods neither hold a drain nor count against the cap: the field selector
	 * leaves them out, and any the apiserver still sends are dropped here. */
	size_t more = (size_t)cJSON_GetArraySize(items), room = *n + more < EVICT_PODS_MAX ? *n + more : EVICT_PODS_MAX;
	*pods = xrealloc(*pods, (room + 1) * sizeof(**pods));
	cJSON_ArrayForEach(item, items) {
		struct drain_pod pod;
		int r = drain_pod_classify(item, &pod, err);
		if (r < 0)
			return r;
		if (pod.cls == DRAIN_POD_FINISHED)
			continue;
		if (*n == EVICT_PODS_MAX)
			return sp_fail(err, SP_ETOOBIG, "more than %d pods not finished", EVICT_PODS_MAX);
		(*pods)[(*n)++] = pod;
	}
	return 0;
}

int evict_list_pods(const struct kube_api *api, const char *node, struct drain_pod **ret, size_t *ret_n,
		    struct sp_error *err)
{
	char *selector_value = xasprintf("spec.nodeName=%s,status.phase!=Succeeded,status.phase!=Failed", node);
	char *selector = kube_escape(selector_value);
	char *cont = NULL;
	struct drain_pod *pods = NULL;
	size_t n = 0;
	int r = 0, pages = 0;
	do {
		char *escaped = cont ? kube_escape(cont) : NULL;
		char *path = xasprintf("/api/v1/pods?fieldSelector=%s&limit=%d%s%s", selector, EVICT_PAGE_LIMIT,
				       escaped ? "&continue=" : "", escaped ? escaped : "");
		cJSON *page = NULL;
		free(escaped);
		free(cont);
		cont = NULL;
		if (++pages > EVICT_PAGES_MAX)
			r = sp_fail(err, SP_ETOOBIG, "more than %d pages", EVICT_PAGES_MAX);
		else if ((r = kube_api_get(api, path, &page, err)) == 0 && (r = add_page(page, &pods, &n, err)) == 0) {
			const cJSON *c = member(member(page, "metadata"), "continue");
			if (cJSON_IsString(c) && *c->valuestring)
				cont = xstrdup(c->valuestring);
		}
		cJSON_Delete(page);
		free(path);
	} while (r == 0 && cont);
	free(selector);
	free(selector_value);
	if (r < 0) {
		free(pods);
		sp_error_prefix(err, "listing the pods of node %s: ", node);
		return r;
	}
	*ret = pods;
	*ret_n = n;
	return 0;
}

int evict_pod(const struct kube_api *api, const char *namespace, const char *name, struct sp_error *err)
{
	char *path = xasprintf("/api/v1/namespaces/%s/pods/%s/eviction", namespace, name);
	cJSON *body = cJSON_CreateObject(), *md;
	cJSON_AddStringToObject(body, "apiVersion", "policy/v1");
	cJSON_AddStringToObject(body, "kind", "Eviction");
	md = cJSON_AddObjectToObject(body, "metadata");
	cJSON_AddStringToObject(md, "name", name);
	cJSON_AddStringToObject(md, "namespace", namespace);
	struct sp_error e = {0};
	int r = api->request(api->ctx, "POST", path, "application/json", body, NULL, &e);
	cJSON_Delete(body);
	free(path);
	if (r == 0 || r == SP_ENOTFOUND)
		return 0;
	if (r == SP_ETHROTTLED)
		sp_fail(err, r, "evicting pod %s/%s: a PodDisruptionBudget refuses it now; retry later (%s)",
			namespace, name, e.msg);
	else if (r == SP_ECONFLICT)
		sp_fail(err, r, "evicting pod %s/%s: a conflict; retry (%s)", namespace, name, e.msg);
	else
		sp_fail(err, r, "evicting pod %s/%s: %s", namespace, name, e.msg);
	if (err)
		snprintf(err->reason, sizeof(err->reason), "%s", e.reason);
	return r;
}
