#include "rlaas_remote.h"

#include "http_log.h"
#include "ap_mpm.h"
#include "apr_strings.h"

#include "rlaas_clock.h"
#include "rlaas_config.h"
#include "rlaas_engine.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_redis.h"
#include "rlaas_scan.h"

APLOG_USE_MODULE(rlaas);

/* Failover lines: at most one a second per child, however many groups
 * meet the old master before every connection has moved. */
static rlaas_log_gate_t gate_failover;

/* What the sentinels' answers did: a line per kind every few seconds per
 * child at most, whatever the sentinels keep saying (they are asked every
 * second). */
#define SENTINEL_LOG_INTERVAL_S 10
static rlaas_log_gate_t gate_sentinel[3];

int rlaas_remote_threads(void)
{
    int threads = 1;

    if (ap_mpm_query(AP_MPMQ_MAX_THREADS, &threads) != APR_SUCCESS ||
        threads < 1)
        threads = 1;
    return threads;
}

static void on_connection(void *baton, int delta)
{
    (void)baton;
    rlaas_metrics_connection(delta);
}

static void on_latency(void *baton, int64_t us, int calls)
{
    (void)baton;
    while (calls-- > 0)
        rlaas_metrics_latency(us);
}

static void on_script_load(void *baton, const char *file, int ok)
{
    rlaas_metrics_script_load();
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, baton,
                 "RLAAS0002: loaded script %s (%s)", file,
                 ok ? "ok" : "failed");
}

/* Each change of the circuit is logged once, with the cause in Redis' own
 * words (NOAUTH, READONLY, Connection refused, ...). */
static void on_circuit(void *baton, const char *node, rlaas_breaker_event_e ev,
                       const rlaas_breaker_t *b, rlaas_rerr_e e,
                       const char *cause)
{
    server_rec *s = baton;

    switch (ev) {
    case RLAAS_BREAKER_OPENED:
        rlaas_metrics_circuit(1);
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     "RLAAS0040: circuit opened after %u consecutive Redis "
                     "failures (last: %s: %s) of %s; requests get the "
                     "fail-open policy without trying it for "
                     "%" APR_TIME_T_FMT "ms",
                     b->threshold, rlaas_rerr_name(e), cause, node,
                     apr_time_as_msec(b->cooldown));
        break;
    case RLAAS_BREAKER_REOPENED:
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, s,
                     "RLAAS0041: circuit probe failed (%s: %s) of %s; "
                     "circuit stays open",
                     rlaas_rerr_name(e), cause, node);
        break;
    case RLAAS_BREAKER_CLOSED:
        rlaas_metrics_circuit(-1);
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                     "RLAAS0042: circuit closed: Redis answers again (%s)",
                     node);
        break;
    case RLAAS_BREAKER_SAME:
        break;
    }
}

static void on_failover(void *baton, const char *node, const char *cause)
{
    long dropped = rlaas_log_gate_pass(&gate_failover, rlaas_clock_us(), 1);

    if (dropped < 0)
        return;
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, baton,
                 "RLAAS0043: Redis is not the master here (%s, at %s); "
                 "this child's connections are made again%s",
                 cause, node,
                 dropped > 0 ? " (and again since the last line)" : "");
}

/* Sentinel settings as the engine takes them, in the child's pool. */
static const rlaas_sentinel_conf_t *sentinel_conf(apr_pool_t *p,
                                                  const rlaas_target_t *t)
{
    rlaas_sentinel_conf_t *sc;

    if (t->sentinel_master == NULL)
        return NULL;
    sc = apr_pcalloc(p, sizeof(*sc));
    sc->master = t->sentinel_master;
    sc->hosts = t->sentinel_hosts;
    sc->ports = t->sentinel_ports;
    sc->n = t->sentinel_n;
    sc->username = t->sentinel_user;
    sc->password = t->sentinel_pass;
    sc->tls_name = t->sentinel_tls_name;
    /* asked in the background: no request waits for it */
    sc->timeout_ms = t->timeout_ms < 500 ? 500 : t->timeout_ms;
    return sc;
}

static void on_group(void *baton, const char *node, rlaas_rerr_e e, int calls)
{
    (void)baton;
    rlaas_metrics_node(node, e, calls);
}

/* From the resolver's thread. A disagreement or a master refused keeps
 * the module on the master it verified last: a warning; a new master is
 * news. */
static void on_sentinel(void *baton, rlaas_sentinel_note_e what,
                        const char *text)
{
    static const char *const tag[] = {"RLAAS0180", "RLAAS0181", "RLAAS0182"};
    int level = what == RLAAS_SENTINEL_MOVED ? APLOG_NOTICE : APLOG_WARNING;
    char more[48] = "";
    long dropped;

    if ((unsigned)what >= sizeof(tag) / sizeof(tag[0]))
        return;
    dropped = rlaas_log_gate_pass(
        &gate_sentinel[what], rlaas_clock_us(),
        what == RLAAS_SENTINEL_MOVED ? 1 : SENTINEL_LOG_INTERVAL_S);
    if (dropped < 0)
        return;
    if (dropped > 0)
        apr_snprintf(more, sizeof(more), " (%ld more since the last line)",
                     dropped);
    ap_log_error(APLOG_MARK, level, 0, baton, "%s: Sentinel: %s%s", tag[what],
                 text, more);
}

static rlaas_redis_conf_t resolved(apr_pool_t *p, const rlaas_target_t *t)
{
    rlaas_redis_conf_t c;

    c.host = t->host != NULL ? t->host : RLAAS_DEFAULT_HOST;
    c.port = t->port > 0 ? t->port : RLAAS_DEFAULT_PORT;
    c.is_unix = t->is_unix;
    c.username = t->username;
    c.password = t->password;
    c.database = t->database;
    c.timeout_ms = t->timeout_ms;
    c.threads = rlaas_remote_threads();
    c.pool_max = t->pool_max > 0 ? t->pool_max : c.threads;
    c.pipeline = t->pipeline;
    c.circuit_failures = t->circuit_failures;
    c.circuit_cooldown_ms = t->circuit_cooldown_ms;
    c.tls = t->tls;
    c.tls_ca = t->tls_ca;
    c.tls_cert = t->tls_cert;
    c.tls_key = t->tls_key;
    c.tls_server_name = t->tls_server_name;
    c.sentinel = sentinel_conf(p, t);
    c.cluster_hosts = t->cluster_hosts;
    c.cluster_ports = t->cluster_ports;
    c.cluster_n = t->cluster_n;
    return c;
}

/* A new child connects before it takes requests (rlaas_redis_warm), to
 * every Redis its hosts use, within RLAAS_REDIS_WARM_MAX_US in all; if one
 * does not answer now, its first request tries as always. One that let a
 * warm-up wait WARM_SLOW_US and fail (packets dropped, a name that does
 * not resolve) ends them all: the child starts no later for the others. */
#define WARM_SLOW_US 500000

static void warm(rlaas_redis_t *rd, server_rec *s, int64_t *not_after)
{
    char detail[RLAAS_DETAIL_MAX];
    int64_t t0 = rlaas_clock_us();
    rlaas_rerr_e e = rlaas_redis_warm(rd, *not_after, detail);

    if (e == RLAAS_RERR_NONE)
        return;
    if (rlaas_clock_us() - t0 >= WARM_SLOW_US)
        *not_after = 0;
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s,
                 "RLAAS0220: no Redis connection opened as the child "
                 "started (the first request will try): %s: %s",
                 rlaas_rerr_name(e), detail);
}

void rlaas_remote_child_init(apr_pool_t *pchild, server_rec *s)
{
    int64_t not_after = rlaas_clock_us() + RLAAS_REDIS_WARM_MAX_US;

    for (; s != NULL; s = s->next) {
        rlaas_target_t *t = rlaas_server_conf(s)->target;
        rlaas_redis_conf_t c;
        rlaas_redis_events_t ev = {NULL,           on_connection, on_latency,
                                   on_script_load, on_circuit,    on_failover,
                                   on_group,       on_sentinel};

        if (t->redis == NULL) { /* else shared with the main server */
            c = resolved(pchild, t);
            ev.baton = s;
            t->redis = rlaas_redis_create(pchild, &c, &ev);
            if (t->redis == NULL)
                ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s,
                             "RLAAS0001: cannot create the Redis connection "
                             "pool");
        }
        /* once per engine, for the first host that decides with it */
        if (t->redis != NULL && !t->warmed &&
            !rlaas_server_local(rlaas_server_conf(s))) {
            t->warmed = 1;
            warm(t->redis, s, &not_after);
        }
    }
}

/* Sentinel with TLS: the master's certificate is checked against a name
 * the operator gives, or (said explicitly) the address the sentinels
 * announce; never a default such as 127.0.0.1 that no master carries. */
static const char *sentinel_tls_error(apr_pool_t *p, const rlaas_target_t *t)
{
    if (t->sentinel_n == 0 || t->tls != 1)
        return NULL;
    if (t->tls_announced == 1 && t->tls_server_name != NULL)
        return apr_psprintf(p,
                            RLAAS_D_TLS_ANNOUNCED
                            " on and " RLAAS_D_REDIS_TLS_NAME
                            " '%s' (master %s): choose one name to check the "
                            "master's certificate against",
                            t->tls_server_name, t->sentinel_master);
    if (t->tls_announced != 1 && t->tls_server_name == NULL)
        return apr_psprintf(
            p,
            RLAAS_D_REDIS_TLS_NAME
            " is required with " RLAAS_D_REDIS_SENTINEL
            " %s and " RLAAS_D_REDIS_TLS " on: the name every master's "
            "certificate carries (or " RLAAS_D_TLS_ANNOUNCED " on, to check "
            "the address the sentinels announce)",
            t->sentinel_master);
    return NULL;
}

int rlaas_remote_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                              apr_pool_t *ptemp, server_rec *s)
{
    (void)pconf;
    (void)plog;
    for (; s != NULL; s = s->next) {
        const char *err =
            sentinel_tls_error(ptemp, rlaas_server_conf(s)->target);

        if (err != NULL) {
            const char *where =
                s->is_virtual && s->defn_name != NULL
                    ? apr_psprintf(ptemp, "the virtual host at %s:%u",
                                   s->defn_name, s->defn_line_number)
                    : "the main server";

            ap_log_error(APLOG_MARK, APLOG_STARTUP | APLOG_EMERG, 0, NULL,
                         "RLAAS0183: %s (%s)", err, where);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    return OK;
}
