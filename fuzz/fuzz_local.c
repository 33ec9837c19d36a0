/*
 * libFuzzer target: the local engine (src/core/rlaas_algo*.c and
 * src/local/rlaas_table.c) under any sequence of calls: every strategy,
 * limits and windows from 1 to their maxima, a clock that moves on, jumps
 * a year ahead or steps back a day, keys of any length, in the smallest
 * table (one stripe, full and evicting after a few hundred identities).
 * After every call:
 *   - the call succeeds, and the verdict is consistent: remaining within
 *     0..limit-1 after an allowed hit, 0 after a denied one; a denial has
 *     a retry time of at least 1 ms; a retry time only when nothing
 *     remains; no negative times;
 *   - the table's counters agree: chunks in use within the table, records
 *     within the chunks.
 * Identities whose key names their strategy, limit and window are checked
 * so; a few share one key across limits and windows (sections sharing a
 * zone), where only the absence of crashes and undefined behaviour is.
 *
 * Input: 8 bytes per call: strategy, limit, window, the clock's step (two
 * bytes), the identity, a key length, a flag byte.
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
        char key[RLAAS_TABLE_KEY_MAX];
        rlaas_local_call_t call;
        rlaas_verdict_t v;
        rlaas_table_stats_t st;
        int shared = (data[7] & 7) == 0;
        size_t n;

        call.strategy = (rlaas_strategy_e)(data[0] % RLAAS_STRATEGY_COUNT);
        call.limit = limits[data[1] % (sizeof(limits) / sizeof(limits[0]))];
        call.window_ms =
            windows[data[2] % (sizeof(windows) / sizeof(windows[0]))];
        now += step(data[3], data[4]);
        if (now < 0)
            now = 0;
        /* the identity; padded to a length the flag byte picks, up to the
         * longest key the engine takes */
        n = shared ? (size_t)snprintf(key, sizeof(key), "shared%u", data[5] % 4)
                   : (size_t)snprintf(key, sizeof(key), "k%u:%d:%lld:%lld",
                                      data[5], (int)call.strategy,
                                      (long long)call.limit,
                                      (long long)call.window_ms);
        if (data[6] & 0x80) {
            size_t want = (size_t)(data[6] & 0x7f) * 33;

            if (want > RLAAS_TABLE_KEY_MAX - RLAAS_ALGO_SUFFIX_MAX)
                want = RLAAS_TABLE_KEY_MAX - RLAAS_ALGO_SUFFIX_MAX;
            while (n < want)
                key[n++] = 'x';
        }
        call.key = key;
        call.key_len = n;
        CHECK(rlaas_local_eval(lc, &call, now, &v, NULL) == RLAAS_LERR_NONE);
        rlaas_table_stats(lc, &st);
        CHECK(st.used <= st.chunks && st.records <= st.used);
        if (shared)
            continue;
        CHECK(v.allowed == 0 || v.allowed == 1);
        CHECK(v.remaining >= 0 && v.remaining <= call.limit - v.allowed);
        CHECK(v.reset_ms >= 0 && v.retry_ms >= 0);
        CHECK(v.allowed || (v.remaining == 0 && v.retry_ms >= 1));
        CHECK(v.remaining == 0 || v.retry_ms == 0);
    }
    return 0;
}
