/* Tenant roots (rlaas_troot.h): which patterns RLaaSTenantRoot accepts,
 * and the root a directory gets under each. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "rlaas_troot.h"

static void patterns(void **state)
{
    (void)state;
    assert_null(rlaas_troot_check("/home/*/public_html"));
    assert_null(rlaas_troot_check("/srv/mass/*"));
    assert_null(rlaas_troot_check("/srv/mass/*/"));
    assert_null(rlaas_troot_check("/srv/www/special"));
    assert_null(rlaas_troot_check("/*"));
    assert_non_null(rlaas_troot_check(""));
    assert_non_null(rlaas_troot_check("/"));
    assert_non_null(rlaas_troot_check("srv/mass/*"));
    assert_non_null(rlaas_troot_check("*/x"));
    assert_non_null(rlaas_troot_check("/srv//mass"));
    assert_non_null(rlaas_troot_check("/srv/../etc"));
    assert_non_null(rlaas_troot_check("/srv/./mass"));
    assert_non_null(rlaas_troot_check("/home/user*/www"));
    assert_non_null(rlaas_troot_check("/home/**/www"));
}

static size_t match(const char *pattern, const char *path, int *segs)
{
    return rlaas_troot_match(pattern, path, strlen(path), segs);
}

static void roots(void **state)
{
    int segs;

    (void)state;
    /* a .htaccess anywhere in a tenant's tree: the tree's top */
    assert_int_equal(match("/srv/mass/*", "/srv/mass/t1/", &segs), 12);
    assert_int_equal(segs, 3);
    assert_int_equal(match("/srv/mass/*", "/srv/mass/t1/blog/x/", &segs), 12);
    assert_int_equal(match("/srv/mass/*/", "/srv/mass/t1", &segs), 12);
    assert_int_equal(
        match("/home/*/public_html", "/home/bob/public_html/", &segs), 21);
    assert_int_equal(segs, 3);
    /* two tenants, two roots; a name is a whole segment */
    assert_int_equal(match("/srv/mass/*", "/srv/mass/t2/", &segs), 12);
    assert_int_equal(match("/srv/mass/*", "/srv/massive/t2/", &segs), 0);
    assert_int_equal(match("/home/*/public_html", "/home/bob/private/", &segs),
                     0);
    /* above the tenants' level: no tenant root */
    assert_int_equal(match("/srv/mass/*", "/srv/mass/", &segs), 0);
    assert_int_equal(match("/srv/mass/*", "/srv/", &segs), 0);
    assert_int_equal(match("/srv/mass/*", "/", &segs), 0);
    assert_int_equal(match("/srv/mass/*", "", &segs), 0);
    /* a literal pattern names one tree */
    assert_int_equal(match("/srv/www/special", "/srv/www/special/a/", &segs),
                     16);
    /* case matters, as it does to the file system */
    assert_int_equal(match("/srv/Mass/*", "/srv/mass/t1/", &segs), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(patterns),
        cmocka_unit_test(roots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
