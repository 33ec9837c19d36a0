/* Group commit: every call runs exactly once, in groups, with its own
 * result; a call still queued when its time is up is dropped, never run;
 * one group is in flight at a time unless callers wait longer than the
 * hold, and then never more than the limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "rlaas_clock.h"
#include "rlaas_pipeline.h"

#define THREADS    16
#define PER_THREAD 500

typedef struct {
    int in;
    int out;
    int runs; /* times the runner saw this call */
} call_t;

static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static int max_group;
static int running, max_running; /* groups in the runner at once */
static useconds_t run_delay;

static void runner(void *baton, rlaas_pipe_job_t **jobs, int n)
{
    int i;

    (void)baton;
    pthread_mutex_lock(&seen_mu);
    if (n > max_group)
        max_group = n;
    if (++running > max_running)
        max_running = running;
    pthread_mutex_unlock(&seen_mu);
    if (run_delay)
        usleep(run_delay);
    pthread_mutex_lock(&seen_mu);
    running--;
    pthread_mutex_unlock(&seen_mu);
    for (i = 0; i < n; i++) {
        call_t *c = jobs[i]->data;
        c->out = c->in * 2;
        c->runs++;
    }
}

static rlaas_pipe_t *pipe_;
static int calls_per_thread;
static useconds_t stagger; /* caller i starts i * stagger after the first */

static void *worker(void *arg)
{
    intptr_t base = (intptr_t)arg;
    int i;

    usleep((useconds_t)base * stagger);
    for (i = 0; i < calls_per_thread; i++) {
        call_t c = {(int)(base * PER_THREAD + i), -1, 0};
        rlaas_pipe_job_t job;

        job.data = &c;
        if (rlaas_pipe_submit(pipe_, &job, rlaas_clock_us() + 10000000, runner,
                              NULL) != 0 ||
            c.runs != 1 || c.out != c.in * 2)
            return (void *)1;
    }
    return NULL;
}

/* THREADS callers, per_thread calls each, through pipe_; returns the
 * groups run and the groups sent while another was in flight. */
static void run_callers(int per_thread, uint64_t *batches, uint64_t *extra)
{
    pthread_t th[THREADS];
    uint64_t jobs;
    intptr_t i;
    void *bad;

    assert_non_null(pipe_);
    max_group = 0;
    max_running = 0;
    calls_per_thread = per_thread;
    for (i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (i = 0; i < THREADS; i++) {
        pthread_join(th[i], &bad);
        assert_null(bad);
    }
    rlaas_pipe_stats(pipe_, batches, &jobs, extra);
    assert_int_equal(jobs, THREADS * per_thread);
    assert_true(max_group <= RLAAS_PIPE_MAX_BATCH);
    rlaas_pipe_destroy(pipe_);
}

static void every_call_once_with_its_result(void **state)
{
    uint64_t batches, extra;

    (void)state;
    /* a hold far longer than any group: one group in flight, always */
    pipe_ = rlaas_pipe_create(4, 10000000);
    run_delay = 50;
    run_callers(PER_THREAD, &batches, &extra);
    /* with a slow "Redis", callers queue up and go out together */
    assert_true(batches < THREADS * PER_THREAD);
    assert_true(max_group > 1);
    assert_int_equal(max_running, 1);
    assert_int_equal(extra, 0);
}

/* Groups that take longer than the hold: callers behind them go out in
 * further groups, never more than the limit at once. */
static void slow_groups_get_company_up_to_the_limit(void **state)
{
    uint64_t batches, extra;

    (void)state;
    /* callers arriving one every 3 ms behind 20 ms groups: a new group
     * could go out every 2 ms hold, far beyond the limit */
    pipe_ = rlaas_pipe_create(3, 2000);
    run_delay = 20000;
    stagger = 3000;
    run_callers(10, &batches, &extra);
    stagger = 0;
    assert_true(extra > 0);
    assert_int_equal(max_running, 3);
    assert_true(max_group > 1);
}

/* A limit of one: slow groups make callers wait, never overlap. */
static void limit_of_one_never_overlaps(void **state)
{
    uint64_t batches, extra;

    (void)state;
    pipe_ = rlaas_pipe_create(1, 2000);
    run_delay = 20000;
    run_callers(5, &batches, &extra);
    assert_int_equal(max_running, 1);
    assert_int_equal(extra, 0);
}

/* A call that can't get its turn in time gives up and is never run. */
static void *slow_leader(void *arg)
{
    call_t *c = arg;
    rlaas_pipe_job_t job;

    job.data = c;
    return (void *)(intptr_t)rlaas_pipe_submit(
        pipe_, &job, rlaas_clock_us() + 10000000, runner, NULL);
}

static void queued_call_times_out_unrun(void **state)
{
    pthread_t t;
    call_t lead = {1, -1, 0}, late = {2, -1, 0}, after = {3, -1, 0};
    rlaas_pipe_job_t job;
    void *rc;

    (void)state;
    pipe_ = rlaas_pipe_create(1, 0);
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
    assert_int_equal(
        rlaas_pipe_submit(pipe_, &job, rlaas_clock_us() + 20000, runner, NULL),
        -1);
    assert_int_equal(late.runs, 0);
    pthread_join(t, &rc);
    assert_int_equal((intptr_t)rc, 0);
    assert_int_equal(lead.runs, 1);
    /* the pipe is usable afterwards: a new caller leads at once */
    run_delay = 0;
    job.data = &after;
    assert_int_equal(
        rlaas_pipe_submit(pipe_, &job, rlaas_clock_us() + 20000, runner, NULL),
        0);
    assert_int_equal(after.runs, 1);
    assert_int_equal(after.out, 6);
    rlaas_pipe_destroy(pipe_);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_call_once_with_its_result),
        cmocka_unit_test(slow_groups_get_company_up_to_the_limit),
        cmocka_unit_test(limit_of_one_never_overlaps),
        cmocka_unit_test(queued_call_times_out_unrun),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
