/* tc3 signer against the three official worked examples (docs/reference/tc3-vectors.md). */
#include "testutil.h"
#include "tc3.h"

static const char body[] =
	"{\"Limit\": 1, \"Filters\": [{\"Values\": [\"\\u672a\\u547d\\u540d\"], \"Name\": \"instance-name\"}]}";

static struct tc3_input vector_input(const char *id, const char *key)
{
	struct tc3_input in = {
		.secret_id = id, .secret_key = key, .service = "cvm", .timestamp = 1551113065,
		.body = body, .body_len = strlen(body),
		.headers = {{"Content-Type", "application/json; charset=utf-8"},
			    {"Host", "cvm.tencentcloudapi.com"}},
		.n_headers = 2,
	};
	return in;
}

static void test_body_is_the_official_one(void **state)
{
	(void)state;
	assert_int_equal(strlen(body), 86);
	struct tc3_input in = vector_input("id", "key");
	char *canonical = NULL;
	assert_int_equal(tc3_canonical_request(&in, &canonical, NULL), 0);
	assert_contains(canonical, "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064");
	assert_string_equal(canonical,
			    "POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:cvm.tencentcloudapi.com\n\n"
			    "content-type;host\n35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064");
	free(canonical);
}

static void test_vector_a(void **state)
{
	(void)state;
	struct tc3_input in = vector_input("AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE");
	struct tc3_result r;
	assert_int_equal(tc3_sign(&in, &r, NULL), 0);
	assert_string_equal(r.date, "2019-02-25");
	assert_string_equal(r.hashed_canonical_request, "5ffe6a04c0664d6b969fab9a13bdab201d63ee709638e2749d62a09ca18d7031");
	assert_string_equal(r.k_date, "d1308c81fe71cfd4e06437bbc067b2b8a3d2d8c0e375d547f15c41d5214b395a");
	assert_string_equal(r.k_service, "3c7cb7c7795393edc14fd2e0e6434a518564b4504b88e94f5d11bf59ba3e7050");
	assert_string_equal(r.k_signing, "ac658d5dde49e9bfdd14e04e062f66b05d9f637d44b8a8d845327d4a77f666b1");
	assert_string_equal(r.signature, "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168");
	assert_string_equal(r.authorization,
			    "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, "
			    "SignedHeaders=content-type;host, "
			    "Signature=72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168");
}

static void test_vector_b(void **state)
{
	(void)state;
	struct tc3_input in = vector_input("AKIDz8krbsJ5yKBZQpn74WFkmLPx3*******", "Gu5t9xGARNpq86cd98joQYCN3*******");
	struct tc3_result r;
	assert_int_equal(tc3_sign(&in, &r, NULL), 0);
	assert_string_equal(r.signature, "2230eefd229f582d8b1b891af7107b91597240707d778ab3738f756258d7652c");
}

static void test_vector_c_extra_signed_header(void **state)
{
	(void)state;
	char id[64], key[64];
	snprintf(id, sizeof(id), "AKID%s", "********************************");
	snprintf(key, sizeof(key), "%s", "********************************");
	struct tc3_input in = vector_input(id, key);
	/* Given out of order on purpose: the signer must sort by name. */
	in.headers[2] = in.headers[1];
	in.headers[1] = (struct tc3_header){"X-TC-Action", "DescribeInstances"};
	in.n_headers = 3;
	struct tc3_result r;
	assert_int_equal(tc3_sign(&in, &r, NULL), 0);
	assert_string_equal(r.signed_headers, "content-type;host;x-tc-action");
	assert_string_equal(r.hashed_canonical_request, "7019a55be8395899b900fb5564e4200d984910f34794a27cb3fb7d10ff6a1e84");
	assert_string_equal(r.k_date, "da98fb70dcf6b112dc21038d1eeeb3a95c74b4dcb12c1131f864f6066bd02be0");
	assert_string_equal(r.k_service, "8d70cbefb03939f929db64d32dc2ba89b1095620119fe3e050e2b18c5bd2752f");
	assert_string_equal(r.k_signing, "b596b923aad85185e2d1f6659d2a062e0a86731226e021e61bfe06f7ed05f5af");
	assert_string_equal(r.signature, "10b1a37a7301a02ca19a647ad722d5e43b4b3cff309d421d85b46093f6ab6c4f");
	assert_contains(r.authorization, "SignedHeaders=content-type;host;x-tc-action,");
}

/* The credential date is the UTC date of the timestamp, whatever the local zone says. */
static void test_utc_date_around_midnight(void **state)
{
	(void)state;
	setenv("TZ", "Asia/Shanghai", 1);
	struct tc3_input in = vector_input("id", "key");
	struct tc3_result before, after;
	in.timestamp = 1551139199; /* 2019-02-25T23:59:59Z (08:00 next day in Shanghai) */
	assert_int_equal(tc3_sign(&in, &before, NULL), 0);
	in.timestamp = 1551139200; /* 2019-02-26T00:00:00Z */
	assert_int_equal(tc3_sign(&in, &after, NULL), 0);
	assert_string_equal(before.date, "2019-02-25");
	assert_string_equal(after.date, "2019-02-26");
	assert_contains(before.authorization, "Credential=id/2019-02-25/cvm/tc3_request");
	assert_contains(after.authorization, "Credential=id/2019-02-26/cvm/tc3_request");
	assert_string_not_equal(before.k_date, after.k_date);
	unsetenv("TZ");
}

static void test_header_values_trimmed_and_lowercased(void **state)
{
	(void)state;
	struct tc3_input a = vector_input("id", "key"), b = vector_input("id", "key");
	b.headers[0].value = "  Application/JSON; charset=UTF-8 ";
	b.headers[1].value = "CVM.tencentcloudapi.com";
	struct tc3_result ra, rb;
	assert_int_equal(tc3_sign(&a, &ra, NULL), 0);
	assert_int_equal(tc3_sign(&b, &rb, NULL), 0);
	assert_string_equal(ra.signature, rb.signature);
	/* A different host must change the signature: the host is signed. */
	b.headers[1].value = "127.0.0.1:18555";
	assert_int_equal(tc3_sign(&b, &rb, NULL), 0);
	assert_string_not_equal(ra.signature, rb.signature);
}

static void test_missing_credentials_rejected(void **state)
{
	(void)state;
	struct tc3_input in = vector_input("", "key");
	struct tc3_result r;
	struct sp_error err = {0};
	assert_int_equal(tc3_sign(&in, &r, &err), SP_EAUTH);
	assert_contains(err.msg, "secret id and secret key are required");
	in = vector_input("id", "key");
	in.n_headers = 0;
	assert_int_equal(tc3_sign(&in, &r, &err), SP_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_is_the_official_one),
		cmocka_unit_test(test_vector_a),
		cmocka_unit_test(test_vector_b),
		cmocka_unit_test(test_vector_c_extra_signed_header),
		cmocka_unit_test(test_utc_date_around_midnight),
		cmocka_unit_test(test_header_values_trimmed_and_lowercased),
		cmocka_unit_test(test_missing_credentials_rejected),
	};
	return cmocka_run_group_tests_name("tc3", tests, NULL, NULL);
}
