/*
 * libFuzzer target: the hand-written Redis protocol of the request path
 * (src/redis/rlaas_resp.c). rlaas_resp_call, for 1 to 8 policies on any
 * key (NUL, CR, LF included; minus a byte each) with any int64 limit,
 * window and cost, a calendar's periods in place of the window or not,
 * and a mode, strategy, lease or credit taken from an int64's bits, must
 * produce byte for byte what hiredis' own formatter (redisFormatCommandArgv)
 * produces for the same numbers printed, and stay inside
 * RLAAS_RESP_CALL_MAX: the buffer is a heap block of exactly that size,
 * so ASan sees a write past it. rlaas_fmt_i64 must print any int64_t as
 * printf's %lld does.
 *
 * Input layout: 8 bytes of an int64 for rlaas_fmt_i64 and the bits; 8
 * bytes each of the limit, the window and the cost; 40 bytes of sha1; the
 * rest is the key.
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

/* A call of n policies against hiredis on the same words. */
static void check_call(const char *sha, const char *key, size_t klen,
                       const int64_t num3[3], uint64_t bits)
{
    static const char cal[] = "1d/1700000000000/1700086400000/"
                              "1700172800000/1700259200000";
    rlaas_call_t c[RLAAS_CALL_POLICIES_MAX];
    const char *argv[3 + 7 * RLAAS_CALL_POLICIES_MAX];
    size_t lens[3 + 7 * RLAAS_CALL_POLICIES_MAX], keys = 0, n;
    char num[7 * RLAAS_CALL_POLICIES_MAX + 1][24], *buf, *want = NULL;
    int np = (int)(bits & 7) + 1, mode = (int)((bits >> 3) & 3);
    int argc = 0, k = 0, i, wn;

#define WORD(s, l) (argv[argc] = (s), lens[argc++] = (l))
#define NUM(x)                                                                 \
    (snprintf(num[k], 24, "%" PRId64, (int64_t)(x)),                           \
     WORD(num[k], strlen(num[k])), k++)
#define WINDOW(x)                                                              \
    ((x)->cal != NULL ? (void)WORD((x)->cal, strlen((x)->cal))                 \
                      : (void)NUM((x)->window_ms))
    memset(c, 0, sizeof(c));
    WORD("EVALSHA", 7);
    WORD(sha, 40);
    NUM(np);
    for (i = 0; i < np; i++) {
        c[i].strategy = (rlaas_strategy_e)((bits >> (5 + 3 * i)) % 6);
        c[i].key = key;
        c[i].key_len = klen > (size_t)i ? klen - (size_t)i : 0;
        c[i].limit = num3[0];
        c[i].window_ms = num3[1];
        c[i].cal = (bits >> 39) & 1 ? cal : NULL;
        c[i].cost = (bits >> 40) & 1 ? 1 : num3[2];
        c[i].mode = mode;
        keys += c[i].key_len;
        WORD(key, c[i].key_len);
    }
    /* a lease (one policy): every word, then how much it wants */
    if (np == 1 && (bits >> 41) & 1) {
        c[0].lease_want = 1 + (int64_t)((bits >> 42) % 1000);
        c[0].lease_back = (int64_t)((bits >> 52) % 1000);
        c[0].lease_back_at = (int64_t)((bits >> 56) % 100);
    }
    /* credits: every word of each, then its age */
    else if ((bits >> 52) & 1)
        for (i = 0; i < np; i++) {
            c[i].credit = 1;
            c[i].credit_age = (int64_t)((bits >> 53) % 2000);
        }
    for (i = 0; i < np; i++) {
        if (c[i].credit || c[i].lease_want > 0) {
            NUM(c[i].strategy);
            NUM(c[i].limit);
            WINDOW(&c[i]);
            NUM(c[i].cost);
            NUM(mode);
            if (c[i].credit)
                NUM(c[i].credit_age);
            else {
                NUM(c[i].lease_want);
                NUM(c[i].lease_back);
                NUM(c[i].lease_back_at);
            }
            continue;
        }
        if (np > 1)
            NUM(c[i].strategy);
        NUM(c[i].limit);
        WINDOW(&c[i]);
        if (np > 1 || mode != 0 || c[i].cost != 1)
            NUM(c[i].cost);
        if (np > 1 || mode != 0)
            NUM(mode);
    }
#undef WORD
#undef NUM
#undef WINDOW
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
    int64_t v, num3[3];
    size_t klen;
    char sha[41], *key;

    if (size < 8 + 24 + 40)
        return 0;
    memcpy(&v, data, 8);
    check_i64(v);
    memcpy(num3, data + 8, sizeof(num3));
    memcpy(sha, data + 32, 40);
    sha[40] = '\0';
    data += 72;
    size -= 72;
    klen = size;
    key = malloc(klen ? klen : 1); /* exact size: ASan sees over-reads */
    CHECK(key != NULL);
    memcpy(key, data, klen);
    check_call(sha, key, klen, num3, (uint64_t)v);
    free(key);
    return 0;
}
