/*
 * The engine that decides a server's requests, as one struct of
 * operations chosen once by the server's configuration (in the manner of
 * httpd's socache providers): the local engine's table in shared memory
 * (rlaas_engine_local.c) or the server's Redis target, whatever stands
 * behind it: one node, TLS, Sentinel or Cluster (rlaas_engine_redis.c).
 * The request path, RLaaSCountIf's and RLaaSCost bytes' charges after the
 * response, RLaaSConcurrency's slots and the console call only these;
 * none of them opens a connection of its own or looks a name up: Redis is
 * reached through the child's pool.
 */
#ifndef RLAAS_ENGINE_H
#define RLAAS_ENGINE_H

#include "httpd.h"

#include "rlaas_ban.h"
#include "rlaas_cal.h"
#include "rlaas_config.h"
#include "rlaas_parse.h"
#include "rlaas_policies.h"
#include "rlaas_rerr.h"

/* A decision's policies, as every engine takes them. */
typedef struct {
    const rlaas_dir_conf_t *d; /* the section deciding */
    rlaas_item_t *it;          /* it[0..n): each gets its verdict, it[i].v */
    int n;
    int with; /* what else it carries (RLAAS_LEASE_WITH_*, rlaas_lease.h) */
    /* RLaaSBan: the ban's record, decided with them (ban_key NULL: none):
     * own is the 1-based item whose denial bans; ban_v its verdict */
    const char *ban_key;
    size_t ban_key_len;
    int ban_own;
    rlaas_ban_conf_t ban;
    rlaas_verdict_t ban_v;
} rlaas_engine_ask_t;

/* Why an engine could not do what it was asked. */
typedef struct {
    const char *tag;  /* the log line's: RLAAS0021 (Redis), RLAAS0063 */
    const char *kind; /* "Redis timeout", "local engine" */
    char detail[RLAAS_DETAIL_MAX];
    int circuit; /* Redis' circuit is open (RLaaSCircuitFailOpen) */
} rlaas_engine_fault_t;

/* Units given back to one policy's record, as if charged now (the
 * operation of an RLaaSCountIf refund: lua/credit.lua). */
typedef struct {
    rlaas_strategy_e strategy;
    const char *key; /* the whole key (a calendar's: its base) */
    int64_t limit;
    int64_t window_ms;
    /* a calendar's periods around now and their script argument, or
     * NULL */
    const rlaas_cal_table_t *cal;
    const char *cal_window;
    int64_t units;
} rlaas_engine_credit_t;

/* One ban found: its key, when it ends and how long it was (ms; -1 both
 * when its record is not one the module wrote). Returns 0 to stop. */
typedef int (*rlaas_engine_ban_fn)(void *baton, const char *key, size_t klen,
                                   int64_t until_ms, int64_t length_ms);

typedef struct rlaas_engine_t rlaas_engine_t;

/* The request path's operations return 1 when done, else 0 with *f saying
 * why (each engine counts its own faults in the metrics); the console's
 * return NULL, or why they could not (for the operator: no secret). */
struct rlaas_engine_t {
    const char *name; /* "local" or "redis", as the console shows it */
    /* decides a's policies, all or nothing, charging those allowed */
    int (*decide)(request_rec *r, rlaas_engine_ask_t *a,
                  rlaas_engine_fault_t *f);
    /* it[0..n)'s charges, made by decide since t0_us (rlaas_clock_us),
     * given back (units NULL), or units[i] more charged to each, made
     * whatever the counter says (the response is served); a try that
     * never reached the engine is made once more */
    int (*settle)(request_rec *r, const rlaas_item_t *it, int n,
                  const int64_t *units, int64_t t0_us, rlaas_engine_fault_t *f);
    /* the RLaaSConcurrency slots it[0..n) took given back (s: the
     * server that took them; p for the log line's text) */
    int (*release)(server_rec *s, apr_pool_t *p, const rlaas_item_t *it, int n,
                   rlaas_engine_fault_t *f);
    /* the engine that decides in this one's place when it cannot and the
     * section says RLaaSFailOpen local, or NULL */
    const rlaas_engine_t *stand_in;
    /* the console's: the record of key forgotten, its identity starts
     * afresh (*found: whether there was one) */
    const char *(*forget)(request_rec *r, const char *key, int *found);
    /* *given: the units given back (never below the fresh state) */
    const char *(*credit)(request_rec *r, const rlaas_engine_credit_t *c,
                          int64_t *given);
    /* the bans under prefix that hold now, at most max of them */
    const char *(*bans)(request_rec *r, const char *prefix, int max,
                        rlaas_engine_ban_fn fn, void *baton);
};

extern const rlaas_engine_t rlaas_engine_local;
extern const rlaas_engine_t rlaas_engine_redis;
/* The local engine in Redis' place: each limit shared out among
 * RLaaSLocalDivisor servers. */
extern const rlaas_engine_t rlaas_engine_local_shared;

/* The engine of the server s. */
const rlaas_engine_t *rlaas_engine_of(const server_rec *s);

/* "kind: detail", or kind alone, for a log line. */
const char *rlaas_engine_why(apr_pool_t *p, const rlaas_engine_fault_t *f);

#endif
