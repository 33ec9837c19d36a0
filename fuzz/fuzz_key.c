/*
 * libFuzzer target: the key functions (src/core/rlaas_key.c and
 * rlaas_keybuild.c), which turn client-supplied values (headers, cookies,
 * query arguments, the user, the address) into Redis keys. What the SPEC
 * promises, checked on every input:
 *   - a segment fits in RLAAS_SEG_MAX bytes (the output buffer is a heap
 *     block of exactly that size, so ASan catches any write past it);
 *   - it is either the value itself (1..64 safe bytes, not a credential,
 *     not suffix-like; address-like exactly when it is the address) or '~'
 *     and 32 lowercase hex digits; a fallback is "ip~" and the address's
 *     segment;
 *   - it never holds ':', '=', '{', '}', '*', spaces or control bytes;
 *   - the same value always gives the same segment, and two different
 *     values never give the same segment (raw segments never start with
 *     '~'; hashed ones would need a 128-bit SHA-1 prefix collision);
 *   - whatever rlaas_ip_render makes of a value is an address to the key
 *     functions: address-like, raw, never suffix-like;
 *   - a tenant's namespace (rlaas_key_namespace) is one rlaas_key_build
 *     takes and never holds '@', ':' or '=';
 *   - the whole key (rlaas_key_build) is injective: two tuples (zone,
 *     namespace, sources, values, address, strategy, fixed's window
 *     number) that give
 *     the same final key mean the same thing, and every key fits in
 *     RLAAS_KEY_MAX bytes of printable ASCII;
 *   - all of it with hashed segments keyed by a secret (RLaaSKeySecret)
 *     as well: the same shapes, and the keyed hash of the value.
 *
 * Input layout: byte 0 holds flags. With bit 7 clear, value A follows; if a
 * 0xff 0x00 pair follows, the bytes after it are value B (for the
 * "different values, different segments" check). With bit 7 set, the rest
 * describes two tuples (see read_tuple). Bit 6 set: hashed segments are
 * keyed with a secret. Values may hold any byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rlaas_ip.h"
#include "rlaas_key.h"
#include "rlaas_keybuild.h"
#include "rlaas_keyhash.h"
#include "fuzz_check.h"

/* The secret of this input (bit 6 of byte 0), or NULL. */
static const rlaas_key_secret_t *secret;

static const rlaas_key_secret_t *the_secret(void)
{
    static rlaas_key_secret_t *s;

    if (s == NULL)
        s = rlaas_key_secret_make("fuzz: a secret of 32 bytes......", 32);
    CHECK(s != NULL);
    return s;
}

static int safe_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
           c == '@';
}

static int hex_lower(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int model_safe(const uint8_t *v, size_t len)
{
    size_t i;

    if (len < 1 || len > RLAAS_SEG_RAW_MAX)
        return 0;
    for (i = 0; i < len; i++)
        if (!safe_byte(v[i]))
            return 0;
    return 1;
}

static int model_suffix_like(const uint8_t *v, size_t len)
{
    size_t i;

    if ((len == 2 && (memcmp(v, "tb", 2) == 0 || memcmp(v, "sw", 2) == 0 ||
                      memcmp(v, "lb", 2) == 0)) ||
        (len == 3 && memcmp(v, "ban", 3) == 0) ||
        (len == 4 && (memcmp(v, "gcra", 4) == 0 || memcmp(v, "conc", 4) == 0)))
        return 1;
    for (i = 0; i < len; i++)
        if (v[i] < '0' || v[i] > '9')
            return 0;
    return len > 0;
}

/* digits and dots, or hex groups joined by '-', '_' and 1..3 digits */
static int model_address_like(const uint8_t *v, size_t len)
{
    size_t i = 0, g, groups = 0;

    while (i < len && ((v[i] >= '0' && v[i] <= '9') || v[i] == '.'))
        i++;
    if (len > 0 && i == len)
        return 1;
    for (i = 0;;) {
        for (g = 0; i < len && hex_lower(v[i]) && g < 5; i++, g++)
            ;
        if (g < 1 || g > 4 || ++groups > 8 || i == len)
            return 0;
        if (v[i] == '_')
            break;
        if (v[i] != '-')
            return 0;
        i++;
    }
    for (g = 0, i++; i < len; i++, g++)
        if (v[i] < '0' || v[i] > '9')
            return 0;
    return g >= 1 && g <= 3;
}

static int model_raw(const uint8_t *v, size_t len, rlaas_val_kind_e kind)
{
    if (kind == RLAAS_VAL_SECRET || !model_safe(v, len) ||
        model_suffix_like(v, len))
        return 0;
    return (kind == RLAAS_VAL_ADDRESS) == model_address_like(v, len);
}

/* The segment's shape, whatever produced it. */
static void check_shape(const char *seg, size_t n)
{
    size_t i;

    CHECK(n >= 1 && n <= RLAAS_SEG_MAX);
    if (seg[0] == '~') {
        CHECK(n == RLAAS_SEG_HASH_LEN);
        for (i = 1; i < n; i++)
            CHECK(hex_lower((unsigned char)seg[i]));
    }
    else {
        CHECK(n <= RLAAS_SEG_RAW_MAX);
        for (i = 0; i < n; i++)
            CHECK(safe_byte((unsigned char)seg[i]));
    }
}

/* Runs rlaas_key_value into an exact-size heap block (twice, for
 * determinism) and returns a copy of the result. */
static size_t segment(const uint8_t *v, size_t len, rlaas_val_kind_e kind,
                      char *copy)
{
    char *out = malloc(RLAAS_SEG_MAX), *out2 = malloc(RLAAS_SEG_MAX);
    /* the value, too, in a block of its exact size */
    char *val = malloc(len ? len : 1);
    size_t n, n2;

    CHECK(out != NULL && out2 != NULL && val != NULL);
    memcpy(val, v, len);
    n = rlaas_key_value_keyed(out, val, len, kind, secret);
    check_shape(out, n);
    CHECK(rlaas_key_is_safe(val, len) == model_safe(v, len));
    CHECK(rlaas_key_suffix_like(val, len) == model_suffix_like(v, len));
    CHECK(rlaas_key_address_like(val, len) == model_address_like(v, len));
    if (model_raw(v, len, kind)) {
        CHECK(n == len && memcmp(out, v, len) == 0);
    }
    else {
        char want[RLAAS_SEG_HASH_LEN - 1];
        int addr = kind == RLAAS_VAL_ADDRESS; /* no address: "-" */

        CHECK(n == RLAAS_SEG_HASH_LEN && out[0] == '~');
        if (addr && secret == NULL)
            CHECK(memcmp(out, "~3bc15c8aae3e4124dd409035f32ea2fd", 33) == 0);
        CHECK(rlaas_key_hash_hex(want, sizeof(want), addr ? "-" : val,
                                 addr ? 1 : len, secret));
        CHECK(memcmp(out + 1, want, sizeof(want)) == 0);
    }
    n2 = rlaas_key_value_keyed(out2, val, len, kind, secret);
    CHECK(n2 == n && memcmp(out, out2, n) == 0);
    memcpy(copy, out, n);
    free(out);
    free(out2);
    free(val);
    return n;
}

static void fallback(const uint8_t *v, size_t len)
{
    char *out = malloc(RLAAS_SEG_MAX), *val = malloc(len ? len : 1);
    char seg[RLAAS_SEG_MAX];
    size_t n, sn;

    CHECK(out != NULL && val != NULL);
    memcpy(val, v, len);
    n = rlaas_key_fallback_keyed(out, val, len, secret);
    CHECK(n > 3 && n <= RLAAS_SEG_MAX);
    CHECK(memcmp(out, "ip~", 3) == 0);
    /* the rest is exactly the address's own segment */
    sn = segment(v, len, RLAAS_VAL_ADDRESS, seg);
    CHECK(n == 3 + sn && memcmp(out + 3, seg, sn) == 0);
    free(out);
    free(val);
}

/* The client address renderer, on the value as an address, with a prefix
 * length from the flags (some out of range). */
static void render_address(const uint8_t *v, size_t len, unsigned flags)
{
    char *out = malloc(RLAAS_IP_TEXT_MAX), *val = malloc(len ? len : 1);
    int prefix = 30 + (int)(flags % 101);
    size_t n;

    CHECK(out != NULL && val != NULL);
    memcpy(val, v, len);
    n = rlaas_ip_render(out, val, len, prefix);
    if (prefix < 32 || prefix > 128)
        CHECK(n == 0);
    if (n > 0) {
        CHECK(n < RLAAS_IP_TEXT_MAX && strlen(out) == n);
        CHECK(rlaas_key_address_like(out, n) && rlaas_key_is_safe(out, n));
        CHECK(!rlaas_key_suffix_like(out, n));
    }
    free(out);
    free(val);
}

/* ---- the whole key: two tuples read from the input ---- */

typedef struct {
    const uint8_t *p, *end;
} reader_t;

static unsigned next(reader_t *r)
{
    return r->p < r->end ? *r->p++ : 0;
}

/* A length byte (0xff: NULL) and that many bytes, as far as they go. */
static const char *bytes(reader_t *r, size_t *len)
{
    unsigned n = next(r);
    const char *s = (const char *)r->p;

    if (n == 0xff) {
        *len = 0;
        return NULL;
    }
    if (n > (size_t)(r->end - r->p))
        n = (unsigned)(r->end - r->p);
    r->p += n;
    *len = n;
    return s;
}

typedef struct {
    const char *zp;
    size_t zl;
    const char *ns; /* NULL: none */
    size_t nsl;
    char nsbuf[RLAAS_NS_MAX];
    const char *ip;
    size_t ip_len;
    rlaas_strategy_e st;
    unsigned window;
    rlaas_key_part_t parts[RLAAS_SOURCES_MAX];
    int n;
} ftuple_t;

/* Source kinds and names: a few real ones, so that equal tuples occur. */
static const char *const names[] = {
    "X-A", "x-a",  "X-B",         "tb",  "ip",  "Authorization",
    "sid", "PLAN", "%{HTTP:X-A}", "a=b", "a:b", ""};

/* A namespace: none, a few fixed ones, one made from any bytes by
 * rlaas_key_namespace (checked), raw bytes (refused unless valid), or a
 * tenant's made by rlaas_key_tenant_namespace (checked). */
static void namespace_of(reader_t *r, ftuple_t *t, unsigned b)
{
    static const char *const fixed[] = {"a.example", "b.example", "za", "tb",
                                        "~0123456789abcdef"};
    const char *raw, *root;
    char host[RLAAS_NS_MAX];
    size_t len, rlen, hl, i;

    b %= 9;
    if (b < 5) {
        t->ns = fixed[b];
        t->nsl = strlen(t->ns);
    }
    else if (b == 5) {
        raw = bytes(r, &len);
        t->nsl = rlaas_key_namespace(t->nsbuf, raw ? raw : "", len);
        CHECK(t->nsl >= 1 && t->nsl <= RLAAS_NS_MAX);
        CHECK(rlaas_key_namespace_ok(t->nsbuf, t->nsl));
        for (i = 0; i < t->nsl; i++)
            CHECK(t->nsbuf[i] != '@' && t->nsbuf[i] != ':' &&
                  t->nsbuf[i] != '=');
        t->ns = t->nsbuf;
    }
    else if (b == 6) {
        t->ns = bytes(r, &t->nsl);
    }
    else if (b == 8) {
        /* a tenant's, the host's tenant or a root's: never a host's */
        raw = bytes(r, &len);
        root = bytes(r, &rlen);
        t->nsl = rlaas_key_tenant_namespace(t->nsbuf, raw ? raw : "", len, root,
                                            rlen);
        CHECK(t->nsl >= 3 && t->nsl <= RLAAS_NS_MAX);
        CHECK(rlaas_key_namespace_ok(t->nsbuf, t->nsl));
        hl = rlaas_key_namespace(host, raw ? raw : "", len);
        CHECK(hl < t->nsl && memcmp(host, t->nsbuf, hl) == 0);
        t->ns = t->nsbuf;
    }
}

static void read_tuple(reader_t *r, ftuple_t *t)
{
    static const char *const zones[] = {"za", "zb", "tb", "123", "h.x-a"};
    unsigned b = next(r);
    int i;

    memset(t, 0, sizeof(*t));
    if (b % 8 < 5) {
        t->zp = zones[b % 8];
        t->zl = strlen(t->zp);
    }
    else if (b % 8 == 5)
        t->zp = bytes(r, &t->zl);
    namespace_of(r, t, b >> 3);
    t->st = (rlaas_strategy_e)(next(r) % (RLAAS_STRATEGY_COUNT + 2));
    t->window = next(r) % 4;
    t->ip = bytes(r, &t->ip_len);
    t->n = (int)(next(r) % (RLAAS_SOURCES_MAX + 1));
    for (i = 0; i < t->n; i++) {
        rlaas_key_part_t *p = &t->parts[i];

        b = next(r);
        p->type = (rlaas_source_type_e)(b % 8);
        p->name = names[(b >> 3) % (sizeof(names) / sizeof(names[0]))];
        p->name_len = strlen(p->name);
        /* as rlaas_parse_source decides it */
        p->credential = p->type == RLAAS_SRC_API_KEY ||
                        p->type == RLAAS_SRC_COOKIE ||
                        (p->type == RLAAS_SRC_HEADER &&
                         strcasecmp(p->name, "Authorization") == 0);
        p->value = bytes(r, &p->value_len);
    }
}

/* Builds the final key (fixed: with its window number); 0 if refused. */
static size_t build(const ftuple_t *t, char *out)
{
    rlaas_key_spec_t k;
    size_t n, i;

    memset(&k, 0, sizeof(k)); /* ip_rendered 0: any text is checked */
    k.prefix = "p:";
    k.prefix_len = 2;
    k.zone = t->zp;
    k.zone_len = t->zl;
    k.ns = t->ns;
    k.ns_len = t->nsl;
    k.ip = t->ip;
    k.ip_len = t->ip_len;
    k.strategy = t->st;
    k.parts = t->parts;
    k.nparts = t->n;
    k.hashtag = 0;
    k.secret = secret;
    n = rlaas_key_build(out, &k);
    if (n == 0)
        return 0;
    CHECK(n <= RLAAS_KEY_MAX && strlen(out) == n);
    CHECK(memcmp(out, "p:", 2) == 0);
    for (i = 0; i < n; i++)
        CHECK(out[i] > ' ' && out[i] < 0x7f && out[i] != '{' && out[i] != '}');
    if (t->st == RLAAS_STRATEGY_FIXED)
        n += (size_t)sprintf(out + n, "%u", t->window);
    return n;
}

static int same_bytes(const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

static int same_name(const rlaas_key_part_t *a, const rlaas_key_part_t *b)
{
    if (a->type == RLAAS_SRC_HEADER)
        return a->name_len == b->name_len &&
               strncasecmp(a->name, b->name, a->name_len) == 0;
    if (a->type == RLAAS_SRC_IP || a->type == RLAAS_SRC_USER ||
        a->type == RLAAS_SRC_API_KEY)
        return 1;
    return same_bytes(a->name, a->name_len, b->name, b->name_len);
}

/* Whether the address matters: an ip source or a value missing. */
static int uses_ip(const ftuple_t *t)
{
    int i;

    for (i = 0; i < t->n; i++)
        if (t->parts[i].type == RLAAS_SRC_IP || t->parts[i].value_len == 0)
            return 1;
    return 0;
}

/* The address a tuple means: its text, or "-" when it is no address. */
static const char *address(const ftuple_t *t, size_t *len)
{
    if (t->ip != NULL &&
        model_raw((const uint8_t *)t->ip, t->ip_len, RLAAS_VAL_ADDRESS)) {
        *len = t->ip_len;
        return t->ip;
    }
    *len = 1;
    return "-";
}

/* Two tuples that decide the same counter. */
static int same_meaning(const ftuple_t *a, const ftuple_t *b)
{
    size_t la, lb;
    const char *ia = address(a, &la), *ib = address(b, &lb);
    int i;

    if ((a->zp == NULL) != (b->zp == NULL) ||
        (a->zp && !same_bytes(a->zp, a->zl, b->zp, b->zl)) ||
        (a->ns == NULL) != (b->ns == NULL) ||
        (a->ns && !same_bytes(a->ns, a->nsl, b->ns, b->nsl)) ||
        a->st != b->st || a->n != b->n ||
        (a->st == RLAAS_STRATEGY_FIXED && a->window != b->window))
        return 0;
    for (i = 0; i < a->n; i++) {
        const rlaas_key_part_t *p = &a->parts[i], *q = &b->parts[i];

        if (p->type != q->type || !same_name(p, q))
            return 0;
        if (p->type != RLAAS_SRC_IP &&
            !same_bytes(p->value, p->value_len, q->value, q->value_len))
            return 0;
    }
    return !uses_ip(a) || same_bytes(ia, la, ib, lb);
}

static void tuples(const uint8_t *data, size_t size)
{
    reader_t r = {data, data + size};
    ftuple_t a, b;
    char *ka = malloc(RLAAS_KEY_MAX + 16), *kb = malloc(RLAAS_KEY_MAX + 16);
    size_t na, nb;

    CHECK(ka != NULL && kb != NULL);
    read_tuple(&r, &a);
    read_tuple(&r, &b);
    na = build(&a, ka);
    nb = build(&b, kb);
    if (na > 0 && nb > 0 && na == nb && memcmp(ka, kb, na) == 0)
        CHECK(same_meaning(&a, &b));
    free(ka);
    free(kb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *a, *b = NULL;
    size_t alen, blen = 0, i, na, nb;
    char sa[RLAAS_SEG_MAX], sb[RLAAS_SEG_MAX];
    rlaas_val_kind_e kind_a, kind_b;

    if (size < 1)
        return 0;
    secret = data[0] & 0x40 ? the_secret() : NULL;
    kind_a = (rlaas_val_kind_e)((data[0] & 3) % 3);
    kind_b = (rlaas_val_kind_e)(((data[0] >> 2) & 3) % 3);
    a = data + 1;
    alen = size - 1;
    for (i = 0; i + 1 < alen; i++) {
        if (a[i] == 0xff && a[i + 1] == 0x00) {
            b = a + i + 2;
            blen = alen - i - 2;
            alen = i;
            break;
        }
    }

    if (data[0] & 0x80) {
        tuples(data + 1, size - 1);
        return 0;
    }
    na = segment(a, alen, kind_a, sa);
    fallback(a, alen);
    render_address(a, alen, data[0]);
    if (b == NULL)
        return 0;
    nb = segment(b, blen, kind_b, sb);
    fallback(b, blen);
    /* equal segments only for equal values (a credential and a raw value
     * never share a segment, as hashed segments start with '~'); an
     * address that is none stands for "-" */
    if (kind_a == RLAAS_VAL_ADDRESS && !model_raw(a, alen, kind_a))
        a = (const uint8_t *)"-", alen = 1;
    if (kind_b == RLAAS_VAL_ADDRESS && !model_raw(b, blen, kind_b))
        b = (const uint8_t *)"-", blen = 1;
    if (na == nb && memcmp(sa, sb, na) == 0)
        CHECK(alen == blen && memcmp(a, b, alen) == 0);
    /* joining with ':' is unambiguous: no segment holds a ':' or '=' */
    CHECK(memchr(sa, ':', na) == NULL && memchr(sb, ':', nb) == NULL);
    CHECK(memchr(sa, '=', na) == NULL && memchr(sb, '=', nb) == NULL);
    return 0;
}
