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

size_t rlaas_resp_evalsha(char *buf, const char *sha1, const char *key,
                          size_t key_len, const char *limit, const char *window)
{
    static const char head[] = "*6\r\n$7\r\nEVALSHA\r\n";
    static const char one_key[] = "$1\r\n1\r\n";
    size_t n = sizeof(head) - 1;

    memcpy(buf, head, n);
    n += bulk(buf + n, sha1, 40);
    memcpy(buf + n, one_key, sizeof(one_key) - 1);
    n += sizeof(one_key) - 1;
    n += bulk(buf + n, key, key_len);
    n += bulk(buf + n, limit, strlen(limit));
    n += bulk(buf + n, window, strlen(window));
    return n;
}
