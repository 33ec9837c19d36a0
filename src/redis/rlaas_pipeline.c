#include "rlaas_pipeline.h"

#include "rlaas_clock.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#if defined(__linux__) && !defined(RLAAS_PIPE_PORTABLE)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define RLAAS_PIPE_FUTEX 1
#endif

enum { JOB_QUEUED, JOB_LEAD, JOB_SENT, JOB_DONE };

struct rlaas_pipe_t {
    pthread_mutex_t mu; /* guards the queue, busy and the counters only */
    rlaas_pipe_job_t *head, *tail;
    int busy;        /* leaders running a group */
    int max_leaders; /* groups in flight at most */
    int64_t hold_us; /* longest wait behind groups in flight */
    uint64_t batches, jobs, extra_leaders;
};

/* ---- a job's state word, and waiting for it to change ----
 *
 * Each caller sleeps on its own job's state, and whoever changes the state
 * wakes just that caller: one wake-up per call, given after the queue's
 * lock is released, so a woken caller never runs into a lock still held by
 * the thread that woke it. The state is written before the wake-up; a
 * caller that has already seen it and returned is not harmed by a late
 * wake-up (its address is only a key in the kernel's wait table). */

static int state_get(const rlaas_pipe_job_t *j)
{
    return __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);
}

static void state_set(rlaas_pipe_job_t *j, int st)
{
    __atomic_store_n(&j->state, st, __ATOMIC_RELEASE);
}

#ifdef RLAAS_PIPE_FUTEX

/* Sleeps while *addr == val, at most *rel (NULL: no limit). */
static void state_wait(int *addr, int val, const struct timespec *rel)
{
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, rel, NULL, 0);
}

static void state_wake(int *addr)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

#else

/* Elsewhere, one condition variable for every waiter: correct, if it
 * wakes more threads than it needs to. */
static pthread_mutex_t wait_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cond = PTHREAD_COND_INITIALIZER;

static void state_wait(int *addr, int val, const struct timespec *rel)
{
    struct timespec until;

    pthread_mutex_lock(&wait_mu);
    if (__atomic_load_n(addr, __ATOMIC_ACQUIRE) == val) {
        if (rel == NULL) {
            pthread_cond_wait(&wait_cond, &wait_mu);
        }
        else {
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += rel->tv_sec;
            until.tv_nsec += rel->tv_nsec;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&wait_cond, &wait_mu, &until);
        }
    }
    pthread_mutex_unlock(&wait_mu);
}

static void state_wake(int *addr)
{
    (void)addr;
    pthread_mutex_lock(&wait_mu);
    pthread_cond_broadcast(&wait_cond);
    pthread_mutex_unlock(&wait_mu);
}

#endif

/* Time left until at_us, into *rel; 0 when none is left. */
static int time_left(int64_t at_us, struct timespec *rel)
{
    int64_t left = at_us - rlaas_clock_us();

    if (left < 0)
        return 0;
    rel->tv_sec = (time_t)(left / 1000000);
    rel->tv_nsec = (long)(left % 1000000) * 1000;
    return 1;
}

/* ---- the queue ---- */

rlaas_pipe_t *rlaas_pipe_create(int max_leaders, int64_t hold_us)
{
    rlaas_pipe_t *p = calloc(1, sizeof(*p));

    if (p != NULL && pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        p = NULL;
    }
    if (p != NULL) {
        /* no hold, no extra leaders: callers wait for their turn */
        p->max_leaders = max_leaders > 1 && hold_us > 0 ? max_leaders : 1;
        p->hold_us = hold_us;
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

/* Takes the queue's head group; the leader is the oldest waiter, so the
 * group's deadline is its own. */
static int take_group(rlaas_pipe_t *p, rlaas_pipe_job_t **group)
{
    int n = 0;

    pthread_mutex_lock(&p->mu);
    while (p->head != NULL && n < RLAAS_PIPE_MAX_BATCH) {
        rlaas_pipe_job_t *j = p->head;

        p->head = j->next;
        if (p->head == NULL)
            p->tail = NULL;
        state_set(j, JOB_SENT);
        group[n++] = j;
    }
    p->batches++;
    p->jobs += (uint64_t)n;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* The leader's part: send the head group, hand every caller its result,
 * then pass leadership to whoever queued meanwhile. */
static void lead(rlaas_pipe_t *p, rlaas_pipe_job_t *self, rlaas_pipe_run_fn run,
                 void *baton)
{
    rlaas_pipe_job_t *group[RLAAS_PIPE_MAX_BATCH], *next;
    int n = take_group(p, group), i;

    run(baton, group, n);

    for (i = 0; i < n; i++) {
        if (group[i] != self) {
            state_set(group[i], JOB_DONE);
            state_wake(&group[i]->state);
        }
    }
    /* With another group still in flight, its leader takes the queue
     * when it is done; one group in flight is the rule, more only while
     * callers would otherwise wait longer than hold_us. */
    pthread_mutex_lock(&p->mu);
    next = p->busy == 1 ? p->head : NULL;
    if (next != NULL)
        state_set(next, JOB_LEAD);
    else
        p->busy--;
    pthread_mutex_unlock(&p->mu);
    if (next != NULL)
        state_wake(&next->state);
}

/* A caller has waited hold_us behind the groups in flight (Redis is slow
 * to answer): the oldest caller leads the queue out on a connection of its
 * own, if the limit of groups in flight allows. Called with the lock. */
static rlaas_pipe_job_t *extra_leader(rlaas_pipe_t *p)
{
    rlaas_pipe_job_t *head = p->head;

    if (head == NULL || head->state != JOB_QUEUED || p->busy >= p->max_leaders)
        return NULL;
    p->busy++;
    p->extra_leaders++;
    state_set(head, JOB_LEAD);
    return head;
}

/* Queued and not yet taken: waits for a turn until *until. Returns 0 with
 * the job taken (sent by a leader, or this caller's turn to lead), or -1
 * with the job out of the queue, unrun. The queue's first caller also
 * looks up every hold_us and tries to go out itself (see extra_leader);
 * the others sleep on, so that a slow group costs one extra wake-up, not
 * one per caller behind it. */
static int wait_turn(rlaas_pipe_t *p, rlaas_pipe_job_t *job, int64_t until,
                     int first)
{
    struct timespec rel;
    int64_t next = until, hold;
    rlaas_pipe_job_t *lead_job;

    if (first && p->max_leaders > 1) {
        hold = rlaas_clock_us() + p->hold_us;
        next = hold < until ? hold : until;
    }
    while (state_get(job) == JOB_QUEUED) {
        if (time_left(next, &rel)) {
            state_wait(&job->state, JOB_QUEUED, &rel);
            continue;
        }
        /* A leader may be taking the job right now; the lock settles it. */
        pthread_mutex_lock(&p->mu);
        if (job->state == JOB_QUEUED && next == until) {
            unlink_job(p, job);
            pthread_mutex_unlock(&p->mu);
            return -1;
        }
        lead_job = job->state == JOB_QUEUED ? extra_leader(p) : NULL;
        pthread_mutex_unlock(&p->mu);
        if (lead_job != NULL && lead_job != job)
            state_wake(&lead_job->state);
        hold = rlaas_clock_us() + p->hold_us;
        next = hold < until ? hold : until;
    }
    return 0;
}

int rlaas_pipe_submit(rlaas_pipe_t *p, rlaas_pipe_job_t *job,
                      int64_t deadline_us, rlaas_pipe_run_fn run, void *baton)
{
    int st, first;

    job->next = NULL;
    job->state = JOB_QUEUED;

    pthread_mutex_lock(&p->mu);
    first = p->head == NULL;
    if (p->tail != NULL)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    if (p->busy == 0) {
        p->busy = 1;
        job->state = JOB_LEAD;
    }
    pthread_mutex_unlock(&p->mu);

    if (wait_turn(p, job, deadline_us, first) != 0)
        return -1;
    /* Sent by another leader: its deadline bounds the wait. */
    while ((st = state_get(job)) == JOB_SENT)
        state_wait(&job->state, JOB_SENT, NULL);
    if (st == JOB_LEAD)
        lead(p, job, run, baton);
    return 0;
}

void rlaas_pipe_stats(rlaas_pipe_t *p, uint64_t *batches, uint64_t *jobs,
                      uint64_t *extra_leaders)
{
    pthread_mutex_lock(&p->mu);
    *batches = p->batches;
    *jobs = p->jobs;
    *extra_leaders = p->extra_leaders;
    pthread_mutex_unlock(&p->mu);
}
