/*
 * Redis access: one connection pool per Redis target in each child process
 * (an apr_reslist, as mod_dbd keeps database connections), and the script
 * call that turns a key into a verdict.
 *
 * No lock is held while talking to Redis: the reslist's own mutex guards
 * only taking and returning a connection, so threads of one child run
 * their calls in parallel on separate connections.
 */
#ifndef RLAAS_REDIS_H
#define RLAAS_REDIS_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_reply.h"

typedef enum {
    RLAAS_RERR_NONE = 0,
    RLAAS_RERR_POOL,    /* no free connection within the timeout */
    RLAAS_RERR_CONNECT, /* could not connect */
    RLAAS_RERR_AUTH,    /* AUTH refused */
    RLAAS_RERR_SELECT,  /* SELECT refused: no such database */
    RLAAS_RERR_TIMEOUT, /* no reply within the timeout */
    RLAAS_RERR_IO,      /* connection lost or protocol error */
    RLAAS_RERR_REPLY,   /* an error reply, or a reply of the wrong shape */
    RLAAS_RERR_CIRCUIT, /* not tried: the circuit breaker is open */
    RLAAS_RERR_COUNT
} rlaas_rerr_e;

const char *rlaas_rerr_name(rlaas_rerr_e e);

/* Creates the pools of every target in this child; connections open
 * lazily, on first use. */
void rlaas_redis_child_init(apr_pool_t *pchild, server_rec *s);

/* Default pool size: the MPM's threads per child. */
int rlaas_redis_default_pool_max(void);

typedef struct {
    rlaas_strategy_e strategy;
    const char *key;
    size_t key_len;
    const char *limit;  /* decimal */
    const char *window; /* decimal milliseconds */
} rlaas_call_t;

/* Runs the strategy script for one request, within the target's timeout.
 * On error, *detail says what happened (never containing secrets). */
rlaas_rerr_e rlaas_redis_eval(request_rec *r, rlaas_target_t *t,
                              const rlaas_call_t *call, rlaas_verdict_t *v,
                              const char **detail);

#endif
