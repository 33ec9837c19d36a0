/* The embedded scripts: every strategy has one, and so has a request with
 * several policies (the multi script, after them); each SHA1 is the one
 * Redis computes, or EVALSHA would miss every time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "apr_sha1.h"

#include "rlaas_scripts.h"

static void sha1_matches_body(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < RLAAS_SCRIPT_COUNT; i++) {
        const rlaas_script_t *sc = &rlaas_scripts[i];
        unsigned char d[APR_SHA1_DIGESTSIZE];
        char hex[41];
        apr_sha1_ctx_t ctx;
        int j;

        assert_non_null(sc->body);
        assert_int_equal(strlen(sc->body), sc->len);
        assert_true(sc->len > 0);
        apr_sha1_init(&ctx);
        apr_sha1_update_binary(&ctx, (const unsigned char *)sc->body,
                               (unsigned int)sc->len);
        apr_sha1_final(d, &ctx);
        for (j = 0; j < APR_SHA1_DIGESTSIZE; j++)
            snprintf(hex + 2 * j, 3, "%02x", d[j]);
        assert_string_equal(hex, sc->sha1);
    }
}

static void scripts_in_strategy_order(void **state)
{
    (void)state;
    assert_string_equal(rlaas_scripts[RLAAS_STRATEGY_FIXED].file, "fixed");
    assert_string_equal(rlaas_scripts[RLAAS_STRATEGY_SLIDING_LOG].file,
                        "sliding_log");
    assert_string_equal(rlaas_scripts[RLAAS_STRATEGY_SLIDING].file, "sliding");
    assert_string_equal(rlaas_scripts[RLAAS_STRATEGY_TOKEN].file, "token");
    assert_string_equal(rlaas_scripts[RLAAS_STRATEGY_LEAKY].file, "leaky");
    assert_string_equal(rlaas_scripts[RLAAS_STRATEGY_GCRA].file, "gcra");
    assert_string_equal(rlaas_scripts[RLAAS_SCRIPT_MULTI].file, "multi");
    assert_string_equal(rlaas_scripts[RLAAS_SCRIPT_LEASE].file, "lease");
    assert_string_equal(rlaas_scripts[RLAAS_SCRIPT_CREDIT].file, "credit");
    assert_string_equal(rlaas_scripts[RLAAS_SCRIPT_RELEASE].file, "release");
}

/* Concurrency limits are decided by the multi script (with the other
 * policies of the request), and given back by the release script. */
static void concurrency_in_multi(void **state)
{
    (void)state;
    assert_non_null(strstr(rlaas_scripts[RLAAS_SCRIPT_MULTI].body,
                           "local function rlaas_concurrency("));
    assert_non_null(strstr(rlaas_scripts[RLAAS_SCRIPT_RELEASE].body,
                           "redis.call('ZREM', KEYS[i], ARGV[i])"));
}

/* A strategy's script calls its own function; the multi script holds all
 * six. */
static void bodies_are_functions(void **state)
{
    static const char *const fn[RLAAS_STRATEGY_COUNT] = {
        "rlaas_fixed", "rlaas_sliding_log", "rlaas_sliding",
        "rlaas_token", "rlaas_leaky",       "rlaas_gcra"};
    char call[64];
    int i;

    (void)state;
    for (i = 0; i < RLAAS_STRATEGY_COUNT; i++) {
        snprintf(call, sizeof(call), "\nreturn one(%s)\n", fn[i]);
        assert_non_null(strstr(rlaas_scripts[i].body, call));
        snprintf(call, sizeof(call), "local function %s(", fn[i]);
        assert_non_null(strstr(rlaas_scripts[RLAAS_SCRIPT_MULTI].body, call));
    }
}

static void time_comes_from_redis(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < RLAAS_SCRIPT_COUNT; i++) {
        /* release gives slots back: no time in it (forget reads it for
         * the marks of a reset) */
        if (i == RLAAS_SCRIPT_RELEASE)
            assert_null(strstr(rlaas_scripts[i].body, "TIME"));
        else
            assert_non_null(
                strstr(rlaas_scripts[i].body, "redis.call('TIME')"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sha1_matches_body),
        cmocka_unit_test(scripts_in_strategy_order),
        cmocka_unit_test(time_comes_from_redis),
        cmocka_unit_test(bodies_are_functions),
        cmocka_unit_test(concurrency_in_multi),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
