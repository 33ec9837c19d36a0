#ifndef RLAAS_ADMIN_TALLY_H
#define RLAAS_ADMIN_TALLY_H

/* The console's counts: what each request adds to the tally the children
 * share (its decisions per host and zone, the identities most denied, its
 * requests in flight), and the hosts the tally's rows belong to. The
 * console's page (rlaas_admin.c) reads them; the request path only adds,
 * and nothing at all where no console is configured. */

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_policies.h"
#include "rlaas_tally.h"

/* A concurrency limit's row is its name with this suffix, beside the
 * zone's rate row of the same name. */
#define RLAAS_ADMIN_CONC_SUFFIX ":concurrency"

/* A host of the configuration and the key its rows carry. */
typedef struct {
    const server_rec *s;
    uint64_t key;
    const char *label;
} rlaas_admin_host_t;

/* In post_config: the hosts, and (counted: some section has a console)
 * the tally, kept across restarts. */
void rlaas_admin_tally_start(apr_pool_t *pconf, apr_pool_t *ptemp,
                             server_rec *s, int counted);

/* The tally, or NULL: no counts. */
rlaas_tally_t *rlaas_admin_tally(void);

/* s's host, or NULL; the label of the host whose key is key, or NULL. */
const rlaas_admin_host_t *rlaas_admin_host_of(const server_rec *s);
const char *rlaas_admin_host_label(uint64_t key);

/* A decision of the policy it: counted in its row; a denial also among
 * the most denied identities. */
void rlaas_admin_note(request_rec *r, const rlaas_dir_conf_t *d,
                      const rlaas_item_t *it, int denied);

/* A concurrency limit's slot taken by a request that host s served: the
 * row it is counted in (-1: none), for rlaas_admin_give to give it back
 * to that same row. */
int rlaas_admin_take(const server_rec *s, const rlaas_item_t *it);
void rlaas_admin_give(const server_rec *s, const rlaas_item_t *it, int row);

#endif
