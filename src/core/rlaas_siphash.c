#include "rlaas_siphash.h"

#include <endian.h>
#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

/* Little-endian whatever the host, as the algorithm defines its words;
 * whole words in one load (a third of the hash's instructions byte by
 * byte, callgrind). */
static uint64_t le64(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    size_t i;

    if (n == 8) {
        memcpy(&v, p, 8);
        return le64toh(v);
    }
    for (i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void rounds(uint64_t v[4], int n)
{
    while (n-- > 0) {
        v[0] += v[1];
        v[1] = ROTL(v[1], 13);
        v[1] ^= v[0];
        v[0] = ROTL(v[0], 32);
        v[2] += v[3];
        v[3] = ROTL(v[3], 16);
        v[3] ^= v[2];
        v[0] += v[3];
        v[3] = ROTL(v[3], 21);
        v[3] ^= v[0];
        v[2] += v[1];
        v[1] = ROTL(v[1], 17);
        v[1] ^= v[2];
        v[2] = ROTL(v[2], 32);
    }
}

static void absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    rounds(v, 2);
    v[0] ^= m;
}

uint64_t rlaas_siphash(const uint8_t key[RLAAS_SIPHASH_KEY_LEN],
                       const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t k0 = le64(key, 8), k1 = le64(key + 8, 8);
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
                     k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
    size_t i, tail = len % 8;

    for (i = 0; i + 8 <= len; i += 8)
        absorb(v, le64(p + i, 8));
    absorb(v,
           ((uint64_t)len << 56) | (tail > 0 ? le64(p + len - tail, tail) : 0));
    v[2] ^= 0xff;
    rounds(v, 4);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}
