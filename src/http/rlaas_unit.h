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

/* A limit this client request has decided. */
typedef struct {
    const rlaas_dir_conf_t *d; /* the section that defined it */
    /* Decided before authentication under the user name the client sent
     * (NULL otherwise): if authentication does not confirm that name, the
     * limit is decided once more under the verified identity. */
    const char *claimed;
} rlaas_unit_limit_t;

typedef struct {
    apr_array_header_t *decided; /* of rlaas_unit_limit_t */
    int refusal;             /* 0, or the status the request was refused with */
    request_rec *refused;    /* the request record that was refused */
    const char *retry_after; /* with a 429 */
    const char *status;      /* RLAAS_STATUS so far */
    const char *remaining;   /* RLAAS_REMAINING so far */
} rlaas_unit_t;

/* The unit of r's client request, or NULL if nothing was recorded yet. */
rlaas_unit_t *rlaas_unit_find(request_rec *r);

/* The same, created in the initial request's pool when missing. */
rlaas_unit_t *rlaas_unit_get(request_rec *r);

/* The entry for the limit d defines if this client request decided it. */
rlaas_unit_limit_t *rlaas_unit_decided(const rlaas_unit_t *u,
                                       const rlaas_dir_conf_t *d);

/* Records that the limit d defines is being decided. */
rlaas_unit_limit_t *rlaas_unit_add(rlaas_unit_t *u, const rlaas_dir_conf_t *d,
                                   const char *claimed);

#endif
