/*
 * A small Redis Cluster client for the remote engine (hiredis 0.14 has
 * none, and no well-kept C cluster client is packaged for Debian 12). The
 * slot map comes from CLUSTER SLOTS, fetched in a thread of the router's
 * own (when the child starts, every 10 s, and soon after a MOVED); each
 * node gets an engine of its own (rlaas_node.h: its pool, pipeline and
 * circuit breaker); a call goes to the node of its key's slot (the key
 * carries the identity as a hash tag, rlaas_slot.h), follows MOVED (the
 * map learns it at once) and ASK (ASKING, this once), at most twice, all
 * within the request's one budget. A redirected call did not run: sending
 * it again is safe. Nodes that leave the slot map are forgotten, their
 * connections closed (rlaas_nodes.h): nodes may come and go for the
 * child's whole life. No httpd headers.
 */
#ifndef RLAAS_CLUSTER_H
#define RLAAS_CLUSTER_H

#include "apr_pools.h"

#include "rlaas_node.h"

typedef struct rlaas_cluster_t rlaas_cluster_t;

/* Nodes one child knows at once, at most: the masters the slot map
 * names (and nodes calls still hold). */
#define RLAAS_CLUSTER_NODES_MAX 64

/* c: the target's settings, cluster_hosts its seed nodes; every node's
 * engine takes the rest of them. Nothing is contacted here. */
rlaas_cluster_t *rlaas_cluster_create(apr_pool_t *p,
                                      const rlaas_redis_conf_t *c,
                                      const rlaas_redis_events_t *ev);

/* The calls of n policies, one call per slot (rlaas_redis_eval). */
rlaas_rerr_e rlaas_cluster_eval(rlaas_cluster_t *cl, const rlaas_call_t *calls,
                                int n, rlaas_verdict_t *v, char *detail);

/* rlaas_node_each on each node the child knows now (the masters
 * the map names, and nodes calls were sent to). */
rlaas_rerr_e rlaas_cluster_each(rlaas_cluster_t *cl, int64_t deadline,
                                rlaas_redis_conn_fn fn, void *baton,
                                char *detail, int *stop);

/* "host:port" or "[v6]:port", as Redis writes nodes, into host and port;
 * 0 if it is not one. */
int rlaas_cluster_hostport(const char *s, char *host, size_t size, int *port);

#endif
