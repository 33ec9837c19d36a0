/*
 * What the strategy files of rlaas_algo share: the scripts' integer
 * helpers (muldiv, gcd, ceilings) and the state the three buckets keep.
 * Private to src/core/rlaas_algo*.c and their tests.
 */
#ifndef RLAAS_ALGO_IMPL_H
#define RLAAS_ALGO_IMPL_H

#include <string.h>

#include "rlaas_algo.h"

/* The scripts write a bucket's level (and gcra its arrival time) as one
 * integer while it stays below 2^53, Lua's exact range, and as "whole:ticks"
 * beyond; the next call reads either. */
#define RLAAS_ALGO_2_53 ((int64_t)1 << 53)

/* a * b = q * m + *x exactly, 0 <= *x < m, for a, b >= 0 and m >= 1: the
 * scripts' muldiv, here by one 128-bit product. A product that fits 64
 * bits (nearly all: a time under a window, a limit) is divided in 64
 * bits, one instruction, where 128 bits call a library routine. */
static inline int64_t rlaas_muldiv(int64_t a, int64_t b, int64_t m, int64_t *x)
{
    unsigned __int128 p = (unsigned __int128)(uint64_t)a * (uint64_t)b;

    if ((uint64_t)(p >> 64) == 0) {
        uint64_t lo = (uint64_t)p;

        *x = (int64_t)(lo % (uint64_t)m);
        return (int64_t)(lo / (uint64_t)m);
    }
    *x = (int64_t)(p % (uint64_t)m);
    return (int64_t)(p / (uint64_t)m);
}

static inline int64_t rlaas_gcd(int64_t a, int64_t b)
{
    while (b > 0) {
        int64_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

/* math.ceil(a / b) for b > 0, a of either sign (C division truncates). */
static inline int64_t rlaas_ceil_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return q * b < a ? q + 1 : q;
}

static inline int64_t rlaas_max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static inline int64_t rlaas_min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The scripts' one rule for a clock gone back (lua/prelude.lua): state
 * stamped more than a window ahead of now is none (-1); up to a window
 * ahead it is held, time standing at its stamp. */
static inline int64_t rlaas_clock_at(int64_t ts, int64_t now, int64_t W)
{
    if (ts > now + W)
        return -1;
    return ts > now ? ts : now;
}

/* The units a call needs to be allowed: its cost, and 1 for a check. */
static inline int64_t rlaas_need(const rlaas_algo_call_t *c)
{
    return c->cost > 1 ? c->cost : 1;
}

/* Whether a call charges: allowed (or forced), committed, and not a
 * check. */
static inline int rlaas_charges(const rlaas_algo_call_t *c, int ok)
{
    return (ok || (c->mode & RLAAS_MODE_FORCE)) && c->commit && c->cost > 0;
}

/* A forced charge fills a bucket (leaky, gcra) up to its capacity L. */
static inline void rlaas_cap(int64_t L, int64_t *n, int64_t *f)
{
    if (*n > L || (*n == L && *f > 0)) {
        *n = L;
        *f = 0;
    }
}

static inline void rlaas_reply(rlaas_verdict_t *v, int ok, int64_t rem,
                               int64_t reset, int64_t retry)
{
    v->allowed = ok;
    v->remaining = rem;
    v->reset_ms = reset;
    v->retry_ms = retry;
}

/* Token and leaky bucket ({tokens|level, ts[, l]}), and gcra (ts unused):
 * the stored value as the script wrote it, one integer (pair 0: a) or the
 * "whole:ticks" text (pair 1: a, b); l the limit it was charged under
 * when the script keeps it (the limit varies per request), else 0. */
typedef struct {
    int64_t a;
    int64_t b;
    int64_t ts;
    int64_t pair;
    int64_t l;
} rlaas_algo_pair_t;

/* Reads a bucket state of the right size into *st; 0 if there is none. */
static inline int rlaas_algo_pair_read(const void *state, size_t len,
                                       rlaas_algo_pair_t *st)
{
    if (len != sizeof(*st))
        return 0;
    memcpy(st, state, sizeof(*st));
    return st->a >= 0 && st->b >= 0 && st->ts >= 0 &&
           (st->pair == 0 || st->pair == 1) && st->l >= 0 &&
           st->l <= RLAAS_LIMIT_MAX;
}

static inline void rlaas_algo_pair_write(void *state, size_t *len,
                                         const rlaas_algo_pair_t *st)
{
    memcpy(state, st, sizeof(*st));
    *len = sizeof(*st);
}

/* A bucket level (n whole, f ticks of c) as the script reads it back:
 * "n:f" as written, a single integer v as v div c, v mod c. */
static inline void rlaas_algo_level(const rlaas_algo_pair_t *st, int64_t c,
                                    int64_t *n, int64_t *f)
{
    if (st->pair) {
        *n = st->a;
        *f = st->b;
    }
    else {
        *n = st->a / c;
        *f = st->a - *n * c;
    }
}

/* ... and as the script writes it: one integer while L * c < 2^53 (the
 * product may pass 2^64: its overflow says it is past 2^53). */
static inline void rlaas_algo_level_store(rlaas_algo_pair_t *st, int64_t L,
                                          int64_t c, int64_t n, int64_t f)
{
    uint64_t lc;

    st->pair = __builtin_mul_overflow((uint64_t)L, (uint64_t)c, &lc) ||
               lc >= (uint64_t)RLAAS_ALGO_2_53;
    st->a = st->pair ? n : n * c + f;
    st->b = st->pair ? f : 0;
}

/* A bucket as the script reads it (lua/prelude.lua, bucket_get): the
 * level n whole + f parts of 1/W, its stamp (held if ahead of now), the
 * time since, the rate (the limit it keeps, or L) and that kept limit (0:
 * none; the level is then in ticks of gcd(L, W)/W); g: gcd(L, W) once
 * found (0: not yet), for the put that follows. */
typedef struct {
    int64_t n, f, ts, dt, r, l, g;
} rlaas_bucket_t;

/* 1 and *b if the state holds a bucket the clock rule keeps, else 0. */
static inline int rlaas_bucket_get(const void *state, size_t len, int64_t L,
                                   int64_t W, int64_t now, rlaas_bucket_t *b)
{
    rlaas_algo_pair_t st;
    int64_t at, g = 1, c = W;

    if (!rlaas_algo_pair_read(state, len, &st) ||
        (at = rlaas_clock_at(st.ts, now, W)) < 0)
        return 0;
    b->g = 0;
    if (st.l == 0) {
        g = b->g = rlaas_gcd(L, W);
        c = W / g;
    }
    rlaas_algo_level(&st, c, &b->n, &b->f);
    b->f = rlaas_min(b->f, c - 1) * g;
    b->ts = at;
    b->dt = at - st.ts;
    b->l = st.l;
    b->r = st.l > 0 ? st.l : L;
    return 1;
}

/* ... and as the script writes it (bucket_put): with the limit when it
 * varies or the bucket kept one, else in ticks (g: gcd(L, W), 0 if not
 * yet found). */
static inline void rlaas_bucket_put(void *state, size_t *len, int64_t n,
                                    int64_t f, int64_t ts, int64_t L, int64_t W,
                                    int64_t g, int mode, int64_t l)
{
    rlaas_algo_pair_t st;

    if ((mode & RLAAS_MODE_LIMIT_VARIES) || l > 0) {
        rlaas_algo_level_store(&st, L, W, n, f);
        st.l = L;
    }
    else {
        if (g == 0)
            g = rlaas_gcd(L, W);
        rlaas_algo_level_store(&st, L, W / g, n, f / g);
        st.l = 0;
    }
    st.ts = ts;
    rlaas_algo_pair_write(state, len, &st);
}

typedef int (*rlaas_algo_fn)(const rlaas_algo_call_t *c, void *state,
                             size_t *len, int64_t *ttl_ms, rlaas_verdict_t *v);

int rlaas_algo_fixed(const rlaas_algo_call_t *c, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v);
int rlaas_algo_sliding_log(const rlaas_algo_call_t *c, void *state, size_t *len,
                           int64_t *ttl_ms, rlaas_verdict_t *v);
int rlaas_algo_sliding(const rlaas_algo_call_t *c, void *state, size_t *len,
                       int64_t *ttl_ms, rlaas_verdict_t *v);
int rlaas_algo_token(const rlaas_algo_call_t *c, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v);
int rlaas_algo_leaky(const rlaas_algo_call_t *c, void *state, size_t *len,
                     int64_t *ttl_ms, rlaas_verdict_t *v);
int rlaas_algo_gcra(const rlaas_algo_call_t *c, void *state, size_t *len,
                    int64_t *ttl_ms, rlaas_verdict_t *v);

typedef int (*rlaas_algo_credit_fn)(const rlaas_algo_call_t *c, int64_t at,
                                    void *state, size_t *len, int64_t *ttl_ms,
                                    int64_t *given);

int rlaas_algo_fixed_credit(const rlaas_algo_call_t *c, int64_t at, void *state,
                            size_t *len, int64_t *ttl_ms, int64_t *given);
int rlaas_algo_sliding_log_credit(const rlaas_algo_call_t *c, int64_t at,
                                  void *state, size_t *len, int64_t *ttl_ms,
                                  int64_t *given);
int rlaas_algo_sliding_credit(const rlaas_algo_call_t *c, int64_t at,
                              void *state, size_t *len, int64_t *ttl_ms,
                              int64_t *given);
int rlaas_algo_token_credit(const rlaas_algo_call_t *c, int64_t at, void *state,
                            size_t *len, int64_t *ttl_ms, int64_t *given);
int rlaas_algo_leaky_credit(const rlaas_algo_call_t *c, int64_t at, void *state,
                            size_t *len, int64_t *ttl_ms, int64_t *given);
int rlaas_algo_gcra_credit(const rlaas_algo_call_t *c, int64_t at, void *state,
                           size_t *len, int64_t *ttl_ms, int64_t *given);

#endif
