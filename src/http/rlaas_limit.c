#include "rlaas_limit.h"

#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "http_core.h"
#include "mod_core.h"
#include "util_filter.h"
#include "apr_strings.h"

#include "rlaas_authuser.h"
#include "rlaas_backend.h"
#include "rlaas_clock.h"
#include "rlaas_config.h"
#include "rlaas_headers.h"
#include "rlaas_identity.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_redis.h"
#include "rlaas_unit.h"
#include "rlaas_verdict.h"

APLOG_USE_MODULE(rlaas);

#define RLAAS_ENV_STATUS    "RLAAS_STATUS"
#define RLAAS_ENV_REMAINING "RLAAS_REMAINING"
#define RLAAS_BODY_429      "Rate limit exceeded"
#define RLAAS_FILTER_429    "RLAAS_429_TYPE"

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
    rlaas_unit_t *u;
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

/* RLAAS_STATUS and RLAAS_REMAINING of the client request so far, on the
 * request record at hand: after an internal redirect the final record is
 * the one CustomLog and mod_headers read. */
static void carry_status(request_rec *r, const rlaas_unit_t *u)
{
    if (u->status != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_STATUS, u->status);
    if (u->remaining != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_REMAINING, u->remaining);
}

static int record(const decision_t *dc, rlaas_outcome_e o, int rc)
{
    request_rec *r = dc->r;
    rlaas_unit_t *u = dc->u;

    u->status = rlaas_outcome_name(o);
    if (dc->have_verdict)
        u->remaining = num(r->pool, dc->v.remaining);
    if (rc != DECLINED) {
        u->refusal = rc;
        u->refused = r;
    }
    carry_status(r, u);
    rlaas_metrics_decision(dc->strategy, o);
    add_headers(dc);
    return rc;
}

/* The 429 goes through httpd's own error path, as any refusal does: an
 * "ErrorDocument 429" wins, "Header always" applies, no "100 Continue" is
 * sent (the status is set before anything reads the body), and nothing of
 * the resource follows. Without an ErrorDocument the body is ours, which
 * httpd would label text/html: the error filter below relabels it. */
static int refusal_response(request_rec *r, const rlaas_unit_t *u)
{
    if (u->refusal != HTTP_TOO_MANY_REQUESTS)
        return u->refusal;
    apr_table_setn(r->err_headers_out, "Retry-After", u->retry_after);
    if (ap_response_code_string(
            r, ap_index_of_response(HTTP_TOO_MANY_REQUESTS)) == NULL)
        ap_custom_response(r, HTTP_TOO_MANY_REQUESTS, RLAAS_BODY_429);
    return HTTP_TOO_MANY_REQUESTS;
}

static int deny(decision_t *dc, rlaas_outcome_e o)
{
    request_rec *r = dc->r;

    record(dc, o, HTTP_TOO_MANY_REQUESTS);
    dc->u->retry_after = num(r->pool, rlaas_retry_after_s(dc->v.retry_ms));
    return refusal_response(r, dc->u);
}

/* httpd keeps a custom response text with a leading quote. */
static int is_our_body(request_rec *r)
{
    const char *s = ap_response_code_string(
        r, ap_index_of_response(HTTP_TOO_MANY_REQUESTS));

    return s != NULL && s[0] == '"' && strcmp(s + 1, RLAAS_BODY_429) == 0;
}

static apr_status_t type_filter(ap_filter_t *f, apr_bucket_brigade *bb)
{
    ap_set_content_type(f->r, "text/plain");
    ap_remove_output_filter(f);
    return ap_pass_brigade(f->next, bb);
}

void rlaas_limit_register_filters(void)
{
    ap_register_output_filter(RLAAS_FILTER_429, type_filter, NULL,
                              AP_FTYPE_CONTENT_SET);
}

/* Runs as httpd starts an error response, before it sets text/html and
 * writes the body: the filter sees the response before its header does. */
void rlaas_limit_insert_error_filter(request_rec *r)
{
    if (r->status == HTTP_TOO_MANY_REQUESTS && is_our_body(r))
        ap_add_output_filter(RLAAS_FILTER_429, NULL, r, r->connection);
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
    return deny(dc, denied);
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

static int limit(request_rec *r, const rlaas_dir_conf_t *d, rlaas_unit_t *u)
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
    dc.u = u;
    call.strategy = dc.strategy;
    call.key = dc.key =
        rlaas_identity_key(r, sc, d, &call.key_len, &call.window_at);
    call.asking = 0;
    /* the local engine appends fixed's window number itself, by its own
     * clock, to the key as it ends before one (Redis Cluster declares it) */
    dc.key_len = call.window_at > 0 ? call.window_at : call.key_len;
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

typedef enum { PHASE_ACCESS, PHASE_HANDLER } phase_e;

/* A refusal holds for the rest of the client request, except for the
 * error document that presents it: that is a later record of the chain,
 * made by httpd's error path, which carries the refusal's status. Anything
 * else that would be served (the refused record itself, let through by
 * "Satisfy Any" or a module ahead of us; a redirect made from it) is
 * refused again. */
static int refused_again(request_rec *r, const rlaas_unit_t *u)
{
    return u->refused == r || r->status == HTTP_OK;
}

/* Whether the limit d defines is still to be decided for this client
 * request. One decided before authentication under the user name the
 * client sent is decided once more, under the verified identity, when
 * authentication did not confirm that name: a name merely claimed must not
 * stand for a request that is served. */
static int to_decide(request_rec *r, const rlaas_unit_t *u,
                     const rlaas_dir_conf_t *d, phase_e phase)
{
    rlaas_unit_limit_t *l = rlaas_unit_decided(u, d);

    if (l == NULL)
        return 1;
    if (phase != PHASE_HANDLER || l->claimed == NULL ||
        (r->user != NULL && strcmp(r->user, l->claimed) == 0))
        return 0;
    l->claimed = NULL;
    return 1;
}

/* A section keyed by the user is decided before authentication when its
 * user name can be read from the request (Basic, Digest), so that failed
 * attempts count under the name they tried; else once authentication has
 * set r->user. */
static int decide(request_rec *r, const rlaas_dir_conf_t *d, rlaas_unit_t *u,
                  int before_auth)
{
    int rc;

    if (!before_auth)
        return limit(r, d, u);
    rlaas_authuser_before_auth(r, 1);
    rc = limit(r, d, u);
    rlaas_authuser_before_auth(r, 0);
    return rc;
}

static int checkpoint(request_rec *r, phase_e phase)
{
    const rlaas_dir_conf_t *d;
    rlaas_unit_t *u;
    int rc, before_auth;

    /* Subrequests (SSI includes, a listing's look-ups, mod_dir's and
     * mod_negotiation's probes) are part of the client request that made
     * them: never counted on their own. */
    if (r->main != NULL)
        return DECLINED;
    u = rlaas_unit_find(r);
    if (u != NULL) {
        carry_status(r, u);
        if (u->refusal != 0)
            return phase == PHASE_HANDLER && refused_again(r, u)
                       ? refusal_response(r, u)
                       : DECLINED;
    }
    d = rlaas_dir_conf(r);
    if (!rlaas_dir_active(d))
        return DECLINED;
    before_auth = phase == PHASE_ACCESS && d->sources_need_user;
    if (before_auth && !rlaas_authuser_readable(r))
        return DECLINED;
    if (u == NULL)
        u = rlaas_unit_get(r);
    else if (!to_decide(r, u, d, phase))
        return DECLINED;
    if (rlaas_unit_decided(u, d) == NULL)
        rlaas_unit_add(u, d, before_auth ? rlaas_authuser_claimed(r) : NULL);
    rc = decide(r, d, u, before_auth);
    /* Under "Satisfy Any" httpd ignores an access checker's refusal and
     * asks for authentication instead: the handler hook delivers it, so
     * that a client let in by its address or its credentials alike gets
     * the 429, not a password prompt. */
    if (rc != DECLINED && phase == PHASE_ACCESS &&
        ap_satisfies(r) == SATISFY_ANY)
        return DECLINED;
    return rc;
}

int rlaas_limit_access_checker(request_rec *r)
{
    return checkpoint(r, PHASE_ACCESS);
}

int rlaas_limit_handler(request_rec *r)
{
    return checkpoint(r, PHASE_HANDLER);
}
