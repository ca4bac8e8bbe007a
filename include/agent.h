/* agent: `spotpool agent`, the in-guest spot notice agent (docs/notice-agent.md).
 *
 * Tencent announces a spot reclaim to the instance itself, about two minutes ahead: the
 * metadata item spot/termination-time answers 404 until then, then 200 with the reclaim
 * time ("YYYY-MM-DD HH:MM:SS", UTC+8). The agent polls it and reports a notice through
 * the apiserver, once per notice:
 *   - on a Node (--node-name, or NODE_NAME from the downward API): the condition
 *     SpotTerminating=True, reason SpotInstanceTerminating, message
 *     "reclaim at <RFC3339 UTC deadline>", by a strategic merge patch of nodes/NAME/status
 *     (conditions merge by type, so no other condition is touched); a notice withdrawn
 *     later (404 again) sets it False, reason SpotNoticeWithdrawn. On start it reads
 *     back what it last reported (a patch that changes nothing answers with the Node:
 *     no read access needed), so a notice withdrawn while it was down is set False too;
 *   - on a host that is not a Node: a SpotNotice object (devops.jokerbai.com/v1, named
 *     <instance id>-<deadline epoch>), created only (a 409 means already reported).
 * Pure: the parse of the answer, the patch and object it writes, and what the controller
 * reads back from a SpotNotice (agent_notice_read; from a Node, node_view_from_json's
 * terminating_at in node.h). The poll and report
 * go through ports (struct agent_metadata, struct kube_api), one round per agent_step. */
#ifndef SPOTPOOL_AGENT_H
#define SPOTPOOL_AGENT_H

#include "node.h"
#include "spotpool.h"

#include <cjson/cJSON.h>

struct kube_api;
struct stop;

#define AGENT_CONDITION_REASON "SpotInstanceTerminating"
#define AGENT_WITHDRAWN_REASON "SpotNoticeWithdrawn"
#define AGENT_NOTICE_KIND "SpotNotice"
#define AGENT_NOTICE_PLURAL "spotnotices"
#define AGENT_METADATA_URL_DEFAULT "http://metadata.tencentyun.com/latest/meta-data"
#define AGENT_INTERVAL_MS_DEFAULT 2000
/* A failed report is retried after 500 ms, doubling up to this. */
#define AGENT_BACKOFF_MAX_MS 8000
/* Longest instance id taken from the metadata (Tencent's are 12 characters). */
#define AGENT_INSTANCE_ID_MAX 63
/* Longest metadata answer read. */
#define AGENT_METADATA_MAX 4096

/* The answer of spot/termination-time, "YYYY-MM-DD HH:MM:SS" in UTC+8 (one trailing
 * newline allowed, nothing else), as epoch seconds. SP_EINVAL naming what is wrong. */
int agent_parse_termination_time(const char *text, size_t len, int64_t *ret, struct sp_error *err);

/* The strategic merge patch of nodes/NAME/status for a notice of deadline (epoch
 * seconds), or with deadline 0 for a withdrawn one; now is the transition time. */
cJSON *agent_condition_patch(int64_t deadline, int64_t now);

/* What a Node says the agent reported last: the deadline of its SpotTerminating=True
 * condition, AGENT_REPORTED_UNREADABLE for a True one whose message does not read as
 * the agent writes it, 0 for none (False, Unknown or no such condition). */
#define AGENT_REPORTED_UNREADABLE (-1)
int64_t agent_condition_read(const cJSON *node);

/* The SpotNotice object for instance_id's reclaim at deadline, reported by host
 * (may be NULL) at now. */
cJSON *agent_notice_object(const char *instance_id, int64_t deadline, const char *host, int64_t now);
/* A SpotNotice object's instance id and deadline; SP_EPROTO naming the field that is
 * missing or malformed. */
int agent_notice_read(const cJSON *notice, char ret_id[AGENT_INSTANCE_ID_MAX + 1], int64_t *ret_deadline,
		      struct sp_error *err);

/* The metadata service as a port: GET <base>/<item> ("instance-id",
 * "spot/termination-time"). 0 with the HTTP status and the body (at most
 * AGENT_METADATA_MAX bytes, NUL-terminated, freed by the caller), or a negative SP_E*
 * when no answer came. */
struct agent_metadata {
	int (*get)(void *ctx, const char *item, long *ret_status, char **ret_body, struct sp_error *err);
	void *ctx;
};

struct agent_options {
	const struct kube_api *api;
	struct agent_metadata metadata;
	struct sp_clock clock;
	const char *node_name;  /* report on this Node; NULL: a SpotNotice in namespace */
	const char *namespace;
	const char *host;       /* this host's name, in a SpotNotice (may be NULL) */
	int64_t interval_ms;    /* between polls */
};

/* What one agent knows between rounds; no thread of its own. */
struct agent {
	struct agent_options o;
	char instance_id[AGENT_INSTANCE_ID_MAX + 1];  /* "" until the metadata said */
	int64_t announced;   /* deadline of the notice the metadata shows now, 0: none */
	int64_t reported;    /* deadline last reported (0: none, or a withdrawal reported) */
	bool polled;         /* the metadata has answered since the start */
	bool known;          /* reported is what the cluster holds: read back or written since
			      * the start (a SpotNotice agent, create-only, cannot withdraw) */
	int64_t next_poll_ms, next_report_ms, backoff_ms;
	bool poll_failing;   /* the last poll failed (warned once, not every round) */
	unsigned reports;    /* successful reports, for tests and the log */
};

void agent_init(struct agent *a, const struct agent_options *o);
/* One round at the clock's monotonic time: polls the metadata when due, and reports a
 * notice (or, on a Node, its withdrawal) not yet reported, retrying a failed report
 * with backoff. On a Node whose metadata announces nothing, the first report reads
 * back the Node's condition first and withdraws a True one. Returns the monotonic time of the next round. */
int64_t agent_step(struct agent *a);
/* Rounds until stop is requested. */
void agent_run(struct agent *a, const struct stop *stop);

#endif
