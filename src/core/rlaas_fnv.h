/*
 * FNV-1a, 64 bits: an unkeyed hash for small memories that place names by
 * hash and tolerate collisions (the console's tally rows, the identities
 * RLaaSLease auto saw lately). Not for the local engine's table, whose
 * keys come from clients: SipHash (rlaas_siphash.h) places those.
 */
#ifndef RLAAS_FNV_H
#define RLAAS_FNV_H

#include <stddef.h>
#include <stdint.h>

#define RLAAS_FNV_BASIS UINT64_C(14695981039346656037)

/* h (a basis, or what an earlier call returned) carried over n bytes. */
static inline uint64_t rlaas_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

#endif
