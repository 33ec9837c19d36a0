/* leaky bucket (lua/leaky.lua): a bucket of size limit draining at limit
 * per window, under K:lb; a hit that would overflow it is denied. In
 * ticks: a hit is c ticks of water, r ticks drain per ms. */
#include "rlaas_algo_impl.h"

/* Drains dt ms from level n + f/c (dt >= 0: 0 while time is held). */
static void drain(int64_t dt, int64_t W, int64_t c, int64_t r, int64_t *n,
                  int64_t *f)
{
    int64_t x;

    if (dt >= W) {
        *n = 0;
        *f = 0;
        return;
    }
    *n -= rlaas_muldiv(dt, r, c, &x);
    *f -= x;
    if (*f < 0) {
        (*n)--;
        *f += c;
    }
    if (*n < 0) {
        *n = 0;
        *f = 0;
    }
}

int rlaas_algo_leaky(const rlaas_algo_call_t *cl, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    int64_t g = rlaas_gcd(L, W), c = W / g, r = L / g;
    /* level = n hits + f ticks (0 <= f < c); none: empty */
    int64_t n = 0, f = 0, ts = now, at, u, off, q, x, reset, retry = 0;
    rlaas_algo_pair_t st;
    int ok;

    if (rlaas_algo_pair_read(state, *len, &st) &&
        (at = rlaas_clock_at(st.ts, now, W)) >= 0) {
        rlaas_algo_level(&st, c, &n, &f);
        if (f >= c)
            f = c - 1;
        /* never more water than the bucket holds (the limit or window may
         * have changed): a level past L would give a remaining below 0 */
        if (n >= L) {
            n = L;
            f = 0;
        }
        /* held (clock went back): no drain, time stays at the stamp */
        drain(at - st.ts, W, c, r, &n, &f);
        ts = at;
    }
    /* a hit fits iff level + c <= L * c, i.e. ceil(level / c) < L */
    u = n + (f > 0);
    ok = u < L;
    if (ok) {
        n++;
        u++;
    }
    off = ts - now;
    /* until empty: ceil((n * c + f) / r) */
    q = rlaas_muldiv(n, c, r, &x);
    reset = off + q + rlaas_ceil_div(x + f, r);
    if (u >= L) {
        /* until level <= (L - 1) * c */
        q = rlaas_muldiv(n - L + 1, c, r, &x);
        retry = off + q + rlaas_ceil_div(x + f, r);
    }
    rlaas_algo_level_store(&st, L, c, n, f);
    st.ts = ts;
    rlaas_algo_pair_write(state, len, &st);
    *ttl_ms = rlaas_max(1, reset);
    rlaas_reply(v, ok, L - u, reset, retry);
    return 0;
}
