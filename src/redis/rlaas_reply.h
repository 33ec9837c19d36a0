/*
 * Reading a script's reply. A strategy's script answers {allowed,
 * remaining, reset_ms, retry_ms}, the multi script four such integers per
 * policy; this turns that into verdicts and refuses anything else, so a
 * stray reply (wrong script, proxy, fuzzed bytes) becomes an error and
 * never a decision. No httpd headers.
 *
 * The reply is parsed by hiredis' own reader, but with object functions
 * that write what the verdict needs into a sink instead of building a tree
 * of reply objects: no allocation and no freeing per request. Set
 * reader->fn to &rlaas_reply_sink_fns and reader->privdata to a sink; each
 * reply the reader then returns (as a pointer to the sink) has filled it.
 */
#ifndef RLAAS_REPLY_H
#define RLAAS_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "rlaas_verdict.h"

/* Upper bound for times in a reply: the scripts accept windows up to 2^35
 * ms, and a reset can reach twice the window plus a clock step back. */
#define RLAAS_REPLY_MS_MAX (1LL << 37)

/* Room kept for an error reply's text (longer ones are cut). */
#define RLAAS_REPLY_ERR_MAX 160

/* Integers of the longest reply: a lease's, 16 per policy (four
 * verdicts), eight policies. */
#define RLAAS_REPLY_INTS_MAX 128

/* What one reply carried, as far as the verdicts need it. */
typedef struct {
    int type;           /* REDIS_REPLY_* of the reply; 0: none read */
    long long elements; /* of an array reply */
    int bad;            /* an element that is not a plain integer */
    long long v[RLAAS_REPLY_INTS_MAX]; /* the first elements */
    size_t err_len;
    char err[RLAAS_REPLY_ERR_MAX]; /* an error reply's text, NUL-ended */
} rlaas_reply_sink_t;

extern redisReplyObjectFunctions rlaas_reply_sink_fns;

/* Readies a sink for the next reply. */
void rlaas_reply_sink_reset(rlaas_reply_sink_t *s);

typedef enum {
    RLAAS_REPLY_OK = 0,
    RLAAS_REPLY_NOSCRIPT, /* script not cached: load it and retry */
    RLAAS_REPLY_ERROR,    /* an error reply from Redis (text in s->err) */
    RLAAS_REPLY_BAD       /* anything that is not the agreed shape */
} rlaas_reply_status_e;

/* The reply of a call of one policy. */
rlaas_reply_status_e rlaas_reply_verdict(const rlaas_reply_sink_t *s,
                                         rlaas_verdict_t *v);

/* The reply of a call of n policies (1..8): exactly 4n integers, each
 * four a verdict as above; v has room for n. */
rlaas_reply_status_e rlaas_reply_verdicts(const rlaas_reply_sink_t *s, int n,
                                          rlaas_verdict_t *v);

/* Whom an error reply is about. Redis starts an error with a code in
 * capitals; Redis 7 keeps it first when a command inside a script fails
 * and appends " script: <sha>, on @user_script:<line>.", Redis 5 and 6
 * wrap it: "ERR Error running script (...): @user_script:<line>: -CODE
 * ...". Both are read. */
typedef enum {
    /* this call alone: its key (WRONGTYPE), its arguments, the script's
     * own error; the server is fine and the connection too */
    RLAAS_ERRC_CALL = 0,
    /* the server can't serve now (OOM, BUSY, NOAUTH, MISCONF, ...): a
     * Redis failure, and the connection is not to be trusted */
    RLAAS_ERRC_SERVER,
    /* this server is no longer (or not yet) the master (READONLY,
     * MASTERDOWN, LOADING): every connection to it is to be made again,
     * to wherever the address now leads */
    RLAAS_ERRC_FAILOVER
} rlaas_errc_e;

rlaas_errc_e rlaas_reply_error_class(const char *err, size_t len);

/* Redis Cluster's "MOVED 3999 127.0.0.1:6381" or "ASK 3999 [::1]:6381":
 * 1 (MOVED) or 2 (ASK) with the slot and "host:port" (NUL-terminated, at
 * most size - 1 bytes); 0 for any other error or a malformed one. */
int rlaas_reply_redirect(const char *err, size_t len, int *slot, char *to,
                         size_t size);

#endif
