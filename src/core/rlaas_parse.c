/*
 * Directive value parsers. Every function takes untrusted text (httpd.conf
 * or a tenant's .htaccess) and either fills its output or returns what is
 * accepted, never both.
 */
#include "rlaas_parse.h"

#include <string.h>

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static char fold(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

int rlaas_parse_prefixed(const char *s, const char *prefix)
{
    for (; *prefix != '\0'; s++, prefix++) {
        if (fold(*s) != fold(*prefix))
            return 0;
    }
    return 1;
}

int rlaas_parse_keyword(const char *s, const char *word)
{
    return rlaas_parse_prefixed(s, word) && s[strlen(word)] == '\0';
}

/* Reads a run of digits into *out; returns the number of digits read, or
 * -1 on overflow past max. Signs and spaces are not digits, so "-5" and
 * " 5" are refused by the callers. */
static int read_digits(const char *s, int64_t max, int64_t *out)
{
    int64_t v = 0;
    int n = 0;

    for (; is_digit(s[n]); n++) {
        if (v > (max - (s[n] - '0')) / 10)
            return -1;
        v = v * 10 + (s[n] - '0');
    }
    *out = v;
    return n;
}

const char *rlaas_parse_limit(const char *s, int64_t *out)
{
    static const char accepted[] = "an integer from 1 to 1000000000";
    int64_t v;
    int n = read_digits(s, RLAAS_LIMIT_MAX, &v);

    if (n <= 0 || s[n] != '\0' || v < 1)
        return accepted;
    *out = v;
    return NULL;
}

const char *rlaas_parse_nonneg_int(const char *s, int64_t max, int64_t *out)
{
    int64_t v;
    int n = read_digits(s, max, &v);

    if (n <= 0 || s[n] != '\0')
        return "a non-negative integer";
    *out = v;
    return NULL;
}

const char *rlaas_parse_duration_ms(const char *s, int64_t min_ms,
                                    int64_t max_ms, int64_t *out)
{
    static const char accepted[] =
        "a positive duration: a number followed by ms, s, m, h or d "
        "(500ms, 30s, 1m, 1h, 1d), a bare number meaning seconds";
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"ms", 1},    {"s", 1000},    {"", 1000},
                 {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    int64_t v;
    int n = read_digits(s, INT64_MAX / 86400000, &v);
    size_t i;

    if (n <= 0)
        return accepted;
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(s + n, units[i].unit) == 0) {
            v *= units[i].ms;
            if (v < min_ms || v > max_ms)
                return accepted;
            *out = v;
            return NULL;
        }
    }
    return accepted;
}

static const struct {
    const char *name;
    rlaas_strategy_e id;
} strategies[] = {
    {"fixed", RLAAS_STRATEGY_FIXED},
    {"fixed-window-algo", RLAAS_STRATEGY_FIXED},
    {"fixed_window", RLAAS_STRATEGY_FIXED},
    {"sliding-window-algo", RLAAS_STRATEGY_SLIDING_LOG},
    {"sliding_log", RLAAS_STRATEGY_SLIDING_LOG},
    {"sliding", RLAAS_STRATEGY_SLIDING},
    {"sliding_window", RLAAS_STRATEGY_SLIDING},
    {"token", RLAAS_STRATEGY_TOKEN},
    {"token_bucket", RLAAS_STRATEGY_TOKEN},
    {"leaky", RLAAS_STRATEGY_LEAKY},
    {"leaky_bucket", RLAAS_STRATEGY_LEAKY},
    {"gcra", RLAAS_STRATEGY_GCRA},
};

const char *rlaas_parse_strategy(const char *s, rlaas_strategy_e *out)
{
    size_t i;

    for (i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++) {
        if (rlaas_parse_keyword(s, strategies[i].name)) {
            *out = strategies[i].id;
            return NULL;
        }
    }
    return "one of " RLAAS_STRATEGY_CHOICES;
}

const char *rlaas_strategy_name(rlaas_strategy_e st)
{
    static const char *const names[RLAAS_STRATEGY_COUNT] = {
        "fixed", "sliding_log", "sliding", "token", "leaky", "gcra"};

    if (st == RLAAS_CONCURRENCY)
        return "concurrency";
    if (st < 0 || st >= RLAAS_STRATEGY_COUNT)
        return "unknown";
    return names[st];
}

/* Names of headers, cookies, query arguments, environment variables and
 * zones: a token of letters, digits and "-_.", bounded in length. */
const char *rlaas_parse_name(const char *s)
{
    size_t n = 0;

    for (; s[n]; n++) {
        if (!is_alnum(s[n]) && s[n] != '-' && s[n] != '_' && s[n] != '.')
            break;
    }
    if (n == 0 || s[n] != '\0' || n > RLAAS_NAME_MAX)
        return "a name of 1 to 64 letters, digits, '-', '_' or '.'";
    return NULL;
}

const char *rlaas_parse_prefix(const char *s)
{
    size_t n = 0;

    /* Printable ASCII without spaces; braces would select a Redis Cluster
     * hash slot and are refused so that keys stay spread over slots. */
    for (; s[n]; n++) {
        if (s[n] <= ' ' || s[n] > '~' || s[n] == '{' || s[n] == '}')
            break;
    }
    if (n == 0 || s[n] != '\0' || n > RLAAS_PREFIX_MAX)
        return "1 to 128 printable characters without spaces or braces";
    return NULL;
}

/* Header names whose values are credentials: hashed even when short. */
static int credential_header(const char *name, size_t len)
{
    static const char *const secret[] = {"Authorization", "Proxy-Authorization",
                                         "Cookie", "X-API-Key"};
    size_t i, j;

    for (i = 0; i < sizeof(secret) / sizeof(secret[0]); i++) {
        if (strlen(secret[i]) != len)
            continue;
        for (j = 0; j < len && fold(name[j]) == fold(secret[i][j]); j++)
            ;
        if (j == len)
            return 1;
    }
    return 0;
}

const char *rlaas_parse_source(const char *s, rlaas_source_t *out)
{
    static const char accepted[] =
        "ip, user, api_key, header:NAME, cookie:NAME, query:NAME, env:NAME "
        "or expr=EXPRESSION";
    static const struct {
        const char *word;
        rlaas_source_type_e type;
        int named; /* followed by ":NAME" */
        int credential;
    } kinds[] = {{"ip", RLAAS_SRC_IP, 0, 0},
                 {"user", RLAAS_SRC_USER, 0, 0},
                 {"api_key", RLAAS_SRC_API_KEY, 0, 1},
                 {"header", RLAAS_SRC_HEADER, 1, 0},
                 {"cookie", RLAAS_SRC_COOKIE, 1, 1},
                 {"query", RLAAS_SRC_QUERY, 1, 0},
                 {"env", RLAAS_SRC_ENV, 1, 0}};
    size_t i;

    memset(out, 0, sizeof(*out));
    if (rlaas_parse_prefixed(s, "expr=")) {
        if (s[5] == '\0')
            return "expr= followed by an expression";
        out->type = RLAAS_SRC_EXPR;
        out->name = s + 5;
        out->name_len = strlen(s + 5);
        return NULL;
    }
    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t wl = strlen(kinds[i].word);

        if (!rlaas_parse_prefixed(s, kinds[i].word))
            continue;
        if (!kinds[i].named && s[wl] == '\0') {
            out->type = kinds[i].type;
            out->credential = kinds[i].credential;
            return NULL;
        }
        if (kinds[i].named && s[wl] == ':') {
            if (rlaas_parse_name(s + wl + 1) != NULL)
                return "a source name of 1 to 64 letters, digits, '-', '_' "
                       "or '.' after the colon";
            out->type = kinds[i].type;
            out->name = s + wl + 1;
            out->name_len = strlen(out->name);
            out->credential = kinds[i].credential ||
                              (out->type == RLAAS_SRC_HEADER &&
                               credential_header(out->name, out->name_len));
            return NULL;
        }
    }
    return accepted;
}

const char *rlaas_parse_redis_addr(const char *s, char *host, int *port,
                                   int *is_unix)
{
    static const char accepted[] =
        "host, host:port, [IPv6]:port or unix:/absolute/path";
    const char *end, *colon;
    size_t hl, i;
    int64_t p = 6379;

    *is_unix = 0;
    if (rlaas_parse_prefixed(s, "unix:")) {
        if (s[5] != '/' || s[6] == '\0')
            return accepted;
        strcpy(host, s + 5);
        *is_unix = 1;
        *port = 0;
        return NULL;
    }
    if (s[0] == '[') {
        end = strchr(s, ']');
        if (end == NULL || end == s + 1)
            return accepted;
        colon = end[1] == ':' ? end + 1 : NULL;
        if (colon == NULL && end[1] != '\0')
            return accepted;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = '\0';
        for (i = 0; host[i]; i++) {
            char c = host[i];
            if (!is_digit(c) && !(c >= 'a' && c <= 'f') &&
                !(c >= 'A' && c <= 'F') && c != ':' && c != '.')
                return accepted;
        }
    }
    else {
        colon = strchr(s, ':');
        hl = colon ? (size_t)(colon - s) : strlen(s);
        if (hl == 0 || hl > 253)
            return accepted;
        for (i = 0; i < hl; i++) {
            if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '.' && s[i] != '_')
                return accepted;
        }
        memcpy(host, s, hl);
        host[hl] = '\0';
    }
    if (colon != NULL) {
        int n = read_digits(colon + 1, 65535, &p);
        if (n <= 0 || colon[1 + n] != '\0' || p < 1)
            return "a port from 1 to 65535 after the colon";
    }
    *port = (int)p;
    return NULL;
}

int rlaas_parse_word(const char **s, char *out)
{
    const char *p = *s;
    size_t n = 0;
    char quote = 0;

    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0') {
        *s = p;
        return 0;
    }
    for (; *p != '\0'; p++) {
        if (quote != 0) {
            if (*p == quote)
                quote = 0;
            else
                out[n++] = *p;
        }
        else if (*p == '"' || *p == '\'')
            quote = *p;
        else if (*p == ' ' || *p == '\t')
            break;
        else
            out[n++] = *p;
    }
    out[n] = '\0';
    *s = p;
    return quote != 0 ? -1 : 1;
}

const char *rlaas_parse_size(const char *s, int64_t min, int64_t max,
                             int64_t *out)
{
    static const char accepted[] =
        "a size: a number of bytes, or followed by K, M or G (64K, 10M, 1G)";
    int64_t v, unit = 1;
    int n = read_digits(s, INT64_MAX >> 30, &v);

    if (n <= 0)
        return accepted;
    switch (s[n]) {
    case '\0':
        break;
    case 'k':
    case 'K':
        unit = 1 << 10;
        break;
    case 'm':
    case 'M':
        unit = 1 << 20;
        break;
    case 'g':
    case 'G':
        unit = 1 << 30;
        break;
    default:
        return accepted;
    }
    if (unit > 1 && s[n + 1] != '\0')
        return accepted;
    v *= unit;
    if (v < min || v > max)
        return accepted;
    *out = v;
    return NULL;
}
