/* GCRA (lua/gcra.lua): the theoretical arrival time (TAT) under K:gcra, a
 * ms and a fraction of it. One limit: an integer of ticks, r = L/g per ms
 * (g = gcd(L, W)); a limit that varies per request: l, ms, parts of 1/l.
 * Worked on as the debt D = (TAT - now) * l in parts of 1/W (water, as the
 * leaky bucket's, draining at l per ms): n whole + f. */
#include "rlaas_algo_impl.h"

/* The stored TAT as the script reads it back: a ms + b parts of 1/l ms,
 * and l (the kept limit, or L). 0 if there is none. */
static int tat_read(const void *state, size_t len, int64_t L, int64_t g,
                    int64_t r, int64_t *a, int64_t *b, int64_t *l)
{
    rlaas_algo_pair_t st;

    *l = L;
    if (!rlaas_algo_pair_read(state, len, &st))
        return 0;
    if (st.l > 0) {
        /* "l:ms:parts" */
        *l = st.l;
        *a = st.a;
        *b = rlaas_min(st.b, st.l - 1);
    }
    else if (st.pair) {
        /* "ms:ticks" */
        *a = st.a;
        *b = rlaas_min(st.b, r - 1) * g;
    }
    else {
        /* ms * r + ticks */
        *b = st.a % r;
        *a = (st.a - *b) / r;
        *b *= g;
    }
    return 1;
}

/* The TAT now + q ms + x parts of 1/L ms, as the script writes it. */
static void tat_write(void *state, size_t *len, int64_t now, int64_t q,
                      int64_t x, int64_t L, int64_t g, int64_t r, int mode)
{
    rlaas_algo_pair_t st = {now + q, 0, 0, 0, 0};

    if (mode & RLAAS_MODE_LIMIT_VARIES) {
        st.b = x;
        st.l = L;
    }
    else {
        st.b = rlaas_ceil_div(x, g);
        if (st.b >= r) {
            st.a++;
            st.b -= r;
        }
        st.pair = st.a > (RLAAS_ALGO_2_53 - r) / r;
        if (!st.pair) {
            st.a = st.a * r + st.b;
            st.b = 0;
        }
    }
    rlaas_algo_pair_write(state, len, &st);
}

/* The debt now: n whole + f parts of 1/W as the bucket at hand holds it,
 * and (*c, *d) as it drains on at *l. Past TAT: full bucket. A TAT is
 * written at most W ahead, so its stamp is TAT - W at the earliest: the
 * clock rule on that (a TAT misread under another tick size lies far
 * ahead too: fresh). g = gcd(L, W) and r = L / g, as the caller has them. */
static void debt(const void *state, size_t len, int64_t L, int64_t W, int64_t g,
                 int64_t r, int64_t now, int64_t *n, int64_t *f, int64_t *c,
                 int64_t *d, int64_t *l)
{
    int64_t a = 0, b = 0;

    *n = *f = 0;
    if (tat_read(state, len, L, g, r, &a, &b, l) && a >= now &&
        rlaas_clock_at(a - W, now, W) >= 0) {
        *n = rlaas_muldiv(a - now, *l, W, f);
        *f += b;
        *n += *f / W;
        *f %= W;
    }
    /* a debt beyond the old bucket (the clock went back) is kept */
    *c = *n;
    *d = *f;
    if (*n >= *l) {
        if (L < *l)
            *n = *n - *l + L;
    }
    else if (*n >= L) {
        *n = L;
        *f = 0;
    }
}

/* Until empty, ceil(D / l) ms: q whole ms and x parts of 1/l left. */
static int64_t empty_in(int64_t c, int64_t d, int64_t W, int64_t l, int64_t *q,
                        int64_t *x)
{
    *q = rlaas_muldiv(c, W, l, x);
    *x += d;
    *q += *x / l;
    *x %= l;
    return *q + (*x > 0);
}

int rlaas_algo_gcra(const rlaas_algo_call_t *cl, void *state, size_t *len,
                    int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    int64_t need = rlaas_need(cl), g = rlaas_gcd(L, W), r = L / g;
    int64_t l, n, f, c, d, u, q, x, reset, retry = 0;
    int ok, rc = RLAAS_ALGO_LEAVE;

    debt(state, *len, L, W, g, r, now, &n, &f, &c, &d, &l);
    u = n + (f > 0);
    ok = u + need <= L;
    if (rlaas_charges(cl, ok)) {
        n += cl->cost;
        rlaas_cap(L, &n, &f);
        u = n + (f > 0);
        c = n;
        d = f;
        l = L;
    }
    reset = empty_in(c, d, W, l, &q, &x);
    if (rlaas_charges(cl, ok)) {
        tat_write(state, len, now, q, x, L, g, r, cl->mode);
        *ttl_ms = rlaas_max(1, reset);
        rc = RLAAS_ALGO_STORE;
    }
    /* until D <= (L - need) * W */
    if (u + need > L) {
        q = rlaas_muldiv(c - L + need, W, l, &x);
        retry = q + rlaas_ceil_div(x + d, l);
    }
    rlaas_reply(v, ok, rlaas_max(0, L - u), reset, retry);
    return rc;
}

int rlaas_algo_gcra_credit(const rlaas_algo_call_t *cl, int64_t at, void *state,
                           size_t *len, int64_t *ttl_ms, int64_t *given)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    int64_t g = rlaas_gcd(L, W), r = L / g, l, n, f, c, d, q, x, reset;

    (void)at;
    if (*len == 0)
        return RLAAS_ALGO_LEAVE; /* none: never created */
    debt(state, *len, L, W, g, r, now, &n, &f, &c, &d, &l);
    *given = rlaas_min(cl->cost, n + (f > 0));
    n -= cl->cost;
    if (n < 0 || (n == 0 && f == 0)) {
        /* no debt left: as fresh */
        *len = 0;
        *ttl_ms = 0;
        return RLAAS_ALGO_STORE;
    }
    /* written as a charge writes it, at the limit at hand */
    reset = empty_in(n, f, W, L, &q, &x);
    tat_write(state, len, now, q, x, L, g, r, cl->mode);
    *ttl_ms = rlaas_max(1, reset);
    return RLAAS_ALGO_STORE;
}
