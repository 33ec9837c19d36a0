/* The keyed hash of key segments (RLaaSKeySecret): HMAC-SHA-256 against
 * RFC 4231's vectors and OpenSSL's own HMAC, the secret's bounds, and what
 * it does to a segment: a hashed value changes with the secret, a raw one
 * never does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "rlaas_key.h"
#include "rlaas_keyhash.h"

static void hex_of(char *out, const unsigned char *d, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 0xf];
    }
    out[2 * n] = '\0';
}

/* RFC 4231, test cases 1 (a 20-byte key, padded to a block) and 6 (a key
 * longer than a block, hashed first). */
static void rfc4231_vectors(void **state)
{
    unsigned char k1[20], k6[131];
    char out[65];
    rlaas_key_secret_t *s;

    (void)state;
    memset(k1, 0x0b, sizeof(k1));
    s = rlaas_key_secret_make(k1, sizeof(k1));
    assert_non_null(s);
    memset(out, 0, sizeof(out));
    assert_true(rlaas_key_hmac_hex(s, out, 64, "Hi There", 8));
    assert_string_equal(out, "b0344c61d8db38535ca8afceaf0bf12b"
                             "881dc200c9833da726e9376c2e32cff7");
    rlaas_key_secret_free(s);

    memset(k6, 0xaa, sizeof(k6));
    s = rlaas_key_secret_make(k6, sizeof(k6));
    assert_non_null(s);
    memset(out, 0, sizeof(out));
    assert_true(rlaas_key_hmac_hex(
        s, out, 64, "Test Using Larger Than Block-Size Key - Hash Key First",
        54));
    assert_string_equal(out, "60e431591ee0b67f0d8a26aacbf5b77f"
                             "8e0bc6213728c5140546040f0ee37f54");
    /* truncated: the first n digits, nothing written past them */
    memset(out, 'X', sizeof(out));
    assert_true(rlaas_key_hmac_hex(
        s, out, 32, "Test Using Larger Than Block-Size Key - Hash Key First",
        54));
    assert_memory_equal(out, "60e431591ee0b67f0d8a26aacbf5b77fX", 33);
    rlaas_key_secret_free(s);
}

/* Against OpenSSL's one-shot HMAC for keys around the block size and
 * messages of every length up to a few blocks, the empty one included. */
static void same_as_openssl(void **state)
{
    static const size_t klens[] = {16, 32, 63, 64, 65, 200, 4096};
    static unsigned char key[4096], msg[300];
    unsigned char mac[32];
    unsigned int ml;
    char want[65], got[65];
    size_t i, k, m;

    (void)state;
    for (i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)(i * 7 + 3);
    for (i = 0; i < sizeof(msg); i++)
        msg[i] = (unsigned char)(i * 13 + 1);
    for (k = 0; k < sizeof(klens) / sizeof(klens[0]); k++) {
        rlaas_key_secret_t *s = rlaas_key_secret_make(key, klens[k]);

        assert_non_null(s);
        for (m = 0; m <= sizeof(msg); m += 1 + m / 16) {
            HMAC(EVP_sha256(), key, (int)klens[k], msg, m, mac, &ml);
            hex_of(want, mac, 32);
            memset(got, 0, sizeof(got));
            assert_true(rlaas_key_hmac_hex(s, got, 64, msg, m));
            assert_string_equal(got, want);
        }
        rlaas_key_secret_free(s);
    }
}

static void secret_bounds(void **state)
{
    static unsigned char big[RLAAS_KEY_SECRET_MAX + 1];
    rlaas_key_secret_t *s;

    (void)state;
    assert_null(rlaas_key_secret_make(big, 0));
    assert_null(rlaas_key_secret_make(big, RLAAS_KEY_SECRET_MIN - 1));
    assert_null(rlaas_key_secret_make(NULL, 32));
    assert_null(rlaas_key_secret_make(big, RLAAS_KEY_SECRET_MAX + 1));
    s = rlaas_key_secret_make(big, RLAAS_KEY_SECRET_MIN);
    assert_non_null(s);
    rlaas_key_secret_free(s);
    s = rlaas_key_secret_make(big, RLAAS_KEY_SECRET_MAX);
    assert_non_null(s);
    rlaas_key_secret_free(s);
    rlaas_key_secret_free(NULL);
}

/* A segment under a secret: the same shape, another hash; raw values
 * and the layout unchanged; two secrets, two hashes. */
static void keyed_segments(void **state)
{
    const char *s1 = "0123456789abcdef0123456789abcdef";
    const char *s2 = "0123456789abcdef0123456789abcdeF";
    rlaas_key_secret_t *a = rlaas_key_secret_make(s1, 32);
    rlaas_key_secret_t *b = rlaas_key_secret_make(s2, 32);
    char plain[RLAAS_SEG_MAX + 1], ka[RLAAS_SEG_MAX + 1],
        ka2[RLAAS_SEG_MAX + 1], kb[RLAAS_SEG_MAX + 1], want[RLAAS_SEG_MAX + 1];
    size_t n;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    /* an API key: always hashed */
    n = rlaas_key_value(plain, "k-123", 5, RLAAS_VAL_SECRET);
    assert_int_equal(n, RLAAS_SEG_HASH_LEN);
    assert_int_equal(rlaas_key_value_keyed(ka, "k-123", 5, RLAAS_VAL_SECRET, a),
                     RLAAS_SEG_HASH_LEN);
    assert_int_equal(
        rlaas_key_value_keyed(ka2, "k-123", 5, RLAAS_VAL_SECRET, a),
        RLAAS_SEG_HASH_LEN);
    assert_int_equal(rlaas_key_value_keyed(kb, "k-123", 5, RLAAS_VAL_SECRET, b),
                     RLAAS_SEG_HASH_LEN);
    assert_int_equal(ka[0], '~');
    assert_memory_not_equal(plain, ka, RLAAS_SEG_HASH_LEN);
    assert_memory_equal(ka, ka2, RLAAS_SEG_HASH_LEN);
    assert_memory_not_equal(ka, kb, RLAAS_SEG_HASH_LEN);
    want[0] = '~';
    assert_true(rlaas_key_hmac_hex(a, want + 1, 32, "k-123", 5));
    assert_memory_equal(ka, want, RLAAS_SEG_HASH_LEN);
    /* NULL is the unkeyed hash */
    assert_int_equal(
        rlaas_key_value_keyed(ka, "k-123", 5, RLAAS_VAL_SECRET, NULL),
        RLAAS_SEG_HASH_LEN);
    assert_memory_equal(ka, plain, RLAAS_SEG_HASH_LEN);
    /* a raw value stays itself */
    assert_int_equal(rlaas_key_value_keyed(ka, "alice", 5, RLAAS_VAL_PLAIN, a),
                     5);
    assert_memory_equal(ka, "alice", 5);
    /* a fallback keeps its "ip~"; no address is one text per secret */
    n = rlaas_key_fallback_keyed(ka, "203.0.113.9", 11, a);
    assert_int_equal(n, 14);
    assert_memory_equal(ka, "ip~203.0.113.9", 14);
    n = rlaas_key_fallback_keyed(ka, "", 0, a);
    assert_int_equal(n, 3 + RLAAS_SEG_HASH_LEN);
    assert_int_equal(rlaas_key_fallback_keyed(ka2, "x y", 3, a), n);
    assert_memory_equal(ka, ka2, n);
    rlaas_key_secret_free(a);
    rlaas_key_secret_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc4231_vectors),
        cmocka_unit_test(same_as_openssl),
        cmocka_unit_test(secret_bounds),
        cmocka_unit_test(keyed_segments),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
