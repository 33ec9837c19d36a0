/*
 * Configuration: the per-server Redis settings and the per-directory limit
 * settings, their directives and merge rules.
 *
 * Unset values hold a sentinel (-1 or NULL); merging never changes its
 * inputs; defaults apply where the values are read (the rlaas_*_get
 * helpers below), so a child section that sets nothing inherits.
 */
#ifndef RLAAS_CONFIG_H
#define RLAAS_CONFIG_H

#include "httpd.h"
#include "http_config.h"
#include "ap_expr.h"

#include "rlaas_headers.h"
#include "rlaas_parse.h"

/* Directive names, used in the command table and in error messages. */
#define RLAAS_D_REDIS             "RLaaSRedis"
#define RLAAS_D_REDIS_USER        "RLaaSRedisUsername"
#define RLAAS_D_REDIS_PASS        "RLaaSRedisPassword"
#define RLAAS_D_REDIS_DB          "RLaaSRedisDatabase"
#define RLAAS_D_REDIS_TIMEOUT     "RLaaSRedisTimeout"
#define RLAAS_D_REDIS_POOLMAX     "RLaaSRedisPoolMax"
#define RLAAS_D_KEY_PREFIX        "RLaaSKeyPrefix"
#define RLAAS_D_IPV6_PREFIX       "RLaaSIPv6Prefix"
#define RLAAS_D_LIMIT             "RLaaSLimit"
#define RLAAS_D_WINDOW            "RLaaSWindow"
#define RLAAS_D_STRATEGY          "RLaaSStrategy"
#define RLAAS_D_KEY_BY            "RLaaSKeyBy"
#define RLAAS_D_FAIL_OPEN         "RLaaSFailOpen"
#define RLAAS_D_ZONE              "RLaaSZone"
#define RLAAS_D_ENGINE            "RLaaSEngine"
#define RLAAS_D_HEADERS           "RLaaSHeaders"
#define RLAAS_D_DRY_RUN           "RLaaSDryRun"
#define RLAAS_D_CIRCUIT           "RLaaSCircuitBreaker"
#define RLAAS_D_CIRCUIT_FAIL_OPEN "RLaaSCircuitFailOpen"
#define RLAAS_D_REDIS_PIPELINE    "RLaaSRedisPipeline"
#define RLAAS_D_REDIS_TLS         "RLaaSRedisTLS"
#define RLAAS_D_REDIS_TLS_CA      "RLaaSRedisTLSCA"
#define RLAAS_D_REDIS_TLS_CERT    "RLaaSRedisTLSCert"
#define RLAAS_D_REDIS_TLS_KEY     "RLaaSRedisTLSKey"
#define RLAAS_D_REDIS_TLS_NAME    "RLaaSRedisTLSServerName"
#define RLAAS_D_REDIS_SENTINEL    "RLaaSRedisSentinel"
#define RLAAS_D_SENTINEL_USER     "RLaaSRedisSentinelUsername"
#define RLAAS_D_SENTINEL_PASS     "RLaaSRedisSentinelPassword"
#define RLAAS_SENTINELS_MAX       16
#define RLAAS_D_REDIS_CLUSTER     "RLaaSRedisCluster"
#define RLAAS_D_BACKEND           "RLaaSBackend"
#define RLAAS_D_LOCAL_SIZE        "RLaaSLocalSize"
#define RLAAS_D_LOCAL_DIVISOR     "RLaaSLocalDivisor"

#define RLAAS_DEFAULT_HOST                "127.0.0.1"
#define RLAAS_DEFAULT_PORT                6379
#define RLAAS_DEFAULT_TIMEOUT_MS          100
#define RLAAS_DEFAULT_PREFIX              "rlaas:rate_limit:"
#define RLAAS_DEFAULT_WINDOW_MS           60000
#define RLAAS_DEFAULT_STRATEGY            RLAAS_STRATEGY_SLIDING_LOG
#define RLAAS_DEFAULT_CIRCUIT_FAILURES    5
#define RLAAS_DEFAULT_CIRCUIT_COOLDOWN_MS 500
#define RLAAS_DEFAULT_LOCAL_SIZE          (10LL << 20)
#define RLAAS_LOCAL_SIZE_MIN              (64LL << 10)
#define RLAAS_LOCAL_SIZE_MAX              (4LL << 30)
#define RLAAS_LOCAL_DIVISOR_MAX           1000

/* Where a server's limits are decided: RLaaSBackend. */
typedef enum {
    RLAAS_BACKEND_UNSET = -1,
    RLAAS_BACKEND_REDIS = 0,
    RLAAS_BACKEND_LOCAL = 1
} rlaas_backend_e;

/* RLaaSFailOpen: what a section does when Redis can't decide. */
typedef enum {
    RLAAS_FAIL_UNSET = -1,
    RLAAS_FAIL_CLOSED = 0, /* off: 500 */
    RLAAS_FAIL_OPEN = 1,   /* on: allowed */
    RLAAS_FAIL_LOCAL = 2   /* local: decided by the local engine */
} rlaas_fail_e;

struct rlaas_redis_t;

/* Where and how to reach Redis. Virtual hosts that set no Redis directive
 * share their parent's target, and so its per-child connection pool. */
typedef struct {
    const char *host; /* NULL: default; a socket path when is_unix */
    int port;         /* 0 with a unix socket */
    int is_unix;
    const char *username;      /* NULL: no ACL user */
    const char *password;      /* NULL: no AUTH; never logged */
    int database;              /* -1: unset (0) */
    int timeout_ms;            /* -1: unset */
    int pool_max;              /* -1: unset (the MPM's threads per child) */
    int circuit_failures;      /* -1: unset; 0: no circuit breaker */
    int circuit_cooldown_ms;   /* -1: unset */
    int pipeline;            /* -1: unset (on) */
    int tls;                 /* -1: unset (off) */
    const char *tls_ca;      /* NULL: unset (the system's CAs) */
    const char *tls_cert;    /* NULL: no client certificate */
    const char *tls_key;
    const char *tls_server_name; /* NULL: the host of RLaaSRedis */
    const char *sentinel_master; /* NULL: no Sentinel */
    const char **sentinel_hosts; /* sentinel_n of them */
    int *sentinel_ports;
    int sentinel_n;
    const char *sentinel_user; /* Sentinel's own AUTH; NULL: none */
    const char *sentinel_pass; /* never logged */
    const char **cluster_hosts; /* seed nodes of a Redis Cluster */
    int *cluster_ports;
    int cluster_n; /* 0: not a cluster */
    struct rlaas_redis_t *redis; /* the engine, made in each child */
} rlaas_target_t;

typedef struct {
    rlaas_target_t *target; /* never NULL */
    int target_set;         /* this section named a Redis directive */
    const char *key_prefix; /* NULL: unset */
    int ipv6_prefix;        /* -1: unset (64) */
    int backend;            /* RLAAS_BACKEND_UNSET (redis) */
    int local_divisor;      /* -1: unset (1) */
    int64_t local_size;     /* -1: unset; the main server's only */
} rlaas_server_conf_t;

typedef struct {
    rlaas_source_t src;
    const char *name;     /* NUL-terminated name, or the expression's text */
    ap_expr_info_t *expr; /* for expr= */
} rlaas_key_source_t;

typedef struct {
    int64_t limit;         /* -1: unset, no limiting */
    const char *limit_arg; /* limit as the script's argument */
    int64_t window_ms;     /* -1: unset */
    const char *window_arg;
    int strategy;                /* RLAAS_STRATEGY_UNSET */
    apr_array_header_t *sources; /* of rlaas_key_source_t; NULL: unset */
    int sources_need_user;       /* decide after authentication */
    int fail_open;               /* RLAAS_FAIL_UNSET (off) */
    const char *zone;            /* NULL: unset */
    int engine;                  /* -1: unset (on) */
    int headers;                 /* RLAAS_HEADERS_UNSET (draft) */
    int dry_run;                 /* -1: unset (off) */
    int circuit_fail_open;       /* -1: unset (off) */
} rlaas_dir_conf_t;

extern const command_rec rlaas_cmds[];

void *rlaas_create_server_conf(apr_pool_t *p, server_rec *s);
void *rlaas_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
void *rlaas_create_dir_conf(apr_pool_t *p, char *dir);
void *rlaas_merge_dir_conf(apr_pool_t *p, void *basev, void *addv);

rlaas_server_conf_t *rlaas_server_conf(const server_rec *s);
rlaas_dir_conf_t *rlaas_dir_conf(const request_rec *r);

/* Read-time defaults. */
int rlaas_dir_active(const rlaas_dir_conf_t *d);
int64_t rlaas_dir_window_ms(const rlaas_dir_conf_t *d);
const char *rlaas_dir_window_arg(const rlaas_dir_conf_t *d);
rlaas_strategy_e rlaas_dir_strategy(const rlaas_dir_conf_t *d);
int rlaas_dir_fail_open(const rlaas_dir_conf_t *d);
int rlaas_dir_fail_local(const rlaas_dir_conf_t *d);
rlaas_headers_e rlaas_dir_headers(const rlaas_dir_conf_t *d);
int rlaas_target_circuit_failures(const rlaas_target_t *t);
int rlaas_target_circuit_cooldown_ms(const rlaas_target_t *t);
int rlaas_target_pipeline(const rlaas_target_t *t);
/* 1 with RLaaSRedisCluster: keys carry their identity as a hash tag. */
int rlaas_target_cluster(const rlaas_target_t *t);
const char *rlaas_server_prefix(const rlaas_server_conf_t *sc);
int rlaas_server_ipv6_prefix(const rlaas_server_conf_t *sc);
int rlaas_target_timeout_ms(const rlaas_target_t *t);
int rlaas_server_local(const rlaas_server_conf_t *sc);
int rlaas_server_local_divisor(const rlaas_server_conf_t *sc);
int64_t rlaas_server_local_size(const rlaas_server_conf_t *sc);

#endif
