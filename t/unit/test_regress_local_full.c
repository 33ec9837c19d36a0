/* Regression (make fuzz, local target): a request of two policies, all or
 * nothing, whose second is a sliding log that must grow by a run on a full
 * stripe (the one charge make_room_for_all makes no room for ahead)
 * answered RLAAS_LERR_FULL but kept the charge made to the first policy,
 * so the same request made again at once was denied by the first policy
 * instead of answering FULL again (the fuzzer's invariant 'a call that
 * answered FULL charged nothing'; its inputs are
 * fuzz/corpus/local/regress-log-grows-on-full-stripe-a, -b). Here: the
 * smallest table (one stripe) filled with records of other zones that
 * still refuse their identities (never evicted for these two), then the
 * log grown alone until it finds no room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_local.h"

#define T0     1699920000000LL /* a multiple of the window: one fixed window */
#define WINDOW 60000

static rlaas_local_call_t call_of(rlaas_strategy_e s, const char *key,
                                  int64_t limit, int64_t cost, size_t zone_len)
{
    rlaas_local_call_t c;

    memset(&c, 0, sizeof(c));
    c.strategy = s;
    c.key = key;
    c.key_len = strlen(key);
    c.limit = limit;
    c.window_ms = WINDOW;
    c.cost = cost;
    c.zone_len = zone_len;
    return c;
}

/* What policy c has left at now, charging nothing (a check). */
static int64_t left(rlaas_local_t *lc, rlaas_local_call_t c, int64_t now)
{
    rlaas_verdict_t v;

    c.cost = 0;
    assert_int_equal(rlaas_local_eval(lc, &c, now, &v, NULL), RLAAS_LERR_NONE);
    return v.remaining;
}

static void full_call_charges_nothing(void **state)
{
    static const uint8_t seed[RLAAS_TABLE_SEED_LEN] = "regress-full";
    size_t bytes = rlaas_table_min_bytes();
    void *mem = calloc(1, bytes);
    rlaas_local_t *lc = rlaas_table_init(mem, bytes, seed);
    /* zones "a:" and "b:": neither may evict the other's records */
    rlaas_local_call_t pol[2] = {
        call_of(RLAAS_STRATEGY_FIXED, "a:fixed", 2, 1, 2),
        call_of(RLAAS_STRATEGY_SLIDING_LOG, "b:log", 1000, 1, 2),
    };
    rlaas_verdict_t v[2];
    rlaas_table_report_t rep;
    rlaas_lerr_e e;
    int64_t now = T0;
    char key[16];
    int i;

    (void)state;
    assert_non_null(lc);
    /* both records made: the first policy has one unit left */
    assert_int_equal(rlaas_local_eval_n(lc, pol, 2, now, v, &rep, NULL),
                     RLAAS_LERR_NONE);
    assert_int_equal(v[0].remaining, 1);
    /* the stripe filled: each filler a zone of its own, refused till the
     * window ends */
    for (i = 0; i < 1000; i++) {
        rlaas_local_call_t f;

        snprintf(key, sizeof(key), "f%03d", i);
        f = call_of(RLAAS_STRATEGY_FIXED, key, 1, 1, strlen(key));
        if ((e = rlaas_local_eval(lc, &f, now, v, NULL)) != RLAAS_LERR_NONE)
            break;
    }
    assert_int_equal(e, RLAAS_LERR_FULL);
    /* the log alone, a run a millisecond, until its next run finds no
     * room */
    for (i = 0; i < 100; i++) {
        now++;
        if ((e = rlaas_local_eval(lc, &pol[1], now, v, NULL)) !=
            RLAAS_LERR_NONE)
            break;
    }
    assert_int_equal(e, RLAAS_LERR_FULL);
    assert_int_equal(left(lc, pol[0], now), 1);

    /* both: the first policy allows and is charged, the log finds no room:
     * FULL, and the first policy's charge given back */
    assert_int_equal(rlaas_local_eval_n(lc, pol, 2, now, v, &rep, NULL),
                     RLAAS_LERR_FULL);
    assert_true(rep.full > 0);
    assert_int_equal(left(lc, pol[0], now), 1);
    /* asked again at once: the same answer, not a denial by the first */
    assert_int_equal(rlaas_local_eval_n(lc, pol, 2, now, v, &rep, NULL),
                     RLAAS_LERR_FULL);
    assert_int_equal(left(lc, pol[0], now), 1);
    free(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_call_charges_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
