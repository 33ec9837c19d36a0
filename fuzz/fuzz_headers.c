/*
 * libFuzzer target: the RateLimit header values, built by hand without
 * printf (src/core/rlaas_headers.c). Against snprintf as the reference, for any
 * policy name and for every value the callers can pass (limit 1..10^9,
 * window 1 ms..30 d; a verdict as rlaas_reply_verdict accepts it), into a
 * buffer of any size 0..255 (a heap block of exactly that size, so ASan
 * sees a write past it):
 *   - the returned length is what snprintf returns;
 *   - the result is NUL-terminated inside the buffer;
 *   - when it fits, it is snprintf's text; when it does not, it is a prefix
 *     of that text ("like snprintf", as the header promises): never bytes
 *     the function did not write.
 *
 * Input layout: byte 0 the buffer size, byte 1 which function, 16 bytes of
 * two int64 values (folded into the callers' ranges), then the name (cut at
 * its first NUL).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlaas_headers.h"
#include "rlaas_parse.h"
#include "rlaas_reply.h"
#include "fuzz_check.h"

/* x folded into lo..hi */
static int64_t fold(int64_t x, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;

    return lo + (int64_t)((uint64_t)x % span);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t bsize, nlen;
    int which, n, wn;
    int64_t a, b;
    char *name, *buf, want[512];
    rlaas_verdict_t v;

    if (size < 18)
        return 0;
    bsize = data[0];
    which = data[1] & 1;
    memcpy(&a, data + 2, 8);
    memcpy(&b, data + 10, 8);
    data += 18;
    size -= 18;
    nlen = strnlen((const char *)data, size);
    if (nlen > 200)
        nlen = 200;
    name = malloc(nlen + 1);
    CHECK(name != NULL);
    memcpy(name, data, nlen);
    name[nlen] = '\0';

    buf = malloc(bsize ? bsize : 1);
    CHECK(buf != NULL);
    memset(buf, 0xbe, bsize ? bsize : 1); /* "bytes nobody wrote" */
    if (which == 0) {
        int64_t limit = fold(a, 1, RLAAS_LIMIT_MAX);
        int64_t window = fold(b, 1, RLAAS_WINDOW_MAX_MS);
        int64_t w = (window + 999) / 1000;

        n = rlaas_fmt_policy(buf, bsize, name, limit, window);
        wn = snprintf(want, sizeof(want), "\"%s\";q=%" PRId64 ";w=%" PRId64,
                      name, limit, w < 1 ? 1 : w);
    }
    else {
        v.allowed = 0;
        v.remaining = fold(a, 0, INT64_MAX);
        v.reset_ms = fold(b, 0, RLAAS_REPLY_MS_MAX);
        v.retry_ms = 0;
        n = rlaas_fmt_ratelimit(buf, bsize, name, &v);
        wn = snprintf(want, sizeof(want), "\"%s\";r=%" PRId64 ";t=%" PRId64,
                      name, v.remaining, (v.reset_ms + 999) / 1000);
    }
    CHECK(wn > 0 && (size_t)wn < sizeof(want));
    CHECK(n == wn);
    if (bsize > 0) {
        size_t got = strnlen(buf, bsize);

        CHECK(got < bsize); /* NUL-terminated inside the buffer */
        if ((size_t)wn < bsize)
            CHECK(got == (size_t)wn && memcmp(buf, want, got) == 0);
        else
            CHECK(memcmp(buf, want, got) == 0); /* a prefix, truncated */
    }
    free(buf);
    free(name);
    return 0;
}
