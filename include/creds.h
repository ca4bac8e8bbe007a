/* creds: owned Tencent Cloud credentials and where they came from. */
#ifndef SPOTPOOL_CREDS_H
#define SPOTPOOL_CREDS_H

#include "cvm.h"
#include "spotpool.h"

struct creds {
	char *secret_id;
	char *secret_key;
	char *token;
	const char *source;  /* static description: "spec", "secret", "environment", ... */
};

/* TENCENTCLOUD_SECRET_ID, TENCENTCLOUD_SECRET_KEY, optional TENCENTCLOUD_SESSION_TOKEN. */
int creds_from_env(struct creds *ret, struct sp_error *err);
/* A YAML file with secretId, secretKey and optional token (e.g. a systemd credential);
 * SP_ENOTFOUND when it is empty or "{}" (the unit's default for a missing file). */
int creds_from_file(struct creds *ret, const char *path, struct sp_error *err);
/* Takes copies. Registering the secret parts for log redaction is the source's part:
 * the process's own are pinned (log_add_secret, as creds_from_env and creds_from_file
 * do), a tenant's are owned by the pool that uses them (log_replace_secret). */
void creds_set(struct creds *c, const char *id, const char *key, const char *token, const char *source);
struct cvm_credentials creds_view(const struct creds *c);
void creds_clear(struct creds *c);

#endif
