/* creds: owned credentials, wiped on release and redacted from all output. */
#include "creds.h"
#include "log.h"
#include "manifest.h"

#include <string.h>

void creds_set(struct creds *c, const char *id, const char *key, const char *token, const char *source)
{
	creds_clear(c);
	c->secret_id = xstrdup(id);
	c->secret_key = xstrdup(key);
	c->token = token && *token ? xstrdup(token) : NULL;
	c->source = source;
}

int creds_from_env(struct creds *ret, struct sp_error *err)
{
	const char *id = getenv("TENCENTCLOUD_SECRET_ID");
	const char *key = getenv("TENCENTCLOUD_SECRET_KEY");
	if (!id || !*id || !key || !*key)
		return sp_fail(err, SP_EAUTH, "no credentials: set TENCENTCLOUD_SECRET_ID and "
			       "TENCENTCLOUD_SECRET_KEY, or reference a Secret in the pool's spec");
	creds_set(ret, id, key, getenv("TENCENTCLOUD_SESSION_TOKEN"), "environment");
	log_add_secret(ret->secret_key);
	log_add_secret(ret->token);
	return 0;
}

int creds_from_file(struct creds *ret, const char *path, struct sp_error *err)
{
	struct manifest_set set = {0};
	int r = manifest_load_file(path, &set, err);
	const cJSON *o = r == 0 && set.n == 1 ? set.docs[0].object : NULL;
	if (r == 0 && set.n == 0)
		r = sp_fail(err, SP_ENOTFOUND, "%s: no credentials in the file", path);
	else if (r == 0 && !o)
		r = sp_fail(err, SP_EINVAL, "%s: expected one mapping with secretId and secretKey", path);
	const cJSON *v;
	cJSON_ArrayForEach(v, o) {
		if (r == 0 && strcmp(v->string, "secretId") && strcmp(v->string, "secretKey") &&
		    strcmp(v->string, "token"))
			r = sp_fail(err, SP_EINVAL, "%s:%d: unknown key \"%s\" (expected secretId, secretKey, token)",
				    path, manifest_line_of(&set.docs[0], v->string), v->string);
		else if (r == 0 && !cJSON_IsString(v))
			r = sp_fail(err, SP_EINVAL, "%s:%d: %s: must be a string", path,
				    manifest_line_of(&set.docs[0], v->string), v->string);
		else if (cJSON_IsString(v) && strcmp(v->string, "secretId") != 0)
			log_add_secret(v->valuestring);  /* an ID is no secret */
	}
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "secretId");
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(o, "secretKey");
	const cJSON *token = cJSON_GetObjectItemCaseSensitive(o, "token");
	if (r == 0 && !id && !key && !token)
		r = sp_fail(err, SP_ENOTFOUND, "%s: no credentials in the file", path);
	else if (r == 0 && (!cJSON_IsString(id) || !*id->valuestring || !cJSON_IsString(key) || !*key->valuestring))
		r = sp_fail(err, SP_EINVAL, "%s: secretId and secretKey are required", path);
	if (r == 0)
		creds_set(ret, id->valuestring, key->valuestring, cJSON_IsString(token) ? token->valuestring : NULL,
			  "credentials file");
	manifest_set_free(&set);
	return r;
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
