/* Whom an error reply is about, in the words Redis 5, 6 and 7 use: an
 * error about one call's key never counts against Redis, and a server
 * that is not the master (any more) makes every connection go. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_reply.h"

static rlaas_errc_e cls(const char *s)
{
    return rlaas_reply_error_class(s, strlen(s));
}

/* Redis 7 keeps the code first and appends where the script failed
 * (texts as redis-server 7.0 sends them). */
static void redis7_script_errors(void **state)
{
    (void)state;
    assert_int_equal(cls("READONLY You can't write against a read only "
                         "replica. script: 61636018f4e6b5817b89791bbed242f93f"
                         "a089e3, on @user_script:1."),
                     RLAAS_ERRC_FAILOVER);
    assert_int_equal(cls("MASTERDOWN Link with MASTER is down and "
                         "replica-serve-stale-data is set to 'no'."),
                     RLAAS_ERRC_FAILOVER);
    assert_int_equal(cls("LOADING Redis is loading the dataset in memory"),
                     RLAAS_ERRC_FAILOVER);
    assert_int_equal(cls("OOM command not allowed when used memory > "
                         "'maxmemory'. script: 6163, on @user_script:1."),
                     RLAAS_ERRC_SERVER);
    assert_int_equal(cls("NOAUTH Authentication required."), RLAAS_ERRC_SERVER);
    assert_int_equal(cls("BUSY Redis is busy running a script. You can only "
                         "call SCRIPT KILL or SHUTDOWN NOSAVE."),
                     RLAAS_ERRC_SERVER);
    assert_int_equal(cls("WRONGTYPE Operation against a key holding the wrong "
                         "kind of value script: fd1f, on @user_script:1."),
                     RLAAS_ERRC_CALL);
    assert_int_equal(cls("ERR rlaas: bad limit or window"), RLAAS_ERRC_CALL);
}

/* Redis 5 and 6 wrap the code of a failed call inside the script's
 * error. */
static void redis6_wrapped_errors(void **state)
{
    (void)state;
    assert_int_equal(cls("ERR Error running script (call to f_61636018f4e6b5"
                         "): @user_script:1: @user_script: 1: -READONLY You "
                         "can't write against a read only replica."),
                     RLAAS_ERRC_FAILOVER);
    assert_int_equal(cls("ERR Error running script (call to f_1): "
                         "@user_script:1: @user_script: 1: -OOM command not "
                         "allowed when used memory > 'maxmemory'."),
                     RLAAS_ERRC_SERVER);
    assert_int_equal(cls("ERR Error running script (call to f_1): "
                         "@user_script:1: WRONGTYPE Operation against a key "
                         "holding the wrong kind of value"),
                     RLAAS_ERRC_CALL);
    assert_int_equal(cls("ERR Error running script (call to f_1): "
                         "@user_script:1: @user_script: 1: -WRONGTYPE "
                         "Operation against a key"),
                     RLAAS_ERRC_CALL);
}

/* A client can't make its key's error look like a server's: key text
 * appears after the code, never as it. */
static void look_alikes(void **state)
{
    (void)state;
    assert_int_equal(cls("READONLYX not a code"), RLAAS_ERRC_CALL);
    assert_int_equal(cls("readonly lower case"), RLAAS_ERRC_CALL);
    assert_int_equal(cls("ERR rlaas: key ': -READONLY x'"), RLAAS_ERRC_CALL);
    assert_int_equal(cls("WRONGTYPE ... : -READONLY"), RLAAS_ERRC_CALL);
    assert_int_equal(cls(""), RLAAS_ERRC_CALL);
    assert_int_equal(cls("READONLY"), RLAAS_ERRC_FAILOVER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(redis7_script_errors),
        cmocka_unit_test(redis6_wrapped_errors),
        cmocka_unit_test(look_alikes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
