#include "rlaas_redis.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http_log.h"
#include "ap_mpm.h"
#include "apr_reslist.h"
#include "apr_strings.h"

#include <hiredis/hiredis.h>

#include "rlaas_breaker.h"
#include "rlaas_gate.h"
#include "rlaas_identity.h"
#include "rlaas_metrics.h"
#include "rlaas_pipeline.h"
#include "rlaas_resp.h"
#include "rlaas_scripts.h"

APLOG_USE_MODULE(rlaas);

/* Groups of pipelined calls in flight at most, per pool and child, and how
 * long a call waits behind one before it goes out on another connection. */
#define PIPE_LEADERS 4
#define PIPE_HOLD_US 1000

struct rlaas_pool_t {
    apr_reslist_t *list;
    const rlaas_target_t *target;
    server_rec *s; /* for the circuit's log lines */
    rlaas_breaker_t breaker;
    rlaas_pipe_t *pipe; /* NULL: every request uses its own connection */
    rlaas_gate_t *gate; /* NULL: never more threads than connections */
};

/* One pooled slot. The slot lives as long as the pool; its connection is
 * opened on first use and dropped after any transport error, so a broken
 * connection is never used twice. */
typedef struct {
    redisContext *ctx;
    long timeout_us; /* socket timeout set on ctx; 0: none yet (blocks) */
} rlaas_conn_t;

const char *rlaas_rerr_name(rlaas_rerr_e e)
{
    static const char *const names[RLAAS_RERR_COUNT] = {
        "none",    "pool", "connect", "auth",        "select",
        "timeout", "io",   "reply",   "circuit_open"};

    return e >= 0 && e < RLAAS_RERR_COUNT ? names[e] : "unknown";
}

int rlaas_redis_default_pool_max(void)
{
    int threads = 1;

    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS ||
        threads < 1)
        threads = 1;
    return threads;
}

/* ---- pool ---- */

static apr_status_t slot_make(void **res, void *params, apr_pool_t *p)
{
    (void)params;
    (void)p;
    /* malloc, not the pool: slots are made and freed for the life of the
     * child and must not accumulate in its pool. */
    *res = calloc(1, sizeof(rlaas_conn_t));
    return *res != NULL ? APR_SUCCESS : APR_ENOMEM;
}

static void conn_drop(rlaas_conn_t *c)
{
    if (c->ctx != NULL) {
        redisFree(c->ctx);
        c->ctx = NULL;
        rlaas_metrics_connection(-1);
    }
}

static apr_status_t slot_free(void *res, void *params, apr_pool_t *p)
{
    (void)params;
    (void)p;
    conn_drop(res);
    free(res);
    return APR_SUCCESS;
}

/* A child leaving with its circuit open takes its share of the gauge. */
static apr_status_t pool_cleanup(void *data)
{
    struct rlaas_pool_t *pl = data;

    if (rlaas_breaker_is_open(&pl->breaker))
        rlaas_metrics_circuit(-1);
    rlaas_pipe_destroy(pl->pipe);
    pl->pipe = NULL;
    rlaas_gate_destroy(pl->gate);
    pl->gate = NULL;
    return APR_SUCCESS;
}

static void pool_create(apr_pool_t *pchild, server_rec *s, rlaas_target_t *t)
{
    struct rlaas_pool_t *pl = apr_pcalloc(pchild, sizeof(*pl));
    int threads = rlaas_redis_default_pool_max();
    int max = t->pool_max > 0 ? t->pool_max : threads;
    apr_status_t rv;

    pl->target = t;
    pl->s = s;
    rlaas_breaker_init(&pl->breaker, (unsigned)rlaas_target_circuit_failures(t),
                       apr_time_from_msec(rlaas_target_circuit_cooldown_ms(t)));
    apr_pool_cleanup_register(pchild, pl, pool_cleanup, apr_pool_cleanup_null);
    rv = apr_reslist_create(&pl->list, 0, max, max, 0, slot_make, slot_free,
                            NULL, pchild);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s,
                     "RLAAS0001: cannot create the Redis connection pool");
        return;
    }
    apr_reslist_timeout_set(pl->list,
                            apr_time_from_msec(rlaas_target_timeout_ms(t)));
    /* Grouping needs threads that wait at the same time. One group in
     * flight is the rule; a far or slow Redis gets a few, each on its own
     * connection, never more than the pool holds. */
    if (rlaas_target_pipeline(t) && threads > 1)
        pl->pipe = rlaas_pipe_create(max < PIPE_LEADERS ? max : PIPE_LEADERS,
                                     PIPE_HOLD_US);
    /* The pipeline's leaders never outnumber the pool's connections;
     * without it, threads beyond the pool's size queue at the gate, where
     * their wait counts against their own budget. */
    if (pl->pipe == NULL && max < threads)
        pl->gate = rlaas_gate_create(max);
    t->pool = pl;
}

void rlaas_redis_child_init(apr_pool_t *pchild, server_rec *s)
{
    for (; s != NULL; s = s->next) {
        rlaas_target_t *t = rlaas_server_conf(s)->target;

        if (t->pool == NULL)
            pool_create(pchild, s, t);
    }
}

/* ---- groups of calls ---- */

#define DETAIL_MAX   160
#define NO_FREE_CONN "no pooled connection became free in time"

/* One request's call and its outcome. It lives on the requesting thread's
 * stack; in a pipelined group the leader fills it in. */
typedef struct {
    const rlaas_call_t *call;
    rlaas_verdict_t *v;
    rlaas_rerr_e e;
    int noscript;
    char detail[DETAIL_MAX];
} job_t;

/* What the calls of a group share: the leader's request (for its log
 * lines), the target, and the leader's deadline (the group's earliest). */
typedef struct {
    request_rec *r;
    struct rlaas_pool_t *pl;
    apr_time_t deadline;
} group_t;

static void set_detail(job_t *j, const char *text, size_t len)
{
    if (len >= DETAIL_MAX)
        len = DETAIL_MAX - 1;
    memcpy(j->detail, text, len);
    j->detail[len] = '\0';
}

static void fail(job_t **jobs, int n, rlaas_rerr_e e, const char *text)
{
    int i;

    for (i = 0; i < n; i++) {
        jobs[i]->e = e;
        set_detail(jobs[i], text, strlen(text));
    }
}

static long remaining_us(const group_t *g)
{
    apr_time_t left = g->deadline - apr_time_now();

    return left > 0 ? (long)left : 0;
}

static struct timeval to_tv(long us)
{
    struct timeval tv;

    tv.tv_sec = us / 1000000;
    tv.tv_usec = us % 1000000;
    return tv;
}

/* Keeps the socket timeout at what is left of the budget, give or take:
 * at most 1 ms more (never a read that outlasts the budget by more), and
 * at most an eighth less (a read may give up a little early). Under load
 * every group leaves a slightly different remainder; the slack keeps that
 * from costing two setsockopt calls per group. A new connection has no
 * timeout at all (hiredis bounds only the connect), so it always gets one,
 * however little is left. */
static int conn_budget(const group_t *g, rlaas_conn_t *c)
{
    long left = remaining_us(g);

    if (left <= 0)
        return 0;
    if (c->timeout_us == 0 || c->timeout_us > left + 1000 ||
        c->timeout_us < left - left / 8) {
        if (redisSetTimeout(c->ctx, to_tv(left)) != REDIS_OK)
            return 0;
        c->timeout_us = left;
    }
    return 1;
}

/* A transport failure: the connection can't be trusted any more. */
static rlaas_rerr_e transport_error(const group_t *g, rlaas_conn_t *c,
                                    int saved_errno, char *detail)
{
    rlaas_rerr_e e = RLAAS_RERR_IO;

    if (c->ctx->err == REDIS_ERR_IO &&
        (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ||
         saved_errno == ETIMEDOUT || remaining_us(g) == 0))
        e = RLAAS_RERR_TIMEOUT;
    apr_cpystrn(detail, c->ctx->errstr, DETAIL_MAX);
    conn_drop(c);
    return e;
}

/* AUTH and SELECT, pipelined: one round trip however many are needed. */
static rlaas_rerr_e conn_setup(const group_t *g, rlaas_conn_t *c, char *detail)
{
    const rlaas_target_t *t = g->pl->target;
    int n = 0, i;
    rlaas_rerr_e e = RLAAS_RERR_NONE;

    if (t->password != NULL) {
        if (t->username != NULL)
            redisAppendCommand(c->ctx, "AUTH %s %s", t->username, t->password);
        else
            redisAppendCommand(c->ctx, "AUTH %s", t->password);
        n++;
    }
    if (t->database > 0) {
        redisAppendCommand(c->ctx, "SELECT %d", t->database);
        n++;
    }
    for (i = 0; i < n; i++) {
        redisReply *rep = NULL;

        if (redisGetReply(c->ctx, (void **)&rep) != REDIS_OK)
            return transport_error(g, c, errno, detail);
        if (rep->type == REDIS_REPLY_ERROR && e == RLAAS_RERR_NONE) {
            /* The first reply answers AUTH when a password is set. */
            e = (i == 0 && t->password != NULL) ? RLAAS_RERR_AUTH
                                                : RLAAS_RERR_SELECT;
            /* Redis' own text; it never repeats the password. */
            apr_cpystrn(detail, rep->str, DETAIL_MAX);
        }
        freeReplyObject(rep);
    }
    if (e != RLAAS_RERR_NONE)
        conn_drop(c);
    return e;
}

static rlaas_rerr_e conn_open(const group_t *g, rlaas_conn_t *c, char *detail)
{
    const rlaas_target_t *t = g->pl->target;
    long left = remaining_us(g);

    if (left <= 0) {
        apr_cpystrn(detail, "no time left to connect", DETAIL_MAX);
        return RLAAS_RERR_TIMEOUT;
    }
    c->ctx = t->is_unix
                 ? redisConnectUnixWithTimeout(t->host, to_tv(left))
                 : redisConnectWithTimeout(
                       t->host ? t->host : RLAAS_DEFAULT_HOST,
                       t->port ? t->port : RLAAS_DEFAULT_PORT, to_tv(left));
    if (c->ctx == NULL) {
        apr_cpystrn(detail, "out of memory", DETAIL_MAX);
        return RLAAS_RERR_CONNECT;
    }
    if (c->ctx->err) {
        apr_cpystrn(detail, c->ctx->errstr, DETAIL_MAX);
        redisFree(c->ctx);
        c->ctx = NULL;
        return RLAAS_RERR_CONNECT;
    }
    rlaas_metrics_connection(1);
    c->timeout_us = 0;
    if (!conn_budget(g, c)) {
        conn_drop(c);
        apr_cpystrn(detail, "no time left after connecting", DETAIL_MAX);
        return RLAAS_RERR_TIMEOUT;
    }
    return conn_setup(g, c, detail);
}

/* SCRIPT LOAD after NOSCRIPT (Redis restarted, failed over or flushed). */
static rlaas_rerr_e script_load(const group_t *g, rlaas_conn_t *c,
                                const rlaas_script_t *sc, char *detail)
{
    const char *argv[3] = {"SCRIPT", "LOAD", sc->body};
    size_t lens[3] = {6, 4, sc->len};
    redisReply *rep;
    rlaas_rerr_e e = RLAAS_RERR_NONE;

    if (!conn_budget(g, c)) {
        apr_cpystrn(detail, "no time left to load the script", DETAIL_MAX);
        return RLAAS_RERR_TIMEOUT;
    }
    rep = redisCommandArgv(c->ctx, 3, argv, lens);
    if (rep == NULL)
        return transport_error(g, c, errno, detail);
    if (rep->type != REDIS_REPLY_STRING || rep->len != 40 ||
        memcmp(rep->str, sc->sha1, 40) != 0) {
        apr_cpystrn(detail,
                    rep->type == REDIS_REPLY_ERROR ? rep->str
                                                   : "unexpected reply",
                    DETAIL_MAX);
        e = RLAAS_RERR_REPLY;
    }
    freeReplyObject(rep);
    rlaas_metrics_script_load();
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, g->r,
                  "RLAAS0002: loaded script %s (%s)", sc->file,
                  e == RLAAS_RERR_NONE ? "ok" : "failed");
    return e;
}

/* Reads one reply into its job. Returns 1 if the connection must be made
 * again after this group: an error reply other than a script's own
 * (READONLY after a failover, NOAUTH, LOADING). */
static int take_reply(job_t *j, const rlaas_reply_sink_t *rep)
{
    switch (rlaas_reply_verdict(rep, j->v)) {
    case RLAAS_REPLY_OK:
        j->e = RLAAS_RERR_NONE;
        return 0;
    case RLAAS_REPLY_NOSCRIPT:
        j->noscript = 1;
        return 0;
    case RLAAS_REPLY_ERROR:
        j->e = RLAAS_RERR_REPLY;
        set_detail(j, rep->err, rep->err_len);
        return strstr(j->detail, "script") == NULL;
    case RLAAS_REPLY_BAD:
        break;
    }
    j->e = RLAAS_RERR_REPLY;
    set_detail(j, "unexpected reply", 16);
    return 0;
}

/* Sends the calls of jobs[0..n) in one write and reads their replies.
 * Returns how many replies arrived; on a transport failure the rest of
 * the jobs carry the error. */
static int exchange(const group_t *g, rlaas_conn_t *c, job_t **jobs, int n)
{
    char cmd[RLAAS_RESP_EVALSHA_MAX(RLAAS_KEY_MAX)];
    redisReplyObjectFunctions *fns;
    rlaas_reply_sink_t sink;
    apr_time_t t0;
    int i, got, redo = 0;

    for (i = 0; i < n; i++) {
        const rlaas_call_t *call = jobs[i]->call;
        size_t len = rlaas_resp_evalsha(cmd, rlaas_scripts[call->strategy].sha1,
                                        call->key, call->key_len, call->limit,
                                        call->window);

        jobs[i]->e = RLAAS_RERR_NONE;
        jobs[i]->noscript = 0;
        redisAppendFormattedCommand(c->ctx, cmd, len);
    }
    if (!conn_budget(g, c)) {
        conn_drop(c);
        fail(jobs, n, RLAAS_RERR_TIMEOUT, "no time left for the call");
        return 0;
    }
    t0 = apr_time_now();
    /* the replies are read into a sink, not into reply objects */
    fns = c->ctx->reader->fn;
    c->ctx->reader->fn = &rlaas_reply_sink_fns;
    c->ctx->reader->privdata = &sink;
    for (got = 0; got < n; got++) {
        void *rep = NULL;

        rlaas_reply_sink_reset(&sink);
        if (redisGetReply(c->ctx, &rep) != REDIS_OK) {
            char detail[DETAIL_MAX];
            rlaas_rerr_e e = transport_error(g, c, errno, detail);

            fail(jobs + got, n - got, e, detail);
            return got;
        }
        redo |= take_reply(jobs[got], rep);
    }
    c->ctx->reader->fn = fns;
    c->ctx->reader->privdata = NULL;
    t0 = apr_time_now() - t0;
    for (i = 0; i < n; i++)
        rlaas_metrics_latency(t0);
    if (redo)
        conn_drop(c);
    return got;
}

/* Loads the scripts that Redis didn't know and sends those calls again,
 * once. */
static void reload_and_retry(const group_t *g, rlaas_conn_t *c, job_t **jobs,
                             int n)
{
    job_t *again[RLAAS_PIPE_MAX_BATCH];
    int loaded[RLAAS_STRATEGY_COUNT] = {0};
    int m = 0, i;

    for (i = 0; i < n; i++) {
        rlaas_strategy_e st = jobs[i]->call->strategy;
        rlaas_rerr_e e;

        if (!jobs[i]->noscript)
            continue;
        if (c->ctx == NULL) {
            fail(jobs + i, 1, RLAAS_RERR_IO, "connection lost");
            continue;
        }
        if (!loaded[st]) {
            e = script_load(g, c, &rlaas_scripts[st], jobs[i]->detail);
            loaded[st] = e == RLAAS_RERR_NONE ? 1 : -1;
            if (e != RLAAS_RERR_NONE)
                jobs[i]->e = e;
        }
        if (loaded[st] > 0)
            again[m++] = jobs[i];
        else if (jobs[i]->e == RLAAS_RERR_NONE)
            fail(jobs + i, 1, RLAAS_RERR_REPLY, "script could not be loaded");
    }
    if (m > 0 && c->ctx != NULL) {
        exchange(g, c, again, m);
        for (i = 0; i < m; i++) {
            if (again[i]->noscript)
                fail(again + i, 1, RLAAS_RERR_REPLY, "NOSCRIPT after loading");
        }
    }
}

/* Runs a group on one pooled connection. */
static void run_group(const group_t *g, job_t **jobs, int n)
{
    rlaas_conn_t *c;
    void *res;
    int reused, got;
    char detail[DETAIL_MAX];
    rlaas_rerr_e e;

    if (g->pl->gate != NULL &&
        rlaas_gate_enter(g->pl->gate, remaining_us(g)) != 0) {
        fail(jobs, n, RLAAS_RERR_POOL, NO_FREE_CONN);
        return;
    }
    if (apr_reslist_acquire(g->pl->list, &res) != APR_SUCCESS) {
        fail(jobs, n, RLAAS_RERR_POOL, NO_FREE_CONN);
        goto leave;
    }
    c = res;
    reused = c->ctx != NULL;
    if (!reused && (e = conn_open(g, c, detail)) != RLAAS_RERR_NONE) {
        fail(jobs, n, e, detail);
        goto out;
    }
    got = exchange(g, c, jobs, n);
    /* An idle pooled connection may have been closed by Redis (its
     * "timeout" setting, a restart) before this group: if nothing came
     * back on it, try once more on a new one. */
    if (got == 0 && reused && jobs[0]->e == RLAAS_RERR_IO) {
        if ((e = conn_open(g, c, detail)) != RLAAS_RERR_NONE) {
            fail(jobs, n, e, detail);
            goto out;
        }
        got = exchange(g, c, jobs, n);
    }
    reload_and_retry(g, c, jobs, got);
out:
    apr_reslist_release(g->pl->list, c);
leave:
    if (g->pl->gate != NULL)
        rlaas_gate_leave(g->pl->gate);
}

static void run_pipe_group(void *baton, rlaas_pipe_job_t **pjobs, int n)
{
    job_t *jobs[RLAAS_PIPE_MAX_BATCH];
    int i;

    for (i = 0; i < n; i++)
        jobs[i] = pjobs[i]->data;
    run_group(baton, jobs, n);
}

/* Logs each change of the circuit once, and keeps the gauge. */
static void circuit_event(struct rlaas_pool_t *pl, rlaas_breaker_event_e ev,
                          rlaas_rerr_e e)
{
    switch (ev) {
    case RLAAS_BREAKER_OPENED:
        rlaas_metrics_circuit(1);
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, pl->s,
                     "RLAAS0040: circuit opened after %u consecutive Redis "
                     "failures (last: %s); requests get the fail-open policy "
                     "without trying Redis for %" APR_TIME_T_FMT "ms",
                     pl->breaker.threshold, rlaas_rerr_name(e),
                     apr_time_as_msec(pl->breaker.cooldown));
        break;
    case RLAAS_BREAKER_REOPENED:
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, pl->s,
                     "RLAAS0041: circuit probe failed (%s); circuit stays "
                     "open",
                     rlaas_rerr_name(e));
        break;
    case RLAAS_BREAKER_CLOSED:
        rlaas_metrics_circuit(-1);
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, pl->s,
                     "RLAAS0042: circuit closed: Redis answers again");
        break;
    case RLAAS_BREAKER_SAME:
        break;
    }
}

rlaas_rerr_e rlaas_redis_eval(request_rec *r, rlaas_target_t *t,
                              const rlaas_call_t *call, rlaas_verdict_t *v,
                              const char **detail)
{
    struct rlaas_pool_t *pl = t->pool;
    apr_time_t now = apr_time_now();
    apr_interval_time_t budget = apr_time_from_msec(rlaas_target_timeout_ms(t));
    group_t g;
    job_t job;

    *detail = NULL;
    if (pl == NULL) {
        *detail = "no connection pool in this process";
        return RLAAS_RERR_POOL;
    }
    if (call->key_len > RLAAS_KEY_MAX) {
        *detail = "key too long";
        return RLAAS_RERR_REPLY;
    }
    if (!rlaas_breaker_allow(&pl->breaker, now)) {
        *detail = "circuit open after repeated Redis failures";
        return RLAAS_RERR_CIRCUIT;
    }
    job.call = call;
    job.v = v;
    job.e = RLAAS_RERR_NONE;
    job.detail[0] = '\0';
    g.r = r;
    g.pl = pl;
    g.deadline = now + budget;
    if (pl->pipe != NULL) {
        rlaas_pipe_job_t pj;

        pj.data = &job;
        if (rlaas_pipe_submit(pl->pipe, &pj, budget, run_pipe_group, &g) != 0)
            fail((job_t *[]){&job}, 1, RLAAS_RERR_POOL,
                 "no turn to send within the timeout");
    }
    else {
        job_t *one = &job;

        run_group(&g, &one, 1);
    }
    circuit_event(pl,
                  job.e == RLAAS_RERR_NONE
                      ? rlaas_breaker_success(&pl->breaker)
                      : rlaas_breaker_failure(&pl->breaker, apr_time_now()),
                  job.e);
    if (job.e != RLAAS_RERR_NONE)
        *detail = apr_pstrdup(r->pool, job.detail);
    return job.e;
}
