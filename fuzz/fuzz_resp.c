/*
 * libFuzzer target: the hand-written Redis protocol of the request path
 * (src/redis/rlaas_resp.c). rlaas_resp_evalsha must produce, byte for byte, what
 * hiredis' own formatter (redisFormatCommandArgv) produces for
 * EVALSHA <sha1> 1 <key> <limit> <window>, for any key bytes (NUL, CR, LF
 * included) and any limit and window text up to the documented 20
 * characters, and must stay inside RLAAS_RESP_EVALSHA_MAX(key_len) bytes:
 * the buffer is a heap block of exactly that size, so ASan sees a write
 * past it. rlaas_resp_call, for 1 to 8 policies on that key (minus a byte
 * each) with that limit, window and cost and a mode and strategy taken
 * from the int64's bits, must match hiredis on the same words and stay
 * inside RLAAS_RESP_CALL_MAX. rlaas_fmt_i64 must print any int64_t as
 * printf's %lld does.
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
#include "rlaas_verdict.h"
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

/* A call of n policies against hiredis on the same words. */
static void check_call(const char *sha, const char *key, size_t klen,
                       const char *limit, const char *window, uint64_t bits)
{
    rlaas_call_t c[RLAAS_CALL_POLICIES_MAX];
    const char *argv[3 + 7 * RLAAS_CALL_POLICIES_MAX];
    size_t lens[3 + 7 * RLAAS_CALL_POLICIES_MAX], keys = 0, n;
    char num[3 * RLAAS_CALL_POLICIES_MAX + 1][24], *buf, *want = NULL;
    int np = (int)(bits & 7) + 1, mode = (int)((bits >> 3) & 3);
    int argc = 0, k = 0, i, wn;

#define WORD(s, l) (argv[argc] = (s), lens[argc++] = (l))
#define NUM(x)                                                                 \
    (snprintf(num[k], 24, "%d", (int)(x)), WORD(num[k], strlen(num[k])), k++)
    memset(c, 0, sizeof(c));
    WORD("EVALSHA", 7);
    WORD(sha, 40);
    NUM(np);
    for (i = 0; i < np; i++) {
        c[i].strategy = (rlaas_strategy_e)((bits >> (5 + 3 * i)) % 6);
        c[i].key = key;
        c[i].key_len = klen > (size_t)i ? klen - (size_t)i : 0;
        c[i].limit = limit;
        c[i].window = window;
        c[i].cost = (bits >> 40) & 1 ? NULL : limit;
        c[i].mode = mode;
        keys += c[i].key_len;
        WORD(key, c[i].key_len);
    }
    /* a lease (one policy): every word, then how much it wants */
    if (np == 1 && (bits >> 41) & 1)
        c[0].lease_want = 1 + (int64_t)((bits >> 42) % 1000);
    /* credits: every word of each, then its age */
    else if ((bits >> 52) & 1)
        for (i = 0; i < np; i++) {
            c[i].credit = 1;
            c[i].credit_age = (int64_t)((bits >> 53) % 2000);
        }
    for (i = 0; i < np; i++) {
        const char *cost = c[i].cost ? c[i].cost : "1";
        if (c[i].credit) {
            NUM(c[i].strategy);
            WORD(limit, strlen(limit));
            WORD(window, strlen(window));
            WORD(cost, strlen(cost));
            NUM(mode);
            NUM(c[i].credit_age);
            continue;
        }
        if (c[i].lease_want > 0) {
            NUM(c[i].strategy);
            WORD(limit, strlen(limit));
            WORD(window, strlen(window));
            WORD(cost, strlen(cost));
            NUM(mode);
            NUM(c[i].lease_want);
            continue;
        }
        if (np > 1)
            NUM(c[i].strategy);
        WORD(limit, strlen(limit));
        WORD(window, strlen(window));
        if (np > 1 || mode != 0 || strcmp(cost, "1") != 0)
            WORD(cost, strlen(cost));
        if (np > 1 || mode != 0)
            NUM(mode);
    }
#undef WORD
#undef NUM
    buf = malloc(RLAAS_RESP_CALL_MAX(keys, (size_t)np));
    CHECK(buf != NULL);
    n = rlaas_resp_call(buf, sha, c, np);
    CHECK(n <= RLAAS_RESP_CALL_MAX(keys, (size_t)np));
    wn = redisFormatCommandArgv(&want, argc, argv, lens);
    CHECK(wn > 0 && want != NULL && n == (size_t)wn);
    CHECK(memcmp(buf, want, n) == 0);
    free(want);
    free(buf);
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
    check_call(sha, key, klen, limit, window, (uint64_t)v);
    free(key);
    free(limit);
    free(window);
    return 0;
}
