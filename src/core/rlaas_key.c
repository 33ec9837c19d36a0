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

static size_t hashed(char *out, const char *val, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char digest[APR_SHA1_DIGESTSIZE];
    apr_sha1_ctx_t ctx;
    size_t i;

    apr_sha1_init(&ctx);
    /* apr_sha1_update takes an unsigned int length; feed in slices so
     * that no value, however long, is silently truncated. */
    while (len > 0) {
        unsigned int n = len > 0x10000000u ? 0x10000000u : (unsigned int)len;
        apr_sha1_update_binary(&ctx, (const unsigned char *)val, n);
        val += n;
        len -= n;
    }
    apr_sha1_final(digest, &ctx);
    out[0] = '~';
    for (i = 0; i < (RLAAS_SEG_HASH_LEN - 1) / 2; i++) {
        out[1 + 2 * i] = hex[digest[i] >> 4];
        out[2 + 2 * i] = hex[digest[i] & 0xf];
    }
    return RLAAS_SEG_HASH_LEN;
}

size_t rlaas_key_segment(char *out, const char *val, size_t len, int credential)
{
    if (!credential && rlaas_key_is_safe(val, len)) {
        memcpy(out, val, len);
        return len;
    }
    return hashed(out, val, len);
}

const char *rlaas_key_suffix(rlaas_strategy_e st)
{
    static const char *const suffix[RLAAS_STRATEGY_COUNT] = {
        ":", "", ":sw", ":tb", ":lb", ":gcra"};

    return st >= 0 && st < RLAAS_STRATEGY_COUNT ? suffix[st] : "";
}

size_t rlaas_key_fallback(char *out, const char *ip, size_t len)
{
    memcpy(out, "ip~", 3);
    return 3 + rlaas_key_segment(out + 3, ip, len, 0);
}
