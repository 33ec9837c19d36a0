#include "rlaas_local.h"

#include <string.h>
#include <time.h>

#include "rlaas_algo.h"

typedef char same_keep[RLAAS_ALGO_TTL_KEEP == RLAAS_TABLE_TTL_KEEP ? 1 : -1];
typedef char
    state_fits_a_record[RLAAS_ALGO_STATE_MAX <= RLAAS_TABLE_VALUE_MAX ? 1 : -1];

static const char *const names[RLAAS_LERR_COUNT] = {"none", "busy", "broken",
                                                    "call", "no_table"};

const char *rlaas_lerr_name(rlaas_lerr_e e)
{
    return e >= 0 && e < RLAAS_LERR_COUNT ? names[e] : "unknown";
}

int64_t rlaas_local_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One hit, inside the table's update of the record. */
typedef struct {
    const rlaas_algo_call_t *call;
    rlaas_verdict_t *v;
} hit_t;

static int hit_fn(void *baton, void *val, size_t *len, int64_t *ttl_ms)
{
    hit_t *h = baton;

    return rlaas_algo_hit(h->call, val, len, ttl_ms, h->v);
}

rlaas_lerr_e rlaas_local_eval_ex(rlaas_local_t *lc,
                                 const rlaas_local_call_t *call, int64_t now_ms,
                                 rlaas_verdict_t *v, rlaas_table_report_t *rep,
                                 char *rkey, int64_t *ttl_ms)
{
    rlaas_algo_call_t ac;
    char key[RLAAS_TABLE_KEY_MAX + 1];
    size_t n;
    rlaas_table_report_t dummy;
    hit_t h;

    if (rep == NULL)
        rep = &dummy;
    rep->evicted = 0;
    rep->reset = 0;
    if (lc == NULL)
        return RLAAS_LERR_NONE_HERE;
    ac.strategy = call->strategy;
    ac.limit = call->limit;
    ac.window_ms = call->window_ms;
    ac.now_ms = now_ms;
    if (!rlaas_algo_call_ok(&ac) ||
        call->key_len > RLAAS_TABLE_KEY_MAX - RLAAS_ALGO_SUFFIX_MAX)
        return RLAAS_LERR_CALL;
    /* the record's key is the one the script would write */
    memcpy(key, call->key, call->key_len);
    n = call->key_len + rlaas_algo_suffix(&ac, key + call->key_len);
    h.call = &ac;
    h.v = v;
    switch (rlaas_table_update(lc, key, n, now_ms, RLAAS_LOCAL_LOCK_WAIT_US,
                               hit_fn, &h, rep)) {
    case RLAAS_TABLE_OK:
        break;
    case RLAAS_TABLE_BUSY:
        return RLAAS_LERR_BUSY;
    case RLAAS_TABLE_BROKEN:
        return RLAAS_LERR_BROKEN;
    default:
        return RLAAS_LERR_CALL;
    }
    if (rkey != NULL)
        memcpy(rkey, key, n + 1);
    if (ttl_ms != NULL)
        *ttl_ms = rep->expire - now_ms;
    return RLAAS_LERR_NONE;
}

rlaas_lerr_e rlaas_local_eval(rlaas_local_t *lc, const rlaas_local_call_t *call,
                              int64_t now_ms, rlaas_verdict_t *v,
                              rlaas_table_report_t *rep)
{
    return rlaas_local_eval_ex(lc, call, now_ms, v, rep, NULL, NULL);
}
