#include "rlaas_limit.h"

#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_core.h"
#include "apr_strings.h"

#include "rlaas_config.h"
#include "rlaas_identity.h"
#include "rlaas_log.h"
#include "rlaas_redis.h"

APLOG_USE_MODULE(rlaas);

#define RLAAS_ENV_STATUS "RLAAS_STATUS"
#define RLAAS_BODY_429   "Rate limit exceeded"

typedef enum {
    RLAAS_OUT_ALLOWED = 0,
    RLAAS_OUT_DENIED,
    RLAAS_OUT_ERROR,
    RLAAS_OUT_FAIL_OPEN
} rlaas_outcome_e;

static const char *const outcome_names[] = {"allowed", "denied", "error",
                                            "fail_open"};

/* One gate per kind of line, per child: at most one line a second. */
static rlaas_log_gate_t gate_error;
static rlaas_log_gate_t gate_denied;

static void set_status(request_rec *r, rlaas_outcome_e o)
{
    apr_table_setn(r->subprocess_env, RLAAS_ENV_STATUS, outcome_names[o]);
}

/* 429 with a plain-text body. An "ErrorDocument 429" wins: then httpd
 * builds the response as for any other error. */
static int deny(request_rec *r, const rlaas_verdict_t *v)
{
    apr_table_setn(r->err_headers_out, "Retry-After",
                   apr_psprintf(r->pool, "%" APR_INT64_T_FMT,
                                rlaas_retry_after_s(v->retry_ms)));
    if (ap_response_code_string(
            r, ap_index_of_response(HTTP_TOO_MANY_REQUESTS)) != NULL)
        return HTTP_TOO_MANY_REQUESTS;
    /* httpd's error path would send text/html; answer here instead, as a
     * handler would, after reading any request body off the connection so
     * that it can be kept alive. */
    ap_discard_request_body(r);
    r->status = HTTP_TOO_MANY_REQUESTS;
    /* As httpd does for its own error pages, so that "Header always"
     * (CORS headers, say) applies to this response too. */
    ap_run_insert_error_filter(r);
    ap_set_content_type(r, "text/plain");
    ap_set_content_length(r, sizeof(RLAAS_BODY_429) - 1);
    if (!r->header_only)
        ap_rwrite(RLAAS_BODY_429, sizeof(RLAAS_BODY_429) - 1, r);
    return DONE;
}

static void log_denied(request_rec *r, const char *key)
{
    long dropped = rlaas_log_gate_pass(&gate_denied, apr_time_now(), 1);

    if (dropped < 0 || !APLOG_R_IS_LEVEL(r, APLOG_INFO))
        return;
    ap_log_rerror(
        APLOG_MARK, APLOG_INFO, 0, r, "RLAAS0020: rate limit exceeded for %s%s",
        key,
        dropped > 0
            ? apr_psprintf(r->pool, " (%ld similar lines suppressed)", dropped)
            : "");
}

static void log_error(request_rec *r, rlaas_rerr_e e, const char *detail,
                      int fail_open)
{
    long dropped = rlaas_log_gate_pass(&gate_error, apr_time_now(), 1);

    if (dropped < 0)
        return;
    ap_log_rerror(
        APLOG_MARK, fail_open ? APLOG_WARNING : APLOG_ERR, 0, r,
        "RLAAS0021: Redis %s error: %s; request %s%s", rlaas_rerr_name(e),
        detail ? detail : "-",
        fail_open ? "allowed (RLaaSFailOpen on)"
                  : "refused with 500 (RLaaSFailOpen off)",
        dropped > 0
            ? apr_psprintf(r->pool, " (%ld similar lines suppressed)", dropped)
            : "");
}

static int limit(request_rec *r, const rlaas_dir_conf_t *d)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    rlaas_call_t call;
    rlaas_verdict_t v;
    const char *detail = NULL;
    rlaas_rerr_e e;

    call.strategy = rlaas_dir_strategy(d);
    call.key = rlaas_identity_key(r, sc, d, &call.key_len);
    call.limit = d->limit_arg;
    call.window = rlaas_dir_window_arg(d);
    e = rlaas_redis_eval(r, sc->target, &call, &v, &detail);
    if (e != RLAAS_RERR_NONE) {
        int open = rlaas_dir_fail_open(d);

        log_error(r, e, detail, open);
        set_status(r, open ? RLAAS_OUT_FAIL_OPEN : RLAAS_OUT_ERROR);
        return open ? DECLINED : HTTP_INTERNAL_SERVER_ERROR;
    }
    ap_log_rerror(APLOG_MARK, APLOG_TRACE1, 0, r,
                  "RLAAS0022: %s %s: allowed=%d remaining=%" APR_INT64_T_FMT
                  " reset=%" APR_INT64_T_FMT "ms retry=%" APR_INT64_T_FMT "ms",
                  rlaas_strategy_name(call.strategy), call.key, v.allowed,
                  v.remaining, v.reset_ms, v.retry_ms);
    if (v.allowed) {
        set_status(r, RLAAS_OUT_ALLOWED);
        return DECLINED;
    }
    log_denied(r, call.key);
    set_status(r, RLAAS_OUT_DENIED);
    return deny(r, &v);
}

/* After an internal redirect (ErrorDocument, mod_rewrite) the final request
 * is the one CustomLog reads: give it the original's status too. */
static void carry_status(request_rec *r)
{
    const char *st = apr_table_get(r->prev->subprocess_env, RLAAS_ENV_STATUS);

    if (st != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_STATUS, st);
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
