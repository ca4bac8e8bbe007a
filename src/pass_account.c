/* pass_account: which credentials a pool uses, the fingerprints of its key and account,
 * whether the account behind the key still holds the recorded instances, and the
 * ClientToken of each launch: the hashes that tie a pool's instances to whoever launched
 * them (pass.h). */
#include "pass.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

enum pass_creds pass_credentials_source(const struct pool_spec *spec, bool have_default)
{
	if (spec->credentials_secret)
		return PASS_CREDS_SECRET;
	if (spec->secret_id)
		return PASS_CREDS_INLINE;
	return have_default ? PASS_CREDS_DEFAULT : PASS_CREDS_NONE;
}

/* prefix and the first 16 hex digits of the SHA-256 of text. */
static void fingerprint(const char *prefix, const char *text, char *out, size_t size)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)text, strlen(text), md);
	char hex[2 * SHA256_DIGEST_LENGTH + 1];
	sp_hex(md, sizeof(md), hex);
	snprintf(out, size, "%s%.16s", prefix, hex);
}

void pass_key_fingerprint(const char *secret_id, char out[PASS_KEY_FP_LEN + 1])
{
	fingerprint("", secret_id, out, PASS_KEY_FP_LEN + 1);
}

void pass_account_fingerprint(const char *account_id, char out[PASS_ACCOUNT_FP_LEN + 1])
{
	char *text = xasprintf("account:%s", account_id);
	fingerprint(PASS_ACCOUNT_FP_PREFIX, text, out, PASS_ACCOUNT_FP_LEN + 1);
	free(text);
}

/* Whether what the credentials in use see proves the recorded instances' account theirs
 * (ADOPT), or something recorded is left that their absence cannot prove gone (CHANGED).
 * other_known: STS named another account than the recorded one. */
static enum pass_account account_seen(const struct plan_input *plan, bool other_known)
{
	const struct plan_launch *l = plan->ledger;
	for (size_t i = 0; i < plan->n_instances; i++) {
		const struct pool_instance *p = &plan->instances[i];
		if ((plan->seen && strv_contains(plan->seen, p->id)) || (l && strv_contains(&l->instance_ids, p->id)) ||
		    (l && *l->client_token && strcmp(p->launch_tag, l->client_token) == 0))
			return PASS_ACCOUNT_ADOPT;
	}
	/* A launch counts, IDs or not, while it may still show (the launch grace): repeated
	 * with another account's credentials, its ClientToken (per account) would launch it
	 * again there. Past the grace, unseen, it is taken as lost: a rotated key must not
	 * hold the pool for good on a launch that never happened. Unless STS named another
	 * account: then its credentials could never see it, and unseen proves nothing (the
	 * campaign's seed 430: resumed past the grace, it launched a second instance while
	 * the first ran on in the other account). */
	int64_t grace = plan->launch_grace > 0 ? plan->launch_grace : PLAN_LAUNCH_GRACE_DEFAULT_SECONDS;
	bool launch_pending = l && (l->instance_ids.n || other_known || plan->now < l->started + grace);
	return (plan->seen && plan->seen->n) || launch_pending ? PASS_ACCOUNT_CHANGED : PASS_ACCOUNT_ADOPT;
}

enum pass_account pass_account_check(const char *recorded, const char *key, const char *account,
				     const struct plan_input *plan, const char **ret_record)
{
	*ret_record = NULL;
	if (!key)
		return PASS_ACCOUNT_SAME;
	bool have = recorded && *recorded;
	if (have && (strcmp(recorded, key) == 0 || (account && strcmp(recorded, account) == 0))) {
		if (account && strcmp(recorded, account) != 0)
			*ret_record = account;  /* the key's (an older status): the account's from now on */
		return PASS_ACCOUNT_SAME;
	}
	bool other_known = have && account && strncmp(recorded, PASS_ACCOUNT_FP_PREFIX, strlen(PASS_ACCOUNT_FP_PREFIX)) == 0;
	enum pass_account r = have ? account_seen(plan, other_known) : PASS_ACCOUNT_ADOPT;
	if (r == PASS_ACCOUNT_ADOPT)
		*ret_record = account ? account
			: have && strncmp(recorded, PASS_ACCOUNT_FP_PREFIX, strlen(PASS_ACCOUNT_FP_PREFIX)) == 0 ? NULL
			: key;
	return r;
}

void pass_client_token(const char *uid, const char *ns, const char *name, int64_t seq, char out[65])
{
	char *id = xasprintf("%s/%s/%s", uid ? uid : "", ns, name);
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)id, strlen(id), md);
	free(id);
	char hex[2 * SHA256_DIGEST_LENGTH + 1];
	sp_hex(md, sizeof(md), hex);
	snprintf(out, 65, "spotpool-%.32s-%lld", hex, (long long)seq);
}
