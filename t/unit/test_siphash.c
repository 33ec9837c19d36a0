/* SipHash-2-4 against the reference vectors of its authors' paper, and
 * SipHash-1-3 against published ones of that variant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rlaas_siphash.h"

static void reference_vectors(void **state)
{
    uint8_t key[16], msg[64];
    int i;

    (void)state;
    for (i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    /* the paper's appendix: key 00..0f, message 00..0e */
    assert_true(rlaas_siphash(key, msg, 15) == 0xa129ca6149be45e5ULL);
    /* the empty message, and one of exactly one word */
    assert_true(rlaas_siphash(key, msg, 0) == 0x726fdb47dd0e0e31ULL);
    assert_true(rlaas_siphash(key, msg, 8) == 0x93f5f5799a932462ULL);
}

/* 1-3 with the all-zero key, as other implementations publish it. */
static void variant_1_3(void **state)
{
    uint8_t key[16] = {0};

    (void)state;
    assert_true(rlaas_siphash13(key, "", 0) == 0xd1fba762150c532cULL);
    assert_true(rlaas_siphash13(key, "siphash", 7) == 0x8264ceeccb16bcbeULL);
    assert_true(rlaas_siphash13(key, "digest-sip_hash", 15) ==
                0xce31007e34130c0aULL);
    assert_true(rlaas_siphash13(key, "alice", 5) !=
                rlaas_siphash(key, "alice", 5));
}

static void keyed(void **state)
{
    uint8_t k1[16] = {0}, k2[16] = {0};

    (void)state;
    k2[15] = 1;
    assert_true(rlaas_siphash(k1, "alice", 5) != rlaas_siphash(k2, "alice", 5));
    assert_true(rlaas_siphash(k1, "alice", 5) == rlaas_siphash(k1, "alice", 5));
    assert_true(rlaas_siphash(k1, "alice", 5) != rlaas_siphash(k1, "alicf", 5));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_vectors),
        cmocka_unit_test(variant_1_3),
        cmocka_unit_test(keyed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
