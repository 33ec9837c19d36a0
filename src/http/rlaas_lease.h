/*
 * RLaaSLease on and auto: a busy identity's quota taken from Redis in
 * portions and spent in this server's shared memory
 * (src/local/rlaas_grant.h), so that most of its requests are decided
 * with no round trip, and a request that takes a new portion makes
 * one. A quiet identity asks for its own cost each time: one round trip
 * per request, nothing held. A request of several policies spends from
 * a portion of each that has one, and makes one round trip for the
 * others (all or nothing, as without leases; a second, exact, only where
 * Redis refused a policy whose last units this server holds). Where a
 * lease cannot apply (the local backend, a sliding log, a dry run, a
 * ban, ...) the request is decided as without it; under on, each child
 * says why once (RLAAS0081). RLaaSCountIf's refund of a unit spent here
 * goes back into the portion it came from (rlaas_lease_refund).
 */
#ifndef RLAAS_LEASE_H
#define RLAAS_LEASE_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_policies.h"
#include "rlaas_rerr.h"

typedef enum {
    RLAAS_LEASE_NO = 0,  /* no lease here: decide as usual */
    RLAAS_LEASE_DECIDED, /* it[0..n).v hold the verdicts */
    RLAAS_LEASE_FAILED   /* Redis could not decide: *e, detail say why */
} rlaas_lease_e;

/* What else the decision carries that a lease can't: a ban's record to
 * read (RLaaSBan, or a ban of the zone honoured). */
#define RLAAS_LEASE_WITH_BAN 1

/* Decides it[0..n) from a lease where the section asks for one and it
 * applies (with: RLAAS_LEASE_WITH_* bits). */
rlaas_lease_e rlaas_lease_decide(request_rec *r, const rlaas_dir_conf_t *d,
                                 rlaas_item_t *it, int n, int with,
                                 rlaas_rerr_e *e, char *detail);

/* RLaaSCountIf's refund of it, decided from a portion held here
 * (it->lease_at_ms > 0): its unit back into that portion. Returns 1 if
 * so, 0 if the refund is Redis' to make (aged from it->lease_at_us). */
int rlaas_lease_refund(request_rec *r, const rlaas_dir_conf_t *d,
                       const rlaas_item_t *it);

/* post_config: the server's memory of the identities seen lately
 * (RLaaSLease auto), where some host decides in Redis (leases). */
void rlaas_lease_post_config(server_rec *s, int leases);

#endif
