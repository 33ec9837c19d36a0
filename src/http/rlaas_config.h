/*
 * Configuration: the per-server and per-directory settings as the request
 * path reads them: their types and accessors. The directives that fill
 * them, and their merge, are rlaas_directives.c's (which knows every
 * feature; the features know this header only).
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
#include "apr_hash.h"

#include "rlaas_cal.h"
#include "rlaas_headers.h"
#include "rlaas_key.h"
#include "rlaas_parse.h"
#include "rlaas_policy.h"

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
#define RLAAS_D_SENTINEL_TLS_NAME "RLaaSRedisSentinelTLSServerName"
#define RLAAS_D_TLS_ANNOUNCED     "RLaaSRedisTLSAnnouncedName"
#define RLAAS_SENTINELS_MAX       16
#define RLAAS_D_REDIS_CLUSTER     "RLaaSRedisCluster"
#define RLAAS_D_POLICY            "RLaaSPolicy"
#define RLAAS_D_APPLY             "RLaaSApply"
#define RLAAS_D_ENFORCE           "RLaaSEnforce"
#define RLAAS_D_LIMIT_MAX         "RLaaSLimitMax"
#define RLAAS_D_COST              "RLaaSCost"
#define RLAAS_D_BACKEND           "RLaaSBackend"
#define RLAAS_D_LOCAL_SIZE        "RLaaSLocalSize"
#define RLAAS_D_LOCAL_DIVISOR     "RLaaSLocalDivisor"
#define RLAAS_D_LEASE             "RLaaSLease"
#define RLAAS_D_CONSOLE           "RLaaSConsole"
#define RLAAS_D_USER_CASE         "RLaaSUserCase"
#define RLAAS_D_KEY_SECRET        "RLaaSKeySecret"
#define RLAAS_D_METRICS           "RLaaSMetrics"

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
 * share their parent's target, and so its per-child connection pool.
 * The settings marked "unset" are while the configuration is read: from
 * post_config on, each holds its final value (the default where none
 * was given). */
typedef struct {
    const char *host; /* NULL: default; a socket path when is_unix */
    int port;         /* 0 with a unix socket */
    int is_unix;
    const char *username;    /* NULL: no ACL user */
    const char *password;    /* NULL: no AUTH; never logged */
    int database;            /* -1: unset (0) */
    int timeout_ms;          /* -1: unset */
    int pool_max;            /* -1: unset (the MPM's threads per child) */
    int circuit_failures;    /* -1: unset; 0: no circuit breaker */
    int circuit_cooldown_ms; /* -1: unset */
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
    const char *sentinel_user;     /* Sentinel's own AUTH; NULL: none */
    const char *sentinel_pass;     /* never logged */
    const char *sentinel_tls_name; /* NULL: each sentinel's host */
    int tls_announced;             /* -1: unset (off): with Sentinel, check the
                                      master's certificate against its announced
                                      address instead of tls_server_name */
    const char **cluster_hosts;    /* seed nodes of a Redis Cluster */
    int *cluster_ports;
    int cluster_n;               /* 0: not a cluster */
    struct rlaas_redis_t *redis; /* the engine, made in each child */
    int warmed; /* the child opened its first connection (child_init) */
} rlaas_target_t;

typedef struct {
    rlaas_source_t src;
    const char *name;     /* NUL-terminated name, or the expression's text */
    ap_expr_info_t *expr; /* for expr= */
} rlaas_key_source_t;

/* A named policy (RLaaSPolicy), declared at server or virtual-host level:
 * a limit of its own that sections apply (RLaaSApply) or the server
 * enforces (RLaaSEnforce). Its name is its zone. */
typedef struct {
    const char *name;
    int id; /* one number per policy of the configuration */
    int64_t limit;
    int64_t window_ms;
    /* the calendar word: periods of the calendar in the zone of the
     * policy's host (window_ms their nominal length); NULL: none */
    const rlaas_cal_t *cal;
    rlaas_strategy_e strategy;
    apr_array_header_t *sources; /* of rlaas_key_source_t; NULL: ip */
    int sources_need_user;
    int64_t cost; /* units a request costs; 0 with cost=bytes: a check */
    /* cost=bytes: checked, charged the bytes sent after the response in
     * units of this many bytes (rlaas_bytes.h); 0: it counts requests.
     * While the line is read, < 0: a size limit waiting for cost=bytes */
    int64_t bytes_unit;
    server_rec *server; /* declared in: its key prefix names the key */
    /* a virtual host's policy without a prefix of its own: the host's
     * namespace (rlaas_key_namespace), set in post_config; else NULL */
    const char *ns;
    int metric; /* its row handle (rlaas_metrics_name) */
    /* countif=EXPR (RLaaSCountIf for this policy, rlaas_outcome.h), or
     * NULL */
    ap_expr_info_t *count_if;
} rlaas_policy_t;

typedef struct {
    rlaas_target_t *target; /* never NULL */
    int target_set;         /* this section named a Redis directive */
    const char *key_prefix; /* NULL: unset */
    int prefix_own;         /* RLaaSKeyPrefix set here, not inherited */
    int ipv6_prefix;        /* -1: unset (64) */
    /* policies by name: the main server's and this host's own (merged) */
    apr_hash_t *policies; /* NULL: none */
    /* RLaaSEnforce: of rlaas_apply_op_t, ref the rlaas_policy_t; the main
     * server's and this host's own (merged); NULL: none */
    apr_array_header_t *enforce;
    int64_t limit_max; /* -1: unset (RLAAS_LIMIT_MAX) */
    /* RLAAS_BACKEND_UNSET until post_config: then redis where a Redis
     * target is configured, else local (rlaas_config_post_config) */
    int backend;
    int local_divisor;  /* -1: unset (1) */
    int64_t local_size; /* -1: unset; the main server's only */
    int user_case;      /* RLaaSUserCase: -1 unset (exact), 0 exact, 1 fold */
    /* tenants (rlaas_tenant.h): RLaaSTenantRoot patterns (of const char
     * *; NULL: none), RLaaSWindowMax (-1: unset, 1d) with its text,
     * RLaaSLogMax (-1: unset, 10000) */
    apr_array_header_t *tenant_roots;
    int64_t window_max;
    const char *window_max_arg;
    int64_t log_max;
    /* RLaaSTimeZone: the zone of calendar windows (rlaas_calendar.h), and
     * its name; NULL: unset (UTC) */
    const rlaas_tz_t *tz;
    const char *tz_name;
} rlaas_server_conf_t;

/* The settings of a section's own limit (rlaas_dir_conf_t.by_tenant):
 * those that define how it counts, and RLaaSDryRun. */
#define RLAAS_T_LIMIT    0x001
#define RLAAS_T_ZONE     0x002
#define RLAAS_T_WINDOW   0x004
#define RLAAS_T_STRATEGY 0x008
#define RLAAS_T_KEY_BY   0x010
#define RLAAS_T_COST     0x020
#define RLAAS_T_COUNT_IF 0x040
#define RLAAS_T_BAN      0x080
#define RLAAS_T_LEASE    0x100
#define RLAAS_T_CONC     0x400 /* RLaaSConcurrency, its timeout */
#define RLAAS_T_COUNTING (0x1ff | RLAAS_T_CONC)
#define RLAAS_T_DRY_RUN  0x200

/* RLaaSLease: auto, the default (a portion for an identity that comes
 * back within a lease's time, where a lease applies; silently nothing
 * elsewhere); on (a portion for every identity, told where it can't
 * apply); off. */
typedef enum {
    RLAAS_LEASE_MODE_OFF = 0,
    RLAAS_LEASE_MODE_ON = 1,
    RLAAS_LEASE_MODE_AUTO = 2
} rlaas_lease_mode_e;

typedef struct {
    int64_t limit; /* -1: unset, no limiting; 0: read per request */
    ap_expr_info_t *limit_expr; /* RLaaSLimit expr=... */
    int64_t limit_fallback;     /* -1: none */
    /* a size (RLaaSLimit 3M): bytes per unit of limit (1, or 1024 above
     * 10^9 bytes); 0: a plain number (rlaas_bytes.h) */
    int64_t limit_unit;
    int64_t window_ms; /* -1: unset */
    /* RLaaSWindow N calendar: set with the window (window_ms its nominal
     * length); NULL: a window of window_ms */
    const rlaas_cal_t *cal;
    int strategy;                /* RLAAS_STRATEGY_UNSET */
    apr_array_header_t *sources; /* of rlaas_key_source_t; NULL: unset */
    int sources_need_user;       /* decide after authentication */
    int fail_open;               /* RLAAS_FAIL_UNSET (off) */
    const char *zone;            /* NULL: unset */
    int engine;                  /* -1: unset (on) */
    int headers;                 /* RLAAS_HEADERS_UNSET (draft) */
    int dry_run;                 /* -1: unset (off) */
    int circuit_fail_open;       /* -1: unset (off) */
    int64_t cost; /* -1: unset (1); with cost_expr: 0; RLAAS_COST_BYTES */
    ap_expr_info_t *cost_expr;
    /* RLaaSApply operations down the tree, concatenated; NULL: none */
    apr_array_header_t *apply; /* of rlaas_apply_op_t, ref the policy */
    /* The tenant's namespace (rlaas_key_tenant_namespace) while a
     * setting in force that defines how the own limit counts came from a
     * .htaccess (rlaas_tenant.h); NULL: the operator's. */
    const char *ns;
    int by_tenant;   /* RLAAS_T_*: the settings in force a .htaccess set */
    int zone_metric; /* the zone's row handle; -1: none ("other") */
    int lease;       /* RLaaSLease: -1 unset (off), rlaas_lease_mode_e */
    int console;     /* RLaaSConsole: -1 unset (off); never from .htaccess */
    int metrics;     /* RLaaSMetrics: -1 unset (off); never from .htaccess */
    /* RLaaSCountIf and RLaaSBan (rlaas_outcome.h) */
    ap_expr_info_t *count_if; /* with count_if_set 1 */
    int count_if_set;         /* -1: unset; 0: off; 1: an expression */
    int64_t ban_ms;           /* -1: unset; 0: off; else D */
    int64_t ban_factor;       /* F (1: no escalation) */
    int64_t ban_max_ms;       /* M (D without escalation) */
    /* RLaaSConcurrency (rlaas_concurrency.h): N (-1 unset, 0 off), the
     * longest a slot is held (-1 unset), the refusal's status (-1 unset) */
    int64_t conc;
    int64_t conc_timeout_ms;
    int conc_status;
    /* Lives as long as the configuration: read with it, or a merge
     * remembered (rlaas_directives.c); 0: a .htaccess's, or merged from
     * one, for one request. */
    int kept;
    /* The merges of this section onto kept bases this child made: a list
     * only ever prepended to (rlaas_directives.c) */
    const struct rlaas_dir_merged_s *merges;
    /* What a request reads, resolved once at merge (rlaas_dir_resolve;
     * a server's own settings in post_config): the defaults where no
     * section set a value. The fields above keep "unset" for the merges
     * below them. */
    struct {
        int64_t window_ms;
        rlaas_strategy_e strategy;
        rlaas_headers_e headers;
        int fail; /* RLAAS_FAIL_CLOSED, RLAAS_FAIL_OPEN or RLAAS_FAIL_LOCAL */
        rlaas_lease_mode_e lease;
        int64_t conc_timeout_ms;
        int conc_status;
        /* the RateLimit-Policy item of a fixed limit (no expr=, no
         * calendar, no byte quota), written at merge; NULL: per request */
        const rlaas_policy_field_t *field;
    } use;
} rlaas_dir_conf_t;

rlaas_server_conf_t *rlaas_server_conf(const server_rec *s);

/* "RLaaSLimit: invalid value 'abc': expected an integer from 1 to ..." */
const char *rlaas_config_bad_value(cmd_parms *cmd, const char *arg,
                                   const char *accepted);

/* A keyword of a directive: one of words (case-insensitive, the list
 * ends with a NULL word) into *out, else the bad_value error naming what
 * is accepted. */
typedef struct {
    const char *word;
    int value;
} rlaas_config_word_t;

const char *rlaas_config_word(cmd_parms *cmd, const char *arg,
                              const rlaas_config_word_t *words,
                              const char *accepted, int *out);

/* One source of an identity (RLaaSKeyBy, a policy's key=) into ks:
 * parsed, its name kept, an expression compiled. */
const char *rlaas_config_add_source(cmd_parms *cmd, rlaas_key_source_t *ks,
                                    const char *arg);
rlaas_dir_conf_t *rlaas_dir_conf(const request_rec *r);

int rlaas_dir_has_limit(const rlaas_dir_conf_t *d);
int rlaas_dir_active(const rlaas_dir_conf_t *d);
/* The window and the strategy of a section as read so far (d->use once
 * merged): for the checks made while the configuration is read. */
int64_t rlaas_dir_window_ms(const rlaas_dir_conf_t *d);
rlaas_strategy_e rlaas_dir_strategy(const rlaas_dir_conf_t *d);
int rlaas_dir_console(const rlaas_dir_conf_t *d);
int rlaas_dir_metrics(const rlaas_dir_conf_t *d);
const char *rlaas_server_prefix(const rlaas_server_conf_t *sc);
int rlaas_server_ipv6_prefix(const rlaas_server_conf_t *sc);
int64_t rlaas_server_limit_max(const rlaas_server_conf_t *sc);
/* The section's settings at the level of r's virtual host (its
 * lookup_defaults): what enforced policies follow on failure. */
const rlaas_dir_conf_t *rlaas_server_dir_conf(const request_rec *r);
int rlaas_server_local(const rlaas_server_conf_t *sc);
/* RLaaSUserCase fold: the user source folds names (rlaas_authuser.h). */
int rlaas_server_user_fold(const rlaas_server_conf_t *sc);
int rlaas_server_local_divisor(const rlaas_server_conf_t *sc);
int64_t rlaas_server_local_size(const rlaas_server_conf_t *sc);

#endif
