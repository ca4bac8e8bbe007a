/* node: a Node's compact view and the match of instances to Nodes; see node.h. */
#include "node.h"

#include <stdio.h>
#include <string.h>

static const cJSON *field(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static const char *string_of(const cJSON *obj, const char *key)
{
	const cJSON *v = field(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Copies s into out when it fits, else leaves out empty. */
static void copy_fitting(char *out, size_t size, const char *s)
{
	if (s && strlen(s) < size)
		snprintf(out, size, "%s", s);
}

/* "qcloud:///900002/ins-abc" -> "ins-abc": the last path segment of a URI; none when the
 * value has no slash (not a provider URI) or ends with one. */
static void provider_instance(const char *provider_id, char *out, size_t size)
{
	const char *slash = provider_id ? strrchr(provider_id, '/') : NULL;
	if (slash && slash[1])
		copy_fitting(out, size, slash + 1);
}

static bool is_true(const char *s)
{
	return s && strcmp(s, "true") == 0;
}

static void read_conditions(const cJSON *status, struct node_view *v)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, field(status, "conditions")) {
		const char *type = string_of(c, "type"), *st = string_of(c, "status");
		if (!type || !st || strcmp(st, "True") != 0)
			continue;
		if (strcmp(type, "Ready") == 0) {
			v->ready = true;
			v->ready_since = sp_parse_time(string_of(c, "lastTransitionTime"));
		} else if (strcmp(type, NODE_CONDITION_TERMINATING) == 0) {
			const char *m = string_of(c, "message");
			static const char prefix[] = NODE_TERMINATING_PREFIX;
			if (m && strncmp(m, prefix, sizeof(prefix) - 1) == 0)
				v->terminating_at = sp_parse_time(m + sizeof(prefix) - 1);
		}
	}
}

bool node_view_from_json(const cJSON *node, struct node_view *ret)
{
	const cJSON *md = field(node, "metadata"), *spec = field(node, "spec"), *status = field(node, "status");
	const char *name = string_of(md, "name");
	if (!name || !*name || strlen(name) > NODE_NAME_MAX)
		return false;
	struct node_view v = {0};
	snprintf(v.name, sizeof(v.name), "%s", name);
	copy_fitting(v.uid, sizeof(v.uid), string_of(md, "uid"));
	provider_instance(string_of(spec, "providerID"), v.provider_id, sizeof(v.provider_id));
	const cJSON *labels = field(md, "labels");
	const char *label = string_of(labels, NODE_LABEL_INSTANCE_ID);
	copy_fitting(v.label_id, sizeof(v.label_id), label && *label ? label : string_of(labels, NODE_LABEL_TKE_INSTANCE_ID));
	const cJSON *a;
	cJSON_ArrayForEach(a, field(status, "addresses")) {
		const char *type = string_of(a, "type");
		if (type && strcmp(type, "InternalIP") == 0) {
			copy_fitting(v.internal_ip, sizeof(v.internal_ip), string_of(a, "address"));
			break;
		}
	}
	read_conditions(status, &v);
	v.unschedulable = cJSON_IsTrue(field(spec, "unschedulable"));
	const cJSON *t;
	cJSON_ArrayForEach(t, field(spec, "taints")) {
		const char *key = string_of(t, "key"), *effect = string_of(t, "effect");
		if (key && effect && strcmp(key, NODE_TAINT_DRAINING) == 0 && strcmp(effect, "NoSchedule") == 0)
			v.drain_taint = true;
	}
	const cJSON *ann = field(md, "annotations");
	v.drain_started = sp_parse_time(string_of(ann, NODE_ANNOTATION_DRAIN_STARTED));
	v.drain_given_up = sp_parse_time(string_of(ann, NODE_ANNOTATION_DRAIN_GIVEN_UP));
	v.was_unschedulable = is_true(string_of(ann, NODE_ANNOTATION_WAS_UNSCHEDULABLE));
	v.scale_down_disabled = is_true(string_of(ann, NODE_ANNOTATION_SCALE_DOWN_DISABLED));
	*ret = v;
	return true;
}

const char *node_instance_id(const struct node_view *v)
{
	return *v->provider_id ? v->provider_id : v->label_id;
}

/* The first Node not taken yet whose ID (by) is id, or -1. */
static int find_by_id(const struct node_view *nodes, size_t n, const bool *taken, const char *id, enum node_by by)
{
	for (size_t j = 0; j < n; j++) {
		const char *have = by == NODE_BY_PROVIDER_ID ? nodes[j].provider_id : nodes[j].label_id;
		if (!taken[j] && *have && strcmp(have, id) == 0)
			return (int)j;
	}
	return -1;
}

/* The one Node declaring no instance ID whose InternalIP is ip; -1 when none or when two
 * share it. */
static int find_by_ip(const struct node_view *nodes, size_t n, const bool *taken, const char *ip)
{
	int found = -1;
	size_t same = 0;
	for (size_t j = 0; j < n; j++)
		if (!*node_instance_id(&nodes[j]) && strcmp(nodes[j].internal_ip, ip) == 0) {
			same++;
			found = (int)j;
		}
	return same == 1 && !taken[found] ? found : -1;
}

void node_match(const struct node_view *nodes, size_t n_nodes, const struct node_want *want, size_t n_want,
		int *ret_index, enum node_by *ret_by)
{
	bool *taken = xcalloc(n_nodes ? n_nodes : 1, sizeof(*taken));
	for (size_t i = 0; i < n_want; i++) {
		ret_index[i] = -1;
		ret_by[i] = NODE_BY_NONE;
	}
	/* Every ID first, so that no Node an ID claims goes to another instance by its IP. */
	static const enum node_by by_id[] = {NODE_BY_PROVIDER_ID, NODE_BY_LABEL};
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < n_want; i++) {
			if (ret_index[i] >= 0 || !want[i].id || !*want[i].id)
				continue;
			int j = find_by_id(nodes, n_nodes, taken, want[i].id, by_id[k]);
			if (j >= 0) {
				taken[j] = true;
				ret_index[i] = j;
				ret_by[i] = by_id[k];
			}
		}
	for (size_t i = 0; i < n_want; i++) {
		if (ret_index[i] >= 0 || !want[i].ip || !*want[i].ip)
			continue;
		int j = find_by_ip(nodes, n_nodes, taken, want[i].ip);
		if (j >= 0) {
			taken[j] = true;
			ret_index[i] = j;
			ret_by[i] = NODE_BY_IP;
		}
	}
	free(taken);
}
