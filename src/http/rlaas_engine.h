/*
 * The engine that decides a server's requests, as one struct of
 * operations chosen once by the server's configuration (in the manner of
 * httpd's socache providers): the local engine's table in shared memory
 * (rlaas_backend.c) or the server's Redis target, whatever stands behind
 * it: one node, TLS, Sentinel or Cluster (rlaas_remote.c). The console
 * calls only these: none of them opens a connection of its own or looks
 * a name up; Redis is reached through the child's pool.
 */
#ifndef RLAAS_ENGINE_H
#define RLAAS_ENGINE_H

#include "httpd.h"

#include "rlaas_cal.h"
#include "rlaas_parse.h"

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

/* Each returns NULL, or why it could not (for the operator: no secret). */
typedef struct {
    const char *name; /* "local" or "redis", as the console shows it */
    /* the record of key forgotten: its identity starts afresh; *found
     * says whether there was one */
    const char *(*forget)(request_rec *r, const char *key, int *found);
    /* *given: the units given back (never below the fresh state) */
    const char *(*credit)(request_rec *r, const rlaas_engine_credit_t *c,
                          int64_t *given);
    /* the bans under prefix that hold now, at most max of them */
    const char *(*bans)(request_rec *r, const char *prefix, int max,
                        rlaas_engine_ban_fn fn, void *baton);
} rlaas_engine_t;

extern const rlaas_engine_t rlaas_engine_local;
extern const rlaas_engine_t rlaas_engine_redis;

/* The engine of the server s. */
const rlaas_engine_t *rlaas_engine_of(const server_rec *s);

#endif
