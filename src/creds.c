/* creds: owned credentials, wiped on release and redacted from all output. */
#include "creds.h"
#include "log.h"

#include <string.h>

void creds_set(struct creds *c, const char *id, const char *key, const char *token, const char *source)
{
	creds_clear(c);
	c->secret_id = xstrdup(id);
	c->secret_key = xstrdup(key);
	c->token = token && *token ? xstrdup(token) : NULL;
	c->source = source;
	log_add_secret(key);
	log_add_secret(c->token);
}

int creds_from_env(struct creds *ret, struct sp_error *err)
{
	const char *id = getenv("TENCENTCLOUD_SECRET_ID");
	const char *key = getenv("TENCENTCLOUD_SECRET_KEY");
	if (!id || !*id || !key || !*key)
		return sp_fail(err, SP_EAUTH, "no credentials: set TENCENTCLOUD_SECRET_ID and "
			       "TENCENTCLOUD_SECRET_KEY, or reference a Secret in the pool's spec");
	creds_set(ret, id, key, getenv("TENCENTCLOUD_SESSION_TOKEN"), "environment");
	return 0;
}

struct cvm_credentials creds_view(const struct creds *c)
{
	return (struct cvm_credentials){c->secret_id, c->secret_key, c->token};
}

void creds_clear(struct creds *c)
{
	free(c->secret_id);
	sp_secure_free(c->secret_key);
	sp_secure_free(c->token);
	*c = (struct creds){0};
}
