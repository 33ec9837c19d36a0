/*
 * One Redis node's engine: it owns the node's connection pool, the
 * pipeline that groups a child's concurrent calls, the circuit breaker
 * and the host-name resolver (or the sentinels that name the master),
 * and runs a job (the calls of one script run) within a deadline. The
 * facade (rlaas_redis.h) has one for a single Redis; a Cluster's router
 * (rlaas_cluster.h) one per node. What it has to tell (connections,
 * latency, script loads, the circuit, failovers) goes out through the
 * events below.
 *
 * No lock is held while talking to Redis: threads of a child run their
 * groups in parallel on separate connections. No httpd headers.
 */
#ifndef RLAAS_NODE_H
#define RLAAS_NODE_H

#include "apr_pools.h"

#include "rlaas_breaker.h"
#include "rlaas_exchange.h"
#include "rlaas_resolve.h"
#include "rlaas_rerr.h"
#include "rlaas_verdict.h"

/* Everything resolved: no sentinels, no defaults left to apply. */
typedef struct {
    const char *host; /* a name or numeric address; a path when is_unix */
    int port;
    int is_unix;
    const char *username;
    const char *password; /* never logged */
    int database;
    int timeout_ms;       /* the budget of one request, all waits included */
    int pool_max;         /* connections in this child */
    int threads;          /* the MPM's threads per child */
    int pipeline;         /* group concurrent calls on one connection */
    int circuit_failures; /* 0: no breaker */
    int circuit_cooldown_ms;
    int tls;              /* talk TLS (Redis' tls-port) */
    const char *tls_ca;   /* NULL: the system's CAs */
    const char *tls_cert; /* client certificate, or NULL */
    const char *tls_key;
    const char *tls_server_name; /* NULL: host; with Sentinel, the address
                                    the sentinels announce */
    /* Redis Sentinel: where the master is (host and port unused), or
     * NULL. The engine adds what the sentinels' resolver shares with the
     * data connections (TLS, credentials, the name checked, the log). */
    const rlaas_sentinel_conf_t *sentinel;
    /* Redis Cluster: seed nodes (host and port unused), or 0 of them */
    const char *const *cluster_hosts;
    const int *cluster_ports;
    int cluster_n;
} rlaas_redis_conf_t;

typedef struct {
    void *baton;
    /* node: the Redis this engine talks to ("host:port", "unix:/path",
     * "sentinel:NAME"), for labels and log lines */
    void (*connection)(void *baton, int delta); /* +1 opened, -1 closed */
    void (*latency)(void *baton, int64_t us, int calls);
    void (*script_load)(void *baton, const char *file, int ok);
    /* a change of the circuit; cause: the last failure, Redis' words */
    void (*circuit)(void *baton, const char *node, rlaas_breaker_event_e ev,
                    const rlaas_breaker_t *b, rlaas_rerr_e e,
                    const char *cause);
    /* every connection is being made again: the server said it is not
     * the master (any more) */
    void (*failover)(void *baton, const char *node, const char *cause);
    /* once per group of calls: what Redis did with them (NONE, or a
     * failure of Redis itself) */
    void (*group)(void *baton, const char *node, rlaas_rerr_e e, int calls);
    /* what the sentinels' answers made the resolver do (its thread) */
    void (*sentinel)(void *baton, rlaas_sentinel_note_e what, const char *text);
} rlaas_redis_events_t;

/* A pooled connection lent to fn (rlaas_redis_each_node). */
typedef rlaas_rerr_e (*rlaas_redis_conn_fn)(void *baton, rlaas_conn_t *c,
                                            int64_t deadline, char *detail,
                                            int *stop);

/* The name this module gives its connections, followed by "-<pid>" of the
 * child holding them: CLIENT LIST shows whose they are. */
#define RLAAS_REDIS_CLIENT_NAME "mod_rlaas"

typedef struct rlaas_node_t rlaas_node_t;

/* Lives and dies with p; a host name resolved here and then in the
 * background, never in a request. c->cluster_n is not read. */
rlaas_node_t *rlaas_node_create(apr_pool_t *p, const rlaas_redis_conf_t *c,
                                const rlaas_redis_events_t *ev);

/* rlaas_redis_warm, for this node. */
rlaas_rerr_e rlaas_node_warm(rlaas_node_t *nd, int64_t not_after, char *detail);

/* rlaas_redis_eval, on this node within its own time budget. */
rlaas_rerr_e rlaas_node_eval(rlaas_node_t *nd, const rlaas_call_t *calls, int n,
                             rlaas_verdict_t *v, char *detail);

/* Runs one job by an absolute deadline of rlaas_clock_us(); the job tells
 * a redirect (the cluster router's way in). */
void rlaas_node_run(rlaas_node_t *nd, rlaas_job_t *job, int64_t deadline);
int64_t rlaas_node_deadline(const rlaas_node_t *nd);

/* Connections open now (the cluster router reports them closed when it
 * forgets a node). */
int rlaas_node_connections(const rlaas_node_t *nd);

/* fn on a pooled connection of this node (rlaas_redis_each_node: the
 * caller clears detail and checks *stop first). */
rlaas_rerr_e rlaas_node_each(rlaas_node_t *nd, int64_t deadline,
                             rlaas_redis_conn_fn fn, void *baton, char *detail,
                             int *stop);

#endif
