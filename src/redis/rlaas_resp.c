#include "rlaas_resp.h"

#include "rlaas_verdict.h"

#include <string.h>

/* "$<len>\r\n<bytes>\r\n" */
static size_t bulk(char *p, const char *s, size_t len)
{
    size_t n = 0;

    p[n++] = '$';
    n += rlaas_fmt_i64(p + n, (int64_t)len);
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

static size_t bulk_int(char *p, int64_t v)
{
    char d[21];

    return bulk(p, d, rlaas_fmt_i64(d, v));
}

/* "*<count>\r\n$7\r\nEVALSHA\r\n" */
static size_t head(char *p, int64_t count)
{
    static const char evalsha[] = "$7\r\nEVALSHA\r\n";
    size_t n = 0;

    p[n++] = '*';
    n += rlaas_fmt_i64(p + n, count);
    p[n++] = '\r';
    p[n++] = '\n';
    memcpy(p + n, evalsha, sizeof(evalsha) - 1);
    return n + sizeof(evalsha) - 1;
}

size_t rlaas_resp_evalsha(char *buf, const char *sha1, const char *key,
                          size_t key_len, const char *limit, const char *window)
{
    static const char one_key[] = "$1\r\n1\r\n";
    size_t n = head(buf, 6);

    n += bulk(buf + n, sha1, 40);
    memcpy(buf + n, one_key, sizeof(one_key) - 1);
    n += sizeof(one_key) - 1;
    n += bulk(buf + n, key, key_len);
    n += bulk_str(buf + n, limit);
    n += bulk_str(buf + n, window);
    return n;
}

static int default_cost(const char *cost)
{
    return cost == NULL || (cost[0] == '1' && cost[1] == '\0');
}

/* One policy: the single strategy call, cost and mode only when needed. */
static size_t one(char *buf, const char *sha1, const rlaas_call_t *c)
{
    int extra = c->mode != 0 ? 2 : !default_cost(c->cost);
    size_t n;

    if (c->lease_want > 0) {
        n = head(buf, 10);
        n += bulk(buf + n, sha1, 40);
        n += bulk_int(buf + n, 1);
        n += bulk(buf + n, c->key, c->key_len);
        n += bulk_int(buf + n, c->strategy);
        n += bulk_str(buf + n, c->limit);
        n += bulk_str(buf + n, c->window);
        n += bulk_str(buf + n, c->cost != NULL ? c->cost : "1");
        n += bulk_int(buf + n, c->mode);
        n += bulk_int(buf + n, c->lease_want);
        return n;
    }
    if (extra == 0)
        return rlaas_resp_evalsha(buf, sha1, c->key, c->key_len, c->limit,
                                  c->window);
    n = head(buf, 6 + extra);
    n += bulk(buf + n, sha1, 40);
    n += bulk_int(buf + n, 1);
    n += bulk(buf + n, c->key, c->key_len);
    n += bulk_str(buf + n, c->limit);
    n += bulk_str(buf + n, c->window);
    n += bulk_str(buf + n, c->cost != NULL ? c->cost : "1");
    if (extra == 2)
        n += bulk_int(buf + n, c->mode);
    return n;
}

/* A policy's words in a call of several (lua/multi.lua): strategy,
 * limit, window, cost, mode; a credit's (lua/credit.lua) add its age. */
static size_t words(char *buf, const rlaas_call_t *c)
{
    size_t len = bulk_int(buf, c->strategy);

    len += bulk_str(buf + len, c->limit);
    len += bulk_str(buf + len, c->window);
    len += bulk_str(buf + len, c->cost != NULL ? c->cost : "1");
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
    int tokens = calls[0].release != 0;
    size_t len = head(buf, 3 + (1 + tokens) * (int64_t)n);
    int i;

    len += bulk(buf + len, sha1, 40);
    len += bulk_int(buf + len, n);
    for (i = 0; i < n; i++)
        len += bulk(buf + len, calls[i].key, calls[i].key_len);
    for (i = 0; tokens && i < n; i++)
        len += bulk_str(buf + len, calls[i].cost);
    return len;
}

size_t rlaas_resp_call(char *buf, const char *sha1, const rlaas_call_t *calls,
                       int n)
{
    size_t len;
    int i;

    if (calls[0].release || calls[0].forget)
        return keys_only(buf, sha1, calls, n);
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
