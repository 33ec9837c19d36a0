/* leaky bucket (lua/leaky.lua): a bucket of size limit draining at limit
 * per window, under K:lb; a hit that would overflow it is denied. The
 * level is n hits + f parts of 1/W of water, draining at r parts per ms:
 * the limit it was last charged under. */
#include "rlaas_algo_impl.h"

/* Drains dt ms from level n + f/W at r (dt >= 0: 0 while time is held). */
static void drain(int64_t dt, int64_t W, int64_t r, int64_t *n, int64_t *f)
{
    int64_t x;

    if (dt >= W) {
        *n = 0;
        *f = 0;
        return;
    }
    *n -= rlaas_muldiv(dt, r, W, &x);
    *f -= x;
    if (*f < 0) {
        (*n)--;
        *f += W;
    }
    if (*n < 0) {
        *n = 0;
        *f = 0;
    }
}

/* ms until the water a + b/W drains down to `to` hits at r per ms. */
static int64_t until(int64_t a, int64_t b, int64_t to, int64_t W, int64_t r,
                     int64_t off)
{
    int64_t x, q = rlaas_muldiv(a - to, W, r, &x);

    return off + q + rlaas_ceil_div(x + b, r);
}

int rlaas_algo_leaky(const rlaas_algo_call_t *cl, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    int64_t need = rlaas_need(cl), a, bf, u, off, reset, retry = 0;
    /* none: empty */
    rlaas_bucket_t b = {0, 0, now, 0, L, 0, 0};
    int ok, rc = RLAAS_ALGO_LEAVE;

    rlaas_bucket_get(state, *len, L, W, now, &b);
    /* never more water than the bucket held */
    if (b.n >= b.r) {
        b.n = b.r;
        b.f = 0;
    }
    /* held (clock went back): dt is 0, no drain, time stays at the stamp */
    drain(b.dt, W, b.r, &b.n, &b.f);
    /* the water as it drains on (a, bf), and as the bucket at hand holds
     * it */
    a = b.n;
    bf = b.f;
    if (b.n >= L) {
        b.n = L;
        b.f = 0;
    }
    /* a hit of need units fits iff level + need * W <= L * W */
    u = b.n + (b.f > 0);
    ok = u + need <= L;
    off = b.ts - now;
    if (rlaas_charges(cl, ok)) {
        b.n += cl->cost;
        rlaas_cap(L, &b.n, &b.f);
        u = b.n + (b.f > 0);
        a = b.n;
        bf = b.f;
        b.r = L;
    }
    /* until empty */
    reset = until(a, bf, 0, W, b.r, off);
    if (rlaas_charges(cl, ok)) {
        rlaas_bucket_put(state, len, b.n, b.f, b.ts, L, W, b.g, cl->mode, b.l);
        *ttl_ms = rlaas_max(1, reset);
        rc = RLAAS_ALGO_STORE;
    }
    /* until the water is down to (L - need) * W */
    if (u + need > L)
        retry = until(a, bf, L - need, W, b.r, off);
    rlaas_reply(v, ok, rlaas_max(0, L - u), reset, retry);
    return rc;
}

int rlaas_algo_leaky_credit(const rlaas_algo_call_t *cl, int64_t at,
                            void *state, size_t *len, int64_t *ttl_ms,
                            int64_t *given)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    rlaas_bucket_t b;

    (void)at; /* water is water, whenever it was poured */
    if (!rlaas_bucket_get(state, *len, L, W, now, &b))
        return RLAAS_ALGO_LEAVE; /* none: empty */
    if (b.n >= b.r) {
        b.n = b.r;
        b.f = 0;
    }
    drain(b.dt, W, b.r, &b.n, &b.f);
    if (b.n >= L) {
        b.n = L;
        b.f = 0;
    }
    *given = rlaas_min(cl->cost, b.n + (b.f > 0));
    b.n -= cl->cost;
    if (b.n < 0 || (b.n == 0 && b.f == 0)) {
        /* empty again: as fresh */
        *len = 0;
        *ttl_ms = 0;
        return RLAAS_ALGO_STORE;
    }
    /* written as a charge writes it: draining at the limit at hand */
    rlaas_bucket_put(state, len, b.n, b.f, b.ts, L, W, b.g, cl->mode, b.l);
    *ttl_ms = rlaas_max(1, until(b.n, b.f, 0, W, L, b.ts - now));
    return RLAAS_ALGO_STORE;
}
