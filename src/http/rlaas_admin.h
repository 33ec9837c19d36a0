/*
 * The operator's console: `SetHandler rlaas-admin` (protected with Require
 * like any handler). GET shows, per zone and policy, the decisions of the
 * last minute and a chart of denials per minute, the identities most often
 * denied right now, active bans, each child's Redis health and the backend;
 * as JSON with "Accept: application/json". POST acts (reset, credit,
 * unban), after a same-origin check, logged with the operator's name.
 *
 * The counts are kept in a small shared-memory segment of their own
 * (rlaas_tally.h), fed by the request path with atomic operations only:
 * no Redis round trip is added to any request.
 */
#ifndef RLAAS_ADMIN_H
#define RLAAS_ADMIN_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_policies.h"

#define RLAAS_ADMIN_HANDLER "rlaas-admin"

int rlaas_admin_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp, server_rec *s);
/* The console itself; the hook is rlaas_scope_console_handler, which
 * calls it where RLaaSConsole is on. A console reached through a virtual
 * host shows that host's zones, policies, identities and bans only. */
int rlaas_admin_handler(request_rec *r);

/* One policy's verdict for the console (denied: a refusal that counts,
 * not a dry run's). */
void rlaas_admin_note(request_rec *r, const rlaas_dir_conf_t *d,
                      const rlaas_item_t *it, int denied);

/* A concurrency limit's slot taken by a request that host s served: the
 * row it is counted in (-1: none), for rlaas_admin_give to give it back
 * to that same row. */
int rlaas_admin_take(const server_rec *s, const rlaas_item_t *it);
void rlaas_admin_give(const server_rec *s, const rlaas_item_t *it, int row);

#endif
