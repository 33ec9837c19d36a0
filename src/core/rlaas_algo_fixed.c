/* fixed (lua/fixed.lua, seed 001): units charged in wall-clock windows
 * under K:<window number>; a hit that does not fit charges nothing. */
#include "rlaas_algo_impl.h"

int rlaas_algo_fixed(const rlaas_algo_call_t *c, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = c->limit, W = c->window_ms, now = c->now_ms;
    int64_t need = rlaas_need(c), n = 0, idx = now / W, left, rem;
    int ok, rc = RLAAS_ALGO_LEAVE;

    if (*len == sizeof(n))
        memcpy(&n, state, sizeof(n));
    if (n < 0 || n >= RLAAS_ALGO_2_53)
        n = 0;
    ok = n + need <= L;
    if (rlaas_charges(c, ok)) {
        n += c->cost; /* INCRBY */
        memcpy(state, &n, sizeof(n));
        *len = sizeof(n);
        /* the window's first charge sets the TTL; later ones keep it */
        *ttl_ms = n == c->cost ? W : RLAAS_ALGO_TTL_KEEP;
        rc = RLAAS_ALGO_STORE;
    }
    /* the quota comes back when the window ends */
    left = (idx + 1) * W - now;
    rem = rlaas_max(0, L - n);
    rlaas_reply(v, ok, rem, n > 0 ? left : 0, rem < need ? left : 0);
    return rc;
}

int rlaas_algo_fixed_credit(const rlaas_algo_call_t *c, int64_t at, void *state,
                            size_t *len, int64_t *ttl_ms, int64_t *given)
{
    int64_t W = c->window_ms, n = 0;

    /* a window that is over no longer limits: nothing to give back */
    if (at / W != c->now_ms / W || *len != sizeof(n))
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
