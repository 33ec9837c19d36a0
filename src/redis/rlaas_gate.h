/*
 * A counting gate with a deadline: at most N holders at once, and a caller
 * that can't get in before its deadline gives up.
 *
 * It sits in front of a child's connection pool when threads can outnumber
 * connections. apr_reslist_acquire restarts its timeout each time a waiter
 * is woken and loses the connection to another thread, so under contention
 * a request could wait many timeouts; the gate bounds the whole wait by the
 * request's own budget. POSIX threads only, no httpd headers.
 */
#ifndef RLAAS_GATE_H
#define RLAAS_GATE_H

#include <stdint.h>

typedef struct rlaas_gate_t rlaas_gate_t;

/* NULL when out of memory or permits < 1. */
rlaas_gate_t *rlaas_gate_create(int permits);
void rlaas_gate_destroy(rlaas_gate_t *g);

/* 0 when in (call rlaas_gate_leave after), -1 if the deadline (of
 * rlaas_clock_us) passed first. */
int rlaas_gate_enter(rlaas_gate_t *g, int64_t deadline_us);
void rlaas_gate_leave(rlaas_gate_t *g);

#endif
