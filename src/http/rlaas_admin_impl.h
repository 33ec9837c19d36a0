/*
 * Inside the operator's console: its actions against either backend
 * (rlaas_admin_act.c) and its output (rlaas_admin_render.c).
 */
#ifndef RLAAS_ADMIN_IMPL_H
#define RLAAS_ADMIN_IMPL_H

#include "httpd.h"

#include "rlaas_metrics.h"
#include "rlaas_tally.h"

/* What an action did: status (200, or the refusal's), message (what
 * changed, or why nothing did), and the keys it touched. */
typedef struct {
    int status;
    const char *action;
    const char *zone;
    const char *message;
    apr_array_header_t *keys; /* of const char *: keys deleted or changed */
    int64_t changed;          /* keys deleted, units given back */
} rlaas_admin_result_t;

/* Runs one action; the identity never appears raw in res (keys hold it
 * as the key builder writes it: credentials hashed). */
void rlaas_admin_act(request_rec *r, const char *action, const char *zone,
                     const char *id, const char *n, rlaas_admin_result_t *res);

typedef struct {
    const char *key;
    int64_t until_ms; /* -1: the value was not "<until>:<length>" */
    int64_t length_ms;
} rlaas_admin_ban_t;

/* Active bans under the server's key prefix (a bounded SCAN), into out
 * (of rlaas_admin_ban_t); in a virtual host, those of its zones only
 * (rlaas_admin_zones_owns). NULL, or why they could not be listed. */
const char *rlaas_admin_bans(request_rec *r, apr_array_header_t *out);

/* One row of the page: a name (zone or policy) of one host. */
typedef struct {
    const char *name;
    const char *host; /* the host's label */
    int policy;
    int conc;      /* a concurrency limit's: held is its requests in flight */
    int bytes;     /* its limit counts bytes (RLaaSCost bytes, cost=bytes) */
    int64_t limit; /* a concurrency limit's N (0: not known here) */
    uint64_t held;
    uint64_t allowed, denied;
    uint32_t minutes[RLAAS_TALLY_MINUTES];
} rlaas_admin_row_t;

typedef struct {
    /* NULL: a console of the main server, which shows every host; else
     * the label of the virtual host whose console this is, which shows
     * that host's zones, policies, identities and bans only, and of the
     * server's Redis neither its address nor its traffic */
    const char *scope;
    const char *backend; /* "redis" or "local" */
    const char *redis;   /* where, or NULL */
    int64_t now_ms;
    apr_array_header_t *rows; /* of rlaas_admin_row_t */
    rlaas_tally_top_t top[RLAAS_TALLY_TOP];
    const char *top_zone[RLAAS_TALLY_TOP];
    const char *top_host[RLAAS_TALLY_TOP];
    int ntop;
    apr_array_header_t *bans; /* of rlaas_admin_ban_t */
    const char *bans_error;
    rlaas_child_health_t *children;
    int nchildren;
    int tally; /* 0: no shared memory for the counts */
} rlaas_admin_view_t;

void rlaas_admin_render_page(request_rec *r, const rlaas_admin_view_t *v,
                             int json);
void rlaas_admin_render_result(request_rec *r, const rlaas_admin_result_t *res,
                               int json);

#endif
