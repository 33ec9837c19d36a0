/*
 * SipHash-2-4 (Aumasson and Bernstein): a 64-bit hash keyed with a
 * 128-bit secret. The local engine places identities in its table by it;
 * with a secret drawn at start-up, no client can choose identities that
 * pile up in one bucket or one lock stripe. No httpd headers.
 */
#ifndef RLAAS_SIPHASH_H
#define RLAAS_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define RLAAS_SIPHASH_KEY_LEN 16

uint64_t rlaas_siphash(const uint8_t key[RLAAS_SIPHASH_KEY_LEN],
                       const void *data, size_t len);

#endif
