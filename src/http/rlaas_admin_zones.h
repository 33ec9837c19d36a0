/*
 * What the operator's console needs of the configuration: every zone and
 * policy a request can be counted under, with what names its keys (key
 * prefix, tenant namespace, sources, strategy, window), collected once in
 * post_config; and the keys of one identity in one of them, built by the
 * key builder the request path uses (rlaas_keybuild.h), so that a raw API
 * key given by the operator is hashed exactly as a request's is.
 *
 * A section's settings are those of its own <Location>/<Directory>
 * merged onto its virtual host's and onto the sections of the same kind
 * before it whose path is a prefix of its own, as httpd merges them for
 * a request below it. Zones set in .htaccess files are not known here.
 */
#ifndef RLAAS_ADMIN_ZONES_H
#define RLAAS_ADMIN_ZONES_H

#include "httpd.h"

#include "rlaas_config.h"

typedef struct {
    const char *name; /* the zone, the policy's name, or "default" */
    const char *zone; /* the key's zone part; NULL: none */
    const char *prefix;
    const char *ns;
    const apr_array_header_t *sources; /* NULL: ip */
    rlaas_strategy_e strategy;
    int64_t window_ms;
    /* a calendar window and the zone of its days (rlaas_calendar.h);
     * NULL: none */
    const rlaas_cal_t *cal;
    const rlaas_tz_t *tz;
    int64_t limit;      /* 0: read per request (RLaaSLimit expr=) */
    int64_t bytes_unit; /* counting bytes: bytes per unit; else 0 */
    int policy;         /* an RLaaSPolicy */
    int conc; /* a section's RLaaSConcurrency (limit: its N), listed with
                 rlaas_admin_zones_of, never found by name for an action */
    const server_rec *server; /* the (virtual) host it is found in */
} rlaas_admin_zone_t;

/* post_config: the zones and policies of every server of s's chain (the
 * list in pconf, scratch work in ptemp). */
void rlaas_admin_zones_build(apr_pool_t *pconf, apr_pool_t *ptemp,
                             server_rec *s);

/* Every entry of host s named name (one name may key several ways in
 * different sections), as an array of const rlaas_admin_zone_t *; empty
 * if none. A virtual host sees the main server's sections and policies
 * as its requests do. */
apr_array_header_t *rlaas_admin_zones_named(apr_pool_t *p, const server_rec *s,
                                            const char *name);

/* Whether some section of the server configuration bans (RLaaSBan) with
 * its own limit keyed as d's is (prefix, namespace, zone, sources): then
 * d's requests honour those bans. Free when no section bans in d's zone;
 * else a signature is built in p. */
int rlaas_admin_zones_banned(apr_pool_t *p, const char *prefix,
                             const rlaas_dir_conf_t *d);
/* Every entry of host s, as an array of const rlaas_admin_zone_t *. */
apr_array_header_t *rlaas_admin_zones_of(apr_pool_t *p, const server_rec *s);

/* Whether a key (a ban's record) is of host s's: under its key prefix,
 * and, where another host keys under the same prefix, in one of its
 * zones and policies (those it inherits from the main server included,
 * whose keys every host sharing them shares) or in its tenants' zones
 * (its namespace). */
int rlaas_admin_zones_owns(const server_rec *s, const char *key);

#define RLAAS_ADMIN_KEYS_STATE 0 /* the strategy's state */
#define RLAAS_ADMIN_KEYS_BAN   1 /* RLaaSBan's "<key>:ban" */

/* Pushes (const char *) onto keys the keys of identity id in z: with
 * several sources, id holds their values separated by spaces, in the
 * order of RLaaSKeyBy (the ip source's is a client address). For fixed,
 * the windows around now_ms; base_out (may be NULL) gets the key without
 * window number or suffix. Returns NULL or why no key could be made. */
const char *rlaas_admin_keys(apr_pool_t *p, const rlaas_server_conf_t *sc,
                             const rlaas_admin_zone_t *z, const char *id,
                             int what, int64_t now_ms, apr_array_header_t *keys,
                             const char **base_out);

#endif
