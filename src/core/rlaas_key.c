#include "rlaas_key.h"

#include <string.h>

#include "apr_sha1.h"

/* Letters, digits and ".-_@": enough for user names, e-mail addresses,
 * IPv4 addresses and typical API client ids. */
static int safe_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
           c == '@';
}

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

static int hex_lower(char c)
{
    return digit(c) || (c >= 'a' && c <= 'f');
}

int rlaas_key_is_safe(const char *val, size_t len)
{
    size_t i;

    if (len == 0 || len > RLAAS_SEG_RAW_MAX)
        return 0;
    for (i = 0; i < len; i++) {
        if (!safe_byte((unsigned char)val[i]))
            return 0;
    }
    return 1;
}

static int is(const char *val, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(val, word, len) == 0;
}

int rlaas_key_suffix_like(const char *val, size_t len)
{
    size_t i;

    if (len <= 4 &&
        (is(val, len, "tb") || is(val, len, "sw") || is(val, len, "lb") ||
         is(val, len, "gcra") || is(val, len, "ban") || is(val, len, "conc")))
        return 1;
    for (i = 0; i < len; i++) {
        if (!digit(val[i]))
            return 0;
    }
    return len > 0;
}

/* ^[0-9a-f]{1,4}(-[0-9a-f]{1,4}){0,7}_[0-9]{1,3}$: a grouped IPv6
 * network as rlaas_ip_render writes it. */
static int ipv6_rendering(const char *val, size_t len)
{
    size_t i = 0, run = 0, groups = 1, bits = 0;

    for (; i < len && val[i] != '_'; i++) {
        if (val[i] == '-') {
            if (run == 0 || ++groups > 8)
                return 0;
            run = 0;
        }
        else if (!hex_lower(val[i]) || ++run > 4)
            return 0;
    }
    if (run == 0 || i == len)
        return 0;
    for (i++; i < len; i++, bits++) {
        if (!digit(val[i]) || bits == 3)
            return 0;
    }
    return bits > 0;
}

int rlaas_key_address_like(const char *val, size_t len)
{
    size_t i;

    for (i = 0; i < len && (digit(val[i]) || val[i] == '.'); i++)
        ;
    return (len > 0 && i == len) || ipv6_rendering(val, len);
}

void rlaas_key_sha1_hex(char *out, size_t n, const char *val, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    size_t i;

    apr_sha1_init(&ctx);
    /* apr_sha1_update takes an unsigned int length; feed in slices so
     * that no value, however long, is silently truncated. */
    while (len > 0) {
        unsigned int k = len > 0x10000000u ? 0x10000000u : (unsigned int)len;
        apr_sha1_update_binary(&ctx, (const unsigned char *)val, k);
        val += k;
        len -= k;
    }
    apr_sha1_final(digest, &ctx);
    for (i = 0; i < n && i < 2 * APR_SHA1_DIGESTSIZE; i++)
        out[i] = hex[i % 2 ? digest[i / 2] & 0xf : digest[i / 2] >> 4];
}

/* Raw is the exception: only values that can be nothing but themselves. */
static int raw_ok(const char *val, size_t len, rlaas_val_kind_e kind)
{
    /* an address's bytes are safe ones: its shape is the whole test */
    if (kind == RLAAS_VAL_ADDRESS)
        return len > 0 && len <= RLAAS_SEG_RAW_MAX &&
               rlaas_key_address_like(val, len) &&
               !rlaas_key_suffix_like(val, len);
    if (kind == RLAAS_VAL_SECRET || !rlaas_key_is_safe(val, len) ||
        rlaas_key_suffix_like(val, len))
        return 0;
    return !rlaas_key_address_like(val, len);
}

int rlaas_key_hash_hex(char *out, size_t n, const char *val, size_t len,
                       const rlaas_key_secret_t *secret)
{
    if (secret != NULL)
        return rlaas_key_hmac_hex(secret, out, n, val, len);
    rlaas_key_sha1_hex(out, n, val, len);
    return 1;
}

size_t rlaas_key_value_keyed(char *out, const char *val, size_t len,
                             rlaas_val_kind_e kind,
                             const rlaas_key_secret_t *secret)
{
    if (raw_ok(val, len, kind)) {
        memcpy(out, val, len);
        return len;
    }
    /* An address that is none is "no address": one text, so that no
     * other value's hash can meet it (a value "-" is raw). */
    if (kind == RLAAS_VAL_ADDRESS) {
        val = "-";
        len = 1;
    }
    out[0] = '~';
    if (!rlaas_key_hash_hex(out + 1, RLAAS_SEG_HASH_LEN - 1, val, len, secret))
        return 0;
    return RLAAS_SEG_HASH_LEN;
}

size_t rlaas_key_value(char *out, const char *val, size_t len,
                       rlaas_val_kind_e kind)
{
    return rlaas_key_value_keyed(out, val, len, kind, NULL);
}

const char *rlaas_key_suffix(rlaas_strategy_e st)
{
    static const char *const suffix[RLAAS_STRATEGY_COUNT] = {
        ":", "", ":sw", ":tb", ":lb", ":gcra"};

    if (st == RLAAS_BAN)
        return ":ban";
    if (st == RLAAS_CONCURRENCY)
        return ":conc";
    return st >= 0 && st < RLAAS_STRATEGY_COUNT ? suffix[st] : "";
}

size_t rlaas_key_fallback_keyed(char *out, const char *ip, size_t len,
                                const rlaas_key_secret_t *secret)
{
    size_t n;

    memcpy(out, "ip~", 3);
    n = rlaas_key_value_keyed(out + 3, ip, len, RLAAS_VAL_ADDRESS, secret);
    return n > 0 ? 3 + n : 0;
}

size_t rlaas_key_fallback(char *out, const char *ip, size_t len)
{
    return rlaas_key_fallback_keyed(out, ip, len, NULL);
}

static int ns_byte(char c)
{
    return (c >= 'a' && c <= 'z') || digit(c) || c == '.' || c == '-' ||
           c == '_';
}

size_t rlaas_key_namespace(char *out, const char *host, size_t len)
{
    char low[256];
    size_t i;
    int plain = len > 0 && len <= RLAAS_HOST_NS_MAX;

    if (len > sizeof(low)) {
        out[0] = '~';
        rlaas_key_sha1_hex(out + 1, RLAAS_NS_HASH_HEX, host, len);
        return 1 + RLAAS_NS_HASH_HEX;
    }
    for (i = 0; i < len; i++) {
        char c = host[i];
        low[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
        plain = plain && ns_byte(low[i]);
    }
    if (plain) {
        memcpy(out, low, len);
        return len;
    }
    out[0] = '~';
    rlaas_key_sha1_hex(out + 1, RLAAS_NS_HASH_HEX, low, len);
    return 1 + RLAAS_NS_HASH_HEX;
}

size_t rlaas_key_tenant_namespace(char *out, const char *host, size_t len,
                                  const char *root, size_t root_len)
{
    size_t n = rlaas_key_namespace(out, host, len);

    out[n++] = '~';
    if (root == NULL) {
        out[n++] = 't';
        return n;
    }
    rlaas_key_sha1_hex(out + n, RLAAS_NS_HASH_HEX, root, root_len);
    return n + RLAAS_NS_HASH_HEX;
}

/* '~' and 16 lower-case hex digits. */
static int hashed(const char *s, size_t len)
{
    size_t i;

    if (len != 1 + RLAAS_NS_HASH_HEX || s[0] != '~')
        return 0;
    for (i = 1; i < len; i++) {
        if (!hex_lower(s[i]))
            return 0;
    }
    return 1;
}

/* The host's part of a namespace: its length, or 0 if there is none. */
static size_t host_part(const char *ns, size_t len)
{
    size_t i;

    if (len > 0 && ns[0] == '~')
        return len >= 1 + RLAAS_NS_HASH_HEX && hashed(ns, 1 + RLAAS_NS_HASH_HEX)
                   ? 1 + RLAAS_NS_HASH_HEX
                   : 0;
    for (i = 0; i < len && ns[i] != '~'; i++) {
        if (!ns_byte(ns[i]))
            return 0;
    }
    return i <= RLAAS_HOST_NS_MAX ? i : 0;
}

int rlaas_key_namespace_ok(const char *ns, size_t len)
{
    size_t h;

    if (ns == NULL || len == 0 || len > RLAAS_NS_MAX)
        return 0;
    if ((h = host_part(ns, len)) == 0)
        return 0;
    /* a host's, or a tenant's: "~t", or a tenant root's hash */
    return h == len || (len - h == 2 && ns[h] == '~' && ns[h + 1] == 't') ||
           hashed(ns + h, len - h);
}
