#include "rlaas_limit.h"

#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "http_core.h"
#include "mod_core.h"
#include "util_filter.h"
#include "apr_strings.h"

#include "rlaas_admin_tally.h"
#include "rlaas_admin_zones.h"
#include "rlaas_authuser.h"
#include "rlaas_clock.h"
#include "rlaas_concurrency.h"
#include "rlaas_config.h"
#include "rlaas_engine.h"
#include "rlaas_headers.h"
#include "rlaas_identity.h"
#include "rlaas_lease.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_outcome.h"
#include "rlaas_policies.h"
#include "rlaas_policy.h"
#include "rlaas_settle.h"
#include "rlaas_tenant.h"
#include "rlaas_unit.h"
#include "rlaas_verdict.h"

APLOG_USE_MODULE(rlaas);

#define RLAAS_ENV_STATUS    "RLAAS_STATUS"
#define RLAAS_ENV_REMAINING "RLAAS_REMAINING"
#define RLAAS_ENV_POLICY    "RLAAS_POLICY"
#define RLAAS_BODY_429      "Rate limit exceeded"
#define RLAAS_FILTER_429    "RLAAS_429_TYPE"
#define RLAAS_QU_BYTES      ";qu=\"content-bytes\""

/* One gate per kind of line, per child: at most one line a second. */
static rlaas_log_gate_t gate_error;
static rlaas_log_gate_t gate_denied;
static rlaas_log_gate_t gate_alert;

/* One decision: the policies a request meets at one point, decided
 * together in one call (a: them and the ban's record; a.ban_v the ban's
 * verdict: remaining 1 refused by a ban, 2 banned now). */
typedef struct {
    request_rec *r;
    const rlaas_dir_conf_t *d;
    rlaas_unit_t *u;
    rlaas_item_t *it; /* the policies gathered, those to decide first */
    int n;
    rlaas_engine_ask_t a;
    const rlaas_engine_t *by; /* the engine that decided, or NULL */
    rlaas_outcome_e out;      /* as record() counted it */
} decision_t;

/* What the client request has decided so far, as the response shows it:
 * the index of the shown policy (rlaas_policy_pick), or -1 if none has a
 * verdict. A request's two checks fit on the stack; internal redirects
 * through other sections may show more. */
static int shown_pick(request_rec *r, const rlaas_unit_t *u)
{
    const rlaas_unit_shown_t *sh = (const rlaas_unit_shown_t *)u->shown->elts;
    rlaas_policy_outcome_t room_o[2 * RLAAS_POLICIES_MAX], *o = room_o;
    int room_at[2 * RLAAS_POLICIES_MAX], *at = room_at, n = 0, i;
    rlaas_pick_e why;

    /* the usual request: one policy, decided */
    if (u->shown->nelts == 1)
        return sh[0].have_v ? 0 : -1;
    if (u->shown->nelts > 2 * RLAAS_POLICIES_MAX) {
        o = apr_palloc(r->pool, sizeof(*o) * (size_t)u->shown->nelts);
        at = apr_palloc(r->pool, sizeof(*at) * (size_t)u->shown->nelts);
    }
    for (i = 0; i < u->shown->nelts; i++) {
        if (!sh[i].have_v)
            continue;
        o[n].v = sh[i].v;
        o[n].dry_run = sh[i].dry_run;
        at[n++] = i;
    }
    return n > 0 ? at[rlaas_policy_pick(o, n, &why)] : -1;
}

/* One item of the fields: a name and two numbers */
#define ITEM_ROOM (RLAAS_NAME_MAX + 64)

/* RateLimit-Policy: every policy decided; RateLimit: the shown one. Each
 * written once, into the request's pool, where the table keeps it. */
static void draft_headers(request_rec *r, const rlaas_unit_t *u, int pick)
{
    const rlaas_unit_shown_t *sh = (const rlaas_unit_shown_t *)u->shown->elts;
    const size_t each = ITEM_ROOM + sizeof(RLAAS_QU_BYTES) + 2;
    char *list, *one;
    size_t n = 0, len;
    int i;

    if (u->shown->nelts == 1 && sh[0].field != NULL)
        /* the usual response: one policy, its item written at merge */
        apr_table_setn(r->err_headers_out, "RateLimit-Policy",
                       sh[0].field->text);
    else if (u->shown->nelts > 0) {
        list = apr_palloc(r->pool, each * (size_t)u->shown->nelts);
        for (i = 0; i < u->shown->nelts; i++) {
            if (i > 0) {
                memcpy(list + n, ", ", 2);
                n += 2;
            }
            if (sh[i].field != NULL) {
                len = sh[i].field->len;
                memcpy(list + n, sh[i].field->text, len);
            }
            else
                len = (size_t)rlaas_fmt_policy(list + n, ITEM_ROOM, sh[i].name,
                                               sh[i].limit, sh[i].window_ms);
            n += len < ITEM_ROOM ? len : ITEM_ROOM - 1;
            /* the draft's quota unit parameter: requests are its default */
            if (sh[i].bytes) {
                memcpy(list + n, RLAAS_QU_BYTES, sizeof(RLAAS_QU_BYTES) - 1);
                n += sizeof(RLAAS_QU_BYTES) - 1;
            }
        }
        list[n] = '\0';
        apr_table_setn(r->err_headers_out, "RateLimit-Policy", list);
    }
    if (pick >= 0) {
        one = apr_palloc(r->pool, ITEM_ROOM);
        rlaas_fmt_ratelimit(one, ITEM_ROOM, sh[pick].name, &sh[pick].v);
        apr_table_setn(r->err_headers_out, "RateLimit", one);
    }
}

static void legacy_headers(request_rec *r, const rlaas_unit_t *u, int pick)
{
    const rlaas_unit_shown_t *sh = (const rlaas_unit_shown_t *)u->shown->elts;
    int i = pick >= 0 ? pick : u->shown->nelts - 1;

    if (i < 0)
        return;
    apr_table_setn(r->err_headers_out, "X-RateLimit-Limit",
                   rlaas_num_text(r->pool, sh[i].limit));
    if (pick < 0)
        return;
    apr_table_setn(r->err_headers_out, "X-RateLimit-Remaining",
                   rlaas_num_text(r->pool, sh[i].v.remaining));
    apr_table_setn(
        r->err_headers_out, "X-RateLimit-Reset",
        rlaas_num_text(r->pool, rlaas_ms_to_s_ceil(sh[i].v.reset_ms)));
}

/* Rate-limit fields go into err_headers_out, so they reach the client on
 * whatever response follows: a static file, a proxied or CGI response, an
 * error page, or the 429. They tell of every policy this client request
 * decided, RateLimit and the legacy fields of the one closest to its limit
 * (or the denial with the longest wait). */
static void add_headers(const decision_t *dc, int pick)
{
    rlaas_headers_e mode = dc->d->use.headers;

    if (mode & RLAAS_HEADERS_DRAFT)
        draft_headers(dc->r, dc->u, pick);
    if (mode & RLAAS_HEADERS_LEGACY)
        legacy_headers(dc->r, dc->u, pick);
}

/* RLAAS_STATUS, RLAAS_REMAINING and RLAAS_POLICY of the client request so
 * far, on the request record at hand: after an internal redirect the final
 * record is the one CustomLog and mod_headers read. */
static void carry_status(request_rec *r, const rlaas_unit_t *u)
{
    if (u->status != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_STATUS, u->status);
    if (u->remaining != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_REMAINING, u->remaining);
    if (u->policy != NULL)
        apr_table_setn(r->subprocess_env, RLAAS_ENV_POLICY, u->policy);
}

/* The item's RateLimit-Policy item as its merge wrote it, if it tells of
 * what sh shows (a policy merged with another of one counter shows the
 * lower limit), else NULL: written per response. */
static const rlaas_policy_field_t *written(const rlaas_item_t *it,
                                           const rlaas_unit_shown_t *sh)
{
    const rlaas_policy_field_t *f = it->field;

    return f != NULL && !sh->bytes && f->limit == sh->limit &&
                   f->window_ms == sh->window_ms &&
                   strcmp(f->name, sh->name) == 0
               ? f
               : NULL;
}

/* The decision's policies join what the response shows; one decided
 * again (under the verified user) takes its own place. */
static void remember(const decision_t *dc, int have_v)
{
    apr_array_header_t *shown = dc->u->shown;
    int i, j;

    for (i = 0; i < dc->n; i++) {
        const rlaas_item_t *it = &dc->it[i];
        rlaas_unit_shown_t *sh = (rlaas_unit_shown_t *)shown->elts;
        /* bytes are shown as bytes, whatever unit they are counted in */
        int64_t k = it->bytes_unit > 0 ? it->bytes_unit : 1;

        /* requests in flight are no quota of a window: not in the
         * RateLimit fields */
        if (it->conc)
            continue;
        for (j = 0; j < shown->nelts; j++) {
            if (strcmp(sh[j].name, it->name) == 0 &&
                sh[j].limit == it->call.limit * k)
                break;
        }
        sh = j < shown->nelts ? &sh[j] : apr_array_push(shown);
        sh->name = it->name;
        sh->limit = it->call.limit * k;
        sh->window_ms = it->call.window_ms;
        sh->v = it->v;
        sh->v.remaining *= k;
        sh->dry_run = it->dry_run;
        sh->have_v = have_v;
        sh->bytes = it->bytes_unit > 0;
        sh->field = written(it, sh);
    }
}

/* Each policy's row: allowed when the request was, denied (or would have
 * been, in a dry run) where it denied; a policy that would have allowed a
 * request another denied is not counted. The local engine's verdicts in
 * Redis' place count as its own (local, local_denied). */
static void count_policies(const decision_t *dc, rlaas_outcome_e o)
{
    int local = o == RLAAS_OUT_LOCAL || o == RLAAS_OUT_LOCAL_DENIED, i;

    for (i = 0; i < dc->n; i++) {
        const rlaas_item_t *it = &dc->it[i];

        if (it->conc) { /* metrics: the concurrency counters */
            if (o == RLAAS_OUT_ERROR || o == RLAAS_OUT_FAIL_OPEN)
                continue; /* nothing was decided */
            if (!it->v.allowed && !it->dry_run)
                rlaas_admin_note(dc->r, dc->d, it, 1); /* the console */
            else if (it->v.allowed && o != RLAAS_OUT_DENIED &&
                     o != RLAAS_OUT_LOCAL_DENIED)
                rlaas_admin_note(dc->r, dc->d, it, 0);
            continue;
        }
        if (o == RLAAS_OUT_ERROR || o == RLAAS_OUT_FAIL_OPEN)
            rlaas_metrics_policy(it->metric, o);
        else if (!it->v.allowed) {
            rlaas_metrics_policy(it->metric, it->dry_run
                                                 ? RLAAS_OUT_DRY_RUN_DENIED
                                             : local ? RLAAS_OUT_LOCAL_DENIED
                                                     : RLAAS_OUT_DENIED);
            if (!it->dry_run)
                rlaas_admin_note(dc->r, dc->d, it, 1); /* the console */
        }
        else if (o != RLAAS_OUT_DENIED && o != RLAAS_OUT_LOCAL_DENIED) {
            rlaas_metrics_policy(it->metric,
                                 local ? RLAAS_OUT_LOCAL : RLAAS_OUT_ALLOWED);
            rlaas_admin_note(dc->r, dc->d, it, 0); /* the console */
        }
    }
}

/* The decision's outcome into the unit, the environment, the metrics and
 * the header fields. shown: the decision's item the request is counted
 * under (its strategy). */
static int record(decision_t *dc, rlaas_outcome_e o, int rc, int have_v,
                  int shown)
{
    request_rec *r = dc->r;
    rlaas_unit_t *u = dc->u;
    const rlaas_unit_shown_t *sh;
    int pick;

    dc->out = o;
    remember(dc, have_v);
    pick = shown_pick(r, u);
    u->status = rlaas_outcome_name(o);
    if (pick >= 0) {
        sh = &((const rlaas_unit_shown_t *)u->shown->elts)[pick];
        u->remaining = rlaas_num_text(r->pool, sh->v.remaining);
        u->policy = sh->name;
    }
    if (rc != DECLINED) {
        u->refusal = rc;
        u->refused = r;
    }
    carry_status(r, u);
    rlaas_metrics_decision(
        dc->n > 0 ? dc->it[shown].call.strategy : RLAAS_DEFAULT_STRATEGY, o);
    count_policies(dc, o);
    add_headers(dc, pick);
    return rc;
}

/* The 429 goes through httpd's own error path, as any refusal does: an
 * "ErrorDocument 429" wins, "Header always" applies, no "100 Continue" is
 * sent (the status is set before anything reads the body), and nothing of
 * the resource follows. Without an ErrorDocument the body is ours, which
 * httpd would label text/html: the error filter below relabels it. */
static int refusal_response(request_rec *r, const rlaas_unit_t *u)
{
    /* RLaaSConcurrencyStatus 503: httpd's own page, or an ErrorDocument */
    if (u->refusal == HTTP_SERVICE_UNAVAILABLE && u->retry_after != NULL)
        apr_table_setn(r->err_headers_out, "Retry-After", u->retry_after);
    if (u->refusal != HTTP_TOO_MANY_REQUESTS)
        return u->refusal;
    apr_table_setn(r->err_headers_out, "Retry-After", u->retry_after);
    if (ap_response_code_string(
            r, ap_index_of_response(HTTP_TOO_MANY_REQUESTS)) == NULL)
        ap_custom_response(r, HTTP_TOO_MANY_REQUESTS, RLAAS_BODY_429);
    return HTTP_TOO_MANY_REQUESTS;
}

/* Retry-After: the longest wait of the policies that denied (the shown
 * one: rlaas_policy_pick). o: denied, or local_denied. */
static int deny(decision_t *dc, int shown, rlaas_outcome_e o)
{
    request_rec *r = dc->r;
    int i;

    for (i = 0; i < dc->n; i++) {
        if (dc->it[i].conc && !dc->it[i].v.allowed && !dc->it[i].dry_run)
            rlaas_metrics_outcome(RLAAS_METRIC_CONC_REFUSED);
    }
    /* no slot: the status the section chose (a rate limit's denial, if
     * one is shown, says 429) */
    record(dc, o,
           dc->it[shown].conc ? dc->d->use.conc_status : HTTP_TOO_MANY_REQUESTS,
           1, shown);
    dc->u->retry_after =
        rlaas_num_text(r->pool, rlaas_retry_after_s(dc->it[shown].v.retry_ms));
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
    return rlaas_log_suppressed(apr_palloc(r->pool, RLAAS_LOG_SUPPRESSED_MAX),
                                RLAAS_LOG_SUPPRESSED_MAX, dropped);
}

/* Denials are logged at info ("LogLevel rlaas:info" shows them), at most
 * one line a second per child. */
static void log_denied(const decision_t *dc, const rlaas_item_t *it,
                       int dry_run)
{
    request_rec *r = dc->r;
    long dropped;

    if (!APLOG_R_IS_LEVEL(r, APLOG_INFO))
        return;
    dropped = rlaas_log_gate_pass(&gate_denied, rlaas_clock_us(), 1);
    if (dropped < 0)
        return;
    ap_log_rerror(
        APLOG_MARK, APLOG_INFO, 0, r,
        "RLAAS0020: rate limit exceeded for %s (policy %s: %s, "
        "limit %" APR_INT64_T_FMT " per %" APR_INT64_T_FMT "ms)%s%s",
        it->call.key, it->name, rlaas_strategy_name(it->call.strategy),
        it->call.limit, it->call.window_ms,
        dry_run ? "; allowed: RLaaSDryRun on" : "", suppressed(r, dropped));
}

static void log_error(const decision_t *dc, const char *tag, const char *kind,
                      const char *detail, const char *policy, int level)
{
    request_rec *r = dc->r;
    rlaas_log_gate_t *gate = level <= APLOG_ALERT ? &gate_alert : &gate_error;
    long dropped = rlaas_log_gate_pass(gate, rlaas_clock_us(), 1);

    if (dropped < 0)
        return;
    ap_log_rerror(APLOG_MARK, level, 0, r, "%s: %s error: %s; request %s%s",
                  tag, kind, detail && detail[0] ? detail : "-", policy,
                  suppressed(r, dropped));
}

/* Whether d's settings let a request through that the limiter could not
 * decide, and why (NULL: they don't); dry: whether RLaaSDryRun counts. */
static const char *lets_through(const rlaas_dir_conf_t *d, int circuit, int dry,
                                int *level)
{
    *level = APLOG_WARNING;
    if (d->use.fail == RLAAS_FAIL_OPEN)
        return "allowed (RLaaSFailOpen on)";
    if (dry && d->dry_run == 1)
        return "allowed (RLaaSDryRun on)";
    if (circuit && d->circuit_fail_open == 1) {
        *level = APLOG_ALERT;
        return "allowed: RLaaSCircuitFailOpen switched this section to "
               "fail-open while Redis keeps failing";
    }
    return NULL;
}

/* Whether the request goes through all the same, and why (NULL: it
 * doesn't): the section's failure policy, and where an enforced policy
 * takes part, the host's as well (a .htaccess can't fail it open, a dry
 * run doesn't count). */
static const char *open_anyway(const decision_t *dc, int circuit, int *level)
{
    const char *why = lets_through(dc->d, circuit, 1, level);
    int level2, i, enforced = 0;

    for (i = 0; i < dc->n; i++)
        enforced |= dc->it[i].enforced;
    if (why != NULL && enforced &&
        lets_through(rlaas_server_dir_conf(dc->r), circuit, 0, &level2) == NULL)
        why = NULL;
    return why;
}

static void trace(const decision_t *dc)
{
    int i;

    for (i = 0; i < dc->n; i++) {
        const rlaas_item_t *it = &dc->it[i];

        ap_log_rerror(
            APLOG_MARK, APLOG_TRACE1, 0, dc->r,
            "RLAAS0022: %s %s %s: allowed=%d remaining=%" APR_INT64_T_FMT
            " reset=%" APR_INT64_T_FMT "ms retry=%" APR_INT64_T_FMT "ms",
            it->name, rlaas_strategy_name(it->call.strategy), it->call.key,
            it->v.allowed, it->v.remaining, it->v.reset_ms, it->v.retry_ms);
    }
}

/* ---- RLaaSBan ---- */

/* Whether a ban can exist for d's own limit though d does not ban: some
 * section of the configuration bans under the same key (prefix,
 * namespace, zone, sources), or d's own limit is a tenant's (counted in
 * its namespace: a .htaccess may ban
 * under it, unknown to the server's configuration). Free otherwise. */
static int ban_honoured(request_rec *r, const rlaas_server_conf_t *sc,
                        const rlaas_dir_conf_t *d)
{
    return d->ns != NULL ||
           rlaas_admin_zones_banned(r->pool, rlaas_server_prefix(sc), d);
}

/* The ban's record goes with the section's own limit (not a dry run):
 * same identity, same zone, ":ban" for the strategy's suffix. A section
 * that bans reads and starts bans; one whose own limit shares the key of
 * one that bans only reads them (factor 0: RLAAS_BAN_READ): every section
 * sharing the zone honours a ban. Called with the key built as the own
 * limit's was (before authentication too: the user name tried), so the
 * ban follows the section's identity. */
static void ban_prepare(decision_t *dc)
{
    request_rec *r = dc->r;
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    rlaas_identity_spec_t spec;
    size_t window_at;
    int i, own = 0;

    dc->a.ban_key = NULL;
    if (dc->n >= RLAAS_POLICIES_MAX)
        return;
    for (i = 0; i < dc->n && !own; i++)
        if (dc->it[i].p == NULL && !dc->it[i].dry_run && !dc->it[i].conc)
            own = i + 1;
    if (!own)
        return;
    if (!rlaas_outcome_ban(dc->d, &dc->a.ban)) {
        if (!ban_honoured(r, sc, dc->d))
            return;
        dc->a.ban.length_ms = dc->a.ban.max_ms = RLAAS_BAN_MS_MAX;
        dc->a.ban.factor = RLAAS_BAN_READ;
    }
    /* only the section's own limit bans: a policy keyed otherwise (an
     * enforced floor per API key, say) denying must not ban this identity */
    dc->a.ban_own = own;
    spec.prefix = rlaas_server_prefix(sc);
    spec.zone = dc->d->zone;
    spec.ns = dc->d->ns;
    spec.sources = dc->d->sources;
    spec.strategy = RLAAS_BAN;
    spec.window_ms = 0;
    spec.periods = NULL;
    dc->a.ban_key =
        rlaas_identity_key(r, sc, &spec, &dc->a.ban_key_len, &window_at);
    if (dc->a.ban_key_len == 0)
        dc->a.ban_key = NULL;
    else
        dc->a.with |= RLAAS_LEASE_WITH_BAN;
}

/* A ban started by this denial: Retry-After and the RateLimit fields say
 * when it ends. */
static void ban_started(decision_t *dc)
{
    int64_t len = dc->a.ban_v.retry_ms;
    long dropped;
    int i;

    if (dc->a.ban_key == NULL || dc->a.ban_v.remaining != 2)
        return;
    for (i = 0; i < dc->n; i++) {
        rlaas_verdict_t *v = &dc->it[i].v;

        if (v->allowed || dc->it[i].dry_run)
            continue;
        v->remaining = 0;
        v->retry_ms = v->retry_ms > len ? v->retry_ms : len;
        v->reset_ms = v->reset_ms > len ? v->reset_ms : len;
    }
    rlaas_metrics_outcome(RLAAS_METRIC_BANS);
    /* at info, at most one line a second per child, as denials */
    if (!APLOG_R_IS_LEVEL(dc->r, APLOG_INFO))
        return;
    dropped = rlaas_log_gate_pass(&gate_denied, rlaas_clock_us(), 1);
    if (dropped >= 0)
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, dc->r,
                      "RLAAS0101: %s banned for %" APR_INT64_T_FMT
                      "ms (RLaaSBan)%s",
                      dc->a.ban_key, len, suppressed(dc->r, dropped));
}

/* Refused by a ban: nothing was decided; RLAAS_STATUS says banned. */
static int banned(decision_t *dc, int shown, rlaas_outcome_e denied)
{
    int rc = deny(dc, shown, denied);

    dc->u->status = "banned";
    carry_status(dc->r, dc->u);
    rlaas_metrics_outcome(RLAAS_METRIC_BAN_REFUSALS);
    return rc;
}

/* The verdicts, from either engine: the request is refused where a policy
 * that counts denied (the shown one gives Retry-After), else it goes on,
 * counted as allowed or denied by that engine. */
static int decided(decision_t *dc, rlaas_outcome_e allowed,
                   rlaas_outcome_e denied)
{
    rlaas_policy_outcome_t o[RLAAS_POLICIES_MAX];
    rlaas_pick_e why;
    int i, shown;

    trace(dc);
    ban_started(dc);
    for (i = 0; i < dc->n; i++) {
        o[i].v = dc->it[i].v;
        o[i].dry_run = dc->it[i].dry_run;
    }
    shown = rlaas_policy_pick(o, dc->n, &why);
    switch (why) {
    case RLAAS_PICK_DENIED:
        if (dc->a.ban_key != NULL && dc->a.ban_v.remaining == 1)
            return banned(dc, shown, denied);
        log_denied(dc, &dc->it[shown], 0);
        return deny(dc, shown, denied);
    case RLAAS_PICK_DRY_RUN_DENIED:
        log_denied(dc, &dc->it[shown], 1);
        return record(dc, RLAAS_OUT_DRY_RUN_DENIED, DECLINED, 1, shown);
    case RLAAS_PICK_ALLOWED:
        break;
    }
    return record(dc, allowed, DECLINED, 1, shown);
}

/* The engine could not decide (f says why; NULL: no engine was asked,
 * why: the reason): where the section says RLaaSFailOpen local, the
 * engine's stand-in decides in its place; else the failure policy says
 * what happens (open_anyway). */
static int undecided(decision_t *dc, const rlaas_engine_t *en,
                     rlaas_engine_fault_t *f, const char *why)
{
    const char *tag = f != NULL ? f->tag : "RLAAS0021";
    const char *kind = f != NULL ? f->kind : "limit";
    const char *detail = f != NULL ? f->detail : why;
    rlaas_engine_fault_t f2;
    int level;

    if (en != NULL && en->stand_in != NULL &&
        dc->d->use.fail == RLAAS_FAIL_LOCAL &&
        en->stand_in->decide(dc->r, &dc->a, &f2)) {
        log_error(dc, tag, kind, detail,
                  "decided by the local engine (RLaaSFailOpen local)",
                  APLOG_WARNING);
        dc->by = en->stand_in;
        return decided(dc, RLAAS_OUT_LOCAL, RLAAS_OUT_LOCAL_DENIED);
    }
    if ((why = open_anyway(dc, f != NULL && f->circuit, &level)) != NULL) {
        log_error(dc, tag, kind, detail, why, level);
        return record(dc, RLAAS_OUT_FAIL_OPEN, DECLINED, 0, 0);
    }
    log_error(dc, tag, kind, detail, "refused with 500 (RLaaSFailOpen off)",
              APLOG_ERR);
    return record(dc, RLAAS_OUT_ERROR, HTTP_INTERNAL_SERVER_ERROR, 0, 0);
}

/* Every policy of the decision, and the ban's record, in one call to the
 * server's engine. */
static int limit(decision_t *dc)
{
    const rlaas_engine_t *en = rlaas_engine_of(dc->r->server);
    rlaas_engine_fault_t f;

    dc->a.d = dc->d;
    dc->a.it = dc->it;
    dc->a.n = dc->n;
    if (!en->decide(dc->r, &dc->a, &f))
        return undecided(dc, en, &f, NULL);
    dc->by = en;
    return decided(dc, RLAAS_OUT_ALLOWED, RLAAS_OUT_DENIED);
}

/* PHASE_TRACE: a TRACE, which httpd answers in map_to_storage, before
 * any access checker, authentication or handler: everything is decided
 * there and then (rlaas_trace.c). */
typedef enum { PHASE_ACCESS, PHASE_HANDLER, PHASE_TRACE } phase_e;

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

/* Whether a policy is still to be decided for this client request. One
 * decided before authentication under the user name the client sent is
 * decided once more, under the verified identity, when authentication did
 * not confirm that name: a name merely claimed must not stand for a
 * request that is served. */
static int to_decide(request_rec *r, const rlaas_unit_t *u,
                     const rlaas_dir_conf_t *d, const rlaas_item_t *it,
                     phase_e phase)
{
    rlaas_unit_limit_t *l =
        u ? rlaas_unit_decided(u, it->p, d, it->conc) : NULL;

    if (l == NULL)
        return 1;
    if (phase != PHASE_HANDLER || l->claimed == NULL ||
        rlaas_authuser_confirms(r, l->claimed))
        return 0;
    l->claimed = NULL;
    return 1;
}

/* The policies to decide at this point: all of them but those decided
 * already, and, before authentication, those keyed by a user that only
 * authentication can tell (decided in the handler, once it has). A policy
 * keyed by the user is decided before authentication when its user name
 * can be read from the request (Basic, Digest), so that failed attempts
 * count under the name they tried. Returns 1 if one of them is keyed by
 * a user read so. */
static int select_items(decision_t *dc, rlaas_item_t *all, int n, phase_e phase)
{
    request_rec *r = dc->r;
    int readable = phase != PHASE_HANDLER && rlaas_authuser_readable(r);
    int before_auth = 0, i;

    /* kept in place, moved down past those left out: the usual request
     * decides all it gathered and copies nothing */
    dc->it = all;
    dc->n = 0;
    for (i = 0; i < n; i++) {
        if (phase == PHASE_ACCESS && all[i].need_user && !readable)
            continue;
        if (!to_decide(r, dc->u, dc->d, &all[i], phase))
            continue;
        before_auth |= phase != PHASE_HANDLER && all[i].need_user && readable;
        if (dc->n != i)
            all[dc->n] = all[i];
        dc->n++;
    }
    return before_auth;
}

/* The engine that charged an admitted decision (its slots held, its
 * charges settled after the response), or NULL: refused, or let through
 * undecided. */
static const rlaas_engine_t *charged_by(const decision_t *dc)
{
    switch (dc->out) {
    case RLAAS_OUT_ALLOWED:
    case RLAAS_OUT_DRY_RUN_DENIED:
    case RLAAS_OUT_LOCAL:
        return dc->by;
    default:
        return NULL;
    }
}

static int decide(decision_t *dc, int before_auth)
{
    request_rec *r = dc->r;
    const rlaas_engine_t *en;
    rlaas_settle_t *pd[2];
    const char *err;
    int i, rc;

    for (i = 0; i < dc->n; i++) {
        if (rlaas_unit_decided(dc->u, dc->it[i].p, dc->d, dc->it[i].conc) ==
            NULL)
            rlaas_unit_add(dc->u, dc->it[i].p, dc->d, dc->it[i].conc,
                           before_auth && dc->it[i].need_user
                               ? rlaas_authuser_claimed(r)
                               : NULL);
    }
    if (before_auth)
        rlaas_authuser_before_auth(r, 1);
    err = rlaas_policies_prepare(r, dc->d, dc->it, &dc->n);
    if (err == NULL)
        ban_prepare(dc);
    if (before_auth)
        rlaas_authuser_before_auth(r, 0);
    if (err != NULL)
        return undecided(dc, NULL, NULL, err);
    pd[0] = rlaas_settle_prepare(r, dc->d, dc->it, dc->n, 0);
    pd[1] = rlaas_settle_prepare(r, dc->d, dc->it, dc->n, 1);
    rc = limit(dc);
    if (rc == DECLINED && (en = charged_by(dc)) != NULL) {
        /* admitted: its slots held until httpd is done with the request */
        rlaas_concurrency_hold(r, dc->it, dc->n, en);
        /* served: its charges settled once the response is known */
        for (i = 0; i < 2; i++)
            rlaas_settle_keep(r, dc->u, pd[i], dc->it, en);
    }
    return rc;
}

/* The section's configuration can't be decided as it stands (more
 * policies than one call decides, a tenant's limit out of its host's
 * bounds): a configuration error, 500 whatever the section's failure
 * policy or dry run says, once the host's enforced policies (decided
 * before) have let the request through. Told once a second. */
static int misconfigured(decision_t *dc, const char *why)
{
    request_rec *r = dc->r;
    long dropped = rlaas_log_gate_pass(&gate_error, rlaas_clock_us(), 1);

    if (dropped >= 0)
        ap_log_rerror(
            APLOG_MARK, APLOG_ERR, 0, r,
            "RLAAS0130: configuration error for %.256s: %s; "
            "refused with 500 (the host's enforced policies "
            "decided first)%s",
            ap_escape_logitem(r->pool, r->filename ? r->filename : r->uri), why,
            suppressed(r, dropped));
    dc->n = 0;
    return record(dc, RLAAS_OUT_ERROR, HTTP_INTERNAL_SERVER_ERROR, 0, 0);
}

#define TOO_MANY                                                               \
    "more than 8 policies apply here (RLaaSEnforce, RLaaSApply in the "        \
    "sections and .htaccess files down the tree, and the section's own "       \
    "limit)"

/* The policies of this request, or, where the section is misconfigured
 * (*why), the host's enforced ones alone. */
static int gather(request_rec *r, const rlaas_dir_conf_t *d, rlaas_item_t *all,
                  const char **why)
{
    int n = rlaas_policies_gather(r, d, all);

    *why = n < 0 ? TOO_MANY : n > 0 ? rlaas_tenant_bounds(r, d) : NULL;
    return *why != NULL ? rlaas_policies_enforced(r, d, all) : n;
}

static int checkpoint(request_rec *r, phase_e phase)
{
    rlaas_item_t all[RLAAS_POLICIES_MAX];
    decision_t dc;
    const char *misconf;
    int n, rc = DECLINED, before_auth;

    /* Subrequests (SSI includes, a listing's look-ups, mod_dir's and
     * mod_negotiation's probes) are part of the client request that made
     * them: never counted on their own. */
    if (r->main != NULL)
        return DECLINED;
    dc.r = r;
    dc.a.ban_key = NULL;
    dc.a.with = 0;
    dc.by = NULL;
    dc.out = RLAAS_OUT_ERROR;
    memset(&dc.a.ban_v, 0, sizeof(dc.a.ban_v));
    dc.u = rlaas_unit_find(r);
    if (dc.u != NULL) {
        /* the access checker decided everything for this very record */
        if (phase == PHASE_HANDLER && dc.u->refusal == 0 &&
            dc.u->checked == r && dc.u->checked_conf == r->per_dir_config &&
            !dc.u->left_for_handler)
            return DECLINED;
        carry_status(r, dc.u);
        if (dc.u->refusal != 0)
            return phase == PHASE_HANDLER && refused_again(r, dc.u)
                       ? refusal_response(r, dc.u)
                       : DECLINED;
    }
    dc.d = rlaas_dir_conf(r);
    if ((n = gather(r, dc.d, all, &misconf)) == 0 && misconf == NULL)
        return DECLINED;
    if (dc.u == NULL)
        dc.u = rlaas_unit_get(r);
    before_auth = select_items(&dc, all, n, phase);
    if (phase == PHASE_ACCESS) {
        dc.u->checked = r;
        dc.u->checked_conf = r->per_dir_config;
        dc.u->left_for_handler = before_auth || dc.n < n;
    }
    if (dc.n > 0)
        rc = decide(&dc, before_auth);
    if (rc == DECLINED && misconf != NULL)
        rc = misconfigured(&dc, misconf);
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

int rlaas_limit_trace(request_rec *r)
{
    return checkpoint(r, PHASE_TRACE);
}
