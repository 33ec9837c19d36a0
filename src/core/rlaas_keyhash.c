#include "rlaas_keyhash.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define BLOCK  64 /* SHA-256's block */
#define DIGEST 32

struct rlaas_key_secret_t {
    EVP_MD *md;
    /* SHA-256 after (K ^ ipad) and after (K ^ opad): RFC 2104's two
     * passes, started once */
    EVP_MD_CTX *inner, *outer;
};

void rlaas_key_secret_free(rlaas_key_secret_t *s)
{
    if (s == NULL)
        return;
    EVP_MD_CTX_free(s->inner);
    EVP_MD_CTX_free(s->outer);
    EVP_MD_free(s->md);
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
}

/* A digest context that has absorbed the key xor'ed with pad. */
static EVP_MD_CTX *padded(const EVP_MD *md, const unsigned char *k,
                          unsigned char pad)
{
    unsigned char block[BLOCK];
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int i, ok;

    for (i = 0; i < BLOCK; i++)
        block[i] = (unsigned char)(k[i] ^ pad);
    ok = c != NULL && EVP_DigestInit_ex(c, md, NULL) &&
         EVP_DigestUpdate(c, block, BLOCK);
    OPENSSL_cleanse(block, sizeof(block));
    if (!ok) {
        EVP_MD_CTX_free(c);
        return NULL;
    }
    return c;
}

/* K, the key as one block: the bytes, zero-padded, or their digest when
 * they are longer than a block (RFC 2104). */
static int key_block(const EVP_MD *md, const void *bytes, size_t len,
                     unsigned char k[BLOCK])
{
    unsigned int kl;

    memset(k, 0, BLOCK);
    if (len <= BLOCK) {
        memcpy(k, bytes, len);
        return 1;
    }
    return EVP_Digest(bytes, len, k, &kl, md, NULL);
}

rlaas_key_secret_t *rlaas_key_secret_make(const void *bytes, size_t len)
{
    unsigned char k[BLOCK];
    rlaas_key_secret_t *s;

    if (bytes == NULL || len < RLAAS_KEY_SECRET_MIN ||
        len > RLAAS_KEY_SECRET_MAX || (s = calloc(1, sizeof(*s))) == NULL)
        return NULL;
    s->md = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (s->md != NULL && key_block(s->md, bytes, len, k)) {
        s->inner = padded(s->md, k, 0x36);
        s->outer = padded(s->md, k, 0x5c);
    }
    OPENSSL_cleanse(k, sizeof(k));
    if (s->inner == NULL || s->outer == NULL) {
        rlaas_key_secret_free(s);
        return NULL;
    }
    return s;
}

/* One pass: the started context, then data. */
static int pass(EVP_MD_CTX *c, const EVP_MD_CTX *start, const void *data,
                size_t len, unsigned char *out)
{
    unsigned int ol;

    return EVP_MD_CTX_copy_ex(c, start) && EVP_DigestUpdate(c, data, len) &&
           EVP_DigestFinal_ex(c, out, &ol) && ol == DIGEST;
}

int rlaas_key_hmac_hex(const rlaas_key_secret_t *s, char *out, size_t n,
                       const void *val, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char ih[DIGEST], mac[DIGEST];
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    size_t i;
    int ok;

    /* EVP_DigestUpdate with no bytes is fine, with a NULL pointer too */
    ok = c != NULL && pass(c, s->inner, val, len, ih) &&
         pass(c, s->outer, ih, DIGEST, mac);
    EVP_MD_CTX_free(c);
    if (ok) {
        for (i = 0; i < n && i < 2 * DIGEST; i++)
            out[i] = hex[i % 2 ? mac[i / 2] & 0xf : mac[i / 2] >> 4];
    }
    OPENSSL_cleanse(ih, sizeof(ih));
    OPENSSL_cleanse(mac, sizeof(mac));
    return ok;
}
