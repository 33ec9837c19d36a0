/*
 * Counters for operators, summed over every child of the server: they live
 * in one anonymous shared memory segment created by the parent in
 * post_config, and every child adds to them with atomic instructions (no
 * lock, no lost update under prefork). The segment hangs off the process
 * pool, so counts survive graceful restarts.
 *
 * Served as Prometheus text by "SetHandler rlaas-metrics", and as a section
 * of mod_status' server-status page.
 */
#ifndef RLAAS_METRICS_H
#define RLAAS_METRICS_H

#include "httpd.h"

#include "rlaas_local.h"
#include "rlaas_parse.h"
#include "rlaas_rerr.h"

typedef enum {
    RLAAS_OUT_ALLOWED = 0,
    RLAAS_OUT_DENIED,
    RLAAS_OUT_ERROR,
    RLAAS_OUT_FAIL_OPEN,
    RLAAS_OUT_DRY_RUN_DENIED,
    RLAAS_OUT_LOCAL,        /* allowed by the local engine, Redis failing */
    RLAAS_OUT_LOCAL_DENIED, /* denied by it */
    RLAAS_OUT_COUNT
} rlaas_outcome_e;

#define RLAAS_METRICS_HANDLER "rlaas-metrics"

const char *rlaas_outcome_name(rlaas_outcome_e o);

/* Creates the segment on first start, finds it again after a restart. */
int rlaas_metrics_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                              apr_pool_t *ptemp, server_rec *s);

/* Where the local engine's table counters are read from (0: no table):
 * the engine tells (rlaas_backend.c), the metrics only show them. */
typedef int (*rlaas_metrics_table_fn)(rlaas_table_stats_t *st);
void rlaas_metrics_table_source(rlaas_metrics_table_fn fn);

/* One client request's decision, under the strategy of the policy it
 * shows (server-status and the decision series count requests). */
void rlaas_metrics_decision(rlaas_strategy_e st, rlaas_outcome_e o);

/* Decisions by policy: a bounded table in the segment, one row per name
 * (declared policies, zones of the server configuration, "default"),
 * everything else (a tenant's zones, names past the table's end) in one
 * row "other". Names are registered while the configuration is read
 * (after rlaas_metrics_names_reset in pre_config); post_config gives them
 * rows, the same rows again after a restart. */
#define RLAAS_METRICS_POLICY_ROWS 512
#define RLAAS_METRICS_OTHER       "other"
void rlaas_metrics_names_reset(apr_pool_t *pconf);
/* A handle (-1: "other"); policies get rows before zones do. */
int rlaas_metrics_name(const char *name, int is_policy);
int rlaas_metrics_default_name(void); /* "default"'s handle */
void rlaas_metrics_policy(int handle, rlaas_outcome_e o);
void rlaas_metrics_redis_error(rlaas_rerr_e e);
void rlaas_metrics_local_error(rlaas_lerr_e e);
void rlaas_metrics_latency(apr_interval_time_t t);
/* Gauges are kept per child, in a slot each child claims in child_init and
 * clears when it leaves; a reader sums the slots of children alive, so a
 * child killed with connections open leaves nothing behind. */
void rlaas_metrics_child_init(apr_pool_t *pchild, server_rec *s);
void rlaas_metrics_connection(int opened); /* +1 opened, -1 closed */
void rlaas_metrics_script_load(void);
/* One group of calls on the Redis node named (host:port, ...): its calls,
 * and the failure of Redis if it failed (else RLAAS_RERR_NONE). Kept per
 * node for the first RLAAS_METRICS_NODES nodes seen. */
#define RLAAS_METRICS_NODES 64
void rlaas_metrics_node(const char *node, rlaas_rerr_e e, int calls);
void rlaas_metrics_circuit(int opened); /* +1 opened, -1 closed */

/* RLaaSBan and RLaaSCountIf: bans started, requests refused by a ban,
 * requests whose charge stood once their response was known (the
 * condition held), charges given back (it did not), charges that could
 * not be given back (they stand: the safe direction). */
typedef enum {
    RLAAS_METRIC_BANS = 0,
    RLAAS_METRIC_BAN_REFUSALS,
    RLAAS_METRIC_COUNTIF_CHARGES,
    RLAAS_METRIC_COUNTIF_REFUNDS,
    RLAAS_METRIC_COUNTIF_REFUNDS_LOST,
    /* RLaaSConcurrency: slots taken, given back, lost (not given back),
     * requests refused for want of one */
    RLAAS_METRIC_CONC_TAKEN,
    RLAAS_METRIC_CONC_RELEASED,
    RLAAS_METRIC_CONC_LOST,
    RLAAS_METRIC_CONC_REFUSED,
    /* RLaaSCost bytes: bytes of responses charged after them, and bytes
     * whose charge failed (served free) */
    RLAAS_METRIC_BYTES_CHARGED,
    RLAAS_METRIC_BYTES_LOST,
    /* RLaaSLease: portions taken from Redis and their units, requests
     * decided from a portion held here (no round trip), units that lapsed
     * unspent (seen when the identity's next portion comes) */
    RLAAS_METRIC_LEASE_GRANTS,
    RLAAS_METRIC_LEASE_UNITS_GRANTED,
    RLAAS_METRIC_LEASE_SPENDS,
    RLAAS_METRIC_LEASE_UNITS_LAPSED,
    RLAAS_METRIC_LEASE_UNITS_RETURNED,
    RLAAS_METRIC_OUTCOME_COUNT
} rlaas_metric_outcome_e;
void rlaas_metrics_outcome(rlaas_metric_outcome_e m);
void rlaas_metrics_outcome_add(rlaas_metric_outcome_e m, apr_uint64_t n);

/* Why a request of a section with RLaaSLease on or auto went one round
 * trip of its own (rlaas_lease_fallbacks_total{reason}). */
typedef enum {
    RLAAS_LEASE_NOT_POLICIES = 0, /* several, on different Cluster slots */
    RLAAS_LEASE_NOT_LOG,          /* the sliding log */
    RLAAS_LEASE_NOT_DRY_RUN,      /* RLaaSDryRun on */
    RLAAS_LEASE_NOT_BAN,          /* RLaaSBan */
    RLAAS_LEASE_NOT_BYTES,        /* RLaaSCost bytes, cost=bytes */
    RLAAS_LEASE_NOT_IN_FLIGHT,    /* another request's fetch in flight */
    RLAAS_LEASE_NOT_TABLE,        /* the table: busy, or no room */
    RLAAS_LEASE_NOT_QUIET,        /* auto: too quiet for a portion */
    RLAAS_LEASE_NOT_COUNT
} rlaas_lease_not_e;
void rlaas_metrics_lease_fallback(rlaas_lease_not_e why);

/* The exposition; the hook is rlaas_scope_metrics_handler, which calls it
 * where RLaaSMetrics is on. Server-wide wherever it is served. */
int rlaas_metrics_handler(request_rec *r);
int rlaas_metrics_status_hook(request_rec *r, int flags);

/* The operator's console (rlaas_admin): each live child's Redis health,
 * up to max of them; the names registered (handles 0 .. n-1). */
typedef struct {
    apr_uint32_t pid;
    apr_uint32_t connections;
    apr_uint32_t circuits; /* circuits open in it */
    apr_uint64_t calls;
    apr_uint64_t latency_us; /* summed over calls */
    apr_uint64_t errors;
} rlaas_child_health_t;
int rlaas_metrics_children(rlaas_child_health_t *out, int max);
int rlaas_metrics_names(void);
const char *rlaas_metrics_name_of(int handle, int *is_policy);

#endif
