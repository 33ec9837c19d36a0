#include "rlaas_verdict.h"

/* Two digits a step, from the right: a number is formatted for most
 * responses (the RateLimit fields, RLAAS_REMAINING) and for every
 * command to Redis, and a division per digit is most of what that costs.
 * u's digits end at end; returns where they start. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline char *
digits_back(char *end, uint64_t u)
{
    static const char pairs[201] = "00010203040506070809"
                                   "10111213141516171819"
                                   "20212223242526272829"
                                   "30313233343536373839"
                                   "40414243444546474849"
                                   "50515253545556575859"
                                   "60616263646566676869"
                                   "70717273747576777879"
                                   "80818283848586878889"
                                   "90919293949596979899";

    while (u >= 100) {
        const char *p = &pairs[(u % 100) * 2];

        u /= 100;
        *--end = p[1];
        *--end = p[0];
    }
    if (u >= 10) {
        *--end = pairs[u * 2 + 1];
        *--end = pairs[u * 2];
    }
    else
        *--end = (char)('0' + u);
    return end;
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* How many digits u has, without a loop: the bit length times log10(2)
 * (1233 / 4096) is the count or one short of it, and one comparison with
 * a power of ten tells which. */
static size_t digit_count(uint64_t u)
{
    static const uint64_t pow10[20] = {1ULL,
                                       10ULL,
                                       100ULL,
                                       1000ULL,
                                       10000ULL,
                                       100000ULL,
                                       1000000ULL,
                                       10000000ULL,
                                       100000000ULL,
                                       1000000000ULL,
                                       10000000000ULL,
                                       100000000000ULL,
                                       1000000000000ULL,
                                       10000000000000ULL,
                                       100000000000000ULL,
                                       1000000000000000ULL,
                                       10000000000000000ULL,
                                       100000000000000000ULL,
                                       1000000000000000000ULL,
                                       10000000000000000000ULL};
    uint64_t w = u | 1; /* 0 has one digit, as 1 has */
    unsigned bits = 64 - (unsigned)__builtin_clzll(w);
    unsigned n = (bits * 1233) >> 12;

    return n + (w >= pow10[n]);
}

size_t rlaas_fmt_i64(char *buf, int64_t v)
{
    uint64_t u = magnitude(v);
    size_t n = digit_count(u);
    if (v < 0)
        *buf++ = '-';
    digits_back(buf + n, u);
    return n + (v < 0);
}

char *rlaas_fmt_i64_back(char *end, int64_t v)
{
    char *b = digits_back(end, magnitude(v));

    if (v < 0)
        *--b = '-';
    return b;
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
