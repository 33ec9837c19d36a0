/* Regression (make fuzz, headers target): a header value cut short by a
 * small buffer must be a prefix of the whole value, as snprintf leaves it.
 * The hand-built formatter skipped a piece that did not fit as a whole,
 * leaving bytes nobody wrote before the final NUL (the fuzzer's input:
 * a 24-byte buffer, policy "lt", q=16777217, a 30-day window). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_headers.h"

static void every_size_gives_a_prefix(void **state)
{
    const char *whole = "\"lt\";q=16777217;w=2592000";
    char buf[64];
    size_t size;

    (void)state;
    assert_int_equal(
        rlaas_fmt_policy(buf, sizeof(buf), "lt", 16777217, 2592000000LL),
        (int)strlen(whole));
    assert_string_equal(buf, whole);
    for (size = 1; size <= strlen(whole) + 1; size++) {
        memset(buf, 0xbe, sizeof(buf)); /* bytes nobody wrote */
        assert_int_equal(
            rlaas_fmt_policy(buf, size, "lt", 16777217, 2592000000LL),
            (int)strlen(whole));
        assert_int_equal(strlen(buf), size - 1);
        assert_memory_equal(buf, whole, size - 1);
        assert_int_equal((unsigned char)buf[size], 0xbe); /* nothing past */
    }
}

static void ratelimit_too(void **state)
{
    const char *whole = "\"default\";r=41;t=7";
    rlaas_verdict_t v = {1, 41, 6001, 0};
    char buf[32];
    size_t size;

    (void)state;
    for (size = 1; size <= strlen(whole) + 1; size++) {
        memset(buf, 0xbe, sizeof(buf));
        assert_int_equal(rlaas_fmt_ratelimit(buf, size, "default", &v),
                         (int)strlen(whole));
        assert_int_equal(strlen(buf), size - 1);
        assert_memory_equal(buf, whole, size - 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_size_gives_a_prefix),
        cmocka_unit_test(ratelimit_too),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
