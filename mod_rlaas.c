/*
 * mod_rlaas: request-rate limits shared through Redis by every child and
 * every server using the same Redis.
 *
 * This file holds the module record and the hook registration only; the
 * work is in src/, one folder per layer, one file per concern. Includes
 * point down only: http -> redis -> core.
 *   src/http/   httpd glue: directives and settings (rlaas_config), the
 *               policies a request meets (rlaas_policies), the client
 *               identity (rlaas_identity), the decision and the response
 *               (rlaas_limit), metrics and mod_status (rlaas_metrics), the
 *               engines made per child (rlaas_remote), the operator's
 *               console (rlaas_admin*)
 *   src/redis/  the remote engine, no httpd headers: the facade the request
 *               path calls (rlaas_redis), connections (rlaas_conn,
 *               rlaas_pool, rlaas_resolve), one group's exchange
 *               (rlaas_exchange), the pipeline, the pool gate, the circuit
 *               breaker, the EVALSHA writer (rlaas_resp), the reply reader
 *               (rlaas_reply) and the scripts embedded from lua/
 *   src/core/   no httpd headers: directive value parsers (rlaas_parse),
 *               value segments (rlaas_key) and the whole key
 *               (rlaas_keybuild), which policies apply (rlaas_policy),
 *               header fields (rlaas_headers),
 *               the verdict (rlaas_verdict), rate-limited logging
 *               (rlaas_log), the monotonic clock (rlaas_clock)
 */
#include "httpd.h"
#include "http_config.h"
#include "http_protocol.h"
#include "http_request.h"
#include "mod_status.h"

#include "rlaas_admin.h"
#include "rlaas_backend.h"
#include "rlaas_config.h"
#include "rlaas_limit.h"
#include "rlaas_metrics.h"
#include "rlaas_remote.h"

static int rlaas_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                             apr_pool_t *ptemp, server_rec *s)
{
    rlaas_config_post_config(pconf, s);
    return rlaas_metrics_post_config(pconf, plog, ptemp, s);
}

static void rlaas_child_init(apr_pool_t *pchild, server_rec *s)
{
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
    /* RLaaSCountIf: charged once the response is known */
    ap_hook_log_transaction(rlaas_limit_log_transaction, NULL, NULL,
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
    ap_hook_handler(rlaas_metrics_handler, NULL, NULL, APR_HOOK_MIDDLE);
    /* the operator's console */
    ap_hook_post_config(rlaas_admin_post_config, NULL, NULL, APR_HOOK_LAST);
    ap_hook_handler(rlaas_admin_handler, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, rlaas_metrics_status_hook, NULL, NULL,
                      APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(rlaas) = {
    STANDARD20_MODULE_STUFF,  rlaas_create_dir_conf,   rlaas_merge_dir_conf,
    rlaas_create_server_conf, rlaas_merge_server_conf, rlaas_cmds,
    rlaas_register_hooks,     AP_MODULE_FLAG_NONE,
};
