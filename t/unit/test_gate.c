/* The pool gate: never more holders than permits, and a waiter's whole
 * wait is bounded by its own timeout however often it loses a race. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rlaas_clock.h"
#include "rlaas_gate.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void refuses_bad_permits(void **state)
{
    (void)state;
    assert_null(rlaas_gate_create(0));
    assert_null(rlaas_gate_create(-3));
}

static void times_out_when_full(void **state)
{
    rlaas_gate_t *g = rlaas_gate_create(2);
    double t0;

    (void)state;
    assert_non_null(g);
    assert_int_equal(rlaas_gate_enter(g, rlaas_clock_us() + 1000), 0);
    assert_int_equal(rlaas_gate_enter(g, rlaas_clock_us() + 1000), 0);
    t0 = now_s();
    assert_int_equal(rlaas_gate_enter(g, rlaas_clock_us() + 30000), -1);
    /* it did wait: the deadline is not "now" */
    assert_true(now_s() - t0 >= 0.029);
    rlaas_gate_leave(g);
    assert_int_equal(rlaas_gate_enter(g, rlaas_clock_us() + 0), 0);
    rlaas_gate_leave(g);
    rlaas_gate_leave(g);
    rlaas_gate_destroy(g);
}

/* ---- counting under contention ---- */

#define THREADS 12
#define PERMITS 3
#define ROUNDS  400

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int inside, most_inside, failures;

static void *holder(void *arg)
{
    rlaas_gate_t *g = arg;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        if (rlaas_gate_enter(g, rlaas_clock_us() + 10000000) != 0) {
            pthread_mutex_lock(&mu);
            failures++;
            pthread_mutex_unlock(&mu);
            continue;
        }
        pthread_mutex_lock(&mu);
        if (++inside > most_inside)
            most_inside = inside;
        pthread_mutex_unlock(&mu);
        usleep(10);
        pthread_mutex_lock(&mu);
        inside--;
        pthread_mutex_unlock(&mu);
        rlaas_gate_leave(g);
    }
    return NULL;
}

static void never_more_than_permits(void **state)
{
    rlaas_gate_t *g = rlaas_gate_create(PERMITS);
    pthread_t th[THREADS];
    int i;

    (void)state;
    assert_non_null(g);
    for (i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, holder, g), 0);
    for (i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(failures, 0);
    assert_int_equal(inside, 0);
    assert_true(most_inside >= 1);
    assert_true(most_inside <= PERMITS);
    rlaas_gate_destroy(g);
}

/* ---- a waiter that keeps losing ---- */

static int churn_stop; /* atomic */

/* Holds the only permit nearly all the time, letting go for an instant
 * thousands of times: each release wakes the waiter, which mostly loses. */
static void *churn(void *arg)
{
    rlaas_gate_t *g = arg;

    while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
        if (rlaas_gate_enter(g, rlaas_clock_us() + 10000000) == 0) {
            usleep(200);
            rlaas_gate_leave(g);
        }
    }
    return NULL;
}

static void wait_bounded_under_churn(void **state)
{
    rlaas_gate_t *g = rlaas_gate_create(1);
    pthread_t th;
    double t0, waited;
    int i;

    (void)state;
    assert_non_null(g);
    __atomic_store_n(&churn_stop, 0, __ATOMIC_RELAXED);
    assert_int_equal(pthread_create(&th, NULL, churn, g), 0);
    usleep(2000);
    for (i = 0; i < 20; i++) {
        t0 = now_s();
        if (rlaas_gate_enter(g, rlaas_clock_us() + 20000) == 0)
            rlaas_gate_leave(g);
        waited = now_s() - t0;
        /* 20ms asked; a wait restarted on every wake-up would last until
         * the churn stops (never, here). 0.5s leaves room for a slow,
         * shared machine. */
        assert_true(waited < 0.5);
    }
    __atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    rlaas_gate_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refuses_bad_permits),
        cmocka_unit_test(times_out_when_full),
        cmocka_unit_test(never_more_than_permits),
        cmocka_unit_test(wait_bounded_under_churn),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
