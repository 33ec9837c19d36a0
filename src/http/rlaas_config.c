#include "rlaas_config.h"

#include "http_log.h"
#include "http_core.h"
#include "apr_file_info.h"
#include "apr_strings.h"

#include "rlaas_bytes.h"
#include "rlaas_calendar.h"
#include "rlaas_ip.h"
#include "rlaas_keysecret.h"
#include "rlaas_metrics.h"
#include "rlaas_outcome.h"
#include "rlaas_version.h"
#include "rlaas_tenant.h"
#include "rlaas_conc.h"
#include "rlaas_concurrency.h"

APLOG_USE_MODULE(rlaas);

extern module AP_MODULE_DECLARE_DATA rlaas_module;

/* The main server's policies, filled while its directives are read, so
 * that a virtual host and its sections find those declared before them
 * (as a Define); and the number the next policy gets. Both are made anew
 * in pre_config, for every reading of the configuration. */
static apr_hash_t *main_policies;
static int next_policy_id;
static int main_enforced; /* RLaaSEnforce names in the main server */
/* RLaaSConsole on somewhere: else the console's counts are not kept */
static int console_any;

int rlaas_config_pre_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp)
{
    (void)plog;
    (void)ptemp;
    main_policies = apr_hash_make(pconf);
    next_policy_id = 0;
    main_enforced = 0;
    console_any = 0;
    rlaas_metrics_names_reset(pconf);
    rlaas_keysecret_pre_config();
    return OK;
}

static int in_htaccess(const cmd_parms *cmd)
{
    return rlaas_tenant_reading(cmd);
}

/* "RLaaSLimit: invalid value 'abc': expected an integer from 1 to ..." */
static const char *bad_value(cmd_parms *cmd, const char *arg,
                             const char *accepted)
{
    return apr_psprintf(cmd->pool, "%s: invalid value '%s': expected %s",
                        cmd->cmd->name, arg, accepted);
}

/* ---- server scope ---- */

static rlaas_target_t *new_target(apr_pool_t *p)
{
    rlaas_target_t *t = apr_pcalloc(p, sizeof(*t));

    t->database = -1;
    t->timeout_ms = -1;
    t->pool_max = -1;
    t->circuit_failures = -1;
    t->circuit_cooldown_ms = -1;
    t->pipeline = -1;
    t->tls = -1;
    t->tls_announced = -1;
    return t;
}

void *rlaas_create_server_conf(apr_pool_t *p, server_rec *s)
{
    rlaas_server_conf_t *sc = apr_pcalloc(p, sizeof(*sc));

    (void)s;
    sc->target = new_target(p);
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

static rlaas_target_t *merge_target(apr_pool_t *p, const rlaas_target_t *base,
                                    const rlaas_target_t *add)
{
    rlaas_target_t *t = new_target(p);

    if (add->host != NULL) {
        t->host = add->host;
        t->port = add->port;
        t->is_unix = add->is_unix;
    }
    else {
        t->host = base->host;
        t->port = base->port;
        t->is_unix = base->is_unix;
    }
    /* Credentials travel together: a vhost naming its own user or password
     * must not inherit half of its parent's pair. */
    if (add->username != NULL || add->password != NULL) {
        t->username = add->username;
        t->password = add->password;
    }
    else {
        t->username = base->username;
        t->password = base->password;
    }
    t->database = PICK(database, -1);
    t->timeout_ms = PICK(timeout_ms, -1);
    t->pool_max = PICK(pool_max, -1);
    t->pipeline = PICK(pipeline, -1);
    t->tls = PICK(tls, -1);
    t->tls_ca = PICK(tls_ca, NULL);
    t->tls_server_name = PICK(tls_server_name, NULL);
    t->sentinel_tls_name = PICK(sentinel_tls_name, NULL);
    t->tls_announced = PICK(tls_announced, -1);
    /* the sentinels of a master, and their credentials, travel together */
    if (add->sentinel_master != NULL) {
        t->sentinel_master = add->sentinel_master;
        t->sentinel_hosts = add->sentinel_hosts;
        t->sentinel_ports = add->sentinel_ports;
        t->sentinel_n = add->sentinel_n;
    }
    else {
        t->sentinel_master = base->sentinel_master;
        t->sentinel_hosts = base->sentinel_hosts;
        t->sentinel_ports = base->sentinel_ports;
        t->sentinel_n = base->sentinel_n;
    }
    if (add->sentinel_user != NULL || add->sentinel_pass != NULL) {
        t->sentinel_user = add->sentinel_user;
        t->sentinel_pass = add->sentinel_pass;
    }
    else {
        t->sentinel_user = base->sentinel_user;
        t->sentinel_pass = base->sentinel_pass;
    }
    if (add->cluster_n > 0) {
        t->cluster_hosts = add->cluster_hosts;
        t->cluster_ports = add->cluster_ports;
        t->cluster_n = add->cluster_n;
    }
    else {
        t->cluster_hosts = base->cluster_hosts;
        t->cluster_ports = base->cluster_ports;
        t->cluster_n = base->cluster_n;
    }
    /* a certificate and its key travel together */
    if (add->tls_cert != NULL || add->tls_key != NULL) {
        t->tls_cert = add->tls_cert;
        t->tls_key = add->tls_key;
    }
    else {
        t->tls_cert = base->tls_cert;
        t->tls_key = base->tls_key;
    }
    if (add->circuit_failures != -1) {
        t->circuit_failures = add->circuit_failures;
        t->circuit_cooldown_ms = add->circuit_cooldown_ms;
    }
    else {
        t->circuit_failures = base->circuit_failures;
        t->circuit_cooldown_ms = base->circuit_cooldown_ms;
    }
    return t;
}

void *rlaas_merge_server_conf(apr_pool_t *p, void *basev, void *addv)
{
    const rlaas_server_conf_t *base = basev, *add = addv;
    rlaas_server_conf_t *sc = apr_pcalloc(p, sizeof(*sc));

    sc->target_set = add->target_set;
    sc->target = add->target_set ? merge_target(p, base->target, add->target)
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

static rlaas_target_t *target_for(cmd_parms *cmd)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);

    sc->target_set = 1;
    return sc->target;
}

static const char *set_redis(cmd_parms *cmd, void *dummy, const char *arg)
{
    rlaas_target_t *t = target_for(cmd);
    char *host = apr_palloc(cmd->pool, strlen(arg) + 1);
    const char *err = rlaas_parse_redis_addr(arg, host, &t->port, &t->is_unix);

    (void)dummy;
    if (err != NULL)
        return bad_value(cmd, arg, err);
    t->host = host;
    return NULL;
}

static const char *set_redis_user(cmd_parms *cmd, void *dummy, const char *arg)
{
    (void)dummy;
    if (*arg == '\0')
        return bad_value(cmd, arg, "a non-empty ACL user name");
    target_for(cmd)->username = arg;
    return NULL;
}

static const char *set_redis_pass(cmd_parms *cmd, void *dummy, const char *arg)
{
    (void)dummy;
    /* The value is not repeated in the message: it is a secret. */
    if (*arg == '\0')
        return apr_psprintf(cmd->pool, "%s: expected a non-empty password",
                            cmd->cmd->name);
    target_for(cmd)->password = arg;
    return NULL;
}

static const char *set_redis_db(cmd_parms *cmd, void *dummy, const char *arg)
{
    int64_t v;
    const char *err = rlaas_parse_nonneg_int(arg, 1000000, &v);

    (void)dummy;
    if (err != NULL)
        return bad_value(cmd, arg, "an integer from 0 to 1000000");
    target_for(cmd)->database = (int)v;
    return NULL;
}

static const char *set_redis_timeout(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    int64_t ms;
    const char *err =
        rlaas_parse_duration_ms(arg, 1, RLAAS_TIMEOUT_MAX_MS, &ms);

    (void)dummy;
    if (err != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected %s, "
                            "from 1ms to 60s",
                            cmd->cmd->name, arg, err);
    target_for(cmd)->timeout_ms = (int)ms;
    return NULL;
}

static const char *set_redis_pool_max(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    int64_t v;
    const char *err = rlaas_parse_nonneg_int(arg, 100000, &v);

    (void)dummy;
    if (err != NULL || v < 1)
        return bad_value(cmd, arg, "an integer from 1 to 100000");
    target_for(cmd)->pool_max = (int)v;
    return NULL;
}

static const char *set_key_prefix(cmd_parms *cmd, void *dummy, const char *arg)
{
    const char *err = rlaas_parse_prefix(arg);

    (void)dummy;
    if (err != NULL)
        return bad_value(cmd, arg, err);
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
        return bad_value(cmd, arg,
                         "an IPv6 prefix length from 32 to 128 (64: one "
                         "client per /64 network; 128: every address)");
    rlaas_server_conf(cmd->server)->ipv6_prefix = (int)v;
    return NULL;
}

/* A flag of the Redis target: its offset in cmd->info (the target's
 * ap_set_flag_slot). */
static const char *set_target_flag(cmd_parms *cmd, void *dummy, int on)
{
    (void)dummy;
    *(int *)((char *)target_for(cmd) + (size_t)cmd->info) = on;
    return NULL;
}

/* A file the TLS context will read in every child: refused at start-up
 * when it can't be read, as mod_ssl does with its own. */
static const char *tls_file(cmd_parms *cmd, const char *arg, const char **out)
{
    const char *path = ap_server_root_relative(cmd->pool, arg);
    apr_finfo_t fi;

    if (path == NULL ||
        apr_stat(&fi, path, APR_FINFO_TYPE, cmd->pool) != APR_SUCCESS ||
        fi.filetype != APR_REG)
        return bad_value(cmd, arg, "a readable file (PEM)");
    *out = path;
    return NULL;
}

static const char *set_redis_tls_ca(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    (void)dummy;
    return tls_file(cmd, arg, &target_for(cmd)->tls_ca);
}

static const char *set_redis_tls_cert(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    (void)dummy;
    return tls_file(cmd, arg, &target_for(cmd)->tls_cert);
}

static const char *set_redis_tls_key(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    (void)dummy;
    return tls_file(cmd, arg, &target_for(cmd)->tls_key);
}

/* A name a certificate is checked against: RLaaSRedisTLSServerName,
 * RLaaSRedisSentinelTLSServerName. */
static const char *tls_name(cmd_parms *cmd, const char *arg, const char **out)
{
    if (*arg == '\0' || strlen(arg) > 253 || strpbrk(arg, " /\t") != NULL)
        return bad_value(cmd, arg, "a host name or address");
    *out = arg;
    return NULL;
}

static const char *set_redis_tls_name(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    (void)dummy;
    return tls_name(cmd, arg, &target_for(cmd)->tls_server_name);
}

static const char *set_sentinel_tls_name(cmd_parms *cmd, void *dummy,
                                         const char *arg)
{
    (void)dummy;
    return tls_name(cmd, arg, &target_for(cmd)->sentinel_tls_name);
}

/* "RLaaSRedisSentinel MASTER host:port [host:port ...]" */
static const char *set_sentinel(cmd_parms *cmd, void *dummy, int argc,
                                char *const argv[])
{
    rlaas_target_t *t = target_for(cmd);
    const char *err;
    int i;

    (void)dummy;
    if (argc < 2 || argc > RLAAS_SENTINELS_MAX + 1)
        return apr_psprintf(cmd->pool,
                            "%s: expected the master's name and 1 to %d "
                            "sentinels as host:port, got %d arguments",
                            cmd->cmd->name, RLAAS_SENTINELS_MAX, argc);
    if ((err = rlaas_parse_name(argv[0])) != NULL)
        return bad_value(cmd, argv[0], err);
    t->sentinel_master = argv[0];
    t->sentinel_n = argc - 1;
    t->sentinel_hosts = apr_pcalloc(cmd->pool, sizeof(char *) * (argc - 1));
    t->sentinel_ports = apr_pcalloc(cmd->pool, sizeof(int) * (argc - 1));
    for (i = 1; i < argc; i++) {
        char *host = apr_palloc(cmd->pool, strlen(argv[i]) + 1);
        int is_unix = 0;

        err = rlaas_parse_redis_addr(argv[i], host, &t->sentinel_ports[i - 1],
                                     &is_unix);
        if (err != NULL || is_unix)
            return bad_value(cmd, argv[i], "a sentinel as host:port");
        t->sentinel_hosts[i - 1] = host;
    }
    return NULL;
}

/* "RLaaSRedisCluster host:port [host:port ...]": seed nodes */
static const char *set_cluster(cmd_parms *cmd, void *dummy, int argc,
                               char *const argv[])
{
    rlaas_target_t *t = target_for(cmd);
    int i;

    (void)dummy;
    if (argc < 1 || argc > RLAAS_SENTINELS_MAX)
        return apr_psprintf(cmd->pool,
                            "%s: expected 1 to %d seed nodes as host:port, "
                            "got %d",
                            cmd->cmd->name, RLAAS_SENTINELS_MAX, argc);
    t->cluster_n = argc;
    t->cluster_hosts = apr_pcalloc(cmd->pool, sizeof(char *) * argc);
    t->cluster_ports = apr_pcalloc(cmd->pool, sizeof(int) * argc);
    for (i = 0; i < argc; i++) {
        char *host = apr_palloc(cmd->pool, strlen(argv[i]) + 1);
        int is_unix = 0;
        const char *err = rlaas_parse_redis_addr(
            argv[i], host, &t->cluster_ports[i], &is_unix);

        if (err != NULL || is_unix)
            return bad_value(cmd, argv[i], "a cluster node as host:port");
        t->cluster_hosts[i] = host;
    }
    return NULL;
}

static const char *set_sentinel_user(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    (void)dummy;
    if (*arg == '\0')
        return bad_value(cmd, arg, "a non-empty ACL user name");
    target_for(cmd)->sentinel_user = arg;
    return NULL;
}

static const char *set_sentinel_pass(cmd_parms *cmd, void *dummy,
                                     const char *arg)
{
    (void)dummy;
    /* The value is not repeated in the message: it is a secret. */
    if (*arg == '\0')
        return apr_psprintf(cmd->pool, "%s: expected a non-empty password",
                            cmd->cmd->name);
    target_for(cmd)->sentinel_pass = arg;
    return NULL;
}

/* "RLaaSCircuitBreaker off" or "RLaaSCircuitBreaker <failures> [cooldown]" */
static const char *set_circuit(cmd_parms *cmd, void *dummy, const char *n,
                               const char *cool)
{
    rlaas_target_t *t = target_for(cmd);
    int64_t failures, ms = RLAAS_DEFAULT_CIRCUIT_COOLDOWN_MS;
    const char *err;

    (void)dummy;
    if (cool == NULL && ap_cstr_casecmp(n, "off") == 0) {
        t->circuit_failures = 0;
        t->circuit_cooldown_ms = 0;
        return NULL;
    }
    err = rlaas_parse_nonneg_int(n, 1000000, &failures);
    if (err != NULL || failures < 1)
        return bad_value(cmd, n,
                         "off, or a number of consecutive failures from 1 to "
                         "1000000 followed by an optional cool-down");
    if (cool != NULL) {
        err = rlaas_parse_duration_ms(cool, 1, RLAAS_TIMEOUT_MAX_MS, &ms);
        if (err != NULL)
            return apr_psprintf(cmd->pool,
                                "%s: invalid cool-down '%s': expected %s, "
                                "from 1ms to 60s",
                                cmd->cmd->name, cool, err);
    }
    t->circuit_failures = (int)failures;
    t->circuit_cooldown_ms = (int)ms;
    return NULL;
}

/* ---- policies ---- */

/* A policy by name, as a directive sees them: in a .htaccess, the merged
 * table of the request's host; in a virtual host, its own and the main
 * server's declared before it; in the main server, its own. */
static rlaas_policy_t *find_policy(cmd_parms *cmd, const char *name)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    rlaas_policy_t *p = NULL;

    if (sc->policies != NULL)
        p = apr_hash_get(sc->policies, name, APR_HASH_KEY_STRING);
    if (p == NULL && !in_htaccess(cmd) && cmd->server->is_virtual)
        p = apr_hash_get(main_policies, name, APR_HASH_KEY_STRING);
    return p;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_names(apr_array_header_t *names, apr_hash_t *h)
{
    apr_hash_index_t *hi;

    for (hi = h ? apr_hash_first(NULL, h) : NULL; hi; hi = apr_hash_next(hi)) {
        const void *k;
        int i;

        apr_hash_this(hi, &k, NULL, NULL);
        for (i = 0; i < names->nelts; i++) {
            if (strcmp(APR_ARRAY_IDX(names, i, const char *), k) == 0)
                break;
        }
        if (i == names->nelts)
            APR_ARRAY_PUSH(names, const char *) = k;
    }
}

/* "a, b, c", the names a directive could have used. */
static const char *known_names(cmd_parms *cmd)
{
    apr_array_header_t *names =
        apr_array_make(cmd->temp_pool, 8, sizeof(char *));

    add_names(names, rlaas_server_conf(cmd->server)->policies);
    if (!in_htaccess(cmd) && cmd->server->is_virtual)
        add_names(names, main_policies);
    if (names->nelts == 0)
        return "none is declared";
    qsort(names->elts, (size_t)names->nelts, sizeof(char *), by_name);
    return apr_pstrcat(cmd->temp_pool, "declared: ",
                       apr_array_pstrcat(cmd->temp_pool, names, ','), NULL);
}

static const char *unknown_policy(cmd_parms *cmd, const char *name)
{
    return apr_psprintf(cmd->pool,
                        "%s: unknown policy '%s': expected the name of a "
                        "policy declared before with " RLAAS_D_POLICY " (%s)",
                        cmd->cmd->name, name, known_names(cmd));
}

/* The words of a raw line (rlaas_parse_word). */
static const char *split_words(cmd_parms *cmd, const char *line,
                               apr_array_header_t **out)
{
    char *w = apr_palloc(cmd->temp_pool, strlen(line) + 1);
    int rc;

    *out = apr_array_make(cmd->temp_pool, 8, sizeof(char *));
    while ((rc = rlaas_parse_word(&line, w)) == 1) {
        APR_ARRAY_PUSH(*out, char *) = apr_pstrdup(cmd->pool, w);
        w = apr_palloc(cmd->temp_pool, strlen(line) + 1);
    }
    if (rc < 0)
        return apr_psprintf(cmd->pool, "%s: a quote is left open in '%s'",
                            cmd->cmd->name, line);
    return NULL;
}

static const char *add_source(cmd_parms *cmd, rlaas_key_source_t *ks,
                              const char *arg);

/* key="SOURCES": one to eight sources, as RLaaSKeyBy takes them. */
static const char *policy_sources(cmd_parms *cmd, rlaas_policy_t *p,
                                  const char *text)
{
    apr_array_header_t *words;
    const char *err = split_words(cmd, text, &words);
    int i;

    if (err != NULL)
        return err;
    if (words->nelts < 1 || words->nelts > RLAAS_SOURCES_MAX)
        return apr_psprintf(cmd->pool,
                            "%s %s: key=\"%s\": expected 1 to %d sources",
                            cmd->cmd->name, p->name, text, RLAAS_SOURCES_MAX);
    p->sources =
        apr_array_make(cmd->pool, words->nelts, sizeof(rlaas_key_source_t));
    for (i = 0; i < words->nelts; i++) {
        rlaas_key_source_t *ks = apr_array_push(p->sources);

        memset(ks, 0, sizeof(*ks));
        if ((err = add_source(cmd, ks, APR_ARRAY_IDX(words, i, char *))))
            return err;
        p->sources_need_user |= ks->src.type == RLAAS_SRC_USER;
    }
    return NULL;
}

/* cost=N (0 to the limit) or cost=bytes, one of them. bytes_unit < 0:
 * the limit is a size (policy_limit), whose unit cost=bytes takes. */
static const char *policy_cost(cmd_parms *cmd, rlaas_policy_t *p,
                               const char *opt)
{
    int64_t v;

    if (rlaas_parse_keyword(opt + 5, "bytes")) {
        if (p->cost_arg != NULL && p->bytes_unit <= 0)
            return apr_psprintf(cmd->pool,
                                "%s %s: invalid value '%s': cost=%s is set "
                                "already; expected one cost",
                                cmd->cmd->name, p->name, opt, p->cost_arg);
        if (p->bytes_unit <= 0)
            p->bytes_unit = p->bytes_unit < 0 ? -p->bytes_unit : 1;
        p->cost_arg = "0"; /* checked; charged after the response */
        return NULL;
    }
    if (p->bytes_unit > 0)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value '%s': the policy counts "
                            "bytes (cost=bytes); expected one cost",
                            cmd->cmd->name, p->name, opt);
    if (rlaas_parse_nonneg_int(opt + 5, RLAAS_LIMIT_MAX, &v) != NULL ||
        v > p->limit)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value '%s': expected a cost from "
                            "0 to the limit (%" APR_INT64_T_FMT
                            ") or cost=bytes",
                            cmd->cmd->name, p->name, opt, p->limit);
    p->cost_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, v);
    return NULL;
}

/* strategy=S, key="SOURCES", cost=N or cost=bytes. */
static const char *policy_option(cmd_parms *cmd, rlaas_policy_t *p,
                                 const char *opt)
{
    const char *err;

    if (rlaas_parse_prefixed(opt, "strategy=")) {
        if ((err = rlaas_parse_strategy(opt + 9, &p->strategy)) != NULL)
            return apr_psprintf(cmd->pool,
                                "%s %s: invalid value '%s': expected %s",
                                cmd->cmd->name, p->name, opt, err);
        return NULL;
    }
    if (rlaas_parse_prefixed(opt, "key="))
        return policy_sources(cmd, p, opt + 4);
    if (rlaas_parse_prefixed(opt, "countif="))
        return rlaas_outcome_policy_count_if(cmd, p->name, opt + 8,
                                             &p->count_if);
    if (rlaas_parse_prefixed(opt, "cost="))
        return policy_cost(cmd, p, opt);
    return apr_psprintf(cmd->pool,
                        "%s %s: invalid option '%s': expected "
                        "strategy=STRATEGY, key=\"SOURCES\", cost=N, "
                        "cost=bytes or countif=EXPR",
                        cmd->cmd->name, p->name, opt);
}

/* LIMIT: a number, or a size (3M, 10G) that cost=bytes must count. */
static const char *policy_limit(cmd_parms *cmd, rlaas_policy_t *p,
                                const char *arg)
{
    const char *err;

    if (rlaas_bytes_is_size(arg)) {
        if ((err = rlaas_bytes_limit(arg, &p->limit, &p->bytes_unit)) != NULL)
            return apr_psprintf(cmd->pool,
                                "%s %s: invalid limit '%s': expected %s",
                                cmd->cmd->name, p->name, arg, err);
        p->bytes_unit = -p->bytes_unit; /* a size: cost=bytes must follow */
    }
    else if ((err = rlaas_parse_limit(arg, &p->limit)) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid limit '%s': expected %s (or a "
                            "size such as 3M with cost=bytes)",
                            cmd->cmd->name, p->name, arg, err);
    p->limit_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, p->limit);
    return NULL;
}

/* cost=bytes: a size limit needs it, and a bucket can't count bytes. */
static const char *policy_bytes(cmd_parms *cmd, rlaas_policy_t *p,
                                const char *limit)
{
    if (p->bytes_unit < 0)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid limit '%s': a size (K, M or G) "
                            "counts bytes: it needs cost=bytes",
                            cmd->cmd->name, p->name, limit);
    if (p->bytes_unit > 0 && rlaas_bytes_bucket(p->strategy))
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value 'strategy=%s': cost=bytes "
                            "counts with the fixed, sliding or sliding_log "
                            "strategy (a bucket can't be charged beyond "
                            "empty after the response)",
                            cmd->cmd->name, p->name,
                            rlaas_strategy_name(p->strategy));
    return NULL;
}

/* The window, w[2], and the calendar word after it if any: *next is the
 * first option's place. */
static const char *policy_window(cmd_parms *cmd, rlaas_policy_t *p,
                                 const apr_array_header_t *w, int *next)
{
    const char *arg = APR_ARRAY_IDX(w, 2, char *);
    const char *word = w->nelts > 3 ? APR_ARRAY_IDX(w, 3, char *) : "";
    const char *err;

    *next = 3;
    if (strcasecmp(word, RLAAS_CAL_WORD) == 0) {
        *next = 4;
        err = rlaas_calendar_parse(
            cmd, apr_pstrcat(cmd->pool, cmd->cmd->name, " ", p->name, NULL),
            arg, word, &p->cal);
        if (err != NULL)
            return err;
        p->window_ms = rlaas_cal_nominal_ms(p->cal);
    }
    else if ((err = rlaas_parse_duration_ms(arg, 1, RLAAS_WINDOW_MAX_MS,
                                            &p->window_ms)) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid window '%s': expected %s, from "
                            "1ms to 30d (or Nd, Nw, NM followed by "
                            "'" RLAAS_CAL_WORD "')",
                            cmd->cmd->name, p->name, arg, err);
    p->window_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, p->window_ms);
    return NULL;
}

/* RLaaSPolicy NAME concurrency=N [timeout=DURATION] [key="SOURCES"]: at
 * most N requests of one identity in flight (rlaas_concurrency.h). */
static const char *conc_policy(cmd_parms *cmd, rlaas_policy_t *p,
                               apr_array_header_t *w)
{
    const char *arg = APR_ARRAY_IDX(w, 1, char *) + 12, *err;
    int i;

    if (rlaas_parse_nonneg_int(arg, RLAAS_CONC_MAX, &p->limit) != NULL ||
        p->limit < 1)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value 'concurrency=%s': expected "
                            "an integer from 1 to %d (requests in flight)",
                            cmd->cmd->name, p->name, arg, RLAAS_CONC_MAX);
    p->strategy = RLAAS_CONCURRENCY;
    p->limit_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, p->limit);
    p->window_ms = RLAAS_CONC_TIMEOUT_DEFAULT_MS;
    for (i = 2; i < w->nelts; i++) {
        const char *opt = APR_ARRAY_IDX(w, i, char *);

        if (rlaas_parse_prefixed(opt, "key=")) {
            if ((err = policy_sources(cmd, p, opt + 4)) != NULL)
                return err;
        }
        else if (rlaas_parse_prefixed(opt, "timeout=")) {
            if ((err = rlaas_parse_duration_ms(opt + 8, 1, RLAAS_WINDOW_MAX_MS,
                                               &p->window_ms)) != NULL)
                return apr_psprintf(cmd->pool,
                                    "%s %s: invalid value '%s': expected %s, "
                                    "from 1ms to 30d",
                                    cmd->cmd->name, p->name, opt, err);
        }
        else
            return apr_psprintf(cmd->pool,
                                "%s %s: invalid option '%s': a concurrency "
                                "policy takes timeout=DURATION and "
                                "key=\"SOURCES\"",
                                cmd->cmd->name, p->name, opt);
    }
    p->window_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, p->window_ms);
    return NULL;
}

/* LIMIT WINDOW [strategy=S] [key="SOURCES"] [cost=N|bytes] [countif=EXPR] */
static const char *rate_policy(cmd_parms *cmd, rlaas_policy_t *p,
                               apr_array_header_t *w)
{
    const char *limit = APR_ARRAY_IDX(w, 1, char *), *arg, *err;
    int i;

    if ((err = policy_limit(cmd, p, limit)) != NULL)
        return err;
    arg = APR_ARRAY_IDX(w, 2, char *);
    if ((err = policy_window(cmd, p, w, &i)) != NULL)
        return err;
    for (; i < w->nelts; i++) {
        if ((err = policy_option(cmd, p, APR_ARRAY_IDX(w, i, char *))))
            return err;
    }
    /* a calendar window counts with fixed, the one strategy it has */
    if (p->strategy == RLAAS_STRATEGY_UNSET)
        p->strategy =
            p->cal != NULL ? RLAAS_STRATEGY_FIXED : RLAAS_DEFAULT_STRATEGY;
    if ((err = policy_bytes(cmd, p, limit)) != NULL)
        return err;
    if ((err = rlaas_calendar_strategy(
             cmd, apr_pstrcat(cmd->pool, cmd->cmd->name, " ", p->name, NULL),
             apr_pstrcat(cmd->pool, arg, " " RLAAS_CAL_WORD " strategy=",
                         rlaas_strategy_name(p->strategy), NULL),
             p->cal, p->strategy)) != NULL)
        return err;
    return NULL;
}

/* RLaaSPolicy NAME LIMIT WINDOW [calendar] [strategy=S] [key="SOURCES"]
 * [cost=N|bytes], or
 * RLaaSPolicy NAME concurrency=N [timeout=DURATION] [key="SOURCES"] */
static const char *set_policy(cmd_parms *cmd, void *dummy, const char *line)
{
    static const char usage[] = "NAME LIMIT WINDOW [calendar] "
                                "[strategy=STRATEGY] "
                                "[key=\"SOURCES\"] [cost=N|bytes]";
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    apr_array_header_t *w;
    rlaas_policy_t *p;
    const char *err;
    int conc;

    (void)dummy;
    if ((err = split_words(cmd, line, &w)) != NULL)
        return err;
    conc = w->nelts >= 2 &&
           rlaas_parse_prefixed(APR_ARRAY_IDX(w, 1, char *), "concurrency=");
    if (w->nelts < 3 && !conc)
        return apr_psprintf(cmd->pool,
                            "%s: expected %s, got '%s' (or NAME "
                            "concurrency=N [timeout=DURATION] "
                            "[key=\"SOURCES\"])",
                            cmd->cmd->name, usage, line);
    p = apr_pcalloc(cmd->pool, sizeof(*p));
    p->name = APR_ARRAY_IDX(w, 0, char *);
    p->strategy = RLAAS_STRATEGY_UNSET;
    if ((err = rlaas_parse_name(p->name)) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid name '%s': expected %s (the name is "
                            "the policy's zone)",
                            cmd->cmd->name, p->name, err);
    if (find_policy(cmd, p->name) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: duplicate name '%s': a policy of that name is "
                            "declared already; expected a name of its own",
                            cmd->cmd->name, p->name);
    if ((err = conc ? conc_policy(cmd, p, w) : rate_policy(cmd, p, w)))
        return err;
    p->id = next_policy_id++;
    p->server = cmd->server;
    p->metric = rlaas_metrics_name(p->name, 1);
    if (!cmd->server->is_virtual)
        sc->policies = main_policies;
    else if (sc->policies == NULL)
        sc->policies = apr_hash_make(cmd->pool);
    apr_hash_set(sc->policies, p->name, APR_HASH_KEY_STRING, p);
    return NULL;
}

/* Enforced policies a virtual host sees: the main server's and its own. */
static int enforced_count(cmd_parms *cmd)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    int n = sc->enforce ? sc->enforce->nelts : 0;

    if (!in_htaccess(cmd) && cmd->server->is_virtual)
        n += main_enforced;
    return n;
}

/* RLaaSEnforce NAME... */
static const char *set_enforce(cmd_parms *cmd, void *dummy, int argc,
                               char *const argv[])
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    int i;

    (void)dummy;
    if (argc < 1)
        return apr_psprintf(cmd->pool, "%s: expected one or more policy names",
                            cmd->cmd->name);
    for (i = 0; i < argc; i++) {
        rlaas_policy_t *p = find_policy(cmd, argv[i]);
        rlaas_apply_op_t *op;

        if (p == NULL)
            return unknown_policy(cmd, argv[i]);
        if (enforced_count(cmd) + 1 > RLAAS_POLICIES_MAX - 1)
            return apr_psprintf(cmd->pool,
                                "%s: too many policies enforced with '%s': "
                                "expected at most %d for a host, so that a "
                                "request meets at most %d policies",
                                cmd->cmd->name, argv[i], RLAAS_POLICIES_MAX - 1,
                                RLAAS_POLICIES_MAX);
        if (sc->enforce == NULL)
            sc->enforce =
                apr_array_make(cmd->pool, 4, sizeof(rlaas_apply_op_t));
        op = apr_array_push(sc->enforce);
        op->kind = RLAAS_APPLY_ADD;
        op->id = p->id;
        op->ref = p;
        if (!cmd->server->is_virtual)
            main_enforced++;
    }
    return NULL;
}

/* RLaaSApply NAME | -NAME | none ... */
static const char *set_apply(cmd_parms *cmd, void *dv, int argc,
                             char *const argv[])
{
    rlaas_dir_conf_t *d = dv;
    apr_array_header_t *ops;
    const rlaas_apply_op_t **sel;
    int i;

    if (argc < 1)
        return apr_psprintf(cmd->pool,
                            "%s: expected policy names, -NAME or none",
                            cmd->cmd->name);
    ops = d->apply ? d->apply
                   : apr_array_make(cmd->pool, argc, sizeof(rlaas_apply_op_t));
    for (i = 0; i < argc; i++) {
        rlaas_apply_op_t *op = apr_array_push(ops);
        const char *name = argv[i][0] == '-' ? argv[i] + 1 : argv[i];
        const rlaas_policy_t *p;

        memset(op, 0, sizeof(*op));
        if (rlaas_parse_keyword(argv[i], "none")) {
            op->kind = RLAAS_APPLY_NONE;
            continue;
        }
        if ((p = find_policy(cmd, name)) == NULL)
            return unknown_policy(cmd, name);
        op->kind = argv[i][0] == '-' ? RLAAS_APPLY_REMOVE : RLAAS_APPLY_ADD;
        op->id = p->id;
        op->ref = p;
    }
    /* what the section's lines apply together, with those enforced and
     * the section's own limit (one place), fits one call */
    sel = apr_palloc(cmd->temp_pool, sizeof(*sel) * RLAAS_POLICIES_MAX);
    if (rlaas_policy_resolve(NULL, 0, (const rlaas_apply_op_t *)ops->elts,
                             ops->nelts, sel,
                             RLAAS_POLICIES_MAX - 1 - enforced_count(cmd)) < 0)
        return apr_psprintf(
            cmd->pool,
            "%s: too many policies: with those enforced and "
            "the section's own limit, a request here would "
            "meet more than %d (counting what every " RLAAS_D_APPLY
            " line of the section applies)",
            cmd->cmd->name, RLAAS_POLICIES_MAX);
    d->apply = ops;
    return NULL;
}

static const char *set_limit_max(cmd_parms *cmd, void *dummy, const char *arg)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    const char *err = rlaas_parse_limit(arg, &sc->limit_max);

    (void)dummy;
    if (err != NULL)
        return bad_value(cmd, arg, err);
    return NULL;
}

static const char *set_backend(cmd_parms *cmd, void *dummy, const char *arg)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);

    (void)dummy;
    if (ap_cstr_casecmp(arg, "redis") == 0)
        sc->backend = RLAAS_BACKEND_REDIS;
    else if (ap_cstr_casecmp(arg, "local") == 0)
        sc->backend = RLAAS_BACKEND_LOCAL;
    else
        return bad_value(cmd, arg,
                         "redis (state in Redis, shared by every server) or "
                         "local (state in this server's shared memory)");
    return NULL;
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
        return bad_value(cmd, arg,
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
        return bad_value(cmd, arg,
                         "an integer from 1 to 1000: the number of servers "
                         "sharing the limit");
    rlaas_server_conf(cmd->server)->local_divisor = (int)v;
    return NULL;
}

/* ---- directory scope ---- */

void *rlaas_create_dir_conf(apr_pool_t *p, char *dir)
{
    rlaas_dir_conf_t *d = apr_pcalloc(p, sizeof(*d));

    (void)dir;
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
    return d;
}

void *rlaas_merge_dir_conf(apr_pool_t *p, void *basev, void *addv)
{
    const rlaas_dir_conf_t *base = basev, *add = addv;
    rlaas_dir_conf_t *d = apr_palloc(p, sizeof(*d));

    /* a limit with its expression and fallback */
    if (add->limit != -1) {
        d->limit = add->limit;
        d->limit_arg = add->limit_arg;
        d->limit_expr = add->limit_expr;
        d->limit_fallback = add->limit_fallback;
        d->limit_unit = add->limit_unit;
    }
    else {
        d->limit = base->limit;
        d->limit_arg = base->limit_arg;
        d->limit_expr = base->limit_expr;
        d->limit_fallback = base->limit_fallback;
        d->limit_unit = base->limit_unit;
    }
    if (add->zone != NULL) {
        d->zone = add->zone;
        d->zone_metric = add->zone_metric;
    }
    else {
        d->zone = base->zone;
        d->zone_metric = base->zone_metric;
    }
    if (add->cost != -1) {
        d->cost = add->cost;
        d->cost_arg = add->cost_arg;
        d->cost_expr = add->cost_expr;
    }
    else {
        d->cost = base->cost;
        d->cost_arg = base->cost_arg;
        d->cost_expr = base->cost_expr;
    }
    /* operations down the tree, in order: replayed per request */
    if (base->apply != NULL && add->apply != NULL)
        d->apply = apr_array_append(p, base->apply, add->apply);
    else
        d->apply = add->apply ? add->apply : base->apply;
    if (add->window_ms != -1) {
        d->window_ms = add->window_ms;
        d->window_arg = add->window_arg;
        d->cal = add->cal;
    }
    else {
        d->window_ms = base->window_ms;
        d->window_arg = base->window_arg;
        d->cal = base->cal;
    }
    if (add->sources != NULL) {
        d->sources = add->sources;
        d->sources_need_user = add->sources_need_user;
    }
    else {
        d->sources = base->sources;
        d->sources_need_user = base->sources_need_user;
    }
    d->strategy = PICK(strategy, RLAAS_STRATEGY_UNSET);
    d->fail_open = PICK(fail_open, -1);
    d->fail_open = PICK(fail_open, RLAAS_FAIL_UNSET);
    d->zone = PICK(zone, NULL);
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
        d->limit_arg = NULL;
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
    d->limit_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, v);
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
        d->cost_arg = NULL;
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
        d->cost_arg = NULL;
        rlaas_tenant_mark(cmd, d, RLAAS_T_COST);
        return NULL;
    }
    if (rlaas_parse_nonneg_int(arg, RLAAS_LIMIT_MAX, &d->cost) != NULL)
        return bad_value(cmd, arg,
                         "an integer from 0 (check without consuming) to "
                         "the limit, expr=EXPRESSION, or bytes");
    d->cost_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, d->cost);
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

    d->cal = NULL;
    if (word != NULL) {
        if ((err = rlaas_calendar_parse(cmd, cmd->cmd->name, arg, word,
                                        &d->cal)) != NULL)
            return err;
        if ((err = rlaas_calendar_strategy(
                 cmd, cmd->cmd->name,
                 apr_pstrcat(cmd->pool, arg, " ", word, NULL), d->cal,
                 d->strategy)) != NULL)
            return err;
        d->window_ms = rlaas_cal_nominal_ms(d->cal);
    }
    else if ((err = rlaas_parse_duration_ms(arg, 1, RLAAS_WINDOW_MAX_MS,
                                            &d->window_ms)) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected %s, "
                            "from 1ms to 30d (or Nd, Nw, NM followed by "
                            "'" RLAAS_CAL_WORD "')",
                            cmd->cmd->name, arg, err);
    if ((err = rlaas_tenant_window_bound(cmd, arg, d->window_ms)) != NULL)
        return err;
    d->window_arg = apr_psprintf(cmd->pool, "%" APR_INT64_T_FMT, d->window_ms);
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
    rlaas_dir_conf_t *d = dv;

    if (strcasecmp(arg, "on") == 0) {
        if (d->strategy == RLAAS_STRATEGY_SLIDING_LOG)
            return lease_vs_log(cmd, arg);
        d->lease = 1;
    }
    else if (strcasecmp(arg, "off") == 0)
        d->lease = 0;
    else
        return bad_value(cmd, arg, "on or off");
    rlaas_tenant_mark(cmd, d, RLAAS_T_LEASE);
    return NULL;
}

static const char *set_strategy(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;
    rlaas_strategy_e st;
    const char *err = rlaas_parse_strategy(arg, &st);

    if (err != NULL)
        return bad_value(cmd, arg, err);
    if (st == RLAAS_STRATEGY_SLIDING_LOG && d->lease == 1)
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

static const char *add_source(cmd_parms *cmd, rlaas_key_source_t *ks,
                              const char *arg)
{
    const char *err = rlaas_parse_source(arg, &ks->src);

    if (err != NULL)
        return bad_value(cmd, arg, err);
    rlaas_keysecret_note_source(&ks->src);
    /* a copy that lives as long as the configuration: the key names the
     * source by it (an expression by a hash of its text) */
    if (ks->src.name != NULL)
        ks->name = apr_pstrndup(cmd->pool, ks->src.name, ks->src.name_len);
    if (ks->src.type == RLAAS_SRC_EXPR) {
        ks->expr = ap_expr_parse_cmd(cmd, ks->name, AP_EXPR_FLAG_STRING_RESULT,
                                     &err, NULL);
        if (err != NULL)
            return apr_psprintf(cmd->pool, "%s: invalid expression in '%s': %s",
                                cmd->cmd->name, arg, err);
    }
    return NULL;
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
        err = add_source(cmd, ks, argv[i]);
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
        return bad_value(cmd, arg, err);
    d->zone = arg;
    rlaas_tenant_mark(cmd, d, RLAAS_T_ZONE);
    /* a tenant's zones are counted together, as "other" */
    d->zone_metric = in_htaccess(cmd) ? -1 : rlaas_metrics_name(arg, 0);
    return NULL;
}

static const char *set_fail_open(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;

    if (ap_cstr_casecmp(arg, "on") == 0)
        d->fail_open = RLAAS_FAIL_OPEN;
    else if (ap_cstr_casecmp(arg, "off") == 0)
        d->fail_open = RLAAS_FAIL_CLOSED;
    else if (ap_cstr_casecmp(arg, "local") == 0)
        d->fail_open = RLAAS_FAIL_LOCAL;
    else
        return bad_value(cmd, arg,
                         "on (allow), off (refuse with 500) or local "
                         "(decide with this server's local engine)");
    return NULL;
}

static const char *set_headers(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_headers_e mode;
    const char *err = rlaas_parse_headers_mode(arg, &mode);

    if (err != NULL)
        return bad_value(cmd, arg, err);
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
    int v;

    (void)dummy;
    if (ap_cstr_casecmp(arg, "exact") == 0)
        v = 0;
    else if (ap_cstr_casecmp(arg, "fold") == 0)
        v = 1;
    else
        return bad_value(cmd, arg,
                         "exact (user names as sent) or fold (names that "
                         "differ only in ASCII case or spacing are one)");
    rlaas_server_conf(cmd->server)->user_case = v;
    return NULL;
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
    AP_INIT_TAKE1(RLAAS_D_REDIS, set_redis, NULL, RSRC_CONF,
                  "Redis server: host[:port], [IPv6]:port or unix:/path"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_USER, set_redis_user, NULL, RSRC_CONF,
                  "Redis ACL user name"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_PASS, set_redis_pass, NULL, RSRC_CONF,
                  "Redis password"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_DB, set_redis_db, NULL, RSRC_CONF,
                  "Redis database number"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_TIMEOUT, set_redis_timeout, NULL, RSRC_CONF,
                  "Bound on connecting, each command and waiting for a "
                  "pooled connection, e.g. 100ms"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_POOLMAX, set_redis_pool_max, NULL, RSRC_CONF,
                  "Redis connections per child process"),
    AP_INIT_TAKE_ARGV(RLAAS_D_REDIS_SENTINEL, set_sentinel, NULL, RSRC_CONF,
                      "MASTER-NAME host:port ...: find the Redis master "
                      "through Redis Sentinel and follow its failovers"),
    AP_INIT_TAKE_ARGV(RLAAS_D_REDIS_CLUSTER, set_cluster, NULL, RSRC_CONF,
                      "host:port ...: seed nodes of a Redis Cluster"),
    AP_INIT_TAKE1(RLAAS_D_SENTINEL_USER, set_sentinel_user, NULL, RSRC_CONF,
                  "ACL user for the sentinels"),
    AP_INIT_TAKE1(RLAAS_D_SENTINEL_PASS, set_sentinel_pass, NULL, RSRC_CONF,
                  "Password for the sentinels"),
    AP_INIT_FLAG(RLAAS_D_REDIS_TLS, set_target_flag,
                 (void *)APR_OFFSETOF(rlaas_target_t, tls), RSRC_CONF,
                 "On: talk to Redis over TLS (its tls-port)"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_TLS_CA, set_redis_tls_ca, NULL, RSRC_CONF,
                  "CA certificate file that signs the Redis server's "
                  "certificate (PEM)"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_TLS_CERT, set_redis_tls_cert, NULL, RSRC_CONF,
                  "Client certificate file for Redis (PEM)"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_TLS_KEY, set_redis_tls_key, NULL, RSRC_CONF,
                  "Private key file of the client certificate (PEM)"),
    AP_INIT_TAKE1(RLAAS_D_REDIS_TLS_NAME, set_redis_tls_name, NULL, RSRC_CONF,
                  "Name the Redis server's certificate must carry (default: "
                  "the host of RLaaSRedis)"),
    AP_INIT_FLAG(RLAAS_D_REDIS_PIPELINE, set_target_flag,
                 (void *)APR_OFFSETOF(rlaas_target_t, pipeline), RSRC_CONF,
                 "On: calls of one child that meet in time share one write "
                 "and one read on one connection (default On)"),
    AP_INIT_TAKE1(RLAAS_D_KEY_PREFIX, set_key_prefix, NULL, RSRC_CONF,
                  "Prefix of every Redis key"),
    AP_INIT_TAKE1(RLAAS_D_IPV6_PREFIX, set_ipv6_prefix, NULL, RSRC_CONF,
                  "IPv6 clients are grouped by this prefix length, 32 to "
                  "128 (default 64)"),
    AP_INIT_TAKE12(RLAAS_D_CIRCUIT, set_circuit, NULL, RSRC_CONF,
                   "off, or consecutive Redis failures that open the "
                   "circuit and the cool-down before a probe (5 500ms)"),
    AP_INIT_TAKE12(RLAAS_D_LIMIT, set_limit, NULL, DIR_SCOPE,
                   "Requests allowed per window (a size such as 3M with "
                   "RLaaSCost bytes), or expr=EXPR [fallback] read per "
                   "request; enables limiting"),
    AP_INIT_TAKE1(RLAAS_D_COST, set_cost, NULL, DIR_SCOPE,
                  "Units one request consumes: N (0: check only), "
                  "expr=EXPR (default 1), or bytes (the body bytes sent)"),
    AP_INIT_TAKE_ARGV(RLAAS_D_APPLY, set_apply, NULL, DIR_SCOPE,
                      "Policies applied here and below: NAME, -NAME "
                      "(remove an inherited one) or none"),
    AP_INIT_RAW_ARGS(RLAAS_D_POLICY, set_policy, NULL, RSRC_CONF,
                     "NAME LIMIT WINDOW [calendar] [strategy=S] "
                     "[key=\"SOURCES\"] "
                     "[cost=N|bytes] [countif=EXPR]: a named policy"),
    AP_INIT_TAKE_ARGV(RLAAS_D_ENFORCE, set_enforce, NULL, RSRC_CONF,
                      "Policies applied to every request of the server or "
                      "virtual host, whatever its sections say"),
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
                  "On: spend a busy identity's quota in portions taken "
                  "from Redis (not with the sliding log)"),
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
    /* TLS to the sentinels and the name of the master they announce */
    AP_INIT_TAKE1(RLAAS_D_SENTINEL_TLS_NAME, set_sentinel_tls_name, NULL,
                  RSRC_CONF,
                  "Name every sentinel's certificate must carry (default: "
                  "each sentinel's host as RLaaSRedisSentinel names it)"),
    AP_INIT_FLAG(RLAAS_D_TLS_ANNOUNCED, set_target_flag,
                 (void *)APR_OFFSETOF(rlaas_target_t, tls_announced), RSRC_CONF,
                 "On: with Sentinel and TLS, check the master's certificate "
                 "against the address the sentinels announce (default Off: "
                 "RLaaSRedisTLSServerName is required)"),
    /* calendar windows: the zone their days start in */
    RLAAS_CALENDAR_CMDS,
    {NULL}};

/* ---- accessors ---- */

rlaas_server_conf_t *rlaas_server_conf(const server_rec *s)
{
    return ap_get_module_config(s->module_config, &rlaas_module);
}

rlaas_dir_conf_t *rlaas_dir_conf(const request_rec *r)
{
    return ap_get_module_config(r->per_dir_config, &rlaas_module);
}

int rlaas_dir_has_limit(const rlaas_dir_conf_t *d)
{
    return d != NULL && (d->limit > 0 || d->limit_expr != NULL);
}

int rlaas_dir_active(const rlaas_dir_conf_t *d)
{
    return rlaas_dir_has_limit(d) && d->engine != 0;
}

int64_t rlaas_dir_window_ms(const rlaas_dir_conf_t *d)
{
    return d->window_ms > 0 ? d->window_ms : RLAAS_DEFAULT_WINDOW_MS;
}

const char *rlaas_dir_window_arg(const rlaas_dir_conf_t *d)
{
    return d->window_arg != NULL ? d->window_arg
                                 : APR_STRINGIFY(RLAAS_DEFAULT_WINDOW_MS);
}

rlaas_strategy_e rlaas_dir_strategy(const rlaas_dir_conf_t *d)
{
    /* a calendar window counts with fixed, the one strategy it has */
    if (d->strategy == RLAAS_STRATEGY_UNSET)
        return d->cal != NULL ? RLAAS_STRATEGY_FIXED : RLAAS_DEFAULT_STRATEGY;
    return (rlaas_strategy_e)d->strategy;
}

int rlaas_dir_fail_open(const rlaas_dir_conf_t *d)
{
    return d->fail_open == RLAAS_FAIL_OPEN;
}

int rlaas_dir_fail_local(const rlaas_dir_conf_t *d)
{
    return d->fail_open == RLAAS_FAIL_LOCAL;
}

int rlaas_dir_lease(const rlaas_dir_conf_t *d)
{
    return d != NULL && d->lease == 1;
}

int rlaas_config_console_any(void)
{
    return console_any;
}

int rlaas_dir_console(const rlaas_dir_conf_t *d)
{
    return d != NULL && d->console == 1;
}

int rlaas_dir_metrics(const rlaas_dir_conf_t *d)
{
    return d != NULL && d->metrics == 1;
}

rlaas_headers_e rlaas_dir_headers(const rlaas_dir_conf_t *d)
{
    return d->headers != RLAAS_HEADERS_UNSET ? (rlaas_headers_e)d->headers
                                             : RLAAS_HEADERS_DRAFT;
}

int rlaas_target_cluster(const rlaas_target_t *t)
{
    return t->cluster_n > 0;
}

const char *rlaas_server_prefix(const rlaas_server_conf_t *sc)
{
    return sc->key_prefix != NULL ? sc->key_prefix : RLAAS_DEFAULT_PREFIX;
}

int rlaas_server_ipv6_prefix(const rlaas_server_conf_t *sc)
{
    return sc->ipv6_prefix > 0 ? sc->ipv6_prefix : RLAAS_IPV6_PREFIX_DEFAULT;
}

int64_t rlaas_server_limit_max(const rlaas_server_conf_t *sc)
{
    return sc->limit_max > 0 ? sc->limit_max : RLAAS_LIMIT_MAX;
}

const rlaas_dir_conf_t *rlaas_server_dir_conf(const request_rec *r)
{
    return ap_get_module_config(r->server->lookup_defaults, &rlaas_module);
}

/* Whether a host's (merged) target names a Redis. */
static int has_target(const rlaas_target_t *t)
{
    return t->host != NULL || t->sentinel_master != NULL || t->cluster_n > 0;
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
            sc->backend = has_target(sc->target) ? RLAAS_BACKEND_REDIS
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

/* Every Redis target's settings final, once: the defaults where none was
 * given (a target shared by several hosts is seen again, unchanged). */
static void resolve_targets(server_rec *s)
{
    for (; s != NULL; s = s->next) {
        rlaas_target_t *t = rlaas_server_conf(s)->target;

        if (t->database < 0)
            t->database = 0;
        if (t->timeout_ms <= 0)
            t->timeout_ms = RLAAS_DEFAULT_TIMEOUT_MS;
        if (t->circuit_failures < 0)
            t->circuit_failures = RLAAS_DEFAULT_CIRCUIT_FAILURES;
        if (t->circuit_cooldown_ms <= 0)
            t->circuit_cooldown_ms = RLAAS_DEFAULT_CIRCUIT_COOLDOWN_MS;
        t->pipeline = t->pipeline != 0;
        t->tls = t->tls == 1;
        t->tls_announced = t->tls_announced == 1;
    }
}

/* A virtual host's own policies count in its namespace unless it has a
 * key prefix of its own: two hosts that both declare "api" never share. */
void rlaas_config_post_config(apr_pool_t *pconf, server_rec *s)
{
    ap_add_version_component(pconf, "mod_rlaas/" RLAAS_VERSION);
    resolve_backends(s);
    resolve_targets(s);
    rlaas_keysecret_post_config(s);
    for (; s != NULL; s = s->next) {
        rlaas_server_conf_t *sc = rlaas_server_conf(s);
        apr_hash_index_t *hi;

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

int rlaas_server_local(const rlaas_server_conf_t *sc)
{
    return sc->backend == RLAAS_BACKEND_LOCAL;
}

int rlaas_server_user_fold(const rlaas_server_conf_t *sc)
{
    return sc->user_case == 1;
}

int rlaas_server_local_divisor(const rlaas_server_conf_t *sc)
{
    return sc->local_divisor > 0 ? sc->local_divisor : 1;
}

int64_t rlaas_server_local_size(const rlaas_server_conf_t *sc)
{
    return sc->local_size > 0 ? sc->local_size : RLAAS_DEFAULT_LOCAL_SIZE;
}
