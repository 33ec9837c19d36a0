/* The cookie finder: the first pair of that name, whatever else the
 * header holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_cookie.h"

/* The value of name in hdr, or NULL. */
static const char *find(const char *hdr, const char *name)
{
    static char out[256];
    const char *v;
    size_t n;

    if (!rlaas_cookie_find(hdr, strlen(hdr), name, strlen(name), &v, &n))
        return NULL;
    assert_true(v >= hdr && v + n <= hdr + strlen(hdr));
    memcpy(out, v, n);
    out[n] = '\0';
    return out;
}

static void first_of_a_name_wins(void **state)
{
    (void)state;
    assert_string_equal(find("sid=a; sid=b", "sid"), "a");
    assert_string_equal(find("x=1; sid=a; sid=b; y=2", "sid"), "a");
    assert_string_equal(find("sid=b; sid=a", "sid"), "b");
}

static void names_match_whole_and_exactly(void **state)
{
    (void)state;
    assert_null(find("xsid=1; sidx=2", "sid"));
    assert_null(find("SID=1", "sid"));
    assert_string_equal(find("SID=1; sid=2", "sid"), "2");
    assert_null(find("a=sid=1", "sid"));
    assert_null(find("a=1, b=sid=2", "sid"));
    assert_null(find("", "sid"));
}

static void separators_and_white_space(void **state)
{
    (void)state;
    assert_string_equal(find(" a=1 ;sid=v ; b=2", "sid"), "v");
    assert_string_equal(find("a=1;sid=v", "sid"), "v");
    assert_string_equal(find("\tsid\t=\tv\t", "sid"), "v");
    /* httpd joins repeated Cookie fields with ", " */
    assert_string_equal(find("other=1, sid=a", "sid"), "a");
    assert_string_equal(find("other=1, sid=a; sid=b", "sid"), "a");
}

static void values(void **state)
{
    (void)state;
    /* '=' belongs to the value (base64) */
    assert_string_equal(find("sid=YWI=; x=1", "sid"), "YWI=");
    assert_string_equal(find("sid==", "sid"), "=");
    /* quotes are kept: such a value is hashed like any other */
    assert_string_equal(find("sid=\"a b\"", "sid"), "\"a b\"");
    /* an empty value is found (and falls back to the address later) */
    assert_string_equal(find("sid=; sid=b", "sid"), "");
    assert_string_equal(find("sid=", "sid"), "");
}

static void pairs_without_equals_are_skipped(void **state)
{
    (void)state;
    assert_string_equal(find("sid; sid=a", "sid"), "a");
    assert_string_equal(find(";;, ;sid=a;;", "sid"), "a");
    assert_null(find("sid", "sid"));
    assert_null(find("sid;", "sid"));
    assert_string_equal(find("=x; sid=a", "sid"), "a");
}

static void length_is_respected(void **state)
{
    const char *v;
    size_t n;

    (void)state;
    /* the bytes after len are not read: "sid=ab" cut to "sid=a" */
    assert_true(rlaas_cookie_find("sid=ab", 5, "sid", 3, &v, &n));
    assert_int_equal(n, 1);
    assert_false(rlaas_cookie_find("sid=ab", 2, "sid", 3, &v, &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_of_a_name_wins),
        cmocka_unit_test(names_match_whole_and_exactly),
        cmocka_unit_test(separators_and_white_space),
        cmocka_unit_test(values),
        cmocka_unit_test(pairs_without_equals_are_skipped),
        cmocka_unit_test(length_is_respected),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
