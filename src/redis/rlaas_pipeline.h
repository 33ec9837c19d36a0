/*
 * Group commit for Redis calls. Threads of one child that need Redis at the
 * same moment queue their calls; one of them, the leader, sends the whole
 * group on one connection (one write, one read for all), hands every
 * caller its result, and passes leadership to whoever queued meanwhile.
 *
 * On a loaded server this turns N round trips into one: fewer system
 * calls and wake-ups on both sides, which is most of what a Redis call
 * costs. No lock is held while talking to Redis; the lock only guards the
 * queue, and nobody is woken while it is held. Each caller sleeps on its
 * own job (a futex on Linux, a shared condition variable elsewhere) and is
 * woken once, when its result is in or its turn to lead has come. POSIX
 * threads, no httpd headers, so it is unit-tested on its own.
 */
#ifndef RLAAS_PIPELINE_H
#define RLAAS_PIPELINE_H

#include <pthread.h>
#include <stdint.h>

typedef struct rlaas_pipe_t rlaas_pipe_t;

/* One caller's place in the queue; lives on the caller's stack. */
typedef struct rlaas_pipe_job_t {
    void *data; /* the caller's call and result */
    int state;  /* private: the caller sleeps on it (a futex on Linux) */
    struct rlaas_pipe_job_t *next;
} rlaas_pipe_job_t;

/* Runs a group of calls: called by the leader, without the lock. */
typedef void (*rlaas_pipe_run_fn)(void *baton, rlaas_pipe_job_t **jobs, int n);

#define RLAAS_PIPE_MAX_BATCH 64

/* One group in flight at a time, so that calls meeting in time go out
 * together; but a caller that has waited hold_us behind the group in
 * flight (Redis is far, or slow to answer) sends the queue out on another
 * connection, up to max_leaders groups in flight. */
rlaas_pipe_t *rlaas_pipe_create(int max_leaders, int64_t hold_us);
void rlaas_pipe_destroy(rlaas_pipe_t *p);

/* Runs job, in a group led by this thread (run is then called with baton)
 * or by another. Returns 0 when the job ran, or -1 if deadline_us (of
 * rlaas_clock_us) passed while it was still waiting for its turn (it did
 * not run). A job already sent is always waited for: the leader's run is
 * bound by the group's deadline, the earliest of its callers' (the leader
 * is the oldest caller), so no follower waits past its own. */
int rlaas_pipe_submit(rlaas_pipe_t *p, rlaas_pipe_job_t *job,
                      int64_t deadline_us, rlaas_pipe_run_fn run, void *baton);

/* Groups run so far, calls in them, and groups sent while another was in
 * flight (for tests and tuning). */
void rlaas_pipe_stats(rlaas_pipe_t *p, uint64_t *batches, uint64_t *jobs,
                      uint64_t *extra_leaders);

#endif
