/* pass: the pass planner. Pure: everything one reconcile pass knows about its pool ->
 * the ordered list of actions to take. No I/O, no clock, no locks: the executor
 * (reconcile) observes, calls pass_plan, runs the actions in order, records each answer
 * in struct pass_done and calls pass_plan again after every action, so every decision
 * (what to launch where, what to terminate, when to record or clear the ledger, when a
 * failure is a new event episode, when to release, when to look again) is made here.
 * The sizing rules are plan_compute's (plan.h); the offering choice is offer_choose's. */
#ifndef SPOTPOOL_PASS_H
#define SPOTPOOL_PASS_H

#include "node.h"
#include "offer.h"
#include "plan.h"
#include "status.h"

#include <cjson/cJSON.h>

#define PASS_REQUEUE_PROGRESS_MS 2000
/* A conflict means the object changed under us: look again almost at once. */
#define PASS_REQUEUE_CONFLICT_MS 200
/* Most launch attempts (offerings tried) in one pass: a pool whose many offerings all
 * answer "sold out" goes on with the next ones a pass later (they stay marked), and
 * each pass ends with its status written. */
#define PASS_LAUNCH_ATTEMPTS_MAX 8
/* Most actions a pass records the answers of (a pass takes a few dozen at most: about
 * 6 per launch attempt, and up to PASS_LAUNCH_ATTEMPTS_MAX attempts). */
#define PASS_DONE_MAX 256
/* Most drains of a group (scale-down, notice, deletion) one pass takes a step of (up to
 * 3 actions each, within PASS_DONE_MAX); the others follow in the next passes. */
#define PASS_DRAINS_MAX 16
/* NodeClaimsRefused's event comes when the condition turns True or changes reason, but
 * only after it held still this long: a Node flapping its claim cannot flood events. */
#define PASS_CLAIMS_EVENT_QUIET_SECONDS 600

enum pass_kind {
	PASS_ADD_FINALIZER,
	PASS_SWEEP,          /* list the ledger's zone without a tag filter (plan.sweep) */
	PASS_RECLAIMED,      /* ids: gone without spotpool terminating them (event + metric each) */
	PASS_TAKE_PROBE,     /* offering: take its probe (soldout_probe); refused: sold out */
	PASS_RECORD_LEDGER,  /* write status (with ledger and launch_seq) before/after a launch */
	PASS_LAUNCH,         /* RunInstances: offering, count, token; fresh or a repeat */
	PASS_CHECK_LAUNCH,   /* dry-run: RunInstances DryRun=true */
	PASS_REMEMBER,       /* keep a fresh launch's answered IDs in memory (answers.h) */
	PASS_SOLDOUT_MARK,   /* offering answered sold out (or its probe did not launch) */
	PASS_SOLDOUT_FORGET, /* offering launched: available again */
	PASS_SOLDOUT_RETURN, /* the probe held never reached the cloud */
	PASS_CLEAR_LEDGER,   /* write status without the ledger */
	PASS_TERMINATE,      /* ids, reason */
	PASS_WOULD_TERMINATE,/* dry-run: the ids a terminate would take, told, not done */
	PASS_LIST_PODS,      /* ids: Nodes whose pods the drains need (pass_input.pods) */
	PASS_DRAIN_START,    /* ids: one Node, node_uid its UID: taint, cordon, annotate (evict_start);
			      * SP_ENOTFOUND: no Node of that UID (gone, the name reused) */
	PASS_EVICT,          /* ids: "namespace/name" of pods to evict (evict_pod) */
	PASS_DRAIN_UNDO,     /* ids: one Node: the drain given up or no longer wanted (evict_undo) */
	PASS_DELETE_NODE,    /* ids: one Node of a gone instance, node_uid its UID (message: the
			      * instance); 0 also when no Node of that UID is left (404, 409) */
	PASS_WOULD_DELETE_NODE, /* dry-run: ids: the Nodes deletes would take, told, not done */
	PASS_FIND_NODES,     /* the Nodes of the instances listed from the apiserver, not the cache:
			      * pass_input.nodes, recorded_nodes and refused from then on */
	PASS_EVENT,          /* type, reason, message */
	PASS_RELEASE,        /* remove the finalizer: the deleted pool goes */
	PASS_WRITE_STATUS,   /* the final status (without ledger keys), if it changed */
	PASS_REREAD,         /* a guarded write conflicted: read the pool again */
	PASS_REQUEUE,        /* the pass's outcome: look again after requeue_ms, error */
};

enum pass_why {
	PASS_WHY_NONE,
	PASS_WHY_SCALE_DOWN,  /* terminate: above target */
	PASS_WHY_CLEANUP,     /* terminate: dead instances */
	PASS_WHY_DELETION,    /* terminate: the pool is deleted */
	PASS_WHY_NOTICE,      /* terminate: doomed (a reclaim notice), drained and replaced */
};

/* status.accountFingerprint, the account the recorded instances were launched in, in
 * one of two non-secret forms (never a SecretId nor an AccountId):
 *  - the account's: PASS_ACCOUNT_FP_PREFIX and the first 16 hex digits of the SHA-256 of
 *    "account:" + the AccountId STS GetCallerIdentity answers for the credentials; the
 *    same for every key of the account, so a rotated key is known for the same account
 *    whatever the cloud still shows (pass_account_fingerprint);
 *  - the key's: the first 16 hex digits of the SHA-256 of the SecretId, recorded while
 *    the account is not learned yet (STS not answering) and by versions before STS was
 *    asked (pass_key_fingerprint). */
#define PASS_ACCOUNT_FP_PREFIX "acct-"
#define PASS_KEY_FP_LEN 16
#define PASS_ACCOUNT_FP_LEN (sizeof(PASS_ACCOUNT_FP_PREFIX) - 1 + 16)
/* What the credentials in use say of the account the recorded instances were launched in
 * (D3): the same (the recorded fingerprint is theirs, in either form, or no credentials
 * to check), a new fingerprint to record (none was recorded, nothing is recorded, or a
 * recorded instance shows to the new credentials: a rotated key of the same account), or
 * another account (none of the recorded instances shows: a NotFound there is no proof
 * they are gone). */
enum pass_account { PASS_ACCOUNT_SAME, PASS_ACCOUNT_ADOPT, PASS_ACCOUNT_CHANGED };

/* Which credentials a pool uses: its Secret, else inline keys, else the controller's. */
enum pass_creds { PASS_CREDS_NONE, PASS_CREDS_SECRET, PASS_CREDS_INLINE, PASS_CREDS_DEFAULT };

struct pass_action {
	enum pass_kind kind;
	int step;                    /* identifies the action within the pass (pass_done) */
	/* launch, check, probe, sold-out marks: the offering (zone, type) */
	char zone[POOL_ZONE_MAX + 1];
	char instance_type[POOL_INSTANCE_TYPE_MAX + 1];
	int count;
	bool fresh;                  /* launch: a new ClientToken (else a repeat of the ledger's) */
	struct strv ids;             /* terminate, reclaimed: instances; delete node: Nodes */
	char node_uid[NODE_UID_MAX + 1]; /* delete node, drain start/undo: the UID it must still have */
	/* delete node: from .status.nodeDeletions (node_ref.carried): deleted only while
	 * that Node declares the instance's ID (a status edit cannot name any Node) */
	bool node_carried;
	enum pass_why why;
	const char *event_type, *reason;  /* event: Normal/Warning, reason */
	char *message;               /* event message, log line of terminate/release */
	/* record/clear ledger, write status: the status to write (owned) and, for the
	 * ledger, what it says afterwards */
	cJSON *status;
	struct plan_launch ledger;
	bool has_ledger;
	int64_t launch_seq;
	int64_t requeue_ms;          /* requeue: > 0 look again then */
	int error;                   /* requeue: < 0 retry with backoff */
};

struct pass_actions {
	struct pass_action *v;
	size_t n;
	int live;                    /* live instances observed; -1: the cloud was not read */
	int target;                  /* the size the pool converges to (when live >= 0) */
	/* The failure the pass ends with so far (Degraded), NULL: none. */
	const char *degraded_reason;
	char degraded_message[SP_ERROR_MAX];
};

/* The answer of one action of this pass, as the executor recorded it. */
struct pass_answer {
	int step;
	enum pass_kind kind;
	int code;                    /* 0 or SP_E* */
	char reason[96];             /* the peer's code (Tencent Error.Code), or empty */
	char message[SP_ERROR_MAX];  /* what failed, redacted */
	bool sold_out;               /* a launch refused as "this offering has no capacity" */
};

/* What earlier actions of this pass answered: grown as answers come (a pass takes a
 * few), at most PASS_DONE_MAX. Zero-initialized is empty; pass_done_free frees it. */
struct pass_done {
	struct pass_answer *v;
	size_t n, cap;
};

/* A Node's pods, classified (drain.h), as PASS_LIST_PODS answered for that Node alone:
 * one Node's failure holds only that Node's drain. */
struct pass_pods {
	bool listed;                 /* the listing was tried this pass */
	const struct drain_pod *v;
	size_t n;
	const char *failed;          /* NULL: v[0..n) are its pods; else why it failed */
};

struct pass_input {
	const char *ns, *name;
	/* The spec: validated (spec_valid), or only what cleanup needs (deleting), or NULL
	 * (invalid: spec_error says why). */
	const struct pool_spec *spec;
	bool spec_valid;
	const char *spec_error;
	bool deleting;
	/* metadata.deletionTimestamp (epoch s, 0: unknown): a deleted pool's drain that cannot
	 * even start (its Node cannot be tainted) ends a drainTimeout after it. */
	int64_t deleted_at;
	bool finalizer;              /* ours is on the object */
	bool active;                 /* leading (or no leader election) */
	bool dry_run;
	const cJSON *old_status;     /* the status as last read or written */
	int64_t generation;
	/* The Degraded condition as the pass found it (NULL: not degraded). */
	const char *start_degraded_reason;
	/* Observation: < 0 when credentials or the cloud could not be read (observe_action
	 * and observe_message say which and why); the rest is then not known. */
	int observe_code;
	const char *observe_action, *observe_message;
	bool insecure_credentials;
	/* What plan_compute takes (instances, recorded IDs, the ledger as the pass found
	 * it, now, grace, swept). */
	struct plan_input plan;
	/* What this pass's actions changed: the ledger as the status says now (NULL: none),
	 * the launches recorded so far, the instances terminated. */
	const struct plan_launch *ledger;
	int64_t launch_seq;
	const struct strv *terminated;
	/* Offerings, and their states from the sold-out memory at now_ms (monotonic ms);
	 * probe_at_ms[i]: when offering i's next probe is due (not AVAILABLE). */
	const struct offer_list *offers;
	const enum offer_state *offer_state;
	const int64_t *probe_at_ms;
	int64_t now_ms;
	int64_t soldout_ttl_ms;
	/* Nodes (node.h), NULL when not known (node features off, the Node cache not listed
	 * yet), as the Node cache has them until PASS_FIND_NODES answers, then as the
	 * apiserver listed them: nodes[i] is the Node of plan.instances[i] for i < n_nodes
	 * (name empty: none);
	 * recorded_nodes[i] the Node of plan.seen->v[i] when it is not observed, matched by
	 * ID and the private IP the status recorded, or by the Node name and private IP it
	 * recorded for a Node declaring no ID (node_match: deleted once no kubelet reports
	 * it, node_address_judge). A Node of a recorded
	 * instance that is gone (neither observed nor someone else's) or going away
	 * (observed TERMINATING, SHUTTING_DOWN) is deleted: no other controller deletes the
	 * Nodes of spot instances. */
	const struct node_view *nodes;
	size_t n_nodes;
	const struct node_view *recorded_nodes;
	/* The .status.nodeDeletions entries as observed at the start of the pass, NULL: read
	 * from old_status. The pass's writes change old_status, but a deletion's step and
	 * view go by its place in this list, which must not move within a pass (fault
	 * campaign seed 7: an entry that moved up took the deleted one's answer and view,
	 * and the deleted pool was released while it waited). */
	const struct node_ref *deletion_refs;
	/* The Node of each of those entries as the Node cache has it by name (name empty:
	 * none), or NULL with nodes: what an entry matched by its address is judged on. */
	const struct node_view *deletion_nodes;
	size_t n_deletion_nodes;
	/* The Node claims to those instances node_match did not honour (with nodes): shown
	 * as the NodeClaimsRefused condition, a Warning event per episode. An instance two
	 * Nodes claim (contested) has no Node, but may have one: it is not terminated by
	 * choice (scale-down, notice) without a drain while that lasts. */
	const struct node_refusal *refused;
	size_t n_refused;
	/* The pods of nodes[i] as PASS_LIST_PODS found them (pods[i], for i < n_nodes: each
	 * Node listed or failed on its own; the action itself does not fail), or NULL: none
	 * listed this pass. */
	const struct pass_pods *pods;
	/* Node features are on but the Nodes are not listed yet (a fresh start, a new
	 * leader): nothing spotpool chooses to terminate goes before they are, since its
	 * Node may need draining. */
	bool nodes_pending;
	/* The reclaim deadline of plan.instances[i] that a SpotNotice announced, bounded
	 * (doom_deadline: notices_find's) (epoch seconds, 0: none) for i < n_notice_at (the
	 * instances observed when the notices were read: a sweep appends more), or NULL: none
	 * known. With its Node's SpotTerminating condition (bounded from terminating_seen)
	 * and the status's reclaimAt, the earliest makes the instance doomed (doom.h). */
	const int64_t *notice_at;
	size_t n_notice_at;
	/* SpotNotices are not listed yet (a fresh start): no excess is scaled down before
	 * they are (a doomed instance's replacement would look like excess). Deletions,
	 * cleanup and deadlines go on: a notice can only doom more or bring a deadline
	 * earlier. */
	bool notices_pending;
	/* The credentials in use: their key's fingerprint (pass_key_fingerprint), NULL: none
	 * resolved; their account's (pass_account_fingerprint), NULL: not learned (yet).
	 * Checked against old_status.accountFingerprint (pass_account_check). */
	const char *account_key;
	const char *account;
};

/* The credentials source that wins: spec.credentialsSecretRef, else inline keys, else
 * the controller's default; NONE when there is none. */
enum pass_creds pass_credentials_source(const struct pool_spec *spec, bool have_default);

void pass_key_fingerprint(const char *secret_id, char out[PASS_KEY_FP_LEN + 1]);
void pass_account_fingerprint(const char *account_id, char out[PASS_ACCOUNT_FP_LEN + 1]);
/* recorded: status.accountFingerprint (NULL: none); key and account: the credentials'
 * fingerprints (key NULL: none resolved, SAME; account NULL: not learned). A recorded
 * fingerprint equal to either is theirs. Otherwise the cloud decides: what the account
 * holds is the recorded instances (seen) and the ledger's launch (its IDs, or its
 * ClientToken while its outcome is unknown), proven still in the account when
 * plan.instances (owned, observed with the current credentials) has one; nothing held,
 * nothing to lose. ret_record: the fingerprint to record (borrowed from key or account),
 * NULL to keep the recorded one: the account's when learned (a key's is rewritten to it,
 * the way a status of an older version moves over), else the key's, but an account's
 * recorded stays while the account is not learned. */
enum pass_account pass_account_check(const char *recorded, const char *key, const char *account,
				     const struct plan_input *plan, const char **ret_record);

/* The actions left to take, given what the pass knows (in) and what earlier actions of
 * this pass answered (done). Empty when the pass is over. */
void pass_plan(const struct pass_input *in, const struct pass_done *done, struct pass_actions *ret);
void pass_actions_free(struct pass_actions *a);
/* Records the answer of action a (reason and message may be NULL); nothing once
 * PASS_DONE_MAX answers are recorded. */
void pass_done_add(struct pass_done *d, const struct pass_action *a, int code, const char *reason,
		   const char *message, bool sold_out);
void pass_done_free(struct pass_done *d);
/* One line describing a, stable across runs (no times, no request IDs): what dry-runs
 * print and the controller logs. */
void pass_action_line(const struct pass_action *a, char *out, size_t size);
/* The ClientToken of a pool's n-th launch: stable across restarts, <= 64 ASCII. */
void pass_client_token(const char *uid, const char *ns, const char *name, int64_t seq, char out[65]);

#endif
