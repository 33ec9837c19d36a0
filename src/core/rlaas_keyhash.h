/*
 * The keyed hash of key segments (RLaaSKeySecret): HMAC-SHA-256 with a
 * secret every server sharing a Redis shares, truncated to as many hex
 * digits as the unkeyed SHA-1 segments have (rlaas_key.h). Without the
 * secret, a hashed credential in a Redis key, a log line or the console
 * can be tested offline against guesses; with it, it cannot.
 *
 * Why HMAC-SHA-256 and not the SipHash the local engine has
 * (rlaas_siphash.h): a segment must stay collision-resistant even for
 * whoever holds the secret, since the key builder's injectivity rests on
 * it (rlaas_keybuild.h); SipHash gives 64 bits and is a PRF, not a
 * collision-resistant hash. HMAC-SHA-256 cut to 128 bits is both a PRF
 * under the secret and as collision-resistant as 128 bits allow.
 *
 * The secret's pads are digested once, when it is made: a hash costs two
 * SHA-256 compressions of the value, no key schedule. A made secret is
 * read-only and may be shared by threads and (after fork) processes. No
 * httpd headers.
 */
#ifndef RLAAS_KEYHASH_H
#define RLAAS_KEYHASH_H

#include <stddef.h>

/* What RLaaSKeySecret accepts: at least 128 bits, at most a small file. */
#define RLAAS_KEY_SECRET_MIN 16
#define RLAAS_KEY_SECRET_MAX 4096

typedef struct rlaas_key_secret_t rlaas_key_secret_t;

/* The secret made from len bytes (RLAAS_KEY_SECRET_MIN to _MAX), or NULL
 * when len is out of bounds or OpenSSL fails. The bytes are not kept. */
rlaas_key_secret_t *rlaas_key_secret_make(const void *bytes, size_t len);

void rlaas_key_secret_free(rlaas_key_secret_t *s);

/* Writes the first n (<= 64) lowercase hex digits of
 * HMAC-SHA-256(secret, val) into out (not NUL-terminated). Returns 1, or 0
 * if OpenSSL failed (then out holds nothing of the value). */
int rlaas_key_hmac_hex(const rlaas_key_secret_t *s, char *out, size_t n,
                       const void *val, size_t len);

#endif
