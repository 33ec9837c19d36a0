#include "rlaas_admin_zones.h"

#include "http_core.h"
#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_authuser.h"
#include "rlaas_bytes.h"
#include "rlaas_calendar.h"
#include "rlaas_concurrency.h"
#include "rlaas_directives.h"
#include "rlaas_ip.h"
#include "rlaas_keybuild.h"
#include "rlaas_keysecret.h"
#include "rlaas_target.h"
#include "rlaas_verdict.h"

APLOG_USE_MODULE(rlaas);

extern module AP_MODULE_DECLARE_DATA rlaas_module;

static apr_array_header_t *zones;     /* of rlaas_admin_zone_t */
static const server_rec *main_server; /* the head of the chain */

/* RLaaSBan in the server configuration: the zones some section bans in
 * (a quick first test), and each such section's own key without its
 * identity values (prefix, namespace, zone, sources): a section whose own
 * limit is keyed so honours those bans. In pconf. */
static apr_pool_t *keep;
static apr_hash_t *banned_zones;
static apr_hash_t *banned;

static const char *ban_signature(apr_pool_t *p, const char *prefix,
                                 const char *ns, const char *zone,
                                 const apr_array_header_t *sources)
{
    const char *s = apr_pstrcat(p, prefix, "|", ns ? ns : "-", "|",
                                zone ? zone : "-", NULL);
    int i;

    for (i = 0; sources != NULL && i < sources->nelts; i++) {
        const rlaas_key_source_t *ks =
            &APR_ARRAY_IDX(sources, i, rlaas_key_source_t);

        s = apr_psprintf(p, "%s|%d:%s:%d", s, (int)ks->src.type,
                         ks->name ? ks->name : "", ks->src.credential);
    }
    return s;
}

static void add_ban(const char *prefix, const rlaas_dir_conf_t *d)
{
    const char *zone = d->zone != NULL ? d->zone : "";

    apr_hash_set(banned_zones, apr_pstrdup(keep, zone), APR_HASH_KEY_STRING,
                 "");
    apr_hash_set(banned,
                 ban_signature(keep, prefix, d->ns, d->zone, d->sources),
                 APR_HASH_KEY_STRING, "");
}

int rlaas_admin_zones_banned(apr_pool_t *p, const char *prefix,
                             const rlaas_dir_conf_t *d)
{
    if (banned == NULL || apr_hash_count(banned) == 0 ||
        apr_hash_get(banned_zones, d->zone != NULL ? d->zone : "",
                     APR_HASH_KEY_STRING) == NULL)
        return 0;
    return apr_hash_get(banned,
                        ban_signature(p, prefix, d->ns, d->zone, d->sources),
                        APR_HASH_KEY_STRING) != NULL;
}

/* One line per way of keying, so that a policy every host inherits and
 * sections alike are listed once. */
static const char *signature(apr_pool_t *p, const rlaas_admin_zone_t *z)
{
    const char *s = apr_psprintf(
        p, "%pp|%s|%s|%s|%s|%d|%" APR_INT64_T_FMT, (const void *)z->server,
        z->name, z->zone ? z->zone : "-", z->prefix, z->ns ? z->ns : "-",
        (int)z->strategy, z->window_ms);
    int i;

    for (i = 0; z->sources != NULL && i < z->sources->nelts; i++) {
        const rlaas_key_source_t *ks =
            &APR_ARRAY_IDX(z->sources, i, rlaas_key_source_t);

        s = apr_psprintf(p, "%s|%d:%s:%d", s, (int)ks->src.type,
                         ks->name ? ks->name : "", ks->src.credential);
    }
    return s;
}

static void add(apr_pool_t *p, apr_hash_t *seen, const rlaas_admin_zone_t *z)
{
    const char *sig = signature(p, z);

    if (apr_hash_get(seen, sig, APR_HASH_KEY_STRING) != NULL)
        return;
    apr_hash_set(seen, sig, APR_HASH_KEY_STRING, "");
    *(rlaas_admin_zone_t *)apr_array_push(zones) = *z;
}

/* A section's concurrency limit: a row of the console of its own. */
static void add_conc(apr_pool_t *p, apr_hash_t *seen, server_rec *s,
                     const char *prefix, const rlaas_dir_conf_t *d)
{
    rlaas_admin_zone_t z;

    memset(&z, 0, sizeof(z));
    z.name = d->zone != NULL ? d->zone : RLAAS_POLICY_DEFAULT;
    z.zone = d->zone;
    z.prefix = prefix;
    z.ns = d->ns;
    z.sources = d->sources;
    z.strategy = RLAAS_CONCURRENCY;
    z.window_ms = rlaas_dir_conc_timeout_ms(d);
    z.limit = d->conc;
    z.conc = 1;
    z.server = s;
    add(p, seen, &z);
}

static void add_section(apr_pool_t *p, apr_hash_t *seen, server_rec *s,
                        const char *prefix, const rlaas_dir_conf_t *d)
{
    rlaas_admin_zone_t z;

    if (d->engine != 0 && rlaas_dir_conc(d))
        add_conc(p, seen, s, prefix, d);
    if (!rlaas_dir_has_limit(d) || d->engine == 0)
        return;
    if (d->ban_ms > 0)
        add_ban(prefix, d);
    z.name = d->zone != NULL ? d->zone : RLAAS_POLICY_DEFAULT;
    z.zone = d->zone;
    z.prefix = prefix;
    z.ns = d->ns;
    z.sources = d->sources;
    z.strategy = rlaas_dir_strategy(d);
    z.window_ms = rlaas_dir_window_ms(d);
    z.cal = d->cal;
    z.tz = rlaas_calendar_zone(rlaas_server_conf(s));
    z.limit = d->limit > 0 ? d->limit : 0;
    z.bytes_unit = rlaas_bytes_unit(d);
    z.policy = 0;
    z.conc = 0;
    z.server = s;
    add(p, seen, &z);
}

/* Whether section a (a plain path, not a pattern) applies below b. */
static int encloses(const core_dir_config *a, const core_dir_config *b)
{
    size_t n;

    if (a->r != NULL || a->d_is_fnmatch || a->d == NULL || b->d == NULL)
        return 0;
    n = strlen(a->d);
    return strncmp(a->d, b->d, n) == 0 &&
           (n == 0 || a->d[n - 1] == '/' || b->d[n] == '/' || b->d[n] == '\0');
}

static void add_sections(apr_pool_t *p, apr_hash_t *seen, server_rec *s,
                         const char *prefix, const rlaas_dir_conf_t *base,
                         const apr_array_header_t *secs)
{
    ap_conf_vector_t **v;
    int i, j;

    if (secs == NULL)
        return;
    v = (ap_conf_vector_t **)secs->elts;
    for (i = 0; i < secs->nelts; i++) {
        const core_dir_config *ci = ap_get_core_module_config(v[i]);
        rlaas_dir_conf_t *d = (rlaas_dir_conf_t *)base;

        for (j = 0; j <= i; j++) {
            const core_dir_config *cj = ap_get_core_module_config(v[j]);
            rlaas_dir_conf_t *dj = ap_get_module_config(v[j], &rlaas_module);

            if (dj != NULL && (j == i || encloses(cj, ci)))
                d = rlaas_merge_dir_conf(p, d, dj);
        }
        if (d != base)
            add_section(p, seen, s, prefix, d);
    }
}

void rlaas_admin_zones_build(apr_pool_t *pconf, apr_pool_t *ptemp,
                             server_rec *s)
{
    /* the merges and the signatures are scratch: an entry keeps only
     * pointers into the configuration itself */
    apr_hash_t *seen = apr_hash_make(ptemp);

    zones = apr_array_make(pconf, 16, sizeof(rlaas_admin_zone_t));
    keep = pconf;
    banned_zones = apr_hash_make(pconf);
    banned = apr_hash_make(pconf);
    main_server = s;
    for (; s != NULL; s = s->next) {
        const rlaas_server_conf_t *sc = rlaas_server_conf(s);
        const char *prefix = rlaas_server_prefix(sc);
        const rlaas_dir_conf_t *base =
            ap_get_module_config(s->lookup_defaults, &rlaas_module);
        core_server_config *core = ap_get_core_module_config(s->module_config);
        apr_hash_index_t *hi;

        for (hi = sc->policies ? apr_hash_first(ptemp, sc->policies) : NULL;
             hi != NULL; hi = apr_hash_next(hi)) {
            const rlaas_policy_t *pol = apr_hash_this_val(hi);
            rlaas_admin_zone_t z;

            z.name = pol->name;
            z.zone = pol->name;
            z.prefix = rlaas_server_prefix(rlaas_server_conf(pol->server));
            z.ns = pol->ns;
            z.sources = pol->sources;
            z.strategy = pol->strategy;
            z.window_ms = pol->window_ms;
            z.cal = pol->cal;
            z.tz = rlaas_calendar_zone(rlaas_server_conf(pol->server));
            z.limit = pol->limit > 0 ? pol->limit : 0;
            z.bytes_unit = pol->bytes_unit > 0 ? pol->bytes_unit : 0;
            z.policy = 1;
            z.conc = 0;
            z.server = s;
            add(ptemp, seen, &z);
        }
        if (base != NULL)
            add_section(ptemp, seen, s, prefix, base);
        add_sections(ptemp, seen, s, prefix, base, core->sec_url);
        add_sections(ptemp, seen, s, prefix, base, core->sec_dir);
    }
}

apr_array_header_t *rlaas_admin_zones_named(apr_pool_t *p, const server_rec *s,
                                            const char *name)
{
    apr_array_header_t *out =
        apr_array_make(p, 2, sizeof(const rlaas_admin_zone_t *));
    int i;

    for (i = 0; zones != NULL && i < zones->nelts; i++) {
        const rlaas_admin_zone_t *z =
            &APR_ARRAY_IDX(zones, i, rlaas_admin_zone_t);

        if (z->server == s && !z->conc && strcmp(z->name, name) == 0)
            APR_ARRAY_PUSH(out, const rlaas_admin_zone_t *) = z;
    }
    return out;
}

apr_array_header_t *rlaas_admin_zones_of(apr_pool_t *p, const server_rec *s)
{
    apr_array_header_t *out =
        apr_array_make(p, 16, sizeof(const rlaas_admin_zone_t *));
    int i;

    for (i = 0; zones != NULL && i < zones->nelts; i++) {
        const rlaas_admin_zone_t *z =
            &APR_ARRAY_IDX(zones, i, rlaas_admin_zone_t);

        if (z->server == s)
            APR_ARRAY_PUSH(out, const rlaas_admin_zone_t *) = z;
    }
    return out;
}

/* ---- whose key ---- */

/* The zone part of a ban's record past its prefix (rlaas_keybuild.h:
 * [Z ":"] I ":ban"): *zone and its length, or 0 when it has none. The
 * part before the first ':' is a zone unless it is a tagged segment
 * ('='), a hash tag ('{'), or the identity itself (what follows it is the
 * suffix alone). */
static size_t zone_part(const char *rest, const char **zone)
{
    const char *c = strchr(rest, ':');
    size_t n;

    *zone = rest;
    if (c == NULL || strchr(c + 1, ':') == NULL)
        return 0;
    n = (size_t)(c - rest);
    if (n == 0 || memchr(rest, '=', n) != NULL || rest[0] == '{')
        return 0;
    return n;
}

/* Whether zone part zp (n bytes, 0: none) is z's in its keys. */
static int zone_is(const rlaas_admin_zone_t *z, const char *zp, size_t n)
{
    size_t zl = z->zone ? strlen(z->zone) : 0, nl = z->ns ? strlen(z->ns) : 0;

    if (z->zone == NULL && z->ns == NULL)
        return n == 0;
    if (n != zl + (z->ns ? 1 + nl : 0) ||
        strncmp(zp, z->zone ? z->zone : "", zl))
        return 0;
    return z->ns == NULL ||
           (zp[zl] == '@' && memcmp(zp + zl + 1, z->ns, nl) == 0);
}

/* Whether another server of the chain keys under the same prefix. */
static int prefix_shared(const server_rec *s, const char *prefix)
{
    const server_rec *o;

    for (o = main_server; o != NULL; o = o->next)
        if (o != s &&
            strcmp(rlaas_server_prefix(rlaas_server_conf(o)), prefix) == 0)
            return 1;
    return 0;
}

int rlaas_admin_zones_owns(const server_rec *s, const char *key)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(s);
    const char *prefix = rlaas_server_prefix(sc), *zp;
    size_t plen = strlen(prefix), n;
    int i;

    if (strncmp(key, prefix, plen) != 0)
        return 0;
    if (!prefix_shared(s, prefix))
        return 1;
    n = zone_part(key + plen, &zp);
    /* a tenant's zone of this host: "zone@H", or "zone@H~..." where a
     * tenant's namespace adds its root to the host's H (no host's H holds
     * a '~' after its first byte, so no other host's is read so) */
    if (n > 0) {
        const char *host = s->server_hostname ? s->server_hostname : "";
        char ns[RLAAS_NS_MAX];
        size_t nl = rlaas_key_namespace(ns, host, strlen(host));
        const char *at = memchr(zp, '@', n);
        size_t left = at != NULL ? (size_t)(zp + n - at - 1) : 0;

        if (at != NULL && left >= nl && memcmp(at + 1, ns, nl) == 0 &&
            (left == nl || at[1 + nl] == '~'))
            return 1;
    }
    for (i = 0; zones != NULL && i < zones->nelts; i++) {
        const rlaas_admin_zone_t *z =
            &APR_ARRAY_IDX(zones, i, rlaas_admin_zone_t);

        if (z->server == s && strcmp(z->prefix, prefix) == 0 &&
            zone_is(z, zp, n))
            return 1;
    }
    return 0;
}

/* The values of id for z's sources, and the client address among them. */
static const char *values(apr_pool_t *p, const rlaas_server_conf_t *sc,
                          const rlaas_admin_zone_t *z, const char *id,
                          rlaas_key_part_t *parts, int *n, char *ip)
{
    static const rlaas_key_source_t ip_only = {
        {RLAAS_SRC_IP, NULL, 0, 0}, NULL, NULL};
    const rlaas_key_source_t *src = &ip_only;
    char *copy, *last = NULL, *v;
    int i;

    *n = 1;
    if (z->sources != NULL) {
        src = (const rlaas_key_source_t *)z->sources->elts;
        *n = z->sources->nelts;
    }
    copy = apr_pstrdup(p, id);
    strcpy(ip, "-");
    for (i = 0; i < *n; i++) {
        v = apr_strtok(i == 0 ? copy : NULL, " \t", &last);
        if (v == NULL)
            return apr_psprintf(p,
                                "zone %s is keyed by %d sources: give their "
                                "values separated by spaces",
                                z->name, *n);
        parts[i].type = src[i].src.type;
        parts[i].name = src[i].name;
        parts[i].name_len = src[i].src.name_len;
        parts[i].credential = src[i].src.credential;
        /* a user as the user source names it (RLaaSUserCase) */
        parts[i].value = src[i].src.type == RLAAS_SRC_USER
                             ? rlaas_authuser_fold(p, sc, v)
                             : v;
        parts[i].value_len = strlen(parts[i].value);
        if (src[i].src.type == RLAAS_SRC_IP &&
            rlaas_ip_render(ip, v, strlen(v), rlaas_server_ipv6_prefix(sc)) ==
                0)
            return apr_psprintf(p,
                                "zone %s is keyed by the client address: "
                                "the id must be one",
                                z->name);
    }
    if (apr_strtok(NULL, " \t", &last) != NULL)
        return apr_psprintf(p,
                            "zone %s is keyed by %d source(s): too many "
                            "values in the id",
                            z->name, *n);
    return NULL;
}

const char *rlaas_admin_keys(apr_pool_t *p, const rlaas_server_conf_t *sc,
                             const rlaas_admin_zone_t *z, const char *id,
                             int what, int64_t now_ms, apr_array_header_t *keys,
                             const char **base_out)
{
    rlaas_key_part_t parts[RLAAS_SOURCES_MAX];
    char ip[RLAAS_IP_TEXT_MAX + 1];
    char *key = apr_palloc(p, RLAAS_KEY_MAX + 1);
    rlaas_key_spec_t k;
    const char *err;
    size_t len;
    int64_t w;

    memset(&k, 0, sizeof(k));
    if ((err = values(p, sc, z, id, parts, &k.nparts, ip)) != NULL)
        return err;
    k.parts = parts;
    k.prefix = z->prefix;
    k.prefix_len = strlen(z->prefix);
    k.zone = z->zone;
    k.zone_len = z->zone ? strlen(z->zone) : 0;
    k.ns = z->ns;
    k.ns_len = z->ns ? strlen(z->ns) : 0;
    k.ip = ip;
    k.ip_len = strlen(ip);
    k.hashtag = rlaas_target_cluster(sc->target);
    k.secret = rlaas_keysecret();
    /* a ban's record is built as RLaaSBan builds it (rlaas_limit.c) */
    k.strategy = what == RLAAS_ADMIN_KEYS_BAN ? RLAAS_BAN : z->strategy;
    len = rlaas_key_build(key, &k);
    if (len == 0)
        return "the key could not be built (a value too long?)";
    if (base_out != NULL)
        *base_out = key;
    if (k.strategy != RLAAS_STRATEGY_FIXED) {
        APR_ARRAY_PUSH(keys, const char *) = key;
        return NULL;
    }
    /* fixed: the window now and either side of it (clocks a little
     * apart, a window that just ended); a calendar's periods likewise */
    if (z->cal != NULL) {
        const rlaas_cal_table_t *tb;
        const char *arg;
        char name[RLAAS_CAL_NAME_MAX + 1];
        int i;

        tb = rlaas_calendar_table(p, z->cal, z->tz, now_ms, &arg);
        for (i = 0; i < 3; i++) {
            rlaas_cal_name(tb->tag, tb->b[i], name);
            APR_ARRAY_PUSH(keys, const char *) =
                apr_pstrcat(p, key, name, NULL);
        }
        return NULL;
    }
    for (w = now_ms / z->window_ms - 1; w <= now_ms / z->window_ms + 1; w++)
        APR_ARRAY_PUSH(keys, const char *) =
            apr_psprintf(p, "%s%" APR_INT64_T_FMT, key, w);
    return NULL;
}
