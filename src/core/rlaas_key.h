/*
 * Turning client-supplied identity values into Redis key text. No httpd
 * headers: the unit tests and the fuzzer call these directly.
 *
 * A segment is one source's contribution to the identity:
 *   raw      the value itself, when it is 1..64 bytes of [A-Za-z0-9.-_@]
 *            and not a credential;
 *   hashed   '~' and 32 hex digits (the first 128 bits of SHA-1(value)),
 *            for everything else: long values, other bytes, credentials;
 *   fallback "ip~" and the client address's own segment, when a source had
 *            no value. No raw or hashed segment contains '~' after its first
 *            byte, so a client cannot forge a fallback.
 * Segments never contain ':', '{', '}', spaces or control bytes, so joining
 * them with ':' can't reach another client's, strategy's or slot's key.
 */
#ifndef RLAAS_KEY_H
#define RLAAS_KEY_H

#include <stddef.h>

#include "rlaas_parse.h"

#define RLAAS_SEG_RAW_MAX  64
#define RLAAS_SEG_HASH_LEN 33 /* '~' + 32 hex digits */
#define RLAAS_SEG_MAX      (RLAAS_SEG_RAW_MAX + 3)

/* 1 if the bytes are all in the safe set and the length is 1..64. */
int rlaas_key_is_safe(const char *val, size_t len);

/* Writes the segment for val into out (room for RLAAS_SEG_MAX bytes, not
 * NUL-terminated) and returns its length. */
size_t rlaas_key_segment(char *out, const char *val, size_t len,
                         int credential);

/* Writes the fallback segment for a client address; returns its length. */
size_t rlaas_key_fallback(char *out, const char *ip, size_t len);

/* Where a strategy keeps its state, after the identity: ":tb", ":sw",
 * ":lb", ":gcra"; "" for the sliding log (a ZSET at the identity's key);
 * ":" for fixed, whose script appends the window number it computes from
 * Redis TIME. The scripts derive no other key text. */
#define RLAAS_KEY_SUFFIX_MAX 5 /* ":gcra" */
const char *rlaas_key_suffix(rlaas_strategy_e st);

#endif
