#include "rlaas_keybuild.h"

#include <string.h>

#define EXPR_TAG_HEX 8

/* Zone, header, cookie, query and environment names, as rlaas_parse_name
 * accepts them: they must never hold ':' or '='. */
static int name_ok(const char *s, size_t len)
{
    size_t i;

    if (s == NULL || len == 0 || len > RLAAS_NAME_MAX)
        return 0;
    for (i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

static int part_ok(const rlaas_key_part_t *p)
{
    switch (p->type) {
    case RLAAS_SRC_IP:
    case RLAAS_SRC_USER:
    case RLAAS_SRC_API_KEY:
        return 1;
    case RLAAS_SRC_HEADER:
    case RLAAS_SRC_COOKIE:
    case RLAAS_SRC_QUERY:
    case RLAAS_SRC_ENV:
        return name_ok(p->name, p->name_len);
    case RLAAS_SRC_EXPR:
        return p->name != NULL;
    }
    return 0;
}

static int spec_ok(const rlaas_key_spec_t *k)
{
    int i;

    if (k->prefix_len > RLAAS_PREFIX_MAX || k->nparts < 1 ||
        k->nparts > RLAAS_SOURCES_MAX || k->strategy < 0 ||
        k->strategy > RLAAS_CONCURRENCY)
        return 0;
    if (k->zone != NULL && !name_ok(k->zone, k->zone_len))
        return 0;
    if (k->ns != NULL && !rlaas_key_namespace_ok(k->ns, k->ns_len))
        return 0;
    for (i = 0; i < k->nparts; i++) {
        if (!part_ok(&k->parts[i]))
            return 0;
    }
    return 1;
}

static size_t put(char *out, const char *s, size_t len)
{
    if (len > 0)
        memcpy(out, s, len);
    return len;
}

/* The tag of a source, up to RLAAS_TAG_MAX bytes. Header names are
 * case-insensitive in HTTP, so X-User and x-user are one source. */
static size_t tag(char *out, const rlaas_key_part_t *p)
{
    static const char kind[] = {[RLAAS_SRC_HEADER] = 'h',
                                [RLAAS_SRC_COOKIE] = 'c',
                                [RLAAS_SRC_QUERY] = 'q',
                                [RLAAS_SRC_ENV] = 'e',
                                [RLAAS_SRC_EXPR] = 'x'};
    size_t i;

    switch (p->type) {
    case RLAAS_SRC_IP:
        return put(out, "ip", 2);
    case RLAAS_SRC_USER:
        return put(out, "user", 4);
    case RLAAS_SRC_API_KEY:
        return put(out, "key", 3);
    case RLAAS_SRC_EXPR:
        out[0] = 'x';
        out[1] = '.';
        rlaas_key_sha1_hex(out + 2, EXPR_TAG_HEX, p->name, p->name_len);
        return 2 + EXPR_TAG_HEX;
    default:
        break;
    }
    out[0] = kind[p->type];
    out[1] = '.';
    for (i = 0; i < p->name_len; i++) {
        char c = p->name[i];
        if (p->type == RLAAS_SRC_HEADER && c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        out[2 + i] = c;
    }
    return 2 + p->name_len;
}

/* V(value) of one part, or the fallback when it has none; 0 if the keyed
 * hash failed. */
static size_t value(char *out, const rlaas_key_part_t *p,
                    const rlaas_key_spec_t *k)
{
    if (p->type == RLAAS_SRC_IP && k->ip_rendered) {
        memcpy(out, k->ip, k->ip_len);
        return k->ip_len;
    }
    if (p->type == RLAAS_SRC_IP)
        return rlaas_key_value_keyed(out, k->ip, k->ip_len, RLAAS_VAL_ADDRESS,
                                     k->secret);
    if (p->value == NULL || p->value_len == 0)
        return rlaas_key_fallback_keyed(out, k->ip, k->ip_len, k->secret);
    return rlaas_key_value_keyed(
        out, p->value, p->value_len,
        p->credential ? RLAAS_VAL_SECRET : RLAAS_VAL_PLAIN, k->secret);
}

/* The identity I; 0 if a value could not be hashed. */
static size_t identity(char *out, const rlaas_key_spec_t *k)
{
    const rlaas_key_part_t *p = k->parts;
    size_t n = 0, v;
    int i;

    if (k->nparts == 1 &&
        (p->type == RLAAS_SRC_IP || p->type == RLAAS_SRC_USER))
        return value(out, p, k);
    for (i = 0; i < k->nparts; i++) {
        if (i > 0)
            out[n++] = ':';
        n += tag(out + n, &p[i]);
        out[n++] = '=';
        if ((v = value(out + n, &p[i], k)) == 0)
            return 0;
        n += v;
    }
    return n;
}

size_t rlaas_key_build(char *out, const rlaas_key_spec_t *k)
{
    rlaas_key_spec_t spec = *k;
    const char *suffix;
    size_t n = 0, id;

    if (!spec_ok(&spec))
        return 0;
    if (spec.ip == NULL || spec.ip_len == 0) {
        spec.ip = "-";
        spec.ip_len = 1;
    }
    n += put(out, spec.prefix, spec.prefix_len);
    if (spec.zone != NULL)
        n += put(out + n, spec.zone, spec.zone_len);
    if (spec.ns != NULL) {
        out[n++] = '@';
        n += put(out + n, spec.ns, spec.ns_len);
    }
    if (spec.zone != NULL || spec.ns != NULL)
        out[n++] = ':';
    if (spec.hashtag)
        out[n++] = '{';
    if ((id = identity(out + n, &spec)) == 0)
        return 0;
    n += id;
    if (spec.hashtag)
        out[n++] = '}';
    suffix = rlaas_key_suffix(spec.strategy);
    n += put(out + n, suffix, strlen(suffix));
    out[n] = '\0';
    return n;
}

size_t rlaas_key_zone_len(const rlaas_key_spec_t *k)
{
    size_t n = k->prefix_len;

    /* as rlaas_key_build writes them */
    if (k->zone != NULL)
        n += k->zone_len;
    if (k->ns != NULL)
        n += 1 + k->ns_len;
    if (k->zone != NULL || k->ns != NULL)
        n++;
    return n;
}

size_t rlaas_key_ident(const char *key, size_t len, size_t prefix_len,
                       int has_zone, rlaas_strategy_e st, const char **out)
{
    const char *s = key, *c;
    const char *suffix = rlaas_key_suffix(st);
    size_t sl = strlen(suffix);

    if (prefix_len <= len) {
        s += prefix_len;
        len -= prefix_len;
    }
    if (has_zone && (c = memchr(s, ':', len)) != NULL) {
        len -= (size_t)(c + 1 - s);
        s = c + 1;
    }
    if (st == RLAAS_STRATEGY_FIXED) {
        /* K ends in ':' (or in ':' and the window, with Redis Cluster) */
        while (len > 0 && s[len - 1] >= '0' && s[len - 1] <= '9')
            len--;
        if (len > 0 && s[len - 1] == ':')
            len--;
    }
    else if (sl > 0 && len >= sl && memcmp(s + len - sl, suffix, sl) == 0)
        len -= sl;
    *out = s;
    return len;
}
