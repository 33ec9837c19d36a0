/*
 * The Redis engine's operations (rlaas_engine.h), through the child's
 * engine of the server's target (rlaas_remote.c makes it; one node, TLS,
 * Sentinel or Cluster stand behind it alike): a request's policies as
 * one call of lua/multi.lua, or a lease's portion (rlaas_lease.c);
 * charges settled and slots given back as calls of the same scripts.
 */
#include "rlaas_engine.h"

#include "apr_strings.h"

#include "rlaas_clock.h"
#include "rlaas_lease.h"
#include "rlaas_metrics.h"
#include "rlaas_redis.h"
#include "rlaas_scan.h"
#include "rlaas_target.h"

static struct rlaas_redis_t *engine_here(const server_rec *s)
{
    return rlaas_server_conf(s)->target->redis;
}

/* Redis could not (e, detail): counted, and said as the request path
 * logs it. */
static int fault(apr_pool_t *p, rlaas_rerr_e e, const char *detail,
                 rlaas_engine_fault_t *f)
{
    rlaas_metrics_redis_error(e);
    f->tag = "RLAAS0021";
    f->kind = apr_pstrcat(p, "Redis ", rlaas_rerr_name(e), NULL);
    if (detail != f->detail)
        apr_cpystrn(f->detail, detail, sizeof(f->detail));
    f->circuit = e == RLAAS_RERR_CIRCUIT;
    return 0;
}

/* Errors that say the call was never sent: it may be tried again (one
 * that was sent may have run: never sent twice). */
static int not_sent(rlaas_rerr_e e)
{
    return e == RLAAS_RERR_POOL || e == RLAAS_RERR_CONNECT ||
           e == RLAAS_RERR_AUTH || e == RLAAS_RERR_SELECT ||
           e == RLAAS_RERR_CIRCUIT;
}

/* calls[0..n) through the child's engine, tried once more if the first
 * try was never sent (again). A credit's age (t0_us >= 0: the charges'
 * time) is reckoned at each try: at least the time since before the
 * decision was asked, and the budget the credit itself may wait. Too long
 * errs on the safe side: a window strategy gives back to an earlier
 * window, or nothing. Unless the charge's window is known to outlast that
 * age (keep_ms[i] >= 0: the time it had left at the charge, made after
 * t0_us): then the credit meets it whenever it arrives, as the window of
 * its own time (age 0), which a refund made early in a window needs. */
static int eval(server_rec *s, apr_pool_t *p, rlaas_call_t *calls, int n,
                rlaas_verdict_t *v, int again, int64_t t0_us,
                const int64_t *keep_ms, rlaas_engine_fault_t *f)
{
    struct rlaas_redis_t *rd = engine_here(s);
    rlaas_rerr_e e = RLAAS_RERR_POOL;
    int64_t age;
    int i, tries;

    if (rd == NULL)
        return fault(p, e, "no Redis engine in this process", f);
    for (tries = 0; tries < 1 + again; tries++) {
        for (i = 0; t0_us >= 0 && i < n; i++) {
            age = (rlaas_clock_us() - t0_us) / 1000 + 1 +
                  rlaas_server_conf(s)->target->timeout_ms;
            calls[i].credit_age = keep_ms != NULL && keep_ms[i] > age ? 0 : age;
        }
        e = rlaas_redis_eval(rd, calls, n, v, f->detail);
        if (e == RLAAS_RERR_NONE)
            return 1;
        if (!not_sent(e) || tries + 1 == 1 + again)
            break;
        rlaas_metrics_redis_error(e);
    }
    return fault(p, e, f->detail, f);
}

/* The policies in one call, and the ban's record with them; or from a
 * lease, where the section asks for one and it applies. */
static int redis_decide(request_rec *r, rlaas_engine_ask_t *a,
                        rlaas_engine_fault_t *f)
{
    rlaas_call_t calls[RLAAS_POLICIES_MAX + 1];
    rlaas_verdict_t v[RLAAS_POLICIES_MAX + 1];
    rlaas_rerr_e e;
    int i, n = a->n;

    switch (rlaas_lease_decide(r, a->d, a->it, a->n, a->with, &e, f->detail)) {
    case RLAAS_LEASE_DECIDED:
        return 1;
    case RLAAS_LEASE_FAILED:
        return fault(r->pool, e, f->detail, f);
    case RLAAS_LEASE_NO:
        break;
    }
    for (i = 0; i < a->n; i++)
        calls[i] = a->it[i].call;
    if (a->ban_key != NULL) {
        rlaas_call_t *c = &calls[n++];

        memset(c, 0, sizeof(*c));
        c->strategy = RLAAS_BAN;
        c->key = a->ban_key;
        c->key_len = a->ban_key_len;
        c->limit = a->ban.length_ms;
        c->window_ms = a->ban.max_ms;
        c->cost = a->ban.factor;
        c->mode = a->ban_own;
    }
    if (!eval(r->server, r->pool, calls, n, v, 0, -1, NULL, f))
        return 0;
    for (i = 0; i < a->n; i++)
        a->it[i].v = v[i];
    if (a->ban_key != NULL)
        a->ban_v = v[a->n];
    return 1;
}

static int redis_settle(request_rec *r, const rlaas_item_t *it, int n,
                        const int64_t *units, int64_t t0_us,
                        rlaas_engine_fault_t *f)
{
    rlaas_call_t calls[RLAAS_POLICIES_MAX];
    rlaas_verdict_t v[RLAAS_POLICIES_MAX];
    int64_t keep[RLAAS_POLICIES_MAX];
    int i;

    for (i = 0; i < n; i++) {
        calls[i] = it[i].call;
        calls[i].mode &= RLAAS_MODE_LIMIT_VARIES;
        calls[i].lease_want = 0;
        calls[i].credit = units == NULL;
        /* a fixed window's end: its verdict's reset, from the charge */
        keep[i] =
            it[i].call.strategy == RLAAS_STRATEGY_FIXED && it[i].cal == NULL
                ? it[i].v.reset_ms
                : -1;
        if (units != NULL) {
            calls[i].cost = units[i];
            calls[i].mode |= RLAAS_MODE_FORCE;
        }
    }
    return eval(r->server, r->pool, calls, n, v, 1, units == NULL ? t0_us : -1,
                keep, f);
}

static int redis_release(server_rec *s, apr_pool_t *p, const rlaas_item_t *it,
                         int n, rlaas_engine_fault_t *f)
{
    rlaas_call_t calls[RLAAS_POLICIES_MAX];
    rlaas_verdict_t v[RLAAS_POLICIES_MAX];
    int i;

    for (i = 0; i < n; i++) {
        calls[i] = it[i].call;
        calls[i].mode = 0;
        calls[i].lease_want = 0;
        calls[i].credit = 0;
        calls[i].release = 1;
    }
    return eval(s, p, calls, n, v, 1, -1, NULL, f);
}

/* ---- the console's ---- */
/* A listing's budget: the target's, at least this (SCAN walks rounds). */
#define LIST_BUDGET_MS 2000

/* One call of the console (a forget or a credit), as a request's goes;
 * NULL, or why not. */
static const char *call_one(request_rec *r, rlaas_call_t *call,
                            rlaas_verdict_t *v)
{
    rlaas_engine_fault_t f;

    return eval(r->server, r->pool, call, 1, v, 0, -1, NULL, &f)
               ? NULL
               : rlaas_engine_why(r->pool, &f);
}

static const char *redis_forget(request_rec *r, const char *key, int *found)
{
    rlaas_call_t call;
    rlaas_verdict_t v;
    const char *why;

    memset(&call, 0, sizeof(call));
    call.key = key;
    call.key_len = strlen(key);
    /* a mark of the reset (lua/forget.lua), so that units a server held
     * are not given back into the fresh state (on a Cluster too: the mark
     * shares the record's hash tag, so its slot) */
    call.forget = 2;
    *found = 0;
    if ((why = call_one(r, &call, &v)) == NULL)
        *found = v.remaining > 0;
    return why;
}

static const char *redis_credit(request_rec *r, const rlaas_engine_credit_t *c,
                                int64_t *given)
{
    rlaas_call_t call;
    rlaas_verdict_t v;
    const char *why;

    memset(&call, 0, sizeof(call));
    call.strategy = c->strategy;
    call.key = c->key;
    call.key_len = strlen(c->key);
    call.limit = c->limit;
    call.window_ms = c->window_ms;
    call.cal = c->cal_window;
    call.cost = c->units;
    call.credit = 1;
    *given = 0;
    if ((why = call_one(r, &call, &v)) == NULL)
        *given = v.remaining;
    return why;
}

typedef struct {
    rlaas_engine_ban_fn fn;
    void *baton;
    int64_t now_ms;
} redis_bans_t;

/* A ban's value in Redis: "<until>:<length>" (ms), as lua/multi.lua
 * writes it; anything else is listed with -1 for both. A ban over is not
 * listed: escalation keeps its record past its end. */
static int redis_ban(void *baton, const char *key, size_t klen, const char *val,
                     size_t vlen)
{
    redis_bans_t *b = baton;
    int64_t until = -1, length = -1;
    char *end;

    (void)vlen; /* hiredis ends it with a NUL */
    until = apr_strtoi64(val, &end, 10);
    length = *end == ':' ? apr_strtoi64(end + 1, &end, 10) : -1;
    if (*end != '\0' || length < 0)
        until = length = -1;
    else if (until < b->now_ms)
        return 1;
    return b->fn(b->baton, key, klen, until, length);
}

static const char *redis_bans(request_rec *r, const char *prefix, int max,
                              rlaas_engine_ban_fn fn, void *baton)
{
    struct rlaas_redis_t *rd = engine_here(r->server);
    const rlaas_target_t *t = rlaas_server_conf(r->server)->target;
    int budget = t->timeout_ms;
    char *pattern = apr_palloc(r->pool, 2 * strlen(prefix) + 16);
    char detail[RLAAS_DETAIL_MAX];
    redis_bans_t b = {fn, baton, apr_time_as_msec(apr_time_now())};
    rlaas_rerr_e e;

    if (rd == NULL)
        return "no Redis engine in this process";
    if (budget < LIST_BUDGET_MS)
        budget = LIST_BUDGET_MS;
    rlaas_scan_pattern(pattern, prefix, ":ban");
    e = rlaas_scan(rd, pattern, max, rlaas_clock_us() + (int64_t)budget * 1000,
                   redis_ban, &b, detail);
    return e == RLAAS_RERR_NONE ? NULL
                                : apr_psprintf(r->pool, "Redis %s: %s",
                                               rlaas_rerr_name(e), detail);
}

const rlaas_engine_t rlaas_engine_redis = {"redis",
                                           redis_decide,
                                           redis_settle,
                                           redis_release,
                                           &rlaas_engine_local_shared,
                                           redis_forget,
                                           redis_credit,
                                           redis_bans};
