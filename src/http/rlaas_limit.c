#include "rlaas_limit.h"

#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_core.h"
#include "apr_strings.h"

#include "rlaas_backend.h"
#include "rlaas_clock.h"
#include "rlaas_config.h"
#include "rlaas_headers.h"
#include "rlaas_identity.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_redis.h"
#include "rlaas_verdict.h"

APLOG_USE_MODULE(rlaas);

#define RLAAS_ENV_STATUS    "RLAAS_STATUS"
#define RLAAS_ENV_REMAINING "RLAAS_REMAINING"
#define RLAAS_BODY_429      "Rate limit exceeded"

/* One gate per kind of line, per child: at most one line a second. */
static rlaas_log_gate_t gate_error;
static rlaas_log_gate_t gate_denied;
static rlaas_log_gate_t gate_alert;

/* What happened to one request, gathered for headers, logs and metrics. */
typedef struct {
    request_rec *r;
    const rlaas_dir_conf_t *d;
    rlaas_strategy_e strategy;
    const char *key;
    size_t key_len;
    rlaas_verdict_t v;
    int have_verdict;
} decision_t;

/* Decimal text in the request pool, without apr_psprintf's formatter. */
static const char *num(apr_pool_t *p, int64_t v)
{
    char d[21];

    return apr_pstrmemdup(p, d, rlaas_fmt_i64(d, v));
}

/* Rate-limit fields go into err_headers_out, so they reach the client on
 * whatever response follows: a static file, a proxied or CGI response, an
 * error page, or the 429. */
static void add_headers(const decision_t *dc)
{
    request_rec *r = dc->r;
    const rlaas_dir_conf_t *d = dc->d;
    rlaas_headers_e mode = rlaas_dir_headers(d);
    const char *name = d->zone != NULL ? d->zone : RLAAS_POLICY_DEFAULT;
    char buf[RLAAS_NAME_MAX + 64];

    if (mode & RLAAS_HEADERS_DRAFT) {
        rlaas_fmt_policy(buf, sizeof(buf), name, d->limit,
                         rlaas_dir_window_ms(d));
        apr_table_set(r->err_headers_out, "RateLimit-Policy", buf);
        if (dc->have_verdict) {
            rlaas_fmt_ratelimit(buf, sizeof(buf), name, &dc->v);
            apr_table_set(r->err_headers_out, "RateLimit", buf);
        }
    }
    if (mode & RLAAS_HEADERS_LEGACY) {
        apr_table_setn(r->err_headers_out, "X-RateLimit-Limit", d->limit_arg);
        if (dc->have_verdict) {
            apr_table_setn(r->err_headers_out, "X-RateLimit-Remaining",
                           num(r->pool, dc->v.remaining));
            apr_table_setn(r->err_headers_out, "X-RateLimit-Reset",
                           num(r->pool, rlaas_ms_to_s_ceil(dc->v.reset_ms)));
        }
    }
}

static int record(const decision_t *dc, rlaas_outcome_e o, int rc)
{
    request_rec *r = dc->r;

    apr_table_setn(r->subprocess_env, RLAAS_ENV_STATUS, rlaas_outcome_name(o));
    if (dc->have_verdict)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_REMAINING,
                       num(r->pool, dc->v.remaining));
    rlaas_metrics_decision(dc->strategy, o);
    add_headers(dc);
    return rc;
}

/* 429 with a plain-text body. An "ErrorDocument 429" wins: then httpd
 * builds the response as for any other error. */
static int deny(const decision_t *dc)
{
    request_rec *r = dc->r;

    apr_table_setn(r->err_headers_out, "Retry-After",
                   num(r->pool, rlaas_retry_after_s(dc->v.retry_ms)));
    if (ap_response_code_string(
            r, ap_index_of_response(HTTP_TOO_MANY_REQUESTS)) != NULL)
        return HTTP_TOO_MANY_REQUESTS;
    /* httpd's error path would send text/html; answer here instead, as a
     * handler would, after reading any request body off the connection so
     * that it can be kept alive. The status comes first: with it set, a
     * client waiting for "100 Continue" gets none, and no body is read. */
    r->status = HTTP_TOO_MANY_REQUESTS;
    ap_discard_request_body(r);
    /* As httpd does for its own error pages, so that "Header always"
     * (CORS headers, say) applies to this response too. */
    ap_run_insert_error_filter(r);
    ap_set_content_type(r, "text/plain");
    ap_set_content_length(r, sizeof(RLAAS_BODY_429) - 1);
    if (!r->header_only)
        ap_rwrite(RLAAS_BODY_429, sizeof(RLAAS_BODY_429) - 1, r);
    return DONE;
}

static const char *suppressed(request_rec *r, long dropped)
{
    return dropped > 0
               ? apr_psprintf(r->pool, " (%ld similar lines suppressed)",
                              dropped)
               : "";
}

/* Denials are logged at info ("LogLevel rlaas:info" shows them), at most
 * one line a second per child. */
static void log_denied(const decision_t *dc, int dry_run)
{
    request_rec *r = dc->r;
    long dropped;

    if (!APLOG_R_IS_LEVEL(r, APLOG_INFO))
        return;
    dropped = rlaas_log_gate_pass(&gate_denied, rlaas_clock_us(), 1);
    if (dropped < 0)
        return;
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  "RLAAS0020: rate limit exceeded for %s (%s, limit %s per "
                  "%sms)%s%s",
                  dc->key, rlaas_strategy_name(dc->strategy), dc->d->limit_arg,
                  rlaas_dir_window_arg(dc->d),
                  dry_run ? "; allowed: RLaaSDryRun on" : "",
                  suppressed(r, dropped));
}

static void log_error(const decision_t *dc, rlaas_rerr_e e, const char *detail,
                      const char *policy, int level)
{
    request_rec *r = dc->r;
    rlaas_log_gate_t *gate = level <= APLOG_ALERT ? &gate_alert : &gate_error;
    long dropped = rlaas_log_gate_pass(gate, rlaas_clock_us(), 1);

    if (dropped < 0)
        return;
    ap_log_rerror(APLOG_MARK, level, 0, r,
                  "RLAAS0021: Redis %s error: %s; request %s%s",
                  rlaas_rerr_name(e), detail ? detail : "-", policy,
                  suppressed(r, dropped));
}

/* A verdict, from either engine: allowed outcomes go on, denied ones get
 * their 429 (or pass under RLaaSDryRun). */
static int decided(decision_t *dc, rlaas_outcome_e allowed,
                   rlaas_outcome_e denied)
{
    request_rec *r = dc->r;
    const rlaas_dir_conf_t *d = dc->d;

    dc->have_verdict = 1;
    ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r,
                  "RLAAS0022: %s %s: allowed=%d remaining=%" APR_INT64_T_FMT
                  " reset=%" APR_INT64_T_FMT "ms retry=%" APR_INT64_T_FMT "ms",
                  rlaas_strategy_name(dc->strategy), dc->key, dc->v.allowed,
                  dc->v.remaining, dc->v.reset_ms, dc->v.retry_ms);
    if (dc->v.allowed)
        return record(dc, allowed, DECLINED);
    if (d->dry_run == 1) {
        log_denied(dc, 1);
        return record(dc, RLAAS_OUT_DRY_RUN_DENIED, DECLINED);
    }
    log_denied(dc, 0);
    /* headers and status first: deny() may send the response itself */
    record(dc, denied, 0);
    return deny(dc);
}

/* The local engine decides the section's call, the limit shared out among
 * divisor servers (at least 1 each). */
static rlaas_lerr_e decide_local(decision_t *dc, int divisor)
{
    rlaas_local_call_t call;
    rlaas_lerr_e e;

    call.strategy = dc->strategy;
    call.key = dc->key;
    call.key_len = dc->key_len;
    call.limit = dc->d->limit / divisor > 0 ? dc->d->limit / divisor : 1;
    call.window_ms = rlaas_dir_window_ms(dc->d);
    e = rlaas_backend_eval(dc->r, &call, &dc->v);
    if (e != RLAAS_LERR_NONE)
        rlaas_metrics_local_error(e);
    return e;
}

/* The local engine could not decide (RLaaSBackend local, or in Redis'
 * place): allowed with RLaaSFailOpen on or a dry run, else 500. */
static int local_undecided(decision_t *dc, rlaas_lerr_e e)
{
    request_rec *r = dc->r;
    int open = rlaas_dir_fail_open(dc->d) || dc->d->dry_run == 1;
    long dropped = rlaas_log_gate_pass(&gate_error, rlaas_clock_us(), 1);

    if (dropped >= 0)
        ap_log_rerror(APLOG_MARK, open ? APLOG_WARNING : APLOG_ERR, 0, r,
                      "RLAAS0063: the local engine could not decide (%s); "
                      "request %s%s",
                      rlaas_lerr_name(e), open ? "allowed" : "refused with 500",
                      suppressed(r, dropped));
    return open ? record(dc, RLAAS_OUT_FAIL_OPEN, DECLINED)
                : record(dc, RLAAS_OUT_ERROR, HTTP_INTERNAL_SERVER_ERROR);
}

/* The limiter could not decide: the section's policy says what happens. */
static int undecided(decision_t *dc, rlaas_rerr_e e, const char *detail)
{
    const rlaas_dir_conf_t *d = dc->d;
    const rlaas_server_conf_t *sc = rlaas_server_conf(dc->r->server);

    rlaas_metrics_redis_error(e);
    if (rlaas_dir_fail_local(d) &&
        decide_local(dc, rlaas_server_local_divisor(sc)) == RLAAS_LERR_NONE) {
        log_error(dc, e, detail,
                  "decided by the local engine (RLaaSFailOpen local)",
                  APLOG_WARNING);
        return decided(dc, RLAAS_OUT_LOCAL, RLAAS_OUT_LOCAL_DENIED);
    }
    if (rlaas_dir_fail_open(d)) {
        log_error(dc, e, detail, "allowed (RLaaSFailOpen on)", APLOG_WARNING);
        return record(dc, RLAAS_OUT_FAIL_OPEN, DECLINED);
    }
    if (d->dry_run == 1) {
        log_error(dc, e, detail, "allowed (RLaaSDryRun on)", APLOG_WARNING);
        return record(dc, RLAAS_OUT_FAIL_OPEN, DECLINED);
    }
    if (e == RLAAS_RERR_CIRCUIT && d->circuit_fail_open == 1) {
        log_error(dc, e, detail,
                  "allowed: RLaaSCircuitFailOpen switched this section to "
                  "fail-open while Redis keeps failing",
                  APLOG_ALERT);
        return record(dc, RLAAS_OUT_FAIL_OPEN, DECLINED);
    }
    log_error(dc, e, detail, "refused with 500 (RLaaSFailOpen off)", APLOG_ERR);
    return record(dc, RLAAS_OUT_ERROR, HTTP_INTERNAL_SERVER_ERROR);
}

static int limit(request_rec *r, const rlaas_dir_conf_t *d)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    decision_t dc;
    rlaas_call_t call;
    char detail[RLAAS_DETAIL_MAX];
    rlaas_rerr_e e;
    rlaas_lerr_e le;

    dc.r = r;
    dc.d = d;
    dc.strategy = rlaas_dir_strategy(d);
    dc.have_verdict = 0;
    call.strategy = dc.strategy;
    call.key = dc.key = rlaas_identity_key(r, sc, d, &call.key_len);
    dc.key_len = call.key_len;
    call.limit = d->limit_arg;
    call.window = rlaas_dir_window_arg(d);
    if (rlaas_server_local(sc)) {
        le = decide_local(&dc, 1);
        return le == RLAAS_LERR_NONE
                   ? decided(&dc, RLAAS_OUT_ALLOWED, RLAAS_OUT_DENIED)
                   : local_undecided(&dc, le);
    }
    if (sc->target->redis == NULL) {
        e = RLAAS_RERR_POOL;
        apr_cpystrn(detail, "no Redis engine in this process", sizeof(detail));
    }
    else {
        e = rlaas_redis_eval(sc->target->redis, &call, &dc.v, detail);
    }
    if (e != RLAAS_RERR_NONE)
        return undecided(&dc, e, detail);
    return decided(&dc, RLAAS_OUT_ALLOWED, RLAAS_OUT_DENIED);
}

/* After an internal redirect (ErrorDocument, mod_rewrite) the final request
 * is the one CustomLog reads: give it the original's status too. */
static void carry_status(request_rec *r)
{
    const char *st = apr_table_get(r->prev->subprocess_env, RLAAS_ENV_STATUS);
    const char *rem =
        apr_table_get(r->prev->subprocess_env, RLAAS_ENV_REMAINING);

    if (st != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_STATUS, st);
    if (rem != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_REMAINING, rem);
}

static int checkpoint(request_rec *r, int after_auth)
{
    const rlaas_dir_conf_t *d;

    /* One decision per client request: subrequests and internal
     * redirects are part of the request already counted. */
    if (r->main != NULL)
        return DECLINED;
    if (r->prev != NULL) {
        /* fixups run on every redirect; access checkers may be skipped */
        if (after_auth)
            carry_status(r);
        return DECLINED;
    }
    d = rlaas_dir_conf(r);
    if (!rlaas_dir_active(d) || d->sources_need_user != after_auth)
        return DECLINED;
    return limit(r, d);
}

int rlaas_limit_access_checker(request_rec *r)
{
    return checkpoint(r, 0);
}

int rlaas_limit_fixups(request_rec *r)
{
    return checkpoint(r, 1);
}
