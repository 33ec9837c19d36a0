/*
 * libFuzzer target: what the module does with the bytes Redis sends back.
 * The bytes go through hiredis' own protocol reader (the one redisCommand
 * uses), fed in fuzzer-chosen slices so that replies split across reads are
 * covered; every reply the reader yields goes to rlaas_reply_verdict, and
 * every OK verdict is formatted the way rlaas_limit.c does it, into buffers
 * of the same size.
 *
 * Checked: rlaas_reply_verdict says OK only for the agreed shape (an array
 * of four integers in range), NOSCRIPT only for an error starting with
 * "NOSCRIPT"; an OK verdict has allowed 0 or 1, remaining >= 0 and times in
 * 0..RLAAS_REPLY_MS_MAX; Retry-After is at least 1 s; the header values are
 * never truncated.
 *
 * Input layout: byte 0 is the slice length (0 means all at once), the rest
 * is the RESP byte stream.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "rlaas_headers.h"
#include "rlaas_parse.h"
#include "rlaas_reply.h"
#include "fuzz_check.h"

/* As in rlaas_limit.c's add_headers(). */
#define HDR_BUF (RLAAS_NAME_MAX + 64)

static int int_in(const redisReply *e, long long lo, long long hi)
{
    return e != NULL && e->type == REDIS_REPLY_INTEGER && e->integer >= lo &&
           e->integer <= hi;
}

/* Independent statement of the agreed shape. */
static int model_ok(const redisReply *r)
{
    return r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
           int_in(r->element[0], 0, 1) && int_in(r->element[1], 0, INT64_MAX) &&
           int_in(r->element[2], 0, RLAAS_REPLY_MS_MAX) &&
           int_in(r->element[3], 0, RLAAS_REPLY_MS_MAX);
}

static void check_headers(const rlaas_verdict_t *v)
{
    /* the longest policy name a configuration can give */
    char zone[RLAAS_NAME_MAX + 1];
    char buf[HDR_BUF];
    int n;

    memset(zone, 'z', RLAAS_NAME_MAX);
    zone[RLAAS_NAME_MAX] = '\0';
    n = rlaas_fmt_ratelimit(buf, sizeof(buf), zone, v);
    CHECK(n > 0 && (size_t)n < sizeof(buf));
    n = rlaas_fmt_ratelimit(buf, sizeof(buf), RLAAS_POLICY_DEFAULT, v);
    CHECK(n > 0 && (size_t)n < sizeof(buf));
    /* the largest limit and window the parsers accept */
    n = rlaas_fmt_policy(buf, sizeof(buf), zone, RLAAS_LIMIT_MAX,
                         RLAAS_WINDOW_MAX_MS);
    CHECK(n > 0 && (size_t)n < sizeof(buf));
}

static void judge(const redisReply *rep)
{
    rlaas_verdict_t v;
    rlaas_reply_status_e st;
    int64_t s;

    memset(&v, 0xa5, sizeof(v));
    st = rlaas_reply_verdict(rep, &v);
    CHECK(st == RLAAS_REPLY_OK || st == RLAAS_REPLY_NOSCRIPT ||
          st == RLAAS_REPLY_ERROR || st == RLAAS_REPLY_BAD);
    CHECK((st == RLAAS_REPLY_OK) == model_ok(rep));
    CHECK((st == RLAAS_REPLY_ERROR || st == RLAAS_REPLY_NOSCRIPT) ==
          (rep->type == REDIS_REPLY_ERROR));
    if (st == RLAAS_REPLY_NOSCRIPT)
        CHECK(rep->len >= 8 && memcmp(rep->str, "NOSCRIPT", 8) == 0);
    if (st != RLAAS_REPLY_OK)
        return;
    CHECK(v.allowed == 0 || v.allowed == 1);
    CHECK(v.allowed == rep->element[0]->integer);
    CHECK(v.remaining >= 0 && v.remaining == rep->element[1]->integer);
    CHECK(v.reset_ms >= 0 && v.reset_ms <= RLAAS_REPLY_MS_MAX);
    CHECK(v.retry_ms >= 0 && v.retry_ms <= RLAAS_REPLY_MS_MAX);
    s = rlaas_retry_after_s(v.retry_ms);
    CHECK(s >= 1 && s <= RLAAS_REPLY_MS_MAX / 1000 + 1);
    CHECK(s * 1000 >= v.retry_ms); /* never tells a client to come early */
    s = rlaas_ms_to_s_ceil(v.reset_ms);
    CHECK(s >= 0 && s * 1000 >= v.reset_ms && (s - 1) * 1000 < v.reset_ms + 1);
    check_headers(&v);
}

/* hiredis 0.14 allocates a multi-bulk reply's element array as soon as it
 * reads the header: "*2147483647\r\n" asks for 16 GiB before a single
 * element has arrived. Redis is a trusted peer and hiredis handles a failed
 * allocation (the reader reports out-of-memory), so here allocations above
 * 256 MiB fail instead of ending the run as an "out-of-memory" crash in
 * every session. Built into the binary so that a reproducer behaves the
 * same when run by hand. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1:max_allocation_size_mb=256";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *rd;
    size_t slice, off;
    void *rep;
    int replies = 0;

    if (size < 1)
        return 0;
    slice = data[0] ? data[0] : size;
    data++;
    size--;
    rd = redisReaderCreate();
    if (rd == NULL)
        return 0;
    for (off = 0; off < size || off == 0; off += slice) {
        size_t n = size - off < slice ? size - off : slice;

        if (n > 0 && redisReaderFeed(rd, (const char *)data + off, n) != REDIS_OK)
            break;
        /* drain what this slice completed; a protocol error ends the
         * stream, as it ends the connection in the module */
        for (;;) {
            rep = NULL;
            if (redisReaderGetReply(rd, &rep) != REDIS_OK)
                goto done;
            if (rep == NULL)
                break;
            judge(rep);
            freeReplyObject(rep);
            if (++replies > 1000)
                goto done;
        }
        if (size == 0)
            break;
    }
done:
    redisReaderFree(rd);
    return 0;
}
