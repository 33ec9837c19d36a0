#include "rlaas_cluster.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "apr_strings.h"

#include "rlaas_clock.h"
#include "rlaas_slot.h"

#define MAP_REFRESH_US  10000000
#define MAP_POKE_GAP_US 200000
#define REDIRECTS_MAX   2

typedef struct {
    char host[RLAAS_ADDR_MAX];
    int port;
    rlaas_redis_t *rd;
} node_t;

struct rlaas_cluster_t {
    apr_pool_t *pool;   /* the nodes' engines: allocated under mu only */
    pthread_mutex_t mu; /* guards adding nodes and the thread's state */
    pthread_cond_t cond;
    pthread_t thread;
    int has_thread, stop, poked;
    rlaas_redis_conf_t tmpl; /* each node's settings but host and port */
    rlaas_redis_events_t ev;
    node_t nodes[RLAAS_CLUSTER_NODES_MAX];
    int nnodes; /* published with release: nodes[0..nnodes) are whole */
    /* the slot map: node index + 1, 0 while unknown */
    unsigned short slot_node[RLAAS_SLOTS];
};

int rlaas_cluster_hostport(const char *s, char *host, size_t size, int *port)
{
    const char *colon = strrchr(s, ':');
    size_t hl;

    if (colon == NULL || colon == s)
        return 0;
    hl = (size_t)(colon - s);
    if (s[0] == '[' && hl >= 2 && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl == 0 || hl >= size)
        return 0;
    memcpy(host, s, hl);
    host[hl] = '\0';
    *port = atoi(colon + 1);
    return *port > 0 && *port < 65536;
}

/* ---- nodes ---- */

static int find(rlaas_cluster_t *cl, const char *host, int port)
{
    int n = __atomic_load_n(&cl->nnodes, __ATOMIC_ACQUIRE), i;

    for (i = 0; i < n; i++) {
        if (cl->nodes[i].port == port && strcmp(cl->nodes[i].host, host) == 0)
            return i;
    }
    return -1;
}

/* The node's index, its engine made on first sight; -1 when the table is
 * full or the engine can't be made. */
static int node_for(rlaas_cluster_t *cl, const char *host, int port)
{
    int i = find(cl, host, port);
    rlaas_redis_conf_t c;
    node_t *nd;

    if (i >= 0)
        return i;
    pthread_mutex_lock(&cl->mu);
    if ((i = find(cl, host, port)) < 0 &&
        cl->nnodes < RLAAS_CLUSTER_NODES_MAX && strlen(host) < RLAAS_ADDR_MAX) {
        nd = &cl->nodes[cl->nnodes];
        memcpy(nd->host, host, strlen(host) + 1);
        nd->port = port;
        c = cl->tmpl;
        c.host = nd->host;
        c.port = port;
        c.is_unix = 0;
        c.cluster_n = 0;
        c.sentinel = NULL;
        nd->rd = rlaas_redis_create(cl->pool, &c, &cl->ev);
        if (nd->rd != NULL) {
            i = cl->nnodes;
            __atomic_store_n(&cl->nnodes, i + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&cl->mu);
    return i;
}

static void set_slot(rlaas_cluster_t *cl, int slot, int node)
{
    __atomic_store_n(&cl->slot_node[slot], (unsigned short)(node + 1),
                     __ATOMIC_RELAXED);
}

/* ---- the slot map ---- */

static struct timeval tv_us(int64_t us)
{
    struct timeval tv;

    tv.tv_sec = (time_t)(us / 1000000);
    tv.tv_usec = (suseconds_t)(us % 1000000);
    return tv;
}

/* One CLUSTER SLOTS reply (asked of node `from`) into the map. */
static int apply_slots(rlaas_cluster_t *cl, const redisReply *rep,
                       const node_t *from)
{
    size_t i;

    if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0)
        return 0;
    for (i = 0; i < rep->elements; i++) {
        const redisReply *e = rep->element[i], *m;
        long long a, b, s;
        int nd;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3)
            continue;
        m = e->element[2];
        if (e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER ||
            m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING ||
            m->element[1]->type != REDIS_REPLY_INTEGER)
            continue;
        a = e->element[0]->integer;
        b = e->element[1]->integer;
        /* an empty address: the node asked ("same host as you used") */
        nd = node_for(cl,
                      m->element[0]->len > 0 ? m->element[0]->str : from->host,
                      (int)m->element[1]->integer);
        for (s = a; nd >= 0 && s <= b && s < RLAAS_SLOTS && s >= 0; s++)
            set_slot(cl, (int)s, nd);
    }
    return 1;
}

static void *user_conn(rlaas_cluster_t *cl, const node_t *nd)
{
    int64_t t =
        (int64_t)(cl->tmpl.timeout_ms < 500 ? 500 : cl->tmpl.timeout_ms) * 1000;
    redisContext *ctx = redisConnectWithTimeout(nd->host, nd->port, tv_us(t));
    redisReply *rep = NULL;

    if (ctx == NULL || ctx->err || redisSetTimeout(ctx, tv_us(t)) != REDIS_OK)
        goto fail;
    if (cl->tmpl.password != NULL) {
        rep = cl->tmpl.username != NULL
                  ? redisCommand(ctx, "AUTH %s %s", cl->tmpl.username,
                                 cl->tmpl.password)
                  : redisCommand(ctx, "AUTH %s", cl->tmpl.password);
        if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
            goto fail;
        freeReplyObject(rep);
    }
    return ctx;
fail:
    if (rep != NULL)
        freeReplyObject(rep);
    if (ctx != NULL)
        redisFree(ctx);
    return NULL;
}

/* Asks the known nodes in turn, the seeds first. (TLS clusters: the map
 * is then learnt from MOVED alone.) */
static void refresh(rlaas_cluster_t *cl)
{
    int n = __atomic_load_n(&cl->nnodes, __ATOMIC_ACQUIRE), i;

    if (cl->tmpl.tls)
        return;
    for (i = 0; i < n; i++) {
        redisContext *ctx = user_conn(cl, &cl->nodes[i]);
        redisReply *rep;
        int ok = 0;

        if (ctx == NULL)
            continue;
        rep = redisCommand(ctx, "CLUSTER SLOTS");
        if (rep != NULL) {
            ok = apply_slots(cl, rep, &cl->nodes[i]);
            freeReplyObject(rep);
        }
        redisFree(ctx);
        if (ok)
            return;
    }
}

static void *run(void *arg)
{
    rlaas_cluster_t *cl = arg;
    int64_t next = rlaas_clock_us(), not_before = 0;
    struct timespec ts;

    pthread_mutex_lock(&cl->mu);
    while (!cl->stop) {
        int64_t now = rlaas_clock_us();

        if (now < next && !(cl->poked && now >= not_before)) {
            rlaas_clock_timespec(
                cl->poked && not_before < next ? not_before : next, &ts);
            pthread_cond_timedwait(&cl->cond, &cl->mu, &ts);
            continue;
        }
        cl->poked = 0;
        pthread_mutex_unlock(&cl->mu);
        refresh(cl);
        now = rlaas_clock_us();
        next = now + MAP_REFRESH_US;
        not_before = now + MAP_POKE_GAP_US;
        pthread_mutex_lock(&cl->mu);
    }
    pthread_mutex_unlock(&cl->mu);
    return NULL;
}

static void poke(rlaas_cluster_t *cl)
{
    pthread_mutex_lock(&cl->mu);
    cl->poked = 1;
    pthread_cond_signal(&cl->cond);
    pthread_mutex_unlock(&cl->mu);
}

static apr_status_t cluster_cleanup(void *data)
{
    rlaas_cluster_t *cl = data;

    if (cl->has_thread) {
        pthread_mutex_lock(&cl->mu);
        cl->stop = 1;
        pthread_cond_signal(&cl->cond);
        pthread_mutex_unlock(&cl->mu);
        pthread_join(cl->thread, NULL);
        pthread_cond_destroy(&cl->cond);
        cl->has_thread = 0;
    }
    return APR_SUCCESS;
}

rlaas_cluster_t *rlaas_cluster_create(apr_pool_t *p,
                                      const rlaas_redis_conf_t *c,
                                      const rlaas_redis_events_t *ev)
{
    rlaas_cluster_t *cl = apr_pcalloc(p, sizeof(*cl));
    pthread_condattr_t attr;
    int i;

    if (apr_pool_create(&cl->pool, p) != APR_SUCCESS)
        return NULL;
    pthread_mutex_init(&cl->mu, NULL);
    cl->tmpl = *c;
    cl->ev = *ev;
    for (i = 0; i < c->cluster_n; i++)
        node_for(cl, c->cluster_hosts[i], c->cluster_ports[i]);
    if (cl->nnodes == 0)
        return NULL;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (pthread_cond_init(&cl->cond, &attr) == 0) {
        if (pthread_create(&cl->thread, NULL, run, cl) == 0)
            cl->has_thread = 1;
        else
            pthread_cond_destroy(&cl->cond);
    }
    pthread_condattr_destroy(&attr);
    /* before the nodes' engines (made in the subpool) go */
    apr_pool_pre_cleanup_register(p, cl, cluster_cleanup);
    return cl;
}

/* ---- a call ---- */

/* The calls of one slot, following redirects. */
static rlaas_rerr_e one_slot(rlaas_cluster_t *cl, const rlaas_call_t *call,
                             int n, rlaas_verdict_t *v, char *detail)
{
    int slot = rlaas_slot(call->key, call->key_len);
    int nd = (int)__atomic_load_n(&cl->slot_node[slot], __ATOMIC_RELAXED) - 1;
    int64_t deadline;
    rlaas_call_t hop[RLAAS_CALL_POLICIES_MAX];
    rlaas_job_t job;
    int k;

    /* a slot not known yet: any node says where it is (MOVED) */
    if (nd < 0)
        nd = 0;
    deadline = rlaas_redis_deadline(cl->nodes[nd].rd);
    memcpy(hop, call, sizeof(*call) * (size_t)n);
    job.v = v;
    job.n = n;
    for (k = 0;; k++) {
        char host[RLAAS_ADDR_MAX];
        int port, to;

        job.calls = hop;
        rlaas_redis_run(cl->nodes[nd].rd, &job, deadline);
        /* a node that fails (gone, its circuit open) may have been
         * replaced by its replica: ask for the map again soon */
        if (rlaas_rerr_is_redis_failure(job.e) || job.e == RLAAS_RERR_CIRCUIT)
            poke(cl);
        if (job.redirect == RLAAS_REDIRECT_NONE || k == REDIRECTS_MAX)
            break;
        if (!rlaas_cluster_hostport(job.redirect_to, host, sizeof(host),
                                    &port) ||
            (to = node_for(cl, host, port)) < 0)
            break;
        memcpy(hop, call, sizeof(*call) * (size_t)n);
        if (job.redirect == RLAAS_REDIRECT_MOVED) {
            set_slot(cl, job.redirect_slot, to);
            poke(cl);
        }
        else {
            hop[0].asking = 1;
        }
        nd = to;
    }
    detail[0] = '\0';
    if (job.e != RLAAS_RERR_NONE)
        memcpy(detail, job.detail, RLAAS_DETAIL_MAX);
    return job.e;
}

/* A ban names the policy it follows by its place among all the calls
 * (1-based); within a slot's group that place is the group's own. The
 * ban's key carries that policy's identity as its hash tag, so the two
 * are always in one group. */
static void ban_place(rlaas_call_t *grp, const int *at, int k)
{
    int b, j, own;

    for (b = 0; b < k; b++) {
        if (grp[b].strategy != (rlaas_strategy_e)RLAAS_CALL_BAN ||
            grp[b].mode == 0)
            continue;
        for (own = 0, j = 0; j < k && own == 0; j++)
            if (at[j] == grp[b].mode - 1)
                own = j + 1;
        grp[b].mode = own;
    }
}

rlaas_rerr_e rlaas_cluster_eval(rlaas_cluster_t *cl, const rlaas_call_t *calls,
                                int n, rlaas_verdict_t *v, char *detail)
{
    rlaas_call_t grp[RLAAS_CALL_POLICIES_MAX];
    rlaas_verdict_t gv[RLAAS_CALL_POLICIES_MAX];
    int at[RLAAS_CALL_POLICIES_MAX], done[RLAAS_CALL_POLICIES_MAX] = {0};
    int i, j, k;

    if (n < 1 || n > RLAAS_CALL_POLICIES_MAX) {
        apr_cpystrn(detail, "1 to 8 policies per call", RLAAS_DETAIL_MAX);
        return RLAAS_RERR_REPLY;
    }
    for (i = 0; i < n; i++) {
        int slot = rlaas_slot(calls[i].key, calls[i].key_len);
        rlaas_rerr_e e;

        if (done[i])
            continue;
        for (j = i, k = 0; j < n; j++) {
            if (done[j] || rlaas_slot(calls[j].key, calls[j].key_len) != slot)
                continue;
            done[j] = 1;
            at[k] = j;
            grp[k++] = calls[j];
        }
        ban_place(grp, at, k);
        if ((e = one_slot(cl, grp, k, gv, detail)) != RLAAS_RERR_NONE)
            return e;
        for (j = 0; j < k; j++)
            v[at[j]] = gv[j];
    }
    return RLAAS_RERR_NONE;
}
