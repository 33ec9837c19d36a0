/*
 * The remote engine's facade: the one entry the request path calls. One
 * engine per Redis target in each child process: a single node's engine
 * (rlaas_node.h: one Redis, TLS, Sentinel) or a Cluster's router
 * (rlaas_cluster.h). It takes a plain call (for each of a request's
 * policies: a complete key, a strategy, a limit, a window, a cost) and
 * gives a verdict per policy, all decided in one script run. It knows
 * nothing of httpd's requests or of the module's configuration: what it
 * has to tell goes out through the events (rlaas_node.h), which metrics
 * and logging implement. No httpd headers.
 */
#ifndef RLAAS_REDIS_H
#define RLAAS_REDIS_H

#include "apr_pools.h"

#include "rlaas_node.h"

typedef struct rlaas_redis_t rlaas_redis_t;

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
 * A lease (rlaas_call_lease: a policy asks for a portion; no sliding
 * log; on a Cluster, its keys in one slot, sent to that slot's node): v
 * has room for 4 per policy; v[4i] is policy i's verdict, v[4i+1] its
 * grant, v[4i+2] what was given back, v[4i+3] Redis' time (see
 * rlaas_call_t). */
rlaas_rerr_e rlaas_redis_eval(rlaas_redis_t *rd, const rlaas_call_t *calls,
                              int n, rlaas_verdict_t *v, char *detail);

/* The console's listings, beside the request path's calls: runs fn on a
 * pooled connection of every node (the one Redis; each node of a Cluster
 * the child knows now), opened if need be, all by deadline (an absolute
 * rlaas_clock_us()), until fn sets *stop. fn returns NONE or an error with
 * detail saying why, which ends the walk (and closes that connection: a
 * reply may be left unread). Not a call: the circuit does not count it. */
rlaas_rerr_e rlaas_redis_each_node(rlaas_redis_t *rd, int64_t deadline,
                                   rlaas_redis_conn_fn fn, void *baton,
                                   char *detail, int *stop);

#endif
