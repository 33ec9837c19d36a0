#include "rlaas_authuser.h"

#include "http_core.h"
#include "apr_lib.h"
#include "apr_strings.h"

#include "rlaas_config.h"

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

/* The credentials after the scheme's word, or NULL when the first word is
 * not the scheme, exactly as the module that checks them reads them. As
 * both do, a proxy reads Proxy-Authorization. httpd has joined repeated
 * fields into one, with ", ", before anybody reads them.
 *   white 1: mod_auth_digest (ap_getword_white): the word ends at any
 *            white space, and all white space after it is skipped;
 *   white 0: mod_auth_basic (ap_getword(' ')): the word ends at a space;
 *            spaces, then spaces and tabs, are skipped. */
static const char *after_scheme(request_rec *r, const char *scheme, int white)
{
    const char *h = apr_table_get(r->headers_in, r->proxyreq == PROXYREQ_PROXY
                                                     ? "Proxy-Authorization"
                                                     : "Authorization");
    size_t n = 0;

    if (h == NULL)
        return NULL;
    while (h[n] != '\0' && (white ? !apr_isspace(h[n]) : h[n] != ' '))
        n++;
    if (n != strlen(scheme) || ap_cstr_casecmpn(h, scheme, n) != 0)
        return NULL;
    h += n;
    if (white) {
        while (apr_isspace(*h))
            h++;
        return h;
    }
    while (*h == ' ')
        h++;
    while (*h == ' ' || *h == '\t')
        h++;
    return h;
}

/* Basic (mod_auth_basic's get_basic_auth): base64 of "name:password",
 * decoded by the same function; the name is what precedes the first ':'
 * or NUL, as ap_getword_nulls reads it. Malformed base64 decodes as far as
 * it goes, for both of us; "" is a name (htpasswd accepts it). */
static const char *basic_user(request_rec *r)
{
    const char *b64 = after_scheme(r, "Basic", 0);
    char *plain, *colon;

    if (b64 == NULL)
        return NULL;
    plain = ap_pbase64decode(r->pool, b64);
    colon = strchr(plain, ':');
    if (colon != NULL)
        *colon = '\0';
    return plain;
}

/* One auth-param value after '=' (and white space), as mod_auth_digest
 * reads it, into v (room for what is left of the header): a quoted string
 * up to the next '"' with '\' escaping any byte, or a token up to ',' or
 * white space; *p moves past it. */
static void param_value(char *v, const char **p)
{
    const char *s = *p;

    if (*s == '"') {
        for (s++; *s != '"' && *s != '\0'; s++) {
            if (*s == '\\' && s[1] != '\0')
                s++;
            *v++ = *s;
        }
        if (*s != '\0')
            s++;
    }
    else {
        while (*s != ',' && *s != '\0' && !apr_isspace(*s))
            *v++ = *s++;
    }
    *v = '\0';
    *p = s;
}

/* Digest: the username mod_auth_digest authenticates, found by its own
 * walk of the header (get_digest_rec, httpd 2.4.27 and later), step for
 * step:
 *   - names are compared without case; the LAST "username" wins;
 *   - after a value, anything up to the next ',' is skipped, so a second
 *     "Digest ..." joined from a repeated field hides its first
 *     parameter, and so does "x=1 username=..." its second;
 *   - a parameter without '=' has the empty value: "username," names the
 *     empty user.
 * Like it, one buffer holds each value in turn: a header of many
 * parameters costs its own length, not its length per parameter. */
static const char *digest_user(request_rec *r)
{
    const char *p = after_scheme(r, "Digest", 1), *key, *user = NULL;
    char *v;
    size_t kl;

    if (p == NULL)
        return NULL;
    v = apr_palloc(r->pool, strlen(p) + 1);
    while (*p != '\0') {
        while (apr_isspace(*p))
            p++;
        key = p;
        while (*p != '=' && *p != ',' && *p != '\0' && !apr_isspace(*p))
            p++;
        kl = (size_t)(p - key);
        while (apr_isspace(*p))
            p++;
        v[0] = '\0';
        if (*p == '=') {
            for (p++; apr_isspace(*p); p++)
                ;
            param_value(v, &p);
        }
        while (*p != ',' && *p != '\0')
            p++;
        if (*p != '\0')
            p++;
        if (kl == 8 && ap_cstr_casecmpn(key, "username", 8) == 0)
            user = apr_pstrdup(r->pool, v);
    }
    return user;
}

const char *rlaas_authuser_fold(apr_pool_t *p, const rlaas_server_conf_t *sc,
                                const char *name)
{
    const char *s = name;
    char *out, *o;

    if (!rlaas_server_user_fold(sc))
        return name;
    o = out = apr_palloc(p, strlen(name) + 1);
    while (*s == ' ')
        s++;
    for (; *s != '\0'; s++) {
        if (*s == ' ' && (s[1] == ' ' || s[1] == '\0'))
            continue;
        *o++ = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
    }
    *o = '\0';
    return out;
}

static const char *fold(request_rec *r, const char *name)
{
    return rlaas_authuser_fold(r->pool, rlaas_server_conf(r->server), name);
}

const char *rlaas_authuser_claimed(request_rec *r)
{
    const char *type = ap_auth_type(r), *user = NULL;

    if (is_scheme(type, "Basic"))
        user = basic_user(r);
    else if (is_scheme(type, "Digest"))
        user = digest_user(r);
    return user != NULL ? fold(r, user) : NULL;
}

int rlaas_authuser_confirms(request_rec *r, const char *claimed)
{
    return r->user != NULL && claimed != NULL &&
           strcmp(fold(r, r->user), claimed) == 0;
}

void rlaas_authuser_before_auth(request_rec *r, int before_auth)
{
    if (before_auth)
        apr_table_setn(r->notes, NOTE_BEFORE_AUTH, "1");
    else
        apr_table_unset(r->notes, NOTE_BEFORE_AUTH);
}

const char *rlaas_authuser(request_rec *r, size_t *len)
{
    const char *name = NULL;

    if (r->user != NULL)
        name = fold(r, r->user);
    else if (apr_table_get(r->notes, NOTE_BEFORE_AUTH) != NULL)
        name = rlaas_authuser_claimed(r);
    if (name == NULL) {
        *len = 0;
        return NULL;
    }
    /* The empty name is a name (htpasswd accepts it), not the lack of
     * one: one NUL byte, which no other name holds (no header carries a
     * NUL, and both schemes end a name at one). */
    *len = *name != '\0' ? strlen(name) : 1;
    return name;
}
