/* token bucket (lua/token.lua): limit tokens refilled at limit per window,
 * under K:tb. The level is n tokens + f parts of 1/W, refilled at L parts
 * per ms, so the bucket is full W ms after it was empty, exactly; it
 * follows the limit at hand when that varies. */
#include "rlaas_algo_impl.h"

/* ms until n + f/W tokens grow to `to` at L per window (off: the stamp's
 * distance from now). */
static int64_t until(int64_t to, int64_t n, int64_t f, int64_t L, int64_t W,
                     int64_t off)
{
    int64_t x, q = rlaas_muldiv(to - n, W, L, &x);

    return off + q + rlaas_ceil_div(x - f, L);
}

/* The bucket as it stands now: refilled since its stamp (held, the clock
 * gone back: dt is 0, no refill, time stays at the stamp), at most full. */
static void refill(rlaas_bucket_t *b, int64_t L, int64_t W)
{
    int64_t x;

    if (b->dt >= W) {
        b->n = L;
        b->f = 0;
    }
    else {
        b->n += rlaas_muldiv(b->dt, L, W, &x);
        b->f += x;
        if (b->f >= W) {
            b->n++;
            b->f -= W;
        }
    }
    if (b->n >= L) {
        b->n = L;
        b->f = 0;
    }
}

/* The TTL of a bucket written: until full; under a larger limit it takes
 * longer to fill, never over W. */
static int64_t ttl_of(int mode, int64_t l, int64_t W, int64_t reset)
{
    return rlaas_max(1, (mode & RLAAS_MODE_LIMIT_VARIES) || l > 0
                            ? rlaas_max(W, reset)
                            : reset);
}

int rlaas_algo_token(const rlaas_algo_call_t *cl, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    int64_t need = rlaas_need(cl), off, reset, retry = 0;
    /* none: full */
    rlaas_bucket_t b = {L, 0, now, 0, L, 0, 0};
    int ok, rc = RLAAS_ALGO_LEAVE;

    rlaas_bucket_get(state, *len, L, W, now, &b);
    refill(&b, L, W);
    ok = b.n >= need;
    off = b.ts - now;
    if (rlaas_charges(cl, ok)) {
        b.n -= cl->cost;
        /* forced: an empty bucket stays empty */
        if (b.n < 0) {
            b.n = 0;
            b.f = 0;
        }
        reset = until(L, b.n, b.f, L, W, off);
        rlaas_bucket_put(state, len, b.n, b.f, b.ts, L, W, b.g, cl->mode, b.l);
        *ttl_ms = ttl_of(cl->mode, b.l, W, reset);
        rc = RLAAS_ALGO_STORE;
    }
    else
        reset = until(L, b.n, b.f, L, W, off);
    if (b.n < need)
        retry = until(need, b.n, b.f, L, W, off);
    rlaas_reply(v, ok, b.n, reset, retry);
    return rc;
}

int rlaas_algo_token_credit(const rlaas_algo_call_t *cl, int64_t at,
                            void *state, size_t *len, int64_t *ttl_ms,
                            int64_t *given)
{
    int64_t L = cl->limit, W = cl->window_ms, now = cl->now_ms;
    rlaas_bucket_t b;

    (void)at; /* a token is a token, whenever it was taken */
    if (!rlaas_bucket_get(state, *len, L, W, now, &b))
        return RLAAS_ALGO_LEAVE; /* none: full */
    refill(&b, L, W);
    *given = rlaas_min(cl->cost, L - b.n);
    if (b.n + cl->cost >= L) {
        /* full again: as fresh */
        *len = 0;
        *ttl_ms = 0;
        return RLAAS_ALGO_STORE;
    }
    b.n += cl->cost;
    rlaas_bucket_put(state, len, b.n, b.f, b.ts, L, W, b.g, cl->mode, b.l);
    *ttl_ms = ttl_of(cl->mode, b.l, W, until(L, b.n, b.f, L, W, b.ts - now));
    return RLAAS_ALGO_STORE;
}
