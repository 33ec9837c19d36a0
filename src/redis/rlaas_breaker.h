/*
 * A circuit breaker, one per Redis target in each child: after a run of
 * consecutive Redis failures it opens, and requests get the fail-open
 * policy at once instead of each waiting for a time-out; after a cool-down
 * one request goes through as a probe, and its outcome closes or reopens
 * the circuit. APR atomics only (no lock, no httpd headers): all threads of
 * a child share it.
 */
#ifndef RLAAS_BREAKER_H
#define RLAAS_BREAKER_H

#include "apr_atomic.h"
#include "apr_time.h"

typedef enum {
    RLAAS_CIRCUIT_CLOSED = 0,
    RLAAS_CIRCUIT_OPEN,
    RLAAS_CIRCUIT_PROBING /* one probe in flight */
} rlaas_circuit_e;

typedef struct {
    volatile apr_uint32_t state;
    volatile apr_uint32_t failures; /* consecutive */
    volatile apr_uint64_t open_until;
    apr_uint32_t threshold; /* 0: never opens */
    apr_interval_time_t cooldown;
} rlaas_breaker_t;

/* What a call did to the circuit, for logs and metrics: each transition is
 * reported to exactly one caller. */
typedef enum {
    RLAAS_BREAKER_SAME = 0,
    RLAAS_BREAKER_OPENED,   /* closed -> open */
    RLAAS_BREAKER_REOPENED, /* probe failed */
    RLAAS_BREAKER_CLOSED    /* probe (or any call) succeeded */
} rlaas_breaker_event_e;

void rlaas_breaker_init(rlaas_breaker_t *b, unsigned threshold,
                        apr_interval_time_t cooldown);

/* 1 if this request may use Redis (circuit closed, or this request is the
 * probe); 0 if the circuit is open and it must not. */
int rlaas_breaker_allow(rlaas_breaker_t *b, apr_time_t now);

rlaas_breaker_event_e rlaas_breaker_success(rlaas_breaker_t *b);
rlaas_breaker_event_e rlaas_breaker_failure(rlaas_breaker_t *b, apr_time_t now);

int rlaas_breaker_is_open(rlaas_breaker_t *b);

/* 1 while a probe is in flight: its outcome is about to be known. */
int rlaas_breaker_probing(rlaas_breaker_t *b);

#endif
