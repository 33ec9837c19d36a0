/*
 * SipHash (Aumasson and Bernstein): a 64-bit hash keyed with a 128-bit
 * secret, in its 2-4 and 1-3 variants. The local engine places identities
 * in its table by SipHash-1-3; with a secret drawn at start-up, no client
 * can choose identities that pile up in one bucket or one lock stripe. No
 * httpd headers.
 */
#ifndef RLAAS_SIPHASH_H
#define RLAAS_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define RLAAS_SIPHASH_KEY_LEN 16

uint64_t rlaas_siphash(const uint8_t key[RLAAS_SIPHASH_KEY_LEN],
                       const void *data, size_t len);

/* SipHash-1-3: one round per word and three to finish, the variant hash
 * tables keyed against flooding commonly take (Rust's HashMap, CPython's
 * str): what the local engine places its records by, where the hash is
 * computed on every decision and never leaves the process. */
uint64_t rlaas_siphash13(const uint8_t key[RLAAS_SIPHASH_KEY_LEN],
                         const void *data, size_t len);

#endif
