/* tc3: TC3-HMAC-SHA256 request signing for Tencent Cloud API 3.0. Pure: no I/O. */
#ifndef SPOTPOOL_TC3_H
#define SPOTPOOL_TC3_H

#include "spotpool.h"

#define TC3_HEX_LEN 65       /* 64 hex digits + NUL */
#define TC3_AUTH_MAX 512
#define TC3_MAX_HEADERS 8

struct tc3_header {
	const char *name;   /* as sent; lower-cased when signed */
	const char *value;  /* byte-identical to what is sent */
};

struct tc3_input {
	const char *secret_id;
	const char *secret_key;
	const char *service;       /* "cvm" */
	int64_t timestamp;         /* epoch seconds; also sent as X-TC-Timestamp */
	const char *body;
	size_t body_len;
	/* Headers to sign, at least content-type and host. */
	struct tc3_header headers[TC3_MAX_HEADERS];
	size_t n_headers;
};

struct tc3_result {
	char date[11];                         /* UTC YYYY-MM-DD of the timestamp */
	char hashed_canonical_request[TC3_HEX_LEN];
	char k_date[TC3_HEX_LEN];              /* derived keys, hex, for tests */
	char k_service[TC3_HEX_LEN];
	char k_signing[TC3_HEX_LEN];
	char signature[TC3_HEX_LEN];
	char signed_headers[128];
	char authorization[TC3_AUTH_MAX];
};

/* Builds the canonical request; the caller frees it. */
int tc3_canonical_request(const struct tc3_input *in, char **ret_canonical, struct sp_error *err);
int tc3_sign(const struct tc3_input *in, struct tc3_result *ret, struct sp_error *err);

#endif
