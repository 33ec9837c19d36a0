#include "rlaas_pipeline.h"

#include "rlaas_gate.h"

#include <errno.h>
#include <stdlib.h>

enum { JOB_QUEUED, JOB_LEAD, JOB_SENT, JOB_DONE };

struct rlaas_pipe_t {
    pthread_mutex_t mu;
    rlaas_pipe_job_t *head, *tail;
    int busy; /* a leader is running a group */
    uint64_t batches, jobs;
};

rlaas_pipe_t *rlaas_pipe_create(void)
{
    rlaas_pipe_t *p = calloc(1, sizeof(*p));

    if (p != NULL && pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

void rlaas_pipe_destroy(rlaas_pipe_t *p)
{
    if (p != NULL) {
        pthread_mutex_destroy(&p->mu);
        free(p);
    }
}

static void unlink_job(rlaas_pipe_t *p, rlaas_pipe_job_t *job)
{
    rlaas_pipe_job_t **pp = &p->head, *prev = NULL;

    while (*pp != NULL && *pp != job) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == NULL)
        return;
    *pp = job->next;
    if (p->tail == job)
        p->tail = prev;
}

/* The leader's part: send the queue's head group, then hand over. */
static void lead(rlaas_pipe_t *p, rlaas_pipe_job_t *self, rlaas_pipe_run_fn run,
                 void *baton)
{
    rlaas_pipe_job_t *group[RLAAS_PIPE_MAX_BATCH];
    int n = 0, i;

    pthread_mutex_lock(&p->mu);
    /* the leader is the oldest waiter, so the group's deadline is its own */
    while (p->head != NULL && n < RLAAS_PIPE_MAX_BATCH) {
        rlaas_pipe_job_t *j = p->head;

        p->head = j->next;
        if (p->head == NULL)
            p->tail = NULL;
        j->state = JOB_SENT;
        group[n++] = j;
    }
    p->batches++;
    p->jobs += (uint64_t)n;
    pthread_mutex_unlock(&p->mu);

    run(baton, group, n);

    pthread_mutex_lock(&p->mu);
    for (i = 0; i < n; i++) {
        group[i]->state = JOB_DONE;
        if (group[i] != self)
            pthread_cond_signal(&group[i]->cond);
    }
    if (p->head != NULL) {
        p->head->state = JOB_LEAD;
        pthread_cond_signal(&p->head->cond);
    }
    else {
        p->busy = 0;
    }
    pthread_mutex_unlock(&p->mu);
}

int rlaas_pipe_submit(rlaas_pipe_t *p, rlaas_pipe_job_t *job,
                      int64_t timeout_us, rlaas_pipe_run_fn run, void *baton)
{
    pthread_condattr_t attr;
    struct timespec until;
    int rc = 0;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&job->cond, &attr);
    pthread_condattr_destroy(&attr);
    rlaas_deadline_after(&until, timeout_us > 0 ? timeout_us : 0);
    job->next = NULL;
    job->state = JOB_QUEUED;

    pthread_mutex_lock(&p->mu);
    if (p->tail != NULL)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    if (!p->busy) {
        p->busy = 1;
        job->state = JOB_LEAD;
    }
    while (job->state == JOB_QUEUED) {
        if (pthread_cond_timedwait(&job->cond, &p->mu, &until) == ETIMEDOUT &&
            job->state == JOB_QUEUED) {
            unlink_job(p, job);
            rc = -1;
            break;
        }
    }
    /* Sent by another leader: its deadline bounds the wait. */
    while (job->state == JOB_SENT)
        pthread_cond_wait(&job->cond, &p->mu);
    pthread_mutex_unlock(&p->mu);

    if (job->state == JOB_LEAD)
        lead(p, job, run, baton);
    pthread_cond_destroy(&job->cond);
    return rc;
}

void rlaas_pipe_stats(rlaas_pipe_t *p, uint64_t *batches, uint64_t *jobs)
{
    pthread_mutex_lock(&p->mu);
    *batches = p->batches;
    *jobs = p->jobs;
    pthread_mutex_unlock(&p->mu);
}
