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
		if (!type || !st)
			continue;
		if (strcmp(type, "Ready") == 0 && strcmp(st, "Unknown") == 0) {
			v->ready_unknown = true;
			continue;
		}
		if (strcmp(st, "True") != 0)
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
	v.created = sp_parse_time(string_of(md, "creationTimestamp"));
	provider_instance(string_of(spec, "providerID"), v.provider_id, sizeof(v.provider_id));
	const cJSON *labels = field(md, "labels");
	const char *label = string_of(labels, NODE_LABEL_INSTANCE_ID);
	copy_fitting(v.label_id, sizeof(v.label_id), label && *label ? label : string_of(labels, NODE_LABEL_TKE_INSTANCE_ID));
	const cJSON *a;
	cJSON_ArrayForEach(a, field(status, "addresses")) {
		const char *type = string_of(a, "type");
		/* The first IPv4 one, else the first: the cloud reports an instance's private
		 * IPv4 address, and a dual-stack Node may list its IPv6 one first. */
		if (type && strcmp(type, "InternalIP") == 0 && (!*v.internal_ip || strchr(v.internal_ip, ':')))
			copy_fitting(v.internal_ip, sizeof(v.internal_ip), string_of(a, "address"));
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

void node_refusals_clear(struct node_refusals *r)
{
	free(r->v);
	*r = (struct node_refusals){0};
}

/* The wanted instances by a key (an ID or an IP), sorted for lookups; equal keys in
 * want's order. */
struct slot {
	const char *key;
	size_t i;
};

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* The first slot whose key is key, or NULL. */
static const struct slot *first_slot(const struct slot *v, size_t n, const char *key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v[mid].key, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && strcmp(v[lo].key, key) == 0 ? &v[lo] : NULL;
}

/* A Node's claims: up to CLAIMS_KEPT wanted instances (n counts them all). */
#define CLAIMS_KEPT 2
struct claim {
	size_t want[CLAIMS_KEPT];
	enum node_by by[CLAIMS_KEPT];
	size_t n;
};

static void claim_add(struct claim *c, size_t want, enum node_by by)
{
	if (c->n < CLAIMS_KEPT) {
		c->want[c->n] = want;
		c->by[c->n] = by;
	}
	c->n++;
}

static void refuse(struct node_refusals *r, const struct node_view *node, const char *instance, bool conflict)
{
	if (!r)
		return;
	r->v = xrealloc(r->v, (r->n + 1) * sizeof(*r->v));
	struct node_refusal *x = &r->v[r->n++];
	*x = (struct node_refusal){.conflict = conflict};
	snprintf(x->instance, sizeof(x->instance), "%s", instance);
	snprintf(x->node, sizeof(x->node), "%s", node->name);
	snprintf(x->ip, sizeof(x->ip), "%s", node->internal_ip);
}

static int cmp_refusal(const void *a, const void *b)
{
	const struct node_refusal *x = a, *y = b;
	int c = strcmp(x->instance, y->instance);
	return c ? c : strcmp(x->node, y->node);
}

/* The keys a Node is looked up by, each sorted: declared IDs, the InternalIPs of observed
 * instances, the recorded Node names of recorded ones. */
struct keys {
	struct slot *ids, *ips, *names;
	size_t n_ids, n_ips, n_names;
};

/* What Node v, declaring no ID, claims by its address: the recorded instance that
 * recorded its name and has its IP, and the observed ones of its IP, but not those
 * launched after it was created while no kubelet reports it, when it has a recorded one. */
static void address_claims(const struct node_view *v, const struct node_want *want, const struct keys *k,
			   struct claim *c)
{
	bool recorded = false;
	const struct slot *s = first_slot(k->names, k->n_names, v->name);
	for (; s && s < k->names + k->n_names && strcmp(s->key, v->name) == 0; s++)
		if (strcmp(want[s->i].ip, v->internal_ip) == 0) {
			claim_add(c, s->i, NODE_BY_RECORD);
			recorded = true;
		}
	s = first_slot(k->ips, k->n_ips, v->internal_ip);
	for (; s && s < k->ips + k->n_ips && strcmp(s->key, v->internal_ip) == 0; s++)
		if (!(recorded && v->ready_unknown && v->created && want[s->i].launched > v->created))
			claim_add(c, s->i, NODE_BY_IP);
}

/* What Node v claims, into c; the IDs it declares with another InternalIP are refused. */
static void claims_of(const struct node_view *v, const struct node_want *want, const struct keys *k, struct claim *c,
		      struct node_refusals *refused)
{
	const char *declared[] = {v->provider_id, v->label_id};
	static const enum node_by by[] = {NODE_BY_PROVIDER_ID, NODE_BY_LABEL};
	bool declares = false;
	for (size_t j = 0; j < 2; j++) {
		if (!*declared[j] || (j == 1 && strcmp(declared[1], declared[0]) == 0))
			continue;
		declares = true;
		const struct slot *s = first_slot(k->ids, k->n_ids, declared[j]);
		if (s && strcmp(want[s->i].ip, v->internal_ip) == 0)
			claim_add(c, s->i, by[j]);
		else if (s)
			refuse(refused, v, want[s->i].id, false);
	}
	if (!declares && *v->internal_ip)
		address_claims(v, want, k, c);
}

void node_match(const struct node_view *nodes, size_t n_nodes, const struct node_want *want, size_t n_want,
		int *ret_index, enum node_by *ret_by, struct node_refusals *ret_refused)
{
	/* Instances without a known private IP have no Node: they are not looked for. */
	size_t room = n_want ? n_want : 1;
	struct keys keys = {.ids = xcalloc(room, sizeof(*keys.ids)), .ips = xcalloc(room, sizeof(*keys.ips)),
			    .names = xcalloc(room, sizeof(*keys.names))};
	for (size_t i = 0; i < n_want; i++) {
		ret_index[i] = -1;
		ret_by[i] = NODE_BY_NONE;
		if (!want[i].ip || !*want[i].ip)
			continue;
		if (want[i].id && *want[i].id)
			keys.ids[keys.n_ids++] = (struct slot){.key = want[i].id, .i = i};
		if (!want[i].recorded)
			keys.ips[keys.n_ips++] = (struct slot){.key = want[i].ip, .i = i};
		else if (want[i].node && *want[i].node)
			keys.names[keys.n_names++] = (struct slot){.key = want[i].node, .i = i};
	}
	qsort(keys.ids, keys.n_ids, sizeof(*keys.ids), cmp_slot);
	qsort(keys.ips, keys.n_ips, sizeof(*keys.ips), cmp_slot);
	qsort(keys.names, keys.n_names, sizeof(*keys.names), cmp_slot);
	struct claim *claims = xcalloc(n_nodes ? n_nodes : 1, sizeof(*claims));
	size_t *claimants = xcalloc(n_want ? n_want : 1, sizeof(*claimants));
	struct node_refusals refused = {0};
	for (size_t j = 0; j < n_nodes; j++) {
		claims_of(&nodes[j], want, &keys, &claims[j], ret_refused ? &refused : NULL);
		for (size_t c = 0; c < claims[j].n && c < CLAIMS_KEPT; c++)
			claimants[claims[j].want[c]]++;
	}
	/* A claim holds when it is its instance's only one and its Node's only one. */
	for (size_t j = 0; j < n_nodes; j++)
		for (size_t k = 0; k < claims[j].n && k < CLAIMS_KEPT; k++) {
			size_t i = claims[j].want[k];
			if (claimants[i] == 1 && claims[j].n == 1) {
				ret_index[i] = (int)j;
				ret_by[i] = claims[j].by[k];
			} else {
				refuse(ret_refused ? &refused : NULL, &nodes[j], want[i].id ? want[i].id : "", true);
			}
		}
	if (refused.n)
		qsort(refused.v, refused.n, sizeof(*refused.v), cmp_refusal);
	if (ret_refused)
		*ret_refused = refused;
	free(claimants);
	free(claims);
	free(keys.names);
	free(keys.ips);
	free(keys.ids);
}

enum node_address node_address_judge(const struct node_ref *r, const struct node_view *v, int64_t now)
{
	if (!v || strcmp(v->uid, r->uid) != 0)
		return NODE_ADDRESS_GONE;
	if (*node_instance_id(v) || strcmp(v->internal_ip, r->ip) != 0)
		return NODE_ADDRESS_CHANGED;
	if (v->ready_unknown)
		return NODE_ADDRESS_DELETE;
	return now < r->since + NODE_ADDRESS_WAIT_SECONDS ? NODE_ADDRESS_WAIT : NODE_ADDRESS_REPORTED;
}
