/*
 * libFuzzer target: the cookie finder (src/core/rlaas_cookie.c), which reads
 * the Cookie header of every request keyed by cookie:NAME. Checked on every
 * input, against a reference written differently (split first, then look):
 *   - nothing is read outside the header and the name (both are heap blocks
 *     of their exact size, so ASan catches a byte too far);
 *   - found exactly when the reference finds a pair of that name, with the
 *     same value, a slice of the header;
 *   - the value holds no separator and no white space at either end;
 *   - finding again in "NAME=<value>" gives the value back.
 *
 * Input layout: byte 0 is the name's length (mod 16), the name follows,
 * then the header value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rlaas_cookie.h"
#include "fuzz_check.h"

static int ows(uint8_t c)
{
    return c == ' ' || c == '\t';
}

static int sep(uint8_t c)
{
    return c == ';' || c == ',';
}

/* The reference: cut at every separator, then take each piece apart. */
static int model(const uint8_t *h, size_t len, const uint8_t *name, size_t nl,
                 size_t *vs_out, size_t *vl_out)
{
    size_t start = 0, i;

    for (i = 0; i <= len; i++) {
        size_t e, eq, ns, ne, vs, ve;

        if (i < len && !sep(h[i]))
            continue;
        e = i;
        for (eq = start; eq < e && h[eq] != '='; eq++)
            ;
        if (eq < e) {
            for (ns = start; ns < eq && ows(h[ns]); ns++)
                ;
            for (ne = eq; ne > ns && ows(h[ne - 1]); ne--)
                ;
            for (vs = eq + 1; vs < e && ows(h[vs]); vs++)
                ;
            for (ve = e; ve > vs && ows(h[ve - 1]); ve--)
                ;
            if (ne - ns == nl && memcmp(h + ns, name, nl) == 0) {
                *vs_out = vs;
                *vl_out = ve - vs;
                return 1;
            }
        }
        start = i + 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t nl, len, mvs = 0, mvl = 0, vlen = 0, i;
    char *name, *hdr, *again;
    const char *val = NULL, *v2 = NULL;
    size_t v2len = 0;
    int found, want;

    if (size < 1)
        return 0;
    nl = data[0] % 16;
    if (nl > size - 1)
        nl = size - 1;
    len = size - 1 - nl;
    name = malloc(nl ? nl : 1);
    hdr = malloc(len ? len : 1);
    CHECK(name != NULL && hdr != NULL);
    memcpy(name, data + 1, nl);
    memcpy(hdr, data + 1 + nl, len);

    found = rlaas_cookie_find(hdr, len, name, nl, &val, &vlen);
    want = model((const uint8_t *)hdr, len, (const uint8_t *)name, nl, &mvs,
                 &mvl);
    CHECK(found == want);
    if (found) {
        CHECK(val >= hdr && val + vlen <= hdr + len);
        CHECK((size_t)(val - hdr) == mvs && vlen == mvl);
        for (i = 0; i < vlen; i++)
            CHECK(!sep((uint8_t)val[i]));
        CHECK(vlen == 0 || (!ows((uint8_t)val[0]) && !ows((uint8_t)val[vlen - 1])));
        /* NAME=<value> alone gives the value back, unless the name itself
         * holds what ends or splits a name */
        if (memchr(name, '=', nl) == NULL && nl > 0 && !ows((uint8_t)name[0]) &&
            !ows((uint8_t)name[nl - 1]) && memchr(name, ';', nl) == NULL &&
            memchr(name, ',', nl) == NULL) {
            again = malloc(nl + 1 + vlen);
            CHECK(again != NULL);
            memcpy(again, name, nl);
            again[nl] = '=';
            memcpy(again + nl + 1, val, vlen);
            CHECK(rlaas_cookie_find(again, nl + 1 + vlen, name, nl, &v2,
                                    &v2len));
            CHECK(v2len == vlen && memcmp(v2, val, vlen) == 0);
            free(again);
        }
    }
    free(name);
    free(hdr);
    return 0;
}
