/* offer: preference list of (zone, instance type) and the choice of the next launch. */
#include "offer.h"
#include "plan.h"

#include <stdio.h>
#include <string.h>

/* Appends s to names (of n) if it fits and is not there yet. */
static void add_name(char (*names)[POOL_INSTANCE_TYPE_MAX + 1], size_t *n, size_t max, size_t len_max,
		     const char *s)
{
	if (!s || !*s || strlen(s) > len_max || *n >= max)
		return;
	for (size_t i = 0; i < *n; i++)
		if (strcmp(names[i], s) == 0)
			return;
	snprintf(names[(*n)++], POOL_INSTANCE_TYPE_MAX + 1, "%s", s);
}

void offer_build(const struct pool_spec *spec, struct offer_list *ret)
{
	char types[OFFER_TYPES_MAX][POOL_INSTANCE_TYPE_MAX + 1];
	char zones[OFFER_ZONES_MAX][POOL_INSTANCE_TYPE_MAX + 1];
	size_t n_types = 0, n_zones = 0;
	memset(ret, 0, sizeof(*ret));
	if (!spec->zone || !spec->instance_type)
		return;
	add_name(types, &n_types, OFFER_TYPES_MAX, POOL_INSTANCE_TYPE_MAX, spec->instance_type);
	for (size_t i = 0; i < spec->instance_types.n; i++)
		add_name(types, &n_types, OFFER_TYPES_MAX, POOL_INSTANCE_TYPE_MAX, spec->instance_types.v[i]);
	add_name(zones, &n_zones, OFFER_ZONES_MAX, POOL_ZONE_MAX, spec->zone);
	for (size_t i = 0; i < spec->zones.n; i++)
		add_name(zones, &n_zones, OFFER_ZONES_MAX, POOL_ZONE_MAX, spec->zones.v[i]);
	/* The seed's own names must lead: if either did not fit, there is no first preference. */
	if (n_types == 0 || n_zones == 0 || strcmp(types[0], spec->instance_type) != 0 ||
	    strcmp(zones[0], spec->zone) != 0)
		return;
	for (size_t z = 0; z < n_zones; z++)
		snprintf(ret->zones[z], sizeof(ret->zones[z]), "%s", zones[z]);
	ret->n_zones = n_zones;
	for (size_t t = 0; t < n_types; t++)
		for (size_t z = 0; z < n_zones; z++) {
			struct offer *o = &ret->v[ret->n++];
			snprintf(o->zone, sizeof(o->zone), "%s", zones[z]);
			snprintf(o->instance_type, sizeof(o->instance_type), "%s", types[t]);
			o->zone_index = (int)z;
			o->type_index = (int)t;
		}
}

int offer_find(const struct offer_list *l, const char *zone, const char *instance_type)
{
	if (l->n == 0)
		return -1;
	if (!zone || !*zone)
		zone = l->v[0].zone;
	if (!instance_type || !*instance_type)
		instance_type = l->v[0].instance_type;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].zone, zone) == 0 && strcmp(l->v[i].instance_type, instance_type) == 0)
			return (int)i;
	return -1;
}

void offer_zone_live(const struct offer_list *l, const struct pool_instance *instances, size_t n,
		     int ret[OFFER_ZONES_MAX])
{
	memset(ret, 0, OFFER_ZONES_MAX * sizeof(*ret));
	for (size_t i = 0; i < n; i++) {
		if (plan_classify_state(instances[i].state) != PLAN_LIVE)
			continue;
		for (size_t z = 0; z < l->n_zones; z++)
			if (strcmp(l->zones[z], instances[i].zone) == 0) {
				ret[z]++;
				break;
			}
	}
}

static bool usable(const struct offer_input *in, size_t i, bool probes)
{
	return in->state[i] == OFFER_AVAILABLE || (probes && in->state[i] == OFFER_PROBE_ALLOWED);
}

/* prioritized: the first usable offering takes everything. */
static int choose_first(const struct offer_input *in, bool probes)
{
	for (size_t i = 0; i < in->list->n; i++)
		if (usable(in, i, probes))
			return (int)i;
	return -1;
}

/* spread: water-fills want into the usable zones; the first zone filled is the one to
 * launch in, for as many as it received. */
static int choose_spread(const struct offer_input *in, bool probes, int *ret_count)
{
	const struct offer_list *l = in->list;
	int best[OFFER_ZONES_MAX];  /* per zone: its most preferred usable offering, or -1 */
	long load[OFFER_ZONES_MAX];
	int got[OFFER_ZONES_MAX] = {0};
	size_t candidates = 0;
	for (size_t z = 0; z < l->n_zones; z++) {
		best[z] = -1;
		load[z] = in->zone_live && in->zone_live[z] > 0 ? in->zone_live[z] : 0;
	}
	/* Type-major order: a zone's first usable offering is its most preferred type. */
	for (size_t i = 0; i < l->n; i++) {
		size_t z = (size_t)l->v[i].zone_index;
		if (z < l->n_zones && best[z] < 0 && usable(in, i, probes)) {
			best[z] = (int)i;
			candidates++;
		}
	}
	if (candidates == 0)
		return -1;
	int first = -1;
	for (int k = 0; k < in->want; k++) {
		int pick = -1;
		for (size_t z = 0; z < l->n_zones; z++)
			if (best[z] >= 0 && (pick < 0 || load[z] < load[pick]))
				pick = (int)z;
		if (first < 0)
			first = pick;
		load[pick]++;
		got[pick]++;
	}
	*ret_count = got[first];
	return best[first];
}

void offer_choose(const struct offer_input *in, struct offer_pick *ret)
{
	*ret = (struct offer_pick){.index = -1};
	if (in->want < 1 || in->list->n == 0)
		return;
	bool any_available = choose_first(in, false) >= 0;
	bool probes = in->probe == OFFER_PROBE_IN_ORDER || !any_available;
	int count = in->want;
	int i = in->strategy == POOL_SPREAD ? choose_spread(in, probes, &count) : choose_first(in, probes);
	if (i < 0)
		return;
	ret->index = i;
	ret->count = count;
	ret->probe = in->state[i] == OFFER_PROBE_ALLOWED;
}

void offer_name(const struct offer *o, char *out, size_t size)
{
	snprintf(out, size, "%s in %s", o->instance_type, o->zone);
}
