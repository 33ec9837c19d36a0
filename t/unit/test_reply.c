/* Script replies: only the agreed shape becomes a verdict. Replies are
 * read by hiredis' own reader from RESP bytes, as they come off the wire,
 * into the sink the module uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_reply.h"
#include "rlaas_resp.h"

/* Reads one reply of a call of n policies into a sink, as the exchange
 * does on a connection. */
static rlaas_reply_status_e verdicts(const char *resp, int n,
                                     rlaas_verdict_t *v)
{
    redisReader *rd = redisReaderCreateWithFunctions(&rlaas_reply_sink_fns);
    rlaas_reply_sink_t sink;
    void *rep = NULL;

    assert_non_null(rd);
    rd->privdata = &sink;
    rlaas_reply_sink_reset(&sink);
    assert_int_equal(redisReaderFeed(rd, resp, strlen(resp)), REDIS_OK);
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    redisReaderFree(rd);
    assert_ptr_equal(rep, &sink);
    return rlaas_reply_verdicts(rep, n, v);
}

static rlaas_reply_status_e verdict(const char *resp, rlaas_verdict_t *v)
{
    return verdicts(resp, 1, v);
}

/* The sink is reused for the replies of a group, one after another. */
static void replies_in_a_row(void **state)
{
    static const char stream[] = "*4\r\n:1\r\n:4\r\n:5000\r\n:0\r\n"
                                 "-ERR user_script:1: boom\r\n"
                                 "*4\r\n:0\r\n:0\r\n:900\r\n:400\r\n";
    redisReader *rd = redisReaderCreateWithFunctions(&rlaas_reply_sink_fns);
    rlaas_reply_sink_t sink;
    rlaas_verdict_t v;
    void *rep;

    (void)state;
    rd->privdata = &sink;
    assert_int_equal(redisReaderFeed(rd, stream, sizeof(stream) - 1), REDIS_OK);
    rlaas_reply_sink_reset(&sink);
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    assert_int_equal(rlaas_reply_verdict(rep, &v), RLAAS_REPLY_OK);
    assert_int_equal(v.remaining, 4);
    rlaas_reply_sink_reset(&sink);
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    assert_int_equal(rlaas_reply_verdict(rep, &v), RLAAS_REPLY_ERROR);
    assert_string_equal(sink.err, "ERR user_script:1: boom");
    rlaas_reply_sink_reset(&sink);
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    assert_int_equal(rlaas_reply_verdict(rep, &v), RLAAS_REPLY_OK);
    assert_int_equal(v.allowed, 0);
    assert_int_equal(v.retry_ms, 400);
    /* nothing more: no reply, and the sink is left alone */
    rep = NULL;
    assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
    assert_null(rep);
    redisReaderFree(rd);
}

/* A long error text is cut to the sink's room, still NUL-terminated. */
static void long_error_is_cut(void **state)
{
    char resp[600];
    rlaas_verdict_t v;

    (void)state;
    resp[0] = '-';
    memset(resp + 1, 'E', 500);
    memcpy(resp + 501, "\r\n", 3);
    assert_int_equal(verdict(resp, &v), RLAAS_REPLY_ERROR);
}

static void allowed_and_denied(void **state)
{
    rlaas_verdict_t v;

    (void)state;
    assert_int_equal(verdict("*4\r\n:1\r\n:4\r\n:5000\r\n:0\r\n", &v),
                     RLAAS_REPLY_OK);
    assert_int_equal(v.allowed, 1);
    assert_int_equal(v.remaining, 4);
    assert_int_equal(v.reset_ms, 5000);
    assert_int_equal(v.retry_ms, 0);
    assert_int_equal(verdict("*4\r\n:0\r\n:0\r\n:900\r\n:400\r\n", &v),
                     RLAAS_REPLY_OK);
    assert_int_equal(v.allowed, 0);
    assert_int_equal(v.retry_ms, 400);
}

static void noscript_and_errors(void **state)
{
    rlaas_verdict_t v;

    (void)state;
    assert_int_equal(
        verdict("-NOSCRIPT No matching script. Please use EVAL.\r\n", &v),
        RLAAS_REPLY_NOSCRIPT);
    assert_int_equal(verdict("-ERR user_script:1: boom\r\n", &v),
                     RLAAS_REPLY_ERROR);
    assert_int_equal(verdict("-NOSCRIP\r\n", &v), RLAAS_REPLY_ERROR);
}

static void wrong_shapes(void **state)
{
    static const char *bad[] = {
        "+OK\r\n",
        ":1\r\n",
        "$-1\r\n",
        "*-1\r\n",
        "*0\r\n",
        "*3\r\n:1\r\n:4\r\n:5000\r\n",
        "*5\r\n:1\r\n:4\r\n:5000\r\n:0\r\n:0\r\n",
        "*4\r\n:2\r\n:4\r\n:5000\r\n:0\r\n",           /* allowed not 0/1 */
        "*4\r\n:1\r\n:-1\r\n:5000\r\n:0\r\n",          /* negative remaining */
        "*4\r\n:1\r\n:4\r\n:-5\r\n:0\r\n",             /* negative reset */
        "*4\r\n:0\r\n:4\r\n:1\r\n:99999999999999\r\n", /* absurd retry */
        "*4\r\n$1\r\n1\r\n:4\r\n:5000\r\n:0\r\n",      /* string, not integer */
        "*4\r\n:1\r\n*0\r\n:5000\r\n:0\r\n",           /* nested array */
        "*4\r\n:1\r\n$-1\r\n:5000\r\n:0\r\n",          /* nil element */
        "*4\r\n:1\r\n+OK\r\n:5000\r\n:0\r\n",          /* status element */
        "*4\r\n:1\r\n*1\r\n:4\r\n:5000\r\n:0\r\n",     /* integer, nested */
    };
    rlaas_verdict_t v;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(verdict(bad[i], &v), RLAAS_REPLY_BAD);
    assert_int_equal(rlaas_reply_verdict(NULL, &v), RLAAS_REPLY_BAD);
}

/* The multi script's reply: exactly four integers per policy. */
static void several_policies(void **state)
{
    char resp[1024];
    rlaas_verdict_t v[RLAAS_CALL_POLICIES_MAX + 1];
    size_t n = 0;
    int i;

    (void)state;
    assert_int_equal(verdicts("*8\r\n:1\r\n:4\r\n:5000\r\n:0\r\n"
                              ":0\r\n:0\r\n:900\r\n:400\r\n",
                              2, v),
                     RLAAS_REPLY_OK);
    assert_int_equal(v[0].allowed, 1);
    assert_int_equal(v[0].remaining, 4);
    assert_int_equal(v[1].allowed, 0);
    assert_int_equal(v[1].reset_ms, 900);
    assert_int_equal(v[1].retry_ms, 400);
    /* eight policies, the most */
    n += (size_t)snprintf(resp, sizeof(resp), "*32\r\n");
    for (i = 0; i < 8; i++)
        n += (size_t)snprintf(resp + n, sizeof(resp) - n,
                              ":%d\r\n:%d\r\n:%d\r\n:%d\r\n", i % 2, i,
                              1000 + i, i % 2 ? 0 : 7);
    assert_int_equal(verdicts(resp, 8, v), RLAAS_REPLY_OK);
    for (i = 0; i < 8; i++) {
        assert_int_equal(v[i].allowed, i % 2);
        assert_int_equal(v[i].remaining, i);
        assert_int_equal(v[i].reset_ms, 1000 + i);
    }
    /* the count must be the call's: 4 for 2 policies, 8 for 1, 32 for 9 */
    assert_int_equal(verdicts("*4\r\n:1\r\n:4\r\n:5000\r\n:0\r\n", 2, v),
                     RLAAS_REPLY_BAD);
    assert_int_equal(verdicts("*8\r\n:1\r\n:4\r\n:5000\r\n:0\r\n"
                              ":0\r\n:0\r\n:900\r\n:400\r\n",
                              1, v),
                     RLAAS_REPLY_BAD);
    assert_int_equal(verdicts(resp, 9, v), RLAAS_REPLY_BAD);
    assert_int_equal(verdicts(resp, 0, v), RLAAS_REPLY_BAD);
    /* a bad value in the second four */
    assert_int_equal(verdicts("*8\r\n:1\r\n:4\r\n:5000\r\n:0\r\n"
                              ":0\r\n:-1\r\n:900\r\n:400\r\n",
                              2, v),
                     RLAAS_REPLY_BAD);
    /* errors are errors whatever the count */
    assert_int_equal(verdicts("-ERR rlaas: bad policy 2\r\n", 2, v),
                     RLAAS_REPLY_ERROR);
    assert_int_equal(verdicts("-NOSCRIPT No matching script.\r\n", 3, v),
                     RLAAS_REPLY_NOSCRIPT);
}

/* A lease's reply (lua/lease.lua): four verdicts a policy, eight
 * policies: 128 integers, every one read. */
static void a_lease_of_eight_policies(void **state)
{
    char resp[4096];
    rlaas_verdict_t v[4 * RLAAS_CALL_POLICIES_MAX + 1];
    size_t n = 0;
    int i;

    (void)state;
    n += (size_t)snprintf(resp, sizeof(resp), "*128\r\n");
    for (i = 0; i < 32; i++)
        n += (size_t)snprintf(resp + n, sizeof(resp) - n,
                              ":%d\r\n:%d\r\n:%d\r\n:%d\r\n", 1, i, 2000 + i,
                              i % 4 == 1 ? 1000 : 0);
    assert_int_equal(verdicts(resp, 32, v), RLAAS_REPLY_OK);
    for (i = 0; i < 32; i++) {
        assert_int_equal(v[i].remaining, i);
        assert_int_equal(v[i].reset_ms, 2000 + i);
    }
    /* the last policy's grant and Redis' time, the reply's last integers */
    assert_int_equal(v[29].retry_ms, 1000);
    assert_int_equal(v[31].remaining, 31);
    /* more than that is no reply of ours */
    assert_int_equal(verdicts(resp, 33, v), RLAAS_REPLY_BAD);
}

static void retry_after_rounding(void **state)
{
    (void)state;
    assert_int_equal(rlaas_retry_after_s(0), 1);
    assert_int_equal(rlaas_retry_after_s(1), 1);
    assert_int_equal(rlaas_retry_after_s(400), 1);
    assert_int_equal(rlaas_retry_after_s(1000), 1);
    assert_int_equal(rlaas_retry_after_s(1001), 2);
    assert_int_equal(rlaas_retry_after_s(59999), 60);
    assert_int_equal(rlaas_ms_to_s_ceil(0), 0);
    assert_int_equal(rlaas_ms_to_s_ceil(1), 1);
    assert_int_equal(rlaas_ms_to_s_ceil(2000), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allowed_and_denied),
        cmocka_unit_test(noscript_and_errors),
        cmocka_unit_test(wrong_shapes),
        cmocka_unit_test(several_policies),
        cmocka_unit_test(a_lease_of_eight_policies),
        cmocka_unit_test(retry_after_rounding),
        cmocka_unit_test(replies_in_a_row),
        cmocka_unit_test(long_error_is_cut),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
