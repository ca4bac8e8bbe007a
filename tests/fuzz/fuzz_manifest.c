/* Fuzzes the manifest reader: YAML text into documents (manifest_parse), documents into
 * validated Spotpool specs (manifest_pools), and what the dry run does with them next:
 * Secret lookups, the pool tag and the RunInstances request built from a spec. */
#include "cvm.h"
#include "fuzz.h"
#include "manifest.h"
#include "pool.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_setup();
	return 0;
}

static void use_spec(const struct manifest_set *set, const struct pool_spec *s)
{
	if (!s->namespace || !s->name || !s->region || !s->zone || !s->instance_type ||
	    !s->image_id || !s->charge_type || s->minimum < 0 || s->minimum > s->maximum) {
		fprintf(stderr, "fuzz: manifest_pools accepted an invalid spec\n");
		abort();
	}
	if (s->credentials_secret) {
		static const char *const keys[] = {"secretId", "secretKey", "token"};
		for (size_t i = 0; i < 3; i++)
			sp_secure_free(manifest_secret_value(set, s->namespace, s->credentials_secret, keys[i]));
	}
	free(pool_tag_value(s));
	struct cvm_launch launch = {.spec = s, .count = 1, .client_token = "fuzz", .dry_run = true};
	cJSON *req = cvm_run_request(&launch);
	char *text = cJSON_PrintUnformatted(req);
	if (!text)
		abort();
	cJSON_free(text);
	cJSON_Delete(req);
}

static bool long_keys(const cJSON *o)
{
	for (const cJSON *c = o ? o->child : NULL; c; c = c->next)
		if ((c->string && strlen(c->string) > 1000) || long_keys(c))
			return true;
	return false;
}

/* JSON is YAML too: a document printed as JSON must read back as the same document
 * (scalar typing, quoting and escapes agree). Not compared: a List document (it would
 * expand again), and JSON that is valid but not YAML 1.1, which libyaml reads: keys
 * over 1024 characters, and characters YAML does not allow raw or reads as line breaks
 * (DEL, C1 controls, U+2028...), which cJSON leaves unescaped, so printable ASCII only. */
static void check_round_trip(const struct manifest_doc *d)
{
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(d->object, "kind");
	if ((cJSON_IsString(kind) && strcmp(kind->valuestring, "List") == 0) || long_keys(d->object))
		return;
	char *json = cJSON_PrintUnformatted(d->object);
	if (!json)
		abort();
	for (const char *c = json; *c; c++)
		if (*c < 0x20 || *c > 0x7e) {
			cJSON_free(json);
			return;
		}
	struct manifest_set again = {0};
	struct sp_error err = {0};
	int r = manifest_parse(json, strlen(json), "round-trip.json", &again, &err);
	if (r < 0 || again.n != 1 || !cJSON_Compare(again.docs[0].object, d->object, true)) {
		fprintf(stderr, "fuzz: %s does not read back (%s)\n", json, r < 0 ? err.msg : "differs");
		abort();
	}
	manifest_set_free(&again);
	cJSON_free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest_set set = {0};
	struct sp_error err = {0};
	int r = manifest_parse((const char *)data, size, "fuzz.yaml", &set, &err);
	fuzz_check_error(r, &err);
	if (r == 0) {
		for (size_t i = 0; i < set.n; i++) {
			if (!cJSON_IsObject(set.docs[i].object))
				abort();
			manifest_line_of(&set.docs[i], "spec.minimum");
			manifest_line_of(&set.docs[i], "spec.securityGroupIds[0]");
			check_round_trip(&set.docs[i]);
		}
		struct pool_spec **pools = NULL;
		size_t n = 0;
		err = (struct sp_error){0};
		r = manifest_pools(&set, &pools, &n, &err);
		fuzz_check_error(r, &err);
		for (size_t i = 0; r == 0 && i < n; i++) {
			use_spec(&set, pools[i]);
			pool_spec_free(pools[i]);
		}
		if (r == 0)
			free(pools);
	}
	manifest_set_free(&set);
	fuzz_forget_secrets();
	return 0;
}
