#include "rlaas_directives.h"

#include "http_log.h"
#include "http_core.h"
#include "apr_file_info.h"
#include "apr_strings.h"
#include "apr_thread_mutex.h"

#include "rlaas_bytes.h"
#include "rlaas_calendar.h"
#include "rlaas_config_policy.h"
#include "rlaas_ip.h"
#include "rlaas_keysecret.h"
#include "rlaas_metrics.h"
#include "rlaas_outcome.h"
#include "rlaas_version.h"
#include "rlaas_target.h"
#include "rlaas_tenant.h"
#include "rlaas_concurrency.h"

APLOG_USE_MODULE(rlaas);

extern module AP_MODULE_DECLARE_DATA rlaas_module;

/* RLaaSConsole on somewhere: else the console's counts are not kept */
static int console_any;

int rlaas_config_pre_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp)
{
    (void)plog;
    (void)ptemp;
    rlaas_config_policy_pre_config(pconf);
    console_any = 0;
    rlaas_metrics_names_reset(pconf);
    rlaas_keysecret_pre_config();
    return OK;
}

static int in_htaccess(const cmd_parms *cmd)
{
    return rlaas_tenant_reading(cmd);
}

/* ---- server scope ---- */

void *rlaas_create_server_conf(apr_pool_t *p, server_rec *s)
{
    rlaas_server_conf_t *sc = apr_pcalloc(p, sizeof(*sc));

    (void)s;
    sc->target = rlaas_target_new(p);
    sc->ipv6_prefix = -1;
    sc->limit_max = -1;
    sc->backend = RLAAS_BACKEND_UNSET;
    sc->local_divisor = -1;
    sc->local_size = -1;
    sc->user_case = -1;
    sc->window_max = -1;
    sc->log_max = -1;
    return sc;
}

#define PICK(field, unset) (add->field != (unset) ? add->field : base->field)

void *rlaas_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    const rlaas_server_conf_t *base = basev, *add = addv;
    rlaas_server_conf_t *sc = apr_pcalloc(p, sizeof(*sc));

    sc->target_set = add->target_set;
    sc->target = add->target_set
                     ? rlaas_target_merge(p, base->target, add->target)
                     : base->target;
    sc->key_prefix = PICK(key_prefix, NULL);
    sc->prefix_own = add->prefix_own;
    sc->ipv6_prefix = PICK(ipv6_prefix, -1);
    sc->limit_max = PICK(limit_max, -1);
    /* the host's own policies over the main server's; enforced: both */
    if (base->policies != NULL && add->policies != NULL)
        sc->policies = apr_hash_overlay(p, add->policies, base->policies);
    else
        sc->policies = add->policies ? add->policies : base->policies;
    if (base->enforce != NULL && add->enforce != NULL)
        sc->enforce = apr_array_append(p, base->enforce, add->enforce);
    else
        sc->enforce = add->enforce ? add->enforce : base->enforce;
    sc->backend = PICK(backend, RLAAS_BACKEND_UNSET);
    sc->local_divisor = PICK(local_divisor, -1);
    sc->local_size = PICK(local_size, -1);
    sc->user_case = PICK(user_case, -1);
    sc->tenant_roots = PICK(tenant_roots, NULL);
    sc->window_max = PICK(window_max, -1);
    sc->tz = PICK(tz, NULL);
    sc->tz_name = PICK(tz_name, NULL);
    sc->window_max_arg = PICK(window_max_arg, NULL);
    sc->log_max = PICK(log_max, -1);
    return sc;
}

static const char *set_key_prefix(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = rlaas_parse_prefix(arg);

    (void)dummy;
    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, err);
    rlaas_server_conf(cmd->server)->key_prefix = arg;
    rlaas_server_conf(cmd->server)->prefix_own = 1;
    return NULL;
}

/* How much of an IPv6 client's address names the client: a /64 is one
 * household or VM. */
static const char *set_ipv6_prefix(cmd_parms *cmd, void *dummy, const char *arg)
{
    int64_t v;
    const char *err = rlaas_parse_nonneg_int(arg, RLAAS_IPV6_PREFIX_MAX, &v);

    (void)dummy;
    if (err != NULL || v < RLAAS_IPV6_PREFIX_MIN)
        return rlaas_config_bad_value(
            cmd, arg,
            "an IPv6 prefix length from 32 to 128 (64: one "
            "client per /64 network; 128: every address)");
    rlaas_server_conf(cmd->server)->ipv6_prefix = (int)v;
    return NULL;
}

static const char *set_limit_max(cmd_parms *cmd, void *dummy, const char *arg)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    const char *err = rlaas_parse_limit(arg, &sc->limit_max);

    (void)dummy;
    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, err);
    return NULL;
}

static const char *set_backend(cmd_parms *cmd, void *dummy, const char *arg)
{
    static const rlaas_config_word_t words[] = {
        {"redis", RLAAS_BACKEND_REDIS}, {"local", RLAAS_BACKEND_LOCAL}, {0}};

    (void)dummy;
    return rlaas_config_word(cmd, arg, words,
                             "redis (state in Redis, shared by every server) "
                             "or local (state in this server's shared memory)",
                             &rlaas_server_conf(cmd->server)->backend);
}

/* One table for the whole server, made before any virtual host is read
 * from: the size is the main server's alone, as an nginx zone's. */
static const char *set_local_size(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
    int64_t v;

    (void)dummy;
    if (err != NULL)
        return err;
    if (rlaas_parse_size(arg, RLAAS_LOCAL_SIZE_MIN, RLAAS_LOCAL_SIZE_MAX, &v) !=
        NULL)
        return rlaas_config_bad_value(
            cmd, arg,
            "a size from 64K to 4G: a number of bytes, or "
            "followed by K, M or G (64K, 10M, 1G)");
    rlaas_server_conf(cmd->server)->local_size = v;
    return NULL;
}

static const char *set_local_divisor(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    int64_t v;

    (void)dummy;
    if (rlaas_parse_nonneg_int(arg, RLAAS_LOCAL_DIVISOR_MAX, &v) != NULL ||
        v < 1)
        return rlaas_config_bad_value(
            cmd, arg,
            "an integer from 1 to 1000: the number of servers "
            "sharing the limit");
    rlaas_server_conf(cmd->server)->local_divisor = (int)v;
    return NULL;
}

/* ---- directory scope ---- */

/* The RateLimit-Policy item of the section's own limit, where it is the
 * same for every request: written once here, not per response. */
static const rlaas_policy_field_t *field_of(apr_pool_t *p,
                                            const rlaas_dir_conf_t *d)
{
    rlaas_policy_field_t *f;
    char buf[RLAAS_NAME_MAX + 64];

    if (d->limit <= 0 || d->limit_expr != NULL || d->cal != NULL ||
        d->limit_unit != 0)
        return NULL;
    f = apr_palloc(p, sizeof(*f));
    f->name = d->zone != NULL ? d->zone : RLAAS_POLICY_DEFAULT;
    f->limit = d->limit;
    f->window_ms = d->use.window_ms;
    f->len = (size_t)rlaas_fmt_policy(buf, sizeof(buf), f->name, f->limit,
                                      f->window_ms);
    f->text = apr_pstrmemdup(p, buf, f->len);
    return f;
}

/* d->use: d's settings, the defaults where none is set. */
static void resolve(apr_pool_t *p, rlaas_dir_conf_t *d)
{
    d->use.window_ms = rlaas_dir_window_ms(d);
    d->use.strategy = rlaas_dir_strategy(d);
    d->use.headers = d->headers != RLAAS_HEADERS_UNSET
                         ? (rlaas_headers_e)d->headers
                         : RLAAS_HEADERS_DRAFT;
    d->use.fail =
        d->fail_open != RLAAS_FAIL_UNSET ? d->fail_open : RLAAS_FAIL_CLOSED;
    d->use.lease =
        d->lease != -1 ? (rlaas_lease_mode_e)d->lease : RLAAS_LEASE_MODE_AUTO;
    d->use.conc_timeout_ms = rlaas_dir_conc_timeout_ms(d);
    d->use.conc_status = rlaas_dir_conc_status(d);
    /* a merge made per request (a .htaccess's) leaves it to the
     * response, which writes it once */
    d->use.field = d->kept ? field_of(p, d) : NULL;
}

/* A configuration made while the server reads its configuration lives as
 * long as it; one made while requests run is a .htaccess's. */
static int read_with_configuration(void)
{
    return ap_state_query(AP_SQ_MAIN_STATE) != AP_SQ_MS_RUN_MPM;
}

void *rlaas_create_dir_conf(apr_pool_t *p, char *dir)
{
    rlaas_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));

    (void)dir;
    d->kept = read_with_configuration();
    d->limit = -1;
    d->window_ms = -1;
    d->strategy = RLAAS_STRATEGY_UNSET;
    d->fail_open = RLAAS_FAIL_UNSET;
    d->engine = -1;
    d->headers = RLAAS_HEADERS_UNSET;
    d->dry_run = -1;
    d->circuit_fail_open = -1;
    d->limit_fallback = -1;
    d->cost = -1;
    d->zone_metric = -1;
    d->lease = -1;
    d->console = -1;
    d->metrics = -1;
    rlaas_outcome_dir_init(d);
    rlaas_conc_dir_init(d);
    resolve(p, d);
    return d;
}

static void merge(apr_pool_t *p, rlaas_dir_conf_t *d,
                  const rlaas_dir_conf_t *base, const rlaas_dir_conf_t *add,
                  int kept)
{
    /* fields that travel together come from the side that set them: a
     * limit with its expression, fallback and unit, a zone with its
     * metric, a cost with its expression, a window with its calendar,
     * identity sources with whether they need the user */
    const rlaas_dir_conf_t *f;

    f = add->limit != -1 ? add : base;
    d->limit = f->limit;
    d->limit_expr = f->limit_expr;
    d->limit_fallback = f->limit_fallback;
    d->limit_unit = f->limit_unit;
    f = add->zone != NULL ? add : base;
    d->zone = f->zone;
    d->zone_metric = f->zone_metric;
    f = add->cost != -1 ? add : base;
    d->cost = f->cost;
    d->cost_expr = f->cost_expr;
    f = add->window_ms != -1 ? add : base;
    d->window_ms = f->window_ms;
    d->cal = f->cal;
    f = add->sources != NULL ? add : base;
    d->sources = f->sources;
    d->sources_need_user = f->sources_need_user;
    /* operations down the tree, in order: replayed per request */
    if (base->apply != NULL && add->apply != NULL)
        d->apply = apr_array_append(p, base->apply, add->apply);
    else
        d->apply = add->apply ? add->apply : base->apply;
    d->strategy = PICK(strategy, RLAAS_STRATEGY_UNSET);
    d->fail_open = PICK(fail_open, RLAAS_FAIL_UNSET);
    d->engine = PICK(engine, -1);
    d->headers = PICK(headers, RLAAS_HEADERS_UNSET);
    d->dry_run = PICK(dry_run, -1);
    d->circuit_fail_open = PICK(circuit_fail_open, -1);
    d->lease = PICK(lease, -1);
    d->console = PICK(console, -1);
    d->metrics = PICK(metrics, -1);
    rlaas_outcome_dir_merge(d, base, add);
    rlaas_conc_dir_merge(d, base, add);
    /* last: who set each of the settings merged above, and so where the
     * own limit counts */
    rlaas_tenant_merge(d, base, add);
    d->kept = kept;
    d->merges = NULL;
    resolve(p, d);
}

/* ---- merges remembered ----
 *
 * httpd merges the sections of a request's path for every request (a
 * <Location> twice: its walk runs before and after the directory walk),
 * and the merge of two configurations that live as long as the
 * configuration is the same every time: each child remembers it, in the
 * added section's list, keyed by the base. A .htaccess's configuration, and
 * what is merged from one, is merged per request as before. Entries are
 * only ever prepended, each complete before it is published, so readers
 * take no lock; a section keeps at most MERGES_MAX. */
#define MERGES_MAX 8

typedef struct rlaas_dir_merged_s {
    const rlaas_dir_conf_t *base;
    const rlaas_dir_conf_t *d;
    const struct rlaas_dir_merged_s *next;
    int n; /* entries from this one down */
} merged_t;

static apr_pool_t *merges_pool; /* the child's; NULL: nothing remembered */
static apr_thread_mutex_t *merges_lock;

void rlaas_config_child_init(apr_pool_t *pchild)
{
    apr_pool_t *p;

    if (apr_pool_create(&p, pchild) != APR_SUCCESS)
        return;
    if (apr_thread_mutex_create(&merges_lock, APR_THREAD_MUTEX_DEFAULT, p) !=
        APR_SUCCESS)
        return;
    merges_pool = p;
}

static const merged_t *merges_of(const rlaas_dir_conf_t *add)
{
    return __atomic_load_n(&add->merges, __ATOMIC_ACQUIRE);
}

static const rlaas_dir_conf_t *remembered(const rlaas_dir_conf_t *base,
                                          const rlaas_dir_conf_t *add)
{
    const merged_t *m;

    for (m = merges_of(add); m != NULL; m = m->next) {
        if (m->base == base)
            return m->d;
    }
    return NULL;
}

/* The merge, made once in the child's pool and added to add's list; NULL
 * if the list is full (the caller merges per request). */
static const rlaas_dir_conf_t *remember(const rlaas_dir_conf_t *base,
                                        rlaas_dir_conf_t *add)
{
    const rlaas_dir_conf_t *found;
    rlaas_dir_conf_t *d = NULL;
    merged_t *m;

    apr_thread_mutex_lock(merges_lock);
    if ((found = remembered(base, add)) == NULL &&
        (merges_of(add) == NULL || merges_of(add)->n < MERGES_MAX)) {
        d = apr_palloc(merges_pool, sizeof(*d));
        merge(merges_pool, d, base, add, 1);
        m = apr_palloc(merges_pool, sizeof(*m));
        m->base = base;
        m->d = d;
        m->next = merges_of(add);
        m->n = m->next != NULL ? m->next->n + 1 : 1;
        __atomic_store_n(&add->merges, m, __ATOMIC_RELEASE);
        found = d;
    }
    apr_thread_mutex_unlock(merges_lock);
    return found;
}

void *rlaas_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    const rlaas_dir_conf_t *base = basev, *found;
    rlaas_dir_conf_t *add = addv, *d;

    if (merges_pool != NULL && base->kept && add->kept) {
        if ((found = remembered(base, add)) != NULL ||
            (found = remember(base, add)) != NULL)
            return (void *)found; /* a merge is never written */
    }
    d = apr_palloc(p, sizeof(*d));
    merge(p, d, base, add, read_with_configuration());
    return d;
}

/* A limit a .htaccess sets stays within RLaaSLimitMax. */
static const char *over_max(cmd_parms *cmd, const char *arg, int64_t v)
{
    int64_t max = rlaas_server_limit_max(rlaas_server_conf(cmd->server));

    if (!in_htaccess(cmd) || v <= max)
        return NULL;
    return apr_psprintf(cmd->pool,
                        "%s: invalid value '%s' in .htaccess: expected an "
                        "integer from 1 to %" APR_INT64_T_FMT
                        " (" RLAAS_D_LIMIT_MAX " of this server)",
                        cmd->cmd->name, arg, max);
}

/* A fixed cost above a fixed limit of the same section never fits. */
static const char *cost_over_limit(cmd_parms *cmd, const rlaas_dir_conf_t *d)
{
    if (d->limit <= 0 || d->cost_expr != NULL || d->cost <= d->limit)
        return NULL;
    return apr_psprintf(cmd->pool,
                        "%s: invalid value: cost %" APR_INT64_T_FMT
                        " above the limit %" APR_INT64_T_FMT
                        " of the same section: expected a cost from 0 to "
                        "the limit",
                        cmd->cmd->name, d->cost, d->limit);
}

/* RLaaSCost bytes and the limit, the strategy of the same section
 * (rlaas_bytes_conflict; a request checks the merged configuration). */
static const char *bytes_conflict(cmd_parms *cmd, const rlaas_dir_conf_t *d,
                                  const char *arg)
{
    const char *why = rlaas_bytes_conflict(cmd->temp_pool, d, 0);

    return why == NULL ? NULL
                       : apr_psprintf(cmd->pool, "%s: invalid value '%s': %s",
                                      cmd->cmd->name, arg, why);
}

/* RLaaSLimit N, or RLaaSLimit expr=EXPR [fallback] */
static const char *set_limit(cmd_parms *cmd, void *dv, const char *arg,
                             const char *fallback)
{
    rlaas_dir_conf_t *d = dv;
    const char *err;
    int64_t v;

    if (rlaas_parse_prefixed(arg, "expr=")) {
        d->limit_expr = ap_expr_parse_cmd(
            cmd, arg + 5, AP_EXPR_FLAG_STRING_RESULT, &err, NULL);
        if (err != NULL || arg[5] == '\0')
            return apr_psprintf(cmd->pool, "%s: invalid expression in '%s': %s",
                                cmd->cmd->name, arg, err ? err : "empty");
        d->limit = 0;
        d->limit_fallback = -1;
        d->limit_unit = 0;
        if (fallback != NULL) {
            if ((err = rlaas_parse_limit(fallback, &v)) != NULL)
                return apr_psprintf(cmd->pool,
                                    "%s: invalid fallback '%s': expected %s",
                                    cmd->cmd->name, fallback, err);
            if ((err = over_max(cmd, fallback, v)) != NULL)
                return err;
            d->limit_fallback = v;
        }
        rlaas_tenant_mark(cmd, d, RLAAS_T_LIMIT);
        return NULL;
    }
    if (fallback != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s %s': expected an integer "
                            "from 1 to 1000000000, or expr=EXPRESSION and an "
                            "optional fallback",
                            cmd->cmd->name, arg, fallback);
    d->limit_unit = 0;
    if (rlaas_bytes_is_size(arg))
        err = rlaas_bytes_limit(arg, &v, &d->limit_unit);
    else
        err = rlaas_parse_limit(arg, &v);
    if (err != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected %s, "
                            "or expr=EXPRESSION [fallback]",
                            cmd->cmd->name, arg, err);
    /* a size is bounded as the bytes it is, whatever unit counts them */
    if ((err = over_max(cmd, arg, d->limit_unit > 1 ? v * d->limit_unit : v)) !=
        NULL)
        return err;
    if ((err = bytes_conflict(cmd, d, arg)) != NULL)
        return err;
    d->limit = v;
    d->limit_expr = NULL;
    d->limit_fallback = -1;
    rlaas_tenant_mark(cmd, d, RLAAS_T_LIMIT);
    if ((err = rlaas_tenant_log_bound(cmd, d)) != NULL)
        return err;
    return cost_over_limit(cmd, d);
}

/* RLaaSCost N, RLaaSCost expr=EXPR, or RLaaSCost bytes */
static const char *set_cost(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;
    const char *err;

    if (rlaas_parse_keyword(arg, "bytes")) {
        d->cost = RLAAS_COST_BYTES;
        d->cost_expr = NULL;
        rlaas_tenant_mark(cmd, d, RLAAS_T_COST);
        return bytes_conflict(cmd, d, arg);
    }
    if (rlaas_parse_prefixed(arg, "expr=")) {
        d->cost_expr = ap_expr_parse_cmd(
            cmd, arg + 5, AP_EXPR_FLAG_STRING_RESULT, &err, NULL);
        if (err != NULL || arg[5] == '\0')
            return apr_psprintf(cmd->pool, "%s: invalid expression in '%s': %s",
                                cmd->cmd->name, arg, err ? err : "empty");
        d->cost = 0;
        rlaas_tenant_mark(cmd, d, RLAAS_T_COST);
        return NULL;
    }
    if (rlaas_parse_nonneg_int(arg, RLAAS_LIMIT_MAX, &d->cost) != NULL)
        return rlaas_config_bad_value(
            cmd, arg,
            "an integer from 0 (check without consuming) to "
            "the limit, expr=EXPRESSION, or bytes");
    d->cost_expr = NULL;
    rlaas_tenant_mark(cmd, d, RLAAS_T_COST);
    if ((err = bytes_conflict(cmd, d, arg)) != NULL)
        return err;
    return cost_over_limit(cmd, d);
}

/* RLaaSWindow DURATION [calendar] */
static const char *set_window(cmd_parms *cmd, void *dv, const char *arg,
                              const char *word)
{
    rlaas_dir_conf_t *d = dv;
    const char *err;

    if ((err = rlaas_calendar_window(cmd, cmd->cmd->name, arg, word, &d->cal,
                                     &d->window_ms)) != NULL)
        return err;
    if (d->cal != NULL &&
        (err = rlaas_calendar_strategy(
             cmd, cmd->cmd->name, apr_pstrcat(cmd->pool, arg, " ", word, NULL),
             d->cal, d->strategy)) != NULL)
        return err;
    if ((err = rlaas_tenant_window_bound(cmd, arg, d->window_ms)) != NULL)
        return err;
    rlaas_tenant_mark(cmd, d, RLAAS_T_WINDOW);
    return NULL;
}

/* ---- RLaaSLease ---- */

/* A sliding log has no count to take a portion of: explicit RLaaSLease on
 * and a sliding log in one section is an error, whichever comes first. */
static const char *lease_vs_log(cmd_parms *cmd, const char *arg)
{
    return apr_psprintf(
        cmd->pool,
        "%s: invalid value '%s': " RLAAS_D_LEASE
        " on cannot be used with the sliding log "
        "(sliding_log) in the same section; use "
        "fixed, sliding, token, leaky or gcra, or " RLAAS_D_LEASE " off",
        cmd->cmd->name, arg);
}

static const char *set_lease(cmd_parms *cmd, void *dv, const char *arg)
{
    static const rlaas_config_word_t words[] = {{"auto", RLAAS_LEASE_MODE_AUTO},
                                                {"on", RLAAS_LEASE_MODE_ON},
                                                {"off", RLAAS_LEASE_MODE_OFF},
                                                {0}};
    rlaas_dir_conf_t *d = dv;
    const char *err;
    int v;

    if ((err = rlaas_config_word(cmd, arg, words, "auto, on or off", &v)))
        return err;
    if (v == RLAAS_LEASE_MODE_ON && d->strategy == RLAAS_STRATEGY_SLIDING_LOG)
        return lease_vs_log(cmd, arg);
    d->lease = v;
    rlaas_tenant_mark(cmd, d, RLAAS_T_LEASE);
    return NULL;
}

static const char *set_strategy(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;
    rlaas_strategy_e st;
    const char *err = rlaas_parse_strategy(arg, &st);

    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, err);
    if (st == RLAAS_STRATEGY_SLIDING_LOG && d->lease == RLAAS_LEASE_MODE_ON)
        return lease_vs_log(cmd, arg);
    if ((err = rlaas_calendar_strategy(cmd, cmd->cmd->name, arg, d->cal, st)) !=
        NULL)
        return err;
    d->strategy = st;
    if ((err = bytes_conflict(cmd, d, arg)) != NULL)
        return err;
    rlaas_tenant_mark(cmd, d, RLAAS_T_STRATEGY);
    return rlaas_tenant_log_bound(cmd, d);
}

static const char *set_key_by(cmd_parms *cmd, void *dv, int argc,
                              char *const argv[])
{
    rlaas_dir_conf_t *d = dv;
    apr_array_header_t *list;
    int i, need_user = 0;

    if (argc < 1 || argc > RLAAS_SOURCES_MAX)
        return apr_psprintf(cmd->pool, "%s: expected 1 to %d sources, got %d",
                            cmd->cmd->name, RLAAS_SOURCES_MAX, argc);
    list = apr_array_make(cmd->pool, argc, sizeof(rlaas_key_source_t));
    for (i = 0; i < argc; i++) {
        rlaas_key_source_t *ks = apr_array_push(list);
        const char *err;

        memset(ks, 0, sizeof(*ks));
        err = rlaas_config_add_source(cmd, ks, argv[i]);
        if (err != NULL)
            return err;
        need_user |= ks->src.type == RLAAS_SRC_USER;
    }
    d->sources = list;
    d->sources_need_user = need_user;
    rlaas_tenant_mark(cmd, d, RLAAS_T_KEY_BY);
    return NULL;
}

static const char *set_zone(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;
    const char *err = rlaas_parse_name(arg);

    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, err);
    d->zone = arg;
    rlaas_tenant_mark(cmd, d, RLAAS_T_ZONE);
    /* a tenant's zones are counted together, as "other" */
    d->zone_metric = in_htaccess(cmd) ? -1 : rlaas_metrics_name(arg, 0);
    return NULL;
}

static const char *set_fail_open(cmd_parms *cmd, void *dv, const char *arg)
{
    static const rlaas_config_word_t words[] = {{"on", RLAAS_FAIL_OPEN},
                                                {"off", RLAAS_FAIL_CLOSED},
                                                {"local", RLAAS_FAIL_LOCAL},
                                                {0}};

    return rlaas_config_word(cmd, arg, words,
                             "on (allow), off (refuse with 500) or local "
                             "(decide with this server's local engine)",
                             &((rlaas_dir_conf_t *)dv)->fail_open);
}

static const char *set_headers(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_headers_e mode;
    const char *err = rlaas_parse_headers_mode(arg, &mode);

    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, err);
    ((rlaas_dir_conf_t *)dv)->headers = mode;
    return NULL;
}

static const char *set_dry_run(cmd_parms *cmd, void *dv, int on)
{
    ((rlaas_dir_conf_t *)dv)->dry_run = on;
    rlaas_tenant_mark(cmd, dv, RLAAS_T_DRY_RUN);
    return NULL;
}

/* RLaaSCountIf and RLaaSBan (rlaas_outcome.c), and who set them. */
static const char *set_count_if(cmd_parms *cmd, void *dv, const char *arg)
{
    const char *err = rlaas_outcome_set_count_if(cmd, dv, arg);

    if (err == NULL)
        rlaas_tenant_mark(cmd, dv, RLAAS_T_COUNT_IF);
    return err;
}

static const char *set_ban(cmd_parms *cmd, void *dv, int argc,
                           char *const argv[])
{
    rlaas_dir_conf_t *d = dv;
    const char *err = rlaas_outcome_set_ban(cmd, dv, argc, argv);

    if (err != NULL)
        return err;
    /* a ban is held as long as a window is: bounded alike */
    if (d->ban_ms > 0 && (err = rlaas_tenant_window_bound(
                              cmd, argv[argc - 1], d->ban_max_ms)) != NULL)
        return err;
    rlaas_tenant_mark(cmd, d, RLAAS_T_BAN);
    return NULL;
}

/* Server and virtual host only: a tenant must not be able to undo the
 * folding an enforced policy keyed by the user relies on. */
static const char *set_user_case(cmd_parms *cmd, void *dummy, const char *arg)
{
    static const rlaas_config_word_t words[] = {{"exact", 0}, {"fold", 1}, {0}};

    (void)dummy;
    return rlaas_config_word(cmd, arg, words,
                             "exact (user names as sent) or fold (names that "
                             "differ only in ASCII case or spacing are one)",
                             &rlaas_server_conf(cmd->server)->user_case);
}

/* Sections whose access control applies to what is served inside them. */
static int path_section(const char *name)
{
    static const char *const names[] = {
        "<Location", "<LocationMatch", "<Directory", "<DirectoryMatch",
        "<Files",    "<FilesMatch",    "<Proxy",     "<ProxyMatch"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (ap_cstr_casecmp(name, names[i]) == 0)
            return 1;
    return 0;
}

/* RLaaSConsole, RLaaSMetrics: what only the operator publishes. The
 * context (ACCESS_CONF, no override) keeps them out of .htaccess and off
 * the server and virtual-host level, where a tenant's SetHandler would
 * publish without the section's Require; "on" is refused as well in an
 * <If> that no <Location>, <Directory>, <Files> or <Proxy> encloses,
 * which covers a whole host the same way. */
static const char *set_publish(cmd_parms *cmd, void *dv, int on)
{
    const ap_directive_t *d;

    if (on) {
        for (d = cmd->directive ? cmd->directive->parent : NULL; d != NULL;
             d = d->parent)
            if (path_section(d->directive))
                break;
        if (d == NULL)
            return apr_psprintf(
                cmd->pool,
                "%s on: only inside a <Location>, <Directory> or <Files> "
                "section (the one that sets the handler and its Require), "
                "not in an <If> that covers a whole server or virtual host",
                cmd->cmd->name);
    }
    if (on && (size_t)cmd->info == APR_OFFSETOF(rlaas_dir_conf_t, console))
        console_any = 1;
    *(int *)((char *)dv + (size_t)cmd->info) = on;
    return NULL;
}

/* Per-directory directives are what a tenant may set in .htaccess under
 * "AllowOverride Limit"; everything about Redis is the operator's. */
#define DIR_SCOPE (RSRC_CONF | ACCESS_CONF | OR_LIMIT)

const command_rec rlaas_cmds[] = {
    RLAAS_TARGET_CMDS,
    RLAAS_POLICY_CMDS,
    AP_INIT_TAKE1(RLAAS_D_KEY_PREFIX, set_key_prefix, NULL, RSRC_CONF,
                  "Prefix of every Redis key"),
    AP_INIT_TAKE1(RLAAS_D_IPV6_PREFIX, set_ipv6_prefix, NULL, RSRC_CONF,
                  "IPv6 clients are grouped by this prefix length, 32 to "
                  "128 (default 64)"),
    AP_INIT_TAKE12(RLAAS_D_LIMIT, set_limit, NULL, DIR_SCOPE,
                   "Requests allowed per window (a size such as 3M with "
                   "RLaaSCost bytes), or expr=EXPR [fallback] read per "
                   "request; enables limiting"),
    AP_INIT_TAKE1(RLAAS_D_COST, set_cost, NULL, DIR_SCOPE,
                  "Units one request consumes: N (0: check only), "
                  "expr=EXPR (default 1), or bytes (the body bytes sent)"),
    AP_INIT_TAKE1(RLAAS_D_LIMIT_MAX, set_limit_max, NULL, RSRC_CONF,
                  "The highest limit a .htaccess may set, and the bound of "
                  "a limit read per request"),
    AP_INIT_TAKE1(RLAAS_D_BACKEND, set_backend, NULL, RSRC_CONF,
                  "Where limits are decided: redis or local (default: "
                  "redis where a Redis is configured, else local)"),
    AP_INIT_TAKE1(RLAAS_D_LOCAL_SIZE, set_local_size, NULL, RSRC_CONF,
                  "Shared memory of the local engine, e.g. 10M (default)"),
    AP_INIT_TAKE1(RLAAS_D_LOCAL_DIVISOR, set_local_divisor, NULL, RSRC_CONF,
                  "With RLaaSFailOpen local: the number of servers the "
                  "limit is shared out among (default 1)"),
    AP_INIT_TAKE12(RLAAS_D_WINDOW, set_window, NULL, DIR_SCOPE,
                   "Window length: 500ms, 30s, 1m, 1h, 1d; or 1d, 1w, 1M "
                   "followed by calendar (periods of the calendar)"),
    AP_INIT_TAKE1(RLAAS_D_STRATEGY, set_strategy, NULL, DIR_SCOPE,
                  "Algorithm: " RLAAS_STRATEGY_CHOICES),
    AP_INIT_TAKE_ARGV(RLAAS_D_KEY_BY, set_key_by, NULL, DIR_SCOPE,
                      "Client identity: ip, user, api_key, header:NAME, "
                      "cookie:NAME, query:NAME, env:NAME, expr=EXPR"),
    AP_INIT_TAKE1(RLAAS_D_FAIL_OPEN, set_fail_open, NULL, DIR_SCOPE,
                  "When Redis can't decide: on (allow), off (500, the "
                  "default) or local (decide with the local engine)"),
    AP_INIT_TAKE1(RLAAS_D_ZONE, set_zone, NULL, DIR_SCOPE,
                  "Name separating this section's counters from others"),
    AP_INIT_FLAG(RLAAS_D_ENGINE, ap_set_flag_slot,
                 (void *)APR_OFFSETOF(rlaas_dir_conf_t, engine), DIR_SCOPE,
                 "Off exempts this section from limiting"),
    AP_INIT_TAKE1(RLAAS_D_HEADERS, set_headers, NULL, DIR_SCOPE,
                  "Rate-limit header fields: draft, legacy, both or off"),
    AP_INIT_TAKE1(RLAAS_D_COUNT_IF, set_count_if, NULL, DIR_SCOPE,
                  "EXPR or off: requests are checked before they are served "
                  "and consume only if EXPR holds for the response"),
    AP_INIT_TAKE_ARGV(RLAAS_D_BAN, set_ban, NULL, DIR_SCOPE,
                      "DURATION [escalate FACTOR MAX] or off: refuse an "
                      "identity for DURATION once it is denied"),
    AP_INIT_FLAG(RLAAS_D_DRY_RUN, set_dry_run, NULL, DIR_SCOPE,
                 "On: evaluate, count and report, but never deny"),
    AP_INIT_TAKE1(RLAAS_D_LEASE, set_lease, NULL, DIR_SCOPE,
                  "auto (the default): spend a busy identity's quota in "
                  "portions taken from Redis, where a lease applies; on: "
                  "the same for every identity (not with the sliding log); "
                  "off: one round trip per request"),
    AP_INIT_FLAG(RLAAS_D_CIRCUIT_FAIL_OPEN, ap_set_flag_slot,
                 (void *)APR_OFFSETOF(rlaas_dir_conf_t, circuit_fail_open),
                 DIR_SCOPE,
                 "On: allow requests while the circuit breaker is open, "
                 "even with RLaaSFailOpen off"),
    /* who a user is, and how identities are hashed: the operator's alone
     * (rlaas_authuser.c, rlaas_keysecret.h) */
    AP_INIT_TAKE1(RLAAS_D_USER_CASE, set_user_case, NULL, RSRC_CONF,
                  "exact (the default) or fold: user names that differ only "
                  "in ASCII case or spacing are one identity"),
    AP_INIT_TAKE1(RLAAS_D_KEY_SECRET, rlaas_keysecret_set, NULL, RSRC_CONF,
                  "File holding the secret (16 to 4096 bytes) that keys "
                  "the hash of credentials in keys, logs and the console"),
    /* tenants: where their trees start, what they may make Redis hold */
    RLAAS_TENANT_CMDS,
    /* requests in flight (rlaas_concurrency.c) */
    RLAAS_CONC_CMDS,
    /* what only the operator publishes: inside a section of the server's
     * own configuration (set_publish) */
    AP_INIT_FLAG(RLAAS_D_CONSOLE, set_publish,
                 (void *)APR_OFFSETOF(rlaas_dir_conf_t, console), ACCESS_CONF,
                 "On: SetHandler rlaas-admin serves the operator's console "
                 "here (inside <Location>, <Directory> or <Files> only)"),
    AP_INIT_FLAG(RLAAS_D_METRICS, set_publish,
                 (void *)APR_OFFSETOF(rlaas_dir_conf_t, metrics), ACCESS_CONF,
                 "On: SetHandler rlaas-metrics serves the server-wide "
                 "metrics here (inside <Location>, <Directory> or <Files> "
                 "only)"),
    /* calendar windows: the zone their days start in */
    RLAAS_CALENDAR_CMDS,
    {NULL}};

int rlaas_config_console_any(void)
{
    return console_any;
}
/* RLaaSBackend's default: redis where a Redis target is configured (the
 * host's own or inherited), else the local engine, the embedded default;
 * said once per start or restart, not on the first (pre-config) pass. */
static void resolve_backends(server_rec *main_s)
{
    int local = 0, redis = 0;
    server_rec *s;

    for (s = main_s; s != NULL; s = s->next) {
        rlaas_server_conf_t *sc = rlaas_server_conf(s);

        if (sc->backend == RLAAS_BACKEND_UNSET)
            sc->backend = rlaas_target_named(sc->target) ? RLAAS_BACKEND_REDIS
                                                         : RLAAS_BACKEND_LOCAL;
        if (sc->backend == RLAAS_BACKEND_LOCAL)
            local++;
        else
            redis++;
    }
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG)
        return;
    if (redis == 0)
        ap_log_error(
            APLOG_MARK, APLOG_NOTICE, 0, main_s,
            "RLAAS0003: mod_rlaas " RLAAS_VERSION
            ": limits are decided by the local engine, in this "
            "server's shared memory (no Redis is configured; " RLAAS_D_REDIS
            " names one that servers share)");
    else
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, main_s,
                     "RLAAS0003: mod_rlaas " RLAAS_VERSION
                     ": %d of %d hosts decide in Redis, the others with "
                     "the local engine",
                     redis, redis + local);
}

/* A virtual host's own policies count in its namespace unless it has a
 * key prefix of its own: two hosts that both declare "api" never share. */
void rlaas_config_post_config(apr_pool_t *pconf, server_rec *s)
{
    ap_add_version_component(pconf, "mod_rlaas/" RLAAS_VERSION);
    resolve_backends(s);
    rlaas_target_resolve(s);
    rlaas_keysecret_post_config(s);
    for (; s != NULL; s = s->next) {
        rlaas_server_conf_t *sc = rlaas_server_conf(s);
        apr_hash_index_t *hi;

        /* a server's own settings, which no section's merge resolved (the
         * main server's are used as read) */
        resolve(pconf, ap_get_module_config(s->lookup_defaults, &rlaas_module));

        if (!s->is_virtual || sc->policies == NULL)
            continue;
        for (hi = apr_hash_first(pconf, sc->policies); hi;
             hi = apr_hash_next(hi)) {
            rlaas_policy_t *p;
            const char *host = s->server_hostname ? s->server_hostname : "";
            char ns[RLAAS_NS_MAX];

            apr_hash_this(hi, NULL, NULL, (void **)&p);
            if (p->server != s || sc->prefix_own)
                continue;
            p->ns = apr_pstrmemdup(pconf, ns,
                                   rlaas_key_namespace(ns, host, strlen(host)));
        }
    }
}
