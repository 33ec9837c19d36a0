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
#include "rlaas_resp.h"
#include "rlaas_rerr.h"
#include "rlaas_scripts.h"
#include "rlaas_verdict.h"

/* Longest key a call may carry. */
#ifndef RLAAS_CALL_KEY_MAX
#define RLAAS_CALL_KEY_MAX 4096
#endif

/* Where Redis Cluster sent a call instead of running it. */
typedef enum {
    RLAAS_REDIRECT_NONE = 0,
    RLAAS_REDIRECT_MOVED = 1, /* the slot lives there now */
    RLAAS_REDIRECT_ASK = 2,   /* this once, there (the slot is moving) */
    /* TRYAGAIN: the call's keys are half moved (some here, some on the
     * slot's next node); nothing ran: here again, once the move went on */
    RLAAS_REDIRECT_AGAIN = 3
} rlaas_redirect_e;

#define RLAAS_HOSTPORT_MAX 72

/* One request's call (its policies, decided together: one strategy's
 * script for one, the multi script for several, the lease script for a
 * lease (rlaas_call_lease); with Redis Cluster, keys of one slot) and its
 * outcome. */
typedef struct {
    const rlaas_call_t *calls;
    int n;
    rlaas_verdict_t *v; /* n of them; 4 n for a lease */
    rlaas_rerr_e e;
    int noscript;
    char detail[RLAAS_DETAIL_MAX];
    rlaas_redirect_e redirect;            /* and to where: */
    char redirect_to[RLAAS_HOSTPORT_MAX]; /* "host:port" */
    int redirect_slot;
    /* Redis' time (ms), when a fixed call's declared window was not the
     * one Redis reckons; else -1 */
    long long window;
    /* the calls sent again for that time */
    rlaas_call_t again[RLAAS_CALL_POLICIES_MAX];
    char again_key[RLAAS_CALL_POLICIES_MAX][RLAAS_CALL_KEY_MAX + 24];
} rlaas_job_t;

/* The script a job runs. */
int rlaas_job_script(const rlaas_job_t *j);

/* What the group tells about Redis itself. */
typedef struct {
    rlaas_rerr_e e;     /* a failure of Redis (NONE: Redis served) */
    rlaas_errc_e errc;  /* the gravest error reply */
    int64_t latency_us; /* from the write to the last reply */
    int loaded[RLAAS_SCRIPT_COUNT]; /* SCRIPT LOAD: 1 done, -1 failed */
    char cause[RLAAS_DETAIL_MAX];   /* what failed, in Redis' words */
} rlaas_outcome_t;

/* Runs jobs[0..n) on c, an open connection, by the deadline. Every job
 * gets its result; c is closed when it can't be trusted any more. */
void rlaas_exchange(rlaas_conn_t *c, rlaas_job_t **jobs, int n,
                    int64_t deadline, rlaas_outcome_t *out);

#endif
