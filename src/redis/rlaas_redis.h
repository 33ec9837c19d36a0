/*
 * The remote engine's facade: the one entry the request path calls. One
 * engine per Redis target in each child process; it owns the target's
 * connection pool, the pipeline that groups concurrent calls, the circuit
 * breaker and the host-name resolver, and it takes a plain call (for each
 * of a request's policies: a complete key, a strategy, a limit, a window,
 * a cost) and gives a verdict per policy, all decided in one script run. It
 * knows nothing of httpd's requests or of the module's configuration: what it
 * has to tell (connections, latency, script loads, the circuit, failovers) goes
 * out through the events below, which metrics and logging implement.
 *
 * No lock is held while talking to Redis: threads of a child run their
 * groups in parallel on separate connections. No httpd headers.
 */
#ifndef RLAAS_REDIS_H
#define RLAAS_REDIS_H

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

typedef struct rlaas_redis_t rlaas_redis_t;
typedef struct rlaas_cluster_t rlaas_cluster_t;

/* Made in child_init; lives and dies with p. Connections open on first
 * use (or rlaas_redis_warm): nothing about Redis is checked here. A host
 * name is resolved here and then in the background, never in a request. */
rlaas_redis_t *rlaas_redis_create(apr_pool_t *p, const rlaas_redis_conf_t *c,
                                  const rlaas_redis_events_t *ev);

/* In child_init, after create: opens one connection (within twice the
 * time budget, at least 1 s, and by not_after, an absolute rlaas_clock_us()
 * shared by a child's engines) so that the child's first request finds it
 * open. A failure (detail says why) only leaves it to the first request;
 * the circuit does not count it. Redis Cluster: nothing (nodes open as
 * slots lead). */
#define RLAAS_REDIS_WARM_MAX_US 5000000
rlaas_rerr_e rlaas_redis_warm(rlaas_redis_t *rd, int64_t not_after,
                              char *detail);

/* Runs the call of n policies (1..RLAAS_CALL_POLICIES_MAX) within the
 * budget, one round trip: every policy is decided, and charged only if
 * each one that is not a dry run allows; v gets n verdicts. On error,
 * detail (RLAAS_DETAIL_MAX bytes) says what happened, never containing
 * secrets.
 *
 * Redis Cluster: a script's keys must share a slot. The keys carry the
 * identity as a hash tag, so the policies of one identity (per second and
 * per hour for one API key) go in one call; policies of different
 * identities (per IP and per API key) are called slot by slot, in order,
 * and all or nothing holds within each call only.
 *
 * A lease (calls[0].lease_want > 0, n = 1, not a sliding log, not in
 * Redis Cluster): v has room for 2; v[1] tells the grant (see
 * rlaas_call_t). */
rlaas_rerr_e rlaas_redis_eval(rlaas_redis_t *rd, const rlaas_call_t *calls,
                              int n, rlaas_verdict_t *v, char *detail);

/* For the cluster router: runs one job on this engine (one node) by an
 * absolute deadline of rlaas_clock_us(); the job tells a redirect. */
void rlaas_redis_run(rlaas_redis_t *rd, rlaas_job_t *job, int64_t deadline);
int64_t rlaas_redis_deadline(const rlaas_redis_t *rd);

/* Connections this engine holds open now (the cluster router reports them
 * closed when it forgets a node). */
int rlaas_redis_connections(const rlaas_redis_t *rd);

/* The console's listings, beside the request path's calls: runs fn on a
 * pooled connection of every node (the one Redis; each node of a Cluster
 * the child knows now), opened if need be, all by deadline (an absolute
 * rlaas_clock_us()), until fn sets *stop. fn returns NONE or an error with
 * detail saying why, which ends the walk (and closes that connection: a
 * reply may be left unread). Not a call: the circuit does not count it. */
typedef rlaas_rerr_e (*rlaas_redis_conn_fn)(void *baton, rlaas_conn_t *c,
                                            int64_t deadline, char *detail,
                                            int *stop);
rlaas_rerr_e rlaas_redis_each_node(rlaas_redis_t *rd, int64_t deadline,
                                   rlaas_redis_conn_fn fn, void *baton,
                                   char *detail, int *stop);

/* The name this module gives its connections, followed by "-<pid>" of the
 * child holding them: CLIENT LIST shows whose they are. */
#define RLAAS_REDIS_CLIENT_NAME "mod_rlaas"

#endif
