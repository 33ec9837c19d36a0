/*
 * Tenants: whoever writes a .htaccess. What their settings may reach and
 * what they may make the shared Redis hold.
 *
 * - Namespace: a section's own limit counts in the tenant's namespace
 *   (rlaas_key_tenant_namespace) whenever a setting that defines how it
 *   counts (RLAAS_T_COUNTING) comes from a .htaccess, whatever the host's
 *   key prefix. The tenant is the virtual host, or, under one of the
 *   host's RLaaSTenantRoot patterns, the directory tree the pattern names.
 * - Reach: a tenant's RLaaSCost, RLaaSCountIf, RLaaSDryRun and RLaaSLease
 *   act on its section's own limit only; every policy, applied or
 *   enforced, counts and decides as the operator declared it.
 * - Bounds: the longest window and ban a .htaccess may set
 *   (RLaaSWindowMax), and the highest limit a tenant's sliding log may
 *   have (RLaaSLogMax): refused when the .htaccess is read where the file
 *   holds the values, else when a request meets the combination (a
 *   configuration error of that section: 500 and a log line).
 */
#ifndef RLAAS_TENANT_H
#define RLAAS_TENANT_H

#include "httpd.h"
#include "http_config.h"

#include "rlaas_config.h"

#define RLAAS_D_TENANT_ROOT "RLaaSTenantRoot"
#define RLAAS_D_WINDOW_MAX  "RLaaSWindowMax"
#define RLAAS_D_LOG_MAX     "RLaaSLogMax"

#define RLAAS_DEFAULT_WINDOW_MAX_MS  (24LL * 3600 * 1000) /* 1d */
#define RLAAS_DEFAULT_WINDOW_MAX_ARG "1d"
#define RLAAS_DEFAULT_LOG_MAX        10000

/* 1 while httpd reads a .htaccess (it parses one with one pool for both,
 * NOT_IN_HTACCESS). */
int rlaas_tenant_reading(const cmd_parms *cmd);

/* Notes that the directive being read set setting `bit` of d
 * (RLAAS_T_*): from a .htaccess, the tenant's (and, for a counting
 * setting, d's own limit counts in the tenant's namespace); else the
 * operator's. */
void rlaas_tenant_mark(cmd_parms *cmd, rlaas_dir_conf_t *d, int bit);

/* The merge of the marks and of the namespace (add over base into d,
 * whose settings are merged already). */
void rlaas_tenant_merge(rlaas_dir_conf_t *d, const rlaas_dir_conf_t *base,
                        const rlaas_dir_conf_t *add);

/* .htaccess bounds, where the file holds the values: a window (or a
 * ban's longest length) over RLaaSWindowMax, a limit over RLaaSLogMax
 * with the sliding log set in the same section. NULL, or the message. */
const char *rlaas_tenant_window_bound(cmd_parms *cmd, const char *arg,
                                      int64_t ms);
const char *rlaas_tenant_log_bound(cmd_parms *cmd, const rlaas_dir_conf_t *d);

/* At request time: NULL, or why the section's own limit is outside the
 * bounds its host states (a tenant's limit or strategy, whichever file
 * set it, on the sliding log, over RLaaSLogMax). */
const char *rlaas_tenant_bounds(request_rec *r, const rlaas_dir_conf_t *d);

/* The highest limit the section's own limit may take when it is read per
 * request (RLaaSLimit expr=): RLaaSLimitMax, and RLaaSLogMax for a
 * tenant's sliding log. */
int64_t rlaas_tenant_limit_cap(request_rec *r, const rlaas_dir_conf_t *d);

int64_t rlaas_server_window_max(const rlaas_server_conf_t *sc);
int64_t rlaas_server_log_max(const rlaas_server_conf_t *sc);

/* The directives (server config and <VirtualHost> only). */
const char *rlaas_tenant_set_root(cmd_parms *cmd, void *dummy, int argc,
                                  char *const argv[]);
const char *rlaas_tenant_set_window_max(cmd_parms *cmd, void *dummy,
                                        const char *arg);
const char *rlaas_tenant_set_log_max(cmd_parms *cmd, void *dummy,
                                     const char *arg);

#define RLAAS_TENANT_CMDS                                                      \
    AP_INIT_TAKE_ARGV(RLAAS_D_TENANT_ROOT, rlaas_tenant_set_root, NULL,        \
                      RSRC_CONF,                                               \
                      "PATTERN...: where a tenant's directory tree starts, "   \
                      "e.g. /home/*/public_html (* is one path segment)"),     \
        AP_INIT_TAKE1(RLAAS_D_WINDOW_MAX, rlaas_tenant_set_window_max, NULL,   \
                      RSRC_CONF,                                               \
                      "The longest window or ban a .htaccess may set "         \
                      "(default 1d)"),                                         \
        AP_INIT_TAKE1(RLAAS_D_LOG_MAX, rlaas_tenant_set_log_max, NULL,         \
                      RSRC_CONF,                                               \
                      "The highest limit a tenant's sliding log may have "     \
                      "(default 10000)")

#endif
