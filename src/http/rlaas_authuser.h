/*
 * The value of the "user" key source. After authentication it is the
 * authenticated user (r->user). Before it, in a section that uses Basic or
 * Digest authentication, it is the user name the client sent in its
 * Authorization header, so that failed attempts are counted under the name
 * they tried; the access checker decides such sections then. Anywhere
 * else, a name the client merely sent never selects a key.
 */
#ifndef RLAAS_AUTHUSER_H
#define RLAAS_AUTHUSER_H

#include "httpd.h"

/* 1 if r's section authenticates with Basic or Digest, whose user name
 * can be read from the request before authentication. */
int rlaas_authuser_readable(request_rec *r);

/* The user name r's credentials claim, or NULL: no credentials of the
 * section's scheme, an empty name, or a section of another AuthType. */
const char *rlaas_authuser_claimed(request_rec *r);

/* Marks the key built for r from now on as built before authentication
 * (before_auth 1) or after it (0). */
void rlaas_authuser_before_auth(request_rec *r, int before_auth);

/* The value of the "user" source for r, or NULL (the key falls back to the
 * client address). */
const char *rlaas_authuser(request_rec *r);

#endif
