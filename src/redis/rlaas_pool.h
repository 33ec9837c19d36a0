/*
 * A child's connections to one Redis: an apr_reslist of slots, as mod_dbd
 * keeps database connections. A slot lives as long as the pool; its
 * connection is opened on first use and closed after any failure, so a
 * broken connection is never used twice. When threads can outnumber
 * connections, a gate in front bounds the wait by the request's deadline
 * (apr_reslist restarts its timeout whenever a waiter loses a race).
 *
 * A failover makes every connection suspect at once: invalidating the pool
 * starts a new generation, and a slot whose connection is older comes back
 * closed. APR only, no httpd headers.
 */
#ifndef RLAAS_POOL_H
#define RLAAS_POOL_H

#include <stdint.h>

#include "apr_pools.h"

#include "rlaas_conn.h"
#include "rlaas_rerr.h"

typedef struct rlaas_pool_t rlaas_pool_t;

/* max connections; gate: 1 to queue callers beyond max at a gate. */
rlaas_pool_t *rlaas_pool_create(apr_pool_t *p, int max, int gate,
                                int64_t wait_us);

/* A slot by the deadline, or RLAAS_RERR_POOL. Its connection is open and
 * of this generation, or closed (*dropped is then 1 if this call closed
 * one: an older generation's). */
rlaas_rerr_e rlaas_pool_acquire(rlaas_pool_t *pl, int64_t deadline,
                                rlaas_conn_t **c, int *dropped);
void rlaas_pool_release(rlaas_pool_t *pl, rlaas_conn_t *c);

/* Every connection open now is closed when next taken. */
void rlaas_pool_invalidate(rlaas_pool_t *pl);
unsigned rlaas_pool_generation(rlaas_pool_t *pl);

#endif
