/* Fuzzes the handling of Tencent CVM API replies. The input is one or more JSON replies
 * back to back (the pages of a DescribeInstances listing). Each goes through what
 * cvm.c's call_once does with a reply body (static, behind the HTTP exchange, so it is
 * mirrored here): parse with cJSON, detach "Response", classify Error.Code with
 * cvm_classify_code; a success goes to cvm_parse_instances (one page each), to the
 * RunInstances InstanceIdSet walk and to cvm_parse_instance_types. */
#include "cvm.h"
#include "fuzz.h"
#include "pool.h"

#include <string.h>

#define FUZZ_PAGES_MAX 8

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_setup();
	return 0;
}

static void check_class(int r)
{
	if (r != SP_EAUTH && r != SP_ECONFIG && r != SP_ECAPACITY && r != SP_ETHROTTLED &&
	    r != SP_ETRANSIENT && r != SP_ENOTFOUND)
		abort();
}

static void check_instances(const struct pool_instance *list, size_t n)
{
	if (n > CVM_DESCRIBE_MAX_INSTANCES)
		abort();
	for (size_t i = 0; i < n; i++) {
		const struct pool_instance *in = &list[i];
		if (!in->id[0] || !memchr(in->id, 0, sizeof(in->id)) || !memchr(in->state, 0, sizeof(in->state)) ||
		    !memchr(in->zone, 0, sizeof(in->zone)) || !memchr(in->public_ip, 0, sizeof(in->public_ip)) ||
		    !memchr(in->private_ip, 0, sizeof(in->private_ip)) ||
		    !memchr(in->instance_type, 0, sizeof(in->instance_type)) ||
		    !memchr(in->created_time, 0, sizeof(in->created_time)) ||
		    !memchr(in->pool_tag, 0, sizeof(in->pool_tag)))
			abort();
	}
}

/* DescribeInstanceTypeConfigs: bounded, one entry per type, names and counts sane. */
static void check_instance_types(const cJSON *response)
{
	struct cvm_instance_type *v = NULL;
	size_t n = 0;
	struct sp_error err = {0};
	int r = cvm_parse_instance_types(response, &v, &n, &err);
	fuzz_check_error(r, &err);
	if (r < 0)
		return;
	if (n > CVM_INSTANCE_TYPES_MAX)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!v[i].instance_type[0] || !memchr(v[i].gpu_type, 0, sizeof(v[i].gpu_type)) || v[i].cpu < 0 ||
		    v[i].memory_gib < 0 || v[i].gpu < 0 || !(v[i].gpu_cards >= 0) ||
		    (i && strcmp(v[i - 1].instance_type, v[i].instance_type) >= 0))
			abort();
	free(v);
}

/* RunInstances: the IDs cvm_run_instances would keep. */
static void run_instances_ids(const cJSON *response)
{
	struct strv got = {0};
	const cJSON *id;
	cJSON_ArrayForEach(id, cJSON_GetObjectItemCaseSensitive(response, "InstanceIdSet"))
		if (cJSON_IsString(id) && strlen(id->valuestring) < 32)
			strv_push(&got, id->valuestring);
	strv_clear(&got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	for (int page = 0; page < FUZZ_PAGES_MAX && p < end; page++) {
		const char *next = NULL;
		cJSON *root = cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &next, false);
		if (!root || !next || next <= p || next > end) {
			cJSON_Delete(root);
			break;
		}
		p = next;
		cJSON *response = cJSON_DetachItemFromObjectCaseSensitive(root, "Response");
		cJSON_Delete(root);
		if (!cJSON_IsObject(response)) {
			cJSON_Delete(response);
			continue;
		}
		const cJSON *error = cJSON_GetObjectItemCaseSensitive(response, "Error");
		if (error) {
			const cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "Code");
			check_class(cvm_classify_code(cJSON_IsString(code) ? code->valuestring : "UnknownError"));
			cJSON_Delete(response);
			continue;
		}
		run_instances_ids(response);
		struct pool_instance *list = NULL;
		size_t n = 0, total = 0;
		struct sp_error err = {0};
		int r = cvm_parse_instances(response, &list, &n, &total, &err);
		fuzz_check_error(r, &err);
		if (r == 0) {
			check_instances(list, n);
			if (total > CVM_DESCRIBE_MAX_INSTANCES)
				abort();
		}
		free(list);  /* a failed page may have been partly filled */
		check_instance_types(response);
		cJSON_Delete(response);
	}

	/* Error codes arrive as arbitrary strings. */
	char *code = fuzz_cstring(data, size > 128 ? 128 : size);
	check_class(cvm_classify_code(code));
	sp_parse_time(code);
	free(code);
	fuzz_forget_secrets();
	return 0;
}
