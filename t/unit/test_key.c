/* Key-safe segments: raw only for short safe values, hashed otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_key.h"

static size_t seg(char *out, const char *v, int cred)
{
    size_t n = rlaas_key_segment(out, v, strlen(v), cred);

    out[n] = '\0';
    return n;
}

static void safe_values_stay_raw(void **state)
{
    char out[RLAAS_SEG_MAX + 1];

    (void)state;
    assert_int_equal(seg(out, "alice", 0), 5);
    assert_string_equal(out, "alice");
    seg(out, "203.0.113.9", 0);
    assert_string_equal(out, "203.0.113.9");
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
    size_t na = rlaas_key_segment(a, "ab\0c", 4, 0);
    size_t nb = rlaas_key_segment(b, "ab", 2, 0);

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
    assert_int_equal(rlaas_key_segment(out, v, 64, 0), 64);
    assert_int_equal(rlaas_key_segment(out, v, 65, 0), RLAAS_SEG_HASH_LEN);
    assert_int_equal(rlaas_key_segment(out, v, 0, 0), RLAAS_SEG_HASH_LEN);
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
    /* IPv6 client addresses are hashed inside the fallback */
    n = rlaas_key_fallback(fb, "2001:db8::1", 11);
    assert_int_equal(n, 3 + RLAAS_SEG_HASH_LEN);
    assert_memory_equal(fb, "ip~~", 4);
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
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
