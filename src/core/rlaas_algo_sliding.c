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
    /* stamped at the start of window st->i: the clock rule */
    if (d > 0 && rlaas_clock_at(st->i * W, now, W) < 0)
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

int rlaas_algo_sliding(const rlaas_algo_call_t *c, void *state, size_t *len,
                       int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = c->limit, W = c->window_ms, now = c->now_ms,
            need = rlaas_need(c);
    int64_t i = now / W, e = now - i * W, P = 0, C = 0;
    int64_t q, x, wp, rem, off, retry = 0, reset;
    sw_state_t st;
    int ok, none, rc = RLAAS_ALGO_LEAVE;

    if (sw_read(state, *len, &st)) {
        int64_t d = distance(&st, i, W, now, &none);

        if (none)
            ;
        else if (d == 0) {
            P = st.p;
            C = st.c;
        }
        else if (d == -1)
            P = st.c;
        else if (d > 0) {
            /* clock went back: hold time at the start of the stored window */
            i += d;
            e = 0;
            P = st.p;
            C = st.c;
        }
    }
    /* P's weight, rounded up: ceil(P * (W - e) / W) */
    q = rlaas_muldiv(P, W - e, W, &x);
    wp = q + (x > 0);
    ok = wp + C + need <= L;
    off = i * W + e - now;
    if (rlaas_charges(c, ok)) {
        C += c->cost;
        st.i = i;
        st.p = P;
        st.c = C;
        memcpy(state, &st, sizeof(st));
        *len = sizeof(st);
        /* dead before window i+2, where mod-4 aliasing could misread it */
        *ttl_ms = 2 * W - e + off;
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
