/*
 * The cookie finder for the cookie:NAME source. No httpd headers: unit-
 * tested and fuzzed on its own.
 *
 * httpd's ap_cookie_read logs an error line for every request that sends a
 * cookie name twice ("sid=a; sid=b", which browsers do for cookies of
 * different paths or domains), so any client could write one log line per
 * request. This reads without logging: the first pair named NAME counts,
 * as browsers send the most specific cookie first.
 *
 * A Cookie header value is read as pairs separated by ';' and, since httpd
 * joins repeated header fields with ", ", by ','; white space around names
 * and values is ignored; a pair without '=' is skipped. Names compare
 * exactly (cookie names are case-sensitive); a value runs to the next
 * separator, '=' included.
 */
#ifndef RLAAS_COOKIE_H
#define RLAAS_COOKIE_H

#include <stddef.h>

/* Finds the first cookie named name (nl bytes) in hdr (len bytes). Returns
 * 1 and points *val at its value inside hdr (*vlen bytes, possibly 0), or
 * 0 when there is none. */
int rlaas_cookie_find(const char *hdr, size_t len, const char *name, size_t nl,
                      const char **val, size_t *vlen);

#endif
