/* The circuit breaker's state machine, including concurrent use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>

#include <cmocka.h>

#include "rlaas_breaker.h"

#define MS(x) ((apr_time_t)(x)*1000)

static void opens_after_threshold(void **state)
{
    rlaas_breaker_t b;
    int i;

    (void)state;
    rlaas_breaker_init(&b, 3, MS(500));
    for (i = 0; i < 2; i++) {
        assert_true(rlaas_breaker_allow(&b, MS(0)));
        assert_int_equal(rlaas_breaker_failure(&b, MS(0)), RLAAS_BREAKER_SAME);
    }
    assert_true(rlaas_breaker_allow(&b, MS(0)));
    assert_int_equal(rlaas_breaker_failure(&b, MS(10)), RLAAS_BREAKER_OPENED);
    assert_true(rlaas_breaker_is_open(&b));
    /* cool-down: nothing tries Redis */
    assert_false(rlaas_breaker_allow(&b, MS(11)));
    assert_false(rlaas_breaker_allow(&b, MS(509)));
}

static void success_resets_the_run(void **state)
{
    rlaas_breaker_t b;

    (void)state;
    rlaas_breaker_init(&b, 3, MS(500));
    rlaas_breaker_failure(&b, 0);
    rlaas_breaker_failure(&b, 0);
    assert_int_equal(rlaas_breaker_success(&b), RLAAS_BREAKER_SAME);
    rlaas_breaker_failure(&b, 0);
    rlaas_breaker_failure(&b, 0);
    assert_false(rlaas_breaker_is_open(&b)); /* not 3 in a row */
}

static void one_probe_after_cooldown(void **state)
{
    rlaas_breaker_t b;

    (void)state;
    rlaas_breaker_init(&b, 1, MS(500));
    assert_int_equal(rlaas_breaker_failure(&b, MS(0)), RLAAS_BREAKER_OPENED);
    assert_true(rlaas_breaker_allow(&b, MS(500)));  /* the probe */
    assert_false(rlaas_breaker_allow(&b, MS(501))); /* only one */
    /* probe fails: open again for a full cool-down */
    assert_int_equal(rlaas_breaker_failure(&b, MS(520)),
                     RLAAS_BREAKER_REOPENED);
    assert_false(rlaas_breaker_allow(&b, MS(1019)));
    assert_true(rlaas_breaker_allow(&b, MS(1020)));
    /* probe succeeds: closed, everyone goes through */
    assert_int_equal(rlaas_breaker_success(&b), RLAAS_BREAKER_CLOSED);
    assert_false(rlaas_breaker_is_open(&b));
    assert_true(rlaas_breaker_allow(&b, MS(1021)));
    assert_true(rlaas_breaker_allow(&b, MS(1021)));
    assert_int_equal(rlaas_breaker_success(&b), RLAAS_BREAKER_SAME);
}

/* Only while the probe is in flight does the breaker say "probing": the
 * calls that find it so wait for its outcome (rlaas_node.c). */
static void probing_only_while_the_probe_runs(void **state)
{
    rlaas_breaker_t b;

    (void)state;
    rlaas_breaker_init(&b, 1, MS(500));
    assert_false(rlaas_breaker_probing(&b));
    rlaas_breaker_failure(&b, MS(0));
    assert_false(rlaas_breaker_probing(&b)); /* open, cooling down */
    assert_true(rlaas_breaker_allow(&b, MS(600)));
    assert_true(rlaas_breaker_probing(&b));
    assert_false(rlaas_breaker_allow(&b, MS(601)));
    rlaas_breaker_failure(&b, MS(602));
    assert_false(rlaas_breaker_probing(&b)); /* reopened */
    assert_true(rlaas_breaker_allow(&b, MS(1102)));
    assert_int_equal(rlaas_breaker_success(&b), RLAAS_BREAKER_CLOSED);
    assert_false(rlaas_breaker_probing(&b));
    assert_true(rlaas_breaker_allow(&b, MS(1103)));
}

static void disabled_never_opens(void **state)
{
    rlaas_breaker_t b;
    int i;

    (void)state;
    rlaas_breaker_init(&b, 0, MS(500));
    for (i = 0; i < 100; i++)
        assert_int_equal(rlaas_breaker_failure(&b, 0), RLAAS_BREAKER_SAME);
    assert_true(rlaas_breaker_allow(&b, 0));
}

/* Many threads failing at once: the opening is reported exactly once. */
static rlaas_breaker_t shared;
static volatile apr_uint32_t opened_reports;

static void *hammer(void *arg)
{
    int i;

    (void)arg;
    for (i = 0; i < 10000; i++) {
        if (rlaas_breaker_failure(&shared, MS(1)) == RLAAS_BREAKER_OPENED)
            apr_atomic_inc32(&opened_reports);
    }
    return NULL;
}

static void concurrent_open_reported_once(void **state)
{
    pthread_t th[8];
    int i;

    (void)state;
    rlaas_breaker_init(&shared, 5, MS(500));
    for (i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, hammer, NULL);
    for (i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(apr_atomic_read32(&opened_reports), 1);
    assert_true(rlaas_breaker_is_open(&shared));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(opens_after_threshold),
        cmocka_unit_test(success_resets_the_run),
        cmocka_unit_test(one_probe_after_cooldown),
        cmocka_unit_test(probing_only_while_the_probe_runs),
        cmocka_unit_test(disabled_never_opens),
        cmocka_unit_test(concurrent_open_reported_once),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
