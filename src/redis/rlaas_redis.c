#include "rlaas_redis.h"

#include "apr_strings.h"

#include "rlaas_cluster.h"

/* A single Redis's engine, or a Cluster's router: one of them. */
struct rlaas_redis_t {
    rlaas_node_t *node;
    rlaas_cluster_t *cluster;
};

rlaas_redis_t *rlaas_redis_create(apr_pool_t *p, const rlaas_redis_conf_t *c,
                                  const rlaas_redis_events_t *ev)
{
    rlaas_redis_t *rd = apr_pcalloc(p, sizeof(*rd));

    /* a router only: each node gets an engine of its own */
    if (c->cluster_n > 0)
        rd->cluster = rlaas_cluster_create(p, c, ev);
    else
        rd->node = rlaas_node_create(p, c, ev);
    return rd->cluster != NULL || rd->node != NULL ? rd : NULL;
}

rlaas_rerr_e rlaas_redis_warm(rlaas_redis_t *rd, int64_t not_after,
                              char *detail)
{
    detail[0] = '\0';
    /* the router opens nodes as slots lead */
    return rd->cluster != NULL ? RLAAS_RERR_NONE
                               : rlaas_node_warm(rd->node, not_after, detail);
}

rlaas_rerr_e rlaas_redis_eval(rlaas_redis_t *rd, const rlaas_call_t *calls,
                              int n, rlaas_verdict_t *v, char *detail)
{
    if (rd->cluster == NULL)
        return rlaas_node_eval(rd->node, calls, n, v, detail);
    return rlaas_cluster_eval(rd->cluster, calls, n, v, detail);
}

rlaas_rerr_e rlaas_redis_each_node(rlaas_redis_t *rd, int64_t deadline,
                                   rlaas_redis_conn_fn fn, void *baton,
                                   char *detail, int *stop)
{
    detail[0] = '\0';
    if (*stop)
        return RLAAS_RERR_NONE;
    return rd->cluster != NULL
               ? rlaas_cluster_each(rd->cluster, deadline, fn, baton, detail,
                                    stop)
               : rlaas_node_each(rd->node, deadline, fn, baton, detail, stop);
}
