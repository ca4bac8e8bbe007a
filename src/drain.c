/* drain: pod classification, victim order and the step of one node's drain; see
 * docs/how-it-works.md ("Draining") and drain.h. */
#include "drain.h"

#include "pool.h"

#include <stdio.h>
#include <string.h>

static const cJSON *member(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static const char *string_member(const cJSON *obj, const char *key)
{
	const cJSON *v = member(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool controlled_by_daemonset(const cJSON *metadata)
{
	const cJSON *ref;
	cJSON_ArrayForEach(ref, member(metadata, "ownerReferences")) {
		const char *kind = string_member(ref, "kind");
		if (cJSON_IsTrue(member(ref, "controller")) && kind && strcmp(kind, "DaemonSet") == 0)
			return true;
	}
	return false;
}

static enum drain_pod_class classify(const cJSON *pod)
{
	const cJSON *md = member(pod, "metadata"), *annotations = member(md, "annotations");
	const char *phase = string_member(member(pod, "status"), "phase");
	const char *safe = string_member(annotations, DRAIN_SAFE_TO_EVICT_ANNOTATION);
	if (member(annotations, DRAIN_MIRROR_ANNOTATION))
		return DRAIN_POD_MIRROR;
	if (controlled_by_daemonset(md))
		return DRAIN_POD_DAEMONSET;
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return DRAIN_POD_FINISHED;
	if (string_member(md, "deletionTimestamp"))
		return DRAIN_POD_GOING;
	if (safe && strcmp(safe, "false") == 0)
		return DRAIN_POD_BLOCKING;
	return DRAIN_POD_EVICT;
}

int drain_pod_classify(const cJSON *pod, struct drain_pod *ret, struct sp_error *err)
{
	const cJSON *md = member(pod, "metadata");
	const char *ns = string_member(md, "namespace"), *name = string_member(md, "name");
	if (!ns || !name || !*ns || !*name || strlen(ns) >= sizeof(ret->namespace) ||
	    strlen(name) >= sizeof(ret->name))
		return sp_fail(err, SP_EPROTO, "a pod without a valid metadata.namespace and metadata.name");
	snprintf(ret->namespace, sizeof(ret->namespace), "%s", ns);
	snprintf(ret->name, sizeof(ret->name), "%s", name);
	ret->cls = classify(pod);
	return 0;
}

bool drain_pod_holds(enum drain_pod_class cls)
{
	return cls == DRAIN_POD_EVICT || cls == DRAIN_POD_BLOCKING || cls == DRAIN_POD_GOING;
}

void drain_victim_count(const struct drain_pod *pods, size_t n, struct drain_victim *v)
{
	v->blocking = v->evictable = 0;
	for (size_t i = 0; i < n; i++) {
		v->blocking += pods[i].cls == DRAIN_POD_BLOCKING;
		v->evictable += pods[i].cls == DRAIN_POD_EVICT || pods[i].cls == DRAIN_POD_GOING;
	}
}

/* Negative when only a has the property (a goes first), positive when only b has it. */
static int first_if(bool a, bool b)
{
	return a == b ? 0 : a ? -1 : 1;
}

int drain_victim_cmp(const struct drain_victim *a, const struct drain_victim *b)
{
	int c;
	if ((c = first_if(!a->scale_down_disabled, !b->scale_down_disabled)) ||
	    (c = first_if(!a->given_up, !b->given_up)) ||
	    (c = first_if(a->draining, b->draining)) ||
	    (c = first_if(!a->unlisted, !b->unlisted)) ||
	    (c = first_if(!a->contested, !b->contested)) ||
	    (c = first_if(!a->has_node, !b->has_node)) ||
	    (c = first_if(a->blocking == 0, b->blocking == 0)))
		return c;
	return a->evictable == b->evictable ? 0 : a->evictable < b->evictable ? -1 : 1;
}

/* "N pod(s) left: ns/a, ns/b (safe-to-evict false), ..." into ret->message after what is
 * there, naming up to 5. */
static void describe_left(const struct drain_step_input *in, struct drain_step *ret)
{
	size_t used = strlen(ret->message), named = 0;
	if (in->unlisted) {
		snprintf(ret->message + used, sizeof(ret->message) - used, "its pods could not be listed: %s",
			 in->unlisted);
		return;
	}
	used += (size_t)snprintf(ret->message + used, sizeof(ret->message) - used, "%zu pod(s) left", ret->left);
	for (size_t i = 0; i < in->n_pods && used < sizeof(ret->message); i++) {
		const struct drain_pod *p = &in->pods[i];
		if (!drain_pod_holds(p->cls))
			continue;
		if (named++ == 5) {
			snprintf(ret->message + used, sizeof(ret->message) - used, ", ...");
			break;
		}
		used += (size_t)snprintf(ret->message + used, sizeof(ret->message) - used, "%s %s/%s%s",
					 named == 1 ? ":" : ",", p->namespace, p->name,
					 p->cls == DRAIN_POD_BLOCKING ? " (safe-to-evict false)" :
					 p->cls == DRAIN_POD_GOING ? " (terminating)" : "");
	}
}

void drain_step(const struct drain_step_input *in, struct drain_step *ret)
{
	struct drain_step s = {0};
	for (size_t i = 0; i < in->n_pods; i++)
		s.left += drain_pod_holds(in->pods[i].cls);
	if (in->unlisted)
		s.left = 1;  /* unknown: not drained */
	int64_t end = in->deadline ? in->deadline : in->node.started + in->timeout;
	/* A forced drain that could not start by its deadline (its Node could not be tainted,
	 * the controller was down) starts late all the same and evicts for DRAIN_LATE_SECONDS:
	 * a late deadline never skips eviction. */
	if (in->deadline && in->node.started >= in->deadline)
		end = in->node.started + DRAIN_LATE_SECONDS;
	if (!in->node.has_node || in->timeout <= 0) {
		s.action = DRAIN_DONE;
	} else if (in->deadline && in->node.started && in->now >= end) {
		s.action = DRAIN_DONE;
		if (s.left) {
			snprintf(s.reason, sizeof(s.reason), DRAIN_REASON_CUT_SHORT);
			snprintf(s.message, sizeof(s.message), "the reclaim deadline came with the drain unfinished: ");
			describe_left(in, &s);
		}
	} else if (!in->node.started) {
		s.action = DRAIN_START;
	} else if (s.left == 0) {
		s.action = DRAIN_DONE;
	} else if (!in->deadline && in->now >= end) {
		char d[32];
		pool_format_duration(in->timeout, d, sizeof(d));
		s.action = DRAIN_GIVE_UP;
		s.uncordon = !in->node.was_unschedulable;
		snprintf(s.reason, sizeof(s.reason), DRAIN_REASON_TIMED_OUT);
		snprintf(s.message, sizeof(s.message), "the drain did not finish within drainTimeout %s; the node "
			 "is kept%s: ", d, s.uncordon ? " and uncordoned" : " (cordoned, as it was before)");
		describe_left(in, &s);
	} else {
		s.evict = xcalloc(in->n_pods ? in->n_pods : 1, sizeof(*s.evict));
		for (size_t i = 0; i < in->n_pods && !in->unlisted; i++)
			if (in->pods[i].cls == DRAIN_POD_EVICT || (in->deadline && in->pods[i].cls == DRAIN_POD_BLOCKING))
				s.evict[s.n_evict++] = i;
		s.action = s.n_evict ? DRAIN_EVICT : DRAIN_WAIT;
		s.until = in->now + DRAIN_RECHECK_SECONDS < end ? in->now + DRAIN_RECHECK_SECONDS : end;
	}
	*ret = s;
}

void drain_step_free(struct drain_step *s)
{
	free(s->evict);
	s->evict = NULL;
	s->n_evict = 0;
}
