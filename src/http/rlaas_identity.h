/*
 * The client's identity for one request: the values of the RLaaSKeyBy
 * sources, read from the request and handed to the key builder
 * (rlaas_keybuild.h), which makes the whole Redis key the section's
 * strategy script writes.
 */
#ifndef RLAAS_IDENTITY_H
#define RLAAS_IDENTITY_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_keybuild.h"

/* What names one policy's counter, besides the client's values. */
typedef struct {
    const char *prefix;                /* RLaaSKeyPrefix in force */
    const char *zone;                  /* NULL: none */
    const char *ns;                    /* a tenant's namespace, or NULL */
    const apr_array_header_t *sources; /* of rlaas_key_source_t; NULL: ip */
    rlaas_strategy_e strategy;
    int64_t window_ms; /* fixed with Redis Cluster: its window's number */
    /* ... or its calendar's periods: the name of now's (rlaas_cal.h);
     * NULL: none */
    const rlaas_cal_table_t *periods;
} rlaas_identity_spec_t;

/* Returns the whole key the policy's strategy script writes, suffix
 * included, allocated from r->pool, and its length in *len (0 if the key
 * can't be built). IPv6 clients are grouped as sc says; with Redis
 * Cluster the identity is a hash tag, and for fixed the key ends in the
 * window number (a calendar's: the period's name, "1d+<start ms>"), which
 * starts at *window_at (else 0). */
const char *rlaas_identity_key(request_rec *r, const rlaas_server_conf_t *sc,
                               const rlaas_identity_spec_t *spec, size_t *len,
                               size_t *window_at);

/* How many of that key's first bytes name its zone (rlaas_key_zone_len):
 * the local engine keeps zones apart by them. */
size_t rlaas_identity_zone_len(const rlaas_identity_spec_t *spec);

#endif
