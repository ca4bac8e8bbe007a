/* plan: decides launches and terminations; see design.md section 3. */
#include "plan.h"

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

static bool visible(const struct plan_input *in, const char *id)
{
	for (size_t i = 0; i < in->n_instances; i++)
		if (strcmp(in->instances[i].id, id) == 0)
			return true;
	return false;
}

/* Scale-down preference: not yet RUNNING first, then the newest, then by ID for determinism. */
static int scale_down_order(const struct pool_instance *a, const struct pool_instance *b)
{
	bool ar = strcmp(a->state, "RUNNING") == 0, br = strcmp(b->state, "RUNNING") == 0;
	if (ar != br)
		return ar ? 1 : -1;
	if (a->created != b->created)
		return a->created > b->created ? -1 : 1;
	return -strcmp(a->id, b->id);
}

static void pick_scale_down(const struct plan_input *in, int excess, struct strv *out)
{
	const struct pool_instance **live = xcalloc(in->n_instances, sizeof(*live));
	size_t n = 0;
	for (size_t i = 0; i < in->n_instances; i++)
		if (plan_classify_state(in->instances[i].state) == PLAN_LIVE)
			live[n++] = &in->instances[i];
	/* Insertion sort: pools are small and this keeps the order stable and obvious. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && scale_down_order(live[j], live[j - 1]) < 0; j--) {
			const struct pool_instance *t = live[j];
			live[j] = live[j - 1];
			live[j - 1] = t;
		}
	for (size_t i = 0; i < n && (int)i < excess; i++)
		strv_push(out, live[i]->id);
	free(live);
}

void plan_compute(const struct plan_input *in, struct plan *ret)
{
	struct plan p = {0};
	const struct pool_spec *s = in->spec;

	for (size_t i = 0; i < in->n_instances; i++) {
		enum plan_state_class c = plan_classify_state(in->instances[i].state);
		if (c == PLAN_LIVE)
			p.observed++;
		else if (c == PLAN_DEAD)
			strv_push(&p.cleanup, in->instances[i].id);
	}

	/* A launch still settling (outcome unknown, or IDs known but not all visible yet)
	 * blocks further launches: its instances count as in flight, and a new launch
	 * would replace its record before they are seen. */
	bool settling = false;
	for (size_t i = 0; i < in->n_launches; i++) {
		const struct plan_launch *l = &in->launches[i];
		if (in->now - l->started > PLAN_LAUNCH_GRACE_SECONDS) {
			p.expired_launches++;
			continue;
		}
		if (!l->ids_known) {
			/* Unknown outcome: assume the whole launch happened until proven otherwise. */
			p.inflight += l->count;
			settling = true;
			if (!p.resume)
				p.resume = l;
			continue;
		}
		for (size_t j = 0; j < l->instance_ids.n; j++)
			if (!visible(in, l->instance_ids.v[j])) {
				p.inflight++;
				settling = true;
			}
	}

	int current = p.observed + p.inflight;
	if (in->deleting) {
		p.target = 0;
	} else if (s->has_replicas) {
		p.target = pool_clamp(s->replicas, s->minimum, s->maximum);
	} else {
		p.target = pool_clamp(current, s->minimum, s->maximum);
	}

	if (in->deleting) {
		for (size_t i = 0; i < in->n_instances; i++)
			if (plan_classify_state(in->instances[i].state) == PLAN_LIVE)
				strv_push(&p.scale_down, in->instances[i].id);
	} else if (current < p.target && !settling) {
		p.launch = p.target - current;
		if (p.launch > PLAN_MAX_LAUNCH_PER_CALL)
			p.launch = PLAN_MAX_LAUNCH_PER_CALL;
	} else if (current > p.target && !p.resume) {
		/* While a launch is unresolved its instances may be counted twice (visible
		 * and in flight): scaling down now could terminate them. Resolve first. */
		pick_scale_down(in, current - p.target, &p.scale_down);
	}
	*ret = p;
}

void plan_free(struct plan *p)
{
	strv_clear(&p->scale_down);
	strv_clear(&p->cleanup);
}

void plan_launch_clear(struct plan_launch *l)
{
	strv_clear(&l->instance_ids);
	memset(l, 0, sizeof(*l));
}
