/*
 * The one clock for every deadline, cool-down and log interval: the
 * monotonic clock, in microseconds. The wall clock can be stepped (NTP, an
 * operator, a VM resumed): a budget, a circuit breaker or a log gate that
 * read it would wait, stay open or stay silent for the size of the step.
 * Rate-limit arithmetic takes its time from Redis (TIME), never from here.
 * No httpd headers.
 */
#ifndef RLAAS_CLOCK_H
#define RLAAS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds on CLOCK_MONOTONIC (an arbitrary origin). */
int64_t rlaas_clock_us(void);

/* The instant at_us (of rlaas_clock_us) as an absolute CLOCK_MONOTONIC
 * timespec, for waits that take one (pthread_cond_timedwait with a
 * monotonic condition variable). */
void rlaas_clock_timespec(int64_t at_us, struct timespec *ts);

/* Microseconds from now until at_us; 0 when it has passed. */
int64_t rlaas_clock_left_us(int64_t at_us);

#endif
