/*
 * Rate-limited log lines: a burst of denials or Redis errors must not
 * flood the error log. A gate lets one line through per interval and
 * counts the ones it held back, so the next line can say how many.
 * APR atomics only, no httpd headers; one gate is shared by all threads
 * of a child.
 */
#ifndef RLAAS_LOG_H
#define RLAAS_LOG_H

#include "apr_atomic.h"
#include "apr_time.h"

typedef struct {
    volatile apr_uint32_t next_sec; /* first second a line may pass */
    volatile apr_uint32_t suppressed;
} rlaas_log_gate_t;

/* Returns -1 if the line is to be dropped, else how many lines were
 * dropped since the last one that passed. */
long rlaas_log_gate_pass(rlaas_log_gate_t *g, apr_time_t now,
                         unsigned interval_s);

#endif
