/* offer: a pool's offerings (instance type x zone) and the choice of the one to launch
 * on next. Pure: no I/O, no locks, no clock (the caller passes each offering's state,
 * from soldout).
 *
 * Preference order, type-major: for each type of [instanceType, instanceTypes...], each
 * zone of [availabilityZone, availabilityZones...]. A spec with only the seed fields has
 * exactly one offering, (availabilityZone, instanceType): the pool behaves as before.
 *
 * Probes.  An offering that answered sold out is SOLD_OUT until its TTL is over; then it
 * is PROBE_ALLOWED: one launch may find out whether it has stock again. With
 * OFFER_PROBE_IN_ORDER (the default, recommended) a due probe keeps the offering's place
 * in the preference order: the pool goes back to its preferred offering once stock
 * returns, and a probe that answers sold out again costs one RunInstances call, since
 * the same reconcile pass then launches on the next available offering (the reconciler
 * marks the offering, sets its state to OFFER_SOLD_OUT and calls offer_choose again).
 * With OFFER_PROBE_LAST a probe is tried only when no offering is available: a probe
 * never comes before an available offering, but a pool that fell back stays on its
 * fallback until that one sells out too. */
#ifndef SPOTPOOL_OFFER_H
#define SPOTPOOL_OFFER_H

#include "pool.h"
#include "spotpool.h"

#define OFFER_TYPES_MAX (1 + POOL_OFFERING_LIST_MAX)
#define OFFER_ZONES_MAX (1 + POOL_OFFERING_LIST_MAX)
#define OFFER_MAX (OFFER_TYPES_MAX * OFFER_ZONES_MAX)

struct offer {
	char zone[POOL_ZONE_MAX + 1];
	char instance_type[POOL_INSTANCE_TYPE_MAX + 1];
	int zone_index;  /* into offer_list.zones: the zone's rank in preference order */
	int type_index;  /* the type's rank: 0 is instanceType */
};

struct offer_list {
	struct offer v[OFFER_MAX];  /* in preference order */
	size_t n;
	char zones[OFFER_ZONES_MAX][POOL_ZONE_MAX + 1];  /* [availabilityZone, availabilityZones...] */
	size_t n_zones;
};

enum offer_state {
	OFFER_AVAILABLE,      /* not known to be sold out */
	OFFER_SOLD_OUT,       /* sold out within its TTL, or another launch is probing it */
	OFFER_PROBE_ALLOWED,  /* sold out, TTL over: one launch may probe it */
};

enum offer_probe {
	OFFER_PROBE_IN_ORDER = 0,  /* a due probe keeps its place in the preference order */
	OFFER_PROBE_LAST,          /* a probe only when no offering is available */
};

/* Builds the list from spec (zone, instance_type, zones, instance_types). A spec without
 * a zone or type (pool_spec_for_cleanup) gives an empty list. Names longer than the spec
 * allows (never, for a validated spec) are left out. */
void offer_build(const struct pool_spec *spec, struct offer_list *ret);
/* Index of (zone, instance_type) in l, or -1. A NULL or empty zone or type stands for the
 * seed's (l->v[0]), as in a ledger written by a version without offerings. */
int offer_find(const struct offer_list *l, const char *zone, const char *instance_type);
/* Live instances of the pool per zone of l (ret[i] for l->zones[i]); instances in zones
 * the spec no longer lists are not counted. Live as plan_classify_state says. */
void offer_zone_live(const struct offer_list *l, const struct pool_instance *instances, size_t n,
		     int ret[OFFER_ZONES_MAX]);

struct offer_input {
	const struct offer_list *list;
	const enum offer_state *state;  /* state[i] of list->v[i] */
	const int *zone_live;           /* live instances per zone (offer_zone_live), NULL = none */
	enum pool_allocation strategy;
	enum offer_probe probe;
	int want;                       /* instances the pool needs launched now (>= 1) */
};

struct offer_pick {
	int index;   /* into list->v; -1: every offering is sold out and no probe is allowed */
	int count;   /* instances to launch there now: 1..want (0 when index is -1) */
	bool probe;  /* the offering is PROBE_ALLOWED: the launch is its probe (take it with
		      * soldout_probe first; if refused, set its state to SOLD_OUT and choose again) */
};

/* The offering for the next launch and how many to launch there.
 * prioritized: the first usable offering in preference order, for all of want.
 * spread: among the zones with a usable offering, the one with the fewest live
 *   instances (ties: the preferred zone), with that zone's most preferred usable type;
 *   count is what filling want one by one into the least loaded usable zone would put
 *   in that zone, so that the rest goes elsewhere in the next launch.
 * Usable: AVAILABLE, plus PROBE_ALLOWED per in->probe (OFFER_PROBE_LAST: PROBE_ALLOWED
 * only when no offering is AVAILABLE). */
void offer_choose(const struct offer_input *in, struct offer_pick *ret);

/* "GN7.2XLARGE32 in ap-singapore-2", cut to fit size. */
void offer_name(const struct offer *o, char *out, size_t size);

#endif
