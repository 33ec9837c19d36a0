#include "rlaas_local.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rlaas_algo.h"
#include "rlaas_ban.h"
#include "rlaas_conc.h"

typedef char same_keep[RLAAS_ALGO_TTL_KEEP == RLAAS_TABLE_TTL_KEEP ? 1 : -1];
typedef char
    state_fits_a_record[RLAAS_ALGO_STATE_MAX <= RLAAS_TABLE_VALUE_MAX ? 1 : -1];
typedef char
    held_together[RLAAS_LOCAL_CALLS_MAX <= RLAAS_TABLE_HOLD_MAX ? 1 : -1];
typedef char
    slots_fit_a_record[RLAAS_CONC_STATE_MAX <= RLAAS_TABLE_VALUE_MAX ? 1 : -1];

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

    /* the call was checked as it was prepared */
    h->rc = rlaas_algo_hit_ok(h->call, val, len, &life->ttl_ms, h->v);
    /* a record that refuses its identity's next such request is the last
     * of its zone to evict, until it would allow again */
    if (h->rc == RLAAS_ALGO_STORE && h->v->remaining < need)
        life->refuse_ms = h->v->retry_ms > 1 ? h->v->retry_ms : 1;
    return h->rc != RLAAS_ALGO_STORE;
}

/* ---- who holds a concurrency slot ---- */

/* Field 3 (the state) and field 22 (the start, in clock ticks after
 * boot) of /proc/<pid>/stat; 0 if it can't be read (*gone: there is no
 * such process). */
static int proc_stat(long pid, char *state, uint64_t *start, int *gone)
{
    char path[64], buf[1024], *p;
    unsigned long long st = 0;
    ssize_t n;
    int fd, i;

    *gone = 0;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        *gone = errno == ENOENT;
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* the command name may hold spaces and parentheses: the fields
     * start after its last ')' */
    if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0')
        return 0;
    *state = p[2];
    p += 2;
    for (i = 0; i < 19 && p != NULL; i++) {
        p = strchr(p, ' ');
        if (p != NULL)
            p++;
    }
    if (p == NULL || sscanf(p, "%llu", &st) != 1)
        return 0;
    *start = (uint64_t)st;
    return 1;
}

void rlaas_local_self(int32_t *pid, uint64_t *start)
{
    static volatile int32_t known_pid;
    static volatile uint64_t known_start;
    int32_t me = (int32_t)getpid();
    uint64_t st = 0;
    char state;
    int gone;

    /* once per process (a child forked after the parent asked reads its
     * own) */
    if (__atomic_load_n(&known_pid, __ATOMIC_ACQUIRE) != me) {
        if (!proc_stat((long)me, &state, &st, &gone))
            st = 0;
        __atomic_store_n(&known_start, st, __ATOMIC_RELAXED);
        __atomic_store_n(&known_pid, me, __ATOMIC_RELEASE);
    }
    *pid = me;
    *start = __atomic_load_n(&known_start, __ATOMIC_RELAXED);
}

int rlaas_local_alive(void *baton, int32_t pid, uint64_t start)
{
    uint64_t st = 0;
    char state = 0;
    int gone;

    (void)baton;
    if (pid <= 0)
        return 1;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 0;
    if (!proc_stat((long)pid, &state, &st, &gone))
        return !gone; /* no /proc, or not ours to read: alive */
    /* a zombie is gone (its parent has not reaped it yet), and so is a
     * process that started at another time (its pid reused) */
    return state != 'Z' && state != 'X' && (start == 0 || st == start);
}

/* One call's key and arguments: the record's key is the one the script
 * would write (fixed adds its window number). */
typedef struct {
    rlaas_algo_call_t ac;
    rlaas_conc_call_t cc; /* RLAAS_CONCURRENCY */
    char key[RLAAS_TABLE_KEY_MAX + 1];
    size_t len;
    int known; /* the first pass found its record */
} prepared_t;

static int ends_in(const rlaas_local_call_t *call, const char *suffix)
{
    size_t n = strlen(suffix);

    return call->key_len >= n &&
           memcmp(call->key + call->key_len - n, suffix, n) == 0;
}

/* A concurrency limit's call: taken by this process. */
static int prepare_conc(const rlaas_local_call_t *call, int64_t now_ms,
                        prepared_t *p)
{
    memset(&p->ac, 0, sizeof(p->ac));
    p->ac.strategy = RLAAS_CONCURRENCY;
    p->ac.mode = call->mode;
    memset(&p->cc, 0, sizeof(p->cc));
    p->cc.limit = call->limit;
    p->cc.timeout_ms = call->window_ms;
    p->cc.now_ms = now_ms;
    p->cc.token = call->token;
    p->cc.mode = call->mode;
    p->cc.commit = 1;
    rlaas_local_self(&p->cc.pid, &p->cc.start);
    p->cc.alive = rlaas_local_alive;
    if (!rlaas_conc_call_ok(&p->cc) || !ends_in(call, ":conc") ||
        call->key_len > RLAAS_TABLE_KEY_MAX)
        return 0;
    memcpy(p->key, call->key, call->key_len);
    p->key[call->key_len] = '\0';
    p->len = call->key_len;
    return 1;
}

static int prepare(const rlaas_local_call_t *call, int64_t now_ms,
                   prepared_t *p)
{
    if (call->strategy == RLAAS_CONCURRENCY)
        return prepare_conc(call, now_ms, p);
    if (call->strategy == RLAAS_BAN) {
        rlaas_ban_conf_t b = {call->limit, call->window_ms, call->cost};

        memset(&p->ac, 0, sizeof(p->ac));
        p->ac.strategy = RLAAS_BAN;
        if (!rlaas_ban_conf_ok(&b) || call->mode < 0 ||
            call->mode > RLAAS_LOCAL_CALLS_MAX || !ends_in(call, ":ban") ||
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
    p->len = call->key_len;
    /* fixed's window (or period) alone adds to the key */
    if (p->ac.strategy == RLAAS_STRATEGY_FIXED)
        p->len += rlaas_algo_suffix(&p->ac, p->key + call->key_len);
    else
        p->key[p->len] = '\0';
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

/* A concurrency limit's decision, inside the table's update of its
 * record. */
typedef struct {
    const rlaas_conc_call_t *call;
    rlaas_verdict_t *v;
    int rc;
} conc_t;

/* A record holding slots is never evicted while it holds them: dropping
 * it would let more than N in. The records holding slots are bounded by
 * the requests in flight (and, for a dead holder, by T). */
static void conc_life(const void *val, size_t len, rlaas_table_life_t *life)
{
    if (rlaas_conc_held(val, len) > 0) {
        life->refuse_ms = RLAAS_CONC_TIMEOUT_MAX; /* as long as it lives */
        life->ban = 1;
    }
}

static int conc_fn(void *baton, void *val, size_t *len,
                   rlaas_table_life_t *life)
{
    conc_t *c = baton;

    c->rc = rlaas_conc_take(c->call, val, len, &life->ttl_ms, c->v);
    if (c->rc == RLAAS_CONC_STORE)
        conc_life(val, *len, life);
    return c->rc != RLAAS_CONC_STORE;
}

/* Call i of a held set, charging (taking its slot) or not. */
static rlaas_lerr_e hit_held(rlaas_table_hold_t *hd, int i, prepared_t *p,
                             int commit, rlaas_verdict_t *v,
                             rlaas_table_report_t *rep,
                             rlaas_local_record_t *rec)
{
    hit_t h = {&p->ac, v, -1};
    rlaas_table_rc_e rc;

    p->ac.commit = commit;
    if (p->ac.strategy == RLAAS_CONCURRENCY) {
        conc_t c = {&p->cc, v, -1};

        p->cc.commit = commit;
        rc = rlaas_table_update_held(hd, i, p->key, p->len, conc_fn, &c, rep);
        if (rc == RLAAS_TABLE_REFUSED && c.rc == RLAAS_CONC_LEAVE)
            rc = RLAAS_TABLE_OK;
        if (rc == RLAAS_TABLE_OK)
            note(rec, p, rep, hd);
        return lerr(rc);
    }
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
        if (p[i].ac.strategy == RLAAS_BAN)
            continue;
        e = hit_held(hd, i, &p[i], 0, &v[i], rep,
                     recs != NULL ? &recs[i] : NULL);
        if (e != RLAAS_LERR_NONE)
            return e;
        p[i].known = rep->vlen > 0;
        if (!v[i].allowed &&
            !(p[i].ac.mode & (RLAAS_MODE_DRY_RUN | RLAAS_MODE_FORCE)))
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
        if (p[i].ac.strategy != RLAAS_BAN && !p[i].known)
            e = lerr(rlaas_table_reserve_held(
                hd, i, p[i].key, p[i].len,
                p[i].ac.strategy == RLAAS_CONCURRENCY
                    ? RLAAS_CONC_FIRST_LEN
                    : rlaas_algo_first_len(p[i].ac.strategy),
                rep));
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

/* Every call's start: the report cleared (rep, or *dummy where the
 * caller wants none), the engine and the number of calls checked. */
static rlaas_lerr_e start(const rlaas_local_t *lc, int n,
                          rlaas_table_report_t **rep,
                          rlaas_table_report_t *dummy)
{
    if (*rep == NULL)
        *rep = dummy;
    memset(*rep, 0, sizeof(**rep));
    if (lc == NULL)
        return RLAAS_LERR_NONE_HERE;
    return n < 1 || n > RLAAS_LOCAL_CALLS_MAX ? RLAAS_LERR_CALL
                                              : RLAAS_LERR_NONE;
}

/* The records of the n prepared calls, locked together. */
static rlaas_lerr_e hold(rlaas_local_t *lc, const prepared_t *p,
                         const rlaas_local_call_t *calls, int n, int64_t now_ms,
                         rlaas_table_hold_t *hd, rlaas_table_report_t *rep)
{
    const char *keys[RLAAS_LOCAL_CALLS_MAX];
    size_t lens[RLAAS_LOCAL_CALLS_MAX], zlens[RLAAS_LOCAL_CALLS_MAX];
    int i;

    for (i = 0; i < n; i++) {
        keys[i] = p[i].key;
        lens[i] = p[i].len;
        zlens[i] = calls[i].zone_len;
    }
    return lerr(rlaas_table_hold(lc, keys, lens, zlens, n, now_ms,
                                 RLAAS_LOCAL_LOCK_WAIT_US, hd, rep));
}

static void give_back(rlaas_table_hold_t *hd, prepared_t *p,
                      const rlaas_verdict_t *v, int upto, int ban,
                      int64_t now_ms, rlaas_table_report_t *rep);

rlaas_lerr_e rlaas_local_eval_n(rlaas_local_t *lc,
                                const rlaas_local_call_t *calls, int n,
                                int64_t now_ms, rlaas_verdict_t *v,
                                rlaas_table_report_t *rep,
                                rlaas_local_record_t *recs)
{
    prepared_t p[RLAAS_LOCAL_CALLS_MAX];
    rlaas_table_report_t dummy;
    rlaas_table_hold_t hd;
    rlaas_lerr_e e = start(lc, n, &rep, &dummy);
    ban_t b = {NULL, 0, 0, 0, 0};
    int i, go = 1, ban = -1;

    if (e != RLAAS_LERR_NONE)
        return e;
    for (i = 0; i < n; i++) {
        if (!prepare(&calls[i], now_ms, &p[i]))
            return RLAAS_LERR_CALL;
        if (p[i].ac.strategy == RLAAS_BAN) {
            /* one ban, beside a policy */
            if (ban >= 0 || n < 2 || p[i].ac.mode > n || p[i].ac.mode == i + 1)
                return RLAAS_LERR_CALL;
            ban = i;
        }
        if (!distinct(p, i))
            return RLAAS_LERR_CALL;
    }
    e = hold(lc, p, calls, n, now_ms, &hd, rep);
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
            !(p[i].ac.mode & (RLAAS_MODE_DRY_RUN | RLAAS_MODE_FORCE)))
            go = 0;
    }
    /* a log that had to grow on a full stripe (the one charge room was
     * not made for): the charges before it are given back, so that the
     * call charges nothing, as it answers */
    if (e == RLAAS_LERR_FULL && i > 1)
        give_back(&hd, p, v, i - 1, ban, now_ms, rep);
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

/* The charges of p[0..upto) made at now_ms given back within the hold,
 * each by its strategy's credit (a charge of this very millisecond: all
 * of it). A concurrency slot is not given back here: a request refused
 * or failed holds none for httpd to release, and the slot ends with its
 * timeout (RLaaSConcurrencyTimeout), as it did before. */
static void give_back(rlaas_table_hold_t *hd, prepared_t *p,
                      const rlaas_verdict_t *v, int upto, int ban,
                      int64_t now_ms, rlaas_table_report_t *rep)
{
    int i;

    for (i = 0; i < upto; i++) {
        rlaas_algo_call_t k = p[i].ac;
        credit_t cr = {&k, now_ms, 0};

        if (i == ban || k.strategy == RLAAS_CONCURRENCY || k.cost < 1 ||
            (k.mode & RLAAS_MODE_DRY_RUN) ||
            !(v[i].allowed || (k.mode & RLAAS_MODE_FORCE)))
            continue;
        k.mode &= RLAAS_MODE_LIMIT_VARIES;
        k.commit = 0;
        rlaas_table_update_held(hd, i, p[i].key, p[i].len, credit_fn, &cr, rep);
    }
}

/* A credit's key and arguments: fixed's record is its charge's window.
 * A charge outside a calendar's periods is given nothing back (as the
 * script): any period's record is held, and the credit leaves it. */
static int prepare_credit(const rlaas_local_call_t *call, int64_t at,
                          int64_t now_ms, prepared_t *p)
{
    rlaas_local_call_t one = *call;

    one.cost = 1;
    if (call->strategy == RLAAS_BAN || call->strategy == RLAAS_CONCURRENCY ||
        (!prepare(&one, at, p) &&
         (call->cal == NULL || !prepare(&one, call->cal->b[1], p))))
        return 0;
    p->ac.now_ms = now_ms;
    p->ac.cost = call->cost;
    return call->cost >= 1 &&
           call->cost <= rlaas_algo_limit_max(call->strategy) &&
           (call->mode & ~RLAAS_MODE_LIMIT_VARIES) == 0;
}

rlaas_lerr_e rlaas_local_credit_n(rlaas_local_t *lc,
                                  const rlaas_local_call_t *calls, int n,
                                  int64_t age_ms, int64_t now_ms,
                                  int64_t *given, rlaas_table_report_t *rep,
                                  rlaas_local_record_t *recs)
{
    prepared_t p[RLAAS_LOCAL_CALLS_MAX];
    int64_t at = now_ms - age_ms;
    rlaas_table_report_t dummy;
    rlaas_table_hold_t hd;
    rlaas_lerr_e e = start(lc, n, &rep, &dummy);
    int i;

    if (e != RLAAS_LERR_NONE)
        return e;
    if (age_ms < 0)
        return RLAAS_LERR_CALL;
    if (at < 0)
        at = 0;
    for (i = 0; i < n; i++) {
        if (!prepare_credit(&calls[i], at, now_ms, &p[i]))
            return RLAAS_LERR_CALL;
        if (!distinct(p, i))
            return RLAAS_LERR_CALL;
    }
    e = hold(lc, p, calls, n, now_ms, &hd, rep);
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

/* ---- concurrency slots given back ---- */

typedef struct {
    uint64_t token;
    int removed;
} release_t;

static int release_fn(void *baton, void *val, size_t *len,
                      rlaas_table_life_t *life)
{
    release_t *rl = baton;

    if (rlaas_conc_release(rl->token, val, len, &life->ttl_ms, &rl->removed) !=
        RLAAS_CONC_STORE)
        return 1;
    conc_life(val, *len, life);
    return 0;
}

rlaas_lerr_e rlaas_local_release_n(rlaas_local_t *lc,
                                   const rlaas_local_call_t *calls, int n,
                                   int64_t now_ms, int *removed,
                                   rlaas_table_report_t *rep,
                                   rlaas_local_record_t *recs)
{
    prepared_t p[RLAAS_LOCAL_CALLS_MAX];
    rlaas_table_report_t dummy;
    rlaas_table_hold_t hd;
    rlaas_lerr_e e = start(lc, n, &rep, &dummy);
    int i;

    if (e != RLAAS_LERR_NONE)
        return e;
    for (i = 0; i < n; i++) {
        if (calls[i].strategy != RLAAS_CONCURRENCY ||
            !ends_in(&calls[i], ":conc") ||
            calls[i].key_len > RLAAS_TABLE_KEY_MAX)
            return RLAAS_LERR_CALL;
        memcpy(p[i].key, calls[i].key, calls[i].key_len);
        p[i].key[calls[i].key_len] = '\0';
        p[i].len = calls[i].key_len;
    }
    e = hold(lc, p, calls, n, now_ms, &hd, rep);
    if (e != RLAAS_LERR_NONE)
        return e;
    for (i = 0; e == RLAAS_LERR_NONE && i < n; i++) {
        release_t rl = {calls[i].token, 0};
        rlaas_table_rc_e rc = rlaas_table_update_held(
            &hd, i, p[i].key, p[i].len, release_fn, &rl, rep);

        e = rc == RLAAS_TABLE_REFUSED ? RLAAS_LERR_NONE : lerr(rc);
        removed[i] = rl.removed;
        if (e == RLAAS_LERR_NONE)
            note(recs != NULL ? &recs[i] : NULL, &p[i], rep, &hd);
    }
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

typedef struct {
    rlaas_local_ban_fn fn;
    void *baton;
    int64_t now_ms;
} bans_t;

static int ban_seen(void *baton, const char *key, size_t klen, const void *val,
                    size_t vlen)
{
    bans_t *b = baton;
    int64_t until, length;

    /* a ban's record: its key's suffix and its shape (a concurrency
     * limit's record is marked as one too), and not over (the table keeps
     * the time it refuses until in whole seconds) */
    if (klen < 4 || memcmp(key + klen - 4, ":ban", 4) != 0 ||
        !rlaas_ban_read(val, vlen, &until, &length) || until <= b->now_ms)
        return 1;
    return b->fn(b->baton, key, klen, until, length);
}

rlaas_lerr_e rlaas_local_bans(rlaas_local_t *lc, int64_t now_ms,
                              rlaas_local_ban_fn fn, void *baton)
{
    bans_t b = {fn, baton, now_ms};

    if (lc == NULL)
        return RLAAS_LERR_NONE_HERE;
    return lerr(
        rlaas_table_bans(lc, now_ms, RLAAS_LOCAL_LOCK_WAIT_US, ban_seen, &b));
}
