/* status: builds a Spotpool's .status from what reconcile observed and decided.
 * Pure; the controller patches the result only when it differs from the old one. */
#ifndef SPOTPOOL_STATUS_H
#define SPOTPOOL_STATUS_H

#include "plan.h"
#include "pool.h"

#include <cjson/cJSON.h>

struct status_input {
	const char *selector;              /* label selector for the /scale subresource, or NULL */
	const cJSON *old_status;           /* current .status or NULL */
	int64_t generation;
	const struct pool_instance *instances;
	size_t n_instances;
	const struct plan *plan;           /* NULL when no plan could be made */
	const struct plan_launch *ledger;  /* the in-flight launch, or NULL */
	int64_t launch_seq;
	const char *degraded_reason;       /* NULL: not degraded */
	const char *degraded_message;
	const char *progress_message;      /* overrides the computed Progressing message */
	bool insecure_credentials;
	int64_t now;
};

cJSON *status_build(const struct status_input *in);
/* One .status.instances[] entry (also used by dry-run's JSON output). */
cJSON *status_instance_json(const struct pool_instance *instance);
/* The ledger recorded in a status (.status.launch), if any. */
bool status_ledger(const cJSON *status, struct plan_launch *ret);
int64_t status_launch_seq(const cJSON *status);
/* A condition's field ("status", "reason", "message") or NULL. */
const char *status_condition(const cJSON *status, const char *type, const char *field);
void status_format_time(int64_t t, char out[32]);

#endif
