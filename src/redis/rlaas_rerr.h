/*
 * Why the remote engine could not decide. Shared by the engine's parts
 * and reported to the request path; no httpd headers.
 */
#ifndef RLAAS_RERR_H
#define RLAAS_RERR_H

typedef enum {
    RLAAS_RERR_NONE = 0,
    RLAAS_RERR_POOL,    /* no free connection (or turn) within the budget */
    RLAAS_RERR_CONNECT, /* could not connect */
    RLAAS_RERR_AUTH,    /* AUTH refused */
    RLAAS_RERR_SELECT,  /* SELECT refused: no such database */
    RLAAS_RERR_TIMEOUT, /* no reply within the budget */
    RLAAS_RERR_IO,      /* connection lost or protocol error */
    RLAAS_RERR_REPLY,   /* an error about this call, or a reply of the
                           wrong shape: this request alone */
    RLAAS_RERR_CIRCUIT, /* not tried: the circuit breaker is open */
    RLAAS_RERR_SERVER,  /* Redis refused to serve: READONLY, LOADING,
                           MASTERDOWN, OOM, BUSY, NOAUTH, ... */
    RLAAS_RERR_COUNT
} rlaas_rerr_e;

/* Metric label of each kind: "pool", "connect", ... */
const char *rlaas_rerr_name(rlaas_rerr_e e);

/* 1 for the failures of Redis itself, which the circuit breaker counts:
 * everything but an error about one call, and the breaker's own refusal. */
int rlaas_rerr_is_redis_failure(rlaas_rerr_e e);

/* Room for a failure's detail text (Redis' own words where it has any). */
#define RLAAS_DETAIL_MAX 160

#endif
