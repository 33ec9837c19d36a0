/*
 * The policies one request meets, ready for the engine: the host's
 * enforced ones whatever the section says, and, where the section does not
 * switch limiting off, the policies its RLaaSApply operations leave applied
 * and its own limit (named by its zone, or "default"). Each gets its key,
 * its limit (read per request for RLaaSLimit expr=) and its cost.
 */
#ifndef RLAAS_POLICIES_H
#define RLAAS_POLICIES_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_resp.h"
#include "rlaas_verdict.h"

/* One policy a request meets. */
typedef struct {
    const rlaas_policy_t *p; /* NULL: the section's own limit */
    int conc; /* the section's RLaaSConcurrency (p NULL): slots in flight */
    const char *name; /* its name, or the section's zone or "default" */
    /* its RateLimit-Policy item as written at merge, or NULL */
    const rlaas_policy_field_t *field;
    int enforced; /* RLaaSEnforce: no dry run, no section's cost,
                     the host's failure policy */
    int dry_run;
    int need_user; /* keyed by the user: decided when the name is known */
    int metric;    /* its row handle (rlaas_metrics_name) */
    /* a calendar window (rlaas_calendar.h): its periods in its host's zone,
     * and, once prepared, those around now (call.cal their argument,
     * call.window_ms the length of now's period); NULL: none */
    const rlaas_cal_t *cal;
    const rlaas_tz_t *tz;
    const rlaas_cal_table_t *periods;
    rlaas_call_t call; /* strategy, key, limit, window, cost, mode: the
                          values decided with, as integers */
    /* RLaaSCost bytes: checked (cost 0), charged after the response in
     * units of this many bytes; 0: it counts requests */
    int64_t bytes_unit;
    size_t zone_len; /* the key's zone part (rlaas_key_zone_len) */
    rlaas_verdict_t v;
    /* decided from a portion held here (rlaas_lease_decide): its oldest
     * charge then, by Redis' clock (ms) and this server's (us), where a
     * refund goes (rlaas_lease_refund); lease_at_ms 0: not */
    int64_t lease_at_ms, lease_at_us;
} rlaas_item_t;

/* Writes into it[] the policies r meets in section d (d may be NULL) and
 * returns their number, or -1 if they are more than RLAAS_POLICIES_MAX. */
int rlaas_policies_gather(request_rec *r, const rlaas_dir_conf_t *d,
                          rlaas_item_t *it);

/* The host's enforced policies alone (it[] as above): what is decided
 * where the rest cannot be (too many policies, a tenant's limit out of
 * its host's bounds). */
int rlaas_policies_enforced(request_rec *r, const rlaas_dir_conf_t *d,
                            rlaas_item_t *it);

/* Readies it[0..*n) for the engine: keys, limits, costs; a key met twice
 * (an operator's section whose zone is a policy's name) is decided once,
 * never more loosely than either would be. Returns NULL, or why a limit could
 * not be had (the request is then undecided). */
const char *rlaas_policies_prepare(request_rec *r, const rlaas_dir_conf_t *d,
                                   rlaas_item_t *it, int *n);

/* v as decimal text in p, without apr_psprintf's formatter (what the
 * scripts' arguments and the RateLimit fields are written from). */
const char *rlaas_num_text(apr_pool_t *p, int64_t v);

#endif
