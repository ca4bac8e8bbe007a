/* pass_launch: the launches of a pass (pass.h): the shortfall across the pool's
 * offerings, sold-out probes and marks, the ledger written before RunInstances, the
 * ledger's launch repeated with its token, and what a dry run would launch. */
#include "pass_walk.h"

#include <stdio.h>
#include <string.h>

static void set_offering(struct pass_action *a, const char *zone, const char *type)
{
	snprintf(a->zone, sizeof(a->zone), "%s", zone);
	snprintf(a->instance_type, sizeof(a->instance_type), "%s", type);
}

static const char *or_spec(const char *v, const char *spec)
{
	return v && *v ? v : spec;
}

static void emit_launch(struct walk *w, int step, const struct plan_launch *l, int count, bool fresh)
{
	struct pass_action *a = pass_emit(w, PASS_LAUNCH, step);
	if (!a)
		return;
	set_offering(a, or_spec(l->zone, w->in->spec->zone), or_spec(l->instance_type, w->in->spec->instance_type));
	a->count = count;
	a->fresh = fresh;
	a->ledger = *l;
	a->ledger.instance_ids = (struct strv){0};
}

static void launched_event(struct walk *w, int step, const struct pass_action *l)
{
	const struct plan_launch *led = w->in->ledger;
	char joined[1024] = "";
	for (size_t i = 0; led && i < led->instance_ids.n; i++)
		snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? ", " : "",
			 led->instance_ids.v[i]);
	pass_event(w, step, "Normal", "Launched", "launched %zu x %s in %s: %s",
		   led ? led->instance_ids.n : 0, l->instance_type, l->zone, joined);
}

/* Names the offerings not available, for CapacityAvailable; the earliest time a probe
 * of one of them is due goes to *ret_probe_at (INT64_MAX: none). */
void pass_describe_scarcity(struct walk *w, const enum offer_state *state, const int64_t *probe_at,
			    int64_t *ret_probe_at)
{
	const struct offer_list *offers = w->in->offers;
	char *m = w->capacity;
	size_t cap = sizeof(w->capacity);
	*m = '\0';
	*ret_probe_at = INT64_MAX;
	for (size_t i = 0; offers && i < offers->n; i++) {
		if (state[i] == OFFER_AVAILABLE)
			continue;
		if (probe_at[i] < *ret_probe_at)
			*ret_probe_at = probe_at[i];
		char name[128];
		offer_name(&offers->v[i], name, sizeof(name));
		snprintf(m + strlen(m), cap - strlen(m), "%s%s", *m ? ", " : "sold out: ", name);
	}
	int64_t now = w->in->now_ms;
	if (*m && *ret_probe_at != INT64_MAX)
		snprintf(m + strlen(m), cap - strlen(m), "; next probe in %lld s",
			 (long long)((*ret_probe_at > now ? *ret_probe_at - now : 0) + 999) / 1000);
}

static void emit_soldout(struct walk *w, enum pass_kind kind, int step, const struct offer *o)
{
	struct pass_action *a = pass_emit(w, kind, step);
	if (a)
		set_offering(a, o->zone, o->instance_type);
}

/* The offerings of doomed instances, being reclaimed: their replacements go elsewhere
 * when the pool can (pick_view). */
static void doomed_offerings(const struct walk *w, bool avoid[OFFER_MAX])
{
	const struct offer_list *offers = w->in->offers;
	memset(avoid, 0, OFFER_MAX * sizeof(*avoid));
	for (size_t d = 0; d < w->plan->doomed.n; d++) {
		int i = pass_instance_index(w->in, w->plan->doomed.v[d]);
		const struct pool_instance *p = i >= 0 ? &w->in->plan.instances[i] : NULL;
		for (size_t o = 0; p && o < offers->n; o++)
			avoid[o] = avoid[o] || (strcmp(offers->v[o].zone, p->zone) == 0 &&
						strcmp(offers->v[o].instance_type, p->instance_type) == 0);
	}
}

/* What the next pick sees: state, with the avoided offerings out while another one is
 * available. A preference, not a mark: once every other offering has answered sold out
 * in this pass, the avoided ones are tried in the same pass, and the scarcity the pool
 * shows (state) never names them for having been avoided. */
static void pick_view(const struct offer_list *offers, const enum offer_state *state, const bool *avoid,
		      enum offer_state *view)
{
	bool other = false;
	for (size_t o = 0; o < offers->n; o++)
		other = other || (!avoid[o] && state[o] == OFFER_AVAILABLE);
	for (size_t o = 0; o < offers->n; o++)
		view[o] = other && avoid[o] ? OFFER_SOLD_OUT : state[o];
}

/* The shortfall, on the pool's first usable offering (spread: the least loaded zone),
 * and when that one answers "sold out", on the next, in the same pass. At most one probe
 * of a sold-out offering per TTL across all pools (soldout.h). */
void pass_launch_shortfall(struct walk *w)
{
	const struct pass_input *in = w->in;
	const struct offer_list *offers = in->offers;
	enum offer_state state[OFFER_MAX], view[OFFER_MAX];
	int64_t probe_at[OFFER_MAX];
	bool avoid[OFFER_MAX];
	for (size_t i = 0; i < offers->n; i++) {
		state[i] = in->offer_state[i];
		probe_at[i] = in->probe_at_ms[i];
	}
	doomed_offerings(w, avoid);
	int zone_live[OFFER_ZONES_MAX];
	offer_zone_live(offers, in->plan.instances, in->plan.n_instances, zone_live);
	bool launched = false, over = false, capped = false;
	for (size_t k = 0; k <= offers->n && !launched && !over; k++) {
		if (k == PASS_LAUNCH_ATTEMPTS_MAX) {
			capped = true;  /* the next offerings next pass */
			break;
		}
		pick_view(offers, state, avoid, view);
		struct offer_input oin = {.list = offers, .state = view, .zone_live = zone_live,
					  .strategy = in->spec->allocation, .want = w->plan->launch};
		struct offer_pick pick;
		offer_choose(&oin, &pick);
		if (pick.index < 0)
			break;
		const struct offer *o = &offers->v[pick.index];
		const int probe_step = pass_step_attempt(k, ATTEMPT_PROBE),
			  ledger_step = pass_step_attempt(k, ATTEMPT_LEDGER),
			  launch_step = pass_step_attempt(k, ATTEMPT_LAUNCH),
			  after_step = pass_step_attempt(k, ATTEMPT_AFTER);
		const struct pass_answer *probe = pick.probe ? pass_answered(w, probe_step, PASS_TAKE_PROBE) : NULL;
		if (pick.probe && !probe)
			emit_soldout(w, PASS_TAKE_PROBE, probe_step, o);
		if (probe && probe->code < 0) {  /* another pool holds this probe */
			state[pick.index] = OFFER_SOLD_OUT;
			continue;
		}
		const struct pass_answer *rec = pass_answered(w, ledger_step, PASS_RECORD_LEDGER);
		if (!rec) {
			struct plan_launch l = {.count = pick.count, .started = in->plan.now};
			snprintf(l.zone, sizeof(l.zone), "%s", o->zone);
			snprintf(l.instance_type, sizeof(l.instance_type), "%s", o->instance_type);
			pass_client_token(in->spec->uid, in->ns, in->name, in->launch_seq + 1, l.client_token);
			pass_record_ledger(w, PASS_RECORD_LEDGER, ledger_step, &l, in->launch_seq + 1);
			emit_launch(w, launch_step, &l, pick.count, true);
			return;  /* the rest follows from the answer */
		}
		if (rec->code < 0) {
			/* Not recorded, so not launched: safe to try again later; a probe that never
			 * reached the cloud goes back at once. */
			if (pick.probe)
				emit_soldout(w, PASS_SOLDOUT_RETURN, after_step, o);
			w->error = rec->code;
			return;
		}
		const struct pass_answer *run = pass_answered(w, launch_step, PASS_LAUNCH);
		if (!run) {
			emit_launch(w, launch_step, in->ledger, in->ledger->count, true);
			return;
		}
		if (run->code == 0) {
			if (pick.probe)
				emit_soldout(w, PASS_SOLDOUT_FORGET, after_step, o);
			state[pick.index] = OFFER_AVAILABLE;
			/* A fresh launch's IDs stay in memory and are resolved next pass; recording
			 * them now would cost a status write. */
			pass_emit(w, PASS_REMEMBER, after_step);
			struct pass_action shown = {0};
			set_offering(&shown, o->zone, o->instance_type);
			launched_event(w, after_step, &shown);
			launched = true;
			break;
		}
		/* Only a definitive "sold out" marks the offering and moves on: the same code
		 * after an attempt of unknown outcome is reported as transient and proves
		 * nothing. A probe that reached the cloud was this TTL's probe. Marked before
		 * any write: a write that conflicts ends the pass, and the mark must not go
		 * with it. */
		if (run->sold_out || pick.probe) {
			emit_soldout(w, PASS_SOLDOUT_MARK, after_step, o);
			state[pick.index] = OFFER_SOLD_OUT;
			probe_at[pick.index] = in->now_ms + in->soldout_ttl_ms;
		}
		pass_fail_answer(w, run, "launch of %d instance(s) failed", pick.count);
		/* A refusal of a fresh token proves nothing was launched: the record goes. */
		if (pass_refused(run->code))
			pass_record_ledger(w, PASS_CLEAR_LEDGER, after_step, NULL, in->launch_seq);
		over = !run->sold_out;
		if (over)
			w->error = run->code;
	}
	int64_t next_probe;
	pass_describe_scarcity(w, state, probe_at, &next_probe);
	if (launched) {
		w->degraded_reason = NULL;  /* short of nothing: a sold-out first choice shows in CapacityAvailable */
	} else if (!over && !capped && w->error == 0 && *w->capacity) {
		pass_fail(w, STEP_NO_OFFERING, SP_ECAPACITY, "no offering of the pool is available", w->capacity);
		/* Nothing to call before a probe is due: come back then, not on a backoff. */
		if (next_probe != INT64_MAX)
			w->requeue_ms = next_probe - in->now_ms > 1000 ? next_probe - in->now_ms : 1000;
	}
}

/* The ledger's launch repeated with its token (outcome unknown, or its IDs wanted). */
const struct pass_answer *pass_resume(struct walk *w)
{
	const struct pass_answer *run = pass_answered(w, STEP_RESUME, PASS_LAUNCH);
	if (!run) {
		emit_launch(w, STEP_RESUME, w->in->plan.ledger, w->plan->resume, false);
		return NULL;
	}
	if (run->code == 0) {
		/* Recorded, or each pass would repeat it again. */
		pass_record_ledger(w, PASS_RECORD_LEDGER, STEP_RESUME, w->in->ledger, w->in->launch_seq);
		const struct pass_answer *rec = pass_answered(w, STEP_RESUME, PASS_RECORD_LEDGER);
		if (rec && rec->code < 0)
			w->error = rec->code;
		const struct plan_launch *l = w->in->plan.ledger;
		struct pass_action shown = {0};
		set_offering(&shown, or_spec(l->zone, w->in->spec->zone),
			     or_spec(l->instance_type, w->in->spec->instance_type));
		launched_event(w, STEP_RESUME, &shown);
	} else {
		pass_fail_answer(w, run, "launch of %d instance(s) failed", w->plan->resume);
		w->error = run->code;
	}
	return run;
}

void pass_dry_run(struct walk *w)
{
	const struct plan *plan = w->plan;
	const struct pass_input *in = w->in;
	char *m = w->progress;
	size_t cap = sizeof(w->progress);
	snprintf(m, cap, "dry-run: %d live, target %d", plan->observed, plan->target);
	int want = plan->launch + plan->resume;
	if (want) {
		struct pass_action *a = pass_emit(w, PASS_CHECK_LAUNCH, STEP_CHECK);
		const struct plan_launch *l = plan->resume ? in->plan.ledger : NULL;
		const struct offer *o = NULL;
		if (!l && in->offers && in->offers->n) {
			int zone_live[OFFER_ZONES_MAX];
			offer_zone_live(in->offers, in->plan.instances, in->plan.n_instances, zone_live);
			struct offer_input oin = {.list = in->offers, .state = in->offer_state, .zone_live = zone_live,
						  .strategy = in->spec->allocation, .want = want};
			struct offer_pick pick;
			offer_choose(&oin, &pick);
			o = pick.index >= 0 ? &in->offers->v[pick.index] : &in->offers->v[0];
		}
		if (a) {
			a->count = want;
			set_offering(a, l ? or_spec(l->zone, in->spec->zone) : o ? o->zone : in->spec->zone,
				     l ? or_spec(l->instance_type, in->spec->instance_type)
				       : o ? o->instance_type : in->spec->instance_type);
		}
		const struct pass_answer *c = pass_answered(w, STEP_CHECK, PASS_CHECK_LAUNCH);
		/* The error code, not the message: messages carry a RequestId that changes
		 * every call and would turn each pass into a new event and status write. */
		if (c)
			snprintf(m + strlen(m), cap - strlen(m), "; would launch %d (launch check %s%s)", want,
				 c->code == 0 ? "passed" : "failed: ",
				 c->code == 0 ? "" : *c->reason ? c->reason : sp_strerror(c->code));
	}
	for (size_t i = 0; i < plan->scale_down.n; i++)
		snprintf(m + strlen(m), cap - strlen(m), "%s%s", i ? ", " : "; would terminate ",
			 plan->scale_down.v[i]);
	pass_emit_terminate(w, PASS_WOULD_TERMINATE, STEP_SCALE_DOWN, &plan->scale_down, PASS_WHY_SCALE_DOWN);
	pass_emit_terminate(w, PASS_WOULD_TERMINATE, STEP_CLEANUP, &plan->cleanup, PASS_WHY_CLEANUP);
	const char *old = status_condition(in->old_status, "Progressing", "message");
	if (!old || strcmp(old, m) != 0)
		pass_event(w, STEP_DRY_EVENT, "Normal", "DryRun", "%s", m);
}
