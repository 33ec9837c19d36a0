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
#include "rlaas_identity.h"
#include "rlaas_metrics.h"
#include "rlaas_resp.h"
#include "rlaas_scripts.h"

APLOG_USE_MODULE(rlaas);

struct rlaas_pool_t {
    apr_reslist_t *list;
    const rlaas_target_t *target;
    server_rec *s; /* for the circuit's log lines */
    rlaas_breaker_t breaker;
};

/* One pooled slot. The slot lives as long as the pool; its connection is
 * opened on first use and dropped after any transport error, so a broken
 * connection is never used twice. */
typedef struct {
    redisContext *ctx;
    long timeout_us; /* socket timeout currently set on ctx */
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
    return APR_SUCCESS;
}

static void pool_create(apr_pool_t *pchild, server_rec *s, rlaas_target_t *t)
{
    struct rlaas_pool_t *pl = apr_pcalloc(pchild, sizeof(*pl));
    int max = t->pool_max > 0 ? t->pool_max : rlaas_redis_default_pool_max();
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

/* ---- one call ---- */

typedef struct {
    request_rec *r;
    const rlaas_target_t *t;
    apr_time_t deadline;
    const char *detail;
} call_ctx_t;

static long remaining_us(const call_ctx_t *cc)
{
    apr_time_t left = cc->deadline - apr_time_now();

    return left > 0 ? (long)left : 0;
}

static struct timeval to_tv(long us)
{
    struct timeval tv;

    tv.tv_sec = us / 1000000;
    tv.tv_usec = us % 1000000;
    return tv;
}

/* Keeps the socket timeout within 1 ms of what is left of the request's
 * budget, without a system call on every request. */
static int conn_budget(call_ctx_t *cc, rlaas_conn_t *c)
{
    long left = remaining_us(cc);

    if (left <= 0)
        return 0;
    if (labs(c->timeout_us - left) > 1000) {
        if (redisSetTimeout(c->ctx, to_tv(left)) != REDIS_OK)
            return 0;
        c->timeout_us = left;
    }
    return 1;
}

/* Transport failures: the connection can't be trusted any more. */
static rlaas_rerr_e transport_error(call_ctx_t *cc, rlaas_conn_t *c,
                                    int saved_errno)
{
    rlaas_rerr_e e = RLAAS_RERR_IO;

    if (c->ctx->err == REDIS_ERR_IO &&
        (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ||
         saved_errno == ETIMEDOUT || remaining_us(cc) == 0))
        e = RLAAS_RERR_TIMEOUT;
    cc->detail = apr_pstrdup(cc->r->pool, c->ctx->errstr);
    conn_drop(c);
    return e;
}

static rlaas_rerr_e reply_error(call_ctx_t *cc, const redisReply *rep)
{
    cc->detail = rep != NULL && rep->type == REDIS_REPLY_ERROR
                     ? apr_pstrndup(cc->r->pool, rep->str, rep->len)
                     : "unexpected reply";
    return RLAAS_RERR_REPLY;
}

/* AUTH and SELECT, pipelined: one round trip however many are needed. */
static rlaas_rerr_e conn_setup(call_ctx_t *cc, rlaas_conn_t *c)
{
    const rlaas_target_t *t = cc->t;
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
            return transport_error(cc, c, errno);
        if (rep->type == REDIS_REPLY_ERROR && e == RLAAS_RERR_NONE) {
            /* The first reply answers AUTH when a password is set. */
            e = (i == 0 && t->password != NULL) ? RLAAS_RERR_AUTH
                                                : RLAAS_RERR_SELECT;
            /* Redis' own text; it never repeats the password. */
            cc->detail = apr_pstrndup(cc->r->pool, rep->str, rep->len);
        }
        freeReplyObject(rep);
    }
    if (e != RLAAS_RERR_NONE)
        conn_drop(c);
    return e;
}

static rlaas_rerr_e conn_open(call_ctx_t *cc, rlaas_conn_t *c)
{
    const rlaas_target_t *t = cc->t;
    long left = remaining_us(cc);

    if (left <= 0)
        return RLAAS_RERR_TIMEOUT;
    c->ctx = t->is_unix
                 ? redisConnectUnixWithTimeout(t->host, to_tv(left))
                 : redisConnectWithTimeout(
                       t->host ? t->host : RLAAS_DEFAULT_HOST,
                       t->port ? t->port : RLAAS_DEFAULT_PORT, to_tv(left));
    if (c->ctx == NULL) {
        cc->detail = "out of memory";
        return RLAAS_RERR_CONNECT;
    }
    if (c->ctx->err) {
        cc->detail = apr_pstrdup(cc->r->pool, c->ctx->errstr);
        redisFree(c->ctx);
        c->ctx = NULL;
        return RLAAS_RERR_CONNECT;
    }
    rlaas_metrics_connection(1);
    c->timeout_us = 0;
    if (!conn_budget(cc, c)) {
        conn_drop(c);
        return RLAAS_RERR_TIMEOUT;
    }
    return conn_setup(cc, c);
}

static redisReply *command(rlaas_conn_t *c, int argc, const char **argv,
                           const size_t *lens, int *saved_errno)
{
    redisReply *rep = redisCommandArgv(c->ctx, argc, argv, lens);

    *saved_errno = errno;
    return rep;
}

/* A command already in the protocol's bytes: one write, one reply. */
static redisReply *command_raw(rlaas_conn_t *c, const char *cmd, size_t len,
                               int *saved_errno)
{
    void *rep = NULL;

    if (redisAppendFormattedCommand(c->ctx, cmd, len) != REDIS_OK ||
        redisGetReply(c->ctx, &rep) != REDIS_OK)
        rep = NULL;
    *saved_errno = errno;
    return rep;
}

/* SCRIPT LOAD after NOSCRIPT (Redis restarted, failed over or flushed). */
static rlaas_rerr_e script_load(call_ctx_t *cc, rlaas_conn_t *c,
                                const rlaas_script_t *sc)
{
    const char *argv[3] = {"SCRIPT", "LOAD", sc->body};
    size_t lens[3] = {6, 4, sc->len};
    int err_no;
    redisReply *rep;
    rlaas_rerr_e e = RLAAS_RERR_NONE;

    if (!conn_budget(cc, c))
        return RLAAS_RERR_TIMEOUT;
    rep = command(c, 3, argv, lens, &err_no);
    if (rep == NULL)
        return transport_error(cc, c, err_no);
    if (rep->type != REDIS_REPLY_STRING || rep->len != 40 ||
        memcmp(rep->str, sc->sha1, 40) != 0)
        e = reply_error(cc, rep);
    freeReplyObject(rep);
    rlaas_metrics_script_load();
    ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, cc->r,
                  "RLAAS0002: loaded script %s (%s)", sc->file,
                  e == RLAAS_RERR_NONE ? "ok" : "failed");
    return e;
}

static rlaas_rerr_e eval_once(call_ctx_t *cc, rlaas_conn_t *c,
                              const rlaas_call_t *call, rlaas_verdict_t *v)
{
    const rlaas_script_t *sc = &rlaas_scripts[call->strategy];
    char cmd[RLAAS_RESP_EVALSHA_MAX(RLAAS_KEY_MAX)];
    size_t len;
    int attempt, err_no;
    rlaas_rerr_e e = RLAAS_RERR_REPLY;

    if (call->key_len > RLAAS_KEY_MAX) {
        cc->detail = "key too long";
        return RLAAS_RERR_REPLY;
    }
    len = rlaas_resp_evalsha(cmd, sc->sha1, call->key, call->key_len,
                             call->limit, call->window);
    for (attempt = 0; attempt < 2; attempt++) {
        redisReply *rep;
        rlaas_reply_status_e st;
        apr_time_t t0;

        if (!conn_budget(cc, c))
            return RLAAS_RERR_TIMEOUT;
        t0 = apr_time_now();
        rep = command_raw(c, cmd, len, &err_no);
        if (rep == NULL)
            return transport_error(cc, c, err_no);
        rlaas_metrics_latency(apr_time_now() - t0);
        st = rlaas_reply_verdict(rep, v);
        e = st == RLAAS_REPLY_OK ? RLAAS_RERR_NONE : reply_error(cc, rep);
        /* A script's own error leaves the connection sound; any other
         * error reply (READONLY after a failover, NOAUTH, LOADING) means
         * this connection should be made again. */
        if (st == RLAAS_REPLY_ERROR && strstr(cc->detail, "script") == NULL)
            conn_drop(c);
        freeReplyObject(rep);
        if (st != RLAAS_REPLY_NOSCRIPT || attempt > 0 || c->ctx == NULL)
            break;
        e = script_load(cc, c, sc);
        if (e != RLAAS_RERR_NONE)
            break;
    }
    return e;
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

static rlaas_rerr_e eval_pooled(call_ctx_t *cc, struct rlaas_pool_t *pl,
                                const rlaas_call_t *call, rlaas_verdict_t *v)
{
    rlaas_conn_t *c;
    rlaas_rerr_e e;
    int reused;
    void *res;

    if (apr_reslist_acquire(pl->list, &res) != APR_SUCCESS) {
        cc->detail = "no pooled connection became free in time";
        return RLAAS_RERR_POOL;
    }
    c = res;
    reused = c->ctx != NULL;
    e = reused ? RLAAS_RERR_NONE : conn_open(cc, c);
    if (e == RLAAS_RERR_NONE) {
        e = eval_once(cc, c, call, v);
        /* An idle pooled connection may have been closed by Redis (its
         * "timeout" setting, a restart): try once more on a new one. */
        if (e == RLAAS_RERR_IO && reused) {
            e = conn_open(cc, c);
            if (e == RLAAS_RERR_NONE)
                e = eval_once(cc, c, call, v);
        }
    }
    apr_reslist_release(pl->list, c);
    return e;
}

rlaas_rerr_e rlaas_redis_eval(request_rec *r, rlaas_target_t *t,
                              const rlaas_call_t *call, rlaas_verdict_t *v,
                              const char **detail)
{
    struct rlaas_pool_t *pl = t->pool;
    call_ctx_t cc;
    rlaas_rerr_e e;
    apr_time_t now = apr_time_now();

    *detail = NULL;
    if (pl == NULL) {
        *detail = "no connection pool in this process";
        return RLAAS_RERR_POOL;
    }
    if (!rlaas_breaker_allow(&pl->breaker, now)) {
        *detail = "circuit open after repeated Redis failures";
        return RLAAS_RERR_CIRCUIT;
    }
    cc.r = r;
    cc.t = t;
    cc.detail = NULL;
    cc.deadline = now + apr_time_from_msec(rlaas_target_timeout_ms(t));
    e = eval_pooled(&cc, pl, call, v);
    circuit_event(pl,
                  e == RLAAS_RERR_NONE
                      ? rlaas_breaker_success(&pl->breaker)
                      : rlaas_breaker_failure(&pl->breaker, apr_time_now()),
                  e);
    *detail = cc.detail;
    return e;
}
