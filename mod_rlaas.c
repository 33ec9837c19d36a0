/*
 * mod_rlaas: request-rate limits shared through Redis by every child and
 * every server using the same Redis.
 *
 * This file holds the module record and the hook registration only; the
 * work is in src/, one folder per layer, one file per concern, includes
 * pointing down only (http -> local, redis -> core). The layout is
 * described once, in docs/developers.md.
 */
#include "httpd.h"
#include "http_config.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_status.h"

#include "rlaas_admin.h"
#include "rlaas_backend.h"
#include "rlaas_directives.h"
#include "rlaas_lease.h"
#include "rlaas_limit.h"
#include "rlaas_metrics.h"
#include "rlaas_remote.h"
#include "rlaas_scope.h"
#include "rlaas_settle.h"
#include "rlaas_trace.h"

/* Whether some host decides in Redis: leases (RLaaSLease) may apply. */
static int redis_any(server_rec *s)
{
    for (; s != NULL; s = s->next) {
        if (!rlaas_server_local(rlaas_server_conf(s)))
            return 1;
    }
    return 0;
}

static int rlaas_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                             apr_pool_t *ptemp, server_rec *s)
{
    rlaas_config_post_config(pconf, s);
    rlaas_lease_post_config(s, redis_any(s));
    return rlaas_metrics_post_config(pconf, plog, ptemp, s);
}

static void rlaas_child_init(apr_pool_t *pchild, server_rec *s)
{
    rlaas_config_child_init(pchild);
    rlaas_metrics_child_init(pchild, s);
    rlaas_remote_child_init(pchild, s);
}

static void rlaas_register_hooks(apr_pool_t *p)
{
    (void)p;
    /* First among access checkers, so that no other (mod_access_compat's
     * Deny, whatever the LoadModule order) can answer before the limit is
     * decided; first among handlers, so that nothing is served before a
     * refusal httpd let through is delivered. */
    ap_hook_access_checker(rlaas_limit_access_checker, NULL, NULL,
                           APR_HOOK_REALLY_FIRST);
    ap_hook_handler(rlaas_limit_handler, NULL, NULL, APR_HOOK_REALLY_FIRST);
    /* TRACE, which httpd answers in map_to_storage, before any access
     * checker: decided there, before httpd's own hook (rlaas_trace.c) */
    ap_hook_map_to_storage(rlaas_trace_map_to_storage, NULL, NULL,
                           APR_HOOK_REALLY_FIRST);
    /* RLaaSCountIf: charged once the response is known */
    ap_hook_log_transaction(rlaas_settle_log_transaction, NULL, NULL,
                            APR_HOOK_MIDDLE);
    ap_hook_insert_error_filter(rlaas_limit_insert_error_filter, NULL, NULL,
                                APR_HOOK_MIDDLE);
    rlaas_limit_register_filters();
    ap_hook_child_init(rlaas_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_pre_config(rlaas_config_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_check_config(rlaas_remote_check_config, NULL, NULL,
                         APR_HOOK_MIDDLE);
    ap_hook_post_config(rlaas_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(rlaas_backend_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(rlaas_scope_metrics_handler, NULL, NULL, APR_HOOK_MIDDLE);
    /* the operator's console */
    ap_hook_post_config(rlaas_admin_post_config, NULL, NULL, APR_HOOK_LAST);
    ap_hook_handler(rlaas_scope_console_handler, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, rlaas_metrics_status_hook, NULL, NULL,
                      APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(rlaas) = {
    STANDARD20_MODULE_STUFF,  rlaas_create_dir_conf,   rlaas_merge_dir_conf,
    rlaas_create_server_conf, rlaas_merge_server_conf, rlaas_cmds,
    rlaas_register_hooks,     AP_MODULE_FLAG_NONE,
};
