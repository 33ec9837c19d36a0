/*
 * The decision for one request and the response that follows from it:
 * allowed (DECLINED, the request goes on), denied (429), or no decision
 * (500, or allowed with RLaaSFailOpen on).
 */
#ifndef RLAAS_LIMIT_H
#define RLAAS_LIMIT_H

#include "httpd.h"

/* access_checker, run before every other: the decision, for every limit
 * whose identity is known before authentication. */
int rlaas_limit_access_checker(request_rec *r);

/* handler, run before every other: the request is about to be served.
 * Refuses what was refused and yet let through (Satisfy Any, an access
 * module that answered first), and decides every limit not decided yet:
 * those keyed by the authenticated user, and those first reached here
 * (after a fast redirect, or where httpd skipped the access checkers). */
int rlaas_limit_handler(request_rec *r);

/* A TRACE, in map_to_storage, r->per_dir_config holding what a GET of
 * the same URL would get: every limit decided at once, the refusal
 * returned whatever Satisfy says (no authentication and no handler
 * follow); a limit keyed by the user counts under the name the request
 * claims (Basic, Digest), else under the client address. */
int rlaas_limit_trace(request_rec *r);

/* The output filter that labels our 429 body text/plain. */
void rlaas_limit_register_filters(void);

/* insert_error_filter: adds it to a 429 whose body is ours. */
void rlaas_limit_insert_error_filter(request_rec *r);

#endif
