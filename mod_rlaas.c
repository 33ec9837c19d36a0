/*
 * mod_rlaas: request-rate limits shared through Redis by every child and
 * every server using the same Redis.
 *
 * This file holds the module record and the hook registration only; the
 * work is in src/, one file per concern:
 *   rlaas_config    directives, per-server and per-directory settings
 *   rlaas_parse     directive value parsers (no httpd headers)
 *   rlaas_identity  the client identity and its Redis key
 *   rlaas_key       key-safe segments: raw, hashed, fallback (no httpd)
 *   rlaas_redis     per-child connection pools and the script call
 *   rlaas_reply     reading a script's reply (no httpd headers)
 *   rlaas_scripts   the strategy scripts, embedded from lua/ at build time
 *   rlaas_limit     the decision and the response
 *   rlaas_headers   RateLimit and X-RateLimit-* fields (no httpd headers)
 *   rlaas_breaker   the per-child circuit breaker (no httpd headers)
 *   rlaas_metrics   counters in shared memory, Prometheus and mod_status
 *   rlaas_log       rate-limited log lines
 *   rlaas_resp      the EVALSHA command's protocol bytes (no httpd)
 *   rlaas_pipeline  a child's concurrent calls grouped on one connection
 *   rlaas_gate      waiting for a pooled connection within the budget
 */
#include "httpd.h"
#include "http_config.h"
#include "http_request.h"
#include "mod_status.h"

#include "rlaas_config.h"
#include "rlaas_limit.h"
#include "rlaas_metrics.h"
#include "rlaas_redis.h"

static void rlaas_child_init(apr_pool_t *pchild, server_rec *s)
{
    rlaas_redis_child_init(pchild, s);
}

static void rlaas_register_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_access_checker(rlaas_limit_access_checker, NULL, NULL,
                           APR_HOOK_MIDDLE);
    ap_hook_fixups(rlaas_limit_fixups, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_pre_config(rlaas_config_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(rlaas_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(rlaas_metrics_post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(rlaas_metrics_handler, NULL, NULL, APR_HOOK_MIDDLE);
    APR_OPTIONAL_HOOK(ap, status_hook, rlaas_metrics_status_hook, NULL, NULL,
                      APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(rlaas) = {
    STANDARD20_MODULE_STUFF,  rlaas_create_dir_conf,   rlaas_merge_dir_conf,
    rlaas_create_server_conf, rlaas_merge_server_conf, rlaas_cmds,
    rlaas_register_hooks,     AP_MODULE_FLAG_NONE,
};
