/* sliding log (lua/sliding_log.lua, seeds 000/003): the times of the
 * allowed hits still in the rolling window. Redis keeps a ZSET member per
 * hit; here hits of the same millisecond share one entry {ms, count}, kept
 * in time order. Denied hits are not recorded. */
#include "rlaas_algo_impl.h"

typedef struct {
    int64_t ms;
    int64_t n;
} run_t;

/* The state: the number of entries, then the entries, oldest first. */
#define RUNS(state) ((run_t *)((char *)(state) + sizeof(int64_t)))

/* The number of entries of a well-formed log, else 0 (none). */
static int64_t runs_read(const void *state, size_t len)
{
    int64_t k, i;
    const run_t *r = RUNS(state);

    if (len < sizeof(int64_t))
        return 0;
    memcpy(&k, state, sizeof(k));
    if (k < 1 || k > RLAAS_ALGO_LOG_MAX ||
        len != sizeof(int64_t) + (size_t)k * sizeof(run_t))
        return 0;
    for (i = 0; i < k; i++) {
        if (r[i].n < 1 || r[i].n > RLAAS_LIMIT_MAX || r[i].ms < 0 ||
            (i > 0 && r[i].ms <= r[i - 1].ms))
            return 0;
    }
    return k;
}

/* How many hits count (time > now - W) and how many are dead. */
static int64_t count_live(const run_t *r, int64_t k, int64_t now, int64_t W,
                          int64_t *dead)
{
    int64_t live = 0, i;

    *dead = 0;
    for (i = 0; i < k; i++) {
        if (r[i].ms > now - W)
            live += r[i].n;
        else
            *dead += r[i].n;
    }
    return live;
}

/* The script's bounded work: at most this many of the oldest dead hits
 * go per call (ZREMRANGEBYRANK); the rest stay, first in rank. */
#define PRUNE_MAX 256

/* Drops the oldest `drop` hits. Returns the entries left. */
static int64_t prune(run_t *r, int64_t k, int64_t drop)
{
    int64_t gone = 0;

    while (drop > 0 && gone < k) {
        if (r[gone].n > drop) {
            r[gone].n -= drop;
            break;
        }
        drop -= r[gone].n;
        gone++;
    }
    memmove(r, r + gone, (size_t)(k - gone) * sizeof(run_t));
    return k - gone;
}

/* A full log makes room: the entry whose hits move the least (their
 * number times the distance) merges into the next, later one. Hits then
 * count a little longer than they would in Redis, never shorter. */
static int64_t merge_one(run_t *r, int64_t k)
{
    unsigned __int128 best = ~(unsigned __int128)0;
    int64_t i, at = 0;

    for (i = 0; i + 1 < k; i++) {
        unsigned __int128 cost =
            (unsigned __int128)r[i].n * (uint64_t)(r[i + 1].ms - r[i].ms);

        if (cost < best) {
            best = cost;
            at = i;
        }
    }
    r[at + 1].n += r[at].n;
    memmove(r + at, r + at + 1, (size_t)(k - at - 1) * sizeof(run_t));
    return at;
}

/* ZADD at now: into now's entry, or a new one in time order (a clock that
 * went back may put it before others). */
static int64_t add(run_t *r, int64_t k, int64_t now)
{
    int64_t i = k;

    while (i > 0 && r[i - 1].ms > now)
        i--;
    if (i > 0 && r[i - 1].ms == now) {
        r[i - 1].n++;
        return k;
    }
    if (k == RLAAS_ALGO_LOG_MAX) {
        if (merge_one(r, k) < i)
            i--;
        k--;
    }
    memmove(r + i + 1, r + i, (size_t)(k - i) * sizeof(run_t));
    r[i].ms = now;
    r[i].n = 1;
    return k + 1;
}

/* The time of hit number rank (0-based, oldest first). */
static int64_t time_of(const run_t *r, int64_t k, int64_t rank)
{
    int64_t i;

    for (i = 0; i < k - 1 && rank >= r[i].n; i++)
        rank -= r[i].n;
    return r[i].ms;
}

int rlaas_algo_sliding_log(const rlaas_algo_call_t *c, void *state, size_t *len,
                           int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = c->limit, W = c->window_ms, now = c->now_ms;
    run_t *r = RUNS(state);
    int64_t k = runs_read(state, *len), n, dead, gone, newest = -1, rem;
    int64_t reset, retry = 0;
    int ok;

    /* the clock rule on the newest hit: over a window ahead, no state */
    if (k > 0 && rlaas_clock_at(r[k - 1].ms, now, W) < 0)
        k = 0;
    if (k > 0)
        newest = r[k - 1].ms;
    n = count_live(r, k, now, W, &dead);
    gone = rlaas_min(dead, PRUNE_MAX);
    k = prune(r, k, gone);
    dead -= gone;
    ok = n < L;
    if (ok) {
        k = add(r, k, now);
        n++;
        if (newest < now)
            newest = now;
    }
    rem = rlaas_max(0, L - n);
    /* empty when the newest hit leaves */
    reset = rlaas_max(0, newest + W - now);
    /* a hit fits once live hit n-L (0-based) has left; dead ones rank
     * first */
    if (n >= L)
        retry = rlaas_max(1, time_of(r, k, dead + n - L) + W - now);
    memcpy(state, &k, sizeof(k));
    *len = sizeof(int64_t) + (size_t)k * sizeof(run_t);
    /* 2*W (seeds); longer if the clock went back */
    *ttl_ms = rlaas_max(2 * W, reset);
    rlaas_reply(v, ok, rem, reset, retry);
    return 0;
}
