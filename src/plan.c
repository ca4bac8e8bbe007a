/* plan: decides launches and terminations; see docs/how-it-works.md ("Invariants") and plan.h. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

enum plan_state_class plan_classify_state(const char *state)
{
	static const char *const dead[] = {"LAUNCH_FAILED", "SHUTDOWN", "STOPPED", "STOPPING", NULL};
	static const char *const going[] = {"TERMINATING", "SHUTTING_DOWN", NULL};
	for (size_t i = 0; dead[i]; i++)
		if (strcmp(state, dead[i]) == 0)
			return PLAN_DEAD;
	for (size_t i = 0; going[i]; i++)
		if (strcmp(state, going[i]) == 0)
			return PLAN_GOING;
	/* PENDING, RUNNING, STARTING, REBOOTING, and anything unknown: counting an unknown
	 * state as live can only delay a launch, never overshoot maximum. */
	return PLAN_LIVE;
}

bool plan_state_settling(const char *state)
{
	return strcmp(state, "PENDING") == 0 || plan_classify_state(state) == PLAN_GOING;
}

/* Instances sorted by ID for lookups: a pool can hold a thousand instances and a pass
 * must stay linearithmic. */
struct id_index {
	const struct pool_instance **v;
	size_t n;
};

static int cmp_instance_ptr(const void *a, const void *b)
{
	return strcmp((*(const struct pool_instance *const *)a)->id,
		      (*(const struct pool_instance *const *)b)->id);
}

static struct id_index index_instances(const struct pool_instance *in, size_t n)
{
	struct id_index x = {.v = xcalloc(n ? n : 1, sizeof(*x.v)), .n = n};
	for (size_t i = 0; i < n; i++)
		x.v[i] = &in[i];
	if (n)
		qsort(x.v, n, sizeof(*x.v), cmp_instance_ptr);
	return x;
}

static const struct pool_instance *index_find(const struct id_index *x, const char *id)
{
	struct pool_instance key;
	snprintf(key.id, sizeof(key.id), "%s", id);
	const struct pool_instance *k = &key;
	const struct pool_instance **hit =
		x->n ? bsearch(&k, x->v, x->n, sizeof(*x->v), cmp_instance_ptr) : NULL;
	return hit ? *hit : NULL;
}

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool listed_in(const struct strv *l, const char *id)
{
	return l && strv_contains(l, id);
}

void plan_ids_to_confirm(const struct pool_instance *listed, size_t n_listed, const struct strv *seen,
			 const struct plan_launch *ledger, struct strv *ret)
{
	struct id_index x = index_instances(listed, n_listed);
	struct strv out = {0};
	size_t n_seen = seen ? seen->n : 0, n_ledger = ledger ? ledger->instance_ids.n : 0;
	for (size_t i = 0; i < n_seen + n_ledger; i++) {
		const char *id = i < n_seen ? seen->v[i] : ledger->instance_ids.v[i - n_seen];
		if (!index_find(&x, id))
			strv_push(&out, id);
	}
	free(x.v);
	if (out.n)
		qsort(out.v, out.n, sizeof(char *), cmp_str_ptr);
	for (size_t i = 0; i < out.n; i++)
		if (i == 0 || strcmp(out.v[i], out.v[i - 1]) != 0)
			strv_push(ret, out.v[i]);
	strv_clear(&out);
}

bool plan_owns(const struct pool_instance *i, const char *owner, const char *cluster)
{
	if (!owner || !*owner || strcmp(i->pool_tag, owner) != 0)
		return false;
	/* No cluster tag: launched before the tag existed, still this pool's. */
	return !cluster || !*cluster || !*i->cluster_tag || strcmp(i->cluster_tag, cluster) == 0;
}

void plan_merge_owned(struct pool_instance **list, size_t *n, const struct pool_instance *found,
		      size_t n_found, const char *owner, const char *cluster, struct strv *ret_foreign)
{
	size_t old_n = *n;
	*list = xrealloc(*list, (old_n + n_found + 1) * sizeof(**list));
	struct id_index x = index_instances(*list, old_n);
	for (size_t i = 0; i < n_found; i++) {
		if (!plan_owns(&found[i], owner, cluster)) {
			strv_push(ret_foreign, found[i].id);
			continue;
		}
		bool dup = index_find(&x, found[i].id) != NULL;
		/* Lookups by ID only ask for what the listing lacked, so this part stays short. */
		for (size_t j = old_n; j < *n && !dup; j++)
			dup = strcmp((*list)[j].id, found[i].id) == 0;
		if (!dup)
			(*list)[(*n)++] = found[i];
	}
	free(x.v);
}

/* The region id lives in, into out (POOL_ZONE_MAX + 1). */
static void region_of(const struct plan_where *w, const char *id, char *out)
{
	for (size_t i = 0; i < w->n_known; i++)
		if (strcmp(w->known[i].id, id) == 0 && pool_zone_region(w->known[i].zone, out, POOL_ZONE_MAX + 1))
			return;
	for (size_t i = 0; w->seen && w->seen_zones && i < w->seen->n && i < w->seen_zones->n; i++)
		if (strcmp(w->seen->v[i], id) == 0 && pool_zone_region(w->seen_zones->v[i], out, POOL_ZONE_MAX + 1))
			return;
	if (w->ledger && strv_contains(&w->ledger->instance_ids, id) &&
	    pool_zone_region(w->ledger->zone, out, POOL_ZONE_MAX + 1))
		return;
	snprintf(out, POOL_ZONE_MAX + 1, "%s", w->region);
}

void plan_by_region(const struct plan_where *w, const struct strv *ids, struct strv *ret_regions,
		    struct strv **ret_groups)
{
	struct strv *groups = xcalloc(ids->n ? ids->n : 1, sizeof(*groups));
	for (size_t i = 0; i < ids->n; i++) {
		char region[POOL_ZONE_MAX + 1];
		region_of(w, ids->v[i], region);
		size_t k = 0;
		while (k < ret_regions->n && strcmp(ret_regions->v[k], region) != 0)
			k++;
		if (k == ret_regions->n)
			strv_push(ret_regions, region);
		strv_push(&groups[k], ids->v[i]);
	}
	*ret_groups = groups;
}

void plan_by_region_free(struct strv *regions, struct strv *groups)
{
	for (size_t k = 0; k < regions->n; k++)
		strv_clear(&groups[k]);
	free(groups);
	strv_clear(regions);
}

struct victim {
	const struct pool_instance *i;
	const struct drain_victim *node; /* NULL: nothing known of its node */
};

/* Scale-down preference: by the nodes as far as they decide (drain_victim_cmp), then not yet
 * RUNNING first, then the newest, then by ID for determinism. */
static int scale_down_order(const void *pa, const void *pb)
{
	const struct victim *va = pa, *vb = pb;
	const struct pool_instance *a = va->i, *b = vb->i;
	int c = va->node && vb->node ? drain_victim_cmp(va->node, vb->node) : 0;
	if (c)
		return c;
	bool ar = strcmp(a->state, "RUNNING") == 0, br = strcmp(b->state, "RUNNING") == 0;
	if (ar != br)
		return ar ? 1 : -1;
	if (a->created != b->created)
		return a->created > b->created ? -1 : 1;
	return -strcmp(a->id, b->id);
}

static bool doomed(const struct plan_input *in, size_t i)
{
	return in->victims && in->victims[i].doomed_at > 0;
}

static void pick_scale_down(const struct plan_input *in, int excess, struct strv *out)
{
	struct victim *live = xcalloc(in->n_instances ? in->n_instances : 1, sizeof(*live));
	size_t n = 0;
	for (size_t i = 0; i < in->n_instances; i++)
		if (plan_classify_state(in->instances[i].state) == PLAN_LIVE && !doomed(in, i))
			live[n++] = (struct victim){&in->instances[i], in->victims ? &in->victims[i] : NULL};
	if (n)
		qsort(live, n, sizeof(*live), scale_down_order);
	for (size_t i = 0; i < n && (int)i < excess; i++)
		strv_push(out, live[i].i->id);
	free(live);
}

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

/* The ledger's IDs that no lookup shows (ret_unconfirmed) and, of those, how many are
 * in flight: never seen and within the grace. Past it they were never launched (failed
 * or reclaimed before anyone saw them); seen before, they are gone. */
static int count_inflight(const struct plan_input *in, const struct id_index *known, int64_t grace,
			  struct strv *ret_unconfirmed)
{
	const struct plan_launch *l = in->ledger;
	int inflight = 0;
	for (size_t i = 0; l && l->ids_known && i < l->instance_ids.n; i++) {
		const char *id = l->instance_ids.v[i];
		if (index_find(known, id) || listed_in(in->seen, id) || listed_in(in->foreign, id))
			continue;
		strv_push(ret_unconfirmed, id);
		if (in->now - l->started < grace)
			inflight++;
	}
	return inflight;
}

/* Known instances carrying the launch tag of a ledger whose outcome is unknown. */
static int count_tagged(const struct plan_input *in)
{
	const struct plan_launch *l = in->ledger;
	int n = 0;
	for (size_t i = 0; l && !l->ids_known && i < in->n_instances; i++)
		n += strcmp(in->instances[i].launch_tag, l->client_token) == 0;
	return n;
}

/* Recorded live earlier, not live now, and not terminated by spotpool (what spotpool
 * terminates is recorded TERMINATING, not live). */
static void find_reclaimed(const struct plan_input *in, const struct id_index *known, struct strv *out)
{
	for (size_t i = 0; in->seen_live && i < in->seen_live->n; i++) {
		const struct pool_instance *now = index_find(known, in->seen_live->v[i]);
		if (!listed_in(in->foreign, in->seen_live->v[i]) &&
		    (!now || plan_classify_state(now->state) != PLAN_LIVE))
			strv_push(out, in->seen_live->v[i]);
	}
}

static void plan_deletion(const struct plan_input *in, int64_t grace, int tagged,
			  const struct strv *unconfirmed, struct plan *p)
{
	const struct plan_launch *l = in->ledger;
	bool young = l && in->now - l->started < grace;
	/* Everything owned and not already going away, plus the launched IDs no lookup shows
	 * (yet): TerminateInstances answers NotFound for what is gone, but also for what is
	 * not visible yet, so those hold the finalizer until seen or past the grace. */
	for (size_t i = 0; i < in->n_instances; i++)
		if (plan_classify_state(in->instances[i].state) != PLAN_GOING)
			strv_push(&p->cleanup, in->instances[i].id);
	for (size_t i = 0; i < unconfirmed->n; i++)
		strv_push(&p->cleanup, unconfirmed->v[i]);
	if (l && !l->ids_known && tagged < l->count) {
		/* Outcome unknown and not all of its instances seen. Some carry its token: it
		 * did launch (only a launch that succeeded records a token), so repeating the
		 * token answers its IDs and launches nothing. None: the token may never have
		 * reached the cloud (a crash between the ledger write and the call), and a
		 * repeat would launch for a deleted pool (fault campaign seed 170): the listing
		 * is watched for the grace instead, then the zone is listed without a
		 * tag filter once (seed 73: an index hid one past the grace). */
		if (in->can_repeat_launch && tagged > 0)
			p->resume = l->count;
		else if (!young && !in->swept && !in->dry_run)
			p->sweep = true;
		p->waiting = young || p->resume || p->sweep;
		p->let_go_if_refused = !young;
	} else if (unconfirmed->n && young) {
		p->waiting = true;
	}
	p->ledger_done = l && !p->waiting;
	p->release = p->cleanup.n == 0 && !p->waiting;
}

void plan_compute(const struct plan_input *in, struct plan *ret)
{
	struct plan p = {0};
	const struct pool_spec *s = in->spec;
	const struct plan_launch *l = in->ledger;
	int64_t grace = in->launch_grace > 0 ? in->launch_grace : PLAN_LAUNCH_GRACE_DEFAULT_SECONDS;

	for (size_t i = 0; i < in->n_instances; i++) {
		enum plan_state_class c = plan_classify_state(in->instances[i].state);
		if (c == PLAN_LIVE && doomed(in, i))
			strv_push(&p.doomed, in->instances[i].id);
		else if (c == PLAN_LIVE)
			p.observed++;
		else if (c == PLAN_DEAD && !in->deleting)
			strv_push(&p.cleanup, in->instances[i].id);
	}
	struct id_index known = index_instances(in->instances, in->n_instances);
	int tagged = count_tagged(in);
	struct strv unconfirmed = {0};
	p.inflight = count_inflight(in, &known, grace, &unconfirmed);
	if (!in->deleting)
		find_reclaimed(in, &known, &p.reclaimed);
	free(known.v);
	if (in->deleting && in->retain) {
		/* Instances stay running, still tagged; the resource goes at once. */
		strv_clear(&unconfirmed);
		p.release = true;
		*ret = p;
		return;
	}
	if (in->deleting) {
		plan_deletion(in, grace, tagged, &unconfirmed, &p);
		strv_clear(&unconfirmed);
		*ret = p;
		return;
	}
	strv_clear(&unconfirmed);
	/* A launch whose answer was lost (reply or process) did happen once instances
	 * carrying its token show up. Those not seen yet count as in flight until the token,
	 * repeated, answers their IDs (then they are confirmed by ID): a tag index that hides
	 * one for longer than the grace never makes the pool launch it again. */
	bool partly_seen = l && !l->ids_known && tagged > 0 && tagged < l->count;
	if (partly_seen)
		p.inflight += l->count - tagged;

	int current = p.observed + p.inflight;
	if (s->has_replicas)
		p.target = pool_clamp(s->replicas, s->minimum, s->maximum);
	else
		p.target = pool_clamp(current, s->minimum, s->maximum);

	if (l && !l->ids_known && tagged == 0) {
		/* Outcome unknown. Repeating the same token launches nothing new if the first
		 * call did launch; if it did not, it launches only what is needed now (the spec
		 * may have lowered maximum since). Nothing needed: keep waiting, never forget. */
		int need = p.target - p.observed;
		if (s->maximum_includes_doomed)  /* a hard budget: the doomed still count */
			need = min_int(need, s->maximum - p.observed - (int)p.doomed.n);
		if (need > 0)
			p.resume = min_int(min_int(l->count, need), PLAN_MAX_LAUNCH_PER_CALL);
		p.waiting = true;
	} else if (partly_seen) {
		/* It launched: the same request again only answers the IDs. */
		p.resume = l->count;
		p.waiting = true;
	} else if (p.inflight > 0) {
		/* One ledger entry at a time: a new launch would replace the record of these. */
		p.waiting = true;
	} else {
		p.ledger_done = l != NULL;
		/* The replacement of a doomed instance comes at once, so the pool may hold
		 * maximum plus its doomed instances until their deadlines; a hard budget
		 * (maximumIncludesDoomed) waits for them to go. */
		int room = s->maximum - current - (s->maximum_includes_doomed ? (int)p.doomed.n : 0);
		if (current < p.target && room > 0)
			p.launch = min_int(min_int(p.target - current, room), PLAN_MAX_LAUNCH_PER_CALL);
	}
	/* Only confirmed live instances are terminated, so in-flight ones are never counted
	 * twice; excess above the target (and so above maximum) goes in the same pass. */
	if (p.observed > p.target)
		pick_scale_down(in, p.observed - p.target, &p.scale_down);
	*ret = p;
}

struct pool_instance *plan_recorded(const struct pool_instance *known, size_t n_known,
				    const struct strv *terminated, size_t *ret_n)
{
	struct pool_instance *out = xcalloc(n_known ? n_known : 1, sizeof(*out));
	size_t n = 0;
	for (size_t i = 0; i < n_known; i++) {
		bool ours = terminated && strv_contains(terminated, known[i].id);
		if (!ours && plan_classify_state(known[i].state) == PLAN_GOING)
			continue;
		out[n] = known[i];
		if (ours)
			snprintf(out[n].state, sizeof(out[n].state), "TERMINATING");
		n++;
	}
	*ret_n = n;
	return out;
}

void plan_free(struct plan *p)
{
	strv_clear(&p->scale_down);
	strv_clear(&p->cleanup);
	strv_clear(&p->reclaimed);
	strv_clear(&p->doomed);
}

void plan_launch_clear(struct plan_launch *l)
{
	strv_clear(&l->instance_ids);
	memset(l, 0, sizeof(*l));
}
