/* Log gates: one line per interval, and an exact count of the rest. */
#include <setjmp.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rlaas_log.h"

static void one_line_per_interval(void **state)
{
    rlaas_log_gate_t g = {0, 0};
    apr_time_t t0 = apr_time_from_sec(1000);
    int i;

    (void)state;
    assert_int_equal(rlaas_log_gate_pass(&g, t0, 1), 0);
    for (i = 0; i < 5; i++)
        assert_int_equal(rlaas_log_gate_pass(&g, t0 + i * 1000, 1), -1);
    /* the next second passes and reports the five it held back */
    assert_int_equal(rlaas_log_gate_pass(&g, t0 + apr_time_from_sec(1), 1), 5);
    assert_int_equal(rlaas_log_gate_pass(&g, t0 + apr_time_from_sec(1), 1), -1);
    /* a longer interval holds lines back longer */
    assert_int_equal(rlaas_log_gate_pass(&g, t0 + apr_time_from_sec(2), 10), 1);
    assert_int_equal(rlaas_log_gate_pass(&g, t0 + apr_time_from_sec(11), 10),
                     -1);
    assert_int_equal(rlaas_log_gate_pass(&g, t0 + apr_time_from_sec(12), 10),
                     1);
}

/* The end of a line that passed after others were held back: their
 * number, the largest too, or nothing; never past the room given. */
static void suppressed_said(void **state)
{
    char room[RLAAS_LOG_SUPPRESSED_MAX], small[8];

    (void)state;
    assert_string_equal(rlaas_log_suppressed(room, sizeof(room), 0), "");
    assert_string_equal(rlaas_log_suppressed(room, sizeof(room), -1), "");
    assert_string_equal(rlaas_log_suppressed(room, sizeof(room), 3),
                        " (3 similar lines suppressed)");
    assert_string_equal(rlaas_log_suppressed(room, sizeof(room), LONG_MAX),
                        " (9223372036854775807 similar lines suppressed)");
    assert_string_equal(rlaas_log_suppressed(small, sizeof(small), 3),
                        " (3 sim");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_line_per_interval),
        cmocka_unit_test(suppressed_said),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
