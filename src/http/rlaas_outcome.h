/*
 * Counting by outcome, and bans (SPEC "Counting by outcome, and bans"):
 * the directives RLaaSCountIf and RLaaSBan, and what the request path asks
 * of them.
 *
 * RLaaSCountIf EXPR|off: a section's requests are decided and charged
 * before they are served, as any request is (over the limit: 429), and,
 * once the response's status is known (log_transaction), given their
 * units back unless EXPR is true (a refund, lua/credit.lua): a request
 * counts while in flight, so a burst gets at most the limit through, and
 * a charge can't be lost (it is the decision's). Only the section's own
 * limit and the policies it applies count so; a host's RLaaSEnforce
 * policies count every request (a .htaccess can't make them count less).
 *
 * RLaaSBan DURATION [escalate FACTOR MAX]|off: the section's own limit's
 * identity, once denied, is refused for DURATION whatever its counters
 * say (rlaas_ban.h); its ban record is one more entry of the same engine
 * call, so there is no extra round trip, and it lives where the counters
 * do (Redis: every server refuses at once). The ban's key is the own
 * limit's identity, and every section whose own limit shares that key
 * reads it (rlaas_limit.c: ban_prepare).
 */
#ifndef RLAAS_OUTCOME_H
#define RLAAS_OUTCOME_H

#include "httpd.h"
#include "http_config.h"

#include "rlaas_ban.h"
#include "rlaas_config.h"
#include "rlaas_resp.h"

#define RLAAS_D_COUNT_IF "RLaaSCountIf"
#define RLAAS_D_BAN      "RLaaSBan"

const char *rlaas_outcome_set_count_if(cmd_parms *cmd, void *dv,
                                       const char *arg);
const char *rlaas_outcome_set_ban(cmd_parms *cmd, void *dv, int argc,
                                  char *const argv[]);

/* RLaaSPolicy's countif=EXPR: the policy counts by outcome wherever it
 * applies, enforced too (the condition is the host's own). */
const char *rlaas_outcome_policy_count_if(cmd_parms *cmd, const char *policy,
                                          const char *text,
                                          ap_expr_info_t **out);

/* The fields' unset values, and the merge (add over base). */
void rlaas_outcome_dir_init(rlaas_dir_conf_t *d);
void rlaas_outcome_dir_merge(rlaas_dir_conf_t *d, const rlaas_dir_conf_t *base,
                             const rlaas_dir_conf_t *add);

/* The section's RLaaSCountIf expression, or NULL (none, or off). */
ap_expr_info_t *rlaas_outcome_count_if(const rlaas_dir_conf_t *d);

/* 1 and the ban's settings if the section bans, else 0. */
int rlaas_outcome_ban(const rlaas_dir_conf_t *d, rlaas_ban_conf_t *b);

/* Whether EXPR holds for the response of r (its last record: the status
 * and headers the client got). An expression that fails counts as true
 * (a failure never lets a client off), logged at most once a second. */
int rlaas_outcome_counts(request_rec *r, ap_expr_info_t *expr);

#endif
