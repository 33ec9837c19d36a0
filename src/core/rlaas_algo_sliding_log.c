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

/* ZREMRANGEBYSCORE -inf (now - W): a hit counts while its time > now - W.
 * Returns the entries left; *n: the hits they hold. */
static int64_t prune(run_t *r, int64_t k, int64_t oldest_kept, int64_t *n)
{
    int64_t drop = 0, i;

    while (drop < k && r[drop].ms < oldest_kept)
        drop++;
    memmove(r, r + drop, (size_t)(k - drop) * sizeof(run_t));
    k -= drop;
    *n = 0;
    for (i = 0; i < k; i++)
        *n += r[i].n;
    return k;
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
    int64_t k = runs_read(state, *len), n, rem, reset, retry = 0;
    int ok;

    k = prune(r, k, now - W + 1, &n);
    ok = n < L;
    if (ok) {
        k = add(r, k, now);
        n++;
    }
    rem = rlaas_max(0, L - n);
    /* empty when the newest hit leaves */
    reset = rlaas_max(0, r[k - 1].ms + W - now);
    /* a hit fits once hit n-L (0-based) has left */
    if (n >= L)
        retry = rlaas_max(1, time_of(r, k, n - L) + W - now);
    memcpy(state, &k, sizeof(k));
    *len = sizeof(int64_t) + (size_t)k * sizeof(run_t);
    /* 2*W (seeds); longer if the clock went back */
    *ttl_ms = rlaas_max(2 * W, reset);
    rlaas_reply(v, ok, rem, reset, retry);
    return 0;
}
