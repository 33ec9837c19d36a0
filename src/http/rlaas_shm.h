/*
 * Shared memory kept across restarts: a segment hangs off the process
 * pool under a name, so that a graceful restart finds it again (its
 * counts, identities and all) and the new children inherit it. The local
 * engine's table, the metrics, the console's tally and the identities
 * RLaaSLease auto saw lately each keep one.
 */
#ifndef RLAAS_SHM_H
#define RLAAS_SHM_H

#include "apr_pools.h"
#include "apr_shm.h"

/* The segment kept under name, or NULL. */
apr_shm_t *rlaas_shm_kept(apr_pool_t *keep, const char *name);

/* A new segment of size bytes, all zero, kept under name in place of the
 * one kept before (destroyed: the last generation's children keep their
 * own mapping of it). NULL, *rv saying why, if none could be made; then
 * nothing is kept under name. */
apr_shm_t *rlaas_shm_make(apr_pool_t *keep, const char *name, apr_size_t size,
                          apr_status_t *rv);

/* The segment kept under name destroyed, and nothing kept under it. */
void rlaas_shm_drop(apr_pool_t *keep, const char *name);

/* The segment kept under name if it is size bytes long, else a new one
 * (rlaas_shm_make). */
apr_shm_t *rlaas_shm_sized(apr_pool_t *keep, const char *name, apr_size_t size,
                           apr_status_t *rv);

#endif
