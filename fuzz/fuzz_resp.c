/*
 * libFuzzer target: the hand-written Redis protocol of the request path
 * (src/redis/rlaas_resp.c). rlaas_resp_evalsha must produce, byte for byte, what
 * hiredis' own formatter (redisFormatCommandArgv) produces for
 * EVALSHA <sha1> 1 <key> <limit> <window>, for any key bytes (NUL, CR, LF
 * included) and any limit and window text up to the documented 20
 * characters, and must stay inside RLAAS_RESP_EVALSHA_MAX(key_len) bytes:
 * the buffer is a heap block of exactly that size, so ASan sees a write
 * past it. rlaas_fmt_i64 must print any int64_t as printf's %lld does.
 *
 * Input layout: 8 bytes of an int64 for rlaas_fmt_i64; one byte each for
 * the lengths of limit and window (mod 21); 40 bytes of sha1; the limit and
 * window bytes (NUL bytes in them become '0': the callers pass C strings);
 * the rest is the key.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "rlaas_resp.h"
#include "fuzz_check.h"

static void check_i64(int64_t v)
{
    char got[21], want[32];
    size_t n = rlaas_fmt_i64(got, v);
    int wn = snprintf(want, sizeof(want), "%" PRId64, v);

    CHECK(wn > 0 && n == (size_t)wn && memcmp(got, want, n) == 0);
}

/* A C string of len bytes from p, NULs replaced. */
static char *cstr(const uint8_t *p, size_t len)
{
    char *s = malloc(len + 1);
    size_t i;

    CHECK(s != NULL);
    for (i = 0; i < len; i++)
        s[i] = p[i] ? (char)p[i] : '0';
    s[len] = '\0';
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t v;
    size_t llen, wlen, klen, n;
    char *limit, *window, *key, *buf, *want = NULL;
    char sha[41];
    const char *argv[6];
    size_t lens[6];
    int wn;

    if (size < 8 + 2 + 40)
        return 0;
    memcpy(&v, data, 8);
    check_i64(v);
    llen = data[8] % 21;
    wlen = data[9] % 21;
    memcpy(sha, data + 10, 40);
    sha[40] = '\0';
    data += 50;
    size -= 50;
    if (size < llen + wlen)
        return 0;
    limit = cstr(data, llen);
    window = cstr(data + llen, wlen);
    klen = size - llen - wlen;
    key = malloc(klen ? klen : 1); /* exact size: ASan sees over-reads */
    CHECK(key != NULL);
    memcpy(key, data + llen + wlen, klen);

    buf = malloc(RLAAS_RESP_EVALSHA_MAX(klen));
    CHECK(buf != NULL);
    n = rlaas_resp_evalsha(buf, sha, key, klen, limit, window);
    CHECK(n <= RLAAS_RESP_EVALSHA_MAX(klen));

    argv[0] = "EVALSHA";
    argv[1] = sha; /* 40 bytes, whatever they are, as the function takes */
    argv[2] = "1";
    argv[3] = key;
    argv[4] = limit;
    argv[5] = window;
    lens[0] = 7;
    lens[1] = 40;
    lens[2] = 1;
    lens[3] = klen;
    lens[4] = llen;
    lens[5] = wlen;
    wn = redisFormatCommandArgv(&want, 6, argv, lens);
    CHECK(wn > 0 && want != NULL);
    CHECK(n == (size_t)wn);
    CHECK(memcmp(buf, want, n) == 0);

    free(want);
    free(buf);
    free(key);
    free(limit);
    free(window);
    return 0;
}
