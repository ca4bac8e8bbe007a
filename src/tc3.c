/* tc3: TC3-HMAC-SHA256 signing (see docs/reference/tc3-vectors.md). */
#include "tc3.h"
#include "buf.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <string.h>
#include <time.h>

#define TC3_CANONICAL_MAX (64 * 1024)

struct signed_header {
	char name[64];
	char value[256];
};

static void sha256_hex(const void *data, size_t n, char out[TC3_HEX_LEN])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256(data, n, md);
	sp_hex(md, sizeof(md), out);
}

static void hmac_sha256(const unsigned char *key, size_t key_len, const char *msg,
			unsigned char out[SHA256_DIGEST_LENGTH])
{
	unsigned int len = SHA256_DIGEST_LENGTH;
	HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg, strlen(msg), out, &len);
}

/* Lower-cases and trims a header value into dst; fails if it does not fit. */
static int normalise(const char *src, char *dst, size_t cap)
{
	while (*src == ' ' || *src == '\t')
		src++;
	size_t n = strlen(src);
	while (n && (src[n - 1] == ' ' || src[n - 1] == '\t'))
		n--;
	if (n >= cap)
		return SP_ETOOBIG;
	for (size_t i = 0; i < n; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[n] = '\0';
	return 0;
}

static int cmp_header(const void *a, const void *b)
{
	return strcmp(((const struct signed_header *)a)->name, ((const struct signed_header *)b)->name);
}

static int sorted_headers(const struct tc3_input *in, struct signed_header *out, struct sp_error *err)
{
	if (in->n_headers == 0 || in->n_headers > TC3_MAX_HEADERS)
		return sp_fail(err, SP_EINVAL, "tc3: between 1 and %d signed headers are required",
			       TC3_MAX_HEADERS);
	for (size_t i = 0; i < in->n_headers; i++) {
		if (normalise(in->headers[i].name, out[i].name, sizeof(out[i].name)) < 0 ||
		    normalise(in->headers[i].value, out[i].value, sizeof(out[i].value)) < 0)
			return sp_fail(err, SP_ETOOBIG, "tc3: header %s is too long", in->headers[i].name);
	}
	qsort(out, in->n_headers, sizeof(*out), cmp_header);
	return 0;
}

int tc3_canonical_request(const struct tc3_input *in, char **ret_canonical, struct sp_error *err)
{
	struct signed_header hs[TC3_MAX_HEADERS];
	int r = sorted_headers(in, hs, err);
	if (r < 0)
		return r;
	struct buf b;
	buf_init(&b, TC3_CANONICAL_MAX);
	r = buf_puts(&b, "POST\n/\n\n");
	for (size_t i = 0; r == 0 && i < in->n_headers; i++)
		r = buf_printf(&b, "%s:%s\n", hs[i].name, hs[i].value);
	r = r ? r : buf_puts(&b, "\n");
	for (size_t i = 0; r == 0 && i < in->n_headers; i++)
		r = buf_printf(&b, "%s%s", i ? ";" : "", hs[i].name);
	char body_hash[TC3_HEX_LEN];
	sha256_hex(in->body ? in->body : "", in->body_len, body_hash);
	r = r ? r : buf_printf(&b, "\n%s", body_hash);
	if (r < 0) {
		buf_free(&b);
		return sp_fail(err, r, "tc3: canonical request too large");
	}
	*ret_canonical = buf_steal(&b);
	return 0;
}

int tc3_sign(const struct tc3_input *in, struct tc3_result *ret, struct sp_error *err)
{
	if (!in->secret_id || !*in->secret_id || !in->secret_key || !*in->secret_key)
		return sp_fail(err, SP_EAUTH, "tc3: secret id and secret key are required");
	if (strlen(in->secret_id) > 128 || !in->service || strlen(in->service) > 32)
		return sp_fail(err, SP_EINVAL, "tc3: secret id or service name too long");

	struct tc3_result res = {0};
	struct signed_header hs[TC3_MAX_HEADERS];
	int r = sorted_headers(in, hs, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < in->n_headers; i++) {
		size_t used = strlen(res.signed_headers);
		size_t need = strlen(hs[i].name) + (i ? 1 : 0);
		if (used + need >= sizeof(res.signed_headers))
			return sp_fail(err, SP_ETOOBIG, "tc3: too many signed headers");
		snprintf(res.signed_headers + used, sizeof(res.signed_headers) - used, "%s%s",
			 i ? ";" : "", hs[i].name);
	}

	time_t t = (time_t)in->timestamp;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(res.date, sizeof(res.date), "%Y-%m-%d", &tm) == 0)
		return sp_fail(err, SP_EINVAL, "tc3: timestamp out of range");

	char *canonical = NULL;
	r = tc3_canonical_request(in, &canonical, err);
	if (r < 0)
		return r;
	sha256_hex(canonical, strlen(canonical), res.hashed_canonical_request);
	free(canonical);

	char *string_to_sign = xasprintf("TC3-HMAC-SHA256\n%lld\n%s/%s/tc3_request\n%s",
					 (long long)in->timestamp, res.date, in->service,
					 res.hashed_canonical_request);

	/* Derived keys stay binary; only their hex forms are exposed. */
	char *key = xasprintf("TC3%s", in->secret_key);
	unsigned char k_date[32], k_service[32], k_signing[32], sig[32];
	hmac_sha256((unsigned char *)key, strlen(key), res.date, k_date);
	hmac_sha256(k_date, sizeof(k_date), in->service, k_service);
	hmac_sha256(k_service, sizeof(k_service), "tc3_request", k_signing);
	hmac_sha256(k_signing, sizeof(k_signing), string_to_sign, sig);
	sp_secure_free(key);
	free(string_to_sign);

	sp_hex(k_date, 32, res.k_date);
	sp_hex(k_service, 32, res.k_service);
	sp_hex(k_signing, 32, res.k_signing);
	sp_hex(sig, 32, res.signature);
	/* The derived keys sign anything for this service for the whole day. */
	explicit_bzero(k_date, sizeof(k_date));
	explicit_bzero(k_service, sizeof(k_service));
	explicit_bzero(k_signing, sizeof(k_signing));
	snprintf(res.authorization, sizeof(res.authorization),
		 "TC3-HMAC-SHA256 Credential=%s/%s/%s/tc3_request, SignedHeaders=%s, Signature=%s",
		 in->secret_id, res.date, in->service, res.signed_headers, res.signature);
	*ret = res;
	explicit_bzero(&res, sizeof(res));
	return 0;
}
