/* RateLimit header values and modes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_headers.h"

static void modes(void **state)
{
    rlaas_headers_e m;

    (void)state;
    assert_null(rlaas_parse_headers_mode("draft", &m));
    assert_int_equal(m, RLAAS_HEADERS_DRAFT);
    assert_null(rlaas_parse_headers_mode("legacy", &m));
    assert_int_equal(m, RLAAS_HEADERS_LEGACY);
    assert_null(rlaas_parse_headers_mode("both", &m));
    assert_int_equal(m & RLAAS_HEADERS_DRAFT, RLAAS_HEADERS_DRAFT);
    assert_int_equal(m & RLAAS_HEADERS_LEGACY, RLAAS_HEADERS_LEGACY);
    assert_null(rlaas_parse_headers_mode("off", &m));
    assert_int_equal(m, RLAAS_HEADERS_OFF);
    /* keywords are case-insensitive, as httpd's own */
    assert_null(rlaas_parse_headers_mode("Draft", &m));
    assert_int_equal(m, RLAAS_HEADERS_DRAFT);
    assert_non_null(rlaas_parse_headers_mode("drafts", &m));
    assert_non_null(rlaas_parse_headers_mode("", &m));
}

static void policy(void **state)
{
    char buf[128];

    (void)state;
    rlaas_fmt_policy(buf, sizeof(buf), "default", 5, 5000);
    assert_string_equal(buf, "\"default\";q=5;w=5");
    rlaas_fmt_policy(buf, sizeof(buf), "api", 1000000000, 86400000);
    assert_string_equal(buf, "\"api\";q=1000000000;w=86400");
    /* sub-second and fractional windows round up, never to 0 */
    rlaas_fmt_policy(buf, sizeof(buf), "x", 1, 500);
    assert_string_equal(buf, "\"x\";q=1;w=1");
    rlaas_fmt_policy(buf, sizeof(buf), "x", 1, 1500);
    assert_string_equal(buf, "\"x\";q=1;w=2");
}

static void ratelimit(void **state)
{
    char buf[128];
    rlaas_verdict_t v = {1, 3, 4200, 0};

    (void)state;
    rlaas_fmt_ratelimit(buf, sizeof(buf), "default", &v);
    assert_string_equal(buf, "\"default\";r=3;t=5");
    v.remaining = 0;
    v.reset_ms = 0;
    rlaas_fmt_ratelimit(buf, sizeof(buf), "default", &v);
    assert_string_equal(buf, "\"default\";r=0;t=0");
}

/* A buffer too short for the item holds as much of it as fits, as
 * snprintf leaves it, and the length returned is the whole item's; a
 * buffer just long enough takes the item written straight in. */
static void short_buffers(void **state)
{
    char full[256], buf[256];
    const char *name = "a-zone-name-of-some-length";
    rlaas_verdict_t v = {1, INT64_MIN, INT64_MAX, 0};
    int len, got;
    size_t size;

    (void)state;
    len = rlaas_fmt_ratelimit(full, sizeof(full), name, &v);
    assert_int_equal(len, (int)strlen(full));
    for (size = 0; size <= (size_t)len + 60; size++) {
        memset(buf, 'Z', sizeof(buf));
        got = rlaas_fmt_ratelimit(buf, size, name, &v);
        assert_int_equal(got, len);
        if (size == 0) {
            assert_int_equal(buf[0], 'Z');
            continue;
        }
        assert_int_equal(strlen(buf),
                         size - 1 < (size_t)len ? size - 1 : (size_t)len);
        assert_memory_equal(buf, full, strlen(buf));
        assert_int_equal(buf[size], 'Z'); /* nothing beyond the buffer */
    }
    len = rlaas_fmt_policy(full, sizeof(full), name, INT64_MAX, INT64_MAX);
    assert_int_equal(len, (int)strlen(full));
    for (size = 1; size <= (size_t)len + 60; size++) {
        got = rlaas_fmt_policy(buf, size, name, INT64_MAX, INT64_MAX);
        assert_int_equal(got, len);
        assert_memory_equal(buf, full, strlen(buf));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(modes),
        cmocka_unit_test(policy),
        cmocka_unit_test(ratelimit),
        cmocka_unit_test(short_buffers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
