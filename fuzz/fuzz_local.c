/*
 * libFuzzer target: the local engine (src/core/rlaas_algo*.c and
 * src/local/rlaas_table.c) under any sequence of calls: every strategy,
 * limits and windows from 1 to their maxima, a clock that moves on, jumps
 * a year ahead or steps back a day, keys of any length, in the smallest
 * table (one stripe, full and evicting after a few hundred identities).
 * Costs from 0 (a check) to the limit, the limit kept per request or not,
 * and requests of two policies decided all or nothing (the second a dry
 * run now and then), identities of a few zones (a key's first 0 to 2
 * bytes). After every call:
 *   - the call succeeds, or finds no room (other zones' state fills the
 *     table) and then charged nothing: asked again, it finds none again;
 *   - the table's structure is whole (rlaas_table_verify);
 *   - each verdict is consistent: remaining within
 *     0..limit (limit - cost after a charge); a denial exactly when fewer
 *     units remain than the call needs, with a retry time of at least 1 ms
 *     then and only then; no negative times;
 *   - a call that charged nothing (a denial, a check) decides alike when
 *     made again at once (unless the table evicted meanwhile);
 *   - the table's counters agree: chunks in use within the table, records
 *     within the chunks.
 * Identities whose key names their strategy, limit and window are checked
 * so; a few share one key across limits and windows (sections sharing a
 * zone), where only the absence of crashes and undefined behaviour is.
 *
 * Input: 8 bytes per call: strategies, limits, window, the clock's step
 * (two bytes), the identity, a key length, a flag byte (shared key, cost,
 * mode, a second policy).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlaas_algo.h"
#include "rlaas_local.h"
#include "fuzz_check.h"

#define T0 1699920000000LL

static const int64_t limits[] = {1,   2,    3,       5,         10,
                                 100, 6007, 1000000, 999999937, 1000000000};
static const int64_t windows[] = {1,       7,        1000,     1001,
                                  5000,    60000,    86400001, 2592000000LL,
                                  3600000, 86400000, 250,      3};

static int64_t step(uint8_t kind, uint8_t amount)
{
    switch (kind % 8) {
    case 0:
        return 0;
    case 1:
    case 2:
    case 3:
        return amount; /* a few ms */
    case 4:
        return (int64_t)amount * 1000; /* seconds */
    case 5:
        return (int64_t)amount * 3600000; /* hours, up to ten days */
    case 6:
        return -(int64_t)amount * 400; /* back, up to 100 s */
    default:
        return -(int64_t)amount * 340000; /* back, up to a day */
    }
}

/* A cost: 1, a check (0), a few units, or the whole limit. */
static int64_t cost_of(unsigned kind, uint8_t x, int64_t limit)
{
    int64_t c = kind == 0 ? 1 : kind == 1 ? 0 : kind == 2 ? 1 + x % 4 : limit;

    return c < limit ? c : limit;
}

/* The verdict of one call of a key that names its strategy, limit and
 * window (go: every policy that counts allowed, so this one was charged
 * if it allowed): remaining within 0..limit (limit - cost after a
 * charge); a denial exactly when fewer than the units needed remain, with
 * a retry time of at least 1 ms then and only then; no negative times. */
static void check(const rlaas_local_call_t *c, const rlaas_verdict_t *v, int go)
{
    int64_t need = c->cost > 1 ? c->cost : 1;

    CHECK(v->allowed == 0 || v->allowed == 1);
    CHECK(v->remaining >= 0 &&
          v->remaining <= c->limit - (v->allowed && go ? c->cost : 0));
    CHECK(v->reset_ms >= 0 && v->retry_ms >= 0);
    if (!(c->mode & RLAAS_MODE_DRY_RUN) || v->allowed)
        CHECK((v->remaining < need) == (v->retry_ms >= 1));
    CHECK(v->allowed || v->remaining < need);
}

/* Whether every policy that counts allowed: then those that allowed were
 * charged their cost. */
static int all_allowed(const rlaas_local_call_t *c, const rlaas_verdict_t *v,
                       int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (!v[i].allowed && !(c[i].mode & RLAAS_MODE_DRY_RUN))
            return 0;
    }
    return 1;
}

/* Whether the call charged anything. */
static int charged(const rlaas_local_call_t *c, const rlaas_verdict_t *v, int n)
{
    int i, any = 0;

    for (i = 0; i < n; i++)
        any |= v[i].allowed && c[i].cost > 0;
    return any && all_allowed(c, v, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void *mem;
    static size_t bytes;
    static const uint8_t seed[RLAAS_TABLE_SEED_LEN] = "fuzz-local-seed";
    rlaas_local_t *lc;
    int64_t now = T0;

    if (mem == NULL) {
        bytes = rlaas_table_min_bytes();
        mem = malloc(bytes);
        CHECK(mem != NULL);
    }
    lc = rlaas_table_init(mem, bytes, seed);
    CHECK(lc != NULL);
    for (; size >= 8; data += 8, size -= 8) {
        char key[RLAAS_TABLE_KEY_MAX], key2[64];
        rlaas_local_call_t calls[2];
        rlaas_verdict_t v[2], again[2];
        rlaas_table_report_t rep, rep2;
        rlaas_table_stats_t st;
        rlaas_lerr_e e;
        int shared = (data[7] & 7) == 0, n = 1 + ((data[7] >> 6) & 1), i;
        rlaas_local_call_t *call = &calls[0];
        size_t len;

        call->strategy = (rlaas_strategy_e)(data[0] % RLAAS_STRATEGY_COUNT);
        call->limit = limits[data[1] % (sizeof(limits) / sizeof(limits[0]))];
        call->window_ms =
            windows[data[2] % (sizeof(windows) / sizeof(windows[0]))];
        call->cost = cost_of((data[7] >> 3) & 3, data[5], call->limit);
        call->mode = (data[7] >> 5) & 1 ? RLAAS_MODE_LIMIT_VARIES : 0;
        call->cal = NULL;
        now += step(data[3], data[4]);
        if (now < 0)
            now = 0;
        /* the identity; padded to a length the flag byte picks, up to the
         * longest key the engine takes */
        len = shared
                  ? (size_t)snprintf(key, sizeof(key), "shared%u", data[5] % 4)
                  : (size_t)snprintf(key, sizeof(key), "k%u:%d:%lld:%lld",
                                     data[5], (int)call->strategy,
                                     (long long)call->limit,
                                     (long long)call->window_ms);
        if (data[6] & 0x80) {
            size_t want = (size_t)(data[6] & 0x7f) * 33;

            if (want > RLAAS_TABLE_KEY_MAX - RLAAS_ALGO_SUFFIX_MAX)
                want = RLAAS_TABLE_KEY_MAX - RLAAS_ALGO_SUFFIX_MAX;
            while (len < want)
                key[len++] = 'x';
        }
        call->key = key;
        call->key_len = len;
        call->zone_len = data[5] % 3;
        /* a second policy of the request: another strategy, a limit of
         * its own, a dry run now and then */
        calls[1] = calls[0];
        calls[1].strategy = (rlaas_strategy_e)((data[0] >> 4) % 6);
        calls[1].limit = limits[(data[1] >> 4) % 10];
        calls[1].cost = calls[1].cost < calls[1].limit ? calls[1].cost : 1;
        calls[1].mode = data[6] & 1 ? RLAAS_MODE_DRY_RUN : 0;
        calls[1].key = key2;
        calls[1].key_len =
            (size_t)snprintf(key2, sizeof(key2), "q%u:%d:%lld:%lld", data[5],
                             (int)calls[1].strategy, (long long)calls[1].limit,
                             (long long)calls[1].window_ms);
        e = rlaas_local_eval_n(lc, calls, n, now, v, &rep, NULL);
        CHECK(e == RLAAS_LERR_NONE || e == RLAAS_LERR_FULL);
        rlaas_table_stats(lc, &st);
        CHECK(st.used <= st.chunks && st.records <= st.used);
        CHECK(rlaas_table_verify(lc) == 0);
        if (e == RLAAS_LERR_FULL) {
            /* nothing charged: the same again */
            CHECK(rep.full > 0);
            CHECK(rlaas_local_eval_n(lc, calls, n, now, again, &rep2, NULL) ==
                  RLAAS_LERR_FULL);
            continue;
        }
        if (shared)
            continue;
        for (i = 0; i < n; i++)
            check(&calls[i], &v[i], all_allowed(calls, v, n));
        /* all or nothing: what charged nothing (a denial, a check)
         * decides alike when asked again */
        if (charged(calls, v, n) || rep.evicted > 0)
            continue;
        CHECK(rlaas_local_eval_n(lc, calls, n, now, again, &rep2, NULL) ==
              RLAAS_LERR_NONE);
        for (i = 0; i < n && rep2.evicted == 0; i++)
            CHECK(again[i].allowed == v[i].allowed &&
                  again[i].remaining == v[i].remaining &&
                  again[i].reset_ms == v[i].reset_ms &&
                  again[i].retry_ms == v[i].retry_ms);
    }
    return 0;
}
