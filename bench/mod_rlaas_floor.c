/*
 * mod_rlaas_floor: the floor case of make bench-peers (bench/peers.sh).
 * Bench-only: built by `make bench-floor` into build/floor/, never
 * installed nor packaged.
 *
 * It does only what every Redis-backed limiter must do: one round trip to
 * Redis per request. The round trip goes through mod_rlaas' own engine,
 * linked from the very objects mod_rlaas.so is made of (src/redis,
 * src/core): the child's connection pool, the pipeline that groups
 * concurrent calls, the exchange that writes the EVALSHA and reads its
 * reply. Only the embedded scripts differ: every one is bench/floor.lua,
 * which returns a constant verdict. So Redis runs a script that touches
 * no key, and httpd does no identity, no key building, no headers, no
 * notes, no metrics. Whatever mod_rlaas costs above this case is the
 * module's own work and that of its scripts.
 *
 *   LoadModule rlaas_floor_module .../mod_rlaas_floor.so
 *   RLaaSBenchFloor 127.0.0.1:6379
 *
 * Every request of the server then makes the call (key "floor:{<X-Client
 * or the client's address>}"); an error answers 503, a denial 429, so that
 * the bench's non-2xx column shows anything but the round trip.
 *
 * The engine's symbols are those of mod_rlaas.so: the two modules must not
 * be loaded together (refused at start).
 */
#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "ap_mpm.h"
#include "apr_strings.h"

#include <string.h>

#include "rlaas_redis.h"

module AP_MODULE_DECLARE_DATA rlaas_floor_module;

/* mod_rlaas' defaults (src/http/rlaas_config.h): RLaaSRedisTimeout,
 * RLaaSRedisCircuit. */
#define FLOOR_TIMEOUT_MS          100
#define FLOOR_CIRCUIT_FAILURES    5
#define FLOOR_CIRCUIT_COOLDOWN_MS 500

/* Per process: the main server's target, then the child's engine. */
static const char *floor_host;
static int floor_port;
static rlaas_redis_t *floor_engine;

static const char *set_floor(cmd_parms *cmd, void *dummy, const char *arg)
{
    char *host, *scope;
    apr_port_t port;

    (void)dummy;
    if (cmd->server->is_virtual)
        return "RLaaSBenchFloor: the main server only";
    if (apr_parse_addr_port(&host, &scope, &port, arg, cmd->pool) !=
            APR_SUCCESS ||
        host == NULL || port == 0)
        return apr_psprintf(cmd->pool, "RLaaSBenchFloor: '%s' is not host:port",
                            arg);
    floor_host = host;
    floor_port = port;
    return NULL;
}

/* A restart reads the configuration again: nothing kept from before. */
static int floor_pre_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp)
{
    (void)pconf;
    (void)plog;
    (void)ptemp;
    floor_host = NULL;
    return OK;
}

/* (check_config: apachectl -t says it too) */
static int floor_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                              apr_pool_t *ptemp, server_rec *s)
{
    (void)pconf;
    (void)plog;
    (void)ptemp;
    if (ap_find_linked_module("mod_rlaas.c") != NULL) {
        ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, s,
                     "mod_rlaas_floor: not beside mod_rlaas (they share "
                     "symbols)");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

/* The engine as mod_rlaas makes it with its defaults (rlaas_remote.c):
 * a pool of as many connections as the child has threads, the pipeline
 * on, mod_rlaas' time budget and circuit breaker. */
static void floor_child_init(apr_pool_t *pchild, server_rec *s)
{
    rlaas_redis_conf_t c;
    rlaas_redis_events_t ev;
    int threads = 1;

    if (floor_host == NULL)
        return;
    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS ||
        threads < 1)
        threads = 1;
    memset(&c, 0, sizeof(c));
    memset(&ev, 0, sizeof(ev));
    c.host = floor_host;
    c.port = floor_port;
    c.timeout_ms = FLOOR_TIMEOUT_MS;
    c.threads = threads;
    c.pool_max = threads;
    c.pipeline = 1;
    c.circuit_failures = FLOOR_CIRCUIT_FAILURES;
    c.circuit_cooldown_ms = FLOOR_CIRCUIT_COOLDOWN_MS;
    floor_engine = rlaas_redis_create(pchild, &c, &ev);
    if (floor_engine == NULL)
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                     "mod_rlaas_floor: cannot create the Redis engine");
}

/* One call, as mod_rlaas makes it for one gcra policy; the script that
 * runs is bench/floor.lua whichever strategy is named. */
static int floor_access_checker(request_rec *r)
{
    char key[RLAAS_CALL_KEY_MAX];
    char detail[RLAAS_DETAIL_MAX];
    const char *who;
    rlaas_verdict_t v[2];
    rlaas_call_t call;
    rlaas_rerr_e e;

    if (floor_host == NULL)
        return DECLINED;
    if (floor_engine == NULL)
        return HTTP_SERVICE_UNAVAILABLE;
    who = apr_table_get(r->headers_in, "X-Client");
    if (who == NULL)
        who = r->useragent_ip;
    memset(&call, 0, sizeof(call));
    call.strategy = RLAAS_STRATEGY_GCRA;
    call.key = key;
    call.key_len = (size_t)apr_snprintf(key, sizeof(key), "floor:{%s}", who);
    call.limit = 1000000000;
    call.window_ms = 60000;
    call.cost = 1;
    e = rlaas_redis_eval(floor_engine, &call, 1, v, detail);
    if (e != RLAAS_RERR_NONE) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "mod_rlaas_floor: %s: %s",
                      rlaas_rerr_name(e), detail);
        return HTTP_SERVICE_UNAVAILABLE;
    }
    return v[0].allowed ? DECLINED : HTTP_TOO_MANY_REQUESTS;
}

static const command_rec floor_cmds[] = {
    AP_INIT_TAKE1("RLaaSBenchFloor", set_floor, NULL, RSRC_CONF,
                  "host:port of the Redis the floor case calls once per "
                  "request"),
    {NULL}};

static void floor_register_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_pre_config(floor_pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_check_config(floor_check_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(floor_child_init, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_access_checker(floor_access_checker, NULL, NULL,
                           APR_HOOK_REALLY_FIRST);
}

AP_DECLARE_MODULE(rlaas_floor) = {
    STANDARD20_MODULE_STUFF,
    NULL,
    NULL,
    NULL,
    NULL,
    floor_cmds,
    floor_register_hooks,
    AP_MODULE_FLAG_NONE,
};
