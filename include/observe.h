/* observe: what a pass knows before it plans, gathered into the planner's input: what
 * the pool object records (ledger, recorded instances, Degraded), its credentials, the
 * owned instances the cloud shows and, where the caller has them, the Nodes, SpotNotices,
 * the credentials' account and the sold-out memory. One observation for every dry-run:
 * reconcile's (`run`, `run --dry-run`) reads the cluster's caches; `spotpool dry-run`
 * (dryrun.c) has none, and gives credentials it resolved from its files. */
#ifndef SPOTPOOL_OBSERVE_H
#define SPOTPOOL_OBSERVE_H

#include "acct.h"
#include "answers.h"
#include "creds.h"
#include "cvm.h"
#include "inv.h"
#include "kube.h"
#include "node.h"
#include "offer.h"
#include "pass.h"
#include "soldout.h"

/* How long a pass waits for an inventory listing newer than its pool's last change. */
#define OBSERVE_READ_TIMEOUT_MS 15000

/* The Node cache as a pass reads it (a port): find behaves as nodes_find (nodes.h) for
 * the pool "<namespace>/<name>", get as nodes_get. find NULL: node features are off. */
struct node_reader {
	int (*find)(void *ctx, const char *pool, const struct node_want *want, size_t n, struct node_view *ret,
		    enum node_by *ret_by, struct node_refusals *ret_refused);
	int (*get)(void *ctx, const char *name, struct node_view *ret);
	void *ctx;
};

/* The SpotNotice cache as a pass reads it (a port): find behaves as notices_find
 * (notices.h) for the pool "<namespace>/<name>". find NULL: no notices. */
struct notice_reader {
	int (*find)(void *ctx, const char *pool, const char *const *ids, size_t n, int64_t *ret_at);
	void *ctx;
};

/* The Secret named by a pool's credentialsSecretRef (a port): its secretId, secretKey and
 * optional token into ret, with ret's source naming where they came from; err names the
 * Secret and what is wrong with it. */
struct secret_reader {
	int (*read)(void *ctx, const char *ns, const char *name, struct creds *ret, struct sp_error *err);
	void *ctx;
};
/* The Secrets of the cluster, read through kube. */
struct secret_reader observe_kube_secrets(struct kube_api *kube);

/* Where a pool's credentials come from when none are given resolved. */
struct observe_creds_source {
	const struct creds *dflt;      /* for pools that name none; NULL or empty: none */
	struct secret_reader secrets;  /* read NULL: no Secret can be read */
	const char *no_credentials;    /* the error when a pool names none and there is no dflt */
};

/* The pool's credentials in the controller's precedence (pass_credentials_source): the
 * Secret, else the inline secretId/secretKey, else the default. Their values are
 * registered for redaction as the pool "<ns>/<name>"'s (replacing the ones it had). */
int observe_credentials(const struct pool_spec *s, const char *ns, const char *name,
			const struct observe_creds_source *src, struct creds *ret, struct sp_error *err);

/* What an observation reads through; any port (and pointer) may be empty. */
struct observe_ports {
	struct inv_reader inv;           /* the tag listing: the shared inventory, or a call */
	struct cvm_api cvm;              /* lookups by ID; STS (caller_identity) */
	struct node_reader nodes;        /* the Node cache */
	struct notice_reader notices;    /* the SpotNotice cache */
	struct soldout *soldout;         /* NULL: every offering available */
	struct acct *accounts;           /* NULL: the account is not learned */
	struct sp_clock clock;           /* with accounts: when an account was asked */
	const _Atomic int64_t *until;    /* calls end by then (NULL: no deadline) */
};

struct observe_options {
	const char *cluster_name;          /* count only this cluster's instances; NULL: all */
	const struct creds *creds;         /* resolved already; NULL: observe_credentials(source) */
	struct observe_creds_source source;
};

/* Everything one pass knows about its pool. The caller sets ns, name, spec (NULL: the
 * spec does not validate), now and now_ms; the rest is observed. A pass's actions update
 * what they change (the instances a sweep finds, the Nodes listed live, the ledger). */
struct observation {
	const char *ns, *name;
	const struct pool_spec *spec;
	int64_t now, now_ms;         /* wall time (s), monotonic ms: what the plan judges at */
	char *owner;                 /* the pool's tag value */
	/* From the object (observe_object). */
	bool deleting;
	int64_t deleted_at;          /* metadata.deletionTimestamp, epoch s (0: unknown) */
	char *start_degraded_reason; /* the Degraded condition as found, NULL: not degraded */
	bool unsettled;              /* the inventory's fast cadence may be needed */
	struct plan_launch found;    /* the ledger as the pass found it */
	bool has_found;
	struct plan_launch ledger;   /* the ledger as the status says now */
	bool has_ledger;
	int64_t launch_seq;
	struct strv seen, seen_live; /* recorded by earlier passes (.status.instances) */
	struct strv seen_zones;      /* the zone recorded with each of seen ("": none) */
	struct strv seen_ips;        /* seen's recorded private IPs, "" none */
	struct strv seen_nodes;      /* seen's recorded Node names, "" none */
	/* From the cloud and the caches (observe_pool). */
	struct creds creds;
	char account_key[PASS_KEY_FP_LEN + 1];  /* the credentials' key fingerprint, "": none */
	char account[PASS_ACCOUNT_FP_LEN + 1];  /* their account's fingerprint, "": not learned */
	bool insecure;               /* inline credentials */
	int code;                    /* < 0: credentials or the cloud could not be read */
	struct sp_error error;       /* then: the failure as the call answered it */
	char message[SP_ERROR_MAX];  /* and what the pool's status says of it (redacted) */
	struct pool_instance *instances;  /* owned instances known this pass */
	size_t n_instances;
	struct strv foreign;         /* recorded IDs that turned out not to be ours */
	/* The Nodes of instances[0..n_nodes) and then of seen, NULL: unknown. */
	struct node_view *nodes;
	size_t n_nodes;
	struct node_refusals refused; /* the Node claims to them not honoured */
	/* The .status.nodeDeletions entries as observed, and the Node of each by name (name
	 * empty: none), NULL: unknown. */
	struct node_ref *deletion_refs;
	struct node_view *deletion_nodes;
	size_t n_deletion_nodes;
	bool nodes_pending;          /* Nodes are on but not listed yet */
	/* instances[i]'s SpotNotice deadline for i < n_notice_at (those observed before a
	 * sweep appended more), NULL: none read */
	int64_t *notice_at;
	size_t n_notice_at;
	bool notices_pending;        /* SpotNotices not listed yet */
	struct offer_list offers;
	enum offer_state offer_state[OFFER_MAX];
	int64_t probe_at[OFFER_MAX];
	int64_t soldout_ttl_ms;
};

/* What the object obj (NULL: none) records. answers, when given, recalls the IDs a
 * launch of unknown outcome answered (and forgets them when no ledger is left). */
void observe_object(struct observation *o, const cJSON *obj, struct answers *answers);
/* Credentials, the cloud, then the caches, the account and the offerings of the pool
 * whose object is obj (NULL: none). Needs a spec. */
void observe_pool(struct observation *o, const cJSON *obj, const struct observe_ports *ports,
		  const struct observe_options *opt);
/* The planner's input from o and the object as last read or written (NULL: none): what
 * the pass's actions add (active, dry_run, spec_valid, terminated, pods, ...) is the
 * caller's to set. */
void observe_input(const struct observation *o, const cJSON *obj, struct pass_input *in);
/* Where o's instances live (plan_by_region). */
struct plan_where observe_where(const struct observation *o);
/* What a pass looks for Nodes of (*ret_n of them; node_match). */
struct node_want *observe_node_wants(const struct observation *o, size_t *ret_n);
void observation_free(struct observation *o);

#endif
