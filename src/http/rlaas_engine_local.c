/*
 * The local engine's operations (rlaas_engine.h) over the table in shared
 * memory (rlaas_backend.c): a request's policies as the table takes them,
 * each limit shared out among the servers that decide alone (1 for
 * RLaaSBackend local; RLaaSLocalDivisor where it stands in for Redis).
 */
#include "rlaas_engine.h"

#include "apr_strings.h"

#include "rlaas_backend.h"
#include "rlaas_clock.h"
#include "rlaas_conc.h"
#include "rlaas_metrics.h"

/* A policy as the table takes it, its limit shared out among divisor
 * servers (at least 1 each, a cost at most that); units >= 0: that cost
 * instead of the item's. */
static void to_local(const rlaas_item_t *it, int divisor, int64_t units,
                     rlaas_local_call_t *c)
{
    int64_t cost = units >= 0 ? units : it->call.cost;

    c->strategy = it->call.strategy;
    c->key = it->call.key;
    /* the table appends fixed's window number itself, by its own clock,
     * to the key as it ends before one (Redis Cluster declares it) */
    c->key_len = it->call.window_at > 0 ? it->call.window_at : it->call.key_len;
    c->limit = it->call.limit / divisor > 0 ? it->call.limit / divisor : 1;
    c->window_ms = it->call.window_ms;
    c->cost = cost < c->limit ? cost : c->limit;
    c->mode = it->call.mode;
    c->token = 0;
    if (it->conc)
        rlaas_conc_token_parse(it->call.token, RLAAS_CONC_TOKEN_LEN, &c->token);
    /* each record's zone: newcomers of one never evict another's state */
    c->zone_len = it->zone_len;
    /* a calendar's periods: the table picks the one holding its time */
    c->cal = it->periods;
}

/* The table could not (counted by the caller, each try): said as the
 * request path logs it. */
static int fault(rlaas_lerr_e e, rlaas_engine_fault_t *f)
{
    f->tag = "RLAAS0063";
    f->kind = "local engine";
    apr_cpystrn(f->detail, rlaas_lerr_name(e), sizeof(f->detail));
    f->circuit = 0;
    return 0;
}

static int divisor_of(const server_rec *s)
{
    return rlaas_server_local_divisor(rlaas_server_conf(s));
}

static int decide_among(request_rec *r, rlaas_engine_ask_t *a, int divisor,
                        rlaas_engine_fault_t *f)
{
    rlaas_local_call_t calls[RLAAS_POLICIES_MAX + 1];
    rlaas_verdict_t v[RLAAS_POLICIES_MAX + 1];
    rlaas_lerr_e e;
    int i;

    for (i = 0; i < a->n; i++)
        to_local(&a->it[i], divisor, -1, &calls[i]);
    if (a->ban_key != NULL) {
        rlaas_local_call_t *c = &calls[a->n];

        memset(c, 0, sizeof(*c));
        c->strategy = RLAAS_BAN;
        c->key = a->ban_key;
        c->key_len = a->ban_key_len;
        c->limit = a->ban.length_ms;
        c->window_ms = a->ban.max_ms;
        c->cost = a->ban.factor;
        c->mode = a->ban_own;
        /* the ban's record is of its section's zone */
        c->zone_len = a->it[a->ban_own - 1].zone_len;
    }
    e = rlaas_backend_eval(r, calls, a->n + (a->ban_key != NULL), v);
    if (e != RLAAS_LERR_NONE) {
        rlaas_metrics_local_error(e);
        return fault(e, f);
    }
    for (i = 0; i < a->n; i++)
        a->it[i].v = v[i];
    if (a->ban_key != NULL)
        a->ban_v = v[a->n];
    return 1;
}

typedef enum { OP_CHARGE, OP_CREDIT, OP_RELEASE } op_e;

/* calls[0..n) charged (forced), credited (charged at t0_us) or released;
 * a lock not had in time: once more. A credit's age is reckoned at each
 * try, and errs long: a window strategy then gives back to an earlier
 * window, or nothing. */
static int on_table(request_rec *r, op_e op, const rlaas_local_call_t *calls,
                    int n, int64_t t0_us, rlaas_engine_fault_t *f)
{
    rlaas_verdict_t v[RLAAS_POLICIES_MAX];
    int64_t given[RLAAS_POLICIES_MAX];
    int removed[RLAAS_POLICIES_MAX], tries;
    rlaas_lerr_e e = RLAAS_LERR_NONE;

    for (tries = 0; tries < 2; tries++) {
        e = op == OP_CHARGE ? rlaas_backend_eval(r, calls, n, v)
            : op == OP_CREDIT
                ? rlaas_backend_credit(
                      r, calls, n, (rlaas_clock_us() - t0_us) / 1000 + 1, given)
                : rlaas_backend_release(r, calls, n, removed);
        if (e == RLAAS_LERR_NONE)
            return 1;
        rlaas_metrics_local_error(e);
        if (e != RLAAS_LERR_BUSY)
            break;
    }
    return fault(e, f);
}

static int settle_among(request_rec *r, const rlaas_item_t *it, int n,
                        const int64_t *units, int64_t t0_us, int divisor,
                        rlaas_engine_fault_t *f)
{
    rlaas_local_call_t calls[RLAAS_POLICIES_MAX];
    int i;

    for (i = 0; i < n; i++) {
        to_local(&it[i], divisor, units != NULL ? units[i] : -1, &calls[i]);
        calls[i].mode &= RLAAS_MODE_LIMIT_VARIES;
        if (units != NULL)
            calls[i].mode |= RLAAS_MODE_FORCE;
    }
    return on_table(r, units != NULL ? OP_CHARGE : OP_CREDIT, calls, n, t0_us,
                    f);
}

static int local_decide(request_rec *r, rlaas_engine_ask_t *a,
                        rlaas_engine_fault_t *f)
{
    return decide_among(r, a, 1, f);
}

static int local_settle(request_rec *r, const rlaas_item_t *it, int n,
                        const int64_t *units, int64_t t0_us,
                        rlaas_engine_fault_t *f)
{
    return settle_among(r, it, n, units, t0_us, 1, f);
}

static int stand_in_decide(request_rec *r, rlaas_engine_ask_t *a,
                           rlaas_engine_fault_t *f)
{
    return decide_among(r, a, divisor_of(r->server), f);
}

static int stand_in_settle(request_rec *r, const rlaas_item_t *it, int n,
                           const int64_t *units, int64_t t0_us,
                           rlaas_engine_fault_t *f)
{
    return settle_among(r, it, n, units, t0_us, divisor_of(r->server), f);
}

/* A slot is found by its key and the request's token, whatever the limit
 * it was taken under. */
static int local_release(server_rec *s, apr_pool_t *p, const rlaas_item_t *it,
                         int n, rlaas_engine_fault_t *f)
{
    rlaas_local_call_t calls[RLAAS_POLICIES_MAX];
    int i;

    (void)s;
    (void)p;
    for (i = 0; i < n; i++) {
        to_local(&it[i], 1, 0, &calls[i]);
        calls[i].mode = 0;
    }
    return on_table(NULL, OP_RELEASE, calls, n, 0, f);
}

/* ---- the console's ---- */

static const char *why_not(request_rec *r, rlaas_lerr_e e)
{
    return e == RLAAS_LERR_NONE ? NULL
                                : apr_psprintf(r->pool, "the local engine: %s",
                                               rlaas_lerr_name(e));
}

static const char *local_forget(request_rec *r, const char *key, int *found)
{
    return why_not(r,
                   rlaas_local_forget(rlaas_backend_table(), key, strlen(key),
                                      rlaas_local_now_ms(), found));
}

static const char *local_credit(request_rec *r, const rlaas_engine_credit_t *c,
                                int64_t *given)
{
    rlaas_local_call_t lc;

    memset(&lc, 0, sizeof(lc));
    lc.strategy = c->strategy;
    lc.key = c->key;
    lc.key_len = strlen(c->key);
    lc.limit = c->limit;
    lc.window_ms = c->cal != NULL ? c->cal->b[2] - c->cal->b[1] : c->window_ms;
    lc.cal = c->cal;
    lc.cost = c->units;
    return why_not(r, rlaas_backend_credit(r, &lc, 1, 0, given));
}

typedef struct {
    const char *prefix;
    size_t plen;
    int left;
    rlaas_engine_ban_fn fn;
    void *baton;
} local_bans_t;

static int local_ban(void *baton, const char *key, size_t klen,
                     int64_t until_ms, int64_t length_ms)
{
    local_bans_t *b = baton;

    if (klen < b->plen || memcmp(key, b->prefix, b->plen) != 0)
        return 1; /* another prefix's: another server's */
    b->left--;
    return b->fn(b->baton, key, klen, until_ms, length_ms) && b->left > 0;
}

static const char *local_bans(request_rec *r, const char *prefix, int max,
                              rlaas_engine_ban_fn fn, void *baton)
{
    local_bans_t b = {prefix, strlen(prefix), max, fn, baton};

    if (max < 1)
        return NULL; /* local_ban counts down from at least 1 */
    return why_not(r, rlaas_local_bans(rlaas_backend_table(),
                                       rlaas_local_now_ms(), local_ban, &b));
}

const rlaas_engine_t rlaas_engine_local = {
    "local", local_decide, local_settle, local_release,
    NULL,    local_forget, local_credit, local_bans};

/* Standing in for Redis, the console still reaches Redis: no console
 * operation here. */
const rlaas_engine_t rlaas_engine_local_shared = {
    "local", stand_in_decide, stand_in_settle, local_release, NULL, NULL, NULL,
    NULL};
