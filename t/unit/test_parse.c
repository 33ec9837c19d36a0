/* Directive value parsers: what is accepted, what is refused and why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_parse.h"

static void limit_accepts_range(void **state)
{
    int64_t v = 0;

    (void)state;
    assert_null(rlaas_parse_limit("1", &v));
    assert_int_equal(v, 1);
    assert_null(rlaas_parse_limit("1000000000", &v));
    assert_int_equal(v, 1000000000);
    assert_null(rlaas_parse_limit("007", &v));
    assert_int_equal(v, 7);
}

static void limit_refuses_bad(void **state)
{
    static const char *bad[] = {"0",
                                "-1",
                                "abc",
                                "",
                                "1000000001",
                                "1.5",
                                " 5",
                                "5 ",
                                "5x",
                                "+5",
                                "99999999999999999999999999",
                                "0x10"};
    int64_t v = 42;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *err = rlaas_parse_limit(bad[i], &v);
        assert_non_null(err);
        assert_non_null(strstr(err, "1 to 1000000000"));
        assert_int_equal(v, 42); /* output untouched on error */
    }
}

static void duration_units(void **state)
{
    static const struct {
        const char *in;
        int64_t ms;
    } ok[] = {{"500ms", 500}, {"30s", 30000},  {"1m", 60000},
              {"5m", 300000}, {"1h", 3600000}, {"1d", 86400000},
              {"45", 45000},  {"1ms", 1},      {"30d", 2592000000LL}};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t v = -1;
        assert_null(rlaas_parse_duration_ms(ok[i].in, 1, 2592000000LL, &v));
        assert_int_equal(v, ok[i].ms);
    }
}

static void duration_refuses_bad(void **state)
{
    static const char *bad[] = {"abc",
                                "0",
                                "12x",
                                "-5s",
                                "",
                                "0ms",
                                "s",
                                "1 s",
                                "1S",
                                "31d",
                                "1.5s",
                                "ms5",
                                "999999999999999999999d"};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v = -7;
        assert_non_null(rlaas_parse_duration_ms(bad[i], 1, 2592000000LL, &v));
        assert_int_equal(v, -7);
    }
}

static void duration_bounds(void **state)
{
    int64_t v;

    (void)state;
    assert_non_null(rlaas_parse_duration_ms("61s", 1, 60000, &v));
    assert_null(rlaas_parse_duration_ms("60s", 1, 60000, &v));
    assert_non_null(rlaas_parse_duration_ms("5ms", 10, 60000, &v));
}

static void strategies_and_aliases(void **state)
{
    static const struct {
        const char *name;
        rlaas_strategy_e st;
    } ok[] = {{"fixed", RLAAS_STRATEGY_FIXED},
              {"fixed-window-algo", RLAAS_STRATEGY_FIXED},
              {"fixed_window", RLAAS_STRATEGY_FIXED},
              {"sliding-window-algo", RLAAS_STRATEGY_SLIDING_LOG},
              {"sliding_log", RLAAS_STRATEGY_SLIDING_LOG},
              {"sliding", RLAAS_STRATEGY_SLIDING},
              {"sliding_window", RLAAS_STRATEGY_SLIDING},
              {"token", RLAAS_STRATEGY_TOKEN},
              {"token_bucket", RLAAS_STRATEGY_TOKEN},
              {"leaky", RLAAS_STRATEGY_LEAKY},
              {"leaky_bucket", RLAAS_STRATEGY_LEAKY},
              {"gcra", RLAAS_STRATEGY_GCRA}};
    rlaas_strategy_e st;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_null(rlaas_parse_strategy(ok[i].name, &st));
        assert_int_equal(st, ok[i].st);
    }
    /* keywords are case-insensitive, as httpd's own */
    assert_null(rlaas_parse_strategy("Fixed", &st));
    assert_int_equal(st, RLAAS_STRATEGY_FIXED);
    assert_null(rlaas_parse_strategy("SLIDING-Window-Algo", &st));
    assert_int_equal(st, RLAAS_STRATEGY_SLIDING_LOG);
    assert_non_null(rlaas_parse_strategy("fixed ", &st));
    assert_non_null(rlaas_parse_strategy("", &st));
    assert_non_null(strstr(rlaas_parse_strategy("nope", &st), "gcra"));
    assert_string_equal(rlaas_strategy_name(RLAAS_STRATEGY_SLIDING_LOG),
                        "sliding_log");
}

static void sources(void **state)
{
    rlaas_source_t s;

    (void)state;
    assert_null(rlaas_parse_source("ip", &s));
    assert_int_equal(s.type, RLAAS_SRC_IP);
    assert_false(s.credential);
    assert_null(rlaas_parse_source("user", &s));
    assert_int_equal(s.type, RLAAS_SRC_USER);
    assert_null(rlaas_parse_source("api_key", &s));
    assert_int_equal(s.type, RLAAS_SRC_API_KEY);
    assert_true(s.credential);
    assert_null(rlaas_parse_source("header:X-Tenant", &s));
    assert_int_equal(s.type, RLAAS_SRC_HEADER);
    assert_int_equal(s.name_len, 8);
    assert_memory_equal(s.name, "X-Tenant", 8);
    assert_false(s.credential);
    assert_null(rlaas_parse_source("header:authorization", &s));
    assert_true(s.credential);
    assert_null(rlaas_parse_source("header:X-API-KEY", &s));
    assert_true(s.credential);
    assert_null(rlaas_parse_source("cookie:sid", &s));
    assert_int_equal(s.type, RLAAS_SRC_COOKIE);
    assert_true(s.credential);
    assert_null(rlaas_parse_source("query:client", &s));
    assert_int_equal(s.type, RLAAS_SRC_QUERY);
    assert_null(rlaas_parse_source("env:TENANT", &s));
    assert_int_equal(s.type, RLAAS_SRC_ENV);
    assert_null(rlaas_parse_source("expr=%{HTTP_HOST}", &s));
    assert_int_equal(s.type, RLAAS_SRC_EXPR);
    assert_string_equal(s.name, "%{HTTP_HOST}");
}

static void sources_refused(void **state)
{
    static const char *bad[] = {"",          "IPS",       "ips",
                                "header",    "header:",   "header:a b",
                                "cookie:",   "query:x=y", "env:",
                                "expr=",     "host",      "ip:foo",
                                "header:a:b"};
    rlaas_source_t s;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_non_null(rlaas_parse_source(bad[i], &s));
    /* keywords are case-insensitive, as httpd's own; names keep theirs */
    assert_null(rlaas_parse_source("IP", &s));
    assert_int_equal(s.type, RLAAS_SRC_IP);
    assert_null(rlaas_parse_source("Header:X-Client", &s));
    assert_int_equal(s.type, RLAAS_SRC_HEADER);
    assert_string_equal(s.name, "X-Client");
    assert_null(rlaas_parse_source("API_KEY", &s));
    assert_int_equal(s.credential, 1);
}

static void names_and_prefix(void **state)
{
    char longname[80];

    (void)state;
    assert_null(rlaas_parse_name("api-v1"));
    assert_non_null(rlaas_parse_name("a:b"));
    assert_non_null(rlaas_parse_name(""));
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_non_null(rlaas_parse_name(longname));
    assert_null(rlaas_parse_prefix("rlaas:rate_limit:"));
    assert_non_null(rlaas_parse_prefix("has space"));
    assert_non_null(rlaas_parse_prefix("{slot}"));
    assert_non_null(rlaas_parse_prefix(""));
}

static void redis_addresses(void **state)
{
    char host[300];
    int port = -1, is_unix = -1;

    (void)state;
    assert_null(rlaas_parse_redis_addr("redis.example", host, &port, &is_unix));
    assert_string_equal(host, "redis.example");
    assert_int_equal(port, 6379);
    assert_int_equal(is_unix, 0);
    assert_null(rlaas_parse_redis_addr("10.0.0.5:6380", host, &port, &is_unix));
    assert_string_equal(host, "10.0.0.5");
    assert_int_equal(port, 6380);
    assert_null(rlaas_parse_redis_addr("[::1]:7000", host, &port, &is_unix));
    assert_string_equal(host, "::1");
    assert_int_equal(port, 7000);
    assert_null(rlaas_parse_redis_addr("[::1]", host, &port, &is_unix));
    assert_int_equal(port, 6379);
    assert_null(
        rlaas_parse_redis_addr("unix:/run/redis.sock", host, &port, &is_unix));
    assert_string_equal(host, "/run/redis.sock");
    assert_int_equal(is_unix, 1);
}

static void redis_addresses_refused(void **state)
{
    static const char *bad[] = {"",           ":6379",    "host:",  "host:0",
                                "host:65536", "host:12x", "unix:",  "unix:rel",
                                "[::1",       "[]:6379",  "[::1]x", "ho st",
                                "[zz]:1",     "host:-1"};
    char host[300];
    int port, is_unix;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_non_null(rlaas_parse_redis_addr(bad[i], host, &port, &is_unix));
}

static void nonneg_int(void **state)
{
    int64_t v;

    (void)state;
    assert_null(rlaas_parse_nonneg_int("0", 15, &v));
    assert_int_equal(v, 0);
    assert_null(rlaas_parse_nonneg_int("15", 15, &v));
    assert_non_null(rlaas_parse_nonneg_int("16", 15, &v));
    assert_non_null(rlaas_parse_nonneg_int("-1", 15, &v));
}

/* The words of a line, joined with '|'; "ERR" for an open quote. */
static const char *words(const char *line)
{
    static char joined[256];
    char w[128];
    size_t n = 0;
    int rc;

    joined[0] = '\0';
    while ((rc = rlaas_parse_word(&line, w)) == 1) {
        n += (size_t)snprintf(joined + n, sizeof(joined) - n, "%s%s",
                              n ? "|" : "", w);
    }
    return rc < 0 ? "ERR" : joined;
}

static void directive_words(void **state)
{
    (void)state;
    assert_string_equal(words("api 10 1s"), "api|10|1s");
    assert_string_equal(words("  api\t10   1s  "), "api|10|1s");
    assert_string_equal(words("a 1 1s key=\"ip api_key\" cost=2"),
                        "a|1|1s|key=ip api_key|cost=2");
    assert_string_equal(words("key='ip \"expr=%{A}\"'"),
                        "key=ip \"expr=%{A}\"");
    assert_string_equal(words("\"a b\"c d"), "a bc|d");
    assert_string_equal(words("key=\"\""), "key=");
    assert_string_equal(words(""), "");
    assert_string_equal(words("   "), "");
    assert_string_equal(words("key=\"ip"), "ERR");
    assert_string_equal(words("a 'b"), "ERR");
}

static void sizes(void **state)
{
    static const struct {
        const char *in;
        int64_t bytes;
    } ok[] = {{"65536", 65536},       {"64K", 65536},    {"64k", 65536},
              {"10M", 10485760},      {"10m", 10485760}, {"1G", 1073741824},
              {"4096M", 4294967296LL}};
    static const char *const bad[] = {"",
                                      "M",
                                      "10MB",
                                      "10 M",
                                      "-1M",
                                      "1.5M",
                                      "10T",
                                      "0x10",
                                      " 10M",
                                      "10M ",
                                      "63K",
                                      "5G",
                                      "99999999999999999999"};
    int64_t v;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_null(rlaas_parse_size(ok[i].in, 65536, 4LL << 30, &v));
        assert_int_equal(v, ok[i].bytes);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_non_null(rlaas_parse_size(bad[i], 65536, 4LL << 30, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limit_accepts_range),
        cmocka_unit_test(limit_refuses_bad),
        cmocka_unit_test(duration_units),
        cmocka_unit_test(duration_refuses_bad),
        cmocka_unit_test(duration_bounds),
        cmocka_unit_test(strategies_and_aliases),
        cmocka_unit_test(sources),
        cmocka_unit_test(sources_refused),
        cmocka_unit_test(names_and_prefix),
        cmocka_unit_test(redis_addresses),
        cmocka_unit_test(redis_addresses_refused),
        cmocka_unit_test(nonneg_int),
        cmocka_unit_test(directive_words),
        cmocka_unit_test(sizes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
