#include "rlaas_pool.h"

#include <stdlib.h>

#include "apr_atomic.h"
#include "apr_reslist.h"

#include "rlaas_gate.h"

struct rlaas_pool_t {
    apr_pool_t *own; /* the list's, destroyed by pool_cleanup */
    apr_reslist_t *list;
    rlaas_gate_t *gate; /* NULL: never more callers than connections */
    volatile apr_uint32_t gen;
    volatile apr_uint32_t taken; /* slots out of the list (or about to be) */
};

static apr_status_t slot_make(void **res, void *params, apr_pool_t *p)
{
    (void)params;
    (void)p;
    /* malloc, not the pool: slots are made and freed for the life of the
     * child and must not accumulate in its pool. */
    *res = calloc(1, sizeof(rlaas_conn_t));
    return *res != NULL ? APR_SUCCESS : APR_ENOMEM;
}

static apr_status_t slot_free(void *res, void *params, apr_pool_t *p)
{
    (void)params;
    (void)p;
    rlaas_conn_close(res);
    free(res);
    return APR_SUCCESS;
}

static apr_status_t pool_cleanup(void *data)
{
    rlaas_pool_t *pl = data;

    rlaas_gate_destroy(pl->gate);
    pl->gate = NULL;
    /* A slot still taken means the process is going away in the middle of
     * a request: prefork's SIGHUP and SIGTERM handler destroys the child's
     * pool there and then. apr_reslist asserts that none is taken when its
     * pool goes (an abort, "exit signal Abort"), so the list is then left
     * to the process' exit, which frees it and closes its sockets. */
    if (apr_atomic_read32(&pl->taken) == 0)
        apr_pool_destroy(pl->own);
    pl->own = NULL;
    pl->list = NULL;
    return APR_SUCCESS;
}

rlaas_pool_t *rlaas_pool_create(apr_pool_t *p, int max, int gate,
                                int64_t wait_us)
{
    rlaas_pool_t *pl = apr_pcalloc(p, sizeof(*pl));

    /* The list lives in a pool of its own, not a child of p, so that
     * destroying p never runs the list's cleanup while a slot is taken
     * (see pool_cleanup). */
    if (apr_pool_create_unmanaged_ex(&pl->own, NULL, NULL) != APR_SUCCESS)
        return NULL;
    if (apr_reslist_create(&pl->list, 0, max, max, 0, slot_make, slot_free,
                           NULL, pl->own) != APR_SUCCESS) {
        apr_pool_destroy(pl->own);
        return NULL;
    }
    apr_reslist_timeout_set(pl->list, wait_us);
    if (gate)
        pl->gate = rlaas_gate_create(max);
    apr_pool_cleanup_register(p, pl, pool_cleanup, apr_pool_cleanup_null);
    return pl;
}

rlaas_rerr_e rlaas_pool_acquire(rlaas_pool_t *pl, int64_t deadline,
                                rlaas_conn_t **c, int *dropped)
{
    void *res;

    *dropped = 0;
    if (pl->gate != NULL && rlaas_gate_enter(pl->gate, deadline) != 0)
        return RLAAS_RERR_POOL;
    /* counted before it is taken and after it is back, so that the count
     * is never short of the slots out */
    apr_atomic_inc32(&pl->taken);
    if (apr_reslist_acquire(pl->list, &res) != APR_SUCCESS) {
        apr_atomic_dec32(&pl->taken);
        if (pl->gate != NULL)
            rlaas_gate_leave(pl->gate);
        return RLAAS_RERR_POOL;
    }
    *c = res;
    if ((*c)->ctx != NULL && (*c)->gen != apr_atomic_read32(&pl->gen)) {
        rlaas_conn_close(*c);
        *dropped = 1;
    }
    return RLAAS_RERR_NONE;
}

void rlaas_pool_release(rlaas_pool_t *pl, rlaas_conn_t *c)
{
    apr_reslist_release(pl->list, c);
    apr_atomic_dec32(&pl->taken);
    if (pl->gate != NULL)
        rlaas_gate_leave(pl->gate);
}

void rlaas_pool_invalidate(rlaas_pool_t *pl)
{
    apr_atomic_inc32(&pl->gen);
}

unsigned rlaas_pool_generation(rlaas_pool_t *pl)
{
    return apr_atomic_read32(&pl->gen);
}
