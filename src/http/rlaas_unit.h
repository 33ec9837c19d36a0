/*
 * One client request is one unit. httpd may turn it into several request
 * records (internal redirects: mod_rewrite in a directory, ErrorDocument;
 * fast redirects: DirectoryIndex, MultiViews) and run subrequests beside
 * them; whatever it does, each limit is decided at most once, at the first
 * request record that reaches it, and a refusal holds for everything that
 * follows. The record of that lives in the initial request, found by
 * walking r->prev back, which outlives every redirect.
 */
#ifndef RLAAS_UNIT_H
#define RLAAS_UNIT_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_verdict.h"

/* A limit this client request has decided: a named policy, or the limit
 * of a section. */
typedef struct {
    const rlaas_policy_t *p;   /* the policy; NULL: a section's limit */
    const rlaas_dir_conf_t *d; /* the section that defined it (no policy) */
    int conc; /* the section's concurrency limit, not its rate limit */
    /* Decided before authentication under the user name the client sent
     * (NULL otherwise): if authentication does not confirm that name, the
     * limit is decided once more under the verified identity. */
    const char *claimed;
} rlaas_unit_limit_t;

/* A decided limit as the response shows it. */
typedef struct {
    const char *name; /* the policy's name, the zone or "default" */
    int64_t limit;
    int64_t window_ms;
    rlaas_verdict_t v;
    int have_v; /* 0: it could not be decided */
    int dry_run;
    int bytes; /* RLaaSCost bytes: limit and remaining in bytes */
    const rlaas_policy_field_t *field; /* its item written, or NULL */
} rlaas_unit_shown_t;

typedef struct {
    apr_array_header_t *decided; /* of rlaas_unit_limit_t */
    apr_array_header_t *shown;   /* of rlaas_unit_shown_t */
    int refusal;             /* 0, or the status the request was refused with */
    request_rec *refused;    /* the request record that was refused */
    const char *retry_after; /* with a 429 */
    const char *status;      /* RLAAS_STATUS so far */
    const char *remaining;   /* RLAAS_REMAINING so far */
    const char *policy;      /* RLAAS_POLICY so far */
    /* The record the access checker last went through, with its
     * settings (a fast redirect gives the same record others), and whether
     * it left something for the handler (a policy keyed by a user that
     * only authentication tells, or one decided under a name merely
     * claimed): if not, the handler has nothing to do for that record. */
    const request_rec *checked;
    const ap_conf_vector_t *checked_conf;
    int left_for_handler;
    /* RLaaSCountIf: charges left for after the response (rlaas_settle.c),
     * or NULL */
    void *outcome;
    /* RLaaSConcurrency: the slots taken, given back once httpd is done
     * with the request (rlaas_concurrency.c), or NULL */
    void *conc;
} rlaas_unit_t;

/* The unit of r's client request, or NULL if nothing was recorded yet. */
rlaas_unit_t *rlaas_unit_find(request_rec *r);

/* The same, created in the initial request's pool when missing. */
rlaas_unit_t *rlaas_unit_get(request_rec *r);

/* The entry for the policy p, or (p NULL) the limit section d defines, if
 * this client request decided it. */
rlaas_unit_limit_t *rlaas_unit_decided(const rlaas_unit_t *u,
                                       const rlaas_policy_t *p,
                                       const rlaas_dir_conf_t *d, int conc);

/* Records that the policy p, or the limit d defines, is being decided.
 * conc: d's concurrency limit (RLaaSConcurrency), not its rate limit. */
rlaas_unit_limit_t *rlaas_unit_add(rlaas_unit_t *u, const rlaas_policy_t *p,
                                   const rlaas_dir_conf_t *d, int conc,
                                   const char *claimed);

#endif
