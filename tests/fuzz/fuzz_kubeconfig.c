/* Fuzzes the kubeconfig loader (kube_config_parse, which kube_config_load runs on the
 * file's contents): current-context, contexts, clusters and users, inline base64
 * certificates and keys, tokens, file references. */
#include "fuzz.h"
#include "kube.h"

#include <string.h>

#define FUZZ_PATH "/fuzz/dir/kubeconfig"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_setup();
	return 0;
}

static void check_file(const char *p, const char *linked)
{
	if (p != linked || (p && p[0] != '/'))
		abort();  /* file references are absolute once loaded */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_config *cfg = NULL;
	struct sp_error err = {0};
	int r = kube_config_parse((const char *)data, size, FUZZ_PATH, &cfg, &err);
	fuzz_check_error(r, &err);
	if (r == 0) {
		size_t n = strlen(cfg->server);
		if (!n || cfg->server[n - 1] == '/' || !cfg->namespace || !*cfg->namespace ||
		    strcmp(cfg->source, FUZZ_PATH) != 0)
			abort();
		check_file(cfg->ca_file, cfg->tls.ca_file);
		check_file(cfg->cert_file, cfg->tls.cert_file);
		check_file(cfg->key_file, cfg->tls.key_file);
		check_file(cfg->token_file, cfg->token_file);
		if (cfg->tls.ca_data != cfg->ca_data || cfg->tls.cert_data != cfg->cert_data ||
		    cfg->tls.key_data != cfg->key_data)
			abort();
		kube_config_free(cfg);
	} else if (cfg) {
		abort();  /* out-parameters stay untouched on failure */
	}
	fuzz_forget_secrets();
	return 0;
}
