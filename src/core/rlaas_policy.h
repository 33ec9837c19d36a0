/*
 * Which policies apply to one request, and which of them its response
 * shows. No httpd headers: unit-tested on their own.
 *
 * A section's RLaaSApply operations (NAME, -NAME, none) are kept in order
 * and concatenated down the tree by the merge, so the set a request meets
 * is found here, at request time, by replaying them: NAME adds, -NAME
 * removes, none removes everything applied so far. The policies a server
 * enforces (RLaaSEnforce) come first and no operation removes them.
 */
#ifndef RLAAS_POLICY_H
#define RLAAS_POLICY_H

#include <stdint.h>

#include "rlaas_verdict.h"

/* Policies one request meets at most, its section's own limit included. */
#define RLAAS_POLICIES_MAX 8

typedef enum {
    RLAAS_APPLY_ADD = 0,
    RLAAS_APPLY_REMOVE,
    RLAAS_APPLY_NONE
} rlaas_apply_kind_e;

typedef struct {
    rlaas_apply_kind_e kind;
    int id;          /* the policy's number (RLAAS_APPLY_NONE: unused) */
    const void *ref; /* the caller's policy, carried along */
} rlaas_apply_op_t;

/* Points out[] at the policies that apply: the enforced ones first (their
 * kinds are not read), in order and once each, then those the operations
 * leave applied, in the order they were first applied, less the enforced
 * ones. Returns their number, or -1 if there are more than max. */
int rlaas_policy_resolve(const rlaas_apply_op_t *enforced, int nenforced,
                         const rlaas_apply_op_t *ops, int nops,
                         const rlaas_apply_op_t **out, int max);

/* One policy's outcome in a response. */
typedef struct {
    rlaas_verdict_t v;
    int dry_run; /* a denial here denies nothing */
} rlaas_policy_outcome_t;

typedef enum {
    RLAAS_PICK_ALLOWED = 0,   /* the closest to its limit */
    RLAAS_PICK_DENIED,        /* the denial with the longest wait */
    RLAAS_PICK_DRY_RUN_DENIED /* a dry run's, when nothing else denied */
} rlaas_pick_e;

/* The policy a response shows (RateLimit, the legacy fields, RLAAS_POLICY,
 * Retry-After): of those that denied, the one with the longest retry; if
 * none did, of the dry runs that would have, the same; else the one with
 * the fewest units left, and of those the one whose quota comes back
 * last. Ties go to the first. n >= 1. */
int rlaas_policy_pick(const rlaas_policy_outcome_t *o, int n,
                      rlaas_pick_e *why);

#endif
