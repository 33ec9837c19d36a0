/* sliding log (lua/sliding_log.lua, seeds 000/003): the charged hits still
 * in the rolling window, each with its units. Redis keeps a ZSET member
 * per hit, scored by its ms, scores never going down; here hits of the
 * same millisecond and the same cost share one run {ms, hits, units}, kept
 * in time order. Denied hits are not recorded. */
#include "rlaas_algo_impl.h"

typedef struct {
    int64_t ms;
    int64_t hits;  /* members of the ZSET */
    int64_t units; /* their units together */
} run_t;

/* The state: the number of runs, then the runs, oldest first. */
#define RUNS(state) ((run_t *)((char *)(state) + sizeof(int64_t)))

/* The number of runs of a well-formed log, else 0 (none), and, in the
 * same pass, the units that count (time > now - W) and how many hits are
 * dead: the oldest ones, scores never going down. A full log is hundreds
 * of runs on every call: it is walked once. */
static int64_t runs_live(const void *state, size_t len, int64_t now, int64_t W,
                         int64_t *live, int64_t *dead)
{
    int64_t k, i, prev = 0, l = 0, d = 0;
    const run_t *r = RUNS(state);

    *live = *dead = 0;
    if (len < sizeof(int64_t))
        return 0;
    memcpy(&k, state, sizeof(k));
    if (k < 1 || k > RLAAS_ALGO_LOG_MAX ||
        len != sizeof(int64_t) + (size_t)k * sizeof(run_t))
        return 0;
    /* 0 <= units < 2^53 and 1 <= hits <= units, as two unsigned tests;
     * times from 0 on, never going down */
    for (i = 0; i < k; i++) {
        if ((uint64_t)r[i].units >= (uint64_t)RLAAS_ALGO_2_53 ||
            (uint64_t)r[i].hits - 1 >= (uint64_t)r[i].units || r[i].ms < prev)
            return 0;
        prev = r[i].ms;
        if (prev > now - W)
            l += r[i].units;
        else
            d += r[i].hits;
    }
    *live = l;
    *dead = d;
    return k;
}

/* The number of runs of a well-formed log, else 0 (none): a credit's
 * read, which needs no counts. */
static int64_t runs_read(const void *state, size_t len)
{
    int64_t live, dead;

    return runs_live(state, len, 0, 0, &live, &dead);
}

/* The script's bounded work: at most this many of the oldest dead hits
 * go per call (ZREMRANGEBYRANK); the rest stay, first in rank. */
#define PRUNE_MAX 256

/* Drops the oldest `drop` hits, with their units (a run's hits share its
 * units evenly; a merged run's only roughly, and only a dead run is cut).
 * Returns the runs left. */
static int64_t prune(run_t *r, int64_t k, int64_t drop)
{
    int64_t gone = 0, x;

    while (drop > 0 && gone < k) {
        if (r[gone].hits > drop) {
            r[gone].units -=
                rlaas_muldiv(r[gone].units, drop, r[gone].hits, &x);
            r[gone].hits -= drop;
            break;
        }
        drop -= r[gone].hits;
        gone++;
    }
    memmove(r, r + gone, (size_t)(k - gone) * sizeof(run_t));
    return k - gone;
}

/* A full log makes room: the run whose units move the least (their number
 * times the distance) merges into the next, later one. Hits then count a
 * little longer than they would in Redis, never shorter. */
static void merge_one(run_t *r, int64_t k)
{
    unsigned __int128 best = ~(unsigned __int128)0;
    int64_t i, at = 0;

    for (i = 0; i + 1 < k; i++) {
        unsigned __int128 cost =
            (unsigned __int128)r[i].units * (uint64_t)(r[i + 1].ms - r[i].ms);

        if (cost < best) {
            best = cost;
            at = i;
        }
    }
    r[at + 1].hits += r[at].hits;
    r[at + 1].units += r[at].units;
    memmove(r + at, r + at + 1, (size_t)(k - at - 1) * sizeof(run_t));
}

/* ZADD of one hit of `cost` units at ms, the newest: into the last run if
 * it is of that ms and that cost. */
static int64_t add(run_t *r, int64_t k, int64_t ms, int64_t cost)
{
    if (k > 0 && r[k - 1].ms == ms && r[k - 1].units == r[k - 1].hits * cost) {
        r[k - 1].hits++;
        r[k - 1].units += cost;
        return k;
    }
    if (k == RLAAS_ALGO_LOG_MAX)
        merge_one(r, k--);
    r[k].ms = ms;
    r[k].hits = 1;
    r[k].units = cost;
    return k + 1;
}

/* The time of the first live hit by which the live units add up to goal. */
static int64_t time_of(const run_t *r, int64_t k, int64_t now, int64_t W,
                       int64_t goal)
{
    int64_t i, sum = 0;

    for (i = 0; i < k - 1; i++) {
        if (r[i].ms <= now - W)
            continue;
        sum += r[i].units;
        if (sum >= goal)
            break;
    }
    return r[i].ms;
}

int rlaas_algo_sliding_log(const rlaas_algo_call_t *c, void *state, size_t *len,
                           int64_t *ttl_ms, rlaas_verdict_t *v)
{
    int64_t L = c->limit, W = c->window_ms, now = c->now_ms,
            need = rlaas_need(c);
    run_t *r = RUNS(state);
    int64_t used, dead, gone, newest = -1, rem;
    int64_t k = runs_live(state, *len, now, W, &used, &dead);
    int64_t reset = 0, retry = 0;
    int ok, changed = *len > 0 && k == 0;

    /* the clock rule on the newest hit: over a window ahead, the log is no
     * state (UNLINK); so is a log of another shape */
    if (k > 0 && rlaas_clock_at(r[k - 1].ms, now, W) < 0) {
        k = used = dead = 0;
        changed = 1;
    }
    if (k > 0)
        newest = r[k - 1].ms;
    gone = rlaas_min(dead, PRUNE_MAX);
    if (gone > 0) {
        k = prune(r, k, gone);
        changed = 1;
    }
    ok = used + need <= L;
    if (rlaas_charges(c, ok)) {
        /* scores never go down: a clock gone back adds at the newest */
        newest = rlaas_max(now, newest);
        k = add(r, k, newest, c->cost);
        used += c->cost;
        /* 2*W (seeds); longer if the clock went back */
        *ttl_ms = rlaas_max(2 * W, newest + W - now);
        changed = 1;
    }
    else if (changed)
        /* pruned only: the TTL stays; pruned empty: Redis drops the key */
        *ttl_ms = k > 0 ? RLAAS_ALGO_TTL_KEEP : 0;
    rem = rlaas_max(0, L - used);
    /* empty when the newest hit leaves */
    if (newest >= 0 && used > 0)
        reset = rlaas_max(0, newest + W - now);
    /* fits once the live units up to some hit have left: L - need of them
     * may stay */
    if (rem < need)
        retry = rlaas_max(1, time_of(r, k, now, W, used - L + need) + W - now);
    memcpy(state, &k, sizeof(k));
    *len = k > 0 ? sizeof(int64_t) + (size_t)k * sizeof(run_t) : 0;
    rlaas_reply(v, ok, rem, reset, retry);
    return changed ? RLAAS_ALGO_STORE : RLAAS_ALGO_LEAVE;
}

/* ---- credit ---- */

/* Takes `left` units (less than the run holds) off run j, its first hits
 * (front) or its last ones: whole hits, then the one at the edge keeps
 * the rest of its units, a run of its own. Runs merged into uneven ones
 * lose units only. */
static void take_part(run_t *r, int64_t *k, int64_t j, int64_t left, int front)
{
    run_t *x = &r[j];
    int64_t per, whole, part;

    if (x->units != x->hits * (x->units / x->hits)) {
        x->units -= left;
        x->hits = rlaas_min(x->hits, x->units);
        return;
    }
    per = x->units / x->hits;
    whole = left / per;
    part = left - whole * per;
    x->hits -= whole;
    x->units -= whole * per;
    if (part == 0)
        return;
    /* one hit, or no room for a run more (the log is approximate then
     * anyway): the run loses the units */
    if (x->hits == 1 || *k == RLAAS_ALGO_LOG_MAX) {
        x->units -= part;
        return;
    }
    x->hits--;
    x->units -= per;
    /* the hit cut short: first of the run, or last */
    if (front) {
        memmove(r + j + 1, r + j, (size_t)(*k - j) * sizeof(run_t));
        r[j].hits = 1;
        r[j].units = per - part;
    }
    else {
        memmove(r + j + 2, r + j + 1, (size_t)(*k - j - 1) * sizeof(run_t));
        r[j + 1] = r[j];
        r[j + 1].hits = 1;
        r[j + 1].units = per - part;
    }
    (*k)++;
}

/* t units off the runs from run j on, oldest first. */
static void take_front(run_t *r, int64_t *k, int64_t j, int64_t t)
{
    while (t > 0 && j < *k) {
        if (r[j].units <= t) {
            t -= r[j].units;
            memmove(r + j, r + j + 1, (size_t)(*k - j - 1) * sizeof(run_t));
            (*k)--;
            continue;
        }
        take_part(r, k, j, t, 1);
        return;
    }
}

/* t units off the newest runs. */
static void take_back(run_t *r, int64_t *k, int64_t t)
{
    while (t > 0 && *k > 0) {
        if (r[*k - 1].units <= t) {
            t -= r[*k - 1].units;
            (*k)--;
            continue;
        }
        take_part(r, k, *k - 1, t, 0);
        return;
    }
}

int rlaas_algo_sliding_log_credit(const rlaas_algo_call_t *c, int64_t at,
                                  void *state, size_t *len, int64_t *ttl_ms,
                                  int64_t *given)
{
    int64_t W = c->window_ms, now = c->now_ms;
    run_t *r = RUNS(state);
    int64_t k = runs_read(state, *len), from, live = 0, after = 0, hits = 0;
    int64_t i, j = -1, t;

    if (k == 0 || rlaas_clock_at(r[k - 1].ms, now, W) < 0)
        return RLAAS_ALGO_LEAVE;
    /* the live units, and those at or after the charge's time: the first
     * of them is the charge's own hit, or one of the same moment */
    from = rlaas_max(at, now - W + 1);
    for (i = 0; i < k; i++) {
        if (r[i].ms <= now - W)
            continue;
        live += r[i].units;
        if (r[i].ms < from)
            continue;
        if (j < 0)
            j = i;
        after += r[i].units;
        hits += r[i].hits;
    }
    t = rlaas_min(c->cost, live);
    if (t == 0)
        return RLAAS_ALGO_LEAVE;
    /* the script renumbers the hits that follow the ones it takes: a
     * bounded number, else it takes the newest units instead */
    if (j >= 0 && after >= t && hits <= RLAAS_ALGO_CREDIT_RENUMBER_MAX)
        take_front(r, &k, j, t);
    else
        take_back(r, &k, t);
    *given = t;
    memcpy(state, &k, sizeof(k));
    *len = k > 0 ? sizeof(int64_t) + (size_t)k * sizeof(run_t) : 0;
    /* ZREM and ZADD keep the TTL; an empty ZSET is no key */
    *ttl_ms = k > 0 ? RLAAS_ALGO_TTL_KEEP : 0;
    return RLAAS_ALGO_STORE;
}
