/* fixed (lua/fixed.lua, seed 001): units charged in wall-clock windows
 * under K:<window number>, or in calendar periods under K:<tag>+<start>;
 * a hit that does not fit charges nothing. */
#include "rlaas_algo_impl.h"

/* The window holding at: [*from, *to); 0 when a calendar's table holds
 * no period there (rlaas_algo_call_ok has checked now's). */
static int span(const rlaas_algo_call_t *c, int64_t at, int64_t *from,
                int64_t *to)
{
    if (c->cal != NULL)
        return rlaas_cal_pick(c->cal, at, from, to);
    *from = at / c->window_ms * c->window_ms;
    *to = *from + c->window_ms;
    return 1;
}

int rlaas_algo_fixed(const rlaas_algo_call_t *c, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = c->limit, now = c->now_ms, from, to, cost;
    int64_t need = rlaas_need(c), n = 0, left, rem;
    int ok, rc = RLAAS_ALGO_LEAVE;

    if (!span(c, now, &from, &to))
        return -1;
    if (*len == sizeof(n))
        memcpy(&n, state, sizeof(n));
    if (n < 0 || n >= RLAAS_ALGO_2_53)
        n = 0;
    ok = n + need <= L;
    /* a forced charge never lifts the count past 2^52 (as the script) */
    cost = rlaas_min(c->cost, rlaas_max(0, RLAAS_ALGO_2_53 / 2 - n));
    if ((ok || (c->mode & RLAAS_MODE_FORCE)) && c->commit && cost > 0) {
        n += cost; /* INCRBY */
        memcpy(state, &n, sizeof(n));
        *len = sizeof(n);
        /* the window's first charge sets the TTL (a window's length, a
         * calendar period's end); later ones keep it */
        *ttl_ms = n != cost        ? RLAAS_ALGO_TTL_KEEP
                  : c->cal != NULL ? to - now
                                   : c->window_ms;
        rc = RLAAS_ALGO_STORE;
    }
    /* the quota comes back when the window ends */
    left = to - now;
    rem = rlaas_max(0, L - n);
    rlaas_reply(v, ok, rem, n > 0 ? left : 0, rem < need ? left : 0);
    return rc;
}

int rlaas_algo_fixed_credit(const rlaas_algo_call_t *c, int64_t at, void *state,
                            size_t *len, int64_t *ttl_ms, int64_t *given)
{
    int64_t n = 0, from, to, now_from;

    /* a window that is over no longer limits: nothing to give back */
    if (!span(c, at, &from, &to) || !span(c, c->now_ms, &now_from, &to) ||
        from != now_from || *len != sizeof(n))
        return RLAAS_ALGO_LEAVE;
    memcpy(&n, state, sizeof(n));
    if (n < 1 || n >= RLAAS_ALGO_2_53)
        return RLAAS_ALGO_LEAVE;
    *given = rlaas_min(c->cost, n);
    n -= *given;
    /* DECRBY keeps the TTL; down to 0 the key goes (DEL), as fresh */
    memcpy(state, &n, sizeof(n));
    *len = n > 0 ? sizeof(n) : 0;
    *ttl_ms = n > 0 ? RLAAS_ALGO_TTL_KEEP : 0;
    return RLAAS_ALGO_STORE;
}
