/*
 * A server's Redis target: where and how to reach Redis (RLaaSRedis and
 * its credentials, database and time-out, TLS, Sentinel, Cluster, the
 * pool, the pipeline and the circuit breaker). Read per server, merged per
 * virtual host (a host that sets none shares its parent's target, and so
 * its pool), its defaults resolved once in post_config.
 */
#ifndef RLAAS_TARGET_H
#define RLAAS_TARGET_H

#include "httpd.h"
#include "http_config.h"

#include "rlaas_config.h"

/* A target with every setting unset. */
rlaas_target_t *rlaas_target_new(apr_pool_t *p);

/* A host's target over its parent's: each setting, or each group of
 * settings that travel together (an address, credentials, the sentinels,
 * the seeds, a certificate and its key, the circuit), its own or else the
 * parent's. */
rlaas_target_t *rlaas_target_merge(apr_pool_t *p, const rlaas_target_t *base,
                                   const rlaas_target_t *add);

/* Whether a (merged) target names a Redis. */
int rlaas_target_named(const rlaas_target_t *t);

/* Whether it is a Redis Cluster's seeds. */
int rlaas_target_cluster(const rlaas_target_t *t);

/* post_config: every server's target final (the defaults where none was
 * given). */
void rlaas_target_resolve(server_rec *s);

/* The directives' setters, for the command table. */
const char *rlaas_target_set_redis(cmd_parms *cmd, void *dummy,
                                   const char *arg);
/* user names, passwords, TLS files and certificate names: into the
 * target's field at the offset cmd->info */
const char *rlaas_target_set_user(cmd_parms *cmd, void *dummy, const char *arg);
const char *rlaas_target_set_secret(cmd_parms *cmd, void *dummy,
                                    const char *arg);
const char *rlaas_target_set_tls_file(cmd_parms *cmd, void *dummy,
                                      const char *arg);
const char *rlaas_target_set_tls_name(cmd_parms *cmd, void *dummy,
                                      const char *arg);
const char *rlaas_target_set_redis_db(cmd_parms *cmd, void *dummy,
                                      const char *arg);
const char *rlaas_target_set_redis_timeout(cmd_parms *cmd, void *dummy,
                                           const char *arg);
const char *rlaas_target_set_redis_pool_max(cmd_parms *cmd, void *dummy,
                                            const char *arg);
const char *rlaas_target_set_flag(cmd_parms *cmd, void *dummy, int on);
const char *rlaas_target_set_sentinel(cmd_parms *cmd, void *dummy, int argc,
                                      char *const argv[]);
const char *rlaas_target_set_cluster(cmd_parms *cmd, void *dummy, int argc,
                                     char *const argv[]);
const char *rlaas_target_set_circuit(cmd_parms *cmd, void *dummy, const char *n,
                                     const char *cool);

#define RLAAS_TARGET_CMDS                                                      \
    AP_INIT_TAKE1(RLAAS_D_REDIS, rlaas_target_set_redis, NULL, RSRC_CONF,      \
                  "Redis server: host[:port], [IPv6]:port or unix:/path"),     \
        AP_INIT_TAKE1(RLAAS_D_REDIS_USER, rlaas_target_set_user,               \
                      (void *)APR_OFFSETOF(rlaas_target_t, username),          \
                      RSRC_CONF, "Redis ACL user name"),                       \
        AP_INIT_TAKE1(RLAAS_D_REDIS_PASS, rlaas_target_set_secret,             \
                      (void *)APR_OFFSETOF(rlaas_target_t, password),          \
                      RSRC_CONF, "Redis password"),                            \
        AP_INIT_TAKE1(RLAAS_D_REDIS_DB, rlaas_target_set_redis_db, NULL,       \
                      RSRC_CONF, "Redis database number"),                     \
        AP_INIT_TAKE1(RLAAS_D_REDIS_TIMEOUT, rlaas_target_set_redis_timeout,   \
                      NULL, RSRC_CONF,                                         \
                      "Bound on connecting, each command and waiting for a "   \
                      "pooled connection, e.g. 100ms"),                        \
        AP_INIT_TAKE1(RLAAS_D_REDIS_POOLMAX, rlaas_target_set_redis_pool_max,  \
                      NULL, RSRC_CONF, "Redis connections per child process"), \
        AP_INIT_TAKE_ARGV(RLAAS_D_REDIS_SENTINEL, rlaas_target_set_sentinel,   \
                          NULL, RSRC_CONF,                                     \
                          "MASTER-NAME host:port ...: find the Redis master "  \
                          "through Redis Sentinel and follow its failovers"),  \
        AP_INIT_TAKE_ARGV(RLAAS_D_REDIS_CLUSTER, rlaas_target_set_cluster,     \
                          NULL, RSRC_CONF,                                     \
                          "host:port ...: seed nodes of a Redis Cluster"),     \
        AP_INIT_TAKE1(RLAAS_D_SENTINEL_USER, rlaas_target_set_user,            \
                      (void *)APR_OFFSETOF(rlaas_target_t, sentinel_user),     \
                      RSRC_CONF, "ACL user for the sentinels"),                \
        AP_INIT_TAKE1(RLAAS_D_SENTINEL_PASS, rlaas_target_set_secret,          \
                      (void *)APR_OFFSETOF(rlaas_target_t, sentinel_pass),     \
                      RSRC_CONF, "Password for the sentinels"),                \
        AP_INIT_FLAG(RLAAS_D_REDIS_TLS, rlaas_target_set_flag,                 \
                     (void *)APR_OFFSETOF(rlaas_target_t, tls), RSRC_CONF,     \
                     "On: talk to Redis over TLS (its tls-port)"),             \
        AP_INIT_TAKE1(RLAAS_D_REDIS_TLS_CA, rlaas_target_set_tls_file,         \
                      (void *)APR_OFFSETOF(rlaas_target_t, tls_ca), RSRC_CONF, \
                      "CA certificate file that signs the Redis server's "     \
                      "certificate (PEM)"),                                    \
        AP_INIT_TAKE1(RLAAS_D_REDIS_TLS_CERT, rlaas_target_set_tls_file,       \
                      (void *)APR_OFFSETOF(rlaas_target_t, tls_cert),          \
                      RSRC_CONF, "Client certificate file for Redis (PEM)"),   \
        AP_INIT_TAKE1(RLAAS_D_REDIS_TLS_KEY, rlaas_target_set_tls_file,        \
                      (void *)APR_OFFSETOF(rlaas_target_t, tls_key),           \
                      RSRC_CONF,                                               \
                      "Private key file of the client certificate (PEM)"),     \
        AP_INIT_TAKE1(                                                         \
            RLAAS_D_REDIS_TLS_NAME, rlaas_target_set_tls_name,                 \
            (void *)APR_OFFSETOF(rlaas_target_t, tls_server_name), RSRC_CONF,  \
            "Name the Redis server's certificate must carry (default: "        \
            "the host of RLaaSRedis)"),                                        \
        AP_INIT_FLAG(                                                          \
            RLAAS_D_REDIS_PIPELINE, rlaas_target_set_flag,                     \
            (void *)APR_OFFSETOF(rlaas_target_t, pipeline), RSRC_CONF,         \
            "On: calls of one child that meet in time share one write "        \
            "and one read on one connection (default On)"),                    \
        AP_INIT_TAKE12(RLAAS_D_CIRCUIT, rlaas_target_set_circuit, NULL,        \
                       RSRC_CONF,                                              \
                       "off, or consecutive Redis failures that open the "     \
                       "circuit and the cool-down before a probe (5 500ms)"),  \
        AP_INIT_TAKE1(                                                         \
            RLAAS_D_SENTINEL_TLS_NAME, rlaas_target_set_tls_name,              \
            (void *)APR_OFFSETOF(rlaas_target_t, sentinel_tls_name),           \
            RSRC_CONF,                                                         \
            "Name every sentinel's certificate must carry (default: "          \
            "each sentinel's host as RLaaSRedisSentinel names it)"),           \
        AP_INIT_FLAG(                                                          \
            RLAAS_D_TLS_ANNOUNCED, rlaas_target_set_flag,                      \
            (void *)APR_OFFSETOF(rlaas_target_t, tls_announced), RSRC_CONF,    \
            "On: with Sentinel and TLS, check the master's certificate "       \
            "against the address the sentinels announce (default Off: "        \
            "RLaaSRedisTLSServerName is required)")

#endif
