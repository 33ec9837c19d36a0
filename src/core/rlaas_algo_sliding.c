/* sliding window estimate (lua/sliding.lua, seed 002): the units of the
 * current window plus the previous one's weighted by the part of it still
 * inside the rolling window, under K:sw. */
#include "rlaas_algo_impl.h"

/* The script packs (prev, curr, window mod 4) into one integer while both
 * counts stay below B, and writes "window:prev:curr" beyond; it reads the
 * two forms differently when the clock went back, so the form is derived
 * here from the counts, as the script chose it. */
#define B ((int64_t)16777216)

typedef struct {
    int64_t i; /* the window the counts belong to */
    int64_t p; /* units of window i-1 */
    int64_t c; /* units of window i */
} sw_state_t;

static int sw_read(const void *state, size_t len, sw_state_t *st)
{
    if (len != sizeof(*st))
        return 0;
    memcpy(st, state, sizeof(*st));
    return st->i >= 0 && st->p >= 0 && st->c >= 0 && st->p < RLAAS_ALGO_2_53 &&
           st->c < RLAAS_ALGO_2_53;
}

/* How far the stored window is from now's (0, -1: the previous one, > 0:
 * ahead, the clock went back); 0 with *none when it can't be used. */
static int64_t distance(const sw_state_t *st, int64_t i, int64_t W, int64_t now,
                        int *none)
{
    int64_t d;

    *none = 0;
    if (st->p < B && st->c < B) {
        /* packed: only the window mod 4 is known */
        d = ((st->i % 4 - i % 4) % 4 + 4) % 4;
        if (d == 3)
            d = -1;
        else if (d == 2)
            *none = 1;
        return d;
    }
    d = st->i - i;
    /* stamped at the start of window st->i: the clock rule (a window far
     * ahead, e.g. numbered under a much shorter window before the
     * configuration changed, is none) */
    if (d > 0 &&
        (st->i > INT64_MAX / W || rlaas_clock_at(st->i * W, now, W) < 0))
        *none = 1;
    return d;
}

/* Until need units fit again, from the start of window i + e, given the
 * counts. */
static int64_t retry_in(int64_t L, int64_t W, int64_t e, int64_t need,
                        int64_t P, int64_t C)
{
    int64_t R = L - C - need, x, d = -1;

    if (R >= 0 && P > R) {
        /* later in this window: P * (W - e1) <= R * W */
        int64_t e1 = rlaas_max(e + 1, W - rlaas_muldiv(R, W, P, &x));

        if (e1 < W)
            d = e1 - e;
    }
    if (d < 0) {
        /* next window, where C is the previous count */
        int64_t e2 = 0;

        if (C > L - need)
            e2 = W - rlaas_muldiv(L - need, W, C, &x);
        d = e2 < W ? W - e + e2 : 2 * W - e;
    }
    return d;
}

/* The counts as now's window sees them: the window i they are reckoned
 * in (now's, or with the clock gone back the stored one, time held at its
 * start: *held), e ms into it, P of window i-1 and C of window i. */
static void sw_now(const void *state, size_t len, int64_t W, int64_t now,
                   int64_t *i, int64_t *e, int64_t *P, int64_t *C, int *held)
{
    sw_state_t st;
    int none;

    *i = now / W;
    *e = now - *i * W;
    *P = *C = 0;
    *held = 0;
    if (sw_read(state, len, &st)) {
        int64_t d = distance(&st, *i, W, now, &none);

        if (none)
            ;
        else if (d == 0) {
            *P = st.p;
            *C = st.c;
        }
        else if (d == -1)
            *P = st.c;
        else if (d > 0) {
            /* clock went back: hold time at the start of the stored window */
            *i += d;
            *e = 0;
            *P = st.p;
            *C = st.c;
            *held = 1;
        }
    }
}

/* The state of window i, and its time to live: dead before window i+2,
 * where mod-4 aliasing could misread it. */
static int64_t sw_put(void *state, size_t *len, int64_t i, int64_t P, int64_t C,
                      int64_t W, int64_t e, int64_t off)
{
    sw_state_t st = {i, P, C};

    memcpy(state, &st, sizeof(st));
    *len = sizeof(st);
    return 2 * W - e + off;
}

int rlaas_algo_sliding(const rlaas_algo_call_t *c, void *state, size_t *len,
                       int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = c->limit, W = c->window_ms, now = c->now_ms,
            need = rlaas_need(c);
    int64_t i, e, P, C;
    int64_t q, x, wp, rem, off, retry = 0, reset;
    int ok, held, rc = RLAAS_ALGO_LEAVE;

    sw_now(state, *len, W, now, &i, &e, &P, &C, &held);
    /* P's weight, rounded up: ceil(P * (W - e) / W) */
    q = rlaas_muldiv(P, W - e, W, &x);
    wp = q + (x > 0);
    ok = wp + C + need <= L;
    off = i * W + e - now;
    if (rlaas_charges(c, ok)) {
        C += c->cost;
        *ttl_ms = sw_put(state, len, i, P, C, W, e, off);
        rc = RLAAS_ALGO_STORE;
    }
    rem = rlaas_max(0, L - wp - C);
    if (rem < need)
        retry = retry_in(L, W, e, need, P, C) + off;
    reset = off;
    if (C > 0)
        reset += 2 * W - e;
    else if (P > 0)
        reset += W - e;
    rlaas_reply(v, ok, rem, reset, retry);
    return rc;
}

int rlaas_algo_sliding_credit(const rlaas_algo_call_t *c, int64_t at,
                              void *state, size_t *len, int64_t *ttl_ms,
                              int64_t *given)
{
    int64_t W = c->window_ms, now = c->now_ms, i, e, P, C, j, take;
    int held;

    sw_now(state, *len, W, now, &i, &e, &P, &C, &held);
    /* the charge's window: held time counts as the stored window's */
    j = held ? i : at / W;
    if (j == i) {
        take = rlaas_min(c->cost, C);
        C -= take;
        *given += take;
    }
    if (j == i || j == i - 1) {
        take = rlaas_min(c->cost - *given, P);
        P -= take;
        *given += take;
    }
    if (*given == 0)
        return RLAAS_ALGO_LEAVE;
    if (P == 0 && C == 0) {
        *len = 0;
        *ttl_ms = 0;
    }
    else
        *ttl_ms = sw_put(state, len, i, P, C, W, e, i * W + e - now);
    return RLAAS_ALGO_STORE;
}
