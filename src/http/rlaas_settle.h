/*
 * What a decision's charges become once the response is known: RLaaSCountIf
 * refunds (charged at the check, given back where the response shows the
 * request not to count) and RLaaSCost bytes (checked at the check, the
 * bytes sent charged after), each settled by the engine that decided.
 */
#ifndef RLAAS_SETTLE_H
#define RLAAS_SETTLE_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_engine.h"
#include "rlaas_policies.h"
#include "rlaas_unit.h"

typedef struct rlaas_settle_t rlaas_settle_t;

/* Before the decision of it[0..n) in section d: the items whose charges
 * the response settles (bytes: those RLaaSCost bytes checks, whatever
 * their condition; else those a condition may give back), or NULL if
 * none. */
rlaas_settle_t *rlaas_settle_prepare(request_rec *r, const rlaas_dir_conf_t *d,
                                     const rlaas_item_t *it, int n, int bytes);

/* After the decision admitted the request, charged by en (it: the
 * decision's items with their verdicts): those it charged (a dry run's
 * denial charged nothing) kept in u, to settle after the response. */
void rlaas_settle_keep(request_rec *r, rlaas_unit_t *u, rlaas_settle_t *pd,
                       const rlaas_item_t *it, const rlaas_engine_t *en);

/* log_transaction: each decision kept is settled by its conditions, and
 * the client request's RLaaSConcurrency slots given back. */
int rlaas_settle_log_transaction(request_rec *r);

#endif
