/*
 * The value of the "user" key source. After authentication it is the
 * authenticated user (r->user). Before it, in a section that uses Basic or
 * Digest authentication, it is the user name the client's Authorization
 * header names, read exactly as mod_auth_basic and mod_auth_digest read it
 * (the name they will check: with duplicate parameters, repeated fields,
 * malformed base64 or a ':' in the name alike), so that failed attempts
 * are counted under the name they tried; the access checker decides such
 * sections then. Anywhere else, a name the client merely sent never
 * selects a key.
 *
 * With RLaaSUserCase fold (server, virtual host) names are folded
 * wherever they are read: ASCII case, and spaces at the ends and in runs.
 * The empty name is a name (keyed apart from every other and from no
 * name).
 */
#ifndef RLAAS_AUTHUSER_H
#define RLAAS_AUTHUSER_H

#include "httpd.h"

#include "rlaas_config.h"

/* 1 if r's section authenticates with Basic or Digest, whose user name
 * can be read from the request before authentication. */
int rlaas_authuser_readable(request_rec *r);

/* The user name r's credentials claim, folded as configured ("" is the
 * empty name), or NULL: no credentials of the section's scheme, or a
 * section of another AuthType. */
const char *rlaas_authuser_claimed(request_rec *r);

/* 1 if authentication confirmed the name rlaas_authuser_claimed gave:
 * r->user, folded as configured, is that name. */
int rlaas_authuser_confirms(request_rec *r, const char *claimed);

/* RLaaSUserCase fold, as sc says: ASCII letters in lower case, spaces at
 * either end dropped and each run of them inside made one (as LDAP's
 * case-ignoring matching rules and MySQL's PAD SPACE collations compare
 * names); every other byte, UTF-8 included, as it is. Without fold, the
 * name itself. */
const char *rlaas_authuser_fold(apr_pool_t *p, const rlaas_server_conf_t *sc,
                                const char *name);

/* Marks the key built for r from now on as built before authentication
 * (before_auth 1) or after it (0). */
void rlaas_authuser_before_auth(request_rec *r, int before_auth);

/* The value of the "user" source for r as the key builder takes it (*len
 * bytes, which may hold a NUL), or NULL (the key falls back to the client
 * address). */
const char *rlaas_authuser(request_rec *r, size_t *len);

#endif
