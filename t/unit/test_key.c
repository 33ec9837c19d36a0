/* Value segments V(v): raw only for short safe values that can be nothing
 * but themselves, hashed otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_key.h"

static size_t segk(char *out, const char *v, rlaas_val_kind_e kind)
{
    size_t n = rlaas_key_value(out, v, strlen(v), kind);

    out[n] = '\0';
    return n;
}

static size_t seg(char *out, const char *v, int cred)
{
    size_t n = rlaas_key_value(out, v, strlen(v),
                               cred ? RLAAS_VAL_SECRET : RLAAS_VAL_PLAIN);

    out[n] = '\0';
    return n;
}

static void safe_values_stay_raw(void **state)
{
    char out[RLAAS_SEG_MAX + 1];

    (void)state;
    assert_int_equal(seg(out, "alice", 0), 5);
    assert_string_equal(out, "alice");
    seg(out, "bob@example.org", 0);
    assert_string_equal(out, "bob@example.org");
}

static void sha1_prefix_is_exact(void **state)
{
    char out[RLAAS_SEG_MAX + 1];

    (void)state;
    /* SHA-1("abc") = a9993e364706816aba3e25717850c26c9cd0d89d */
    assert_int_equal(seg(out, "abc", 1), RLAAS_SEG_HASH_LEN);
    assert_string_equal(out, "~a9993e364706816aba3e25717850c26c");
}

static void unsafe_values_are_hashed(void **state)
{
    static const char *hostile[] = {
        "a:b",        "victim:tb", "rlaas:rate_limit:x", "{slot}",      "a*",
        "a b",        "x\ny",      "caf\xc3\xa9",        "2001:db8::1", "~abc",
        "ip~1.2.3.4", "%00"};
    char out[RLAAS_SEG_MAX + 1];
    size_t i, j;

    (void)state;
    for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        assert_int_equal(seg(out, hostile[i], 0), RLAAS_SEG_HASH_LEN);
        assert_int_equal(out[0], '~');
        for (j = 1; j < RLAAS_SEG_HASH_LEN; j++)
            assert_true((out[j] >= '0' && out[j] <= '9') ||
                        (out[j] >= 'a' && out[j] <= 'f'));
    }
}

static void binary_and_nul_bytes(void **state)
{
    char a[RLAAS_SEG_MAX + 1], b[RLAAS_SEG_MAX + 1];
    size_t na = rlaas_key_value(a, "ab\0c", 4, RLAAS_VAL_PLAIN);
    size_t nb = rlaas_key_value(b, "ab", 2, RLAAS_VAL_PLAIN);

    (void)state;
    /* A NUL doesn't cut the value short: "ab\0c" and "ab" differ. */
    assert_int_equal(na, RLAAS_SEG_HASH_LEN);
    assert_int_equal(nb, 2);
    assert_memory_not_equal(a, b, 2);
}

static void length_bound(void **state)
{
    char v[200], out[RLAAS_SEG_MAX + 1];

    (void)state;
    memset(v, 'a', sizeof(v));
    assert_int_equal(rlaas_key_value(out, v, 64, RLAAS_VAL_PLAIN), 64);
    assert_int_equal(rlaas_key_value(out, v, 65, RLAAS_VAL_PLAIN),
                     RLAAS_SEG_HASH_LEN);
    assert_int_equal(rlaas_key_value(out, v, 0, RLAAS_VAL_PLAIN),
                     RLAAS_SEG_HASH_LEN);
}

static void credentials_always_hashed(void **state)
{
    char out[RLAAS_SEG_MAX + 1];

    (void)state;
    seg(out, "secret123", 1);
    assert_int_equal(out[0], '~');
    assert_null(strstr(out, "secret"));
}

static void distinct_values_distinct_segments(void **state)
{
    char a[RLAAS_SEG_MAX + 1], b[RLAAS_SEG_MAX + 1];

    (void)state;
    seg(a, "x:y", 0);
    seg(b, "x:z", 0);
    assert_string_not_equal(a, b);
    /* a hashed value never equals a raw one */
    seg(a, "a b", 0);
    seg(b, a + 1, 0); /* the hex digits alone are a safe raw value */
    assert_string_not_equal(a, b);
}

static void fallback_cannot_be_forged(void **state)
{
    char fb[RLAAS_SEG_MAX + 1], forged[RLAAS_SEG_MAX + 1];
    size_t n = rlaas_key_fallback(fb, "198.51.100.7", 12);

    (void)state;
    fb[n] = '\0';
    assert_string_equal(fb, "ip~198.51.100.7");
    /* the same text sent by a client is hashed, not copied */
    seg(forged, "ip~198.51.100.7", 0);
    assert_string_not_equal(fb, forged);
    /* a grouped IPv6 network is raw in the fallback; an address in any
     * other form (with ':') or none at all is hashed */
    n = rlaas_key_fallback(fb, "2001-db8-1-2_64", 15);
    fb[n] = '\0';
    assert_string_equal(fb, "ip~2001-db8-1-2_64");
    n = rlaas_key_fallback(fb, "2001:db8::1", 11);
    assert_int_equal(n, 3 + RLAAS_SEG_HASH_LEN);
    assert_memory_equal(fb, "ip~~", 4);
    n = rlaas_key_fallback(fb, "-", 1);
    assert_int_equal(n, 3 + RLAAS_SEG_HASH_LEN);
}

/* No value ends an identity in another strategy's suffix or a window
 * number: those are hashed, wherever they come from. */
static void suffix_like_values_are_hashed(void **state)
{
    static const char *words[] = {"tb",    "sw",       "lb",  "gcra", "0",
                                  "12345", "28332000", "ban", "conc"};
    char out[RLAAS_SEG_MAX + 1];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        assert_true(rlaas_key_suffix_like(words[i], strlen(words[i])));
        assert_int_equal(segk(out, words[i], RLAAS_VAL_PLAIN),
                         RLAAS_SEG_HASH_LEN);
        assert_int_equal(segk(out, words[i], RLAAS_VAL_ADDRESS),
                         RLAAS_SEG_HASH_LEN);
    }
    /* near misses stay raw */
    assert_string_equal((segk(out, "tbx", RLAAS_VAL_PLAIN), out), "tbx");
    assert_string_equal((segk(out, "GCRA", RLAAS_VAL_PLAIN), out), "GCRA");
    assert_string_equal((segk(out, "12a", RLAAS_VAL_PLAIN), out), "12a");
    assert_string_equal((segk(out, "concs", RLAAS_VAL_PLAIN), out), "concs");
    assert_false(rlaas_key_suffix_like("", 0));
}

/* A user name or header value never spells a client address, and the
 * client address is raw only when it is one. */
static void address_like_values(void **state)
{
    static const char *addr[] = {"203.0.113.9",
                                 "1.2.3",
                                 "..",
                                 "0-0_32",
                                 "2001-db8-1-2_64",
                                 "ffff-ffff-ffff-ffff-0-0-0-0_128",
                                 "2001-db8_999",
                                 "a_1"};
    static const char *not_addr[] = {
        "2001-db8-1-2_",         "_64",           "2001--db8_64",
        "2001-db8-_64",          "12345-1_64",    "2001-DB8_64",
        "1-2-3-4-5-6-7-8-9_128", "2001-db8_1281", "g_64",
        "2001-db8_6a",           "alice",         "1.2.3.4a"};
    char out[RLAAS_SEG_MAX + 1];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(addr) / sizeof(addr[0]); i++) {
        assert_true(rlaas_key_address_like(addr[i], strlen(addr[i])));
        assert_int_equal(segk(out, addr[i], RLAAS_VAL_PLAIN),
                         RLAAS_SEG_HASH_LEN);
        assert_string_equal((segk(out, addr[i], RLAAS_VAL_ADDRESS), out),
                            addr[i]);
    }
    for (i = 0; i < sizeof(not_addr) / sizeof(not_addr[0]); i++) {
        assert_false(rlaas_key_address_like(not_addr[i], strlen(not_addr[i])));
        assert_int_equal(segk(out, not_addr[i], RLAAS_VAL_ADDRESS),
                         RLAAS_SEG_HASH_LEN);
    }
    assert_string_equal((segk(out, "alice", RLAAS_VAL_PLAIN), out), "alice");
}

static void sha1_hex_any_length(void **state)
{
    char out[41];

    (void)state;
    out[8] = '\0';
    rlaas_key_sha1_hex(out, 8, "abc", 3);
    assert_string_equal(out, "a9993e36");
    out[40] = '\0';
    rlaas_key_sha1_hex(out, 40, "abc", 3);
    assert_string_equal(out, "a9993e364706816aba3e25717850c26c9cd0d89d");
}

static void strategy_suffixes(void **state)
{
    (void)state;
    assert_string_equal(rlaas_key_suffix(RLAAS_STRATEGY_FIXED), ":");
    assert_string_equal(rlaas_key_suffix(RLAAS_STRATEGY_SLIDING_LOG), "");
    assert_string_equal(rlaas_key_suffix(RLAAS_STRATEGY_SLIDING), ":sw");
    assert_string_equal(rlaas_key_suffix(RLAAS_STRATEGY_TOKEN), ":tb");
    assert_string_equal(rlaas_key_suffix(RLAAS_STRATEGY_LEAKY), ":lb");
    assert_string_equal(rlaas_key_suffix(RLAAS_STRATEGY_GCRA), ":gcra");
}

static void is_safe(void **state)
{
    (void)state;
    assert_true(rlaas_key_is_safe("A-z_0.9@", 8));
    assert_false(rlaas_key_is_safe("", 0));
    assert_false(rlaas_key_is_safe("a/b", 3));
    assert_false(rlaas_key_is_safe("a+b", 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(safe_values_stay_raw),
        cmocka_unit_test(sha1_prefix_is_exact),
        cmocka_unit_test(unsafe_values_are_hashed),
        cmocka_unit_test(binary_and_nul_bytes),
        cmocka_unit_test(length_bound),
        cmocka_unit_test(credentials_always_hashed),
        cmocka_unit_test(distinct_values_distinct_segments),
        cmocka_unit_test(fallback_cannot_be_forged),
        cmocka_unit_test(is_safe),
        cmocka_unit_test(suffix_like_values_are_hashed),
        cmocka_unit_test(address_like_values),
        cmocka_unit_test(sha1_hex_any_length),
        cmocka_unit_test(strategy_suffixes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
