/* The client address as the ip source names it: IPv4 whole, IPv6 grouped
 * by RLaaSIPv6Prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_ip.h"
#include "rlaas_key.h"

static const char *render(const char *addr, int prefix)
{
    static char out[RLAAS_IP_TEXT_MAX];
    size_t n = rlaas_ip_render(out, addr, strlen(addr), prefix);

    if (n == 0)
        return NULL;
    assert_int_equal(strlen(out), n);
    assert_true(n < RLAAS_IP_TEXT_MAX);
    /* key text as it is: letters, digits and ".-_" only, and what the
     * key builder takes for an address */
    assert_true(rlaas_key_is_safe(out, n));
    assert_true(rlaas_key_address_like(out, n));
    assert_false(rlaas_key_suffix_like(out, n));
    return out;
}

static void ipv4_whole(void **state)
{
    (void)state;
    assert_string_equal(render("203.0.113.9", 64), "203.0.113.9");
    assert_string_equal(render("0.0.0.0", 32), "0.0.0.0");
    assert_string_equal(render("255.255.255.255", 128), "255.255.255.255");
    assert_string_equal(render("10.200.0.99", 64), "10.200.0.99");
    assert_string_equal(render("1.2.3.4%eth0", 64), "1.2.3.4");
}

static void ipv4_mapped_is_ipv4(void **state)
{
    (void)state;
    assert_string_equal(render("::ffff:203.0.113.9", 64), "203.0.113.9");
    assert_string_equal(render("::FFFF:10.0.0.1", 128), "10.0.0.1");
    assert_string_equal(render("0:0:0:0:0:ffff:c000:0201", 64), "192.0.2.1");
    /* IPv4-compatible (deprecated) and NAT64 addresses stay IPv6 */
    assert_string_equal(render("::203.0.113.9", 64), "0-0-0-0_64");
    assert_string_equal(render("64:ff9b::203.0.113.9", 96),
                        "64-ff9b-0-0-0-0_96");
}

static void ipv6_prefixes(void **state)
{
    const char *a = "2001:db8:1:2:aaaa::1";

    (void)state;
    assert_string_equal(render(a, 64), "2001-db8-1-2_64");
    assert_string_equal(render(a, 128), "2001-db8-1-2-aaaa-0-0-1_128");
    assert_string_equal(render(a, 127), "2001-db8-1-2-aaaa-0-0-0_127");
    assert_string_equal(render("2001:db8:1:2:aaaa::3", 127),
                        "2001-db8-1-2-aaaa-0-0-2_127");
    assert_string_equal(render(a, 48), "2001-db8-1_48");
    assert_string_equal(render(a, 32), "2001-db8_32");
    /* /56: four groups, the last one's low byte masked */
    assert_string_equal(render("2001:db8:1:2ff::1", 56), "2001-db8-1-200_56");
    assert_string_equal(render("2001:db8:1:ff::1", 56), "2001-db8-1-0_56");
    /* one /64, two addresses; the next /64 is another client */
    assert_string_equal(render("2001:db8:1:2::7", 64), "2001-db8-1-2_64");
    assert_string_equal(render("2001:db8:1:3::7", 64), "2001-db8-1-3_64");
    /* the longest rendering fits */
    assert_string_equal(render("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 128),
                        "ffff-ffff-ffff-ffff-ffff-ffff-ffff-ffff_128");
}

static void compressed_and_cased_forms(void **state)
{
    (void)state;
    assert_string_equal(render("2001:DB8:0001:0002::", 64), "2001-db8-1-2_64");
    assert_string_equal(render("2001:0db8:0001:0002:0000:0000:0000:0001", 64),
                        "2001-db8-1-2_64");
    assert_string_equal(render("::", 64), "0-0-0-0_64");
    assert_string_equal(render("::1", 128), "0-0-0-0-0-0-0-1_128");
    assert_string_equal(render("fe80::1%eth0", 64), "fe80-0-0-0_64");
}

static void garbage_is_no_address(void **state)
{
    static const char *bad[] = {"",
                                "-",
                                "localhost",
                                "1.2.3",
                                "1.2.3.4.5",
                                "256.1.1.1",
                                "01.2.3.4",
                                "1.2.3.4 ",
                                "1.2.3.04",
                                "1.2.3.",
                                ".1.2.3",
                                "1..2.3",
                                "1.2.3.4.",
                                "1.2.3.1000",
                                "1.2.3.256",
                                "+1.2.3.4",
                                ":::1",
                                "2001:db8::1::2",
                                "2001:db8:1:2:3:4:5:6:7",
                                "12345::",
                                "g::1",
                                "[2001:db8::1]",
                                "unix:/run/x.sock"};
    char out[RLAAS_IP_TEXT_MAX];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_null(render(bad[i], 64));
    /* a NUL inside does not cut the text short */
    assert_int_equal(rlaas_ip_render(out, "1.2.3.4\0x", 9, 64), 0);
    /* a text longer than any address */
    assert_int_equal(
        rlaas_ip_render(out, "1111:2222:3333:4444:5555:6666:7777:8888:9999", 44,
                        64),
        0);
}

static void prefix_out_of_range(void **state)
{
    char out[RLAAS_IP_TEXT_MAX];

    (void)state;
    assert_int_equal(rlaas_ip_render(out, "2001:db8::1", 11, 31), 0);
    assert_int_equal(rlaas_ip_render(out, "2001:db8::1", 11, 129), 0);
    assert_int_equal(rlaas_ip_render(out, "1.2.3.4", 7, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ipv4_whole),
        cmocka_unit_test(ipv4_mapped_is_ipv4),
        cmocka_unit_test(ipv6_prefixes),
        cmocka_unit_test(compressed_and_cased_forms),
        cmocka_unit_test(garbage_is_no_address),
        cmocka_unit_test(prefix_out_of_range),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
