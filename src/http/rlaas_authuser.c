#include "rlaas_authuser.h"

#include "http_core.h"
#include "apr_lib.h"
#include "apr_strings.h"

/* In r->notes while a key is built before authentication. */
#define NOTE_BEFORE_AUTH "rlaas-before-auth"

static int is_scheme(const char *type, const char *name)
{
    return type != NULL && ap_cstr_casecmp(type, name) == 0;
}

int rlaas_authuser_readable(request_rec *r)
{
    const char *type = ap_auth_type(r);

    return is_scheme(type, "Basic") || is_scheme(type, "Digest");
}

/* The credentials after "<scheme> ", or NULL for another scheme. As
 * mod_auth_basic and mod_auth_digest do, a proxy reads Proxy-Authorization. */
static const char *credentials(request_rec *r, const char *scheme)
{
    const char *h = apr_table_get(r->headers_in, r->proxyreq == PROXYREQ_PROXY
                                                     ? "Proxy-Authorization"
                                                     : "Authorization");
    size_t n = strlen(scheme);

    if (h == NULL || ap_cstr_casecmpn(h, scheme, n) != 0 || !apr_isspace(h[n]))
        return NULL;
    h += n;
    while (apr_isspace(*h))
        h++;
    return h;
}

/* Basic: base64 of "name:password"; the name is what precedes the colon. */
static const char *basic_user(request_rec *r)
{
    const char *b64 = credentials(r, "Basic");
    char *plain, *colon;

    if (b64 == NULL)
        return NULL;
    plain = ap_pbase64decode(r->pool, b64);
    colon = strchr(plain, ':');
    if (colon != NULL)
        *colon = '\0';
    return plain;
}

/* One auth-param value, a token or a quoted string, from *p; *p moves past
 * it. */
static char *param_value(apr_pool_t *pool, const char **p)
{
    const char *s = *p;
    char *v, *o;

    if (*s != '"') {
        size_t n = strcspn(s, ", \t");

        *p = s + n;
        return apr_pstrndup(pool, s, n);
    }
    v = o = apr_palloc(pool, strlen(s));
    for (s++; *s != '\0' && *s != '"'; s++) {
        if (*s == '\\' && s[1] != '\0')
            s++;
        *o++ = *s;
    }
    *o = '\0';
    *p = *s == '"' ? s + 1 : s;
    return v;
}

/* Digest: the username auth-param of a comma-separated list. */
static const char *digest_user(request_rec *r)
{
    const char *p = credentials(r, "Digest");

    while (p != NULL && *p != '\0') {
        size_t n;
        int is_user;
        char *v;

        while (*p == ',' || apr_isspace(*p))
            p++;
        n = strcspn(p, "=, \t");
        is_user = n == 8 && ap_cstr_casecmpn(p, "username", 8) == 0;
        p += n;
        while (apr_isspace(*p))
            p++;
        if (*p != '=')
            continue;
        p++;
        while (apr_isspace(*p))
            p++;
        v = param_value(r->pool, &p);
        if (is_user)
            return v;
    }
    return NULL;
}

const char *rlaas_authuser_claimed(request_rec *r)
{
    const char *type = ap_auth_type(r), *user = NULL;

    if (is_scheme(type, "Basic"))
        user = basic_user(r);
    else if (is_scheme(type, "Digest"))
        user = digest_user(r);
    return user != NULL && *user != '\0' ? user : NULL;
}

void rlaas_authuser_before_auth(request_rec *r, int before_auth)
{
    if (before_auth)
        apr_table_setn(r->notes, NOTE_BEFORE_AUTH, "1");
    else
        apr_table_unset(r->notes, NOTE_BEFORE_AUTH);
}

const char *rlaas_authuser(request_rec *r)
{
    if (r->user != NULL)
        return r->user;
    if (apr_table_get(r->notes, NOTE_BEFORE_AUTH) != NULL)
        return rlaas_authuser_claimed(r);
    return NULL;
}
