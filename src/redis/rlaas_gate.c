#include "rlaas_gate.h"

#include "rlaas_clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct rlaas_gate_t {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    int free;            /* permits left */
};

rlaas_gate_t *rlaas_gate_create(int permits)
{
    rlaas_gate_t *g;
    pthread_condattr_t attr;
    int ok;

    if (permits < 1 || (g = calloc(1, sizeof(*g))) == NULL)
        return NULL;
    g->free = permits;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    ok = pthread_cond_init(&g->cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (ok && pthread_mutex_init(&g->mu, NULL) != 0) {
        pthread_cond_destroy(&g->cond);
        ok = 0;
    }
    if (!ok) {
        free(g);
        g = NULL;
    }
    return g;
}

void rlaas_gate_destroy(rlaas_gate_t *g)
{
    if (g != NULL) {
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->mu);
        free(g);
    }
}

int rlaas_gate_enter(rlaas_gate_t *g, int64_t deadline_us)
{
    struct timespec until;
    int rc = 0;

    /* One absolute deadline for every wake-up: losing a race to another
     * thread costs no fresh timeout. */
    rlaas_clock_timespec(deadline_us, &until);
    pthread_mutex_lock(&g->mu);
    while (g->free == 0) {
        if (pthread_cond_timedwait(&g->cond, &g->mu, &until) == ETIMEDOUT &&
            g->free == 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0)
        g->free--;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

void rlaas_gate_leave(rlaas_gate_t *g)
{
    pthread_mutex_lock(&g->mu);
    g->free++;
    pthread_cond_signal(&g->cond);
    pthread_mutex_unlock(&g->mu);
}
