/*
 * A decision as the request path sees it, whichever engine made it, and
 * the small conversions its signals need (decimal text, whole seconds).
 * No httpd headers.
 */
#ifndef RLAAS_VERDICT_H
#define RLAAS_VERDICT_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int allowed;
    int64_t remaining; /* requests still allowed after this one */
    int64_t reset_ms;  /* until the whole quota is back */
    int64_t retry_ms;  /* until a request can succeed; 0 if one can now */
} rlaas_verdict_t;

/* Whole seconds for Retry-After: rounded up, never below 1. */
int64_t rlaas_retry_after_s(int64_t retry_ms);

/* Whole seconds for header fields such as "t=": rounded up, may be 0. */
int64_t rlaas_ms_to_s_ceil(int64_t ms);

/* Writes the decimal digits of v (no NUL) and returns their number. */
size_t rlaas_fmt_i64(char *buf, int64_t v);
/* The same, written back from end (at most 20 bytes before it, no NUL);
 * returns where it starts: no count of the digits first. */
char *rlaas_fmt_i64_back(char *end, int64_t v);

#endif
