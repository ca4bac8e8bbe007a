/* lease: the holder identity is hostname + "_" + a random UUID, unique per process even
 * with the same hostname and pid, and short enough for holderIdentity. */
#include "testutil.h"
#include "lease.h"

#include <unistd.h>

static void identity_format(void **state)
{
	(void)state;
	unsigned char rnd[16];
	for (int i = 0; i < 16; i++)
		rnd[i] = (unsigned char)(0x10 * i + i);
	char out[LEASE_IDENTITY_MAX];
	lease_identity(out, sizeof(out), "node-1", 1, rnd);
	assert_string_equal(out, "node-1_00112233-4455-6677-8899-aabbccddeeff_1");
	lease_identity(out, sizeof(out), "", 42, rnd);
	assert_string_equal(out, "unknown_00112233-4455-6677-8899-aabbccddeeff_42");
}

static void long_hostname_is_cut(void **state)
{
	(void)state;
	char host[300];
	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	unsigned char rnd[16] = {0};
	char out[LEASE_IDENTITY_MAX];
	lease_identity(out, sizeof(out), host, 9223372036854775807L, rnd);
	assert_int_equal(strlen(out), 63 + 1 + 36 + 1 + 19);
	assert_true(strlen(out) < 128);
	/* The random part survives the cut: it is what tells two processes apart. */
	assert_string_equal(out + 64, "00000000-0000-0000-0000-000000000000_9223372036854775807");
}

static void two_identities_differ(void **state)
{
	(void)state;
	char *a = lease_new_identity(), *b = lease_new_identity();
	assert_string_not_equal(a, b);
	assert_true(strlen(a) < 128 && strlen(b) < 128);
	/* Same hostname and pid: only the random part tells them apart. */
	char *pid = strrchr(a, '_');
	assert_non_null(pid);
	assert_int_equal(atol(pid + 1), (long)getpid());
	assert_true(pid - a > 37 && pid[-37] == '_' && pid[-28] == '-');  /* _UUID_ */
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(identity_format),
		cmocka_unit_test(long_hostname_is_cut),
		cmocka_unit_test(two_identities_differ),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
