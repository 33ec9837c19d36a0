/* The strategies' C arithmetic beyond what t/lua compares with the
 * scripts call by call: the record keys, the bounds on a call, state of
 * the wrong shape, and the sliding log past its size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_algo.h"

#define T0 1699920000000LL

static unsigned char st[RLAAS_ALGO_STATE_MAX];

static rlaas_algo_call_t call(rlaas_strategy_e s, int64_t L, int64_t W,
                              int64_t now)
{
    rlaas_algo_call_t c = {s, L, W, now, 1, 0, 1, NULL};

    return c;
}

/* A hit as the table makes it: what the strategy leaves is kept as it
 * was. Returns the strategy's answer. */
static int hit(const rlaas_algo_call_t *c, unsigned char *state, size_t *len,
               int64_t *ttl, rlaas_verdict_t *v)
{
    static unsigned char save[RLAAS_ALGO_STATE_MAX];
    size_t was = *len;
    int rc;

    memcpy(save, state, was);
    rc = rlaas_algo_hit(c, state, len, ttl, v);
    if (rc == RLAAS_ALGO_LEAVE) {
        memcpy(state, save, was);
        *len = was;
    }
    return rc;
}

static void suffixes_are_what_the_scripts_append(void **state)
{
    static const char *const want[] = {"28332000", "", "", "", "", ""};
    char buf[RLAAS_ALGO_SUFFIX_MAX];
    int s;

    (void)state;
    for (s = 0; s < RLAAS_STRATEGY_COUNT; s++) {
        rlaas_algo_call_t c = call(s, 5, 60000, T0 + 59999);

        assert_int_equal(rlaas_algo_suffix(&c, buf), strlen(want[s]));
        assert_string_equal(buf, want[s]);
    }
}

static void calls_out_of_range_refused(void **state)
{
    /* -2: the strategy's highest limit, plus one (fixed takes 2^50) */
    static const int64_t bad[][3] = {
        {0, 1000, T0}, {-2, 1000, T0},
        {5, 0, T0},    {5, RLAAS_ALGO_WINDOW_MAX + 1, T0},
        {5, 1000, -1}, {5, 1000, RLAAS_ALGO_NOW_MAX + 1}};
    rlaas_verdict_t v;
    size_t len = 0;
    int64_t ttl;
    size_t i;
    int s;

    (void)state;
    for (s = 0; s < RLAAS_STRATEGY_COUNT; s++) {
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            rlaas_algo_call_t c = call(s, bad[i][0], bad[i][1], bad[i][2]);

            if (bad[i][0] == -2)
                c.limit = rlaas_algo_limit_max(s) + 1;
            assert_int_equal(hit(&c, st, &len, &ttl, &v), -1);
        }
    }
}

static void same(const rlaas_verdict_t *a, const rlaas_verdict_t *b)
{
    assert_int_equal(a->allowed, b->allowed);
    assert_int_equal(a->remaining, b->remaining);
    assert_int_equal(a->reset_ms, b->reset_ms);
    assert_int_equal(a->retry_ms, b->retry_ms);
}

/* A state of the wrong size or with impossible values reads as none: the
 * same reply as a first hit. */
static void malformed_state_is_none(void **state)
{
    int s;

    (void)state;
    for (s = 0; s < RLAAS_STRATEGY_COUNT; s++) {
        rlaas_algo_call_t c = call(s, 5, 5000, T0);
        rlaas_verdict_t first, v;
        size_t len = 0;
        int64_t ttl;

        assert_int_equal(hit(&c, st, &len, &ttl, &first), RLAAS_ALGO_STORE);
        memset(st, 0xff, sizeof(st));
        len = 5;
        assert_int_equal(hit(&c, st, &len, &ttl, &v), RLAAS_ALGO_STORE);
        same(&v, &first);
        memset(st, 0xff, sizeof(st));
        len = 32; /* a bucket's size, all fields negative */
        assert_int_equal(hit(&c, st, &len, &ttl, &v), RLAAS_ALGO_STORE);
        same(&v, &first);
    }
}

/* Past RLAAS_ALGO_LOG_MAX distinct milliseconds the oldest entries merge
 * into later ones: the count stays exact, the state bounded, and no
 * rolling window ever holds more than the limit. */
static void sliding_log_past_its_size(void **state)
{
    enum { L = 1500, W = 2000, STEPS = 6000 };
    static unsigned char ok[STEPS];
    rlaas_verdict_t v;
    size_t len = 0;
    int64_t ttl, t;
    int in = 0, allowed = 0;

    (void)state;
    for (t = 0; t < STEPS; t++) {
        rlaas_algo_call_t c = call(RLAAS_STRATEGY_SLIDING_LOG, L, W, T0 + t);

        assert_true(hit(&c, st, &len, &ttl, &v) >= 0);
        ok[t] = (unsigned char)v.allowed;
        allowed += v.allowed;
        assert_true(len <= RLAAS_ALGO_STATE_MAX);
        /* hits in (t - W, t] */
        in += ok[t] - (t >= W ? ok[t - W] : 0);
        assert_true(in <= L);
        if (t < L)
            assert_int_equal(v.allowed, 1); /* the count itself is exact */
    }
    /* exactly: L allowed, W - L denied, over and over; merged entries
     * leave a little later, so a little less */
    assert_true(allowed <= STEPS / W * L);
    assert_true(allowed >= STEPS / W * L * 98 / 100);
}

/* The largest values the directives allow stay in integer range. */
static void largest_values(void **state)
{
    int s;

    (void)state;
    for (s = 0; s < RLAAS_STRATEGY_COUNT; s++) {
        rlaas_algo_call_t c =
            call(s, RLAAS_LIMIT_MAX, 30LL * 86400000, RLAAS_ALGO_NOW_MAX - 2);
        rlaas_verdict_t v;
        size_t len = 0;
        int64_t ttl;
        int i;

        for (i = 0; i < 3; i++) {
            assert_int_equal(hit(&c, st, &len, &ttl, &v), RLAAS_ALGO_STORE);
            assert_int_equal(v.allowed, 1);
            assert_int_equal(v.remaining, RLAAS_LIMIT_MAX - 1 - i);
            assert_true(v.reset_ms >= 0 && v.reset_ms <= 60LL * 86400000);
            assert_int_equal(v.retry_ms, 0);
            c.now_ms++;
        }
    }
}

/* Found by make fuzz: a sliding window's counts stored under a 1 ms
 * window (its number about T0), read under a 30-day one: the stored
 * window, far ahead, is none (its start overflowed int64 before). */
static void sliding_window_numbered_far_ahead_is_none(void **state)
{
    rlaas_algo_call_t big = call(RLAAS_STRATEGY_SLIDING, 1000000000, 1, T0);
    rlaas_algo_call_t month =
        call(RLAAS_STRATEGY_SLIDING, 1000000000, 2592000000LL, T0 + 1);
    rlaas_verdict_t v;
    int64_t ttl = 0;
    size_t len = 0;

    (void)state;
    big.cost = 20000000; /* beyond the packed form's counts */
    assert_int_equal(hit(&big, st, &len, &ttl, &v), RLAAS_ALGO_STORE);
    assert_true(v.allowed);
    assert_int_equal(hit(&month, st, &len, &ttl, &v), RLAAS_ALGO_STORE);
    assert_true(v.allowed);
    assert_int_equal(v.remaining, 1000000000 - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(suffixes_are_what_the_scripts_append),
        cmocka_unit_test(calls_out_of_range_refused),
        cmocka_unit_test(malformed_state_is_none),
        cmocka_unit_test(sliding_log_past_its_size),
        cmocka_unit_test(largest_values),
        cmocka_unit_test(sliding_window_numbered_far_ahead_is_none),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
