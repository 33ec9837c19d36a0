#include "rlaas_admin.h"

#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "util_script.h"
#include "apr_strings.h"

#include "rlaas_admin_impl.h"
#include "rlaas_admin_tally.h"
#include "rlaas_admin_zones.h"
#include "rlaas_directives.h"
#include "rlaas_engine.h"
#include "rlaas_keybuild.h"
#include "rlaas_metrics.h"
#include "rlaas_tally.h"

APLOG_USE_MODULE(rlaas);

#define MINUTE_S     60
#define FORM_MAX     8192
#define CHILDREN_MAX 512

int rlaas_admin_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp, server_rec *s)
{
    (void)plog;
    rlaas_admin_zones_build(pconf, ptemp, s);
    /* no console: no counts for it, nothing counted per request */
    rlaas_admin_tally_start(pconf, ptemp, s, rlaas_config_console_any());
    return OK;
}

/* ---- GET: the view ---- */

/* Whether a row of the tally is one the console shows: any in the main
 * server's console, its own host's in a virtual host's (none for a host
 * the configuration did not list, which cannot be). */
static int in_scope(const rlaas_admin_host_t *me, int row)
{
    rlaas_tally_t *tally = rlaas_admin_tally();
    uint64_t key = rlaas_tally_row_host(tally, row);

    if (me == NULL)
        return 0;
    if (!me->s->is_virtual)
        return key == 0 || rlaas_admin_host_label(key) != NULL;
    return key == me->key;
}

/* The page's row of (host, name, conc), added (policy: declared as one)
 * if it has none yet. */
static rlaas_admin_row_t *row_for(apr_array_header_t *rows, const char *host,
                                  const char *name, int policy, int conc)
{
    rlaas_admin_row_t *w;
    int i;

    for (i = 0; i < rows->nelts; i++) {
        w = &APR_ARRAY_IDX(rows, i, rlaas_admin_row_t);
        if (strcmp(w->name, name) == 0 && strcmp(w->host, host) == 0 &&
            w->conc == conc)
            return w;
    }
    w = apr_array_push(rows);
    memset(w, 0, sizeof(*w));
    w->name = name;
    w->host = host;
    w->policy = policy;
    w->conc = conc;
    return w;
}

/* A tally row's name: a concurrency limit's loses its suffix. */
static const char *row_name(apr_pool_t *p, const char *name, int *conc)
{
    size_t n = strlen(name), sl = sizeof(RLAAS_ADMIN_CONC_SUFFIX) - 1;

    *conc = n > sl && strcmp(name + n - sl, RLAAS_ADMIN_CONC_SUFFIX) == 0;
    return apr_pstrndup(p, name, *conc ? n - sl : n);
}

static int is_policy(const char *name)
{
    int i, n = rlaas_metrics_names(), pol = 0;

    for (i = 0; i < n; i++) {
        const char *s = rlaas_metrics_name_of(i, &pol);

        if (s != NULL && strcmp(s, name) == 0)
            return pol;
    }
    return 0;
}

/* The rows: the zones and policies of the console's host, decided or not
 * (the main server's: its own), then every row of the tally in scope,
 * duplicates of one name added up. */
static void view_rows(request_rec *r, rlaas_admin_view_t *v,
                      const rlaas_admin_host_t *me)
{
    rlaas_tally_t *tally = rlaas_admin_tally();
    apr_array_header_t *zs = rlaas_admin_zones_of(r->pool, r->server);
    int64_t now_s = v->now_ms / 1000;
    uint32_t minutes[RLAAS_TALLY_MINUTES];
    int i, m;

    v->rows = apr_array_make(r->pool, 16, sizeof(rlaas_admin_row_t));
    for (i = 0; me != NULL && i < zs->nelts; i++) {
        const rlaas_admin_zone_t *z =
            APR_ARRAY_IDX(zs, i, const rlaas_admin_zone_t *);
        int conc = z->conc || z->strategy == RLAAS_CONCURRENCY;
        rlaas_admin_row_t *w =
            row_for(v->rows, me->label, z->name, z->policy, conc);

        if (conc && w->limit == 0)
            w->limit = z->limit;
        w->bytes |= z->bytes_unit > 0;
    }
    for (i = 0; tally != NULL && i < rlaas_tally_rows(tally); i++) {
        rlaas_admin_row_t *w;
        const char *name, *host;
        uint64_t a, d;
        int conc;

        if (!rlaas_tally_row_used(tally, i) || !in_scope(me, i))
            continue;
        name = row_name(r->pool, rlaas_tally_row_name(tally, i), &conc);
        host = rlaas_admin_host_label(rlaas_tally_row_host(tally, i));
        w = row_for(v->rows, host ? host : "", name, is_policy(name), conc);
        w->held += rlaas_tally_held(tally, i);
        rlaas_tally_sum(tally, i, now_s, MINUTE_S, &a, &d);
        w->allowed += a;
        w->denied += d;
        rlaas_tally_minutes(tally, i, now_s, RLAAS_TALLY_MINUTES, minutes);
        for (m = 0; m < RLAAS_TALLY_MINUTES; m++)
            w->minutes[m] += minutes[m];
    }
}

static void view_top(rlaas_admin_view_t *v, const rlaas_admin_host_t *me)
{
    rlaas_tally_t *tally = rlaas_admin_tally();
    rlaas_tally_top_t all[RLAAS_TALLY_TOP];
    int i, n;

    v->ntop = 0;
    if (tally == NULL)
        return;
    n = rlaas_tally_top(tally, v->now_ms / 1000, MINUTE_S, all,
                        RLAAS_TALLY_TOP);
    for (i = 0; i < n; i++) {
        const char *host;

        if (!in_scope(me, all[i].row))
            continue;
        host = rlaas_admin_host_label(rlaas_tally_row_host(tally, all[i].row));
        v->top[v->ntop] = all[i];
        v->top_zone[v->ntop] = rlaas_tally_row_name(tally, all[i].row);
        v->top_host[v->ntop++] = host ? host : "";
    }
}

static void view(request_rec *r, rlaas_admin_view_t *v)
{
    rlaas_tally_t *tally = rlaas_admin_tally();
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    const rlaas_target_t *t = sc->target;
    const rlaas_admin_host_t *me = rlaas_admin_host_of(r->server);

    memset(v, 0, sizeof(*v));
    v->now_ms = apr_time_as_msec(apr_time_now());
    v->scope = !r->server->is_virtual ? NULL : me != NULL ? me->label : "";
    v->backend = rlaas_engine_of(r->server)->name;
    if (v->scope != NULL)
        v->redis = NULL; /* the server's, not the host's to know */
    else if (t->cluster_n > 0)
        v->redis =
            apr_psprintf(r->pool, "cluster of %d seed node(s)", t->cluster_n);
    else if (t->sentinel_n > 0)
        v->redis = apr_psprintf(r->pool, "sentinel:%s", t->sentinel_master);
    else if (t->is_unix)
        v->redis = apr_psprintf(r->pool, "unix:%s", t->host);
    else
        v->redis = apr_psprintf(r->pool, "%s:%d",
                                t->host ? t->host : RLAAS_DEFAULT_HOST,
                                t->port > 0 ? t->port : RLAAS_DEFAULT_PORT);
    v->tally = tally != NULL;
    view_rows(r, v, me);
    view_top(v, me);
    v->bans = apr_array_make(r->pool, 4, sizeof(rlaas_admin_ban_t));
    v->bans_error = rlaas_admin_bans(r, v->bans);
    v->children = apr_palloc(r->pool, sizeof(*v->children) * CHILDREN_MAX);
    v->nchildren = rlaas_metrics_children(v->children, CHILDREN_MAX);
}

/* ---- POST: an action ---- */

/* Whether the request comes from a page of this very origin: Origin, or
 * else Referer, names the scheme, host and port the request was sent to. */
static int same_origin(request_rec *r)
{
    const char *host = apr_table_get(r->headers_in, "Host");
    const char *origin = apr_table_get(r->headers_in, "Origin");
    const char *referer = apr_table_get(r->headers_in, "Referer");
    const char *self;
    size_t n;

    if (host == NULL || *host == '\0')
        return 0;
    self = apr_pstrcat(r->pool, ap_http_scheme(r), "://", host, NULL);
    n = strlen(self);
    if (origin != NULL)
        return strcasecmp(origin, self) == 0;
    if (referer != NULL)
        return strncasecmp(referer, self, n) == 0 &&
               (referer[n] == '/' || referer[n] == '?' || referer[n] == '\0');
    return 0;
}

static int form_type(request_rec *r)
{
    const char *ct = apr_table_get(r->headers_in, "Content-Type");
    size_t n = sizeof("application/x-www-form-urlencoded") - 1;

    return ct != NULL &&
           strncasecmp(ct, "application/x-www-form-urlencoded", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static void refuse(request_rec *r, rlaas_admin_result_t *res, int status,
                   const char *why)
{
    memset(res, 0, sizeof(*res));
    res->status = status;
    res->message = why;
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                  "RLAAS0121: console: a POST by %s refused (%d): %s",
                  r->user ? r->user : "-", status, why);
}

/* The form's fields; 0, or a status. A field given twice is refused. */
static int read_form(request_rec *r, apr_table_t *f, const char **why)
{
    apr_array_header_t *pairs = NULL;
    int rc = ap_parse_form_data(r, NULL, &pairs, 16, FORM_MAX);

    if (rc != OK || pairs == NULL) {
        *why = "the form could not be read";
        return HTTP_BAD_REQUEST;
    }
    while (pairs->nelts > 0) {
        ap_form_pair_t *pr = (ap_form_pair_t *)apr_array_pop(pairs);
        apr_off_t len;
        apr_size_t size;
        char *buf;

        apr_brigade_length(pr->value, 1, &len);
        size = (apr_size_t)len;
        buf = apr_palloc(r->pool, size + 1);
        apr_brigade_flatten(pr->value, buf, &size);
        buf[size] = '\0';
        if (apr_table_get(f, pr->name) != NULL) {
            *why = apr_psprintf(r->pool, "field %s given twice",
                                ap_escape_html(r->pool, pr->name));
            return HTTP_BAD_REQUEST;
        }
        apr_table_setn(f, pr->name, buf);
    }
    return 0;
}

/* After a reset: the identity leaves the top list, in every row of the
 * zone the console sees. */
static void forget_top(request_rec *r, const rlaas_admin_result_t *res)
{
    rlaas_tally_t *tally = rlaas_admin_tally();
    const rlaas_admin_zone_t *z =
        APR_ARRAY_IDX(rlaas_admin_zones_named(r->pool, r->server, res->zone), 0,
                      const rlaas_admin_zone_t *);
    const rlaas_admin_host_t *me = rlaas_admin_host_of(r->server);
    int i, row;

    for (row = 0; tally != NULL && row < rlaas_tally_rows(tally); row++) {
        if (!rlaas_tally_row_used(tally, row) || !in_scope(me, row) ||
            strcmp(rlaas_tally_row_name(tally, row), res->zone) != 0)
            continue;
        for (i = 0; i < res->keys->nelts; i++) {
            const char *k = APR_ARRAY_IDX(res->keys, i, const char *), *id;
            size_t len = rlaas_key_ident(k, strlen(k), strlen(z->prefix),
                                         z->zone != NULL || z->ns != NULL,
                                         z->strategy, &id);

            rlaas_tally_top_forget(tally, row, id, len);
        }
    }
}

static void act(request_rec *r, rlaas_admin_result_t *res)
{
    apr_table_t *f = apr_table_make(r->pool, 4);
    const char *why = NULL, *keys = "";
    int i, rc;

    if (!same_origin(r)) {
        refuse(r, res, HTTP_FORBIDDEN,
               "no same-origin proof: Origin (or Referer) must name this "
               "server's scheme, host and port");
        return;
    }
    if (!form_type(r)) {
        refuse(r, res, HTTP_UNSUPPORTED_MEDIA_TYPE,
               "the form must be application/x-www-form-urlencoded");
        return;
    }
    if ((rc = read_form(r, f, &why)) != 0) {
        refuse(r, res, rc, why);
        return;
    }
    rlaas_admin_act(r, apr_table_get(f, "action"), apr_table_get(f, "zone"),
                    apr_table_get(f, "id"), apr_table_get(f, "n"), res);
    for (i = 0; res->keys != NULL && i < res->keys->nelts; i++)
        keys = apr_pstrcat(r->pool, keys, i ? " " : "",
                           APR_ARRAY_IDX(res->keys, i, const char *), NULL);
    /* the id is never logged: a credential is; the keys hold it hashed */
    ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                  "RLAAS0120: console: %s in zone %s by user %s: %d %s%s%s",
                  res->action ? res->action : "-", res->zone ? res->zone : "-",
                  r->user ? r->user : "-", res->status,
                  res->message ? res->message : "", *keys ? "; keys: " : "",
                  keys);
    if (res->status == HTTP_OK && res->action != NULL &&
        strcmp(res->action, "reset") == 0 && res->keys != NULL)
        forget_top(r, res);
}

static int wants_json(request_rec *r)
{
    const char *a = apr_table_get(r->headers_in, "Accept");

    return a != NULL && ap_strcasestr(a, "application/json") != NULL;
}

int rlaas_admin_handler(request_rec *r)
{
    rlaas_admin_result_t res;
    rlaas_admin_view_t v;

    /* where RLaaSConsole is on (rlaas_scope_console_handler) */
    if (r->handler == NULL || strcmp(r->handler, RLAAS_ADMIN_HANDLER) != 0)
        return DECLINED;
    r->allowed |= (AP_METHOD_BIT << M_GET) | (AP_METHOD_BIT << M_POST);
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->headers_out, "X-Frame-Options", "DENY");
    apr_table_setn(r->headers_out, "Content-Security-Policy",
                   "default-src 'none'; style-src 'unsafe-inline'; "
                   "script-src 'unsafe-inline'; img-src 'self'; "
                   "form-action 'self'; frame-ancestors 'none'");
    if (r->method_number == M_POST) {
        act(r, &res);
        r->status = res.status;
        rlaas_admin_render_result(r, &res, wants_json(r));
        return OK;
    }
    if (r->method_number != M_GET)
        return HTTP_METHOD_NOT_ALLOWED;
    view(r, &v);
    rlaas_admin_render_page(r, &v, wants_json(r));
    return OK;
}
