/* The hand-written EVALSHA commands are byte for byte what hiredis' own
 * formatter produces from the same numbers printed: one policy (cost and
 * mode left out at 1 and 0) and several. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>

#include "rlaas_cal.h"
#include "rlaas_resp.h"
#include "rlaas_verdict.h"

static void call_same_as_hiredis(const rlaas_call_t *c, int n);

/* One plain policy: EVALSHA <sha1> 1 <key> <limit> <window>. */
static void same_as_hiredis(const char *key, size_t klen, int64_t limit,
                            int64_t window_ms)
{
    rlaas_call_t c;

    memset(&c, 0, sizeof(c));
    c.strategy = RLAAS_STRATEGY_GCRA;
    c.key = key;
    c.key_len = klen;
    c.limit = limit;
    c.window_ms = window_ms;
    c.cost = 1;
    call_same_as_hiredis(&c, 1);
}

static void matches_hiredis(void **state)
{
    char big[1000];

    (void)state;
    same_as_hiredis("rlaas:rate_limit:alice", 22, 5, 60000);
    same_as_hiredis("k", 1, 1000000000, 2592000000LL);
    same_as_hiredis("", 0, 1, 1);
    memset(big, 'x', sizeof(big));
    big[10] = '\0'; /* binary-safe: an embedded NUL is data */
    big[11] = '\r';
    same_as_hiredis(big, sizeof(big), 123, 45);
    same_as_hiredis(big, 9, INT64_MAX, INT64_MAX);
}

/* A call of n policies against hiredis' formatter of the same words. */
static void call_same_as_hiredis(const rlaas_call_t *c, int n)
{
    static const char sha[] = "89abcdef0123456789abcdef0123456789abcdef";
    const char *argv[3 + 9 * RLAAS_CALL_POLICIES_MAX];
    size_t lens[3 + 9 * RLAAS_CALL_POLICIES_MAX];
    char num[9 * RLAAS_CALL_POLICIES_MAX][24];
    char *expect = NULL, *buf;
    size_t keys = 0, len;
    int argc = 0, i, elen, k = 0, lease = 0;

#define WORD(s, l) (argv[argc] = (s), lens[argc++] = (l))
#define NUM(v)                                                                 \
    (snprintf(num[k], 24, "%lld", (long long)(v)),                             \
     WORD(num[k], strlen(num[k])), k++)
#define WINDOW(x)                                                              \
    ((x)->cal != NULL ? (void)WORD((x)->cal, strlen((x)->cal))                 \
                      : (void)NUM((x)->window_ms))
    WORD("EVALSHA", 7);
    WORD(sha, 40);
    NUM(n);
    for (i = 0; i < n; i++) {
        WORD(c[i].key, c[i].key_len);
        keys += c[i].key_len;
    }
    for (i = 0; i < n; i++)
        lease |= c[i].lease_want > 0;
    for (i = 0; i < n; i++) {
        if (lease) {
            /* a lease: every argument, and what it asks for */
            NUM(c[i].strategy);
            NUM(c[i].limit);
            WINDOW(&c[i]);
            NUM(c[i].cost);
            NUM(c[i].mode);
            NUM(c[i].lease_want);
            NUM(c[i].lease_back);
            NUM(c[i].lease_back_at);
            continue;
        }
        if (n > 1)
            NUM(c[i].strategy);
        NUM(c[i].limit);
        WINDOW(&c[i]);
        if (c[i].token != NULL)
            WORD(c[i].token, strlen(c[i].token));
        else if (n > 1 || c[i].mode != 0 || c[i].cost != 1)
            NUM(c[i].cost);
        if (n > 1 || c[i].mode != 0)
            NUM(c[i].mode);
    }
#undef WORD
#undef NUM
#undef WINDOW
    elen = redisFormatCommandArgv(&expect, argc, argv, lens);
    buf = malloc(RLAAS_RESP_CALL_MAX(keys, n));
    assert_non_null(buf);
    len = rlaas_resp_call(buf, sha, c, n);
    assert_true(elen > 0);
    assert_int_equal(len, (size_t)elen);
    assert_true(len <= RLAAS_RESP_CALL_MAX(keys, n));
    assert_memory_equal(buf, expect, len);
    free(buf);
    free(expect);
}

static void calls_match_hiredis(void **state)
{
    char bigkey[3000];
    rlaas_call_t c[RLAAS_CALL_POLICIES_MAX];
    int i;

    (void)state;
    memset(bigkey, 'k', sizeof(bigkey));
    memset(c, 0, sizeof(c));
    for (i = 0; i < RLAAS_CALL_POLICIES_MAX; i++) {
        c[i].strategy = (rlaas_strategy_e)(i % RLAAS_STRATEGY_COUNT);
        c[i].key = bigkey;
        c[i].key_len = sizeof(bigkey) - (size_t)i;
        c[i].limit = INT64_MAX;
        c[i].window_ms = INT64_MAX;
        c[i].cost = INT64_MAX;
        c[i].mode = 3;
    }
    for (i = 1; i <= RLAAS_CALL_POLICIES_MAX; i++)
        call_same_as_hiredis(c, i);
    /* one policy, plain: the strategy's own call, no cost or mode */
    c[0].cost = 1;
    c[0].mode = 0;
    call_same_as_hiredis(c, 1);
    c[0].cost = 0;
    call_same_as_hiredis(c, 1);
    c[0].cost = 1;
    c[0].mode = RLAAS_MODE_DRY_RUN;
    call_same_as_hiredis(c, 1);
    c[1].key = "";
    c[1].key_len = 0;
    call_same_as_hiredis(c, 2);
    /* a lease (RLaaSLease): the full form and what it asks for */
    c[0].mode = 0;
    c[0].lease_want = 123456789;
    call_same_as_hiredis(c, 1);
    c[0].cost = 7;
    call_same_as_hiredis(c, 1);
    /* and what the last portion left to lapse, given back */
    c[0].lease_back = 30;
    c[0].lease_back_at = 2000;
    call_same_as_hiredis(c, 1);
    /* several policies: the lease form for each, one of them asking
     * (want 0: its cost alone), then all asking, at the largest numbers */
    for (i = 2; i <= RLAAS_CALL_POLICIES_MAX; i++)
        call_same_as_hiredis(c, i);
    for (i = 0; i < RLAAS_CALL_POLICIES_MAX; i++) {
        c[i].cost = c[i].lease_want = INT64_MAX;
        c[i].mode = INT_MAX;
        c[i].lease_back = c[i].lease_back_at = INT64_MAX;
        c[i].key = bigkey;
        c[i].key_len = sizeof(bigkey) - (size_t)i;
    }
    call_same_as_hiredis(c, RLAAS_CALL_POLICIES_MAX);
    assert_true(rlaas_call_lease(c, 1));
    c[0].lease_want = 0;
    assert_false(rlaas_call_lease(c, 1));
}

/* A concurrency limit goes in the several form even alone (the multi
 * script decides it), its token in place of the cost; a release is the
 * keys and their tokens; a forget the keys alone. */
static void concurrency_and_release(void **state)
{
    static const char sha[] = "0123456789abcdef0123456789abcdef01234567";
    rlaas_call_t c[2];
    char buf[1024], *expect = NULL;
    size_t len;
    int elen;

    (void)state;
    memset(c, 0, sizeof(c));
    c[0].strategy = RLAAS_CONCURRENCY;
    c[0].key = "rlaas:rate_limit:php:1.2.3.4:conc";
    c[0].key_len = strlen(c[0].key);
    c[0].limit = 5;
    c[0].window_ms = 300000;
    c[0].cost = 1;
    c[0].token = "00000000000000ff";
    c[0].mode = 0;
    elen = redisFormatCommand(&expect, "EVALSHA %s 1 %s 7 5 300000 %s 0", sha,
                              c[0].key, c[0].token);
    len = rlaas_resp_call(buf, sha, c, 1);
    assert_int_equal(len, (size_t)elen);
    assert_memory_equal(buf, expect, len);
    free(expect);
    c[1] = c[0];
    c[1].key = "rlaas:rate_limit:site:conc";
    c[1].key_len = strlen(c[1].key);
    c[0].release = c[1].release = 1;
    elen = redisFormatCommand(&expect, "EVALSHA %s 2 %s %s %s %s", sha,
                              c[0].key, c[1].key, c[0].token, c[1].token);
    len = rlaas_resp_call(buf, sha, c, 2);
    assert_int_equal(len, (size_t)elen);
    assert_memory_equal(buf, expect, len);
    assert_true(len <= RLAAS_RESP_CALL_MAX(c[0].key_len + c[1].key_len, 2));
    free(expect);
    /* records forgotten (the console): the keys alone */
    c[0].release = c[1].release = 0;
    c[0].forget = c[1].forget = 1;
    elen = redisFormatCommand(&expect, "EVALSHA %s 2 %s %s", sha, c[0].key,
                              c[1].key);
    len = rlaas_resp_call(buf, sha, c, 2);
    assert_int_equal(len, (size_t)elen);
    assert_memory_equal(buf, expect, len);
    free(expect);
    /* ... with a mark of the reset: one argument after them */
    c[0].forget = c[1].forget = 2;
    elen = redisFormatCommand(&expect, "EVALSHA %s 2 %s %s 1", sha, c[0].key,
                              c[1].key);
    len = rlaas_resp_call(buf, sha, c, 2);
    assert_int_equal(len, (size_t)elen);
    assert_memory_equal(buf, expect, len);
    free(expect);
}

/* A calendar window's argument (src/core/rlaas_cal.h) at its longest:
 * the room of a call holds it too. */
static void calendar_windows_fit(void **state)
{
    char cal[RLAAS_CAL_ARG_MAX + 1];
    char bigkey[3000];
    rlaas_call_t c[RLAAS_CALL_POLICIES_MAX];
    size_t n;
    int i;

    (void)state;
    n = (size_t)snprintf(cal, sizeof(cal), "52w/%s/%s/%s/%s",
                         "9999999999999996", "9999999999999997",
                         "9999999999999998", "9999999999999999");
    assert_int_equal(n, RLAAS_CAL_ARG_MAX);
    memset(bigkey, 'k', sizeof(bigkey));
    memset(c, 0, sizeof(c));
    for (i = 0; i < RLAAS_CALL_POLICIES_MAX; i++) {
        c[i].strategy = RLAAS_STRATEGY_FIXED;
        c[i].key = bigkey;
        c[i].key_len = sizeof(bigkey) - (size_t)i;
        c[i].limit = INT64_MAX;
        c[i].window_ms = 31449600000LL;
        c[i].cal = cal;
        c[i].cost = INT64_MAX;
        c[i].mode = 7;
    }
    for (i = 1; i <= RLAAS_CALL_POLICIES_MAX; i++)
        call_same_as_hiredis(c, i);
    c[0].mode = 0;
    c[0].cost = 1;
    call_same_as_hiredis(c, 1);
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

/* Every length, both signs, each side of a power of ten: as printf. */
static void integers_as_printf(void **state)
{
    char b[24], want[24];
    int64_t p = 1, d, v;
    int k, sign;

    (void)state;
    for (k = 0; k < 19; k++) {
        if (k > 0)
            p *= 10; /* 10^k, up to 10^18 */
        for (d = -1; d <= 1; d++) {
            for (sign = -1; sign <= 1; sign += 2) {
                v = sign * (p + d);
                int n = snprintf(want, sizeof(want), "%lld", (long long)v);
                assert_int_equal(rlaas_fmt_i64(b, v), n);
                assert_memory_equal(b, want, (size_t)n);
            }
        }
    }
    for (v = -1000; v <= 100000; v += 7) {
        int n = snprintf(want, sizeof(want), "%lld", (long long)v);
        assert_int_equal(rlaas_fmt_i64(b, v), n);
        assert_memory_equal(b, want, (size_t)n);
    }
    v = INT64_MAX;
    assert_int_equal(rlaas_fmt_i64(b, v), 19);
    assert_memory_equal(b, "9223372036854775807", 19);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_hiredis),
        cmocka_unit_test(calls_match_hiredis),
        cmocka_unit_test(concurrency_and_release),
        cmocka_unit_test(calendar_windows_fit),
        cmocka_unit_test(integers),
        cmocka_unit_test(integers_as_printf),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
