#include "rlaas_nodes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    NODE_FREE = 0, /* an empty entry */
    NODE_LIVE,     /* known */
    NODE_GONE      /* forgotten while calls held it: destroyed with the last */
} node_state_e;

typedef struct {
    char host[RLAAS_NODE_HOST_MAX];
    int port;
    void *engine;
    int users; /* calls holding it */
    node_state_e state;
} node_t;

struct rlaas_nodes_t {
    pthread_mutex_t mu; /* guards all below; never held while an engine is
                           destroyed or a call runs */
    rlaas_nodes_ops_t ops;
    int max;
    short map[RLAAS_SLOTS]; /* node index, -1 while unknown */
    node_t node[];
};

/* Engines to destroy once the lock is let go. */
typedef struct {
    void *engine[RLAAS_NODES_MAX];
    int n;
} trash_t;

static void empty_trash(rlaas_nodes_t *ns, trash_t *t)
{
    int i;

    for (i = 0; i < t->n; i++)
        ns->ops.destroy(ns->ops.baton, t->engine[i]);
    t->n = 0;
}

rlaas_nodes_t *rlaas_nodes_create(int max, const rlaas_nodes_ops_t *ops)
{
    rlaas_nodes_t *ns;
    int s;

    if (max < 1 || max > RLAAS_NODES_MAX)
        return NULL;
    ns = calloc(1, sizeof(*ns) + (size_t)max * sizeof(node_t));
    if (ns == NULL)
        return NULL;
    pthread_mutex_init(&ns->mu, NULL);
    ns->ops = *ops;
    ns->max = max;
    for (s = 0; s < RLAAS_SLOTS; s++)
        ns->map[s] = -1;
    return ns;
}

void rlaas_nodes_destroy(rlaas_nodes_t *ns)
{
    int i;

    if (ns == NULL)
        return;
    for (i = 0; i < ns->max; i++) {
        if (ns->node[i].state != NODE_FREE)
            ns->ops.destroy(ns->ops.baton, ns->node[i].engine);
    }
    pthread_mutex_destroy(&ns->mu);
    free(ns);
}

static void hold(rlaas_nodes_t *ns, int i, rlaas_hold_t *h)
{
    ns->node[i].users++;
    h->i = i;
    h->engine = ns->node[i].engine;
}

/* Out of the table: at once when no call holds it, else with the last. */
static void forget(rlaas_nodes_t *ns, int i, trash_t *t)
{
    node_t *nd = &ns->node[i];

    if (nd->users > 0) {
        nd->state = NODE_GONE;
        return;
    }
    t->engine[t->n++] = nd->engine;
    memset(nd, 0, sizeof(*nd));
}

/* Forgets the live nodes the map does not lead to; keep[i] set: spared. */
static void forget_unmapped(rlaas_nodes_t *ns, char *keep, trash_t *t)
{
    int s, i;

    for (s = 0; s < RLAAS_SLOTS; s++) {
        if (ns->map[s] >= 0)
            keep[ns->map[s]] = 1;
    }
    for (i = 0; i < ns->max; i++) {
        if (ns->node[i].state == NODE_LIVE && !keep[i])
            forget(ns, i, t);
    }
}

int rlaas_nodes_for_slot(rlaas_nodes_t *ns, int slot, rlaas_hold_t *h)
{
    int i;

    h->i = -1;
    h->engine = NULL;
    pthread_mutex_lock(&ns->mu);
    i = slot >= 0 && slot < RLAAS_SLOTS ? ns->map[slot] : -1;
    if (i < 0 || ns->node[i].state != NODE_LIVE) {
        /* unknown: any node says where the slot is */
        for (i = 0; i < ns->max && ns->node[i].state != NODE_LIVE; i++)
            ;
    }
    if (i < ns->max)
        hold(ns, i, h);
    pthread_mutex_unlock(&ns->mu);
    return h->i >= 0;
}

static int find(const rlaas_nodes_t *ns, const char *host, int port)
{
    int i;

    for (i = 0; i < ns->max; i++) {
        const node_t *nd = &ns->node[i];

        if (nd->state != NODE_FREE && nd->port == port &&
            strcmp(nd->host, host) == 0)
            return i;
    }
    return -1;
}

static int free_entry(const rlaas_nodes_t *ns)
{
    int i;

    for (i = 0; i < ns->max; i++) {
        if (ns->node[i].state == NODE_FREE)
            return i;
    }
    return -1;
}

int rlaas_nodes_at(rlaas_nodes_t *ns, const char *host, int port,
                   rlaas_hold_t *h)
{
    size_t len = strlen(host);
    trash_t t;
    int i;

    h->i = -1;
    h->engine = NULL;
    t.n = 0;
    if (len >= RLAAS_NODE_HOST_MAX)
        return 0;
    pthread_mutex_lock(&ns->mu);
    if ((i = find(ns, host, port)) >= 0) {
        ns->node[i].state = NODE_LIVE; /* forgotten, and back */
        hold(ns, i, h);
    }
    else {
        if ((i = free_entry(ns)) < 0) {
            /* full: room is made by the nodes no slot leads to */
            char keep[RLAAS_NODES_MAX] = {0};

            forget_unmapped(ns, keep, &t);
            i = free_entry(ns);
        }
        if (i >= 0 && (ns->node[i].engine =
                           ns->ops.make(ns->ops.baton, host, port)) != NULL) {
            memcpy(ns->node[i].host, host, len + 1);
            ns->node[i].port = port;
            ns->node[i].state = NODE_LIVE;
            hold(ns, i, h);
        }
    }
    pthread_mutex_unlock(&ns->mu);
    empty_trash(ns, &t);
    return h->i >= 0;
}

int rlaas_nodes_known(rlaas_nodes_t *ns, const char *host, int port,
                      rlaas_hold_t *h)
{
    int i;

    h->i = -1;
    h->engine = NULL;
    pthread_mutex_lock(&ns->mu);
    if ((i = find(ns, host, port)) >= 0 && ns->node[i].state == NODE_LIVE)
        hold(ns, i, h);
    pthread_mutex_unlock(&ns->mu);
    return h->i >= 0;
}

void rlaas_nodes_release(rlaas_nodes_t *ns, rlaas_hold_t *h)
{
    node_t *nd;
    void *gone = NULL;

    if (h->i < 0)
        return;
    pthread_mutex_lock(&ns->mu);
    nd = &ns->node[h->i];
    if (--nd->users == 0 && nd->state == NODE_GONE) {
        gone = nd->engine;
        memset(nd, 0, sizeof(*nd));
    }
    pthread_mutex_unlock(&ns->mu);
    if (gone != NULL)
        ns->ops.destroy(ns->ops.baton, gone);
    h->i = -1;
    h->engine = NULL;
}

void rlaas_nodes_moved(rlaas_nodes_t *ns, int slot, const rlaas_hold_t *h)
{
    if (h->i < 0 || slot < 0 || slot >= RLAAS_SLOTS)
        return;
    pthread_mutex_lock(&ns->mu);
    if (ns->node[h->i].state == NODE_LIVE)
        ns->map[slot] = (short)h->i;
    pthread_mutex_unlock(&ns->mu);
}

void rlaas_nodes_set_map(rlaas_nodes_t *ns, const short *owner)
{
    char keep[RLAAS_NODES_MAX] = {0};
    trash_t t;
    int s;

    t.n = 0;
    pthread_mutex_lock(&ns->mu);
    for (s = 0; s < RLAAS_SLOTS; s++) {
        int i = owner[s];

        if (i >= 0 && i < ns->max && ns->node[i].state != NODE_FREE) {
            ns->node[i].state = NODE_LIVE;
            ns->map[s] = (short)i;
        }
        else {
            ns->map[s] = -1;
        }
    }
    forget_unmapped(ns, keep, &t);
    pthread_mutex_unlock(&ns->mu);
    empty_trash(ns, &t);
}

int rlaas_nodes_addrs(rlaas_nodes_t *ns, char (*hosts)[RLAAS_NODE_HOST_MAX],
                      int *ports, int max)
{
    int i, n = 0;

    pthread_mutex_lock(&ns->mu);
    for (i = 0; i < ns->max && n < max; i++) {
        if (ns->node[i].state != NODE_LIVE)
            continue;
        memcpy(hosts[n], ns->node[i].host, RLAAS_NODE_HOST_MAX);
        ports[n++] = ns->node[i].port;
    }
    pthread_mutex_unlock(&ns->mu);
    return n;
}

int rlaas_nodes_count(rlaas_nodes_t *ns)
{
    int i, n = 0;

    pthread_mutex_lock(&ns->mu);
    for (i = 0; i < ns->max; i++)
        n += ns->node[i].state != NODE_FREE;
    pthread_mutex_unlock(&ns->mu);
    return n;
}
