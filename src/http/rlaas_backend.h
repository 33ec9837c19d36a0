/*
 * The httpd side of the local engine: its table in shared memory, made by
 * the parent in post_config and found again after a graceful restart (the
 * identities' state is kept; a changed RLaaSLocalSize starts a new table),
 * inherited by every child; and what the engine reports (evictions, a
 * stripe emptied after a child died in it) turned into metrics and log
 * lines. The engine's operations over it are rlaas_engine_local.c.
 */
#ifndef RLAAS_BACKEND_H
#define RLAAS_BACKEND_H

#include "httpd.h"

#include "rlaas_local.h"

int rlaas_backend_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                              apr_pool_t *ptemp, server_rec *s);

/* Decides a request's n calls (its policies, all or nothing) with the
 * local engine, at the wall clock; v gets n verdicts. */
rlaas_lerr_e rlaas_backend_eval(request_rec *r, const rlaas_local_call_t *calls,
                                int n, rlaas_verdict_t *v);

/* Gives calls[i].cost units back to each call's record, charged at least
 * age_ms ago (rlaas_local_credit_n, at the wall clock); given gets what
 * each gave. r (may be NULL) for the log lines. */
rlaas_lerr_e rlaas_backend_credit(request_rec *r,
                                  const rlaas_local_call_t *calls, int n,
                                  int64_t age_ms, int64_t *given);

/* Gives back the concurrency slots of n calls (rlaas_local_release_n):
 * removed[i] 1 if call i's slot was held. r (may be NULL) for the log. */
rlaas_lerr_e rlaas_backend_release(request_rec *r,
                                   const rlaas_local_call_t *calls, int n,
                                   int *removed);

/* The table in this process (leases keep their units in it), or NULL. */
rlaas_local_t *rlaas_backend_table(void);

/* The table's counters; 0 if there is no table. */
int rlaas_backend_stats(rlaas_table_stats_t *st);

#endif
