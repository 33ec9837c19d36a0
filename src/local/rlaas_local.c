#include "rlaas_local.h"

#include <string.h>
#include <time.h>

#include "rlaas_algo.h"
#include "rlaas_ban.h"

typedef char same_keep[RLAAS_ALGO_TTL_KEEP == RLAAS_TABLE_TTL_KEEP ? 1 : -1];
typedef char
    state_fits_a_record[RLAAS_ALGO_STATE_MAX <= RLAAS_TABLE_VALUE_MAX ? 1 : -1];
typedef char
    held_together[RLAAS_LOCAL_CALLS_MAX <= RLAAS_TABLE_HOLD_MAX ? 1 : -1];

static const char *const names[RLAAS_LERR_COUNT] = {
    "none", "busy", "broken", "call", "no_table", "full"};

const char *rlaas_lerr_name(rlaas_lerr_e e)
{
    return e >= 0 && e < RLAAS_LERR_COUNT ? names[e] : "unknown";
}

int64_t rlaas_local_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One hit, inside the table's update of the record: the table stores what
 * the strategy wrote, or (a denial, a check, a first pass) nothing. */
typedef struct {
    const rlaas_algo_call_t *call;
    rlaas_verdict_t *v;
    int rc;
} hit_t;

static int hit_fn(void *baton, void *val, size_t *len, rlaas_table_life_t *life)
{
    hit_t *h = baton;
    int64_t need = h->call->cost > 1 ? h->call->cost : 1;

    h->rc = rlaas_algo_hit(h->call, val, len, &life->ttl_ms, h->v);
    /* a record that refuses its identity's next such request is the last
     * of its zone to evict, until it would allow again */
    if (h->rc == RLAAS_ALGO_STORE && h->v->remaining < need)
        life->refuse_ms = h->v->retry_ms > 1 ? h->v->retry_ms : 1;
    return h->rc != RLAAS_ALGO_STORE;
}

/* One call's key and arguments: the record's key is the one the script
 * would write (fixed adds its window number). */
typedef struct {
    rlaas_algo_call_t ac;
    char key[RLAAS_TABLE_KEY_MAX + 1];
    size_t len;
    int known; /* the first pass found its record */
} prepared_t;

static int prepare(const rlaas_local_call_t *call, int64_t now_ms,
                   prepared_t *p)
{
    if (call->strategy == RLAAS_LOCAL_BAN) {
        rlaas_ban_conf_t b = {call->limit, call->window_ms, call->cost};

        memset(&p->ac, 0, sizeof(p->ac));
        p->ac.strategy = RLAAS_LOCAL_BAN;
        if (!rlaas_ban_conf_ok(&b) || call->mode < 0 ||
            call->mode > RLAAS_LOCAL_CALLS_MAX || call->key_len < 4 ||
            memcmp(call->key + call->key_len - 4, ":ban", 4) != 0 ||
            call->key_len > RLAAS_TABLE_KEY_MAX)
            return 0;
        p->ac.limit = call->limit;
        p->ac.window_ms = call->window_ms;
        p->ac.cost = call->cost;
        p->ac.mode = call->mode; /* the policy it follows, 1-based; 0 any */
        p->ac.now_ms = now_ms;
        memcpy(p->key, call->key, call->key_len);
        p->key[call->key_len] = '\0';
        p->len = call->key_len;
        return 1;
    }
    p->ac.strategy = call->strategy;
    p->ac.limit = call->limit;
    p->ac.window_ms = call->window_ms;
    p->ac.now_ms = now_ms;
    p->ac.cost = call->cost;
    p->ac.mode = call->mode;
    p->ac.commit = 1;
    p->ac.cal = call->cal;
    if (!rlaas_algo_call_ok(&p->ac) ||
        call->key_len > RLAAS_TABLE_KEY_MAX - RLAAS_ALGO_SUFFIX_MAX)
        return 0;
    memcpy(p->key, call->key, call->key_len);
    p->len = call->key_len + rlaas_algo_suffix(&p->ac, p->key + call->key_len);
    return 1;
}

static rlaas_lerr_e lerr(rlaas_table_rc_e rc)
{
    switch (rc) {
    case RLAAS_TABLE_OK:
        return RLAAS_LERR_NONE;
    case RLAAS_TABLE_BUSY:
        return RLAAS_LERR_BUSY;
    case RLAAS_TABLE_BROKEN:
        return RLAAS_LERR_BROKEN;
    case RLAAS_TABLE_FULL:
        return RLAAS_LERR_FULL;
    default:
        return RLAAS_LERR_CALL;
    }
}

/* A record after a call, for tests (rec may be NULL). */
static void note(rlaas_local_record_t *rec, const prepared_t *p,
                 const rlaas_table_report_t *rep, const rlaas_table_hold_t *hd)
{
    if (rec == NULL)
        return;
    memcpy(rec->key, p->key, p->len + 1);
    rec->ttl_ms = rep->vlen > 0 ? rep->expire - hd->now : -2;
}

/* Whether key i differs from keys 0..i-1: one key twice would be charged
 * (or credited) twice. */
static int distinct(const prepared_t *p, int i)
{
    int j;

    for (j = 0; j < i; j++) {
        if (p[j].len == p[i].len && memcmp(p[j].key, p[i].key, p[i].len) == 0)
            return 0;
    }
    return 1;
}

/* Call i of a held set, charging or not. */
static rlaas_lerr_e hit_held(rlaas_table_hold_t *hd, int i, prepared_t *p,
                             int commit, rlaas_verdict_t *v,
                             rlaas_table_report_t *rep,
                             rlaas_local_record_t *rec)
{
    hit_t h = {&p->ac, v, -1};
    rlaas_table_rc_e rc;

    p->ac.commit = commit;
    rc = rlaas_table_update_held(hd, i, p->key, p->len, hit_fn, &h, rep);
    /* refused by the strategy's choice: the record stays as it was */
    if (rc == RLAAS_TABLE_REFUSED && h.rc == RLAAS_ALGO_LEAVE)
        rc = RLAAS_TABLE_OK;
    if (rc == RLAAS_TABLE_OK)
        note(rec, p, rep, hd);
    return lerr(rc);
}

/* The policies' first pass: decided, nothing charged; whether all that
 * count allow. */
static rlaas_lerr_e first_pass(rlaas_table_hold_t *hd, prepared_t *p, int n,
                               rlaas_verdict_t *v, rlaas_table_report_t *rep,
                               rlaas_local_record_t *recs, int *go)
{
    rlaas_lerr_e e;
    int i;

    *go = 1;
    for (i = 0; i < n; i++) {
        if (p[i].ac.strategy == RLAAS_LOCAL_BAN)
            continue;
        e = hit_held(hd, i, &p[i], 0, &v[i], rep,
                     recs != NULL ? &recs[i] : NULL);
        if (e != RLAAS_LERR_NONE)
            return e;
        p[i].known = rep->vlen > 0;
        if (!v[i].allowed &&
            !(p[i].ac.mode & (RLAAS_ALGO_DRY_RUN | RLAAS_ALGO_FORCE)))
            *go = 0;
    }
    return RLAAS_LERR_NONE;
}

/* Before several policies are charged: room for the records of those
 * that have none yet, so that all are charged or none (a record of each
 * strategy is at most rlaas_algo_first_len bytes after its first charge;
 * a log growing by a run on a full stripe is the one charge that may
 * still find no room). */
static rlaas_lerr_e make_room_for_all(rlaas_table_hold_t *hd, prepared_t *p,
                                      int n, rlaas_table_report_t *rep)
{
    rlaas_lerr_e e = RLAAS_LERR_NONE;
    int i;

    for (i = 0; i < n && e == RLAAS_LERR_NONE; i++) {
        if (p[i].ac.strategy != RLAAS_LOCAL_BAN && !p[i].known)
            e = lerr(rlaas_table_reserve_held(
                hd, i, p[i].key, p[i].len,
                rlaas_algo_first_len(p[i].ac.strategy), rep));
    }
    return e;
}

/* A ban record, read (start 0) or started (start 1) inside the table's
 * update of it. */
typedef struct {
    const rlaas_algo_call_t *ac;
    int start;
    int64_t left, last, length;
} ban_t;

static int ban_fn(void *baton, void *val, size_t *len, rlaas_table_life_t *life)
{
    ban_t *b = baton;
    rlaas_ban_conf_t bc = {b->ac->limit, b->ac->window_ms, b->ac->cost};

    b->left = rlaas_ban_left(val, *len, b->ac->now_ms, &bc, &b->last);
    if (!b->start)
        return 1;
    b->length = rlaas_ban_length(&bc, b->last);
    life->ttl_ms = rlaas_ban_store(val, len, b->ac->now_ms, b->length, &bc);
    /* never evicted while it holds */
    life->refuse_ms = b->length;
    life->ban = 1;
    return 0;
}

static rlaas_lerr_e ban_held(rlaas_table_hold_t *hd, int i, prepared_t *p,
                             ban_t *b, rlaas_table_report_t *rep,
                             rlaas_local_record_t *rec)
{
    rlaas_table_rc_e rc;

    b->ac = &p->ac;
    rc = rlaas_table_update_held(hd, i, p->key, p->len, ban_fn, b, rep);
    if (rc == RLAAS_TABLE_REFUSED && !b->start)
        rc = RLAAS_TABLE_OK;
    if (rc == RLAAS_TABLE_OK)
        note(rec, p, rep, hd);
    return lerr(rc);
}

rlaas_lerr_e rlaas_local_eval_n(rlaas_local_t *lc,
                                const rlaas_local_call_t *calls, int n,
                                int64_t now_ms, rlaas_verdict_t *v,
                                rlaas_table_report_t *rep,
                                rlaas_local_record_t *recs)
{
    prepared_t p[RLAAS_LOCAL_CALLS_MAX];
    const char *keys[RLAAS_LOCAL_CALLS_MAX];
    size_t lens[RLAAS_LOCAL_CALLS_MAX], zlens[RLAAS_LOCAL_CALLS_MAX];
    rlaas_table_report_t dummy;
    rlaas_table_hold_t hd;
    rlaas_lerr_e e = RLAAS_LERR_NONE;
    ban_t b = {NULL, 0, 0, 0, 0};
    int i, go = 1, ban = -1;

    if (rep == NULL)
        rep = &dummy;
    memset(rep, 0, sizeof(*rep));
    if (lc == NULL)
        return RLAAS_LERR_NONE_HERE;
    if (n < 1 || n > RLAAS_LOCAL_CALLS_MAX)
        return RLAAS_LERR_CALL;
    for (i = 0; i < n; i++) {
        if (!prepare(&calls[i], now_ms, &p[i]))
            return RLAAS_LERR_CALL;
        if (p[i].ac.strategy == RLAAS_LOCAL_BAN) {
            /* one ban, beside a policy */
            if (ban >= 0 || n < 2 || p[i].ac.mode > n || p[i].ac.mode == i + 1)
                return RLAAS_LERR_CALL;
            ban = i;
        }
        keys[i] = p[i].key;
        lens[i] = p[i].len;
        if (!distinct(p, i))
            return RLAAS_LERR_CALL;
    }
    for (i = 0; i < n; i++)
        zlens[i] = calls[i].zone_len;
    e = lerr(rlaas_table_hold(lc, keys, lens, zlens, n, now_ms,
                              RLAAS_LOCAL_LOCK_WAIT_US, &hd, rep));
    if (e != RLAAS_LERR_NONE)
        return e;
    if (ban >= 0) {
        e = ban_held(&hd, ban, &p[ban], &b, rep,
                     recs != NULL ? &recs[ban] : NULL);
        /* banned: nothing is decided */
        if (e == RLAAS_LERR_NONE && b.left > 0) {
            for (i = 0; i < n; i++) {
                /* the records as they are, for tests */
                if (recs != NULL && i != ban && e == RLAAS_LERR_NONE)
                    e = hit_held(&hd, i, &p[i], 0, &v[i], rep, &recs[i]);
                v[i].allowed = 0;
                v[i].remaining = i == ban;
                v[i].reset_ms = b.left;
                v[i].retry_ms = b.left;
            }
            rlaas_table_release(&hd);
            return e;
        }
    }
    /* one policy is charged at once, as its own script does; several
     * only if all allow (a dry run's denial charges nothing, and blocks
     * nothing; forced charges are made whatever they decide); else the
     * first pass's verdicts stand */
    if (e == RLAAS_LERR_NONE && n - (ban >= 0) > 1) {
        e = first_pass(&hd, p, n, v, rep, recs, &go);
        if (e == RLAAS_LERR_NONE && go)
            e = make_room_for_all(&hd, p, n, rep);
    }
    for (i = 0; go && e == RLAAS_LERR_NONE && i < n; i++) {
        if (i == ban)
            continue;
        e = hit_held(&hd, i, &p[i], 1, &v[i], rep,
                     recs != NULL ? &recs[i] : NULL);
        if (!v[i].allowed &&
            !(p[i].ac.mode & (RLAAS_ALGO_DRY_RUN | RLAAS_ALGO_FORCE)))
            go = 0;
    }
    if (ban >= 0 && e == RLAAS_LERR_NONE) {
        v[ban].allowed = 1;
        v[ban].remaining = v[ban].reset_ms = v[ban].retry_ms = 0;
        if (!go && p[ban].ac.cost != RLAAS_BAN_READ &&
            (p[ban].ac.mode == 0 || !v[p[ban].ac.mode - 1].allowed)) {
            b.start = 1;
            e = ban_held(&hd, ban, &p[ban], &b, rep,
                         recs != NULL ? &recs[ban] : NULL);
            /* no room to start it (counted in rep): the denial stands
             * alone */
            if (e == RLAAS_LERR_FULL) {
                e = RLAAS_LERR_NONE;
                b.start = 0;
            }
            if (b.start) {
                v[ban].allowed = 0;
                v[ban].remaining = 2;
                v[ban].reset_ms = v[ban].retry_ms = b.length;
            }
        }
    }
    rlaas_table_release(&hd);
    return e;
}

rlaas_lerr_e rlaas_local_eval_ex(rlaas_local_t *lc,
                                 const rlaas_local_call_t *call, int64_t now_ms,
                                 rlaas_verdict_t *v, rlaas_table_report_t *rep,
                                 char *rkey, int64_t *ttl_ms)
{
    rlaas_local_record_t rec;
    rlaas_lerr_e e;

    e = rlaas_local_eval_n(lc, call, 1, now_ms, v, rep,
                           rkey != NULL || ttl_ms != NULL ? &rec : NULL);
    if (e == RLAAS_LERR_NONE && rkey != NULL)
        memcpy(rkey, rec.key, strlen(rec.key) + 1);
    if (e == RLAAS_LERR_NONE && ttl_ms != NULL)
        *ttl_ms = rec.ttl_ms;
    return e;
}

rlaas_lerr_e rlaas_local_eval(rlaas_local_t *lc, const rlaas_local_call_t *call,
                              int64_t now_ms, rlaas_verdict_t *v,
                              rlaas_table_report_t *rep)
{
    return rlaas_local_eval_n(lc, call, 1, now_ms, v, rep, NULL);
}

/* ---- credits ---- */

typedef struct {
    const rlaas_algo_call_t *call;
    int64_t at;
    int64_t given;
} credit_t;

/* A credit only lowers the state: the record is kept as a partly used
 * one (it may have refused before; it is evicted sooner, never wrongly
 * kept). */
static int credit_fn(void *baton, void *val, size_t *len,
                     rlaas_table_life_t *life)
{
    credit_t *cr = baton;

    if (*len == 0)
        return 1; /* no state: none is made */
    return rlaas_algo_credit(cr->call, cr->at, val, len, &life->ttl_ms,
                             &cr->given) != RLAAS_ALGO_STORE;
}

/* A credit's key and arguments: fixed's record is its charge's window.
 * A charge outside a calendar's periods is given nothing back (as the
 * script): any period's record is held, and the credit leaves it. */
static int prepare_credit(const rlaas_local_call_t *call, int64_t at,
                          int64_t now_ms, prepared_t *p)
{
    rlaas_local_call_t one = *call;

    one.cost = 1;
    if (call->strategy == RLAAS_LOCAL_BAN ||
        (!prepare(&one, at, p) &&
         (call->cal == NULL || !prepare(&one, call->cal->b[1], p))))
        return 0;
    p->ac.now_ms = now_ms;
    p->ac.cost = call->cost;
    return call->cost >= 1 &&
           call->cost <= rlaas_algo_limit_max(call->strategy) &&
           (call->mode & ~RLAAS_ALGO_LIMIT_VARIES) == 0;
}

rlaas_lerr_e rlaas_local_credit_n(rlaas_local_t *lc,
                                  const rlaas_local_call_t *calls, int n,
                                  int64_t age_ms, int64_t now_ms,
                                  int64_t *given, rlaas_table_report_t *rep,
                                  rlaas_local_record_t *recs)
{
    prepared_t p[RLAAS_LOCAL_CALLS_MAX];
    const char *keys[RLAAS_LOCAL_CALLS_MAX];
    size_t lens[RLAAS_LOCAL_CALLS_MAX], zlens[RLAAS_LOCAL_CALLS_MAX];
    int64_t at = now_ms - age_ms;
    rlaas_table_report_t dummy;
    rlaas_table_hold_t hd;
    rlaas_lerr_e e;
    int i;

    if (rep == NULL)
        rep = &dummy;
    memset(rep, 0, sizeof(*rep));
    if (lc == NULL)
        return RLAAS_LERR_NONE_HERE;
    if (n < 1 || n > RLAAS_LOCAL_CALLS_MAX || age_ms < 0)
        return RLAAS_LERR_CALL;
    if (at < 0)
        at = 0;
    for (i = 0; i < n; i++) {
        if (!prepare_credit(&calls[i], at, now_ms, &p[i]))
            return RLAAS_LERR_CALL;
        keys[i] = p[i].key;
        lens[i] = p[i].len;
        zlens[i] = calls[i].zone_len;
        if (!distinct(p, i))
            return RLAAS_LERR_CALL;
    }
    e = lerr(rlaas_table_hold(lc, keys, lens, zlens, n, now_ms,
                              RLAAS_LOCAL_LOCK_WAIT_US, &hd, rep));
    for (i = 0; e == RLAAS_LERR_NONE && i < n; i++) {
        credit_t cr = {&p[i].ac, at, 0};
        rlaas_table_rc_e rc = rlaas_table_update_held(
            &hd, i, p[i].key, p[i].len, credit_fn, &cr, rep);

        e = rc == RLAAS_TABLE_REFUSED ? RLAAS_LERR_NONE : lerr(rc);
        given[i] = cr.given;
        if (e == RLAAS_LERR_NONE)
            note(recs != NULL ? &recs[i] : NULL, &p[i], rep, &hd);
    }
    if (e != RLAAS_LERR_NONE && i == 0)
        return e; /* the hold failed: nothing is held */
    rlaas_table_release(&hd);
    return e;
}

/* ---- the operator's console: forget a record ---- */

static int forget_fn(void *baton, void *val, size_t *len,
                     rlaas_table_life_t *life)
{
    int *found = baton;

    (void)val;
    *found = *len > 0;
    if (*len == 0)
        return 1; /* nothing to forget: the table stays as it was */
    *len = 0;     /* no state: the strategies start afresh */
    life->ttl_ms = 0;
    return 0;
}

rlaas_lerr_e rlaas_local_forget(rlaas_local_t *lc, const char *key,
                                size_t key_len, int64_t now_ms, int *found)
{
    rlaas_table_rc_e rc;

    *found = 0;
    if (lc == NULL)
        return RLAAS_LERR_NONE_HERE;
    rc = rlaas_table_update(lc, key, key_len, now_ms, RLAAS_LOCAL_LOCK_WAIT_US,
                            forget_fn, found, NULL);
    return rc == RLAAS_TABLE_REFUSED ? RLAAS_LERR_NONE : lerr(rc);
}
