/*
 * The decision for one request and the response that follows from it:
 * allowed (DECLINED, the request goes on), denied (429), or no decision
 * (500, or allowed with RLaaSFailOpen on).
 */
#ifndef RLAAS_LIMIT_H
#define RLAAS_LIMIT_H

#include "httpd.h"

/* access_checker: limits every section whose identity doesn't need the
 * authenticated user. */
int rlaas_limit_access_checker(request_rec *r);

/* fixups: limits sections keyed by "user", once authentication is done. */
int rlaas_limit_fixups(request_rec *r);

#endif
