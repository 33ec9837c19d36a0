/* The Cluster client's node list (rlaas_nodes.h): bounded, and never full
 * of nodes that left. Nodes come and go far more often than the bound,
 * through whole maps (CLUSTER SLOTS) or MOVED alone; a node a call holds
 * outlives the map that forgot it; with threads calling while the map
 * changes under them, no engine is used after it was destroyed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <cmocka.h>

#include "rlaas_nodes.h"

#define MAX    64
#define MAGIC  0x6e6f6465
#define POISON 0xdeadbeef

typedef struct {
    unsigned magic;
    char host[RLAAS_NODE_HOST_MAX];
    int port;
} engine_t;

typedef struct {
    int made, destroyed, refuse;
    pthread_mutex_t mu;
} world_t;

static void *make(void *baton, const char *host, int port)
{
    world_t *w = baton;
    engine_t *e;

    if (w->refuse)
        return NULL;
    e = calloc(1, sizeof(*e));
    e->magic = MAGIC;
    snprintf(e->host, sizeof(e->host), "%s", host);
    e->port = port;
    pthread_mutex_lock(&w->mu);
    w->made++;
    pthread_mutex_unlock(&w->mu);
    return e;
}

static void destroy(void *baton, void *engine)
{
    world_t *w = baton;
    engine_t *e = engine;

    assert_int_equal(e->magic, MAGIC); /* never destroyed twice */
    e->magic = POISON;
    free(e);
    pthread_mutex_lock(&w->mu);
    w->destroyed++;
    pthread_mutex_unlock(&w->mu);
}

static rlaas_nodes_t *fresh(world_t *w)
{
    rlaas_nodes_ops_t ops = {w, make, destroy};

    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    return rlaas_nodes_create(MAX, &ops);
}

static void addr(int n, char *host)
{
    snprintf(host, RLAAS_NODE_HOST_MAX, "10.%d.%d.%d", (n >> 16) & 255,
             (n >> 8) & 255, n & 255);
}

/* at() and release(): the index of the node at address n */
static int node(rlaas_nodes_t *ns, int n)
{
    char host[RLAAS_NODE_HOST_MAX];
    rlaas_hold_t h;
    int i;

    addr(n, host);
    if (!rlaas_nodes_at(ns, host, 7000, &h))
        return -1;
    assert_int_equal(((engine_t *)h.engine)->magic, MAGIC);
    assert_string_equal(((engine_t *)h.engine)->host, host);
    i = h.i;
    rlaas_nodes_release(ns, &h);
    return i;
}

/* the engine's host for a slot, "" when none */
static void owner_of(rlaas_nodes_t *ns, int slot, char *host)
{
    rlaas_hold_t h;

    host[0] = '\0';
    if (rlaas_nodes_for_slot(ns, slot, &h)) {
        assert_int_equal(((engine_t *)h.engine)->magic, MAGIC);
        strcpy(host, ((engine_t *)h.engine)->host);
        rlaas_nodes_release(ns, &h);
    }
}

/* A cluster of three masters whose nodes are replaced one at a time, 300
 * times (nearly five times the bound): each new map (CLUSTER SLOTS) names
 * the new node; the one it replaced is forgotten at once. */
static void replaced_through_maps(void **state)
{
    static short owner[RLAAS_SLOTS];
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    int master[3], r, s;
    char host[RLAAS_NODE_HOST_MAX], want[RLAAS_NODE_HOST_MAX];

    (void)state;
    for (r = 0; r < 3; r++)
        master[r] = r;
    for (r = 0; r < 300; r++) {
        int gone = r % 3, n = 3 + r;
        rlaas_hold_t h[3];

        master[gone] = n;
        for (s = 0; s < 3; s++) {
            addr(master[s], host);
            assert_true(rlaas_nodes_at(ns, host, 7000, &h[s]));
        }
        for (s = 0; s < RLAAS_SLOTS; s++)
            owner[s] = (short)h[s * 3 / RLAAS_SLOTS].i;
        rlaas_nodes_set_map(ns, owner);
        for (s = 0; s < 3; s++)
            rlaas_nodes_release(ns, &h[s]);
        assert_int_equal(rlaas_nodes_count(ns), 3);
    }
    /* masters 1 and 2, then one new node a round */
    assert_int_equal(w.made, 302);
    assert_int_equal(w.destroyed, 299);
    addr(master[1], want);
    owner_of(ns, RLAAS_SLOTS / 2, host);
    assert_string_equal(host, want);
    rlaas_nodes_destroy(ns);
    assert_int_equal(w.destroyed, 302);
}

/* Without maps (a TLS cluster learns from MOVED alone): slot after slot
 * moves to new nodes, 200 times; once the table is full, the nodes no
 * slot leads to any more make room, and every MOVED is followed. */
static void replaced_through_moved(void **state)
{
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    char host[RLAAS_NODE_HOST_MAX], want[RLAAS_NODE_HOST_MAX];
    int r, s, first = -1;

    (void)state;
    for (r = 0; r < 200; r++) {
        rlaas_hold_t h;

        addr(100 + r, host);
        /* the whole range moves, one MOVED at a time */
        for (s = 0; s < RLAAS_SLOTS; s += 97) {
            assert_true(rlaas_nodes_at(ns, host, 7000, &h));
            rlaas_nodes_moved(ns, s, &h);
            rlaas_nodes_release(ns, &h);
        }
        assert_true(rlaas_nodes_count(ns) <= MAX);
        if (rlaas_nodes_count(ns) == MAX && first < 0)
            first = r;
    }
    assert_true(first >= 0);      /* the table did fill up ... */
    assert_true(w.destroyed > 0); /* ... and made room */
    owner_of(ns, 97 * 5, host);
    addr(299, want);
    assert_string_equal(host, want);
    rlaas_nodes_destroy(ns);
    assert_int_equal(w.made, w.destroyed);
}

/* 64 masters the map names: the table is full for real, a 65th is
 * refused and nothing is forgotten. */
static void full_of_mapped_nodes(void **state)
{
    static short owner[RLAAS_SLOTS];
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    int s, i;

    (void)state;
    for (s = 0; s < RLAAS_SLOTS; s++) {
        i = node(ns, s % MAX);
        assert_true(i >= 0);
        owner[s] = (short)i;
    }
    rlaas_nodes_set_map(ns, owner);
    assert_int_equal(rlaas_nodes_count(ns), MAX);
    assert_int_equal(node(ns, 1000), -1);
    assert_int_equal(w.destroyed, 0);
    assert_int_equal(rlaas_nodes_count(ns), MAX);
    rlaas_nodes_destroy(ns);
}

/* A call holds a node while a new map forgets it: the engine stays until
 * the call lets go; the slot already leads to the new owner. */
static void held_node_outlives_the_map(void **state)
{
    static short owner[RLAAS_SLOTS];
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    rlaas_hold_t a, b;
    char host[RLAAS_NODE_HOST_MAX];
    int s;

    (void)state;
    assert_true(rlaas_nodes_at(ns, "10.0.0.1", 7000, &a));
    for (s = 0; s < RLAAS_SLOTS; s++)
        owner[s] = (short)a.i;
    rlaas_nodes_set_map(ns, owner);
    assert_true(rlaas_nodes_at(ns, "10.0.0.2", 7000, &b));
    for (s = 0; s < RLAAS_SLOTS; s++)
        owner[s] = (short)b.i;
    rlaas_nodes_set_map(ns, owner);
    rlaas_nodes_release(ns, &b);
    assert_int_equal(w.destroyed, 0);
    assert_int_equal(((engine_t *)a.engine)->magic, MAGIC);
    owner_of(ns, 42, host);
    assert_string_equal(host, "10.0.0.2");
    assert_int_equal(rlaas_nodes_count(ns), 2);
    rlaas_nodes_release(ns, &a);
    assert_int_equal(w.destroyed, 1);
    assert_int_equal(rlaas_nodes_count(ns), 1);
    rlaas_nodes_destroy(ns);
}

/* A whole new map that leads to no node: every node is forgotten. */
static void map_nothing(rlaas_nodes_t *ns)
{
    static short owner[RLAAS_SLOTS];
    int s;

    for (s = 0; s < RLAAS_SLOTS; s++)
        owner[s] = -1;
    rlaas_nodes_set_map(ns, owner);
}

/* A node forgotten while held and named again (MOVED back to it) is the
 * same node, and stays. */
static void forgotten_and_back(void **state)
{
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    rlaas_hold_t a, again;

    (void)state;
    assert_true(rlaas_nodes_at(ns, "10.0.0.1", 7000, &a));
    map_nothing(ns);
    assert_true(rlaas_nodes_at(ns, "10.0.0.1", 7000, &again));
    assert_int_equal(again.i, a.i);
    rlaas_nodes_moved(ns, 7, &again);
    rlaas_nodes_release(ns, &again);
    rlaas_nodes_release(ns, &a);
    assert_int_equal(w.made, 1);
    assert_int_equal(w.destroyed, 0);
    rlaas_nodes_destroy(ns);
    assert_int_equal(w.destroyed, 1);
}

/* The console's walk: a node known and live is held, nothing is made
 * for one not known, and one the map forgot (held by a call meanwhile)
 * is not taken up again. */
static void known_only(void **state)
{
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    rlaas_hold_t a, k;

    (void)state;
    assert_false(rlaas_nodes_known(ns, "10.0.0.1", 7000, &k));
    assert_int_equal(k.i, -1);
    assert_int_equal(w.made, 0);
    assert_true(rlaas_nodes_at(ns, "10.0.0.1", 7000, &a));
    assert_true(rlaas_nodes_known(ns, "10.0.0.1", 7000, &k));
    assert_int_equal(k.i, a.i);
    assert_ptr_equal(k.engine, a.engine);
    rlaas_nodes_release(ns, &k);
    assert_false(rlaas_nodes_known(ns, "10.0.0.1", 7001, &k));
    map_nothing(ns); /* forgotten: a still holds it */
    assert_false(rlaas_nodes_known(ns, "10.0.0.1", 7000, &k));
    rlaas_nodes_release(ns, &a);
    assert_int_equal(w.made, 1);
    assert_int_equal(w.destroyed, 1);
    rlaas_nodes_destroy(ns);
}

/* Nothing known: no node. A slot the map does not know: any node. An
 * engine that can't be made: no node, nothing left behind. */
static void unknown_and_refused(void **state)
{
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    rlaas_hold_t h;
    char host[RLAAS_NODE_HOST_MAX];

    (void)state;
    assert_false(rlaas_nodes_for_slot(ns, 5, &h));
    assert_int_equal(h.i, -1);
    w.refuse = 1;
    assert_int_equal(node(ns, 1), -1);
    assert_int_equal(rlaas_nodes_count(ns), 0);
    w.refuse = 0;
    assert_true(node(ns, 1) >= 0);
    owner_of(ns, 5, host);
    assert_string_equal(host, "10.0.0.1");
    assert_false(rlaas_nodes_at(ns,
                                "a-name-longer-than-the-room-for-a-host-"
                                "name-in-the-table-of-nodes.example",
                                7000, &h));
    rlaas_nodes_destroy(ns);
}

/* ---- threads: calls while the map changes under them ---- */

typedef struct {
    rlaas_nodes_t *ns;
    int stop; /* atomic */
    unsigned seed;
    long calls;
} caller_t;

static void *caller(void *arg)
{
    caller_t *c = arg;

    while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
        int slot = (int)(rand_r(&c->seed) % RLAAS_SLOTS);
        rlaas_hold_t h, to;
        char host[RLAAS_NODE_HOST_MAX];

        if (!rlaas_nodes_for_slot(c->ns, slot, &h))
            continue;
        /* the engine is alive for as long as it is held */
        if (((engine_t *)h.engine)->magic != MAGIC)
            abort();
        if (rand_r(&c->seed) % 8 == 0) {
            /* MOVED to a node of its own */
            addr(5000 + (int)(rand_r(&c->seed) % 500), host);
            if (rlaas_nodes_at(c->ns, host, 7000, &to)) {
                if (((engine_t *)to.engine)->magic != MAGIC)
                    abort();
                rlaas_nodes_moved(c->ns, slot, &to);
                rlaas_nodes_release(c->ns, &to);
            }
        }
        if (((engine_t *)h.engine)->magic != MAGIC)
            abort();
        rlaas_nodes_release(c->ns, &h);
        c->calls++;
    }
    return NULL;
}

static void calls_while_the_map_changes(void **state)
{
    static short owner[RLAAS_SLOTS];
    world_t w;
    rlaas_nodes_t *ns = fresh(&w);
    caller_t c[4];
    pthread_t t[4];
    int r, s, k;

    (void)state;
    for (k = 0; k < 4; k++) {
        c[k].ns = ns;
        c[k].stop = 0;
        c[k].seed = (unsigned)k + 1;
        c[k].calls = 0;
        pthread_create(&t[k], NULL, caller, &c[k]);
    }
    for (r = 0; r < 300; r++) {
        rlaas_hold_t h[3];
        char host[RLAAS_NODE_HOST_MAX];

        for (k = 0; k < 3; k++) {
            addr(r * 3 + k, host);
            if (!rlaas_nodes_at(ns, host, 7000, &h[k]))
                h[k].i = -1;
        }
        for (s = 0; s < RLAAS_SLOTS; s++)
            owner[s] = (short)h[s % 3].i;
        rlaas_nodes_set_map(ns, owner);
        for (k = 0; k < 3; k++)
            rlaas_nodes_release(ns, &h[k]);
        assert_true(rlaas_nodes_count(ns) <= MAX);
    }
    for (k = 0; k < 4; k++) {
        __atomic_store_n(&c[k].stop, 1, __ATOMIC_RELAXED);
        pthread_join(t[k], NULL);
        assert_true(c[k].calls > 0);
    }
    assert_true(w.destroyed > 800);
    rlaas_nodes_destroy(ns);
    assert_int_equal(w.made, w.destroyed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replaced_through_maps),
        cmocka_unit_test(replaced_through_moved),
        cmocka_unit_test(full_of_mapped_nodes),
        cmocka_unit_test(held_node_outlives_the_map),
        cmocka_unit_test(forgotten_and_back),
        cmocka_unit_test(known_only),
        cmocka_unit_test(unknown_and_refused),
        cmocka_unit_test(calls_while_the_map_changes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
