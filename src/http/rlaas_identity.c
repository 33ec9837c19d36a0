#include "rlaas_identity.h"

#include "http_log.h"
#include "apr_strings.h"
#include "util_cookies.h"

#include "rlaas_ip.h"
#include "rlaas_key.h"

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

/* The client address as the ip source names it (rlaas_ip.h): IPv6
 * clients grouped by RLaaSIPv6Prefix; "-" when there is none. */
static const char *client_ip(request_rec *r, const rlaas_server_conf_t *sc)
{
    const char *ip = r->useragent_ip;
    char *out;

    if (ip == NULL || *ip == '\0')
        return "-";
    out = apr_palloc(r->pool, RLAAS_IP_TEXT_MAX);
    if (rlaas_ip_render(out, ip, strlen(ip), rlaas_server_ipv6_prefix(sc)) == 0)
        return "-";
    return out;
}

static const char *source_value(request_rec *r, const rlaas_key_source_t *ks,
                                const char *ip, size_t *len)
{
    const char *v = NULL, *err = NULL;

    switch (ks->src.type) {
    case RLAAS_SRC_IP:
        v = ip;
        break;
    case RLAAS_SRC_USER:
        v = r->user;
        break;
    case RLAAS_SRC_API_KEY:
        v = apr_table_get(r->headers_in, "X-API-Key");
        break;
    case RLAAS_SRC_HEADER:
        v = apr_table_get(r->headers_in, ks->name);
        break;
    case RLAAS_SRC_COOKIE:
        if (ap_cookie_read(r, ks->name, &v, 0) != APR_SUCCESS)
            v = NULL;
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
                               const rlaas_dir_conf_t *d, size_t *len)
{
    static const rlaas_key_source_t ip_only = {
        {RLAAS_SRC_IP, NULL, 0, 0}, NULL, NULL};
    const char *prefix = rlaas_server_prefix(sc), *suffix;
    const char *ip = client_ip(r, sc);
    const rlaas_key_source_t *src = &ip_only;
    int nsrc = 1, i;
    size_t pl = strlen(prefix), n = 0;
    char *key = apr_palloc(r->pool, RLAAS_KEY_MAX + 1);

    if (d->sources != NULL) {
        src = (const rlaas_key_source_t *)d->sources->elts;
        nsrc = d->sources->nelts;
    }
    memcpy(key, prefix, pl);
    n = pl;
    if (d->zone != NULL) {
        size_t zl = strlen(d->zone);
        memcpy(key + n, d->zone, zl);
        n += zl;
        key[n++] = ':';
    }
    for (i = 0; i < nsrc; i++) {
        size_t vl;
        const char *v = source_value(r, &src[i], ip, &vl);

        if (i > 0)
            key[n++] = ':';
        if (v != NULL && vl > 0) {
            /* Without a zone, a first segment spelling a zone's name would
             * reach that zone's keys: hash it instead. */
            int hash = src[i].src.credential ||
                       (i == 0 && d->zone == NULL && rlaas_is_zone_name(v, vl));
            n += rlaas_key_segment(key + n, v, vl, hash);
        }
        else
            n += rlaas_key_fallback(key + n, ip, strlen(ip));
    }
    suffix = rlaas_key_suffix(rlaas_dir_strategy(d));
    memcpy(key + n, suffix, strlen(suffix));
    n += strlen(suffix);
    key[n] = '\0';
    *len = n;
    return key;
}
