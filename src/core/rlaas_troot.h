/*
 * Tenant roots (RLaaSTenantRoot): where a tenant's directory tree starts,
 * on mass hosting (mod_vhost_alias, mod_userdir) where one virtual host
 * serves many tenants. No httpd headers: unit-tested on their own.
 *
 * A pattern is an absolute directory path whose segments are names or
 * "*", which matches any one segment: /home/ * /public_html (without the
 * spaces), /srv/mass/ *. A directory is under a pattern when its first
 * segments match the pattern's, one for one; the tenant's root is then
 * that many segments of the directory, e.g. /srv/mass/t1 for the
 * .htaccess of /srv/mass/t1/blog/.
 */
#ifndef RLAAS_TROOT_H
#define RLAAS_TROOT_H

#include <stddef.h>

#define RLAAS_TROOT_MAX 16 /* patterns per server or virtual host */

/* NULL if the pattern is one, else what is expected of it. A trailing
 * '/' is allowed (and ignored by rlaas_troot_match). */
const char *rlaas_troot_check(const char *pattern);

/* The length of the root of path (a directory, as httpd names it: "/",
 * segments joined by '/', an optional trailing '/') under the pattern,
 * or 0 if the path is not under it. *segments: the pattern's number of
 * segments, to prefer the longest of several that match. */
size_t rlaas_troot_match(const char *pattern, const char *path, size_t len,
                         int *segments);

#endif
