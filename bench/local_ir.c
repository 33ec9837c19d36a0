/*
 * Instructions per decision of the local engine (src/local, src/core),
 * counted by callgrind around the measured loop only:
 *
 *   valgrind --tool=callgrind --collect-atstart=no build/bench/local_ir CASE
 *
 * (make bench-local runs every case and prints Ir per decision). CASE:
 *   hit     a known identity, allowed (token bucket)
 *   denied  a known identity, refused (its record left as it is)
 *   fresh   a new identity each time into a full table (one evicted)
 *   two     two policies of one request, both known, allowed
 * The table is RLaaSLocalSize's default, 10 MB, with 50,000 identities of
 * one zone; keys as the module builds them. Built with -DRLAAS_BENCH_ZONES
 * where the call names its zone (rlaas_local_call_t.zone_len), so that
 * the same file measures the engine before that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <valgrind/callgrind.h>

#include "rlaas_local.h"

#define T0    1699920000000LL
#define KNOWN 50000
#define RUNS  100000
#define SIZE  (10u << 20)
#define ZONE  "rlaas:rate_limit:bench:"

static char keys[KNOWN][64];
static char fresh[RUNS][64];

static void call_of(rlaas_local_call_t *c, const char *key, int64_t limit)
{
    memset(c, 0, sizeof(*c));
    c->strategy = RLAAS_STRATEGY_TOKEN;
    c->key = key;
    c->key_len = strlen(key);
    c->limit = limit;
    c->window_ms = 60000;
    c->cost = 1;
#ifdef RLAAS_BENCH_ZONES
    c->zone_len = strlen(ZONE);
#endif
}

static int decide(rlaas_local_t *t, const char *key, int64_t limit, int64_t now)
{
    rlaas_local_call_t c;
    rlaas_verdict_t v;

    call_of(&c, key, limit);
    if (rlaas_local_eval(t, &c, now, &v, NULL) != RLAAS_LERR_NONE)
        abort();
    return v.allowed;
}

static int decide_two(rlaas_local_t *t, const char *key, const char *key2,
                      int64_t now)
{
    rlaas_local_call_t c[2];
    rlaas_verdict_t v[2];

    call_of(&c[0], key, 1000000);
    call_of(&c[1], key2, 1000000);
    if (rlaas_local_eval_n(t, c, 2, now, v, NULL, NULL) != RLAAS_LERR_NONE)
        abort();
    return v[0].allowed;
}

int main(int argc, char **argv)
{
    static const uint8_t seed[16] = "bench-local-ir!";
    const char *what = argc > 1 ? argv[1] : "hit";
    void *mem = calloc(1, SIZE);
    rlaas_local_t *t = rlaas_table_init(mem, SIZE, seed);
    char fill[64];
    long i, sum = 0;

    if (t == NULL)
        return 1;
    for (i = 0; i < KNOWN; i++) {
        snprintf(keys[i], sizeof(keys[i]), ZONE "198.51.%ld.%ld:tb", i / 250,
                 i % 250);
        /* denied: limit 1, spent here */
        decide(t, keys[i], strcmp(what, "denied") == 0 ? 1 : 1000000, T0);
    }
    /* fresh: the table full first */
    for (i = 0; strcmp(what, "fresh") == 0 && i < 200000; i++) {
        snprintf(fill, sizeof(fill), ZONE "fill-%ld:tb", i);
        decide(t, fill, 1000000, T0);
    }
    for (i = 0; i < RUNS; i++)
        snprintf(fresh[i], sizeof(fresh[i]), ZONE "new-%ld:tb", i);
    CALLGRIND_TOGGLE_COLLECT;
    for (i = 0; i < RUNS; i++) {
        const char *k = keys[(i * 7919) % KNOWN];

        if (strcmp(what, "fresh") == 0)
            sum += decide(t, fresh[i], 1000000, T0 + 1);
        else if (strcmp(what, "two") == 0)
            sum += decide_two(t, k, keys[(i * 7919 + 1) % KNOWN], T0 + 1);
        else
            sum +=
                decide(t, k, strcmp(what, "denied") == 0 ? 1 : 1000000, T0 + 1);
    }
    CALLGRIND_TOGGLE_COLLECT;
    printf("%s: %ld allowed of %d\n", what, sum, RUNS);
    free(mem);
    return 0;
}
