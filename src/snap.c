/* snap: compact, sorted instance snapshot; see snap.h. */
#include "snap.h"

#include <stdio.h>
#include <string.h>

enum field {
	F_OWNER, F_ID, F_STATE, F_ZONE, F_TYPE, F_PRIVATE_IP, F_PUBLIC_IP, F_CREATED_TIME, F_LAUNCH, F_CLUSTER,
	N_FIELDS
};

struct rec {
	uint32_t at[N_FIELDS];  /* offsets into text; 0 is "" */
	int64_t created;
};

struct snap {
	struct rec *recs;
	size_t n, cap;
	char *text;             /* distinct strings, each NUL-terminated; text[0] == '\0' */
	size_t text_len, text_cap;
	uint32_t *index;        /* open addressing over text offsets (0: free), while adding */
	size_t index_n, index_cap;
};

struct snap *snap_new(void)
{
	struct snap *s = xcalloc(1, sizeof(*s));
	s->text_cap = 256;
	s->text = xcalloc(1, s->text_cap);
	s->text_len = 1;
	return s;
}

void snap_free(struct snap *s)
{
	if (!s)
		return;
	free(s->recs);
	free(s->text);
	free(s->index);
	free(s);
}

static uint32_t hash(const char *str)
{
	uint32_t h = 2166136261u;
	for (; *str; str++)
		h = (h ^ (unsigned char)*str) * 16777619u;
	return h;
}

static uint32_t *slot_of(uint32_t *index, size_t cap, const char *text, const char *str)
{
	size_t i = hash(str) & (cap - 1);
	while (index[i] && strcmp(text + index[i], str) != 0)
		i = (i + 1) & (cap - 1);
	return &index[i];
}

/* The offset of str in text, added if new. */
static uint32_t intern(struct snap *s, const char *str)
{
	if (!*str)
		return 0;
	if (2 * (s->index_n + 1) > s->index_cap) {
		size_t cap = s->index_cap ? 2 * s->index_cap : 256;
		uint32_t *index = xcalloc(cap, sizeof(*index));
		for (size_t i = 0; i < s->index_cap; i++)
			if (s->index[i])
				*slot_of(index, cap, s->text, s->text + s->index[i]) = s->index[i];
		free(s->index);
		s->index = index;
		s->index_cap = cap;
	}
	uint32_t *slot = slot_of(s->index, s->index_cap, s->text, str);
	if (*slot)
		return *slot;
	size_t len = strlen(str) + 1;
	while (s->text_len + len > s->text_cap) {
		s->text_cap *= 2;
		s->text = xrealloc(s->text, s->text_cap);
	}
	memcpy(s->text + s->text_len, str, len);
	*slot = (uint32_t)s->text_len;
	s->text_len += len;
	s->index_n++;
	return *slot;
}

void snap_add(struct snap *s, const struct pool_instance *inst)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->recs = xrealloc(s->recs, s->cap * sizeof(*s->recs));
	}
	struct rec *r = &s->recs[s->n++];
	const char *value[N_FIELDS] = {
		[F_OWNER] = inst->pool_tag, [F_ID] = inst->id, [F_STATE] = inst->state, [F_ZONE] = inst->zone,
		[F_TYPE] = inst->instance_type, [F_PRIVATE_IP] = inst->private_ip, [F_PUBLIC_IP] = inst->public_ip,
		[F_CREATED_TIME] = inst->created_time, [F_LAUNCH] = inst->launch_tag, [F_CLUSTER] = inst->cluster_tag,
	};
	for (int f = 0; f < N_FIELDS; f++)
		r->at[f] = intern(s, value[f]);
	r->created = inst->created;
}

static const char *str(const struct snap *s, const struct rec *r, enum field f)
{
	return s->text + r->at[f];
}

static int cmp_rec(const void *a, const void *b, void *text)
{
	const struct rec *x = a, *y = b;
	const char *t = text;
	int c = strcmp(t + x->at[F_OWNER], t + y->at[F_OWNER]);
	return c ? c : strcmp(t + x->at[F_ID], t + y->at[F_ID]);
}

void snap_seal(struct snap *s)
{
	free(s->index);
	s->index = NULL;
	s->index_n = s->index_cap = 0;
	/* Kept for as long as the next listing takes: no slack. */
	s->text = xrealloc(s->text, s->text_len);
	s->text_cap = s->text_len;
	if (s->n) {
		s->recs = xrealloc(s->recs, s->n * sizeof(*s->recs));
		s->cap = s->n;
		qsort_r(s->recs, s->n, sizeof(*s->recs), cmp_rec, s->text);
	}
}

size_t snap_count(const struct snap *s)
{
	return s ? s->n : 0;
}

size_t snap_bytes(const struct snap *s)
{
	return s ? sizeof(*s) + s->cap * sizeof(*s->recs) + s->text_cap + s->index_cap * sizeof(*s->index) : 0;
}

static void expand(const struct snap *s, const struct rec *r, struct pool_instance *out)
{
	*out = (struct pool_instance){.created = r->created};
	snprintf(out->id, sizeof(out->id), "%s", str(s, r, F_ID));
	snprintf(out->state, sizeof(out->state), "%s", str(s, r, F_STATE));
	snprintf(out->zone, sizeof(out->zone), "%s", str(s, r, F_ZONE));
	snprintf(out->instance_type, sizeof(out->instance_type), "%s", str(s, r, F_TYPE));
	snprintf(out->private_ip, sizeof(out->private_ip), "%s", str(s, r, F_PRIVATE_IP));
	snprintf(out->public_ip, sizeof(out->public_ip), "%s", str(s, r, F_PUBLIC_IP));
	snprintf(out->created_time, sizeof(out->created_time), "%s", str(s, r, F_CREATED_TIME));
	snprintf(out->pool_tag, sizeof(out->pool_tag), "%s", str(s, r, F_OWNER));
	snprintf(out->launch_tag, sizeof(out->launch_tag), "%s", str(s, r, F_LAUNCH));
	snprintf(out->cluster_tag, sizeof(out->cluster_tag), "%s", str(s, r, F_CLUSTER));
}

void snap_owner(const struct snap *s, const char *owner, struct pool_instance **ret_instances, size_t *ret_n)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(str(s, &s->recs[mid], F_OWNER), owner) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < s->n && strcmp(str(s, &s->recs[end], F_OWNER), owner) == 0)
		end++;
	*ret_n = end - lo;
	*ret_instances = xcalloc(*ret_n ? *ret_n : 1, sizeof(**ret_instances));
	for (size_t i = lo; i < end; i++)
		expand(s, &s->recs[i], &(*ret_instances)[i - lo]);
}

const char *snap_id_at(const struct snap *s, size_t i)
{
	return str(s, &s->recs[i], F_ID);
}

/* The state found for the i-th record of s, NULL when it was not found. */
static const char *found_state(const struct snap *s, size_t i, const struct pool_instance_status *found, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(found[k].id, snap_id_at(s, i)) == 0)
			return found[k].state;
	return NULL;
}

struct snap *snap_follow(const struct snap *s, size_t from, size_t to, const struct pool_instance_status *found,
			 size_t n_found)
{
	to = to < s->n ? to : s->n;
	bool differs = false;
	for (size_t i = from; i < to && !differs; i++) {
		const char *state = found_state(s, i, found, n_found);
		differs = !state || strcmp(state, str(s, &s->recs[i], F_STATE)) != 0;
	}
	if (!differs)
		return NULL;
	struct snap *out = snap_new();
	for (size_t i = 0; i < s->n; i++) {
		struct pool_instance inst;
		expand(s, &s->recs[i], &inst);
		if (i >= from && i < to) {
			const char *state = found_state(s, i, found, n_found);
			if (!state)
				continue;
			snprintf(inst.state, sizeof(inst.state), "%s", state);
		}
		snap_add(out, &inst);
	}
	snap_seal(out);
	return out;
}

/* Whether an instance listed in both snapshots looks the same to its pool's status. */
static bool same(const struct snap *a, const struct rec *x, const struct snap *b, const struct rec *y)
{
	static const enum field shown[] = {F_STATE, F_PRIVATE_IP, F_PUBLIC_IP};
	for (size_t f = 0; f < sizeof(shown) / sizeof(shown[0]); f++)
		if (strcmp(str(a, x, shown[f]), str(b, y, shown[f])) != 0)
			return false;
	return true;
}

void snap_diff(const struct snap *old, const struct snap *cur, void (*changed)(void *userdata, const char *owner),
	       void *userdata)
{
	size_t n_old = snap_count(old), i = 0, j = 0;
	const char *last = NULL;  /* owner already reported */
	while (i < n_old || j < cur->n) {
		const struct rec *x = i < n_old ? &old->recs[i] : NULL, *y = j < cur->n ? &cur->recs[j] : NULL;
		int c = !x ? 1 : !y ? -1 : strcmp(str(old, x, F_OWNER), str(cur, y, F_OWNER));
		if (x && y && c == 0)
			c = strcmp(str(old, x, F_ID), str(cur, y, F_ID));
		const char *owner = c <= 0 ? str(old, x, F_OWNER) : str(cur, y, F_OWNER);
		bool differs = c != 0 || !same(old, x, cur, y);
		if (differs && *owner && (!last || strcmp(last, owner) != 0)) {
			changed(userdata, owner);
			last = owner;
		}
		i += c <= 0;
		j += c >= 0;
	}
}
