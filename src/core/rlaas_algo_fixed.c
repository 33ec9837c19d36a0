/* fixed (lua/fixed.lua, seed 001): hits counted in wall-clock windows
 * under K:<window number>; denied hits count too. */
#include "rlaas_algo_impl.h"

int rlaas_algo_fixed(const rlaas_algo_call_t *c, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = c->limit, W = c->window_ms, now = c->now_ms;
    int64_t n = 0, idx = now / W, left, rem;

    if (*len == sizeof(n))
        memcpy(&n, state, sizeof(n));
    if (n < 0 || n >= RLAAS_ALGO_2_53)
        n = 0;
    n++; /* INCR */
    memcpy(state, &n, sizeof(n));
    *len = sizeof(n);
    /* the window's first hit sets the TTL; later ones keep it */
    *ttl_ms = n == 1 ? W : RLAAS_ALGO_TTL_KEEP;
    /* the quota comes back when the window ends */
    left = (idx + 1) * W - now;
    rem = rlaas_max(0, L - n);
    if (n <= L)
        rlaas_reply(v, 1, rem, left, rem > 0 ? 0 : left);
    else
        rlaas_reply(v, 0, 0, left, left);
    return 0;
}
