#include "rlaas_node.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apr_strings.h"

#include "rlaas_clock.h"
#include "rlaas_pipeline.h"
#include "rlaas_pool.h"
#include "rlaas_resolve.h"
#include "rlaas_scripts.h"
#include "rlaas_tls.h"

/* Groups of pipelined calls in flight at most, per engine and child, and
 * how long a call waits behind one before it goes out on another
 * connection. */
#define PIPE_LEADERS 4
#define PIPE_HOLD_US 1000

/* A host name is looked up again this often (and soon after a connect to
 * its address failed); the sentinels are asked every second. */
#define RESOLVE_REFRESH_S   30
#define SENTINEL_REFRESH_MS 1000

struct rlaas_node_t {
    rlaas_redis_conf_t conf;
    rlaas_redis_events_t ev;
    rlaas_resolver_t *resolver; /* NULL with a unix socket */
    rlaas_pool_t *pool;
    rlaas_pipe_t *pipe;    /* NULL: every request uses its own connection */
    rlaas_tls_t *tls;      /* with conf.tls; NULL if it could not be made */
    unsigned seen_version; /* of the resolver, when the pool last followed */
    char tls_error[RLAAS_DETAIL_MAX];
    rlaas_breaker_t breaker;
    pthread_mutex_t cause_mu; /* guards cause: written on failures only */
    char cause[RLAAS_DETAIL_MAX];
    char client_name[32];               /* mod_rlaas-<pid> */
    char node[RLAAS_HOSTPORT_MAX + 16]; /* for labels and log lines */
    int open;                           /* connections open now (atomic) */
};

/* What the calls of a group share: the engine and the deadline of the
 * group's oldest caller, its leader (so the earliest of them all). */
typedef struct {
    rlaas_node_t *rd;
    int64_t deadline;
} group_t;

/* ---- life ---- */

/* A context that can't be made (a key that does not match its
 * certificate, say) leaves the target unreachable: every request says
 * why, as for any other connect failure. */
static void make_tls(rlaas_node_t *rd)
{
    rlaas_tls_conf_t tc;

    tc.ca = rd->conf.tls_ca;
    tc.cert = rd->conf.tls_cert;
    tc.key = rd->conf.tls_key;
    tc.server_name = rd->conf.tls_server_name != NULL ? rd->conf.tls_server_name
                                                      : rd->conf.host;
    rd->tls = rlaas_tls_create(&tc, rd->tls_error, sizeof(rd->tls_error));
}

/* The sentinels are asked as the master is reached: the same TLS context
 * (each sentinel checked against its own name), and the master they
 * announce checked with the data connections' credentials and name. */
static rlaas_resolver_t *make_sentinel_resolver(rlaas_node_t *rd)
{
    rlaas_sentinel_conf_t sc = *rd->conf.sentinel;

    sc.tls = rd->tls;
    sc.master_username = rd->conf.username;
    sc.master_password = rd->conf.password;
    sc.master_tls_name = rd->conf.tls_server_name;
    sc.client_name = rd->client_name;
    sc.note = rd->ev.sentinel;
    sc.baton = rd->ev.baton;
    return rlaas_resolver_sentinel(&sc, SENTINEL_REFRESH_MS);
}

static apr_status_t engine_cleanup(void *data)
{
    rlaas_node_t *rd = data;

    /* the resolver's thread is joined here, before the pool's memory
     * goes; a child's gauges go with its metrics slot */
    rlaas_pipe_destroy(rd->pipe);
    rd->pipe = NULL;
    rlaas_resolver_destroy(rd->resolver);
    rd->resolver = NULL;
    rlaas_tls_destroy(rd->tls);
    rd->tls = NULL;
    pthread_mutex_destroy(&rd->cause_mu);
    return APR_SUCCESS;
}

rlaas_node_t *rlaas_node_create(apr_pool_t *p, const rlaas_redis_conf_t *c,
                                const rlaas_redis_events_t *ev)
{
    rlaas_node_t *rd = apr_pcalloc(p, sizeof(*rd));
    int max = c->pool_max > 0 ? c->pool_max : 1;
    int64_t budget_us = (int64_t)c->timeout_ms * 1000;
    int tls_broken;

    rd->conf = *c;
    rd->conf.host = apr_pstrdup(p, c->host);
    snprintf(rd->client_name, sizeof(rd->client_name), "%s-%ld",
             RLAAS_REDIS_CLIENT_NAME, (long)getpid());
    if (c->sentinel != NULL)
        snprintf(rd->node, sizeof(rd->node), "sentinel:%.60s",
                 c->sentinel->master);
    else if (c->is_unix)
        snprintf(rd->node, sizeof(rd->node), "unix:%.80s", c->host);
    else
        snprintf(rd->node, sizeof(rd->node),
                 strchr(c->host, ':') ? "[%.64s]:%d" : "%.64s:%d", c->host,
                 c->port);
    rd->ev = *ev;
    pthread_mutex_init(&rd->cause_mu, NULL);
    rlaas_breaker_init(&rd->breaker, (unsigned)c->circuit_failures,
                       (apr_interval_time_t)c->circuit_cooldown_ms * 1000);
    apr_pool_cleanup_register(p, rd, engine_cleanup, apr_pool_cleanup_null);
    if (c->tls)
        make_tls(rd);
    /* without its TLS context, nothing is asked of the sentinels either
     * (never in plain TCP): every request says why */
    tls_broken = c->tls && rd->tls == NULL;
    if (c->sentinel != NULL && !tls_broken)
        rd->resolver = make_sentinel_resolver(rd);
    else if (!c->is_unix && c->sentinel == NULL)
        rd->resolver = rlaas_resolver_create(c->host, RESOLVE_REFRESH_S);
    /* Grouping needs threads that wait at the same time. One group in
     * flight is the rule; a far or slow Redis gets a few, each on its own
     * connection, never more than the pool holds. Without it, threads
     * beyond the pool's size queue at the pool's gate. */
    if (c->pipeline && c->threads > 1)
        rd->pipe = rlaas_pipe_create(max < PIPE_LEADERS ? max : PIPE_LEADERS,
                                     PIPE_HOLD_US);
    rd->pool = rlaas_pool_create(p, max, rd->pipe == NULL && max < c->threads,
                                 budget_us);
    if (rd->pool == NULL ||
        (!c->is_unix && rd->resolver == NULL && !tls_broken))
        return NULL;
    if (rd->resolver != NULL)
        rd->seen_version = rlaas_resolver_version(rd->resolver);
    return rd;
}

/* ---- the circuit ---- */

static void set_cause(rlaas_node_t *rd, const char *text)
{
    pthread_mutex_lock(&rd->cause_mu);
    apr_cpystrn(rd->cause, text, sizeof(rd->cause));
    pthread_mutex_unlock(&rd->cause_mu);
}

static void get_cause(rlaas_node_t *rd, char *out)
{
    pthread_mutex_lock(&rd->cause_mu);
    memcpy(out, rd->cause, sizeof(rd->cause));
    pthread_mutex_unlock(&rd->cause_mu);
}

/* Once per group: the circuit counts what Redis did, not what each call
 * of the group did, and never an error about one call's key. */
static void group_done(rlaas_node_t *rd, rlaas_rerr_e e, const char *cause,
                       int calls)
{
    rlaas_breaker_event_e ev;

    if (rd->ev.group != NULL)
        rd->ev.group(rd->ev.baton, rd->node,
                     rlaas_rerr_is_redis_failure(e) ? e : RLAAS_RERR_NONE,
                     calls);
    if (rlaas_rerr_is_redis_failure(e)) {
        set_cause(rd, cause);
        ev = rlaas_breaker_failure(&rd->breaker, rlaas_clock_us());
    }
    else {
        ev = rlaas_breaker_success(&rd->breaker);
    }
    if (ev != RLAAS_BREAKER_SAME && rd->ev.circuit != NULL)
        rd->ev.circuit(rd->ev.baton, rd->node, ev, &rd->breaker, e, cause);
}

/* ---- a group on one connection ---- */

static void fail_all(rlaas_job_t **jobs, int n, rlaas_rerr_e e,
                     const char *text)
{
    int i;

    for (i = 0; i < n; i++) {
        jobs[i]->e = e;
        apr_cpystrn(jobs[i]->detail, text, RLAAS_DETAIL_MAX);
    }
}

static void closed(rlaas_node_t *rd)
{
    __atomic_sub_fetch(&rd->open, 1, __ATOMIC_RELAXED);
    if (rd->ev.connection != NULL)
        rd->ev.connection(rd->ev.baton, -1);
}

/* Opens the slot's connection where the address now leads. */
static rlaas_rerr_e open_conn(const group_t *g, rlaas_conn_t *c, char *detail)
{
    rlaas_node_t *rd = g->rd;
    char addr[RLAAS_ADDR_MAX];
    rlaas_conn_params_t p;
    rlaas_rerr_e e;

    if (rd->conf.tls && rd->tls == NULL) {
        apr_cpystrn(detail, rd->tls_error, RLAAS_DETAIL_MAX);
        return RLAAS_RERR_CONNECT;
    }
    p.addr = rd->conf.host;
    p.port = rd->conf.is_unix ? 0 : rd->conf.port;
    if (rd->resolver != NULL) {
        int port = 0;

        if (!rlaas_resolver_get(rd->resolver, addr, sizeof(addr), &port) &&
            !(rlaas_resolver_wait_first(rd->resolver, g->deadline) &&
              rlaas_resolver_get(rd->resolver, addr, sizeof(addr), &port))) {
            rlaas_resolver_poke(rd->resolver);
            if (rd->conf.sentinel != NULL)
                snprintf(detail, RLAAS_DETAIL_MAX,
                         "no sentinel has named the master %.80s (yet)",
                         rd->conf.sentinel->master);
            else
                snprintf(detail, RLAAS_DETAIL_MAX,
                         "host name %.100s not resolved (yet)", rd->conf.host);
            return RLAAS_RERR_CONNECT;
        }
        p.addr = addr;
        if (port > 0)
            p.port = port;
    }
    p.username = rd->conf.username;
    p.password = rd->conf.password;
    p.database = rd->conf.database;
    p.client_name = rd->client_name;
    p.tls = rd->tls;
    /* with Sentinel and no name given, the announced address is checked
     * (RLaaSRedisTLSAnnouncedName on); else the context's name */
    p.server_name =
        rd->conf.sentinel != NULL && rd->conf.tls_server_name == NULL ? p.addr
                                                                      : NULL;
    c->gen = rlaas_pool_generation(rd->pool);
    e = rlaas_conn_open(c, &p, g->deadline, detail);
    if (e == RLAAS_RERR_CONNECT && rd->resolver != NULL)
        rlaas_resolver_poke(rd->resolver);
    if (c->ctx != NULL) {
        __atomic_add_fetch(&rd->open, 1, __ATOMIC_RELAXED);
        if (rd->ev.connection != NULL)
            rd->ev.connection(rd->ev.baton, 1);
    }
    else if (e == RLAAS_RERR_NONE) {
        e = RLAAS_RERR_IO; /* cannot happen: open without a context */
    }
    return e;
}

static void report(rlaas_node_t *rd, const rlaas_outcome_t *out, int n)
{
    int st;

    if (rd->ev.latency != NULL && out->latency_us > 0)
        rd->ev.latency(rd->ev.baton, out->latency_us, n);
    for (st = 0; st < RLAAS_SCRIPT_COUNT; st++) {
        if (out->loaded[st] != 0 && rd->ev.script_load != NULL)
            rd->ev.script_load(rd->ev.baton, rlaas_scripts[st].file,
                               out->loaded[st] > 0);
    }
    if (out->errc == RLAAS_ERRC_FAILOVER) {
        /* Every connection of this child still leads to the old master
         * (a proxy, a virtual IP or a DNS name moved on): make them all
         * again, and look the name up again. */
        rlaas_pool_invalidate(rd->pool);
        if (rd->resolver != NULL)
            rlaas_resolver_poke(rd->resolver);
        if (rd->ev.failover != NULL)
            rd->ev.failover(rd->ev.baton, rd->node, out->cause);
    }
}

/* The master moved (Sentinel named another, DNS changed): every
 * connection of this child is made again, to where it is now. */
static void follow(rlaas_node_t *rd)
{
    unsigned v;

    if (rd->resolver == NULL)
        return;
    v = rlaas_resolver_version(rd->resolver);
    if (v != __atomic_load_n(&rd->seen_version, __ATOMIC_RELAXED)) {
        __atomic_store_n(&rd->seen_version, v, __ATOMIC_RELAXED);
        rlaas_pool_invalidate(rd->pool);
    }
}

static void run_group(const group_t *g, rlaas_job_t **jobs, int n)
{
    rlaas_node_t *rd = g->rd;
    char detail[RLAAS_DETAIL_MAX];
    rlaas_outcome_t out;
    rlaas_conn_t *c;
    rlaas_rerr_e e;
    int dropped;

    follow(rd);
    if (rlaas_pool_acquire(rd->pool, g->deadline, &c, &dropped) !=
        RLAAS_RERR_NONE) {
        fail_all(jobs, n, RLAAS_RERR_POOL,
                 "no pooled connection became free in time");
        group_done(rd, RLAAS_RERR_POOL, jobs[0]->detail, n);
        return;
    }
    /* A connection the peer closed while it sat in the pool is found out
     * before anything is written on it, never after. */
    if (c->ctx != NULL && rlaas_conn_is_stale(c)) {
        rlaas_conn_close(c);
        dropped = 1;
    }
    if (dropped)
        closed(rd);
    if (c->ctx == NULL && (e = open_conn(g, c, detail)) != RLAAS_RERR_NONE) {
        fail_all(jobs, n, e, detail);
        group_done(rd, e, detail, n);
        rlaas_pool_release(rd->pool, c);
        return;
    }
    rlaas_exchange(c, jobs, n, g->deadline, &out);
    if (c->ctx == NULL)
        closed(rd);
    rlaas_pool_release(rd->pool, c);
    report(rd, &out, n);
    group_done(rd, out.e, out.cause, n);
}

static void run_pipe_group(void *baton, rlaas_pipe_job_t **pjobs, int n)
{
    rlaas_job_t *jobs[RLAAS_PIPE_MAX_BATCH];
    int i;

    for (i = 0; i < n; i++)
        jobs[i] = pjobs[i]->data;
    run_group(baton, jobs, n);
}

/* ---- calls ---- */

static rlaas_rerr_e circuit_open(rlaas_node_t *rd, char *detail)
{
    char cause[RLAAS_DETAIL_MAX];

    get_cause(rd, cause);
    /* the cause cut to fit: its start names it (NOAUTH, READONLY, ...) */
    snprintf(detail, RLAAS_DETAIL_MAX,
             "circuit open after repeated Redis failures, the last: %.100s",
             cause[0] ? cause : "-");
    return RLAAS_RERR_CIRCUIT;
}

/* Whether this call may go to Redis. A call that finds the probe in flight
 * waits for its outcome instead of taking the failure policy at once: in a
 * child idle since a fault, a burst's first request probes a Redis that has
 * long been healthy again, and the rest of the burst must not fail for that
 * (found by make soak; t/circuit_probe.t). The wait is a quarter of the
 * time budget at most, in proportion to what the operator allows a call
 * (a fixed cap of 100 ms was too short for a probe's reconnect on a loaded
 * machine), and leaves the call most of its budget; under an outage only
 * the calls arriving while a probe is in flight pay it (one probe per
 * cool-down, each in flight for at most the time budget). */
#define PROBE_POLL_US 500

static int allowed(rlaas_node_t *rd, int64_t deadline)
{
    int64_t now = rlaas_clock_us();
    int64_t until = now + (int64_t)rd->conf.timeout_ms * 250;

    if (until > deadline)
        until = deadline;

    for (;;) {
        if (rlaas_breaker_allow(&rd->breaker, now))
            return 1;
        if (!rlaas_breaker_probing(&rd->breaker) || now >= until)
            return 0;
        usleep(PROBE_POLL_US);
        now = rlaas_clock_us();
    }
}

/* What the scripts accept, checked before anything is sent. */
static const char *call_error(const rlaas_call_t *calls, int n)
{
    int i, lease;

    if (n < 1 || n > RLAAS_CALL_POLICIES_MAX)
        return "1 to 8 policies per call";
    lease = rlaas_call_lease(calls, n);
    for (i = 0; i < n; i++) {
        if (calls[i].key_len > RLAAS_CALL_KEY_MAX)
            return "key too long";
        if (calls[i].strategy < 0 ||
            (calls[i].strategy >= RLAAS_STRATEGY_COUNT &&
             (calls[i].strategy != RLAAS_BAN || n < 2) &&
             calls[i].strategy != RLAAS_CONCURRENCY))
            return "no such strategy";
        if (calls[i].strategy == RLAAS_CONCURRENCY &&
            (calls[i].token == NULL || calls[i].lease_want > 0 ||
             calls[i].credit))
            return "a concurrency limit takes a token, no lease or credit";
        if (lease && (calls[i].lease_want < 0 || calls[i].token != NULL ||
                      calls[i].strategy >= RLAAS_STRATEGY_COUNT ||
                      calls[i].strategy == RLAAS_STRATEGY_SLIDING_LOG))
            return "a lease's policies: no sliding log, ban or concurrency";
        if ((calls[i].lease_back != 0 || calls[i].lease_back_at != 0) &&
            (calls[i].lease_want <= 0 || calls[i].lease_back < 0 ||
             calls[i].lease_back_at < 0))
            return "units given back go with a lease";
        if (calls[i].credit != calls[0].credit ||
            (calls[i].credit &&
             (calls[i].strategy >= RLAAS_STRATEGY_COUNT ||
              calls[i].lease_want > 0 || calls[i].credit_age < 0)))
            return "credits go alone, one per policy";
        if (calls[i].release != calls[0].release ||
            (calls[i].release && (calls[i].strategy != RLAAS_CONCURRENCY ||
                                  calls[i].token == NULL)))
            return "releases go alone, one per concurrency limit";
        if (calls[i].forget != calls[0].forget ||
            (calls[i].forget &&
             (calls[i].credit || calls[i].release || calls[i].lease_want > 0)))
            return "forgets go alone";
    }
    return NULL;
}

void rlaas_node_run(rlaas_node_t *rd, rlaas_job_t *job, int64_t deadline)
{
    const char *bad = call_error(job->calls, job->n);
    group_t g;

    job->e = RLAAS_RERR_NONE;
    job->noscript = 0;
    job->redirect = RLAAS_REDIRECT_NONE;
    job->detail[0] = '\0';
    if (bad != NULL) {
        job->e = RLAAS_RERR_REPLY;
        apr_cpystrn(job->detail, bad, RLAAS_DETAIL_MAX);
        return;
    }
    if (!allowed(rd, deadline)) {
        job->e = circuit_open(rd, job->detail);
        return;
    }
    g.rd = rd;
    g.deadline = deadline;
    if (rd->pipe != NULL) {
        rlaas_pipe_job_t pj;

        pj.data = job;
        /* Not counted by the breaker: the group ahead, whose slowness
         * this is, counts for itself. */
        if (rlaas_pipe_submit(rd->pipe, &pj, g.deadline, run_pipe_group, &g) !=
            0) {
            job->e = RLAAS_RERR_POOL;
            apr_cpystrn(job->detail, "no turn to send within the timeout",
                        RLAAS_DETAIL_MAX);
        }
    }
    else {
        run_group(&g, &job, 1);
    }
}

int64_t rlaas_node_deadline(const rlaas_node_t *rd)
{
    return rlaas_clock_us() + (int64_t)rd->conf.timeout_ms * 1000;
}

/* One connection opened before the child takes requests: a child's first
 * request does not pay the connect, AUTH and TLS handshake inside its time
 * budget (found by make soak: new prefork children behind TLS on a loaded
 * machine failed their first request). Its own budget is twice a call's,
 * at least WARM_MIN_US (a handshake is several round trips), and ends by
 * not_after, shared by the child's engines. Not a call: nothing is counted
 * by the circuit, and a failure leaves the slot closed for the first
 * request to open as before. */
#define WARM_MIN_US 1000000

rlaas_rerr_e rlaas_node_warm(rlaas_node_t *rd, int64_t not_after, char *detail)
{
    int64_t now = rlaas_clock_us();
    int64_t budget = (int64_t)rd->conf.timeout_ms * 2000;
    group_t g;
    rlaas_conn_t *c;
    rlaas_rerr_e e;
    int dropped;

    detail[0] = '\0';
    if (now >= not_after) {
        apr_cpystrn(detail, "no time left for it", RLAAS_DETAIL_MAX);
        return RLAAS_RERR_TIMEOUT;
    }
    if (budget < WARM_MIN_US)
        budget = WARM_MIN_US;
    g.rd = rd;
    g.deadline = now + budget < not_after ? now + budget : not_after;
    /* A host name's or the sentinels' first answer first, and taken as
     * seen: found only later, it would make the first request drop this
     * connection as one to an address of the past (follow). */
    if (rd->resolver != NULL)
        rlaas_resolver_wait_first(rd->resolver, g.deadline);
    follow(rd);
    if (rlaas_pool_acquire(rd->pool, g.deadline, &c, &dropped) !=
        RLAAS_RERR_NONE) {
        apr_cpystrn(detail, "no pooled connection", RLAAS_DETAIL_MAX);
        return RLAAS_RERR_POOL;
    }
    if (dropped)
        closed(rd);
    e = c->ctx != NULL ? RLAAS_RERR_NONE : open_conn(&g, c, detail);
    rlaas_pool_release(rd->pool, c);
    return e;
}

/* A connection of the pool, as a group takes one; the caller has cleared
 * detail and checked *stop (rlaas_redis_each_node, the cluster's walk). */
rlaas_rerr_e rlaas_node_each(rlaas_node_t *rd, int64_t deadline,
                             rlaas_redis_conn_fn fn, void *baton, char *detail,
                             int *stop)
{
    group_t g = {rd, deadline};
    rlaas_conn_t *c;
    rlaas_rerr_e e;
    int dropped, was_open;

    follow(rd);
    if (rlaas_pool_acquire(rd->pool, deadline, &c, &dropped) !=
        RLAAS_RERR_NONE) {
        apr_cpystrn(detail, "no pooled connection became free in time",
                    RLAAS_DETAIL_MAX);
        return RLAAS_RERR_POOL;
    }
    if (c->ctx != NULL && rlaas_conn_is_stale(c)) {
        rlaas_conn_close(c);
        dropped = 1;
    }
    if (dropped)
        closed(rd);
    e = c->ctx != NULL ? RLAAS_RERR_NONE : open_conn(&g, c, detail);
    was_open = c->ctx != NULL;
    if (e == RLAAS_RERR_NONE &&
        (e = fn(baton, c, deadline, detail, stop)) != RLAAS_RERR_NONE)
        rlaas_conn_close(c);
    if (was_open && c->ctx == NULL)
        closed(rd);
    rlaas_pool_release(rd->pool, c);
    return e;
}

int rlaas_node_connections(const rlaas_node_t *rd)
{
    return __atomic_load_n(&rd->open, __ATOMIC_RELAXED);
}

rlaas_rerr_e rlaas_node_eval(rlaas_node_t *rd, const rlaas_call_t *calls, int n,
                             rlaas_verdict_t *v, char *detail)
{
    rlaas_job_t job;

    job.calls = calls;
    job.n = n;
    job.v = v;
    rlaas_node_run(rd, &job, rlaas_node_deadline(rd));
    detail[0] = '\0';
    if (job.e != RLAAS_RERR_NONE)
        memcpy(detail, job.detail, RLAAS_DETAIL_MAX);
    return job.e;
}
