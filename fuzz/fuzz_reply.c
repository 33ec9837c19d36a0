/*
 * libFuzzer target: what the module does with the bytes Redis sends back.
 * The bytes go, in fuzzer-chosen slices so that replies split across reads
 * are covered, through two hiredis readers at once: one with the object
 * functions of rlaas_reply.c (the sink, as the module reads replies) and
 * one with hiredis' own reply objects, which serve as the model. Every
 * reply yields a verdict from the sink, compared with the model, and every
 * OK verdict is formatted the way rlaas_limit.c does it, into buffers of
 * the same size.
 *
 * Checked: both readers agree on where replies end and on protocol errors;
 * rlaas_reply_verdicts, for a call of n policies (1 to 8), says OK only for
 * the agreed shape (an array of 4n integers, each four in range), with the
 * model's values, NOSCRIPT only for an error
 * starting with "NOSCRIPT"; an error's text in the sink is a prefix of the
 * model's; an OK verdict has allowed 0 or 1, remaining >= 0 and times in
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

/* Independent statement of the agreed shape for n policies. */
static int model_ok(const redisReply *r, int n)
{
    size_t i;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)(4 * n))
        return 0;
    for (i = 0; i < r->elements; i += 4) {
        if (!(int_in(r->element[i], 0, 1) &&
              int_in(r->element[i + 1], 0, INT64_MAX) &&
              int_in(r->element[i + 2], 0, RLAAS_REPLY_MS_MAX) &&
              int_in(r->element[i + 3], 0, RLAAS_REPLY_MS_MAX)))
            return 0;
    }
    return 1;
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

static void judge_one(const redisReply *const *e, const rlaas_verdict_t *vp)
{
    rlaas_verdict_t v = *vp;
    int64_t s;

    CHECK(v.allowed == 0 || v.allowed == 1);
    CHECK(v.allowed == e[0]->integer);
    CHECK(v.remaining >= 0 && v.remaining == e[1]->integer);
    CHECK(v.reset_ms == e[2]->integer);
    CHECK(v.retry_ms == e[3]->integer);
    CHECK(v.reset_ms >= 0 && v.reset_ms <= RLAAS_REPLY_MS_MAX);
    CHECK(v.retry_ms >= 0 && v.retry_ms <= RLAAS_REPLY_MS_MAX);
    s = rlaas_retry_after_s(v.retry_ms);
    CHECK(s >= 1 && s <= RLAAS_REPLY_MS_MAX / 1000 + 1);
    CHECK(s * 1000 >= v.retry_ms); /* never tells a client to come early */
    s = rlaas_ms_to_s_ceil(v.reset_ms);
    CHECK(s >= 0 && s * 1000 >= v.reset_ms && (s - 1) * 1000 < v.reset_ms + 1);
    check_headers(&v);
}

/* The reply read as that of a call of n policies. */
static void judge(const redisReply *rep, const rlaas_reply_sink_t *sink, int n)
{
    rlaas_verdict_t v[RLAAS_REPLY_INTS_MAX / 4];
    rlaas_reply_status_e st;
    int i;

    memset(v, 0xa5, sizeof(v));
    st = rlaas_reply_verdicts(sink, n, v);
    CHECK(st == RLAAS_REPLY_OK || st == RLAAS_REPLY_NOSCRIPT ||
          st == RLAAS_REPLY_ERROR || st == RLAAS_REPLY_BAD);
    CHECK((st == RLAAS_REPLY_OK) == model_ok(rep, n));
    if (n == 1) {
        rlaas_verdict_t w;
        CHECK(rlaas_reply_verdict(sink, &w) == st);
    }
    CHECK((st == RLAAS_REPLY_ERROR || st == RLAAS_REPLY_NOSCRIPT) ==
          (rep->type == REDIS_REPLY_ERROR));
    if (st == RLAAS_REPLY_NOSCRIPT)
        CHECK(rep->len >= 8 && memcmp(rep->str, "NOSCRIPT", 8) == 0);
    if (rep->type == REDIS_REPLY_ERROR) {
        CHECK(sink->err_len < sizeof(sink->err) && sink->err[sink->err_len] == '\0');
        CHECK(sink->err_len <= rep->len &&
              memcmp(sink->err, rep->str, sink->err_len) == 0);
    }
    if (st != RLAAS_REPLY_OK)
        return;
    for (i = 0; i < n; i++)
        judge_one((const redisReply *const *)rep->element + 4 * i, &v[i]);
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

/* The next reply of each reader: 1 with a reply from both, 0 when neither
 * has one complete, -1 on a protocol error (both must agree). A reply cut
 * across slices fills the sink over several calls, so the sink is reset
 * only once a reply is complete (as the module resets it before each
 * redisGetReply, which reads until the reply is whole). */
static int next_pair(redisReader *model, redisReader *rd,
                     rlaas_reply_sink_t *sink, redisReply **rep)
{
    void *m = NULL, *r = NULL;
    int mrc = redisReaderGetReply(model, &m);
    int rrc = redisReaderGetReply(rd, &r);

    /* the model may fail to allocate a huge array where the sink needs
     * nothing: that ends the stream without a comparison */
    if (mrc != REDIS_OK && model->err == REDIS_ERR_OOM)
        return -1;
    CHECK(mrc == rrc);
    if (mrc != REDIS_OK)
        return -1;
    CHECK((m == NULL) == (r == NULL));
    CHECK(r == NULL || r == sink);
    *rep = m;
    return m != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    redisReader *model, *rd;
    rlaas_reply_sink_t sink;
    size_t slice, off;
    int replies = 0;

    if (size < 1)
        return 0;
    slice = data[0] ? data[0] : size;
    data++;
    size--;
    model = redisReaderCreate();
    rd = redisReaderCreateWithFunctions(&rlaas_reply_sink_fns);
    if (model == NULL || rd == NULL)
        goto done;
    rd->privdata = &sink;
    rlaas_reply_sink_reset(&sink);
    for (off = 0; off < size || off == 0; off += slice) {
        size_t n = size - off < slice ? size - off : slice;

        if (n > 0) {
            int a = redisReaderFeed(model, (const char *)data + off, n);
            int b = redisReaderFeed(rd, (const char *)data + off, n);

            CHECK(a == b);
            if (a != REDIS_OK)
                break;
        }
        /* drain what this slice completed; a protocol error ends the
         * stream, as it ends the connection in the module */
        for (;;) {
            redisReply *rep = NULL;
            int got = next_pair(model, rd, &sink, &rep);

            if (got < 0)
                goto done;
            if (got == 0)
                break;
            for (int k = 1; k <= RLAAS_REPLY_INTS_MAX / 4; k++)
                judge(rep, &sink, k);
            freeReplyObject(rep);
            rlaas_reply_sink_reset(&sink);
            if (++replies > 1000)
                goto done;
        }
        if (size == 0)
            break;
    }
done:
    if (model != NULL)
        redisReaderFree(model);
    if (rd != NULL)
        redisReaderFree(rd);
    return 0;
}
