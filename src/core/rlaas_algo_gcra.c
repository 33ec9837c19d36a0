/* GCRA (lua/gcra.lua): the theoretical arrival time (TAT) under K:gcra.
 * Ticks: r per ms; the emission interval T is c ticks; the tolerance is
 * (L-1) * c. Times are (ms, ticks) pairs with 0 <= ticks < r. */
#include "rlaas_algo_impl.h"

/* The stored TAT as the script reads it back (one integer a * r + b, or
 * "a:b"); 0 if it is past (a full bucket), or if its stamp, TAT - W at the
 * earliest, falls under the clock rule (a TAT misread under another tick
 * size lies far ahead too: fresh). */
static int tat_read(const void *state, size_t len, int64_t r, int64_t now,
                    int64_t W, int64_t *a, int64_t *b)
{
    rlaas_algo_pair_t st;
    int64_t x, y;

    if (!rlaas_algo_pair_read(state, len, &st))
        return 0;
    if (st.pair) {
        x = st.a;
        y = rlaas_min(st.b, r - 1);
    }
    else {
        y = st.a % r;
        x = (st.a - y) / r;
    }
    if (x < now || rlaas_clock_at(x - W, now, W) < 0)
        return 0;
    *a = x;
    *b = y;
    return 1;
}

int rlaas_algo_gcra(const rlaas_algo_call_t *cl, void *state, size_t *len,
                    int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    int64_t g = rlaas_gcd(L, W), c = W / g, r = L / g;
    int64_t Ta = c / r, Tb = c % r, ub, ua = rlaas_muldiv(L - 1, c, r, &ub);
    int64_t a = now, b = 0, da, rem = 0, reset, retry = 0, q, x;
    rlaas_algo_pair_t st = {0, 0, 0, 0};
    int ok;

    tat_read(state, *len, r, now, W, &a, &b);
    /* allowed iff TAT - now <= tolerance */
    ok = a - now < ua || (a - now == ua && b <= ub);
    if (ok) {
        a += Ta;
        b += Tb;
        if (b >= r) {
            a++;
            b -= r;
        }
    }
    da = a - now;
    /* remaining = L - ceil((TAT - now) / T) */
    if (da <= W) {
        q = rlaas_muldiv(da, r, c, &x);
        rem = rlaas_max(0, L - q - rlaas_ceil_div(x + b, c));
    }
    reset = da + (b > 0);
    if (rem == 0)
        retry = da - ua + (b > ub);
    st.pair = a > (RLAAS_ALGO_2_53 - r) / r;
    st.a = st.pair ? a : a * r + b;
    st.b = st.pair ? b : 0;
    rlaas_algo_pair_write(state, len, &st);
    *ttl_ms = rlaas_max(1, reset);
    rlaas_reply(v, ok, rem, reset, retry);
    return 0;
}
