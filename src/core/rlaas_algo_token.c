/* token bucket (lua/token.lua): limit tokens refilled at limit per window,
 * under K:tb. In ticks: a token is c ticks, r ticks come back per ms, so
 * the bucket is full W ms after it was empty, exactly. */
#include "rlaas_algo_impl.h"

int rlaas_algo_token(const rlaas_algo_call_t *cl, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    int64_t g = rlaas_gcd(L, W), c = W / g, r = L / g;
    /* level = n tokens + f ticks (0 <= f < c); none: full */
    int64_t n = L, f = 0, ts = now, at, off, q, x, reset, retry = 0;
    rlaas_algo_pair_t st;
    int ok;

    if (rlaas_algo_pair_read(state, *len, &st) &&
        (at = rlaas_clock_at(st.ts, now, W)) >= 0) {
        /* held (clock went back): no refill, time stays at the stamp */
        int64_t dt = at - st.ts;

        rlaas_algo_level(&st, c, &n, &f);
        if (f >= c)
            f = c - 1;
        ts = at;
        if (dt >= W) {
            n = L;
            f = 0;
        }
        else {
            n += rlaas_muldiv(dt, r, c, &x);
            f += x;
            if (f >= c) {
                n++;
                f -= c;
            }
        }
        if (n >= L) {
            n = L;
            f = 0;
        }
    }
    ok = n >= 1;
    if (ok)
        n--;
    off = ts - now;
    /* until full: ceil(((L - n) * c - f) / r) */
    q = rlaas_muldiv(L - n, c, r, &x);
    reset = off + q + rlaas_ceil_div(x - f, r);
    if (n < 1)
        retry = off + rlaas_ceil_div(c - f, r);
    rlaas_algo_level_store(&st, L, c, n, f);
    st.ts = ts;
    rlaas_algo_pair_write(state, len, &st);
    *ttl_ms = rlaas_max(1, reset);
    rlaas_reply(v, ok, n, reset, retry);
    return 0;
}
