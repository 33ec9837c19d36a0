/* The whole key: its layout, its bound, and a property test that different
 * (zone, namespace, sources, values, address, strategy, window) tuples
 * never give the same Redis key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_ip.h"
#include "rlaas_keybuild.h"
#include "rlaas_slot.h"

#define P "rlaas:rate_limit:"

/* RLaaSKeySecret for final_key: NULL (SHA-1), or a secret the keyed
 * property test sets. */
static rlaas_key_secret_t *key_secret;

/* A tuple: what a request's key is made of. */
typedef struct {
    const char *zone;
    const char *ns; /* a tenant's namespace, or NULL */
    rlaas_strategy_e st;
    long window; /* fixed only: the number the script appends */
    const char *ip;
    int n;
    rlaas_source_t src[RLAAS_SOURCES_MAX];
    const char *val[RLAAS_SOURCES_MAX];
    size_t val_len[RLAAS_SOURCES_MAX];
} tuple_t;

static void source(tuple_t *t, const char *spec, const char *v)
{
    assert_null(rlaas_parse_source(spec, &t->src[t->n]));
    t->val[t->n] = v;
    t->val_len[t->n] = v ? strlen(v) : 0;
    t->n++;
}

static void tuple(tuple_t *t, const char *zone, rlaas_strategy_e st,
                  const char *ip)
{
    memset(t, 0, sizeof(*t));
    t->zone = zone;
    t->st = st;
    t->ip = ip;
}

/* The prefix, zone and namespace of a tuple's key. */
static void zone_of(const tuple_t *t, rlaas_key_spec_t *k)
{
    k->prefix = P;
    k->prefix_len = strlen(P);
    k->zone = t->zone;
    k->zone_len = t->zone ? strlen(t->zone) : 0;
    k->ns = t->ns;
    k->ns_len = t->ns ? strlen(t->ns) : 0;
}

/* The key of a tuple as Redis sees it: for fixed, with the window number
 * the script appends. Returns its length. */
static size_t final_key(char *out, const tuple_t *t)
{
    rlaas_key_part_t parts[RLAAS_SOURCES_MAX];
    rlaas_key_spec_t k;
    size_t n;
    int i;

    for (i = 0; i < t->n; i++) {
        parts[i].type = t->src[i].type;
        parts[i].name = t->src[i].name;
        parts[i].name_len = t->src[i].name_len;
        parts[i].credential = t->src[i].credential;
        parts[i].value = t->val[i];
        parts[i].value_len = t->val_len[i];
    }
    zone_of(t, &k);
    k.ip = t->ip;
    k.ip_len = t->ip ? strlen(t->ip) : 0;
    k.strategy = t->st;
    k.parts = parts;
    k.nparts = t->n;
    k.hashtag = 0;
    k.secret = key_secret;
    k.ip_rendered = 0; /* any text: checked */
    n = rlaas_key_build(out, &k);
    assert_true(n > 0 && n <= RLAAS_KEY_MAX);
    assert_int_equal(strlen(out), n);
    if (t->st == RLAAS_STRATEGY_FIXED)
        n += (size_t)sprintf(out + n, "%ld", t->window);
    return n;
}

static const char *key_of(const tuple_t *t)
{
    static char out[RLAAS_KEY_MAX + 32];

    final_key(out, t);
    return out;
}

static char *hashed(const char *v)
{
    static char out[4][RLAAS_SEG_HASH_LEN + 1];
    static int i;
    char *o = out[i++ % 4];

    o[0] = '~';
    rlaas_key_sha1_hex(o + 1, 32, v, strlen(v));
    o[RLAAS_SEG_HASH_LEN] = '\0';
    return o;
}

/* ---------------------------------------------------------------- layout */

static void default_forms_keep_the_seeds_layout(void **state)
{
    tuple_t t;

    (void)state;
    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "203.0.113.9");
    source(&t, "ip", NULL);
    assert_string_equal(key_of(&t), P "203.0.113.9");
    t.st = RLAAS_STRATEGY_FIXED;
    t.window = 28332000;
    assert_string_equal(key_of(&t), P "203.0.113.9:28332000");
    t.st = RLAAS_STRATEGY_TOKEN;
    assert_string_equal(key_of(&t), P "203.0.113.9:tb");

    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "203.0.113.9");
    source(&t, "user", "alice");
    assert_string_equal(key_of(&t), P "alice");
    t.st = RLAAS_STRATEGY_GCRA;
    assert_string_equal(key_of(&t), P "alice:gcra");
    t.zone = "login";
    t.st = RLAAS_STRATEGY_SLIDING;
    assert_string_equal(key_of(&t), P "login:alice:sw");
    t.val[0] = NULL; /* no user: the client address */
    assert_string_equal(key_of(&t), P "login:ip~203.0.113.9:sw");
    t.ip = "2001-db8-1-2_64";
    t.st = RLAAS_STRATEGY_LEAKY;
    assert_string_equal(key_of(&t), P "login:ip~2001-db8-1-2_64:lb");
}

/* A tenant's zone: "<zone>@<namespace>", or "@<namespace>" alone. */
static void namespaced_zones(void **state)
{
    char want[256];
    tuple_t t;

    (void)state;
    tuple(&t, "login", RLAAS_STRATEGY_SLIDING_LOG, "203.0.113.9");
    t.ns = "a.example";
    source(&t, "ip", NULL);
    assert_string_equal(key_of(&t), P "login@a.example:203.0.113.9");
    t.zone = NULL;
    t.st = RLAAS_STRATEGY_TOKEN;
    assert_string_equal(key_of(&t), P "@a.example:203.0.113.9:tb");
    tuple(&t, "login", RLAAS_STRATEGY_FIXED, "203.0.113.9");
    t.ns = "~0123456789abcdef";
    t.window = 7;
    source(&t, "header:X-User", "alice");
    snprintf(want, sizeof(want), P "login@~0123456789abcdef:h.x-user=alice:7");
    assert_string_equal(key_of(&t), want);
}

/* The zone part, what the local engine keeps zones apart by: the key's
 * prefix, zone and namespace, the same for every identity of the zone,
 * different for another zone or tenant. */
static size_t zone_len_of(const tuple_t *t)
{
    rlaas_key_spec_t k;

    zone_of(t, &k);
    return rlaas_key_zone_len(&k);
}

static void zone_part(void **state)
{
    static const struct {
        const char *zone, *ns, *part;
    } cases[] = {{"login", NULL, P "login:"},
                 {"login", "a.example", P "login@a.example:"},
                 {"login", "b.example", P "login@b.example:"},
                 {NULL, "a.example", P "@a.example:"},
                 {NULL, NULL, P}};
    char first[RLAAS_KEY_MAX + 32];
    size_t i, n;
    tuple_t t;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        tuple(&t, cases[i].zone, RLAAS_STRATEGY_TOKEN, "203.0.113.9");
        t.ns = cases[i].ns;
        source(&t, "header:X-Key", "alice");
        n = zone_len_of(&t);
        assert_int_equal(n, strlen(cases[i].part));
        strcpy(first, key_of(&t));
        assert_memory_equal(first, cases[i].part, n);
        /* another identity: the same zone part */
        t.val[0] = "bob";
        assert_memory_equal(key_of(&t), first, n);
        t.val[0] = NULL;
        assert_memory_equal(key_of(&t), first, n);
    }
}

static void namespace_text(void **state)
{
    char out[RLAAS_NS_MAX], want[1 + RLAAS_NS_HASH_HEX + 1], big[300];
    size_t n;

    (void)state;
    n = rlaas_key_namespace(out, "WWW.Tenant-A.example", 20);
    assert_int_equal(n, 20);
    assert_memory_equal(out, "www.tenant-a.example", 20);
    assert_true(rlaas_key_namespace_ok(out, n));
    /* anything else is hashed, of its lower-case text */
    n = rlaas_key_namespace(out, "[::1]", 5);
    assert_int_equal(n, 17);
    want[0] = '~';
    rlaas_key_sha1_hex(want + 1, RLAAS_NS_HASH_HEX, "[::1]", 5);
    assert_memory_equal(out, want, 17);
    n = rlaas_key_namespace(out, "A@B", 3);
    rlaas_key_sha1_hex(want + 1, RLAAS_NS_HASH_HEX, "a@b", 3);
    assert_memory_equal(out, want, 17);
    assert_true(rlaas_key_namespace_ok(out, n));
    memset(big, 'h', sizeof(big));
    assert_int_equal(rlaas_key_namespace(out, big, 64), 64);
    assert_int_equal(rlaas_key_namespace(out, big, 65), 17);
    assert_int_equal(rlaas_key_namespace(out, big, sizeof(big)), 17);
    assert_int_equal(rlaas_key_namespace(out, "", 0), 17);
    assert_false(rlaas_key_namespace_ok("a@b", 3));
    assert_false(rlaas_key_namespace_ok("a:b", 3));
    assert_false(rlaas_key_namespace_ok("a=b", 3));
    assert_false(rlaas_key_namespace_ok("A.example", 9));
    assert_false(rlaas_key_namespace_ok("~0123", 5));
    assert_false(rlaas_key_namespace_ok("", 0));
}

/* A tenant's namespace is its host's and a mark no host's has: "~t" for
 * the host's tenant, '~' and a hash for a tenant root's. */
static void tenant_namespace_text(void **state)
{
    char out[RLAAS_NS_MAX], host[RLAAS_NS_MAX], want[RLAAS_NS_MAX + 1],
        big[300];
    size_t n, h;

    (void)state;
    n = rlaas_key_tenant_namespace(out, "Mass.Example", 12, NULL, 0);
    assert_int_equal(n, 14);
    assert_memory_equal(out, "mass.example~t", 14);
    assert_true(rlaas_key_namespace_ok(out, n));
    n = rlaas_key_tenant_namespace(out, "mass.example", 12, "/srv/mass/t1", 12);
    memcpy(want, "mass.example~", 13);
    rlaas_key_sha1_hex(want + 13, RLAAS_NS_HASH_HEX, "/srv/mass/t1", 12);
    assert_int_equal(n, 13 + RLAAS_NS_HASH_HEX);
    assert_memory_equal(out, want, n);
    assert_true(rlaas_key_namespace_ok(out, n));
    /* two roots, two namespaces */
    rlaas_key_tenant_namespace(want, "mass.example", 12, "/srv/mass/t2", 12);
    assert_memory_not_equal(out, want, n);
    /* a hashed host: "~<16>~t", "~<16>~<16>"; the longest fits */
    memset(big, 'h', sizeof(big));
    h = rlaas_key_namespace(host, big, 65);
    n = rlaas_key_tenant_namespace(out, big, 65, NULL, 0);
    assert_int_equal(n, h + 2);
    assert_true(rlaas_key_namespace_ok(out, n));
    n = rlaas_key_tenant_namespace(out, big, 65, "/x", 2);
    assert_int_equal(n, 2 * (1 + RLAAS_NS_HASH_HEX));
    assert_true(rlaas_key_namespace_ok(out, n));
    n = rlaas_key_tenant_namespace(out, big, 64, "/x", 2);
    assert_int_equal(n, RLAAS_NS_MAX);
    assert_true(rlaas_key_namespace_ok(out, n));
    /* no host's namespace is a tenant's */
    assert_false(rlaas_key_namespace_ok("a~x", 3));
    assert_false(rlaas_key_namespace_ok("a~", 2));
    assert_false(rlaas_key_namespace_ok("~t", 2));
    assert_false(rlaas_key_namespace_ok("a~t~t", 5));
    assert_false(rlaas_key_namespace_ok("a~0123456789abcdef~t", 20));
    assert_false(rlaas_key_namespace_ok("a~0123456789ABCDEF", 18));
    assert_false(rlaas_key_namespace_ok("~0123456789abcdef~", 18));
    memset(want, 'h', sizeof(want));
    memcpy(want + 65, "~t", 2);
    assert_false(rlaas_key_namespace_ok(want, 67));
}

/* What a tenant's zone and its host's policy of the same name make. */
static void tenant_never_meets_its_host(void **state)
{
    char a[RLAAS_KEY_MAX + 1], b[RLAAS_KEY_MAX + 1], ns[RLAAS_NS_MAX],
        tns[RLAAS_NS_MAX];
    rlaas_key_part_t part = {RLAAS_SRC_IP, NULL, 0, 0, NULL, 0};
    rlaas_key_spec_t k;

    (void)state;
    memset(&k, 0, sizeof(k));
    k.prefix = "p:";
    k.prefix_len = 2;
    k.zone = "site-floor";
    k.zone_len = 10;
    k.ip = "192.0.2.1";
    k.ip_len = 9;
    k.parts = &part;
    k.nparts = 1;
    k.strategy = RLAAS_STRATEGY_SLIDING_LOG;
    k.ns = ns;
    k.ns_len = rlaas_key_namespace(ns, "host.example", 12);
    rlaas_key_build(a, &k);
    assert_string_equal(a, "p:site-floor@host.example:192.0.2.1");
    k.ns = tns;
    k.ns_len = rlaas_key_tenant_namespace(tns, "host.example", 12, NULL, 0);
    rlaas_key_build(b, &k);
    assert_string_equal(b, "p:site-floor@host.example~t:192.0.2.1");
    /* with a key prefix of its own the host's policy has no namespace */
    k.ns = NULL;
    k.ns_len = 0;
    rlaas_key_build(a, &k);
    assert_string_not_equal(a, b);
}

static void tagged_forms(void **state)
{
    char want[256];
    char x[9];
    tuple_t t;

    (void)state;
    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&t, "header:X-Client", "client-7");
    assert_string_equal(key_of(&t), P "h.x-client=client-7");
    /* a header holding an address is never the client with it */
    t.val[0] = "127.0.0.1";
    t.val_len[0] = 9;
    snprintf(want, sizeof(want), P "h.x-client=%s", hashed("127.0.0.1"));
    assert_string_equal(key_of(&t), want);

    tuple(&t, "api", RLAAS_STRATEGY_TOKEN, "127.0.0.1");
    source(&t, "header:X-A", "alice");
    source(&t, "header:X-B", "tb");
    snprintf(want, sizeof(want), P "api:h.x-a=alice:h.x-b=%s:tb", hashed("tb"));
    assert_string_equal(key_of(&t), want);

    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "198.51.100.7");
    source(&t, "ip", NULL);
    source(&t, "user", "bob");
    source(&t, "api_key", "k1");
    source(&t, "cookie:sid", "s1");
    source(&t, "query:tenant", "acme");
    source(&t, "env:PLAN", NULL);
    source(&t, "expr=%{HTTP_HOST}", "example.org");
    source(&t, "header:Authorization", "Basic x");
    rlaas_key_sha1_hex(x, 8, "%{HTTP_HOST}", 12);
    x[8] = '\0';
    snprintf(want, sizeof(want),
             P "ip=198.51.100.7:user=bob:key=%s:c.sid=%s:q.tenant=acme:"
               "e.PLAN=ip~198.51.100.7:x.%s=example.org:h.authorization=%s",
             hashed("k1"), hashed("s1"), x, hashed("Basic x"));
    assert_string_equal(key_of(&t), want);
}

static void single_non_default_source_is_tagged(void **state)
{
    char want[256];
    tuple_t t;

    (void)state;
    tuple(&t, NULL, RLAAS_STRATEGY_FIXED, "127.0.0.1");
    source(&t, "query:t", "alice");
    t.window = 5;
    assert_string_equal(key_of(&t), P "q.t=alice:5");
    /* two ip sources are not the default form either; no address: "-" */
    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, NULL);
    source(&t, "ip", NULL);
    source(&t, "ip", NULL);
    snprintf(want, sizeof(want), P "ip=%s:ip=%s", hashed("-"), hashed("-"));
    assert_string_equal(key_of(&t), want);
}

static void out_of_bounds_specs(void **state)
{
    char out[RLAAS_KEY_MAX + 1], pre[RLAAS_PREFIX_MAX + 2];
    rlaas_key_part_t part = {RLAAS_SRC_HEADER, "X-A", 3, 0, "v", 1};
    rlaas_key_spec_t k = {
        P,     strlen(P), NULL, 0,    NULL, 0,    RLAAS_STRATEGY_TOKEN,
        &part, 1,         0,    NULL, 0,    NULL, 0};

    (void)state;
    assert_true(rlaas_key_build(out, &k) > 0);
    k.zone = "a:b";
    k.zone_len = 3;
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.zone = "a=b";
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.zone = "a@b";
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.zone = "z";
    k.zone_len = 1;
    k.ns = "a@b";
    k.ns_len = 3;
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.ns = "a:b";
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.ns = "a.b";
    assert_true(rlaas_key_build(out, &k) > 0);
    k.ns = NULL;
    k.zone = NULL;
    k.nparts = 0;
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.nparts = RLAAS_SOURCES_MAX + 1;
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.nparts = 1;
    part.name = "X:A";
    assert_int_equal(rlaas_key_build(out, &k), 0);
    part.name = "X-A";
    k.strategy = RLAAS_CONCURRENCY + 1;
    assert_int_equal(rlaas_key_build(out, &k), 0);
    k.strategy = RLAAS_STRATEGY_TOKEN;
    memset(pre, 'p', sizeof(pre));
    k.prefix = pre;
    k.prefix_len = RLAAS_PREFIX_MAX + 1;
    assert_int_equal(rlaas_key_build(out, &k), 0);
}

/* The bound is reached, not passed: the longest prefix and zone, eight
 * sources with 64-byte names, each falling back to a 64-byte address. */
static void worst_case_is_the_bound(void **state)
{
    char out[RLAAS_KEY_MAX + 1], pre[RLAAS_PREFIX_MAX], zone[RLAAS_NAME_MAX],
        name[RLAAS_NAME_MAX], ip[RLAAS_SEG_RAW_MAX], ns[RLAAS_NS_MAX];
    rlaas_key_part_t parts[RLAAS_SOURCES_MAX];
    rlaas_key_spec_t k;
    int i;

    (void)state;
    memset(&k, 0, sizeof(k));
    memset(pre, 'p', sizeof(pre));
    memset(zone, 'z', sizeof(zone));
    memset(name, 'N', sizeof(name));
    memset(ip, '1', sizeof(ip));
    /* the longest namespace: a tenant root's under a 64-byte host */
    memset(ns, 'n', sizeof(ns));
    ns[RLAAS_HOST_NS_MAX] = '~';
    memset(ns + RLAAS_HOST_NS_MAX + 1, 'f', RLAAS_NS_HASH_HEX);
    ip[1] = '.'; /* address-like, so raw */
    for (i = 0; i < RLAAS_SOURCES_MAX; i++) {
        parts[i].type = RLAAS_SRC_HEADER;
        parts[i].name = name;
        parts[i].name_len = sizeof(name);
        parts[i].credential = 0;
        parts[i].value = NULL;
        parts[i].value_len = 0;
    }
    k.prefix = pre;
    k.prefix_len = sizeof(pre);
    k.zone = zone;
    k.zone_len = sizeof(zone);
    k.ns = ns;
    k.ns_len = sizeof(ns);
    k.ip = ip;
    k.ip_len = sizeof(ip);
    k.strategy = RLAAS_STRATEGY_GCRA;
    k.parts = parts;
    k.nparts = RLAAS_SOURCES_MAX;
    k.hashtag = 0;
    k.secret = NULL;
    assert_int_equal(rlaas_key_build(out, &k),
                     RLAAS_KEY_MAX - RLAAS_KEY_CLUSTER_MAX);
    assert_int_equal(strlen(out), RLAAS_KEY_MAX - RLAAS_KEY_CLUSTER_MAX);
    /* cluster: two braces more, and room for fixed's window number */
    k.hashtag = 1;
    assert_int_equal(rlaas_key_build(out, &k), RLAAS_KEY_MAX - 20);
}

/* Redis Cluster: the identity, and only it, between braces; every key of
 * one identity (all strategies, every fixed window) on one slot, and two
 * identities keyed apart as without the braces. */
static void cluster_hash_tag(void **state)
{
    static const char *const expect[RLAAS_STRATEGY_COUNT] = {
        "p:z:{h.x-user=alice}:",   "p:z:{h.x-user=alice}",
        "p:z:{h.x-user=alice}:sw", "p:z:{h.x-user=alice}:tb",
        "p:z:{h.x-user=alice}:lb", "p:z:{h.x-user=alice}:gcra"};
    char out[RLAAS_KEY_MAX + 1];
    rlaas_key_part_t part = {RLAAS_SRC_HEADER, "X-User", 6, 0, "alice", 5};
    rlaas_key_spec_t k;
    int st;

    (void)state;
    memset(&k, 0, sizeof(k));
    k.prefix = "p:";
    k.prefix_len = 2;
    k.zone = "z";
    k.zone_len = 1;
    k.ip = "192.0.2.1";
    k.ip_len = 9;
    k.parts = &part;
    k.nparts = 1;
    k.hashtag = 1;
    for (st = 0; st < RLAAS_STRATEGY_COUNT; st++) {
        k.strategy = (rlaas_strategy_e)st;
        assert_int_equal(rlaas_key_build(out, &k), strlen(expect[st]));
        assert_string_equal(out, expect[st]);
        assert_int_equal(rlaas_slot(out, strlen(out)),
                         rlaas_slot("h.x-user=alice", 14));
    }
    /* the seeds' default form, wrapped */
    part.type = RLAAS_SRC_USER;
    k.zone = NULL;
    k.zone_len = 0;
    k.strategy = RLAAS_STRATEGY_SLIDING_LOG;
    rlaas_key_build(out, &k);
    assert_string_equal(out, "p:{alice}");
}

/* ---------------------------------------------------------------- pairs
 * The collisions issue 11 saw, each as a pair that must differ. */

static void known_attacks_differ(void **state)
{
    char a[RLAAS_KEY_MAX + 32];
    tuple_t t, u;

    (void)state;
    /* header:X-A header:X-B = alice, tb against alice's token bucket */
    tuple(&t, "z", RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&t, "header:X-A", "alice");
    source(&t, "header:X-B", "tb");
    tuple(&u, "z", RLAAS_STRATEGY_TOKEN, "127.0.0.1");
    source(&u, "header:X-A", "alice");
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    /* a header holding 127.0.0.1 against the client 127.0.0.1 */
    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "10.0.0.1");
    source(&t, "header:X-Client", "127.0.0.1");
    tuple(&u, NULL, RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&u, "ip", NULL);
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    /* a guessed window number against another identity's fixed key */
    tuple(&t, "z", RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&t, "header:X-A", "victim");
    source(&t, "header:X-B", "28332000");
    tuple(&u, "z", RLAAS_STRATEGY_FIXED, "127.0.0.1");
    source(&u, "header:X-A", "victim");
    u.window = 28332000;
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    /* a user named like a zone, at a window number, against that zone's
     * numeric user; and against its user "tb" */
    tuple(&t, NULL, RLAAS_STRATEGY_FIXED, "127.0.0.1");
    source(&t, "user", "za");
    t.window = 123;
    tuple(&u, "za", RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&u, "user", "123");
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    t.st = RLAAS_STRATEGY_TOKEN;
    u.val[0] = "tb";
    u.val_len[0] = 2;
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    /* a user spelling the fallback of a user-less request */
    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&t, "user", "ip~127.0.0.1");
    tuple(&u, NULL, RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&u, "user", NULL);
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    /* a tenant's zone against the server's zone of the same name, and a
     * zone spelling "<zone>@<host>" can't be written (names hold no '@') */
    tuple(&t, "login", RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    t.ns = "a.example";
    source(&t, "ip", NULL);
    tuple(&u, "login", RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&u, "ip", NULL);
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    u.ns = "b.example";
    assert_string_not_equal(a, key_of(&u));
    /* a tenant without a zone against a user named like its host */
    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    t.ns = "alice";
    source(&t, "user", "bob");
    tuple(&u, NULL, RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&u, "user", "@alice:bob");
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
    /* a user spelling an address against the ip source */
    tuple(&t, NULL, RLAAS_STRATEGY_SLIDING_LOG, "10.0.0.1");
    source(&t, "user", "127.0.0.1");
    tuple(&u, NULL, RLAAS_STRATEGY_SLIDING_LOG, "127.0.0.1");
    source(&u, "ip", NULL);
    final_key(a, &t);
    assert_string_not_equal(a, key_of(&u));
}

/* ---------------------------------------------------------------- property */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned pick(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const sources[] = {"ip",
                                      "user",
                                      "api_key",
                                      "header:X-A",
                                      "header:x-a",
                                      "header:X-B",
                                      "header:tb",
                                      "header:ip",
                                      "header:Authorization",
                                      "cookie:sid",
                                      "cookie:SID",
                                      "cookie:user",
                                      "query:tenant",
                                      "query:t",
                                      "env:PLAN",
                                      "env:tb",
                                      "expr=%{HTTP:X-A}",
                                      "expr=%{REQUEST_METHOD}"};

static const char *const zones[] = {NULL,    "za",    "zb",  "tb",
                                    "123",   "h.x-a", "ip",  "user",
                                    "alice", "ban",   "conc"};

/* Namespaces, often none; some spell a zone, a value or a segment; hosts'
 * and their tenants' (the host's, a tenant root's) side by side. */
static const char *const namespaces[] = {NULL,
                                         NULL,
                                         NULL,
                                         NULL,
                                         "a.example",
                                         "b.example",
                                         "za",
                                         "tb",
                                         "123",
                                         "127.0.0.1",
                                         "alice",
                                         "~0123456789abcdef",
                                         "a.example~t",
                                         "a.example~0123456789abcdef",
                                         "a.example~fedcba9876543210",
                                         "za~t",
                                         "~0123456789abcdef~t",
                                         "~0123456789abcdef~0123456789abcdef"};

static const char *const ips[] = {"127.0.0.1",
                                  "203.0.113.9",
                                  "2001-db8-1-2_64",
                                  "2001-db8-1-3_64",
                                  "-",
                                  NULL,
                                  "",
                                  "x y",
                                  "1234",
                                  "alice"};

static char rnd_vals[64][8];

static const char *const fixed_vals[] = {
    NULL,
    "",
    "alice",
    "bob",
    "127.0.0.1",
    "203.0.113.9",
    "2001-db8-1-2_64",
    "tb",
    "ban",
    "conc",
    "alice:conc",
    "sw",
    "lb",
    "gcra",
    "0",
    "12345",
    "123",
    "za",
    "ip",
    "user",
    "-",
    "ip~127.0.0.1",
    "ip~2001-db8-1-2_64",
    "~8c6976e5b5410415bde908bd4dee15df",
    "a:b",
    "x=y",
    "a~b",
    "h.x-a=alice",
    "user=alice",
    "za:alice",
    "alice:tb",
    "za:123",
    "h.x-a=alice:h.x-b=tb",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};

static const char *value(void)
{
    unsigned i = pick(COUNT(fixed_vals) + COUNT(rnd_vals));

    return i < COUNT(fixed_vals) ? fixed_vals[i]
                                 : rnd_vals[i - COUNT(fixed_vals)];
}

static void random_tuple(tuple_t *t)
{
    static const long windows[] = {0, 7, 123, 12345, 28332000};
    int i, n = 1 + (int)pick(pick(4) == 0 ? RLAAS_SOURCES_MAX : 3);

    /* the six strategies, the ban record and a concurrency limit's */
    tuple(t, zones[pick(COUNT(zones))], (rlaas_strategy_e)pick(8),
          ips[pick(COUNT(ips))]);
    t->ns = namespaces[pick(COUNT(namespaces))];
    t->window = windows[pick(COUNT(windows))];
    for (i = 0; i < n; i++)
        source(t, sources[pick(COUNT(sources))], value());
}

/* What a tuple means, in an unambiguous text: the parts that decide a
 * request's counter, and nothing else (the address only where used;
 * empty and missing values alike; header names in any case). */
static size_t field(char *out, const char *s, size_t len)
{
    int n = sprintf(out, "%zu:", len);

    memcpy(out + n, s, len);
    return (size_t)n + len;
}

static char *meaning(const tuple_t *t)
{
    char *out = malloc(8192), name[RLAAS_NAME_MAX + 1];
    /* an address that is none means "no address" */
    const char *ip = t->ip && rlaas_key_address_like(t->ip, strlen(t->ip)) &&
                             !rlaas_key_suffix_like(t->ip, strlen(t->ip))
                         ? t->ip
                         : "-";
    size_t n = 0, j;
    int i, uses_ip = 0;

    assert_non_null(out);
    n += field(out + n, t->zone ? t->zone : "", t->zone ? strlen(t->zone) : 0);
    n += (size_t)sprintf(out + n, "%c", t->ns ? 'N' : '-');
    n += field(out + n, t->ns ? t->ns : "", t->ns ? strlen(t->ns) : 0);
    n += (size_t)sprintf(out + n, "|%d|%ld|%d|", (int)t->st,
                         t->st == RLAAS_STRATEGY_FIXED ? t->window : -1, t->n);
    for (i = 0; i < t->n; i++) {
        const rlaas_source_t *s = &t->src[i];

        for (j = 0; j < s->name_len; j++)
            name[j] = s->type == RLAAS_SRC_HEADER && s->name[j] >= 'A' &&
                              s->name[j] <= 'Z'
                          ? (char)(s->name[j] + 32)
                          : s->name[j];
        n += (size_t)sprintf(out + n, "%d", (int)s->type);
        n += field(out + n, name, s->name_len);
        if (s->type == RLAAS_SRC_IP)
            uses_ip = 1, n += field(out + n, "IP", 2);
        else if (t->val_len[i] == 0)
            uses_ip = 1, n += field(out + n, "MISSING", 7);
        else
            n += field(out + n, t->val[i], t->val_len[i]);
    }
    if (uses_ip)
        n += field(out + n, ip, strlen(ip));
    out[n] = '\0';
    return out;
}

typedef struct {
    char *key;
    char *meaning;
} entry_t;

static int by_key(const void *a, const void *b)
{
    return strcmp(((const entry_t *)a)->key, ((const entry_t *)b)->key);
}

#define TUPLES 200000

static void different_tuples_never_share_a_key(void **state)
{
    static const char alphabet[] = "ab1.:=~-_@tg";
    entry_t *e = calloc(TUPLES, sizeof(*e));
    char key[RLAAS_KEY_MAX + 32];
    size_t i, j, same = 0, distinct = 1;

    (void)state;
    assert_non_null(e);
    for (i = 0; i < COUNT(rnd_vals); i++) {
        size_t len = 1 + pick(6);
        for (j = 0; j < len; j++)
            rnd_vals[i][j] = alphabet[pick(sizeof(alphabet) - 1)];
    }
    for (i = 0; i < TUPLES; i++) {
        tuple_t t;

        random_tuple(&t);
        final_key(key, &t);
        e[i].key = strdup(key);
        e[i].meaning = meaning(&t);
    }
    qsort(e, TUPLES, sizeof(*e), by_key);
    for (i = 1; i < TUPLES; i++) {
        if (strcmp(e[i].key, e[i - 1].key) != 0) {
            distinct++;
            continue;
        }
        same++;
        if (strcmp(e[i].meaning, e[i - 1].meaning) != 0)
            fail_msg("one key, two tuples: %s\n  %s\n  %s", e[i].key,
                     e[i - 1].meaning, e[i].meaning);
    }
    /* the generator must make the same tuple twice now and then, or the
     * comparison above never ran */
    assert_true(same > 1000);
    assert_true(distinct > TUPLES / 2);
    for (i = 0; i < TUPLES; i++) {
        free(e[i].key);
        free(e[i].meaning);
    }
    free(e);
}

/* The same with every hashed segment keyed (RLaaSKeySecret): the proof
 * does not depend on which 128-bit hash names a value. */
static void keyed_tuples_never_share_a_key(void **state)
{
    key_secret = rlaas_key_secret_make("a secret of 32 bytes, not less..", 32);
    assert_non_null(key_secret);
    different_tuples_never_share_a_key(state);
    rlaas_key_secret_free(key_secret);
    key_secret = NULL;
}

/* A keyed hash changes hashed segments only: the key of a raw identity is
 * the same with or without the secret, a credential's is not. */
static void secret_changes_hashed_segments_only(void **state)
{
    char plain[RLAAS_KEY_MAX + 32], keyed[RLAAS_KEY_MAX + 32];
    tuple_t t;

    (void)state;
    tuple(&t, "login", RLAAS_STRATEGY_SLIDING_LOG, "203.0.113.9");
    source(&t, "user", "alice");
    final_key(plain, &t);
    key_secret = rlaas_key_secret_make("a secret of 32 bytes, not less..", 32);
    assert_non_null(key_secret);
    final_key(keyed, &t);
    assert_string_equal(plain, keyed);
    tuple(&t, "api", RLAAS_STRATEGY_SLIDING_LOG, "203.0.113.9");
    source(&t, "api_key", "k-123");
    final_key(keyed, &t);
    rlaas_key_secret_free(key_secret);
    key_secret = NULL;
    final_key(plain, &t);
    assert_int_equal(strlen(plain), strlen(keyed));
    assert_memory_equal(plain, keyed, strlen(P "api:key=~"));
    assert_string_not_equal(plain, keyed);
}

/* key's identity part, read with a prefix of 3 ("rl:"), is want */
static void ident_is(const char *key, int has_zone, rlaas_strategy_e st,
                     const char *want)
{
    const char *id;
    size_t n = rlaas_key_ident(key, strlen(key), 3, has_zone, st, &id);

    assert_int_equal(n, strlen(want));
    assert_memory_equal(id, want, n);
}

/* The console reads an identity back out of a key: past the prefix and
 * the zone, before the strategy's suffix (fixed: the ':' and any window
 * number); a key it does not recognise is left as it is. */
static void ident_reads_the_identity_back(void **state)
{
    (void)state;
    ident_is("rl:1.2.3.4:gcra", 0, RLAAS_STRATEGY_GCRA, "1.2.3.4");
    ident_is("rl:api:alice:", 1, RLAAS_STRATEGY_FIXED, "alice");
    /* Redis Cluster: the window number follows the ':' */
    ident_is("rl:{bob}:29012", 0, RLAAS_STRATEGY_FIXED, "{bob}");
    /* an identity that merely ends like a suffix keeps it unless the
     * strategy's is there too */
    ident_is("rl:x:tb", 0, RLAAS_STRATEGY_GCRA, "x:tb");
}

/* What rlaas_ip_render writes goes into the key as the check would
 * let it (raw), so the request path skips the check: the same key for
 * every shape the renderer has, IPv4, IPv6 networks of every prefix
 * length, mapped and zoned addresses. */
static void a_rendered_address_needs_no_check(void **state)
{
    static const char *addr[] = {"127.0.0.1",    "10.0.0.255",
                                 "0.0.0.0",      "2001:db8::1",
                                 "::",           "::1",
                                 "fe80::1%eth0", "::ffff:1.2.3.4",
                                 "ffff::ffff"};
    static const int bits[] = {32, 48, 56, 64, 100, 128};
    rlaas_key_part_t part = {RLAAS_SRC_IP, NULL, 0, 0, NULL, 0};
    char ip[RLAAS_IP_TEXT_MAX], a[RLAAS_KEY_MAX + 1], b[RLAAS_KEY_MAX + 1];
    rlaas_key_spec_t k;
    size_t i, j, na, nb;

    (void)state;
    for (i = 0; i < sizeof(addr) / sizeof(addr[0]); i++) {
        for (j = 0; j < sizeof(bits) / sizeof(bits[0]); j++) {
            memset(&k, 0, sizeof(k));
            k.prefix = "p:";
            k.prefix_len = 2;
            k.strategy = RLAAS_STRATEGY_GCRA;
            k.parts = &part;
            k.nparts = 1;
            k.ip = ip;
            k.ip_len = rlaas_ip_render(ip, addr[i], strlen(addr[i]), bits[j]);
            assert_true(k.ip_len > 0);
            na = rlaas_key_build(a, &k);
            k.ip_rendered = 1;
            nb = rlaas_key_build(b, &k);
            assert_int_equal(na, nb);
            assert_memory_equal(a, b, na);
            assert_int_not_equal(a[2], '~'); /* raw, not hashed */
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_forms_keep_the_seeds_layout),
        cmocka_unit_test(namespaced_zones),
        cmocka_unit_test(zone_part),
        cmocka_unit_test(namespace_text),
        cmocka_unit_test(tenant_namespace_text),
        cmocka_unit_test(tenant_never_meets_its_host),
        cmocka_unit_test(tagged_forms),
        cmocka_unit_test(single_non_default_source_is_tagged),
        cmocka_unit_test(out_of_bounds_specs),
        cmocka_unit_test(worst_case_is_the_bound),
        cmocka_unit_test(cluster_hash_tag),
        cmocka_unit_test(known_attacks_differ),
        cmocka_unit_test(different_tuples_never_share_a_key),
        cmocka_unit_test(keyed_tuples_never_share_a_key),
        cmocka_unit_test(secret_changes_hashed_segments_only),
        cmocka_unit_test(ident_reads_the_identity_back),
        cmocka_unit_test(a_rendered_address_needs_no_check),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
