/*
 * Reading a strategy script's reply. Every script answers
 * {allowed, remaining, reset_ms, retry_ms}; this turns that into a verdict
 * and refuses anything else, so a stray reply (wrong script, proxy, fuzzed
 * bytes) becomes an error and never a decision. No httpd headers.
 */
#ifndef RLAAS_REPLY_H
#define RLAAS_REPLY_H

#include <stdint.h>

#include <hiredis/hiredis.h>

/* Upper bound for times in a reply: the scripts accept windows up to 2^35
 * ms, and a reset can reach twice the window plus a clock step back. */
#define RLAAS_REPLY_MS_MAX (1LL << 37)

typedef struct {
    int allowed;
    int64_t remaining; /* requests still allowed after this one */
    int64_t reset_ms;  /* until the whole quota is back */
    int64_t retry_ms;  /* until a request can succeed; 0 if one can now */
} rlaas_verdict_t;

typedef enum {
    RLAAS_REPLY_OK = 0,
    RLAAS_REPLY_NOSCRIPT, /* script not cached: load it and retry */
    RLAAS_REPLY_ERROR,    /* an error reply from Redis */
    RLAAS_REPLY_BAD       /* anything that is not the agreed shape */
} rlaas_reply_status_e;

rlaas_reply_status_e rlaas_reply_verdict(const redisReply *rep,
                                         rlaas_verdict_t *v);

/* Whole seconds for Retry-After: rounded up, never below 1. */
int64_t rlaas_retry_after_s(int64_t retry_ms);

/* Whole seconds for header fields such as "t=": rounded up, may be 0. */
int64_t rlaas_ms_to_s_ceil(int64_t ms);

#endif
