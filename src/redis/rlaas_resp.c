#include "rlaas_resp.h"

#include "rlaas_verdict.h"

#include <string.h>

/* A length or a count: most are one or two digits (a sha1's 40, a
 * number's length, a key of up to 99 bytes). */
static size_t count(char *p, size_t v)
{
    if (v < 10) {
        p[0] = (char)('0' + v);
        return 1;
    }
    if (v < 100) {
        p[0] = (char)('0' + v / 10);
        p[1] = (char)('0' + v % 10);
        return 2;
    }
    return rlaas_fmt_i64(p, (int64_t)v);
}

/* "$<len>\r\n<bytes>\r\n" */
static size_t bulk(char *p, const char *s, size_t len)
{
    size_t n = 0;

    p[n++] = '$';
    n += count(p + n, len);
    p[n++] = '\r';
    p[n++] = '\n';
    memcpy(p + n, s, len);
    n += len;
    p[n++] = '\r';
    p[n++] = '\n';
    return n;
}

static size_t bulk_str(char *p, const char *s)
{
    return bulk(p, s, strlen(s));
}

/* A number, printed: the one place numbers become text. */
static size_t bulk_int(char *p, int64_t v)
{
    char d[24], *end = d + sizeof(d), *b = rlaas_fmt_i64_back(end, v);

    return bulk(p, b, (size_t)(end - b));
}

/* "*<count>\r\n$7\r\nEVALSHA\r\n" */
static size_t head(char *p, int64_t words)
{
    static const char evalsha[] = "$7\r\nEVALSHA\r\n";
    size_t n = 0;

    p[n++] = '*';
    n += count(p + n, (size_t)words);
    p[n++] = '\r';
    p[n++] = '\n';
    memcpy(p + n, evalsha, sizeof(evalsha) - 1);
    return n + sizeof(evalsha) - 1;
}

/* The window's argument: the calendar's periods, or milliseconds. */
static size_t window(char *p, const rlaas_call_t *c)
{
    return c->cal != NULL ? bulk_str(p, c->cal) : bulk_int(p, c->window_ms);
}

/* One policy: the single strategy call, cost and mode only when needed
 * (the bytes of a plain request are those of a single strategy call). */
static size_t one(char *buf, const char *sha1, const rlaas_call_t *c)
{
    int extra = c->mode != 0 ? 2 : c->cost != 1;
    size_t n = head(buf, 6 + extra);

    n += bulk(buf + n, sha1, 40);
    n += bulk_int(buf + n, 1);
    n += bulk(buf + n, c->key, c->key_len);
    n += bulk_int(buf + n, c->limit);
    n += window(buf + n, c);
    if (extra >= 1)
        n += bulk_int(buf + n, c->cost);
    if (extra >= 2)
        n += bulk_int(buf + n, c->mode);
    return n;
}

/* A lease (lua/lease.lua): the keys, then 8 words a policy. */
static size_t lease(char *buf, const char *sha1, const rlaas_call_t *calls,
                    int n)
{
    size_t len = head(buf, 3 + 9 * (int64_t)n);
    int i;

    len += bulk(buf + len, sha1, 40);
    len += bulk_int(buf + len, n);
    for (i = 0; i < n; i++)
        len += bulk(buf + len, calls[i].key, calls[i].key_len);
    for (i = 0; i < n; i++) {
        const rlaas_call_t *c = &calls[i];

        len += bulk_int(buf + len, c->strategy);
        len += bulk_int(buf + len, c->limit);
        len += window(buf + len, c);
        len += bulk_int(buf + len, c->cost);
        len += bulk_int(buf + len, c->mode);
        len += bulk_int(buf + len, c->lease_want);
        len += bulk_int(buf + len, c->lease_back);
        len += bulk_int(buf + len, c->lease_back_at);
    }
    return len;
}

int rlaas_call_lease(const rlaas_call_t *calls, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        if (calls[i].lease_want > 0)
            return 1;
    }
    return 0;
}

/* A policy's words in a call of several (lua/multi.lua): strategy,
 * limit, window, cost, mode; a credit's (lua/credit.lua) add its age. */
static size_t words(char *buf, const rlaas_call_t *c)
{
    size_t len = bulk_int(buf, c->strategy);

    len += bulk_int(buf + len, c->limit);
    len += window(buf + len, c);
    len += c->token != NULL ? bulk_str(buf + len, c->token)
                            : bulk_int(buf + len, c->cost);
    len += bulk_int(buf + len, c->mode);
    if (c->credit)
        len += bulk_int(buf + len, c->credit_age);
    return len;
}

/* Slots given back: the keys, then each one's token; records forgotten:
 * the keys alone. */
static size_t keys_only(char *buf, const char *sha1, const rlaas_call_t *calls,
                        int n)
{
    int tokens = calls[0].release != 0, mark = calls[0].forget == 2;
    size_t len = head(buf, 3 + (1 + tokens) * (int64_t)n + mark);
    int i;

    len += bulk(buf + len, sha1, 40);
    len += bulk_int(buf + len, n);
    for (i = 0; i < n; i++)
        len += bulk(buf + len, calls[i].key, calls[i].key_len);
    for (i = 0; tokens && i < n; i++)
        len += bulk_str(buf + len, calls[i].token);
    if (mark)
        len += bulk_int(buf + len, 1);
    return len;
}

size_t rlaas_resp_call(char *buf, const char *sha1, const rlaas_call_t *calls,
                       int n)
{
    size_t len;
    int i;

    if (calls[0].release || calls[0].forget)
        return keys_only(buf, sha1, calls, n);
    if (rlaas_call_lease(calls, n))
        return lease(buf, sha1, calls, n);
    /* a concurrency limit is decided by the multi script, even alone */
    if (n == 1 && !calls[0].credit && calls[0].strategy < RLAAS_STRATEGY_COUNT)
        return one(buf, sha1, calls);
    len = head(buf, 3 + (calls[0].credit ? 7 : 6) * (int64_t)n);
    len += bulk(buf + len, sha1, 40);
    len += bulk_int(buf + len, n);
    for (i = 0; i < n; i++)
        len += bulk(buf + len, calls[i].key, calls[i].key_len);
    for (i = 0; i < n; i++)
        len += words(buf + len, &calls[i]);
    return len;
}
