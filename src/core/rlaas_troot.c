#include "rlaas_troot.h"

#include <string.h>

/* The segment that starts at s (after any '/'), and where it ends. */
static const char *segment(const char *s, const char *end, size_t *n)
{
    const char *e;

    while (s < end && *s == '/')
        s++;
    for (e = s; e < end && *e != '/'; e++)
        ;
    *n = (size_t)(e - s);
    return s;
}

const char *rlaas_troot_check(const char *pattern)
{
    const char *p = pattern, *end = pattern + strlen(pattern), *s;
    size_t n;
    int segs = 0;

    if (*p != '/')
        return "an absolute directory path whose segments are names or *, "
               "e.g. /home/*/public_html or /srv/mass/*";
    while (p < end) {
        if (p[0] == '/' && p + 1 < end && p[1] == '/')
            return "a path without empty segments (//)";
        s = segment(p, end, &n);
        p = s + n;
        if (n == 0)
            break;
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return "a path without . or .. segments";
        if (n > 1 && memchr(s, '*', n) != NULL)
            return "* alone as a segment (it matches one whole segment)";
        segs++;
    }
    return segs > 0 ? NULL : "a directory below /, e.g. /srv/mass/*";
}

size_t rlaas_troot_match(const char *pattern, const char *path, size_t len,
                         int *segments)
{
    const char *p = pattern, *pend = pattern + strlen(pattern);
    const char *d = path, *dend = path + len, *ps, *ds;
    size_t pn, dn;

    *segments = 0;
    if (len == 0 || *path != '/')
        return 0;
    for (;;) {
        ps = segment(p, pend, &pn);
        if (pn == 0)
            break;
        ds = segment(d, dend, &dn);
        if (dn == 0)
            return 0; /* the path ends above the pattern */
        if (!(pn == 1 && ps[0] == '*') && (pn != dn || memcmp(ps, ds, dn)))
            return 0;
        p = ps + pn;
        d = ds + dn;
        (*segments)++;
    }
    return *segments > 0 ? (size_t)(d - path) : 0;
}
