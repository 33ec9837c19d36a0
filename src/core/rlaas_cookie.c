#include "rlaas_cookie.h"

#include <string.h>

static int ows(char c)
{
    return c == ' ' || c == '\t';
}

static int sep(char c)
{
    return c == ';' || c == ',';
}

/* [*s, *e) without white space at either end. */
static void trim(const char *h, size_t *s, size_t *e)
{
    while (*s < *e && ows(h[*s]))
        (*s)++;
    while (*e > *s && ows(h[*e - 1]))
        (*e)--;
}

int rlaas_cookie_find(const char *hdr, size_t len, const char *name, size_t nl,
                      const char **val, size_t *vlen)
{
    size_t i = 0;

    while (i < len) {
        size_t ns = i, ne, vs, ve;

        while (i < len && hdr[i] != '=' && !sep(hdr[i]))
            i++;
        ne = i;
        if (i == len || sep(hdr[i])) {
            i++; /* not a pair: skip it and its separator */
            continue;
        }
        vs = ++i;
        while (i < len && !sep(hdr[i]))
            i++;
        ve = i++;
        trim(hdr, &ns, &ne);
        if (ne - ns == nl && memcmp(hdr + ns, name, nl) == 0) {
            trim(hdr, &vs, &ve);
            *val = hdr + vs;
            *vlen = ve - vs;
            return 1;
        }
    }
    return 0;
}
