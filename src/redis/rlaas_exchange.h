/*
 * The calls of one group on one connection: every EVALSHA in one write,
 * their replies in one read each, Redis' errors sorted by whom they are
 * about, and the scripts Redis didn't know loaded and those calls (and
 * only those: they did not run) sent again once. A call that was written
 * is never sent again otherwise: a lost reply fails its request.
 * No httpd headers.
 */
#ifndef RLAAS_EXCHANGE_H
#define RLAAS_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_conn.h"
#include "rlaas_parse.h"
#include "rlaas_reply.h"
#include "rlaas_rerr.h"
#include "rlaas_verdict.h"

/* One decision: the script of a strategy on one complete key. */
typedef struct {
    rlaas_strategy_e strategy;
    const char *key;
    size_t key_len;
    const char *limit;  /* decimal */
    const char *window; /* decimal milliseconds */
    /* Redis Cluster: ASKING goes first (the key's slot is being imported
     * by this node) */
    int asking;
    /* Redis Cluster, fixed: the key ends in the window number the module
     * reckoned (a declared key, so that a slot being moved moves it too);
     * it starts at this offset. 0: none. */
    size_t window_at;
} rlaas_call_t;

/* Longest key a call may carry. */
#ifndef RLAAS_CALL_KEY_MAX
#define RLAAS_CALL_KEY_MAX 4096
#endif

/* Where Redis Cluster sent a call instead of running it. */
typedef enum {
    RLAAS_REDIRECT_NONE = 0,
    RLAAS_REDIRECT_MOVED = 1, /* the slot lives there now */
    RLAAS_REDIRECT_ASK = 2    /* this once, there (the slot is moving) */
} rlaas_redirect_e;

#define RLAAS_HOSTPORT_MAX 72

/* One request's call and its outcome. */
typedef struct {
    const rlaas_call_t *call;
    rlaas_verdict_t *v;
    rlaas_rerr_e e;
    int noscript;
    char detail[RLAAS_DETAIL_MAX];
    rlaas_redirect_e redirect;            /* and to where: */
    char redirect_to[RLAAS_HOSTPORT_MAX]; /* "host:port" */
    int redirect_slot;
    long long window;   /* the window the script reckoned, when it is not
                           the one in the key; else -1 */
    rlaas_call_t again; /* the call sent again for that window */
    char again_key[RLAAS_CALL_KEY_MAX + 24];
} rlaas_job_t;

/* What the group tells about Redis itself. */
typedef struct {
    rlaas_rerr_e e;     /* a failure of Redis (NONE: Redis served) */
    rlaas_errc_e errc;  /* the gravest error reply */
    int64_t latency_us; /* from the write to the last reply */
    int loaded[RLAAS_STRATEGY_COUNT]; /* SCRIPT LOAD: 1 done, -1 failed */
    char cause[RLAAS_DETAIL_MAX];     /* what failed, in Redis' words */
} rlaas_outcome_t;

/* Runs jobs[0..n) on c, an open connection, by the deadline. Every job
 * gets its result; c is closed when it can't be trusted any more. */
void rlaas_exchange(rlaas_conn_t *c, rlaas_job_t **jobs, int n,
                    int64_t deadline, rlaas_outcome_t *out);

#endif
