#include "rlaas_headers.h"

#include <string.h>

#include "rlaas_parse.h"
#include "rlaas_verdict.h"

const char *rlaas_parse_headers_mode(const char *s, rlaas_headers_e *out)
{
    static const struct {
        const char *name;
        rlaas_headers_e mode;
    } modes[] = {{"draft", RLAAS_HEADERS_DRAFT},
                 {"legacy", RLAAS_HEADERS_LEGACY},
                 {"both", RLAAS_HEADERS_BOTH},
                 {"off", RLAAS_HEADERS_OFF}};
    size_t i;

    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (rlaas_parse_keyword(s, modes[i].name)) {
            *out = modes[i].mode;
            return NULL;
        }
    }
    return "draft, legacy, both or off";
}

/* Appends src to buf at *n, as much of it as fits before the final NUL,
 * so that a short buffer holds a prefix of the whole text, as snprintf
 * leaves it; snprintf costs more than the rest of the request path
 * together, so these are built by hand. */
static void put(char *buf, size_t size, size_t *n, const char *src, size_t len)
{
    if (*n + 1 < size)
        memcpy(buf + *n, src, len < size - 1 - *n ? len : size - 1 - *n);
    *n += len;
}

static void put_i64(char *buf, size_t size, size_t *n, int64_t v)
{
    char d[21];

    put(buf, size, n, d, rlaas_fmt_i64(d, v));
}

/* The longest item beside its name: quotes, two keys, two integers. */
#define ITEM_FIXED (2 + 1 + 2 * (1 + 2 + 20) + 1)

/* `"<name>";<k1>=<v1>;<k2>=<v2>`, NUL-terminated; returns the length it
 * needs, like snprintf. Where the whole item fits, written straight in
 * (the usual case: the caller's buffer is sized for it); else piece by
 * piece, a prefix of it. */
static int fmt_item(char *buf, size_t size, const char *name, const char *k1,
                    int64_t v1, const char *k2, int64_t v2)
{
    size_t nl = strlen(name), n = 0;
    char *p = buf;

    if (size >= nl + ITEM_FIXED + 1) {
        *p++ = '"';
        memcpy(p, name, nl);
        p += nl;
        *p++ = '"';
        *p++ = ';';
        *p++ = k1[0];
        *p++ = k1[1];
        p += rlaas_fmt_i64(p, v1);
        *p++ = ';';
        *p++ = k2[0];
        *p++ = k2[1];
        p += rlaas_fmt_i64(p, v2);
        *p = '\0';
        return (int)(p - buf);
    }
    put(buf, size, &n, "\"", 1);
    put(buf, size, &n, name, nl);
    put(buf, size, &n, "\";", 2);
    put(buf, size, &n, k1, 2);
    put_i64(buf, size, &n, v1);
    put(buf, size, &n, ";", 1);
    put(buf, size, &n, k2, 2);
    put_i64(buf, size, &n, v2);
    if (size > 0)
        buf[n < size ? n : size - 1] = '\0';
    return (int)n;
}

int rlaas_fmt_policy(char *buf, size_t size, const char *name, int64_t limit,
                     int64_t window_ms)
{
    /* w is whole seconds; a sub-second window still reads as 1. */
    int64_t w = rlaas_ms_to_s_ceil(window_ms);

    return fmt_item(buf, size, name, "q=", limit, "w=", w < 1 ? 1 : w);
}

int rlaas_fmt_ratelimit(char *buf, size_t size, const char *name,
                        const rlaas_verdict_t *v)
{
    return fmt_item(buf, size, name, "r=", v->remaining,
                    "t=", rlaas_ms_to_s_ceil(v->reset_ms));
}
