#include "rlaas_siphash.h"

#include <endian.h>
#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

/* Little-endian whatever the host, as the algorithm defines its words;
 * whole words in one load (a third of the hash's instructions byte by
 * byte, callgrind). */
static inline uint64_t le64(const uint8_t *p, size_t n)
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

/* The state in four locals, not an array: kept in registers (an array
 * passed to an outlined round went through memory, callgrind). */
typedef struct {
    uint64_t v0, v1, v2, v3;
} sip_t;

static inline void sipround(sip_t *s)
{
    s->v0 += s->v1;
    s->v1 = ROTL(s->v1, 13);
    s->v1 ^= s->v0;
    s->v0 = ROTL(s->v0, 32);
    s->v2 += s->v3;
    s->v3 = ROTL(s->v3, 16);
    s->v3 ^= s->v2;
    s->v0 += s->v3;
    s->v3 = ROTL(s->v3, 21);
    s->v3 ^= s->v0;
    s->v2 += s->v1;
    s->v1 = ROTL(s->v1, 17);
    s->v1 ^= s->v2;
    s->v2 = ROTL(s->v2, 32);
}

/* The last word: the tail's bytes under the length. A key of a word or
 * more loads its last 8 bytes and shifts out those already absorbed, in
 * place of a loop over up to 7 bytes. */
static inline uint64_t last_word(const uint8_t *p, size_t len)
{
    size_t tail = len % 8;
    uint64_t m = 0;

    if (tail > 0 && len >= 8)
        m = le64(p + len - 8, 8) >> (8 * (8 - tail));
    else if (tail > 0)
        m = le64(p, tail);
    return ((uint64_t)len << 56) | m;
}

/* SipHash-c-d: c (1 or 2) rounds per message word, d (3 or 4) to finish.
 * Inlined into each entry with constant c and d: no loop over rounds, no
 * test of c per word. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline uint64_t
siphash_cd(const uint8_t key[RLAAS_SIPHASH_KEY_LEN], const void *data,
           size_t len, int c, int d)
{
    const uint8_t *p = data;
    uint64_t k0 = le64(key, 8), k1 = le64(key + 8, 8), m;
    sip_t s = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
               k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
    size_t i;

    for (i = 0; i <= len; i += 8) {
        m = i + 8 <= len ? le64(p + i, 8) : last_word(p, len);
        s.v3 ^= m;
        sipround(&s);
        if (c == 2)
            sipround(&s);
        s.v0 ^= m;
    }
    s.v2 ^= 0xff;
    sipround(&s);
    sipround(&s);
    sipround(&s);
    if (d == 4)
        sipround(&s);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t rlaas_siphash(const uint8_t key[RLAAS_SIPHASH_KEY_LEN],
                       const void *data, size_t len)
{
    return siphash_cd(key, data, len, 2, 4);
}

uint64_t rlaas_siphash13(const uint8_t key[RLAAS_SIPHASH_KEY_LEN],
                         const void *data, size_t len)
{
    return siphash_cd(key, data, len, 1, 3);
}
