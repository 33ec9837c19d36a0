/*
 * RLaaSConcurrency: at most N requests of one identity in flight in a
 * section. The section's limit is one more item of the request's decision
 * (rlaas_policies.c: strategy RLAAS_CONCURRENCY, its key ending in
 * ":conc", the client request's token in place of the cost), decided with
 * the others, all or nothing, by either engine (rlaas_conc.h). A request
 * admitted holds its slot until httpd is done with it: the slot is given
 * back in log_transaction, and by a cleanup of the request's pool for a
 * request that never gets there (an error, a timeout, a client gone),
 * exactly once. A slot whose holder dies (a child killed) is freed by the
 * local engine as soon as it is needed (the holder's process is gone),
 * and in Redis after RLaaSConcurrencyTimeout.
 */
#ifndef RLAAS_CONCURRENCY_H
#define RLAAS_CONCURRENCY_H

#include "httpd.h"
#include "http_config.h"

#include "rlaas_config.h"
#include "rlaas_engine.h"
#include "rlaas_policies.h"

#define RLAAS_D_CONCURRENCY  "RLaaSConcurrency"
#define RLAAS_D_CONC_TIMEOUT "RLaaSConcurrencyTimeout"
#define RLAAS_D_CONC_STATUS  "RLaaSConcurrencyStatus"

/* The longest a slot is held when RLaaSConcurrencyTimeout is not set. */
#define RLAAS_CONC_TIMEOUT_DEFAULT_MS 300000

void rlaas_conc_dir_init(rlaas_dir_conf_t *d);
void rlaas_conc_dir_merge(rlaas_dir_conf_t *d, const rlaas_dir_conf_t *base,
                          const rlaas_dir_conf_t *add);

const char *rlaas_conc_set(cmd_parms *cmd, void *dv, const char *arg);
const char *rlaas_conc_set_timeout(cmd_parms *cmd, void *dv, const char *arg);
const char *rlaas_conc_set_status(cmd_parms *cmd, void *dv, const char *arg);

#define RLAAS_CONC_CMDS                                                        \
    AP_INIT_TAKE1(RLAAS_D_CONCURRENCY, rlaas_conc_set, NULL,                   \
                  RSRC_CONF | ACCESS_CONF | OR_LIMIT,                          \
                  "N (1 to 500) or off: at most N requests of one identity "   \
                  "in flight here"),                                           \
        AP_INIT_TAKE1(RLAAS_D_CONC_TIMEOUT, rlaas_conc_set_timeout, NULL,      \
                      RSRC_CONF | ACCESS_CONF | OR_LIMIT,                      \
                      "The longest a request holds its slot (default 5m): "    \
                      "a slot never given back is free after it"),             \
        AP_INIT_TAKE1(RLAAS_D_CONC_STATUS, rlaas_conc_set_status, NULL,        \
                      RSRC_CONF | ACCESS_CONF | OR_LIMIT,                      \
                      "429 (the default) or 503: the status of a request "     \
                      "refused for want of a slot")

/* Whether d limits requests in flight; its N, timeout and status. */
int rlaas_dir_conc(const rlaas_dir_conf_t *d);
int64_t rlaas_dir_conc_timeout_ms(const rlaas_dir_conf_t *d);
int rlaas_dir_conc_status(const rlaas_dir_conf_t *d);

/* The item of d's concurrency limit (rlaas_policies.c), its key and token
 * still to be set (rlaas_concurrency_prepare). */
void rlaas_concurrency_item(rlaas_item_t *it, const rlaas_dir_conf_t *d);

/* The token of r's client request (16 hex digits), its cost. */
void rlaas_concurrency_prepare(request_rec *r, rlaas_item_t *it);

/* After a decision that admitted the request: the slots its items took
 * (it[0..n), those with conc set) are held until httpd is done with the
 * client request, and then given back by the engine en that took them. */
void rlaas_concurrency_hold(request_rec *r, const rlaas_item_t *it, int n,
                            const rlaas_engine_t *en);

/* log_transaction: the client request's slots given back. */
void rlaas_concurrency_release(request_rec *r);

#endif
