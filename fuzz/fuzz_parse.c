/*
 * libFuzzer target: the directive value parsers (src/core/rlaas_parse.c and
 * rlaas_parse_headers_mode). Their input is httpd.conf or, for the
 * per-directory directives, a tenant's .htaccess: untrusted text.
 *
 * Input layout: byte 0 picks the parser, the rest is the argument, cut at
 * its first NUL as httpd would hand it over. The argument is copied into a
 * heap block of exactly its size, so ASan sees any read past the
 * terminator. Besides "no crash", each parser is checked against a small
 * independent model of what it accepts, and for determinism; so is the
 * splitting of RLaaSPolicy's line into words (rlaas_parse_word).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rlaas_headers.h"
#include "rlaas_parse.h"
#include "fuzz_check.h"

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

static int alnum(char c)
{
    return digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int name_byte(char c)
{
    return alnum(c) || c == '-' || c == '_' || c == '.';
}

/* Model of a "digits then unit" value: the number (saturating) and the
 * unit text, or -1 when the text does not start with a digit. */
static long double model_number(const char *s, const char **unit)
{
    long double v = 0;
    size_t i = 0;

    if (!digit(s[0]))
        return -1;
    for (; digit(s[i]); i++)
        v = v * 10 + (s[i] - '0');
    *unit = s + i;
    return v;
}

static void check_limit(const char *s)
{
    int64_t v = -7, v2 = -7;
    const char *err = rlaas_parse_limit(s, &v), *unit = NULL;
    long double m = model_number(s, &unit);
    int ok = m >= 1 && m <= RLAAS_LIMIT_MAX && *unit == '\0';

    CHECK((err == NULL) == ok);
    CHECK((rlaas_parse_limit(s, &v2) == NULL) == ok);
    if (ok) {
        CHECK(v == (int64_t)m && v2 == v);
    }
    else {
        CHECK(err != NULL && *err != '\0');
        CHECK(v == -7); /* nothing written on failure */
    }
}

static void check_nonneg(const char *s, int64_t max)
{
    int64_t v = -7;
    const char *err = rlaas_parse_nonneg_int(s, max, &v), *unit = NULL;
    long double m = model_number(s, &unit);
    int ok = m >= 0 && m <= max && *unit == '\0';

    CHECK((err == NULL) == ok);
    if (ok)
        CHECK(v == (int64_t)m);
    else
        CHECK(v == -7);
}

static void check_duration(const char *s, int64_t min, int64_t max)
{
    static const struct {
        const char *unit;
        long double ms;
    } units[] = {{"ms", 1},    {"s", 1000},    {"", 1000},
                 {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    int64_t v = -7;
    const char *err = rlaas_parse_duration_ms(s, min, max, &v), *unit = NULL;
    long double m = model_number(s, &unit), want = -1;
    size_t i;

    if (m >= 0) {
        for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
            if (strcmp(unit, units[i].unit) == 0)
                want = m * units[i].ms;
    }
    if (err == NULL) {
        CHECK(want >= min && want <= max);
        CHECK(v == (int64_t)want);
    }
    else {
        CHECK(v == -7);
        /* refused: out of range, or a number beyond the parser's own cap
         * (the largest count of days that fits in int64 milliseconds) */
        CHECK(want < min || want > max || m > INT64_MAX / 86400000);
    }
}

static void check_strategy(const char *s)
{
    rlaas_strategy_e st = RLAAS_STRATEGY_UNSET, again = RLAAS_STRATEGY_UNSET;
    const char *err = rlaas_parse_strategy(s, &st);

    if (err != NULL) {
        CHECK(st == RLAAS_STRATEGY_UNSET);
        return;
    }
    CHECK(st >= 0 && st < RLAAS_STRATEGY_COUNT);
    /* the canonical name is accepted and names the same strategy */
    CHECK(strcmp(rlaas_strategy_name(st), "unknown") != 0);
    CHECK(rlaas_parse_strategy(rlaas_strategy_name(st), &again) == NULL);
    CHECK(again == st);
    /* every spelling is a short plain word */
    CHECK(strlen(s) <= 32);
    for (; *s; s++)
        CHECK(name_byte(*s));
}

static int model_name(const char *s)
{
    size_t n = strlen(s), i;

    if (n < 1 || n > RLAAS_NAME_MAX)
        return 0;
    for (i = 0; i < n; i++)
        if (!name_byte(s[i]))
            return 0;
    return 1;
}

static void check_name(const char *s)
{
    CHECK((rlaas_parse_name(s) == NULL) == model_name(s));
}

static void check_prefix(const char *s)
{
    size_t n = strlen(s), i;
    int ok = n >= 1 && n <= RLAAS_PREFIX_MAX;

    for (i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c > '~' || c == '{' || c == '}')
            ok = 0;
    }
    CHECK((rlaas_parse_prefix(s) == NULL) == ok);
}

static void check_source(const char *s)
{
    rlaas_source_t src, again;
    const char *err = rlaas_parse_source(s, &src);
    size_t len = strlen(s);

    CHECK((rlaas_parse_source(s, &again) == NULL) == (err == NULL));
    if (err != NULL)
        return;
    CHECK(memcmp(&src, &again, sizeof(src)) == 0);
    CHECK(src.type >= RLAAS_SRC_IP && src.type <= RLAAS_SRC_EXPR);
    switch (src.type) {
    case RLAAS_SRC_IP:
    case RLAAS_SRC_USER:
    case RLAAS_SRC_API_KEY:
        CHECK(src.name == NULL && src.name_len == 0);
        /* keywords, case-insensitive as httpd's own */
        CHECK(strcasecmp(s, "ip") == 0 || strcasecmp(s, "user") == 0 ||
              strcasecmp(s, "api_key") == 0);
        CHECK(src.credential == (src.type == RLAAS_SRC_API_KEY));
        break;
    case RLAAS_SRC_EXPR:
        CHECK(strncasecmp(s, "expr=", 5) == 0);
        CHECK(src.name == s + 5 && src.name_len == len - 5 && len > 5);
        break;
    default:
        /* header:NAME, cookie:NAME, query:NAME, env:NAME */
        CHECK(src.name != NULL && src.name > s && src.name < s + len);
        CHECK(src.name[-1] == ':');
        CHECK(src.name_len == strlen(src.name));
        CHECK(model_name(src.name));
        if (src.type == RLAAS_SRC_COOKIE)
            CHECK(src.credential);
        if (src.type == RLAAS_SRC_QUERY || src.type == RLAAS_SRC_ENV)
            CHECK(!src.credential);
        break;
    }
}

static void check_redis_addr(const char *s)
{
    size_t len = strlen(s), hl, i;
    /* exactly the room the contract promises: strlen(s) + 1 */
    char *host = malloc(len + 1);
    int port = -7, is_unix = -7;
    const char *err;

    CHECK(host != NULL);
    err = rlaas_parse_redis_addr(s, host, &port, &is_unix);
    if (err == NULL) {
        hl = strlen(host); /* NUL-terminated within the block (ASan) */
        CHECK(hl >= 1 && hl <= len);
        if (is_unix) {
            CHECK(is_unix == 1 && port == 0);
            CHECK(strncasecmp(s, "unix:", 5) == 0 && strcmp(host, s + 5) == 0);
            CHECK(host[0] == '/');
        }
        else {
            CHECK(is_unix == 0);
            CHECK(port >= 1 && port <= 65535);
            for (i = 0; i < hl; i++) {
                if (s[0] == '[')
                    CHECK(isxdigit((unsigned char)host[i]) || host[i] == ':' ||
                          host[i] == '.');
                else
                    CHECK(name_byte(host[i]));
            }
        }
    }
    free(host);
}

static void check_headers_mode(const char *s)
{
    rlaas_headers_e m = RLAAS_HEADERS_UNSET;
    const char *err = rlaas_parse_headers_mode(s, &m);
    /* keywords are case-insensitive, as httpd's own */
    int known = strcasecmp(s, "draft") == 0 || strcasecmp(s, "legacy") == 0 ||
                strcasecmp(s, "both") == 0 || strcasecmp(s, "off") == 0;

    CHECK((err == NULL) == known);
    if (known)
        CHECK(m >= RLAAS_HEADERS_OFF && m <= RLAAS_HEADERS_BOTH);
    else
        CHECK(m == RLAAS_HEADERS_UNSET);
}

/* Model of rlaas_parse_word: the words of s as one string, each followed
 * by '\n' (a word never holds '\n' when s has none), or NULL when a quote
 * is left open. */
static char *model_words(const char *s)
{
    size_t n = strlen(s), i = 0, o = 0;
    char *out = malloc(2 * n + 2);

    CHECK(out != NULL);
    while (i < n) {
        int in_word = 0;
        char q = 0;

        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        for (; i < n; i++) {
            if (q) {
                if (s[i] == q)
                    q = 0;
                else
                    out[o++] = s[i];
            }
            else if (s[i] == '"' || s[i] == '\'')
                q = s[i];
            else if (s[i] == ' ' || s[i] == '\t')
                break;
            else
                out[o++] = s[i];
            in_word = 1;
        }
        if (q) {
            free(out);
            return NULL;
        }
        if (in_word)
            out[o++] = '\n';
    }
    out[o] = '\0';
    return out;
}

/* RLaaSPolicy's line: words in exact-size buffers, as the model says. */
static void check_words(const char *s)
{
    char *want = strchr(s, '\n') ? NULL : model_words(s), *got;
    const char *p = s;
    size_t o = 0;
    int rc;

    if (strchr(s, '\n') != NULL)
        return;
    got = malloc(2 * strlen(s) + 2);
    CHECK(got != NULL);
    for (;;) {
        size_t room = strlen(p) + 1;
        char *w = malloc(room);
        const char *before = p;

        CHECK(w != NULL);
        rc = rlaas_parse_word(&p, w);
        CHECK(p >= before && p <= s + strlen(s));
        if (rc == 1) {
            CHECK(strlen(w) < room);
            memcpy(got + o, w, strlen(w));
            o += strlen(w);
            got[o++] = '\n';
        }
        free(w);
        if (rc != 1)
            break;
    }
    got[o] = '\0';
    if (want == NULL)
        CHECK(rc == -1);
    else
        CHECK(rc == 0 && strcmp(got, want) == 0);
    free(got);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n;
    char *s;

    if (size < 1)
        return 0;
    n = strnlen((const char *)data + 1, size - 1);
    s = malloc(n + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data + 1, n);
    s[n] = '\0';
    switch (data[0] % 13) {
    case 0:
        check_limit(s);
        break;
    case 1: /* RLaaSWindow */
        check_duration(s, 1, RLAAS_WINDOW_MAX_MS);
        break;
    case 2: /* RLaaSRedisTimeout, the circuit breaker's cool-down */
        check_duration(s, 1, RLAAS_TIMEOUT_MAX_MS);
        break;
    case 3:
        check_strategy(s);
        break;
    case 4:
        check_source(s);
        break;
    case 5:
        check_name(s);
        break;
    case 6:
        check_prefix(s);
        break;
    case 7:
        check_redis_addr(s);
        break;
    case 8:
        check_headers_mode(s);
        break;
    case 9: /* RLaaSRedisDatabase */
        check_nonneg(s, 1000000);
        break;
    case 10: /* RLaaSRedisPoolMax */
        check_nonneg(s, 100000);
        break;
    case 11: /* RLaaSPolicy's words */
        check_words(s);
        break;
    default: /* an extreme caller: the widest range a duration can have */
        check_duration(s, 0, INT64_MAX);
        break;
    }
    free(s);
    return 0;
}
