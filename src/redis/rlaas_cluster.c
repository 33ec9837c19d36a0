#include "rlaas_cluster.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>

#include "apr_strings.h"

#include "rlaas_clock.h"
#include "rlaas_conn.h"
#include "rlaas_nodes.h"
#include "rlaas_slot.h"

#define MAP_REFRESH_US  10000000
#define MAP_POKE_GAP_US 200000
#define REDIRECTS_MAX   2
/* between tries of a call Redis answered TRYAGAIN */
#define AGAIN_PAUSE_US 10000

/* A node's engine, in a pool of its own: forgetting the node destroys the
 * pool, and with it the engine's connections. */
typedef struct {
    apr_pool_t *pool;
    rlaas_node_t *rd;
} node_engine_t;

struct rlaas_cluster_t {
    pthread_mutex_t mu; /* guards the thread's state */
    pthread_cond_t cond;
    pthread_t thread;
    int has_thread, stop, poked;
    int closing;             /* the child is going: nothing more to report */
    rlaas_redis_conf_t tmpl; /* each node's settings but host and port */
    rlaas_redis_events_t ev;
    rlaas_nodes_t *nodes; /* the nodes and the slot map */
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

static void *node_make(void *baton, const char *host, int port)
{
    rlaas_cluster_t *cl = baton;
    rlaas_redis_conf_t c = cl->tmpl;
    node_engine_t *ne;
    apr_pool_t *p;

    /* unmanaged: made and destroyed by any thread, sharing nothing */
    if (apr_pool_create_unmanaged_ex(&p, NULL, NULL) != APR_SUCCESS)
        return NULL;
    ne = apr_pcalloc(p, sizeof(*ne));
    ne->pool = p;
    c.host = apr_pstrdup(p, host);
    c.port = port;
    c.is_unix = 0;
    c.cluster_n = 0;
    c.sentinel = NULL;
    if ((ne->rd = rlaas_node_create(p, &c, &cl->ev)) == NULL) {
        apr_pool_destroy(p);
        return NULL;
    }
    return ne;
}

/* A node forgotten: its connections are closed, and counted so. */
static void node_destroy(void *baton, void *engine)
{
    rlaas_cluster_t *cl = baton;
    node_engine_t *ne = engine;
    int open = rlaas_node_connections(ne->rd);

    apr_pool_destroy(ne->pool);
    if (open > 0 && !cl->closing && cl->ev.connection != NULL)
        cl->ev.connection(cl->ev.baton, -open);
}

static rlaas_node_t *rd_of(const rlaas_hold_t *h)
{
    return ((node_engine_t *)h->engine)->rd;
}

/* Any node to start from when none is known (every one left): the seeds. */
static int seed(rlaas_cluster_t *cl, rlaas_hold_t *h)
{
    int i;

    for (i = 0; i < cl->tmpl.cluster_n; i++) {
        if (rlaas_nodes_at(cl->nodes, cl->tmpl.cluster_hosts[i],
                           cl->tmpl.cluster_ports[i], h))
            return 1;
    }
    return 0;
}

/* ---- the slot map ---- */

/* The node of one CLUSTER SLOTS entry's master, held once in holds (of
 * RLAAS_CLUSTER_NODES_MAX); -1 when it has no room. */
static int entry_node(rlaas_cluster_t *cl, const redisReply *m,
                      const char *from, rlaas_hold_t *holds, int *nh)
{
    rlaas_hold_t h;
    int k;

    /* an empty address: the node asked ("same host as you used") */
    if (!rlaas_nodes_at(cl->nodes,
                        m->element[0]->len > 0 ? m->element[0]->str : from,
                        (int)m->element[1]->integer, &h))
        return -1;
    for (k = 0; k < *nh && holds[k].i != h.i; k++)
        ;
    if (k == *nh && *nh < RLAAS_CLUSTER_NODES_MAX) {
        holds[(*nh)++] = h;
        return h.i;
    }
    rlaas_nodes_release(cl->nodes, &h); /* held already, or no room */
    return k < *nh ? holds[k].i : -1;
}

/* One CLUSTER SLOTS reply (asked of node `from`) becomes the whole map:
 * the nodes it does not name are forgotten. */
static int apply_slots(rlaas_cluster_t *cl, const redisReply *rep,
                       const char *from)
{
    rlaas_hold_t holds[RLAAS_CLUSTER_NODES_MAX];
    short *owner;
    int nh = 0, ranges = 0, k;
    size_t i;

    if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0 ||
        (owner = malloc(sizeof(short) * RLAAS_SLOTS)) == NULL)
        return 0;
    memset(owner, 0xff, sizeof(short) * RLAAS_SLOTS); /* all -1 */
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
        ranges++;
        /* a node with no room (more masters than the table holds): its
         * slots stay unknown, and a call there follows MOVED */
        nd = entry_node(cl, m, from, holds, &nh);
        for (s = a; nd >= 0 && s <= b && s < RLAAS_SLOTS && s >= 0; s++)
            owner[s] = (short)nd;
    }
    if (ranges > 0)
        rlaas_nodes_set_map(cl->nodes, owner);
    for (k = 0; k < nh; k++)
        rlaas_nodes_release(cl->nodes, &holds[k]);
    free(owner);
    return ranges > 0;
}

/* Each step's bound: the configured timeout, at least half a second
 * (this thread holds up no request). */
static int64_t step_deadline(const rlaas_cluster_t *cl)
{
    int64_t ms = cl->tmpl.timeout_ms < 500 ? 500 : cl->tmpl.timeout_ms;

    return rlaas_clock_us() + ms * 1000;
}

/* A connection to one node as a data connection makes it (AUTH), for
 * CLUSTER SLOTS; 0 if none. */
static int user_conn(const rlaas_cluster_t *cl, const char *host, int port,
                     rlaas_conn_t *c)
{
    rlaas_conn_params_t p;
    char why[RLAAS_DETAIL_MAX];

    if (port <= 0)
        return 0; /* port 0 would name a unix socket */
    memset(&p, 0, sizeof(p));
    p.addr = host;
    p.port = port;
    p.username = cl->tmpl.username;
    p.password = cl->tmpl.password;
    return rlaas_conn_open(c, &p, step_deadline(cl), why) == RLAAS_RERR_NONE;
}

/* Asks the known nodes in turn, then the seeds (a child whose nodes all
 * left finds the cluster again). (TLS clusters: the map is then learnt
 * from MOVED alone.) */
static void refresh(rlaas_cluster_t *cl)
{
    enum { ASKED_MAX = RLAAS_CLUSTER_NODES_MAX + 16 };
    char hosts[ASKED_MAX][RLAAS_NODE_HOST_MAX];
    int ports[ASKED_MAX], n, i;

    if (cl->tmpl.tls)
        return;
    n = rlaas_nodes_addrs(cl->nodes, hosts, ports, RLAAS_CLUSTER_NODES_MAX);
    for (i = 0; i < cl->tmpl.cluster_n && n < ASKED_MAX; i++) {
        apr_cpystrn(hosts[n], cl->tmpl.cluster_hosts[i], RLAAS_NODE_HOST_MAX);
        ports[n++] = cl->tmpl.cluster_ports[i];
    }
    for (i = 0; i < n; i++) {
        rlaas_conn_t c = {NULL, NULL, 0};
        char why[RLAAS_DETAIL_MAX];
        redisReply *rep;
        int ok = 0;

        if (!user_conn(cl, hosts[i], ports[i], &c))
            continue;
        rep = rlaas_conn_command(&c, step_deadline(cl), why, "CLUSTER SLOTS");
        if (rep != NULL) {
            ok = apply_slots(cl, rep, hosts[i]);
            freeReplyObject(rep);
        }
        rlaas_conn_close(&c);
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
    cl->closing = 1;
    rlaas_nodes_destroy(cl->nodes);
    cl->nodes = NULL;
    pthread_mutex_destroy(&cl->mu);
    return APR_SUCCESS;
}

rlaas_cluster_t *rlaas_cluster_create(apr_pool_t *p,
                                      const rlaas_redis_conf_t *c,
                                      const rlaas_redis_events_t *ev)
{
    rlaas_cluster_t *cl = apr_pcalloc(p, sizeof(*cl));
    rlaas_nodes_ops_t ops = {cl, node_make, node_destroy};
    pthread_condattr_t attr;
    rlaas_hold_t h;
    int i;

    cl->tmpl = *c;
    cl->ev = *ev;
    if ((cl->nodes = rlaas_nodes_create(RLAAS_CLUSTER_NODES_MAX, &ops)) == NULL)
        return NULL;
    pthread_mutex_init(&cl->mu, NULL);
    apr_pool_cleanup_register(p, cl, cluster_cleanup, apr_pool_cleanup_null);
    for (i = 0; i < c->cluster_n; i++) {
        if (rlaas_nodes_at(cl->nodes, c->cluster_hosts[i], c->cluster_ports[i],
                           &h))
            rlaas_nodes_release(cl->nodes, &h);
    }
    if (rlaas_nodes_count(cl->nodes) == 0)
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
    return cl;
}

/* ---- a call ---- */

/* Not followed: the detail says why, not only where to. */
static void not_followed(rlaas_job_t *job)
{
    char to[RLAAS_HOSTPORT_MAX];

    memcpy(to, job->redirect_to, sizeof(to));
    snprintf(job->detail, RLAAS_DETAIL_MAX,
             "%s to %.72s not followed: no room for another node (%d, the "
             "slot map's, are known)",
             job->redirect == RLAAS_REDIRECT_MOVED ? "MOVED" : "ASK", to,
             RLAAS_CLUSTER_NODES_MAX);
}

/* TRYAGAIN: a short pause, if the budget leaves room for it and for the
 * call after it. */
static int pause_before_again(int64_t deadline)
{
    struct timespec ts = {0, AGAIN_PAUSE_US * 1000};

    if (rlaas_clock_left_us(deadline) < 2 * AGAIN_PAUSE_US)
        return 0;
    nanosleep(&ts, NULL);
    return 1;
}

/* The calls of one slot, following redirects; each node held while a
 * call runs on it. */
static rlaas_rerr_e one_slot(rlaas_cluster_t *cl, const rlaas_call_t *call,
                             int n, rlaas_verdict_t *v, char *detail)
{
    int slot = rlaas_slot(call->key, call->key_len);
    int64_t deadline;
    rlaas_call_t hop[RLAAS_CALL_POLICIES_MAX];
    rlaas_hold_t h, to;
    rlaas_job_t job;
    int k;

    /* a slot not known yet: any node says where it is (MOVED) */
    if (!rlaas_nodes_for_slot(cl->nodes, slot, &h) && !seed(cl, &h)) {
        apr_cpystrn(detail, "no cluster node can be reached", RLAAS_DETAIL_MAX);
        poke(cl);
        return RLAAS_RERR_CONNECT;
    }
    deadline = rlaas_node_deadline(rd_of(&h));
    memcpy(hop, call, sizeof(*call) * (size_t)n);
    job.v = v;
    job.n = n;
    for (k = 0;; k++) {
        char host[RLAAS_ADDR_MAX];
        int port;

        job.calls = hop;
        rlaas_node_run(rd_of(&h), &job, deadline);
        /* a node that fails (gone, its circuit open) may have been
         * replaced by its replica: ask for the map again soon */
        if (rlaas_rerr_is_redis_failure(job.e) || job.e == RLAAS_RERR_CIRCUIT)
            poke(cl);
        if (job.redirect == RLAAS_REDIRECT_AGAIN) {
            /* the same node, the same call (ASKING kept), while the
             * budget lasts: a migration moves a slot's few keys in ms */
            if (!pause_before_again(deadline))
                break;
            k--;
            continue;
        }
        if (job.redirect == RLAAS_REDIRECT_NONE || k == REDIRECTS_MAX)
            break;
        if (!rlaas_cluster_hostport(job.redirect_to, host, sizeof(host), &port))
            break;
        if (!rlaas_nodes_at(cl->nodes, host, port, &to)) {
            not_followed(&job);
            poke(cl); /* the new map forgets the nodes that left */
            break;
        }
        memcpy(hop, call, sizeof(*call) * (size_t)n);
        if (job.redirect == RLAAS_REDIRECT_MOVED) {
            /* the map learns it at once; the whole map soon, and with it
             * which nodes left */
            rlaas_nodes_moved(cl->nodes, job.redirect_slot, &to);
            poke(cl);
        }
        else {
            hop[0].asking = 1;
        }
        rlaas_nodes_release(cl->nodes, &h);
        h = to;
    }
    rlaas_nodes_release(cl->nodes, &h);
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
        if (grp[b].strategy != RLAAS_BAN || grp[b].mode == 0)
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
    /* a lease is all or nothing in one script, so its keys share a slot
     * (rlaas_lease.c asks none other): its reply (for each policy the
     * verdict, the grant, what it gave back, Redis' time) straight into
     * v */
    if (rlaas_call_lease(calls, n)) {
        for (i = 1; i < n; i++) {
            if (rlaas_slot(calls[i].key, calls[i].key_len) !=
                rlaas_slot(calls[0].key, calls[0].key_len)) {
                apr_cpystrn(detail, "a lease's keys in several slots",
                            RLAAS_DETAIL_MAX);
                return RLAAS_RERR_REPLY;
            }
        }
        return one_slot(cl, calls, n, v, detail);
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

rlaas_rerr_e rlaas_cluster_each(rlaas_cluster_t *cl, int64_t deadline,
                                rlaas_redis_conn_fn fn, void *baton,
                                char *detail, int *stop)
{
    char hosts[RLAAS_CLUSTER_NODES_MAX][RLAAS_NODE_HOST_MAX];
    int ports[RLAAS_CLUSTER_NODES_MAX];
    int n = rlaas_nodes_addrs(cl->nodes, hosts, ports, RLAAS_CLUSTER_NODES_MAX);
    rlaas_rerr_e e = RLAAS_RERR_NONE;
    int i;

    if (n == 0) {
        apr_cpystrn(detail, "no node of the Cluster is known yet",
                    RLAAS_DETAIL_MAX);
        return RLAAS_RERR_CONNECT;
    }
    for (i = 0; i < n && e == RLAAS_RERR_NONE && !*stop; i++) {
        rlaas_hold_t h;

        if (!rlaas_nodes_known(cl->nodes, hosts[i], ports[i], &h))
            continue; /* forgotten meanwhile: the map moved on */
        e = rlaas_node_each(rd_of(&h), deadline, fn, baton, detail, stop);
        rlaas_nodes_release(cl->nodes, &h);
    }
    return e;
}
