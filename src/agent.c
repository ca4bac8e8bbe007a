/* agent: the spot notice agent's decisions and rounds (include/agent.h). */
#include "agent.h"
#include "kube.h"
#include "log.h"
#include "pool.h"
#include "stop.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define UTC_PLUS_8 (8 * 3600)
#define BACKOFF_FIRST_MS 500

static const char *const field_names[] = {"year", "month", "day", "hour", "minute", "second"};

/* "YYYY-MM-DD<sep>HH:MM:SS" then exactly suffix: the wall time it names, as if UTC. */
static int parse_datetime(const char *s, size_t len, char sep, const char *suffix, int64_t *ret,
			  struct sp_error *err)
{
	static const char shape[] = "dddd-dd-dd?dd:dd:dd";
	static const int max[] = {9999, 12, 31, 23, 59, 59}, min[] = {1970, 1, 1, 0, 0, 0};
	size_t n = sizeof(shape) - 1;
	if (len != n + strlen(suffix) || memcmp(s + n, suffix, strlen(suffix)) != 0)
		return sp_fail(err, SP_EINVAL, "\"%.*s\" is not shaped like YYYY-MM-DD%cHH:MM:SS%s", (int)(len > 64 ? 64 : len),
			       s, sep, suffix);
	int v[6] = {0}, f = 0;
	for (size_t i = 0; i < n; i++) {
		char want = shape[i] == '?' ? sep : shape[i];
		bool digit = s[i] >= '0' && s[i] <= '9';
		if (want == 'd' ? !digit : s[i] != want)
			return sp_fail(err, SP_EINVAL, "\"%.*s\" is not shaped like YYYY-MM-DD%cHH:MM:SS%s: character %zu",
				       (int)n, s, sep, suffix, i + 1);
		if (digit)
			v[f] = v[f] * 10 + (s[i] - '0');
		else
			f++;
	}
	bool leap = (v[0] % 4 == 0 && v[0] % 100 != 0) || v[0] % 400 == 0;
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	for (f = 0; f < 6; f++) {
		int top = f == 2 && v[1] >= 1 && v[1] <= 12 ? days[v[1] - 1] + (v[1] == 2 && leap) : max[f];
		if (v[f] < min[f] || v[f] > top)
			return sp_fail(err, SP_EINVAL, "\"%.*s\": %s %d is out of range (%d..%d)", (int)n, s, field_names[f],
				       v[f], min[f], top);
	}
	struct tm tm = {.tm_year = v[0] - 1900, .tm_mon = v[1] - 1, .tm_mday = v[2], .tm_hour = v[3],
			.tm_min = v[4], .tm_sec = v[5]};
	*ret = (int64_t)timegm(&tm);
	return 0;
}

int agent_parse_termination_time(const char *text, size_t len, int64_t *ret, struct sp_error *err)
{
	if (len > 0 && text[len - 1] == '\n')
		len--;
	int64_t t;
	int r = parse_datetime(text, len, ' ', "", &t, err);
	if (r < 0) {
		sp_error_prefix(err, "spot/termination-time: ");
		return r;
	}
	*ret = t - UTC_PLUS_8;
	return 0;
}

static int parse_rfc3339(const char *s, const char *what, int64_t *ret, struct sp_error *err)
{
	int r = parse_datetime(s, strlen(s), 'T', "Z", ret, err);
	if (r < 0)
		sp_error_prefix(err, "%s: ", what);
	return r;
}

/* A time the apiserver handed back that does not parse is the peer's fault. */
static int malformed(struct sp_error *err)
{
	if (err)
		err->code = SP_EPROTO;
	return SP_EPROTO;
}

cJSON *agent_condition_patch(int64_t deadline, int64_t now)
{
	char at[32], when[32], message[64];
	sp_format_time(now, when);
	sp_format_time(deadline, at);
	snprintf(message, sizeof(message), deadline ? NODE_TERMINATING_PREFIX "%s" : "no reclaim scheduled", at);
	cJSON *patch = cJSON_CreateObject(), *cond = cJSON_CreateObject();
	cJSON *conditions = cJSON_AddArrayToObject(cJSON_AddObjectToObject(patch, "status"), "conditions");
	cJSON_AddStringToObject(cond, "type", NODE_CONDITION_TERMINATING);
	cJSON_AddStringToObject(cond, "status", deadline ? "True" : "False");
	cJSON_AddStringToObject(cond, "reason", deadline ? AGENT_CONDITION_REASON : AGENT_WITHDRAWN_REASON);
	cJSON_AddStringToObject(cond, "message", message);
	cJSON_AddStringToObject(cond, "lastTransitionTime", when);
	cJSON_AddStringToObject(cond, "lastHeartbeatTime", when);
	cJSON_AddItemToArray(conditions, cond);
	return patch;
}

cJSON *agent_notice_object(const char *instance_id, int64_t deadline, const char *host, int64_t now)
{
	char at[32], when[32];
	sp_format_time(deadline, at);
	sp_format_time(now, when);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "apiVersion", POOL_API_VERSION);
	cJSON_AddStringToObject(o, "kind", AGENT_NOTICE_KIND);
	cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
	char *name = xasprintf("%s-%lld", instance_id, (long long)deadline);
	cJSON_AddStringToObject(meta, "name", name);
	free(name);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "labels"), "spotpool.jokerbai.com/instance-id",
				instance_id);
	cJSON *spec = cJSON_AddObjectToObject(o, "spec");
	cJSON_AddStringToObject(spec, "instanceId", instance_id);
	cJSON_AddStringToObject(spec, "reclaimAt", at);
	cJSON_AddStringToObject(spec, "reportedAt", when);
	if (host && *host)
		cJSON_AddStringToObject(spec, "host", host);
	return o;
}

int64_t agent_condition_read(const cJSON *node)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(node, "status"),
							       "conditions")) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
		const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");
		const cJSON *message = cJSON_GetObjectItemCaseSensitive(c, "message");
		if (!cJSON_IsString(type) || strcmp(type->valuestring, NODE_CONDITION_TERMINATING) != 0)
			continue;
		if (!cJSON_IsString(status) || strcmp(status->valuestring, "True") != 0)
			return 0;
		static const char prefix[] = NODE_TERMINATING_PREFIX;
		int64_t t;
		if (!cJSON_IsString(message) || strncmp(message->valuestring, prefix, sizeof(prefix) - 1) != 0 ||
		    parse_rfc3339(message->valuestring + sizeof(prefix) - 1, "message", &t, NULL) < 0 || t <= 0)
			return AGENT_REPORTED_UNREADABLE;
		return t;
	}
	return 0;
}

int agent_notice_read(const cJSON *notice, char ret_id[AGENT_INSTANCE_ID_MAX + 1], int64_t *ret_deadline,
		      struct sp_error *err)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(notice, "spec");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(spec, "instanceId");
	const cJSON *at = cJSON_GetObjectItemCaseSensitive(spec, "reclaimAt");
	if (!cJSON_IsString(id) || !*id->valuestring || strlen(id->valuestring) > AGENT_INSTANCE_ID_MAX)
		return sp_fail(err, SP_EPROTO, AGENT_NOTICE_KIND ": spec.instanceId is missing or longer than %d",
			       AGENT_INSTANCE_ID_MAX);
	if (!cJSON_IsString(at))
		return sp_fail(err, SP_EPROTO, AGENT_NOTICE_KIND ": spec.reclaimAt is missing");
	int64_t t;
	if (parse_rfc3339(at->valuestring, AGENT_NOTICE_KIND ": spec.reclaimAt", &t, err) < 0)
		return malformed(err);
	snprintf(ret_id, AGENT_INSTANCE_ID_MAX + 1, "%s", id->valuestring);
	*ret_deadline = t;
	return 0;
}

void agent_init(struct agent *a, const struct agent_options *o)
{
	*a = (struct agent){.o = *o};
	if (a->o.interval_ms <= 0)
		a->o.interval_ms = AGENT_INTERVAL_MS_DEFAULT;
	a->next_poll_ms = a->next_report_ms = a->o.clock.mono_ms(a->o.clock.ctx);
	a->known = !a->o.node_name;
}

/* One metadata item: 0 with its body on 200, SP_ENOTFOUND on 404, else an error. */
static int metadata_get(struct agent *a, const char *item, char **ret, struct sp_error *err)
{
	long status = 0;
	char *body = NULL;
	int r = a->o.metadata.get(a->o.metadata.ctx, item, &status, &body, err);
	if (r == 0 && status == 200) {
		*ret = body;
		return 0;
	}
	free(body);
	if (r < 0)
		return r;
	if (status == 404)
		return sp_fail(err, SP_ENOTFOUND, "%s: 404", item);
	return sp_fail(err, status >= 500 ? SP_ETRANSIENT : SP_EPROTO, "%s: HTTP %ld", item, status);
}

static bool instance_id_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > AGENT_INSTANCE_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

/* Reads the instance id (once) and the notice; false when the poll failed. */
static bool poll(struct agent *a, struct sp_error *err)
{
	char *body = NULL;
	if (!*a->instance_id) {
		if (metadata_get(a, "instance-id", &body, err) < 0)
			return false;
		body[strcspn(body, "\n")] = '\0';
		bool ok = instance_id_valid(body);
		if (ok)
			snprintf(a->instance_id, sizeof(a->instance_id), "%s", body);
		else
			sp_fail(err, SP_EPROTO, "instance-id: \"%.64s\" is not an instance id", body);
		free(body);
		if (!ok)
			return false;
		log_info("agent: this host is instance %s", a->instance_id);
	}
	int r = metadata_get(a, "spot/termination-time", &body, err);
	if (r == SP_ENOTFOUND) {
		a->announced = 0;
		a->polled = true;
		return true;
	}
	int64_t deadline;
	if (r == 0)
		r = agent_parse_termination_time(body, strlen(body), &deadline, err);
	free(body);
	if (r < 0)
		return false;
	a->announced = deadline;
	a->polled = true;
	return true;
}

static char *node_status_path(const struct agent *a)
{
	return xasprintf("/api/v1/nodes/%s/status", a->o.node_name);
}

/* What the Node holds of the agent's reports, into a->reported: a patch that changes
 * nothing answers with the Node (the agent may only patch nodes/status). A Node that
 * does not exist holds nothing. */
static int read_back(struct agent *a, struct sp_error *err)
{
	cJSON *empty = cJSON_CreateObject(), *node = NULL;
	char *path = node_status_path(a);
	int r = a->o.api->request(a->o.api->ctx, "PATCH", path, "application/strategic-merge-patch+json", empty,
				  &node, err);
	free(path);
	cJSON_Delete(empty);
	if (r == SP_ENOTFOUND)
		r = 0;
	if (r < 0)
		return r;
	a->reported = agent_condition_read(node);
	a->known = true;
	cJSON_Delete(node);
	if (a->reported) {
		char at[32] = "a deadline that does not read";
		if (a->reported > 0)
			sp_format_time(a->reported, at);
		log_info("agent: Node %s holds " NODE_CONDITION_TERMINATING "=True (reclaim at %s) but the metadata "
			 "announces no reclaim: withdrawn while the agent was down", a->o.node_name, at);
	}
	return 0;
}

static int report(struct agent *a, int64_t now, struct sp_error *err)
{
	cJSON *body;
	int r;
	if (a->o.node_name) {
		body = agent_condition_patch(a->announced, now);
		char *path = node_status_path(a);
		r = a->o.api->request(a->o.api->ctx, "PATCH", path, "application/strategic-merge-patch+json", body,
				      NULL, err);
		free(path);
	} else {
		body = agent_notice_object(a->instance_id, a->announced, a->o.host, now);
		char *path = xasprintf("/apis/" POOL_API_VERSION "/namespaces/%s/" AGENT_NOTICE_PLURAL, a->o.namespace);
		r = a->o.api->request(a->o.api->ctx, "POST", path, "application/json", body, NULL, err);
		if (r == SP_ECONFLICT)  /* created before (this agent restarted): reported */
			r = 0;
		free(path);
	}
	cJSON_Delete(body);
	return r;
}

static void report_due(struct agent *a, int64_t mono)
{
	char at[32];
	sp_format_time(a->announced, at);
	if (!a->o.node_name && !a->announced) {
		log_info("agent: the notice was withdrawn; its " AGENT_NOTICE_KIND " stays until its deadline "
			 "passes (the agent may only create them)");
		a->reported = 0;
		return;
	}
	struct sp_error err = {0};
	int64_t now = a->o.clock.now(a->o.clock.ctx);
	/* Nothing announced and the Node not read back yet: it may hold a notice reported
	 * before a restart and withdrawn since. A notice announced needs no read-back: its
	 * report makes the Node agree. */
	int r = !a->known && !a->announced ? read_back(a, &err) : 0;
	if (r == 0 && a->known && a->announced == a->reported) {
		a->backoff_ms = 0;
		return;  /* it holds nothing to withdraw */
	}
	if (r == 0 && report(a, now, &err) == 0) {
		a->reported = a->announced;
		a->known = true;
		a->backoff_ms = 0;
		a->reports++;
		if (a->announced)
			log_info("agent: instance %s is reclaimed at %s (in %lld s): reported on %s %s", a->instance_id,
				 at, (long long)(a->announced - now), a->o.node_name ? "Node" : AGENT_NOTICE_KIND,
				 a->o.node_name ? a->o.node_name : a->o.namespace);
		else
			log_info("agent: the notice for instance %s was withdrawn: " NODE_CONDITION_TERMINATING "=False on "
				 "Node %s", a->instance_id, a->o.node_name);
		return;
	}
	a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : BACKOFF_FIRST_MS;
	if (a->backoff_ms > AGENT_BACKOFF_MAX_MS)
		a->backoff_ms = AGENT_BACKOFF_MAX_MS;
	a->next_report_ms = mono + a->backoff_ms;
	char what[320] = "reporting the withdrawal of the notice";
	if (!a->known && !a->announced)
		snprintf(what, sizeof(what), "reading back Node %s", a->o.node_name);
	else if (a->announced)
		snprintf(what, sizeof(what), "reporting the notice (reclaim at %s)", at);
	log_warn("agent: %s failed, retrying in %lld ms: %s", what, (long long)a->backoff_ms,
		 log_redact(err.msg, sizeof(err.msg)));
}

int64_t agent_step(struct agent *a)
{
	int64_t mono = a->o.clock.mono_ms(a->o.clock.ctx);
	if (mono >= a->next_poll_ms) {
		struct sp_error err = {0};
		bool ok = poll(a, &err);
		if (!ok && !a->poll_failing)
			log_warn("agent: instance metadata: %s (retrying every %lld ms)", err.msg,
				 (long long)a->o.interval_ms);
		else if (ok && a->poll_failing)
			log_info("agent: instance metadata answers again");
		a->poll_failing = !ok;
		a->next_poll_ms = mono + a->o.interval_ms;
	}
	bool pending = a->polled && (a->announced != a->reported || !a->known);
	if (pending && mono >= a->next_report_ms)
		report_due(a, mono);
	pending = a->polled && (a->announced != a->reported || !a->known);
	return pending && a->next_report_ms < a->next_poll_ms ? a->next_report_ms : a->next_poll_ms;
}

void agent_run(struct agent *a, const struct stop *stop)
{
	while (!stop_wait_until_ms(stop, agent_step(a)))
		;
}
