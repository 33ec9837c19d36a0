#include "rlaas_reply.h"

#include <string.h>

/* ---- the sink's object functions ----
 *
 * hiredis calls these for every value it parses, the reply itself first
 * (no parent), then its elements (the reply as parent), and so on down.
 * Each returns the sink: a non-NULL "object" is all the reader needs. */

static rlaas_reply_sink_t *sink_of(const redisReadTask *task)
{
    return task->privdata;
}

/* An element of the reply (not the reply itself, nor deeper). */
static int is_element(const redisReadTask *task)
{
    return task->parent != NULL && task->parent->parent == NULL;
}

static void *sink_string(const redisReadTask *task, char *str, size_t len)
{
    rlaas_reply_sink_t *s = sink_of(task);

    if (task->parent != NULL) {
        s->bad = 1;
        return s;
    }
    s->type = task->type;
    if (task->type == REDIS_REPLY_ERROR) {
        s->err_len = len < sizeof(s->err) ? len : sizeof(s->err) - 1;
        memcpy(s->err, str, s->err_len);
        s->err[s->err_len] = '\0';
    }
    return s;
}

static void *sink_array(const redisReadTask *task, int elements)
{
    rlaas_reply_sink_t *s = sink_of(task);

    if (task->parent != NULL) {
        s->bad = 1;
        return s;
    }
    s->type = REDIS_REPLY_ARRAY;
    s->elements = elements;
    return s;
}

static void *sink_integer(const redisReadTask *task, long long value)
{
    rlaas_reply_sink_t *s = sink_of(task);

    if (task->parent == NULL)
        s->type = REDIS_REPLY_INTEGER;
    else if (is_element(task) && task->idx >= 0 &&
             task->idx < RLAAS_REPLY_INTS_MAX)
        s->v[task->idx] = value;
    else if (!is_element(task))
        s->bad = 1;
    return s;
}

static void *sink_nil(const redisReadTask *task)
{
    rlaas_reply_sink_t *s = sink_of(task);

    if (task->parent == NULL)
        s->type = REDIS_REPLY_NIL;
    else
        s->bad = 1;
    return s;
}

static void sink_free(void *obj)
{
    (void)obj; /* the sink belongs to the caller */
}

redisReplyObjectFunctions rlaas_reply_sink_fns = {
    sink_string, sink_array, sink_integer, sink_nil, sink_free,
};

void rlaas_reply_sink_reset(rlaas_reply_sink_t *s)
{
    s->type = 0;
    s->elements = 0;
    s->bad = 0;
    s->err_len = 0;
    s->err[0] = '\0';
}

/* ---- the verdict ---- */

static int in(long long x, long long lo, long long hi)
{
    return x >= lo && x <= hi;
}

/* Four integers, each in its range, as a verdict. */
static int one_verdict(const long long *x, rlaas_verdict_t *v)
{
    if (!in(x[0], 0, 1) || !in(x[1], 0, INT64_MAX) ||
        !in(x[2], 0, RLAAS_REPLY_MS_MAX) || !in(x[3], 0, RLAAS_REPLY_MS_MAX))
        return 0;
    v->allowed = (int)x[0];
    v->remaining = x[1];
    v->reset_ms = x[2];
    v->retry_ms = x[3];
    return 1;
}

rlaas_reply_status_e rlaas_reply_verdicts(const rlaas_reply_sink_t *s, int n,
                                          rlaas_verdict_t *v)
{
    int i;

    if (s == NULL || n < 1 || 4 * n > RLAAS_REPLY_INTS_MAX)
        return RLAAS_REPLY_BAD;
    if (s->type == REDIS_REPLY_ERROR) {
        if (s->err_len >= 8 && strncmp(s->err, "NOSCRIPT", 8) == 0)
            return RLAAS_REPLY_NOSCRIPT;
        return RLAAS_REPLY_ERROR;
    }
    if (s->type != REDIS_REPLY_ARRAY || s->elements != 4 * n || s->bad)
        return RLAAS_REPLY_BAD;
    for (i = 0; i < n; i++) {
        if (!one_verdict(s->v + 4 * i, &v[i]))
            return RLAAS_REPLY_BAD;
    }
    return RLAAS_REPLY_OK;
}

rlaas_reply_status_e rlaas_reply_verdict(const rlaas_reply_sink_t *s,
                                         rlaas_verdict_t *v)
{
    return rlaas_reply_verdicts(s, 1, v);
}

/* ---- whom an error is about ---- */

/* The error code at text[0..len): capitals, up to a space or the end. */
static size_t code_len(const char *text, size_t len)
{
    size_t n = 0;

    while (n < len && text[n] >= 'A' && text[n] <= 'Z')
        n++;
    return n > 0 && (n == len || text[n] == ' ') ? n : 0;
}

/* The code Redis 5/6 wrap inside a script error: "ERR Error running
 * script (call to f_<sha>): @user_script:<n>: @user_script: <n>: -CODE
 * ...". Only the first ": -" counts: everything before it is Redis' own
 * fixed text, so no key or value can stand in for the code. */
static const char *wrapped_code(const char *err, size_t len, size_t *n)
{
    static const char head[] = "ERR Error running script";
    size_t i;

    if (len < sizeof(head) - 1 || memcmp(err, head, sizeof(head) - 1) != 0)
        return NULL;
    for (i = sizeof(head) - 1; i + 3 < len; i++) {
        if (err[i] == ':' && err[i + 1] == ' ' && err[i + 2] == '-') {
            *n = code_len(err + i + 3, len - i - 3);
            return *n > 0 ? err + i + 3 : NULL;
        }
    }
    return NULL;
}

static int is_code(const char *code, size_t n, const char *const *set)
{
    for (; *set != NULL; set++) {
        if (strlen(*set) == n && memcmp(code, *set, n) == 0)
            return 1;
    }
    return 0;
}

rlaas_errc_e rlaas_reply_error_class(const char *err, size_t len)
{
    static const char *const failover[] = {"READONLY", "MASTERDOWN", "LOADING",
                                           NULL};
    /* TRYAGAIN is about one call's keys (a slot half moved), not the
     * server: the call's alone, and the cluster client tries it again */
    static const char *const server[] = {"OOM",        "BUSY",        "NOAUTH",
                                         "NOPERM",     "MISCONF",
                                         "NOREPLICAS", "CLUSTERDOWN", NULL};
    const char *code = err;
    size_t n = code_len(err, len);

    if (n == 3 && memcmp(err, "ERR", 3) == 0) {
        size_t wn = 0;
        const char *w = wrapped_code(err, len, &wn);

        if (w != NULL) {
            code = w;
            n = wn;
        }
    }
    if (is_code(code, n, failover))
        return RLAAS_ERRC_FAILOVER;
    if (is_code(code, n, server))
        return RLAAS_ERRC_SERVER;
    return RLAAS_ERRC_CALL;
}

/* ---- Redis Cluster's redirections ---- */

int rlaas_reply_redirect(const char *err, size_t len, int *slot, char *to,
                         size_t size)
{
    const char *p, *end = err + len, *sp;
    int kind;
    long v = 0;
    size_t hl;

    if (len > 6 && memcmp(err, "MOVED ", 6) == 0) {
        kind = 1;
        p = err + 6;
    }
    else if (len > 4 && memcmp(err, "ASK ", 4) == 0) {
        kind = 2;
        p = err + 4;
    }
    else {
        return 0;
    }
    for (sp = p; sp < end && *sp >= '0' && *sp <= '9' && v <= 16383; sp++)
        v = v * 10 + (*sp - '0');
    if (sp == p || sp >= end || *sp != ' ' || v > 16383)
        return 0;
    hl = (size_t)(end - sp - 1);
    if (hl == 0 || hl >= size || memchr(sp + 1, ' ', hl) != NULL)
        return 0;
    memcpy(to, sp + 1, hl);
    to[hl] = '\0';
    *slot = (int)v;
    return kind;
}
