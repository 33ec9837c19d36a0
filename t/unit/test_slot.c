/* Cluster slots as the Redis Cluster specification gives them: the CRC16
 * test vector, hash tags and their corner cases, and the slots of keys
 * checked against a real cluster's CLUSTER KEYSLOT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_cluster.h"
#include "rlaas_reply.h"
#include "rlaas_slot.h"

static int slot(const char *k)
{
    return rlaas_slot(k, strlen(k));
}

static void crc16_vector(void **state)
{
    (void)state;
    /* the specification's check value for "123456789" */
    assert_int_equal(rlaas_crc16("123456789", 9), 0x31C3);
    assert_int_equal(rlaas_crc16("", 0), 0);
}

static void hash_tags(void **state)
{
    (void)state;
    /* the specification's examples: the tag alone decides */
    assert_int_equal(slot("{user1000}.following"), slot("user1000"));
    assert_int_equal(slot("{user1000}.followers"), slot("user1000"));
    assert_int_equal(slot("foo{}{bar}"), slot("foo{}{bar}")); /* whole key */
    assert_int_not_equal(slot("foo{}{bar}"), slot("bar"));
    assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
    assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
    assert_int_equal(slot("no braces"), rlaas_crc16("no braces", 9) % 16384);
    assert_int_equal(slot("open{only"), rlaas_crc16("open{only", 9) % 16384);
    /* a module key: every state of one identity on one slot */
    assert_int_equal(slot("rlaas:rate_limit:login:{alice}:tb"),
                     slot("rlaas:rate_limit:login:{alice}:2832"));
    assert_int_equal(slot("rlaas:rate_limit:{alice}"), slot("alice"));
}

/* CLUSTER KEYSLOT of a Redis 7.0 cluster for these keys. */
static void known_slots(void **state)
{
    (void)state;
    assert_int_equal(slot("foo"), 12182);
    assert_int_equal(slot("bar"), 5061);
    assert_int_equal(slot("alice"), 749);
    assert_int_equal(slot("user1000"), 3443);
}

/* MOVED and ASK as Redis Cluster sends them, and what is not one. */
static void redirects(void **state)
{
    char to[72], host[64];
    int slot = -1, port = 0;
    const char *e;

    (void)state;
#define RD(s) rlaas_reply_redirect((s), strlen(s), &slot, to, sizeof(to))
    assert_int_equal(RD("MOVED 3999 127.0.0.1:6381"), 1);
    assert_int_equal(slot, 3999);
    assert_string_equal(to, "127.0.0.1:6381");
    assert_int_equal(RD("ASK 16383 [::1]:7000"), 2);
    assert_int_equal(slot, 16383);
    assert_string_equal(to, "[::1]:7000");
    assert_int_equal(RD("MOVED 16384 127.0.0.1:6381"), 0); /* no such slot */
    assert_int_equal(RD("MOVED x 127.0.0.1:6381"), 0);
    assert_int_equal(RD("MOVED 12"), 0);
    assert_int_equal(RD("MOVED 12 "), 0);
    assert_int_equal(RD("MOVED 12 a b"), 0);
    assert_int_equal(RD("ASKING"), 0);
    assert_int_equal(RD("WRONGTYPE Operation against a key"), 0);
    e = "MOVED 1 "
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "a"
        "aaaaa:1";
    assert_int_equal(RD(e), 0); /* longer than the room given */
#undef RD
    assert_true(
        rlaas_cluster_hostport("127.0.0.1:6381", host, sizeof(host), &port));
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 6381);
    assert_true(rlaas_cluster_hostport("[2001:db8::1]:7000", host, sizeof(host),
                                       &port));
    assert_string_equal(host, "2001:db8::1");
    assert_int_equal(port, 7000);
    assert_true(rlaas_cluster_hostport("redis-3.example:6379", host,
                                       sizeof(host), &port));
    assert_string_equal(host, "redis-3.example");
    assert_false(rlaas_cluster_hostport("nohost", host, sizeof(host), &port));
    assert_false(rlaas_cluster_hostport(":6379", host, sizeof(host), &port));
    assert_false(rlaas_cluster_hostport("h:0", host, sizeof(host), &port));
    assert_false(rlaas_cluster_hostport("h:70000", host, sizeof(host), &port));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_vector),
        cmocka_unit_test(hash_tags),
        cmocka_unit_test(known_slots),
        cmocka_unit_test(redirects),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
