/* Group commit: every call runs exactly once, in groups, with its own
 * result; a call still queued when its time is up is dropped, never run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "rlaas_pipeline.h"

#define THREADS 16
#define PER_THREAD 500

typedef struct {
    int in;
    int out;
    int runs; /* times the runner saw this call */
} call_t;

static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static int max_group;
static useconds_t run_delay;

static void runner(void *baton, rlaas_pipe_job_t **jobs, int n)
{
    int i;

    (void)baton;
    pthread_mutex_lock(&seen_mu);
    if (n > max_group)
        max_group = n;
    pthread_mutex_unlock(&seen_mu);
    if (run_delay)
        usleep(run_delay);
    for (i = 0; i < n; i++) {
        call_t *c = jobs[i]->data;
        c->out = c->in * 2;
        c->runs++;
    }
}

static rlaas_pipe_t *pipe_;

static void *worker(void *arg)
{
    intptr_t base = (intptr_t)arg;
    int i;

    for (i = 0; i < PER_THREAD; i++) {
        call_t c = {(int)(base * PER_THREAD + i), -1, 0};
        rlaas_pipe_job_t job;

        job.data = &c;
        if (rlaas_pipe_submit(pipe_, &job, 10000000, runner, NULL) != 0 ||
            c.runs != 1 || c.out != c.in * 2)
            return (void *)1;
    }
    return NULL;
}

static void every_call_once_with_its_result(void **state)
{
    pthread_t th[THREADS];
    uint64_t batches, jobs;
    intptr_t i;
    void *bad;

    (void)state;
    pipe_ = rlaas_pipe_create();
    assert_non_null(pipe_);
    max_group = 0;
    run_delay = 50;
    for (i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], &bad);
        assert_null(bad);
    }
    rlaas_pipe_stats(pipe_, &batches, &jobs);
    assert_int_equal(jobs, THREADS * PER_THREAD);
    /* with a slow "Redis", callers queue up and go out together */
    assert_true(batches < jobs);
    assert_true(max_group > 1);
    assert_true(max_group <= RLAAS_PIPE_MAX_BATCH);
    rlaas_pipe_destroy(pipe_);
}

/* A call that can't get its turn in time gives up and is never run. */
static void *slow_leader(void *arg)
{
    call_t *c = arg;
    rlaas_pipe_job_t job;

    job.data = c;
    return (void *)(intptr_t)rlaas_pipe_submit(pipe_, &job, 10000000, runner,
                                               NULL);
}

static void queued_call_times_out_unrun(void **state)
{
    pthread_t t;
    call_t lead = {1, -1, 0}, late = {2, -1, 0}, after = {3, -1, 0};
    rlaas_pipe_job_t job;
    void *rc;

    (void)state;
    pipe_ = rlaas_pipe_create();
    run_delay = 200000; /* the first group takes 200 ms */
    max_group = 0;
    pthread_create(&t, NULL, slow_leader, &lead);
    /* wait until the leader is inside its group, however slow the start */
    for (;;) {
        int started;

        pthread_mutex_lock(&seen_mu);
        started = max_group > 0;
        pthread_mutex_unlock(&seen_mu);
        if (started)
            break;
        usleep(1000);
    }
    job.data = &late;
    assert_int_equal(rlaas_pipe_submit(pipe_, &job, 20000, runner, NULL), -1);
    assert_int_equal(late.runs, 0);
    pthread_join(t, &rc);
    assert_int_equal((intptr_t)rc, 0);
    assert_int_equal(lead.runs, 1);
    /* the pipe is usable afterwards: a new caller leads at once */
    run_delay = 0;
    job.data = &after;
    assert_int_equal(rlaas_pipe_submit(pipe_, &job, 20000, runner, NULL), 0);
    assert_int_equal(after.runs, 1);
    assert_int_equal(after.out, 6);
    rlaas_pipe_destroy(pipe_);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_call_once_with_its_result),
        cmocka_unit_test(queued_call_times_out_unrun),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
