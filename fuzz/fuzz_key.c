/*
 * libFuzzer target: the key segment functions (src/core/rlaas_key.c), which turn
 * client-supplied values (headers, cookies, query arguments, the address)
 * into Redis key text. What the SPEC promises, checked on every input:
 *   - a segment fits in RLAAS_SEG_MAX bytes (the output buffer is a heap
 *     block of exactly that size, so ASan catches any write past it);
 *   - it is either the value itself (1..64 safe bytes, not a credential)
 *     or '~' and 32 lowercase hex digits; a fallback is "ip~" and the
 *     address's segment;
 *   - it never holds ':', '{', '}', '*', spaces or control bytes, so
 *     joining segments with ':' cannot reach another client's key;
 *   - the same value always gives the same segment, and two different
 *     values never give the same segment (raw segments never start with
 *     '~'; hashed ones would need a 128-bit SHA-1 prefix collision).
 *
 * Input layout: byte 0 holds flags, then value A; if a 0xff 0x00 pair
 * follows, the bytes after it are value B (for the "different values,
 * different segments" check). Values may hold any byte, NUL included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlaas_key.h"
#include "fuzz_check.h"

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

/* Runs rlaas_key_segment into an exact-size heap block (twice, for
 * determinism) and returns a copy of the result. */
static size_t segment(const uint8_t *v, size_t len, int cred, char *copy)
{
    char *out = malloc(RLAAS_SEG_MAX), *out2 = malloc(RLAAS_SEG_MAX);
    /* the value, too, in a block of its exact size */
    char *val = malloc(len ? len : 1);
    size_t n, n2;

    CHECK(out != NULL && out2 != NULL && val != NULL);
    memcpy(val, v, len);
    n = rlaas_key_segment(out, val, len, cred);
    check_shape(out, n);
    CHECK(rlaas_key_is_safe(val, len) == model_safe(v, len));
    if (!cred && model_safe(v, len)) {
        CHECK(n == len && memcmp(out, v, len) == 0);
    }
    else {
        CHECK(n == RLAAS_SEG_HASH_LEN && out[0] == '~');
    }
    n2 = rlaas_key_segment(out2, val, len, cred);
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
    n = rlaas_key_fallback(out, val, len);
    CHECK(n > 3 && n <= RLAAS_SEG_MAX);
    CHECK(memcmp(out, "ip~", 3) == 0);
    /* the rest is exactly the address's own (non-credential) segment */
    sn = segment(v, len, 0, seg);
    CHECK(n == 3 + sn && memcmp(out + 3, seg, sn) == 0);
    free(out);
    free(val);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *a, *b = NULL;
    size_t alen, blen = 0, i, na, nb;
    char sa[RLAAS_SEG_MAX], sb[RLAAS_SEG_MAX];
    int cred_a, cred_b;

    if (size < 1)
        return 0;
    cred_a = data[0] & 1;
    cred_b = (data[0] >> 1) & 1;
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

    na = segment(a, alen, cred_a, sa);
    fallback(a, alen);
    if (b == NULL)
        return 0;
    nb = segment(b, blen, cred_b, sb);
    fallback(b, blen);
    /* equal segments only for equal values (a credential and a raw value
     * never share a segment, as hashed segments start with '~') */
    if (na == nb && memcmp(sa, sb, na) == 0)
        CHECK(alen == blen && memcmp(a, b, alen) == 0);
    /* joining with ':' is unambiguous: no segment holds a ':' */
    CHECK(memchr(sa, ':', na) == NULL && memchr(sb, ':', nb) == NULL);
    return 0;
}
