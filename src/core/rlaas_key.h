/*
 * Value segments: turning one client-supplied value (a header, a cookie, a
 * query argument, the user name, the address) into key text. No httpd
 * headers: the unit tests and the fuzzer call these directly. The whole
 * key is assembled from these by rlaas_keybuild.h.
 *
 * V(v), the segment of a value:
 *   raw      the value itself, when it is 1..64 bytes of [A-Za-z0-9.-_@],
 *            not a credential, not suffix-like and, unless it is the
 *            client address, not address-like;
 *   hashed   '~' and 32 hex digits, for everything else: long values,
 *            other bytes, credentials, suffix-like and address-like
 *            values. The digits are the first 128 bits of SHA-1(value),
 *            or, with a secret (RLaaSKeySecret, rlaas_keyhash.h), of
 *            HMAC-SHA-256(secret, value): either way one value gives one
 *            segment and two values two, but without the secret nobody
 *            can test guesses against a hashed credential offline.
 * suffix-like:  all digits (a fixed window's number), or exactly "tb",
 *               "sw", "lb", "gcra" (the other strategies' suffixes),
 *               "ban" (a ban's record, RLAAS_BAN) or "conc" (a
 *               concurrency limit's slots, RLAAS_CONCURRENCY), so
 *               that no identity ends in another strategy's key;
 * address-like: what the client address renderer (rlaas_ip.h) can write:
 *               only digits and dots, or lowercase hex groups joined by
 *               '-' with '_' and a prefix length; so no user name or other
 *               value is ever the text of a client address.
 * The client address itself is raw when it is address-like (and not
 * suffix-like); anything else is "no address" and written as the hash of
 * "-" (no other value hashes to that: a value "-" is raw).
 *
 * fallback: "ip~" and V(client address), for a source that had no value.
 * No raw segment contains '~' and every hashed one starts with it, so no
 * client can forge a fallback or a hash. No segment contains ':', '=',
 * '{', '}', spaces or control bytes.
 */
#ifndef RLAAS_KEY_H
#define RLAAS_KEY_H

#include <stddef.h>

#include "rlaas_keyhash.h"
#include "rlaas_parse.h"

#define RLAAS_SEG_RAW_MAX  64
#define RLAAS_SEG_HASH_LEN 33                      /* '~' + 32 hex digits */
#define RLAAS_SEG_MAX      (RLAAS_SEG_RAW_MAX + 3) /* a fallback */

/* What a value is, for V(v). */
typedef enum {
    RLAAS_VAL_PLAIN = 0, /* user, header, query, env, expr values */
    RLAAS_VAL_SECRET,    /* credentials: always hashed */
    RLAAS_VAL_ADDRESS    /* the client address (the ip source) */
} rlaas_val_kind_e;

/* 1 if the bytes are all in the safe set and the length is 1..64. */
int rlaas_key_is_safe(const char *val, size_t len);
int rlaas_key_suffix_like(const char *val, size_t len);
int rlaas_key_address_like(const char *val, size_t len);

/* Writes V(val) into out (room for RLAAS_SEG_MAX bytes, not
 * NUL-terminated) and returns its length. A hashed segment is keyed with
 * secret unless it is NULL; 0 if the keyed hash failed (OpenSSL). */
size_t rlaas_key_value_keyed(char *out, const char *val, size_t len,
                             rlaas_val_kind_e kind,
                             const rlaas_key_secret_t *secret);

/* The same without a secret (never fails). */
size_t rlaas_key_value(char *out, const char *val, size_t len,
                       rlaas_val_kind_e kind);

/* Writes the fallback segment for a client address; returns its length
 * (0 as rlaas_key_value_keyed). */
size_t rlaas_key_fallback_keyed(char *out, const char *ip, size_t len,
                                const rlaas_key_secret_t *secret);
size_t rlaas_key_fallback(char *out, const char *ip, size_t len);

/* A virtual host's namespace, from its ServerName: the name in lower
 * case when it is 1 to 64 letters, digits, '.', '-' or '_', else '~' and
 * 16 hex digits of the SHA-1 of that lower-case text. Never holds '@',
 * ':' or '='. Writes at most RLAAS_HOST_NS_MAX bytes (not NUL-terminated)
 * and returns their number. The host's own policies count in it. */
#define RLAAS_HOST_NS_MAX 64
#define RLAAS_NS_HASH_HEX 16
size_t rlaas_key_namespace(char *out, const char *host, size_t len);

/* A tenant's namespace (whoever writes a .htaccess): its host's namespace
 * H, then "~t" for the tenant that is the whole virtual host (root NULL),
 * or '~' and 16 hex digits of the SHA-1 of the tenant's root directory
 * (RLaaSTenantRoot). No host's namespace holds a '~' after its first byte
 * or is longer than '~' and 16 hex digits, so no tenant's namespace is a
 * host's: a tenant's zone never meets a policy of its host, whatever its
 * name. Writes at most RLAAS_NS_MAX bytes and returns their number. */
#define RLAAS_NS_MAX (RLAAS_HOST_NS_MAX + 1 + RLAAS_NS_HASH_HEX)
size_t rlaas_key_tenant_namespace(char *out, const char *host, size_t len,
                                  const char *root, size_t root_len);

/* 1 if the text is one rlaas_key_namespace or rlaas_key_tenant_namespace
 * can write. */
int rlaas_key_namespace_ok(const char *ns, size_t len);

/* Writes the first n (<= 40) lowercase hex digits of SHA-1(val). */
void rlaas_key_sha1_hex(char *out, size_t n, const char *val, size_t len);

/* The digits of a hashed segment: rlaas_key_sha1_hex without a secret,
 * rlaas_key_hmac_hex with one. Returns 0 if the keyed hash failed. */
int rlaas_key_hash_hex(char *out, size_t n, const char *val, size_t len,
                       const rlaas_key_secret_t *secret);

/* Where a strategy keeps its state, after the identity: ":tb", ":sw",
 * ":lb", ":gcra"; "" for the sliding log (a ZSET at the identity's key);
 * ":" for fixed, whose script appends the window number it computes from
 * Redis TIME. The scripts derive no other key text. */
#define RLAAS_KEY_SUFFIX_MAX 5 /* ":gcra" */
const char *rlaas_key_suffix(rlaas_strategy_e st);

/* The identity's ban record (RLAAS_BAN) and a concurrency limit's slots
 * (RLAAS_CONCURRENCY) take a strategy's place: ":ban" and ":conc",
 * suffix-like as the strategies' suffixes are. */

#endif
