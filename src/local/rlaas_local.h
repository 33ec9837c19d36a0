/*
 * The local engine's facade: the one entry the request path calls, as
 * rlaas_redis.h is for the remote engine. A plain call in (strategy,
 * complete key, limit, window), a verdict out. The state lives in a table
 * in memory shared by every child of the server (rlaas_table.h), under the
 * key the Redis script would write (the call's key, and for fixed the
 * window number), decided by the strategies' C arithmetic (rlaas_algo.h) at the
 * host's wall clock, the same time base as Redis' TIME.
 *
 * No httpd headers: the caller makes the shared memory.
 */
#ifndef RLAAS_LOCAL_H
#define RLAAS_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_algo.h"
#include "rlaas_parse.h"
#include "rlaas_table.h"
#include "rlaas_verdict.h"

/* How long a request waits for a stripe's lock. A lock is held for
 * microseconds at a time, but on a machine short of CPU its holder may be
 * descheduled with many threads queued behind it: a bound of tens of ms
 * turned such waits into 500s under load (make bench, a 2-CPU machine at a
 * load of 7). Only a process stopped while holding one (SIGSTOP, a
 * debugger) makes anyone wait this long. */
#define RLAAS_LOCAL_LOCK_WAIT_US 1000000

typedef rlaas_table_t rlaas_local_t;

typedef struct {
    rlaas_strategy_e strategy;
    const char *key; /* the whole key the Redis path passes to the script */
    size_t key_len;
    int64_t limit;
    int64_t window_ms;
    int64_t cost; /* units, 0 .. limit (0: a check); 1 for a plain hit */
    int mode;     /* RLAAS_MODE_LIMIT_VARIES, RLAAS_MODE_DRY_RUN, _FORCE */
    /* the key's first zone_len bytes name its zone (prefix, zone and
     * namespace: rlaas_key_zone_len); 0: the zone of keys naming none.
     * A flood of one zone's identities never evicts another zone's
     * records that still limit anyone (rlaas_table.h). */
    size_t zone_len;
    uint64_t token; /* RLAAS_CONCURRENCY: the request's slot */
    /* fixed with a calendar window: the periods around now (the call is
     * refused, RLAAS_LERR_CALL, when now is in none); NULL: none */
    const rlaas_cal_table_t *cal;
} rlaas_local_call_t;

/* A concurrency limit (RLaaSConcurrency, rlaas_conc.h) among a request's
 * calls, as lua/multi.lua takes one: strategy RLAAS_CONCURRENCY, its key
 * (ending in ":conc"), limit = N, window_ms = T, the request's token; cost
 * is not read. The slot is taken by this process: when a request finds N
 * slots held, those of processes that are gone are freed. */

/* A ban (RLaaSBan, rlaas_ban.h) among a request's calls, as lua/multi.lua
 * takes one: strategy RLAAS_BAN, the ban's key (ending in ":ban"),
 * limit = its length D ms, window_ms = the longest M ms, cost = the
 * factor F. At most one per call, beside at least one policy. While the
 * ban holds, no policy is decided: each gets {0, 0, left, left}, the ban
 * {0, 1, left, left}; else a denial by the policy at place mode (1-based;
 * mode 0: by any policy that is not a dry run, nor forced) starts a ban:
 * {0, 2, length, length}; no ban: {1, 0, 0, 0}. */

/* Calls (policies and a ban) one call decides at most, as lua/multi.lua. */
#define RLAAS_LOCAL_CALLS_MAX 8

/* A record after a call, for tests: its key and time to live (-2: there
 * is none). */
typedef struct {
    char key[RLAAS_TABLE_KEY_MAX + 1];
    int64_t ttl_ms;
} rlaas_local_record_t;

typedef enum {
    RLAAS_LERR_NONE = 0,
    RLAAS_LERR_BUSY,      /* a lock was not free in time */
    RLAAS_LERR_BROKEN,    /* a lock can't be used any more */
    RLAAS_LERR_CALL,      /* the call is out of range (key, limit, window) */
    RLAAS_LERR_NONE_HERE, /* no table in this process */
    RLAAS_LERR_FULL,      /* no room for a new identity: what the table
                             must keep fills its stripe */
    RLAAS_LERR_COUNT
} rlaas_lerr_e;

/* Names for logs and metrics: "busy", "broken", ... */
const char *rlaas_lerr_name(rlaas_lerr_e e);

/* The wall clock in ms, as Redis' TIME would give it. */
int64_t rlaas_local_now_ms(void);

/* Decides call at now_ms (rlaas_local_now_ms(), or a test's clock). rep
 * (may be NULL) tells of evictions, of identities refused for want of
 * room, and of a stripe repaired on the way. */
rlaas_lerr_e rlaas_local_eval(rlaas_local_t *lc, const rlaas_local_call_t *call,
                              int64_t now_ms, rlaas_verdict_t *v,
                              rlaas_table_report_t *rep);

/* The same, also giving the record's key (RLAAS_TABLE_KEY_MAX + 1 bytes)
 * and its time to live after the call (-2: none): what t/lua compares with
 * Redis. */
rlaas_lerr_e rlaas_local_eval_ex(rlaas_local_t *lc,
                                 const rlaas_local_call_t *call, int64_t now_ms,
                                 rlaas_verdict_t *v, rlaas_table_report_t *rep,
                                 char *rkey, int64_t *ttl_ms);

/* A request's policies, all or nothing, as lua/multi.lua decides them:
 * with the locks of all their records held, each is decided without
 * charging; only if every one that is not a dry run allows are they all
 * charged. One call (n = 1) is decided as rlaas_local_eval does. v gets n
 * verdicts; recs (may be NULL) n records. Two calls on one record are
 * refused (RLAAS_LERR_CALL): one key would be charged twice. A new
 * identity the table has no room for (RLAAS_LERR_FULL) is charged
 * nothing: before charging several, room is made for all their records;
 * a ban the table has no room for is not started, the denial stands. */
rlaas_lerr_e rlaas_local_eval_n(rlaas_local_t *lc,
                                const rlaas_local_call_t *calls, int n,
                                int64_t now_ms, rlaas_verdict_t *v,
                                rlaas_table_report_t *rep,
                                rlaas_local_record_t *recs);

/* A credit, as lua/credit.lua gives it (rlaas_algo_credit): calls[i].cost
 * units (1 .. rlaas_algo_limit_max) back to each call's record, charged at
 * least age_ms ago (0: now; fixed finds its window's record by that
 * time), with the locks of all the records held together. A record that
 * holds no state is left alone. given gets the units each gave back; recs
 * (may be NULL) the records, as rlaas_local_eval_n. */
rlaas_lerr_e rlaas_local_credit_n(rlaas_local_t *lc,
                                  const rlaas_local_call_t *calls, int n,
                                  int64_t age_ms, int64_t now_ms,
                                  int64_t *given, rlaas_table_report_t *rep,
                                  rlaas_local_record_t *recs);

/* Concurrency slots given back (lua/release.lua): each call's token
 * (RLAAS_CONCURRENCY calls; limit and window_ms are not read) off its
 * record, with the locks of all the records held together. removed gets
 * 1 for a slot that was held, 0 for one that had expired; recs (may be
 * NULL) the records, as rlaas_local_eval_n. */
rlaas_lerr_e rlaas_local_release_n(rlaas_local_t *lc,
                                   const rlaas_local_call_t *calls, int n,
                                   int64_t now_ms, int *removed,
                                   rlaas_table_report_t *rep,
                                   rlaas_local_record_t *recs);

/* Whether process pid, started at start (clock ticks after boot, as
 * /proc/<pid>/stat says; 0: unknown), is there: not gone, not a zombie,
 * not another process under a reused pid. How the local engine tells
 * the slots of dead processes (rlaas_conc_alive_fn). */
int rlaas_local_alive(void *baton, int32_t pid, uint64_t start);

/* This process, as rlaas_local_alive knows it (start 0: unknown). */
void rlaas_local_self(int32_t *pid, uint64_t *start);

/* The operator's console: the record of key (the whole key, window
 * number included for fixed) is forgotten, its identity starts afresh;
 * *found says whether it held state. */
rlaas_lerr_e rlaas_local_forget(rlaas_local_t *lc, const char *key,
                                size_t key_len, int64_t now_ms, int *found);

/* The console's list of bans: fn gets the key of each ban that refuses
 * its identity at now_ms, when it ends and how long it was (ms); it
 * returns 0 to stop. */
typedef int (*rlaas_local_ban_fn)(void *baton, const char *key, size_t klen,
                                  int64_t until_ms, int64_t length_ms);
rlaas_lerr_e rlaas_local_bans(rlaas_local_t *lc, int64_t now_ms,
                              rlaas_local_ban_fn fn, void *baton);

#endif
