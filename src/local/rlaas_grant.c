#include "rlaas_grant.h"

#include <string.h>

#include "rlaas_parse.h"

static int64_t clamp(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static int same(const rlaas_grant_rec_t *g, const rlaas_grant_ask_t *a)
{
    return g->strategy == a->strategy && g->limit == a->limit &&
           g->window_ms == a->window_ms;
}

static void fresh(rlaas_grant_rec_t *g, const rlaas_grant_ask_t *a)
{
    memset(g, 0, sizeof(*g));
    g->strategy = a->strategy;
    g->limit = a->limit;
    g->window_ms = a->window_ms;
}

void rlaas_grant_verdict(const rlaas_grant_rec_t *g, int64_t now_us,
                         rlaas_verdict_t *v)
{
    int64_t us = g->reset_at_us - now_us;

    v->allowed = 1;
    v->remaining = g->units + g->redis_left;
    v->reset_ms = us > 0 ? (us + 999) / 1000 : 0;
    v->retry_ms = 0;
}

rlaas_grant_e rlaas_grant_take(rlaas_grant_rec_t *g, int have,
                               const rlaas_grant_ask_t *a, int64_t now_us,
                               int spend_only, int64_t *want,
                               rlaas_grant_back_t *back, rlaas_verdict_t *v)
{
    int live, fetching, quiet;

    if (back != NULL)
        back->units = back->at_ms = 0;
    if (!have || !same(g, a))
        fresh(g, a);
    live = now_us < g->expire_us;
    /* a fetch begun after this request read its clock is in flight too */
    fetching =
        g->fetch_us != 0 && now_us - g->fetch_us < RLAAS_GRANT_FETCH_STALE_US;
    if (live && g->units >= a->cost &&
        (spend_only || fetching || now_us < g->quiet_us ||
         2 * (g->units - a->cost) >= g->granted)) {
        g->units -= a->cost;
        g->spent += a->cost;
        g->seen_us = now_us;
        rlaas_grant_verdict(g, now_us, v);
        return RLAAS_GRANT_SPENT;
    }
    if (fetching || spend_only)
        return RLAAS_GRANT_PLAIN;
    /* auto: a portion pays off for an identity that came back within a
     * lease's time; nothing is held for one that did not */
    quiet =
        a->adaptive && !live && g->units <= 0 &&
        !(g->seen_us != 0 &&
          now_us - g->seen_us < rlaas_grant_lease_ms(a->window_ms, -1) * 1000);
    g->seen_us = now_us;
    if (quiet)
        return RLAAS_GRANT_QUIET;
    if (live) {
        /* running low before its time: what this pace spends in a whole
         * lease, growing at most twofold from one portion to the next */
        int64_t grow = 2 * (g->want > g->spent ? g->want : g->spent);
        int64_t took = now_us - g->granted_us;
        int64_t pace = took > 0 ? g->spent * g->lease_us / took : grow;

        *want = pace < grow ? pace : grow;
    }
    else if (g->spent > a->cost)
        /* it lapsed: what it spent in a whole lease */
        *want = g->spent;
    else
        /* a quiet identity (or a new one) asks for its own cost: nothing
         * of it can lapse */
        *want = a->cost;
    *want = clamp(*want, a->cost, a->limit);
    g->want = *want;
    g->fetch_us = now_us;
    /* out of time with units left: none is spent here any more, so this
     * fetch gives them back */
    if (!live && g->units > 0 && back != NULL) {
        back->units = g->units;
        back->at_ms = g->charged_ms;
        g->units = 0;
    }
    return RLAAS_GRANT_FETCH;
}

int64_t rlaas_grant_store(rlaas_grant_rec_t *g, const rlaas_grant_ask_t *a,
                          int64_t sent_us, int64_t granted, int64_t lease_ms,
                          int64_t window_left_ms, int64_t charged_ms,
                          const rlaas_verdict_t *v)
{
    int64_t until = sent_us + lease_ms * 1000;
    int64_t end = window_left_ms > 0 ? sent_us + window_left_ms * 1000 : 0;
    int64_t gap = end - g->window_end_us;
    int64_t lapsed = 0;

    if (!same(g, a)) {
        lapsed = g->units; /* of other settings: never spent */
        fresh(g, a);
    }
    g->fetch_us = 0;
    if (granted < a->cost || lease_ms <= 0) {
        /* refused: no early fetch until Redis may say yes */
        if (!v->allowed)
            g->quiet_us = sent_us + v->retry_ms * 1000;
        return lapsed;
    }
    /* the same window if its ends, each told with a round trip's error,
     * are within half a window (0 for the strategies without windows) */
    if (gap < 0)
        gap = -gap;
    if (sent_us < g->expire_us && g->units > 0 &&
        2 * gap < a->window_ms * 1000) {
        /* units of a lease still running join the new one (less than
         * half a portion: the next is fetched at half), so what is held
         * stays under twice a portion */
        g->units += granted - a->cost;
        g->granted = g->units + a->cost;
        g->spent = a->cost;
        /* the oldest charge of what is held: a give-back is never aged
         * less than it is */
        if (charged_ms < g->charged_ms) {
            g->charged_ms = charged_ms;
            g->charged_us = sent_us;
        }
    }
    else {
        /* expired, or of another window: they were never spent */
        lapsed += g->units > 0 ? g->units : 0;
        g->units = granted - a->cost;
        g->granted = granted;
        g->spent = a->cost;
        g->charged_ms = charged_ms;
        g->charged_us = sent_us;
    }
    g->expire_us = until;
    g->window_end_us = end;
    g->granted_us = sent_us;
    g->lease_us = lease_ms * 1000;
    g->redis_left = v->remaining;
    g->reset_at_us = sent_us + v->reset_ms * 1000;
    return lapsed;
}

int rlaas_grant_unspend_rec(rlaas_grant_rec_t *g, int have,
                            const rlaas_grant_ask_t *a,
                            const rlaas_grant_from_t *from, int64_t now_us)
{
    /* a lease over is Redis' to settle (its units given back or lapsed
     * by the next fetch); a portion charged since, by either clock (one
     * Redis' clock gone back could hide), is another window's or
     * another lease's */
    if (!have || !same(g, a) || from->at_ms <= 0 || g->charged_ms <= 0 ||
        now_us >= g->expire_us || g->charged_ms > from->at_ms ||
        g->charged_us > from->at_us)
        return 0;
    /* spent stays: the pace portions are sized by is what the checks
     * take, whatever the responses give back */
    g->units += a->cost;
    return 1;
}

int64_t rlaas_grant_portion(int64_t remaining, int64_t cost, int64_t want)
{
    int64_t g;

    if (cost < 1 || cost > remaining)
        return 0;
    g = remaining / 8 > cost ? remaining / 8 : cost;
    if (want < cost)
        want = cost;
    g = g < want ? g : want;
    return g < remaining ? g : remaining;
}

int64_t rlaas_grant_lease_ms(int64_t window_ms, int64_t window_left_ms)
{
    int64_t ms = clamp(window_ms / 10, 1, 1000);

    if (window_left_ms >= 0 && window_left_ms < ms)
        ms = window_left_ms > 1 ? window_left_ms : 1;
    return ms;
}

/* ---- in the table ---- */

typedef struct {
    const rlaas_grant_ask_t *a;
    int64_t now_us;
    /* spend */
    int spend_only;
    rlaas_grant_e out;
    int64_t *want;
    rlaas_grant_back_t *back;
    rlaas_grant_from_t *from;
    rlaas_verdict_t *v;
    /* unspend */
    const rlaas_grant_from_t *spent_from;
    /* put */
    int64_t granted, lease_ms, window_left_ms, charged_ms;
    const rlaas_verdict_t *pv;
    int64_t lapsed;
} turn_t;

/* How long a record lives: ttl_ms, or, while it holds units (charged in
 * Redis), until the identity's next portion can give back what lapsed:
 * its window, a day at most (evicted first of all that limits, being a
 * cache). */
static int64_t held_ttl(const rlaas_grant_rec_t *g, int64_t ttl_ms)
{
    int64_t keep = g->window_ms < RLAAS_GRANT_BACK_KEEP_MS
                       ? g->window_ms
                       : RLAAS_GRANT_BACK_KEEP_MS;

    return g->units > 0 && keep > ttl_ms ? keep : ttl_ms;
}

static int spend_fn(void *baton, void *val, size_t *len,
                    rlaas_table_life_t *life)
{
    turn_t *t = baton;
    rlaas_grant_rec_t g;
    int have = *len == sizeof(g);

    if (have)
        memcpy(&g, val, sizeof(g));
    t->out = rlaas_grant_take(&g, have, t->a, t->now_us, t->spend_only, t->want,
                              t->back, t->v);
    if (t->out == RLAAS_GRANT_PLAIN)
        return 1; /* nothing changed */
    if (t->from != NULL && t->out == RLAAS_GRANT_SPENT) {
        t->from->at_ms = g.charged_ms;
        t->from->at_us = g.charged_us;
    }
    memcpy(val, &g, sizeof(g));
    *len = sizeof(g);
    if (t->out == RLAAS_GRANT_QUIET)
        /* kept as long as a second request would make the identity busy */
        life->ttl_ms = rlaas_grant_lease_ms(t->a->window_ms, -1) + 1;
    else if (t->out == RLAAS_GRANT_SPENT && have)
        life->ttl_ms = RLAAS_TABLE_TTL_KEEP;
    else
        life->ttl_ms = held_ttl(&g, RLAAS_GRANT_KEEP_MS +
                                        RLAAS_GRANT_FETCH_STALE_US / 1000);
    /* a lease saves round trips and limits no one: any zone's newcomer
     * may take its room (its units lapse early: fewer admitted, never
     * more), so leases never crowd out what limits */
    life->cache = 1;
    return 0;
}

static int unspend_fn(void *baton, void *val, size_t *len,
                      rlaas_table_life_t *life)
{
    turn_t *t = baton;
    rlaas_grant_rec_t g;
    int have = *len == sizeof(g);

    if (have)
        memcpy(&g, val, sizeof(g));
    if (!rlaas_grant_unspend_rec(&g, have, t->a, t->spent_from, t->now_us))
        return 1; /* nothing changed: Redis' to give back */
    memcpy(val, &g, sizeof(g));
    life->ttl_ms = RLAAS_TABLE_TTL_KEEP;
    life->cache = 1;
    return 0;
}

static int put_fn(void *baton, void *val, size_t *len, rlaas_table_life_t *life)
{
    turn_t *t = baton;
    rlaas_grant_rec_t g;

    if (*len == sizeof(g))
        memcpy(&g, val, sizeof(g));
    else
        fresh(&g, t->a);
    t->lapsed = rlaas_grant_store(&g, t->a, t->now_us, t->granted, t->lease_ms,
                                  t->window_left_ms, t->charged_ms, t->pv);
    memcpy(val, &g, sizeof(g));
    *len = sizeof(g);
    life->ttl_ms = held_ttl(&g, RLAAS_GRANT_KEEP_MS + t->lease_ms);
    life->cache = 1;
    return 0;
}

/* The record's key: the prefix, then the policy's key. */
static size_t grant_key(char *buf, const char *key, size_t klen)
{
    if (klen > RLAAS_TABLE_KEY_MAX - RLAAS_GRANT_KEY_PREFIX_LEN)
        return 0;
    memcpy(buf, RLAAS_GRANT_KEY_PREFIX, RLAAS_GRANT_KEY_PREFIX_LEN);
    memcpy(buf + RLAAS_GRANT_KEY_PREFIX_LEN, key, klen);
    return klen + RLAAS_GRANT_KEY_PREFIX_LEN;
}

/* One turn of an identity's grant record: under the key it is kept by,
 * beside the identity's own record. */
static rlaas_table_rc_e turn(rlaas_table_t *t, const char *key, size_t klen,
                             int64_t now_ms, int64_t lock_wait_us,
                             rlaas_table_fn fn, turn_t *tn)
{
    char k[RLAAS_TABLE_KEY_MAX];
    size_t n = grant_key(k, key, klen);

    if (t == NULL)
        return RLAAS_TABLE_BROKEN;
    if (n == 0)
        return RLAAS_TABLE_TOO_BIG;
    return rlaas_table_update(t, k, n, now_ms, lock_wait_us, fn, tn, NULL);
}

rlaas_table_rc_e rlaas_grant_spend(rlaas_table_t *t, const char *key,
                                   size_t klen, const rlaas_grant_ask_t *a,
                                   int64_t now_ms, int64_t now_us,
                                   int64_t lock_wait_us, int spend_only,
                                   rlaas_grant_e *out, int64_t *want,
                                   rlaas_grant_back_t *back,
                                   rlaas_grant_from_t *from, rlaas_verdict_t *v)
{
    turn_t tn = {0};
    rlaas_table_rc_e rc;

    if (a->cost < 1)
        return RLAAS_TABLE_BROKEN;
    tn.a = a;
    tn.now_us = now_us;
    tn.spend_only = spend_only;
    tn.want = want;
    tn.back = back;
    tn.from = from;
    tn.v = v;
    rc = turn(t, key, klen, now_ms, lock_wait_us, spend_fn, &tn);
    /* not written: the units stay in the record, to lapse */
    if (rc != RLAAS_TABLE_OK && rc != RLAAS_TABLE_REFUSED && back != NULL)
        back->units = back->at_ms = 0;
    if (rc == RLAAS_TABLE_REFUSED)
        rc = RLAAS_TABLE_OK; /* PLAIN: nothing to write */
    *out = tn.out;
    return rc;
}

rlaas_table_rc_e rlaas_grant_unspend(rlaas_table_t *t, const char *key,
                                     size_t klen, const rlaas_grant_ask_t *a,
                                     const rlaas_grant_from_t *from,
                                     int64_t now_ms, int64_t now_us,
                                     int64_t lock_wait_us)
{
    turn_t tn = {0};

    tn.a = a;
    tn.now_us = now_us;
    tn.spent_from = from;
    return turn(t, key, klen, now_ms, lock_wait_us, unspend_fn, &tn);
}

rlaas_table_rc_e rlaas_grant_put(rlaas_table_t *t, const char *key, size_t klen,
                                 const rlaas_grant_ask_t *a, int64_t now_ms,
                                 int64_t sent_us, int64_t granted,
                                 int64_t lease_ms, int64_t window_left_ms,
                                 int64_t charged_ms, const rlaas_verdict_t *v,
                                 int64_t lock_wait_us, int64_t *lapsed)
{
    turn_t tn = {0};
    rlaas_table_rc_e rc;

    tn.a = a;
    tn.now_us = sent_us;
    tn.granted = granted;
    tn.lease_ms = lease_ms;
    tn.window_left_ms = window_left_ms;
    tn.charged_ms = charged_ms;
    tn.pv = v;
    rc = turn(t, key, klen, now_ms, lock_wait_us, put_fn, &tn);
    if (lapsed != NULL)
        *lapsed = rc == RLAAS_TABLE_OK ? tn.lapsed : 0;
    return rc;
}
