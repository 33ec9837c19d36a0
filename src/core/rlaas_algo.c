#include "rlaas_algo_impl.h"

/* In the order of rlaas_strategy_e, as the embedded scripts are. */
static const rlaas_algo_fn algos[RLAAS_STRATEGY_COUNT] = {
    rlaas_algo_fixed, rlaas_algo_sliding_log, rlaas_algo_sliding,
    rlaas_algo_token, rlaas_algo_leaky,       rlaas_algo_gcra};

int64_t rlaas_algo_limit_max(rlaas_strategy_e st)
{
    return st == RLAAS_STRATEGY_FIXED ? RLAAS_ALGO_LIMIT_BIG : RLAAS_LIMIT_MAX;
}

/* A calendar window: fixed's alone, and now in one of its periods. */
static int cal_ok(const rlaas_algo_call_t *c)
{
    int64_t from, to;

    return c->cal == NULL || (c->strategy == RLAAS_STRATEGY_FIXED &&
                              rlaas_cal_pick(c->cal, c->now_ms, &from, &to));
}

int rlaas_algo_call_ok(const rlaas_algo_call_t *c)
{
    return c->strategy >= 0 && c->strategy < RLAAS_STRATEGY_COUNT &&
           c->limit >= 1 && c->limit <= rlaas_algo_limit_max(c->strategy) &&
           c->window_ms >= 1 && c->window_ms <= RLAAS_ALGO_WINDOW_MAX &&
           c->now_ms >= 0 && c->now_ms <= RLAAS_ALGO_NOW_MAX && c->cost >= 0 &&
           c->cost <= c->limit && c->mode >= 0 && c->mode <= RLAAS_MODE_MAX &&
           cal_ok(c);
}

size_t rlaas_algo_suffix(const rlaas_algo_call_t *c, char *buf)
{
    int64_t from, to;
    size_t n = 0;

    /* fixed counts in wall-clock windows: K<floor(now / W)>, K ending in
     * ':', or in calendar periods, K<tag>+<start>; the other scripts
     * write K itself */
    if (c->strategy == RLAAS_STRATEGY_FIXED && c->cal != NULL &&
        rlaas_cal_pick(c->cal, c->now_ms, &from, &to))
        return rlaas_cal_name(c->cal->tag, from, buf);
    if (c->strategy == RLAAS_STRATEGY_FIXED)
        n = rlaas_fmt_i64(buf, c->now_ms / c->window_ms);
    buf[n] = '\0';
    return n;
}

size_t rlaas_algo_first_len(rlaas_strategy_e st)
{
    /* fixed: the count; the log: its run count and one run {ms, hits,
     * units}; sliding: {window, previous, current}; the buckets: a pair;
     * a ban: {until, length} */
    static const size_t len[RLAAS_STRATEGY_COUNT + 1] = {
        sizeof(int64_t),           4 * sizeof(int64_t),
        3 * sizeof(int64_t),       sizeof(rlaas_algo_pair_t),
        sizeof(rlaas_algo_pair_t), sizeof(rlaas_algo_pair_t),
        2 * sizeof(int64_t)};

    return st >= 0 && st <= RLAAS_STRATEGY_COUNT ? len[st]
                                                 : RLAAS_ALGO_STATE_MAX;
}

int rlaas_algo_hit(const rlaas_algo_call_t *c, void *state, size_t *len,
                   int64_t *ttl_ms, rlaas_verdict_t *v)
{
    if (!rlaas_algo_call_ok(c))
        return -1;
    return algos[c->strategy](c, state, len, ttl_ms, v);
}

int rlaas_algo_hit_ok(const rlaas_algo_call_t *c, void *state, size_t *len,
                      int64_t *ttl_ms, rlaas_verdict_t *v)
{
    /* checked by the caller, all but the index this array needs: a ban's
     * or a slot's call never comes here, and must not read past it */
    if ((unsigned)c->strategy >= RLAAS_STRATEGY_COUNT)
        return -1;
    return algos[c->strategy](c, state, len, ttl_ms, v);
}

static const rlaas_algo_credit_fn credits[RLAAS_STRATEGY_COUNT] = {
    rlaas_algo_fixed_credit,   rlaas_algo_sliding_log_credit,
    rlaas_algo_sliding_credit, rlaas_algo_token_credit,
    rlaas_algo_leaky_credit,   rlaas_algo_gcra_credit};

int rlaas_algo_credit(const rlaas_algo_call_t *c, int64_t at_ms, void *state,
                      size_t *len, int64_t *ttl_ms, int64_t *given)
{
    rlaas_algo_call_t k = *c;

    *given = 0;
    /* the units may exceed the limit: checked as a cost of 1 */
    k.cost = 1;
    if (!rlaas_algo_call_ok(&k) || c->cost < 1 ||
        c->cost > rlaas_algo_limit_max(c->strategy) || at_ms < 0 ||
        at_ms > c->now_ms)
        return -1;
    return credits[c->strategy](c, at_ms, state, len, ttl_ms, given);
}
