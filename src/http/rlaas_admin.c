#include "rlaas_admin.h"

#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "util_script.h"
#include "apr_shm.h"
#include "apr_strings.h"

#include "rlaas_admin_impl.h"
#include "rlaas_admin_zones.h"
#include "rlaas_metrics.h"
#include "rlaas_tally.h"

APLOG_USE_MODULE(rlaas);

#define SHM_KEY      "rlaas_admin_shm"
#define TALLY_ROWS   256 /* names past the first 255 count as "other" */
#define MINUTE_S     60
#define FORM_MAX     8192
#define CHILDREN_MAX 512

/* Set in the parent before children fork; NULL: no counts (the console
 * still acts). */
static rlaas_tally_t *tally;

rlaas_tally_t *rlaas_admin_tally(void)
{
    return tally;
}

static int row_of_handle(int handle)
{
    return handle >= 0 && handle < TALLY_ROWS - 1 ? handle : TALLY_ROWS - 1;
}

int rlaas_admin_row_of(const char *name)
{
    int i, n = rlaas_metrics_names(), pol;

    for (i = 0; i < n; i++) {
        const char *s = rlaas_metrics_name_of(i, &pol);

        if (s != NULL && strcmp(s, name) == 0)
            return row_of_handle(i);
    }
    return -1;
}

int rlaas_admin_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp, server_rec *s)
{
    apr_pool_t *keep = s->process->pool;
    apr_size_t size = rlaas_tally_bytes(TALLY_ROWS);
    apr_shm_t *shm = NULL;
    apr_status_t rv;
    int i, n, pol;

    (void)plog;
    rlaas_admin_zones_build(pconf, ptemp, s);
    apr_pool_userdata_get((void **)&shm, SHM_KEY, keep);
    if (shm == NULL) {
        rv = apr_shm_create(&shm, size, NULL, keep);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                         "RLAAS0123: cannot create shared memory for the "
                         "operator's console; it shows no counts");
            tally = NULL;
            return OK;
        }
        memset(apr_shm_baseaddr_get(shm), 0, size);
        apr_pool_userdata_set(shm, SHM_KEY, apr_pool_cleanup_null, keep);
    }
    tally = rlaas_tally_init(apr_shm_baseaddr_get(shm), size, TALLY_ROWS);
    if (tally == NULL)
        return OK;
    n = rlaas_metrics_names();
    for (i = 0; i < n && i < TALLY_ROWS - 1; i++)
        rlaas_tally_name(tally, i, rlaas_metrics_name_of(i, &pol));
    rlaas_tally_name(tally, TALLY_ROWS - 1, RLAAS_METRICS_OTHER);
    return OK;
}

void rlaas_admin_note(request_rec *r, const rlaas_dir_conf_t *d,
                      const rlaas_item_t *it, int denied)
{
    int64_t now_s = apr_time_sec(apr_time_now());
    int row = row_of_handle(it->metric);
    const rlaas_server_conf_t *sc;
    const char *id;
    size_t len;

    if (tally == NULL)
        return;
    rlaas_tally_add(tally, row, denied, now_s);
    if (!denied || it->call.key == NULL)
        return;
    /* the identity as its key holds it: credentials are hashed there */
    sc = rlaas_server_conf(it->p != NULL ? it->p->server : r->server);
    len = rlaas_admin_ident(it->call.key, it->call.key_len,
                            strlen(rlaas_server_prefix(sc)),
                            it->p != NULL || (d != NULL && (d->zone || d->ns)),
                            it->call.strategy, &id);
    rlaas_tally_top_add(tally, row, id, len, now_s);
}

/* ---- GET: the view ---- */

static void view(request_rec *r, rlaas_admin_view_t *v)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    const rlaas_target_t *t = sc->target;
    int64_t now_s;
    int i, n, pol;

    memset(v, 0, sizeof(*v));
    v->now_ms = apr_time_as_msec(apr_time_now());
    now_s = v->now_ms / 1000;
    v->backend = rlaas_server_local(sc) ? "local" : "redis";
    if (t->cluster_n > 0)
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
    v->rows = apr_array_make(r->pool, 8, sizeof(rlaas_admin_row_t));
    v->tally = tally != NULL;
    n = rlaas_metrics_names();
    for (i = 0; tally != NULL && i <= n && i < TALLY_ROWS; i++) {
        int row = i < n ? row_of_handle(i) : TALLY_ROWS - 1;
        rlaas_admin_row_t *w;

        if (i < n && row == TALLY_ROWS - 1)
            continue; /* counted as "other" */
        w = apr_array_push(v->rows);
        w->name = i < n ? rlaas_metrics_name_of(i, &pol) : RLAAS_METRICS_OTHER;
        w->policy = i < n ? pol : 0;
        rlaas_tally_sum(tally, row, now_s, MINUTE_S, &w->allowed, &w->denied);
        rlaas_tally_minutes(tally, row, now_s, RLAAS_TALLY_MINUTES, w->minutes);
    }
    if (tally != NULL)
        v->ntop =
            rlaas_tally_top(tally, now_s, MINUTE_S, v->top, RLAAS_TALLY_TOP);
    for (i = 0; i < v->ntop; i++)
        v->top_zone[i] = rlaas_tally_row_name(tally, v->top[i].row);
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
        strcmp(res->action, "reset") == 0 && tally != NULL && res->keys) {
        int row = rlaas_admin_row_of(res->zone);

        for (i = 0; row >= 0 && i < res->keys->nelts; i++) {
            const char *k = APR_ARRAY_IDX(res->keys, i, const char *), *id;
            const rlaas_admin_zone_t *z = APR_ARRAY_IDX(
                rlaas_admin_zones_named(r->pool, r->server, res->zone), 0,
                const rlaas_admin_zone_t *);
            size_t len = rlaas_admin_ident(k, strlen(k), strlen(z->prefix),
                                           z->zone != NULL || z->ns != NULL,
                                           z->strategy, &id);

            rlaas_tally_top_forget(tally, row, id, len);
        }
    }
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

    if (r->handler == NULL || strcmp(r->handler, RLAAS_ADMIN_HANDLER) != 0)
        return DECLINED;
    /* SetHandler is open to .htaccess (FileInfo); RLaaSConsole is not */
    if (!rlaas_dir_console(rlaas_dir_conf(r))) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      "RLAAS0124: SetHandler " RLAAS_ADMIN_HANDLER
                      " without " RLAAS_D_CONSOLE
                      " on in the server's configuration: not served");
        return HTTP_NOT_FOUND;
    }
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
