/*
 * The one command of the request path, written straight into a buffer in
 * the Redis protocol (RESP). hiredis' generic formatter builds it piece by
 * piece in growing strings; here it is a handful of copies. No httpd
 * headers.
 *
 * One policy:  EVALSHA <sha1> 1 <key> <limit> <window> [<cost> [<mode>]]
 *              (cost and mode left out when they are 1 and 0: the bytes
 *              of a plain request are those of a single strategy call)
 * Several:     EVALSHA <sha1> <n> <key>... then, for each policy,
 *              <strategy id> <limit> <window> <cost> <mode>
 * A lease:     EVALSHA <sha1> <n> <key>... then, for each policy,
 *              <strategy id> <limit> <window> <cost> <mode> <want> <back>
 *              <at>
 * A concurrency limit goes as a policy of the several form, even alone,
 * its token in place of the cost; its release:
 *              EVALSHA <sha1> <n> <key>... <token>...
 * Records forgotten (the console): EVALSHA <sha1> <n> <key>... [1 (a mark)]
 */
#ifndef RLAAS_RESP_H
#define RLAAS_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_parse.h"

/* Policies one call decides at most (lua/multi.lua refuses more). */
#define RLAAS_CALL_POLICIES_MAX 8

/* A ban's record among the calls of the multi script (RLaaSBan):
 * strategy RLAAS_BAN, then its length (limit), its longest (window) and
 * its factor (cost) in ms; lua/multi.lua.
 *
 * A concurrency limit among them: strategy RLAAS_CONCURRENCY, then N
 * (limit), the slot's longest life T (window_ms) and the request's token
 * (in the cost's place: 16 hex digits); its key ends in ":conc"
 * (lua/concurrency.lua).
 *
 * Numbers travel as integers up to here: only this writer turns them into
 * text. */

/* One policy of a call: a strategy's script on one complete key. */
typedef struct {
    rlaas_strategy_e strategy;
    const char *key;
    size_t key_len;
    int64_t limit;
    /* milliseconds; with cal, the nominal length of now's period */
    int64_t window_ms;
    /* fixed, a calendar window: its periods around now, sent in place of
     * window_ms (at most RLAAS_CAL_ARG_MAX bytes, rlaas_cal.h); NULL:
     * window_ms */
    const char *cal;
    int64_t cost; /* units charged; 0: a check (cost=bytes) */
    /* a concurrency limit's token (16 hex digits), sent in place of the
     * cost; NULL otherwise */
    const char *token;
    int mode; /* RLAAS_MODE_* */
    /* Redis Cluster: ASKING goes first (the key's slot is being imported
     * by this node); the first call of a job says it for all */
    int asking;
    /* Redis Cluster, fixed: the key ends in the window number the module
     * reckoned (a declared key, so that a slot being moved moves it too);
     * it starts at this offset. 0: none. */
    size_t window_at;
    /* RLaaSLease: > 0 asks for a lease of up to this many units
     * (lua/lease.lua): the reply holds a second verdict, {granted > 0,
     * units granted, lease ms, ms to the end of the window for fixed and
     * sliding, else 0}. 0: an ordinary call, or, beside a policy that
     * asks for one, its cost alone (rlaas_call_lease). */
    int64_t lease_want;
    /* with lease_want: units of this server's last portion that lapsed
     * unspent, given back first (0: none), and the Redis time (ms) they
     * were charged at, as the lease script said; the reply's third
     * verdict says how many were, its fourth the time of this portion */
    int64_t lease_back;
    int64_t lease_back_at;
    /* A credit (lua/credit.lua) instead of a decision: cost units given
     * back, charged at least credit_age ms ago (0: now). Every call of a
     * job is a credit, or none is; the reply holds {1, units given back,
     * 0, 0} each. */
    int credit;
    int64_t credit_age;
    /* A release (lua/release.lua) of a concurrency limit's slot: key and
     * token (cost) only. Every call of a job is a release, or none is; the
     * reply holds {1, 1 if the slot was held, 0, 0} each. */
    int release;
    /* A forget (lua/forget.lua): the key's record deleted (the console's
     * reset and unban), key only; 2: and a mark of the reset left, which
     * the lease script reads (on a Cluster too: the mark shares the
     * key's hash tag). Every call of a job
     * is a forget, or none is; the reply holds {1, 1 if the record was
     * there, 0, 0} each. */
    int forget;
} rlaas_call_t;

/* Whether calls[0..n) are a lease (lua/lease.lua): one of them asks for a
 * portion (lease_want > 0); the others (lease_want 0) are charged their
 * cost alone, all or nothing with it. */
int rlaas_call_lease(const rlaas_call_t *calls, int n);

/* Room for a call of n policies (or credits) whose keys hold keys_len
 * bytes together. */
#define RLAAS_RESP_CALL_MAX(keys_len, n) ((keys_len) + 96 + (n)*200)

/* Writes the call of n (1..RLAAS_CALL_POLICIES_MAX) policies into buf (at
 * least RLAAS_RESP_CALL_MAX(their keys' bytes, n)) and returns its length.
 * sha1: the strategy's script for one policy, the multi script for more,
 * the credit script for credits. */
size_t rlaas_resp_call(char *buf, const char *sha1, const rlaas_call_t *calls,
                       int n);

#endif
