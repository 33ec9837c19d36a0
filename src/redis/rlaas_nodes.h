/*
 * The nodes of a Redis Cluster one child talks to, and the slot map that
 * leads to them. A node is known by its address and carries an engine of
 * its own (its connections, pipeline and circuit breaker), made and
 * destroyed through the callbacks. A call holds the node it runs on; a
 * node the map no longer leads to is forgotten (its engine destroyed, its
 * connections closed) as soon as no call holds it: when a whole new map
 * arrives (CLUSTER SLOTS), and when the table is full and room is needed.
 * So the table fills only with nodes the map names or calls hold, never
 * with nodes that left the cluster, however many come and go in a child's
 * life. POSIX threads only, no httpd headers.
 */
#ifndef RLAAS_NODES_H
#define RLAAS_NODES_H

#include "rlaas_slot.h"

/* Room for a node's host (a numeric address or a name). */
#define RLAAS_NODE_HOST_MAX 64

typedef struct rlaas_nodes_t rlaas_nodes_t;

typedef struct {
    void *baton;
    /* the engine of a node seen for the first time; NULL: it can't be */
    void *(*make)(void *baton, const char *host, int port);
    /* a node forgotten: no call holds it any more */
    void (*destroy)(void *baton, void *engine);
} rlaas_nodes_ops_t;

/* At most max nodes (1..RLAAS_NODES_MAX). NULL when out of memory. */
#define RLAAS_NODES_MAX 256
rlaas_nodes_t *rlaas_nodes_create(int max, const rlaas_nodes_ops_t *ops);

/* Destroys every engine; no call may hold a node any more. */
void rlaas_nodes_destroy(rlaas_nodes_t *ns);

/* A node held by a call: its engine stays until released. */
typedef struct {
    int i; /* -1: none */
    void *engine;
} rlaas_hold_t;

/* The node that owns slot, held; a slot the map does not know goes to any
 * node known (it answers MOVED). 0 when no node is known at all. */
int rlaas_nodes_for_slot(rlaas_nodes_t *ns, int slot, rlaas_hold_t *h);

/* The node at host:port, held, its engine made on first sight. 0 when
 * the table is full of nodes the map leads to or calls hold, or when the
 * engine can't be made. */
int rlaas_nodes_at(rlaas_nodes_t *ns, const char *host, int port,
                   rlaas_hold_t *h);

/* The node at host:port held if it is known and live now; 0 if not
 * (nothing is made). */
int rlaas_nodes_known(rlaas_nodes_t *ns, const char *host, int port,
                      rlaas_hold_t *h);
void rlaas_nodes_release(rlaas_nodes_t *ns, rlaas_hold_t *h);

/* MOVED: slot is the held node's now. */
void rlaas_nodes_moved(rlaas_nodes_t *ns, int slot, const rlaas_hold_t *h);

/* A whole new map (CLUSTER SLOTS): owner[slot] is the index (h.i) of a
 * node the caller holds, or -1 for a slot no node serves. Every node the
 * new map does not lead to is forgotten. */
void rlaas_nodes_set_map(rlaas_nodes_t *ns, const short *owner);

/* The addresses of the nodes known now (to ask one of them for the map):
 * at most max; returns how many. */
int rlaas_nodes_addrs(rlaas_nodes_t *ns, char (*hosts)[RLAAS_NODE_HOST_MAX],
                      int *ports, int max);

/* Nodes known now (forgotten ones still held by a call included). */
int rlaas_nodes_count(rlaas_nodes_t *ns);

#endif
