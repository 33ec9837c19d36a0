#include "rlaas_ip.h"

#include <arpa/inet.h>
#include <string.h>

/* Longest textual IPv6 address (INET6_ADDRSTRLEN - 1). */
#define TEXT_MAX 45

static size_t put_dec(char *out, unsigned v)
{
    char d[3];
    size_t n = 0, i;

    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && n < sizeof(d));
    for (i = 0; i < n; i++)
        out[i] = d[n - 1 - i];
    return n;
}

static size_t put_hex(char *out, unsigned v)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    int shift;

    for (shift = 12; shift >= 0; shift -= 4) {
        unsigned d = (v >> shift) & 0xf;
        if (d != 0 || n > 0 || shift == 0)
            out[n++] = hex[d];
    }
    return n;
}

static size_t dotted(char *out, const unsigned char *b)
{
    size_t n = 0;
    int i;

    for (i = 0; i < 4; i++) {
        if (i > 0)
            out[n++] = '.';
        n += put_dec(out + n, b[i]);
    }
    out[n] = '\0';
    return n;
}

static int v4_mapped(const unsigned char *b)
{
    static const unsigned char head[12] = {0, 0, 0, 0, 0,    0,
                                           0, 0, 0, 0, 0xff, 0xff};

    return memcmp(b, head, sizeof(head)) == 0;
}

/* The /bits network of b, group by group. */
static size_t network(char *out, const unsigned char *b, int bits)
{
    size_t n = 0;
    int g;

    for (g = 0; g * 16 < bits; g++) {
        int covered = bits - g * 16 < 16 ? bits - g * 16 : 16;
        unsigned v = (unsigned)(b[2 * g] << 8 | b[2 * g + 1]);

        v &= (0xffffu << (16 - covered)) & 0xffffu;
        if (g > 0)
            out[n++] = '-';
        n += put_hex(out + n, v);
    }
    out[n++] = '_';
    n += put_dec(out + n, (unsigned)bits);
    out[n] = '\0';
    return n;
}

/* Whether addr is an IPv4 address as dotted() writes it: four decimal
 * octets, none above 255, none with a leading zero. httpd hands the
 * client address so (apr_sockaddr_ip_get), so it is copied as it came;
 * anything else takes the general path. */
static int canonical_v4(const char *addr, size_t len)
{
    size_t i = 0;
    int part;

    for (part = 0; part < 4; part++) {
        unsigned v = 0;
        size_t start;

        if (part > 0 && (i >= len || addr[i++] != '.'))
            return 0;
        start = i;
        while (i < len && i - start < 3 && addr[i] >= '0' && addr[i] <= '9')
            v = v * 10 + (unsigned)(addr[i++] - '0');
        if (i == start || v > 255 || (addr[start] == '0' && i - start > 1))
            return 0;
    }
    return i == len;
}

size_t rlaas_ip_render(char *out, const char *addr, size_t len, int v6prefix)
{
    char text[TEXT_MAX + 1];
    unsigned char b[16];
    const char *zone;

    if (v6prefix < RLAAS_IPV6_PREFIX_MIN || v6prefix > RLAAS_IPV6_PREFIX_MAX)
        return 0;
    zone = memchr(addr, '%', len);
    if (zone != NULL)
        len = (size_t)(zone - addr);
    if (len == 0 || len > TEXT_MAX || memchr(addr, '\0', len) != NULL)
        return 0;
    if (canonical_v4(addr, len)) {
        memcpy(out, addr, len);
        out[len] = '\0';
        return len;
    }
    memcpy(text, addr, len);
    text[len] = '\0';
    if (inet_pton(AF_INET, text, b) == 1)
        return dotted(out, b);
    if (inet_pton(AF_INET6, text, b) != 1)
        return 0;
    if (v4_mapped(b))
        return dotted(out, b + 12);
    return network(out, b, v6prefix);
}
