/*
 * The whole Redis key one request's script writes, built in one place.
 * No httpd headers: unit-tested (with a property test of injectivity) and
 * fuzzed on its own. The script gets it in KEYS[1] and derives nothing from
 * it but fixed's window number.
 *
 *   key = P [Z ":"] I [":" S]      Z = zone | zone "@" N | "@" N
 *
 * P  RLaaSKeyPrefix, Z  RLaaSZone (a policy's name), with a namespace N
 * where one applies (rlaas_key.h): a virtual host's, from its ServerName,
 * for the policies it declares when it has no RLaaSKeyPrefix of its own;
 * a tenant's (the host's, then "~t" or "~" and a hash of the tenant's
 * root directory) for a section's own limit that a .htaccess set a
 * counting setting of, whatever the prefix. I  the identity, S  the
 * strategy's state
 * suffix: "tb" (token), "sw" (sliding), "lb" (leaky), "gcra", "ban" (a ban's
 * record, RLAAS_BAN, in place of a strategy), "conc" (a concurrency
 * limit's slots, RLAAS_CONCURRENCY, likewise); none for the
 * sliding log (a ZSET at the key itself). For fixed the key ends in ":" and
 * the script appends the window number it computes from Redis TIME, or,
 * with a calendar window, the period's name "<tag>+<start ms>" (rlaas_cal.h:
 * '+' is in no segment, zone, namespace or suffix); that is the one thing a
 * script appends, and no client chooses it.
 *
 * I, with V(v) and the fallback as in rlaas_key.h:
 *   default forms, exactly one source and it is ip or user (the seeds'
 *   layout): I = V(value), or the fallback "ip~" V(address) when a user
 *   source has no value: rlaas:rate_limit:alice,
 *   rlaas:rate_limit:203.0.113.9:<window> for fixed;
 *   every other form: I = seg ":" seg ..., one seg per source in order,
 *   seg = TAG "=" V(value), or TAG "=ip~" V(address) when it has no value.
 *   TAG: ip, user, key (api_key), h.<header name in lower case>,
 *   c.<cookie>, q.<query argument>, e.<environment variable>,
 *   x.<first 8 hex digits of SHA-1 of the expression's text>.
 *
 * Why this is injective for one prefix (t/unit/test_keybuild.c checks it on
 * generated tuples, fuzz/fuzz_key.c on random ones): split the text after P
 * at ':'. Zones, namespaces and names never hold ':' or '='; values never
 * hold ':',
 * '=' or (unless hashed or a fallback) '~'. A tagged segment is the only
 * part with '=', and its tag ends at the first '='. So: with a '=', the
 * parts before the first tagged segment are the zone (zero or one), the
 * part after the last one is the suffix (zero or one). Without, the form
 * is a default one: [Z] I [S], where the part after I is a suffix exactly
 * when it is suffix-like, since I never is. The strategy follows from the
 * suffix (none: sliding log; digits: fixed), the source and its value
 * from the tag and V (raw, '~' hashed, "ip~" missing; a hashed V names
 * one value as long as nobody finds two values with the same 128 bits of
 * SHA-1, or of HMAC-SHA-256 under the secret); in the default
 * forms an ip value is address-like and a user value never is. The zone
 * part, once found, splits at its one '@' (zone names never hold '@',
 * namespaces neither) into the zone and the namespace: a tenant's zone is
 * never a zone of the server configuration, nor a policy of its host
 * (a tenant's namespace is never a host's), nor another tenant's. Keys of
 * different prefixes are kept apart by the operator (README).
 */
#ifndef RLAAS_KEYBUILD_H
#define RLAAS_KEYBUILD_H

#include <stddef.h>

#include "rlaas_key.h"
#include "rlaas_parse.h"

/* One source of the identity, with its value for this request. */
typedef struct {
    rlaas_source_type_e type;
    const char *name; /* header/cookie/query/env name; expr text */
    size_t name_len;
    int credential;    /* always hashed */
    const char *value; /* NULL or empty: no value (ignored for ip) */
    size_t value_len;
} rlaas_key_part_t;

typedef struct {
    const char *prefix; /* 0..RLAAS_PREFIX_MAX bytes */
    size_t prefix_len;
    const char *zone; /* NULL: no zone; else a name (rlaas_parse_name) */
    size_t zone_len;
    const char *ip; /* the client address as rendered (rlaas_ip.h); NULL
                       or empty: "-" */
    size_t ip_len;
    rlaas_strategy_e strategy;
    const rlaas_key_part_t *parts; /* 1..RLAAS_SOURCES_MAX */
    int nparts;
    /* Redis Cluster: the identity is written as a hash tag, "{" I "}", so
     * that every key of one identity is on one node. Braces appear in no
     * zone, namespace, tag or value: the grammar stays the same, wrapped. */
    int hashtag;
    const char *ns; /* NULL: none; else rlaas_key_namespace's text */
    size_t ns_len;
    /* RLaaSKeySecret: hashed value segments are keyed with it; NULL:
     * SHA-1 as before. The grammar and the proof above do not change: a
     * hashed segment is '~' and 32 hex digits either way. */
    const rlaas_key_secret_t *secret;
    /* ip is rlaas_ip_render's output, which is raw as it stands (an
     * address, never suffix-like): not checked again; 0: checked, as an
     * address given any other way is */
    int ip_rendered;
} rlaas_key_spec_t;

/* Longest tagged segment: "h." + name, '=', then a fallback. */
#define RLAAS_TAG_MAX  (2 + RLAAS_NAME_MAX)
#define RLAAS_TSEG_MAX (RLAAS_TAG_MAX + 1 + RLAAS_SEG_MAX)

/* Longest key: prefix, zone, '@' and namespace and ':', eight tagged
 * segments joined by ':', a strategy's suffix. */
#define RLAAS_KEY_MAX                                                          \
    (RLAAS_PREFIX_MAX + RLAAS_NAME_MAX + 1 + RLAAS_NS_MAX + 1 +                \
     RLAAS_SOURCES_MAX * (RLAAS_TSEG_MAX + 1) - 1 + RLAAS_KEY_SUFFIX_MAX +     \
     RLAAS_KEY_CLUSTER_MAX)

/* Room for what cluster mode adds: the braces of the hash tag, and the
 * window number the module declares for fixed (rlaas_identity.c). */
#define RLAAS_KEY_CLUSTER_MAX (2 + 20)

/* Writes the key into out (room for RLAAS_KEY_MAX + 1 bytes; NUL-terminated)
 * and returns its length; 0 if the spec is out of bounds (a zone or name
 * that is not a name, a namespace that rlaas_key_namespace would not
 * write, too many parts, an unknown strategy) or the keyed hash failed. */
size_t rlaas_key_build(char *out, const rlaas_key_spec_t *k);

/* The length of the part of that key naming its zone, P [Z ":"]: what
 * every identity of one zone (and one tenant) shares, and the local
 * engine keeps zones apart by. Only the prefix, zone and namespace of k
 * are read. */
size_t rlaas_key_zone_len(const rlaas_key_spec_t *k);

/* The identity part of a key: past the prefix (prefix_len bytes) and the
 * zone (when has_zone), before the strategy's suffix. */
size_t rlaas_key_ident(const char *key, size_t len, size_t prefix_len,
                       int has_zone, rlaas_strategy_e st, const char **out);

#endif
