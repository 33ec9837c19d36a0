#include "rlaas_tenant.h"

#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_key.h"
#include "rlaas_troot.h"

APLOG_USE_MODULE(rlaas);

int rlaas_tenant_reading(const cmd_parms *cmd)
{
    return cmd->pool == cmd->temp_pool;
}

/* ---- the namespace ---- */

/* The directory of the .htaccess being read: where the file is (inside
 * its <Files> or <If>, httpd's cmd->path names the section instead). */
static const char *htaccess_dir(const cmd_parms *cmd, size_t *len)
{
    const char *f = cmd->directive ? cmd->directive->filename : NULL;
    const char *slash = f ? strrchr(f, '/') : NULL;

    if (slash == NULL) {
        f = cmd->path;
        *len = f ? strlen(f) : 0;
        return f;
    }
    *len = (size_t)(slash - f);
    return f;
}

/* The root of the .htaccess' directory under the host's longest matching
 * RLaaSTenantRoot pattern: its length (*dir: the directory), or 0 (the
 * tenant is the host). */
static size_t tenant_root(const cmd_parms *cmd, const char **dir)
{
    const apr_array_header_t *roots =
        rlaas_server_conf(cmd->server)->tenant_roots;
    size_t len, dlen, best = 0;
    int i, segs, most = 0;

    *dir = htaccess_dir(cmd, &dlen);
    if (roots == NULL || *dir == NULL)
        return 0;
    for (i = 0; i < roots->nelts; i++) {
        len = rlaas_troot_match(APR_ARRAY_IDX(roots, i, const char *), *dir,
                                dlen, &segs);
        if (len > 0 && segs > most) {
            best = len;
            most = segs;
        }
    }
    return best;
}

/* The tenant's namespace: its host's, and "~t" or its root's hash. */
static const char *tenant_ns(cmd_parms *cmd)
{
    const char *host = cmd->server->server_hostname, *dir;
    size_t root = tenant_root(cmd, &dir);
    char ns[RLAAS_NS_MAX];
    size_t n;

    if (host == NULL)
        host = "";
    n = rlaas_key_tenant_namespace(ns, host, strlen(host),
                                   root > 0 ? dir : NULL, root);
    return apr_pstrmemdup(cmd->pool, ns, n);
}

void rlaas_tenant_mark(cmd_parms *cmd, rlaas_dir_conf_t *d, int bit)
{
    if (!rlaas_tenant_reading(cmd)) {
        d->by_tenant &= ~bit;
        return;
    }
    d->by_tenant |= bit;
    if ((bit & RLAAS_T_COUNTING) && d->ns == NULL)
        d->ns = tenant_ns(cmd);
}

/* The settings a section sets (RLAAS_T_*), whoever it is. */
static int settings_of(const rlaas_dir_conf_t *c)
{
    return (c->limit != -1 ? RLAAS_T_LIMIT : 0) |
           (c->zone != NULL ? RLAAS_T_ZONE : 0) |
           (c->window_ms != -1 ? RLAAS_T_WINDOW : 0) |
           (c->strategy != RLAAS_STRATEGY_UNSET ? RLAAS_T_STRATEGY : 0) |
           (c->sources != NULL ? RLAAS_T_KEY_BY : 0) |
           (c->cost != -1 ? RLAAS_T_COST : 0) |
           (c->count_if_set != -1 ? RLAAS_T_COUNT_IF : 0) |
           (c->ban_ms != -1 ? RLAAS_T_BAN : 0) |
           (c->lease != -1 ? RLAAS_T_LEASE : 0) |
           (c->conc != -1 || c->conc_timeout_ms != -1 ? RLAAS_T_CONC : 0) |
           (c->dry_run != -1 ? RLAAS_T_DRY_RUN : 0);
}

/* Each mark goes with its setting. The own limit counts in a tenant's
 * namespace while any setting in force that defines how it counts is a
 * tenant's: the one that set such a setting last, or, when the operator's
 * section below sets some again and leaves one of the tenant's in force,
 * still the tenant's (an operator's zone below a tenant's RLaaSCost must
 * not put that cost on the operator's counter). */
void rlaas_tenant_merge(rlaas_dir_conf_t *d, const rlaas_dir_conf_t *base,
                        const rlaas_dir_conf_t *add)
{
    int set = settings_of(add);

    d->by_tenant = (add->by_tenant & set) | (base->by_tenant & ~set);
    if ((set & RLAAS_T_COUNTING) && add->ns != NULL)
        d->ns = add->ns;
    else if (d->by_tenant & RLAAS_T_COUNTING)
        d->ns = base->ns;
    else
        d->ns = NULL;
}

/* ---- bounds ---- */

int64_t rlaas_server_window_max(const rlaas_server_conf_t *sc)
{
    return sc->window_max > 0 ? sc->window_max : RLAAS_DEFAULT_WINDOW_MAX_MS;
}

static const char *window_max_arg(const rlaas_server_conf_t *sc)
{
    return sc->window_max > 0 ? sc->window_max_arg
                              : RLAAS_DEFAULT_WINDOW_MAX_ARG;
}

int64_t rlaas_server_log_max(const rlaas_server_conf_t *sc)
{
    return sc->log_max > 0 ? sc->log_max : RLAAS_DEFAULT_LOG_MAX;
}

const char *rlaas_tenant_window_bound(cmd_parms *cmd, const char *arg,
                                      int64_t ms)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);

    if (!rlaas_tenant_reading(cmd) || ms <= rlaas_server_window_max(sc))
        return NULL;
    return apr_psprintf(cmd->pool,
                        "%s: invalid value '%s' in .htaccess: expected a "
                        "duration up to %s (" RLAAS_D_WINDOW_MAX
                        " of this server)",
                        cmd->cmd->name, arg, window_max_arg(sc));
}

const char *rlaas_tenant_log_bound(cmd_parms *cmd, const rlaas_dir_conf_t *d)
{
    int64_t max = rlaas_server_log_max(rlaas_server_conf(cmd->server));

    if (!rlaas_tenant_reading(cmd) ||
        d->strategy != RLAAS_STRATEGY_SLIDING_LOG || d->limit <= max)
        return NULL;
    return apr_psprintf(cmd->pool,
                        "%s: invalid value in .htaccess: RLaaSLimit "
                        "%" APR_INT64_T_FMT " with the sliding log "
                        "(sliding_log), which keeps an entry per request "
                        "counted: expected a limit up to %" APR_INT64_T_FMT
                        " (" RLAAS_D_LOG_MAX
                        " of this server), or another strategy",
                        cmd->cmd->name, d->limit, max);
}

/* A tenant's limit or strategy on the sliding log. */
static int tenant_log(const rlaas_dir_conf_t *d)
{
    return (d->by_tenant & (RLAAS_T_LIMIT | RLAAS_T_STRATEGY)) &&
           rlaas_dir_strategy(d) == RLAAS_STRATEGY_SLIDING_LOG;
}

const char *rlaas_tenant_bounds(request_rec *r, const rlaas_dir_conf_t *d)
{
    int64_t max = rlaas_server_log_max(rlaas_server_conf(r->server));

    if (!rlaas_dir_active(d) || d->limit_expr != NULL || !tenant_log(d) ||
        d->limit <= max)
        return NULL;
    return apr_psprintf(r->pool,
                        "the section's own limit %" APR_INT64_T_FMT
                        " on the sliding log, set by a .htaccess (its "
                        "RLaaSLimit or RLaaSStrategy), is over " RLAAS_D_LOG_MAX
                        " %" APR_INT64_T_FMT,
                        d->limit, max);
}

int64_t rlaas_tenant_limit_cap(request_rec *r, const rlaas_dir_conf_t *d)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    int64_t max = rlaas_server_limit_max(sc);

    if (tenant_log(d) && rlaas_server_log_max(sc) < max)
        max = rlaas_server_log_max(sc);
    return max;
}

/* ---- directives ---- */

const char *rlaas_tenant_set_root(cmd_parms *cmd, void *dummy, int argc,
                                  char *const argv[])
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    const char *err;
    int i;

    (void)dummy;
    if (argc < 1)
        return apr_psprintf(cmd->pool,
                            "%s: expected one or more directory patterns, "
                            "e.g. /home/*/public_html",
                            cmd->cmd->name);
    if (sc->tenant_roots == NULL)
        sc->tenant_roots = apr_array_make(cmd->pool, argc, sizeof(char *));
    for (i = 0; i < argc; i++) {
        if ((err = rlaas_troot_check(argv[i])) != NULL)
            return apr_psprintf(cmd->pool,
                                "%s: invalid pattern '%s': expected %s",
                                cmd->cmd->name, argv[i], err);
        if (sc->tenant_roots->nelts >= RLAAS_TROOT_MAX)
            return apr_psprintf(cmd->pool,
                                "%s: too many patterns with '%s': expected "
                                "at most %d for a server or virtual host",
                                cmd->cmd->name, argv[i], RLAAS_TROOT_MAX);
        APR_ARRAY_PUSH(sc->tenant_roots, const char *) = argv[i];
    }
    return NULL;
}

const char *rlaas_tenant_set_window_max(cmd_parms *cmd, void *dummy,
                                        const char *arg)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    const char *err;

    (void)dummy;
    err = rlaas_parse_duration_ms(arg, 1, RLAAS_WINDOW_MAX_MS, &sc->window_max);
    if (err != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected %s, from 1ms "
                            "to 30d",
                            cmd->cmd->name, arg, err);
    sc->window_max_arg = arg;
    return NULL;
}

const char *rlaas_tenant_set_log_max(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    const char *err = rlaas_parse_limit(arg, &sc->log_max);

    (void)dummy;
    if (err != NULL)
        return apr_psprintf(cmd->pool, "%s: invalid value '%s': expected %s",
                            cmd->cmd->name, arg, err);
    return NULL;
}
