#include "rlaas_identity.h"

#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_authuser.h"
#include "rlaas_cookie.h"
#include "rlaas_ip.h"
#include "rlaas_keysecret.h"
#include "rlaas_target.h"
#include "rlaas_verdict.h"

APLOG_USE_MODULE(rlaas);

/* The first value of a query argument, %-decoded, so that "%61lice" and
 * "alice" are the same client. */
static const char *query_value(request_rec *r, const char *name)
{
    size_t nl = strlen(name);
    const char *p = r->args;

    while (p != NULL && *p != '\0') {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            char *v = apr_pstrndup(r->pool, p + nl + 1, len - nl - 1);
            /* A malformed escape stays as sent: it can't be key text raw,
             * so it is hashed like any other unsafe value. */
            if (ap_unescape_urlencoded(v) != OK)
                v = apr_pstrndup(r->pool, p + nl + 1, len - nl - 1);
            return v;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

typedef struct {
    const char *name;
    const char *val;
    size_t vlen;
    int found;
} cookie_search_t;

static int cookie_in(void *rec, const char *key, const char *value)
{
    cookie_search_t *s = rec;

    (void)key;
    s->found = rlaas_cookie_find(value, strlen(value), s->name, strlen(s->name),
                                 &s->val, &s->vlen);
    return !s->found; /* 0 stops the walk */
}

/* The first cookie of that name in every Cookie header field, in order
 * (rlaas_cookie.h: unlike ap_cookie_read, nothing is logged when a client
 * sends a name twice). */
static const char *cookie_value(request_rec *r, const char *name)
{
    cookie_search_t s = {name, NULL, 0, 0};

    apr_table_do(cookie_in, &s, r->headers_in, "Cookie", NULL);
    return s.found ? apr_pstrmemdup(r->pool, s.val, s.vlen) : NULL;
}

/* The client address as the ip source names it (rlaas_ip.h): IPv6
 * clients grouped by RLaaSIPv6Prefix; "-" when there is none. */
static const char *client_ip(request_rec *r, const rlaas_server_conf_t *sc,
                             size_t *len)
{
    const char *ip = r->useragent_ip;
    char *out;

    *len = 0;
    if (ip == NULL || *ip == '\0')
        return "-";
    out = apr_palloc(r->pool, RLAAS_IP_TEXT_MAX);
    *len = rlaas_ip_render(out, ip, strlen(ip), rlaas_server_ipv6_prefix(sc));
    return *len > 0 ? out : "-";
}

/* A source's value for this request, *len bytes (a user name may hold a
 * NUL: rlaas_authuser.h), or NULL. */
static const char *source_value(request_rec *r, const rlaas_key_source_t *ks,
                                size_t *len)
{
    const char *v = NULL, *err = NULL;

    switch (ks->src.type) {
    case RLAAS_SRC_IP:
        break; /* the key builder takes the address itself */
    case RLAAS_SRC_USER:
        return rlaas_authuser(r, len);
    case RLAAS_SRC_API_KEY:
        v = apr_table_get(r->headers_in, "X-API-Key");
        break;
    case RLAAS_SRC_HEADER:
        v = apr_table_get(r->headers_in, ks->name);
        break;
    case RLAAS_SRC_COOKIE:
        v = cookie_value(r, ks->name);
        break;
    case RLAAS_SRC_QUERY:
        v = query_value(r, ks->name);
        break;
    case RLAAS_SRC_ENV:
        v = apr_table_get(r->subprocess_env, ks->name);
        break;
    case RLAAS_SRC_EXPR:
        v = ap_expr_str_exec(r, ks->expr, &err);
        if (err != NULL) {
            ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                          "RLAAS0010: RLaaSKeyBy expression failed: %s", err);
            v = NULL;
        }
        break;
    }
    *len = v != NULL ? strlen(v) : 0;
    return v;
}

const char *rlaas_identity_key(request_rec *r, const rlaas_server_conf_t *sc,
                               const rlaas_identity_spec_t *spec, size_t *len,
                               size_t *window_at)
{
    static const rlaas_key_source_t ip_only = {
        {RLAAS_SRC_IP, NULL, 0, 0}, NULL, NULL};
    rlaas_key_part_t parts[RLAAS_SOURCES_MAX];
    rlaas_key_spec_t k;
    const rlaas_key_source_t *src = &ip_only;
    char *key = apr_palloc(r->pool, RLAAS_KEY_MAX + 1);
    int i, need_ip = 0;

    k.nparts = 1;
    if (spec->sources != NULL) {
        src = (const rlaas_key_source_t *)spec->sources->elts;
        k.nparts = spec->sources->nelts;
    }
    for (i = 0; i < k.nparts; i++) {
        parts[i].type = src[i].src.type;
        parts[i].name = src[i].name;
        parts[i].name_len = src[i].src.name_len;
        parts[i].credential = src[i].src.credential;
        parts[i].value = source_value(r, &src[i], &parts[i].value_len);
        /* the address is a part, or stands in for a value not sent */
        need_ip |= parts[i].type == RLAAS_SRC_IP || parts[i].value == NULL ||
                   parts[i].value_len == 0;
    }
    k.parts = parts;
    k.prefix = spec->prefix;
    k.prefix_len = strlen(k.prefix);
    k.zone = spec->zone;
    k.zone_len = spec->zone != NULL ? strlen(spec->zone) : 0;
    k.ns = spec->ns;
    k.ns_len = spec->ns != NULL ? strlen(spec->ns) : 0;
    /* rendering the address costs more than the rest of the key: only
     * when the key holds it */
    k.ip = "-"; /* no address: checked (and hashed) as such */
    k.ip_len = 0;
    if (need_ip)
        k.ip = client_ip(r, sc, &k.ip_len);
    k.ip_rendered = k.ip_len > 0;
    if (k.ip_len == 0)
        k.ip_len = 1;
    k.strategy = spec->strategy;
    k.hashtag = rlaas_target_cluster(sc->target);
    k.secret = rlaas_keysecret();
    *len = rlaas_key_build(key, &k);
    *window_at = 0;
    /* Redis Cluster, fixed: the window's key is declared, so the module
     * names the window (by its own clock; the script sends it back when
     * Redis' clock reckons another) */
    if (k.hashtag && k.strategy == RLAAS_STRATEGY_FIXED && *len > 0) {
        int64_t w = spec->window_ms;

        *window_at = *len;
        if (spec->periods != NULL)
            *len += rlaas_cal_name(spec->periods->tag, spec->periods->b[1],
                                   key + *len);
        else
            *len +=
                rlaas_fmt_i64(key + *len, apr_time_as_msec(apr_time_now()) / w);
        key[*len] = '\0';
    }
    return key;
}

size_t rlaas_identity_zone_len(const rlaas_identity_spec_t *spec)
{
    rlaas_key_spec_t k;

    k.prefix_len = strlen(spec->prefix);
    k.zone = spec->zone;
    k.zone_len = spec->zone != NULL ? strlen(spec->zone) : 0;
    k.ns = spec->ns;
    k.ns_len = spec->ns != NULL ? strlen(spec->ns) : 0;
    return rlaas_key_zone_len(&k);
}
