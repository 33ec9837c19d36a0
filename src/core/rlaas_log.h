/*
 * Rate-limited log lines: a burst of denials or Redis errors must not
 * flood the error log. A gate lets one line through per interval and
 * counts the ones it held back, so the next line can say how many.
 * APR atomics only, no httpd headers; one gate is shared by all threads
 * of a child.
 */
#ifndef RLAAS_LOG_H
#define RLAAS_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "apr_atomic.h"

typedef struct {
    volatile apr_uint32_t next_sec; /* first second a line may pass */
    volatile apr_uint32_t suppressed;
} rlaas_log_gate_t;

/* now: rlaas_clock_us(), the monotonic clock (a wall clock stepped back
 * would keep the log silent for the size of the step). Returns -1 if the
 * line is to be dropped, else how many lines were dropped since the last
 * one that passed. */
long rlaas_log_gate_pass(rlaas_log_gate_t *g, int64_t now_us,
                         unsigned interval_s);

/* Room for what rlaas_log_suppressed writes. */
#define RLAAS_LOG_SUPPRESSED_MAX 48

/* " (N similar lines suppressed)", written into buf, to end a line that
 * passed after dropped others; "" when none was dropped. */
const char *rlaas_log_suppressed(char *buf, size_t size, long dropped);

#endif
