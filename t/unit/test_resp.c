/* The hand-written EVALSHA command is byte for byte what hiredis' own
 * formatter produces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>

#include "rlaas_resp.h"
#include "rlaas_verdict.h"

static void same_as_hiredis(const char *key, size_t klen, const char *limit,
                            const char *window)
{
    static const char sha[] = "0123456789abcdef0123456789abcdef01234567";
    const char *argv[6] = {"EVALSHA", sha, "1", key, limit, window};
    size_t lens[6] = {7, 40, 1, klen, strlen(limit), strlen(window)};
    char *expect = NULL;
    int elen = redisFormatCommandArgv(&expect, 6, argv, lens);
    char *buf = malloc(RLAAS_RESP_EVALSHA_MAX(klen));
    size_t n;

    assert_non_null(buf);
    n = rlaas_resp_evalsha(buf, sha, key, klen, limit, window);
    assert_true(elen > 0);
    assert_int_equal(n, (size_t)elen);
    assert_true(n <= RLAAS_RESP_EVALSHA_MAX(klen));
    assert_memory_equal(buf, expect, n);
    free(buf);
    free(expect);
}

static void matches_hiredis(void **state)
{
    char big[1000];

    (void)state;
    same_as_hiredis("rlaas:rate_limit:alice", 22, "5", "60000");
    same_as_hiredis("k", 1, "1000000000", "2592000000");
    same_as_hiredis("", 0, "1", "1");
    memset(big, 'x', sizeof(big));
    big[10] = '\0'; /* binary-safe: an embedded NUL is data */
    big[11] = '\r';
    same_as_hiredis(big, sizeof(big), "123", "45");
    same_as_hiredis(big, 9, "99999999999999999999", "99999999999999999999");
}

static void integers(void **state)
{
    char b[24];

    (void)state;
    assert_int_equal(rlaas_fmt_i64(b, 0), 1);
    assert_memory_equal(b, "0", 1);
    assert_int_equal(rlaas_fmt_i64(b, 1234567890123LL), 13);
    assert_memory_equal(b, "1234567890123", 13);
    assert_int_equal(rlaas_fmt_i64(b, -42), 3);
    assert_memory_equal(b, "-42", 3);
    assert_int_equal(rlaas_fmt_i64(b, INT64_MIN), 20);
    assert_memory_equal(b, "-9223372036854775808", 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_hiredis),
        cmocka_unit_test(integers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
