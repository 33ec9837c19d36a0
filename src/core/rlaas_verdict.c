#include "rlaas_verdict.h"

size_t rlaas_fmt_i64(char *buf, int64_t v)
{
    char tmp[20];
    size_t n = 0, i;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    i = 0;
    if (v < 0)
        buf[i++] = '-';
    while (n > 0)
        buf[i++] = tmp[--n];
    return i;
}

int64_t rlaas_ms_to_s_ceil(int64_t ms)
{
    return ms <= 0 ? 0 : (ms + 999) / 1000;
}

int64_t rlaas_retry_after_s(int64_t retry_ms)
{
    int64_t s = rlaas_ms_to_s_ceil(retry_ms);

    return s < 1 ? 1 : s;
}
