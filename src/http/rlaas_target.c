#include "rlaas_target.h"

#include "http_core.h"
#include "apr_file_info.h"
#include "apr_strings.h"

rlaas_target_t *rlaas_target_new(apr_pool_t *p)
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

#define PICK(field, unset) (add->field != (unset) ? add->field : base->field)

rlaas_target_t *rlaas_target_merge(apr_pool_t *p, const rlaas_target_t *base,
                                   const rlaas_target_t *add)
{
    rlaas_target_t *t = rlaas_target_new(p);

    /* fields that travel together come from the side that set them: an
     * address; credentials (a vhost naming its own user or password must
     * not inherit half of its parent's pair); a master's sentinels; their
     * credentials; the cluster's seeds; a certificate and its key; the
     * breaker's threshold and cool-down */
    const rlaas_target_t *f;

    f = add->host != NULL ? add : base;
    t->host = f->host;
    t->port = f->port;
    t->is_unix = f->is_unix;
    f = add->username != NULL || add->password != NULL ? add : base;
    t->username = f->username;
    t->password = f->password;
    f = add->sentinel_master != NULL ? add : base;
    t->sentinel_master = f->sentinel_master;
    t->sentinel_hosts = f->sentinel_hosts;
    t->sentinel_ports = f->sentinel_ports;
    t->sentinel_n = f->sentinel_n;
    f = add->sentinel_user != NULL || add->sentinel_pass != NULL ? add : base;
    t->sentinel_user = f->sentinel_user;
    t->sentinel_pass = f->sentinel_pass;
    f = add->cluster_n > 0 ? add : base;
    t->cluster_hosts = f->cluster_hosts;
    t->cluster_ports = f->cluster_ports;
    t->cluster_n = f->cluster_n;
    f = add->tls_cert != NULL || add->tls_key != NULL ? add : base;
    t->tls_cert = f->tls_cert;
    t->tls_key = f->tls_key;
    f = add->circuit_failures != -1 ? add : base;
    t->circuit_failures = f->circuit_failures;
    t->circuit_cooldown_ms = f->circuit_cooldown_ms;
    t->database = PICK(database, -1);
    t->timeout_ms = PICK(timeout_ms, -1);
    t->pool_max = PICK(pool_max, -1);
    t->pipeline = PICK(pipeline, -1);
    t->tls = PICK(tls, -1);
    t->tls_ca = PICK(tls_ca, NULL);
    t->tls_server_name = PICK(tls_server_name, NULL);
    t->sentinel_tls_name = PICK(sentinel_tls_name, NULL);
    t->tls_announced = PICK(tls_announced, -1);
    return t;
}

static rlaas_target_t *target_for(cmd_parms *cmd)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);

    sc->target_set = 1;
    return sc->target;
}

const char *rlaas_target_set_redis(cmd_parms *cmd, void *dummy, const char *arg)
{
    rlaas_target_t *t = target_for(cmd);
    char *host = apr_palloc(cmd->pool, strlen(arg) + 1);
    const char *err = rlaas_parse_redis_addr(arg, host, &t->port, &t->is_unix);

    (void)dummy;
    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, err);
    t->host = host;
    return NULL;
}

/* The target's text field at cmd->info (its offset). */
static const char **slot_of(cmd_parms *cmd)
{
    return (const char **)((char *)target_for(cmd) + (size_t)cmd->info);
}

/* An ACL user name: RLaaSRedisUser, RLaaSRedisSentinelUser. */
const char *rlaas_target_set_user(cmd_parms *cmd, void *dummy, const char *arg)
{
    (void)dummy;
    if (*arg == '\0')
        return rlaas_config_bad_value(cmd, arg, "a non-empty ACL user name");
    *slot_of(cmd) = arg;
    return NULL;
}

/* A password: RLaaSRedisPassword, RLaaSRedisSentinelPassword. */
const char *rlaas_target_set_secret(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    (void)dummy;
    /* The value is not repeated in the message: it is a secret. */
    if (*arg == '\0')
        return apr_psprintf(cmd->pool, "%s: expected a non-empty password",
                            cmd->cmd->name);
    *slot_of(cmd) = arg;
    return NULL;
}

const char *rlaas_target_set_redis_db(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    int64_t v;
    const char *err = rlaas_parse_nonneg_int(arg, 1000000, &v);

    (void)dummy;
    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, "an integer from 0 to 1000000");
    target_for(cmd)->database = (int)v;
    return NULL;
}

const char *rlaas_target_set_redis_timeout(cmd_parms *cmd, void *dummy,
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

const char *rlaas_target_set_redis_pool_max(cmd_parms *cmd, void *dummy,
                                            const char *arg)
{
    int64_t v;
    const char *err = rlaas_parse_nonneg_int(arg, 100000, &v);

    (void)dummy;
    if (err != NULL || v < 1)
        return rlaas_config_bad_value(cmd, arg, "an integer from 1 to 100000");
    target_for(cmd)->pool_max = (int)v;
    return NULL;
}

/* A flag of the Redis target: its offset in cmd->info (the target's
 * ap_set_flag_slot). */
const char *rlaas_target_set_flag(cmd_parms *cmd, void *dummy, int on)
{
    (void)dummy;
    *(int *)((char *)target_for(cmd) + (size_t)cmd->info) = on;
    return NULL;
}

/* A file the TLS context will read in every child: refused at start-up
 * when it can't be read, as mod_ssl does with its own (RLaaSRedisTLSCA,
 * RLaaSRedisTLSCert, RLaaSRedisTLSKey). */
const char *rlaas_target_set_tls_file(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    const char *path = ap_server_root_relative(cmd->pool, arg);
    apr_finfo_t fi;

    (void)dummy;
    if (path == NULL ||
        apr_stat(&fi, path, APR_FINFO_TYPE, cmd->pool) != APR_SUCCESS ||
        fi.filetype != APR_REG)
        return rlaas_config_bad_value(cmd, arg, "a readable file (PEM)");
    *slot_of(cmd) = path;
    return NULL;
}

/* A name a certificate is checked against: RLaaSRedisTLSServerName,
 * RLaaSRedisSentinelTLSServerName. */
const char *rlaas_target_set_tls_name(cmd_parms *cmd, void *dummy,
                                      const char *arg)
{
    (void)dummy;
    if (*arg == '\0' || strlen(arg) > 253 || strpbrk(arg, " /\t") != NULL)
        return rlaas_config_bad_value(cmd, arg, "a host name or address");
    *slot_of(cmd) = arg;
    return NULL;
}

/* "RLaaSRedisSentinel MASTER host:port [host:port ...]" */
const char *rlaas_target_set_sentinel(cmd_parms *cmd, void *dummy, int argc,
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
        return rlaas_config_bad_value(cmd, argv[0], err);
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
            return rlaas_config_bad_value(cmd, argv[i],
                                          "a sentinel as host:port");
        t->sentinel_hosts[i - 1] = host;
    }
    return NULL;
}

/* "RLaaSRedisCluster host:port [host:port ...]": seed nodes */
const char *rlaas_target_set_cluster(cmd_parms *cmd, void *dummy, int argc,
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
            return rlaas_config_bad_value(cmd, argv[i],
                                          "a cluster node as host:port");
        t->cluster_hosts[i] = host;
    }
    return NULL;
}

/* "RLaaSCircuitBreaker off" or "RLaaSCircuitBreaker <failures> [cooldown]" */
const char *rlaas_target_set_circuit(cmd_parms *cmd, void *dummy, const char *n,
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
        return rlaas_config_bad_value(
            cmd, n,
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

/* Whether a host's (merged) target names a Redis. */
int rlaas_target_named(const rlaas_target_t *t)
{
    return t->host != NULL || t->sentinel_master != NULL || t->cluster_n > 0;
}

/* Every Redis target's settings final, once: the defaults where none was
 * given (a target shared by several hosts is seen again, unchanged). */
void rlaas_target_resolve(server_rec *s)
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

int rlaas_target_cluster(const rlaas_target_t *t)
{
    return t->cluster_n > 0;
}
