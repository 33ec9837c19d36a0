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

#endif
