/* fit: pods against a pool's node template, bin-packing and pool choice (fit.h). Pure. */
#include "fit.h"

#include <stdio.h>
#include <string.h>

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

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

static bool requirement_holds(const struct fit_template *t, const struct podreq_requirement *r)
{
	const char *v = label_value(t, r->key);
	int64_t x;
	switch (r->op) {
	case PODREQ_OP_IN:
	case PODREQ_OP_NOT_IN: {
		bool in = false;
		for (size_t i = 0; v && !in && i < r->n_values; i++)
			in = strcmp(v, r->values[i]) == 0;
		return r->op == PODREQ_OP_IN ? in : !in;
	}
	case PODREQ_OP_EXISTS:
		return v != NULL;
	case PODREQ_OP_DOES_NOT_EXIST:
		return v == NULL;
	case PODREQ_OP_GT:
	case PODREQ_OP_LT:
		return v && qty_parse_int(v, &x) && (r->op == PODREQ_OP_GT ? x > r->number : x < r->number);
	}
	return false;
}

/* A term matches when it has requirements, no matchFields, and every one holds; *what
 * gets why not. */
static bool term_holds(const struct fit_template *t, const struct podreq_term *term, const char **what)
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

static bool tolerates(const struct podreq_toleration *tol, const struct tmpl_taint *taint)
{
	if (!tol->any_effect && tol->effect != taint->effect)
		return false;
	if (*tol->key && strcmp(tol->key, taint->key) != 0)
		return false;
	return tol->exists || strcmp(tol->value, taint->value) == 0;
}

enum fit_reason fit_check(const struct fit_template *t, const struct podreq *p, struct fit_why *ret_why)
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

void fit_daemon_overhead(const struct fit_template *t, const struct podreq *const *daemon_pods, size_t n,
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
	const struct podreq *pod;
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

size_t fit_pack(const struct fit_template *t, const struct podreq *const *pods, size_t n_pods,
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

int fit_choose_pool(const struct podreq *p, const struct fit_template *const *pools, size_t n,
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
