#include "rlaas_scan.h"

#include <stdio.h>
#include <string.h>

#include "apr_strings.h"

#include "rlaas_conn.h"

#define SCAN_ROUNDS 32     /* SCAN calls per node at most */
#define SCAN_COUNT  "1000" /* keys looked at per call */

typedef struct {
    const char *pattern;
    int left; /* keys still wanted */
    rlaas_scan_fn fn;
    void *baton;
    int stop; /* fn said so, or left reached 0 */
} scan_t;

static void literal(char **o, const char *s)
{
    for (; *s; s++) {
        if (strchr("*?[]\\", *s))
            *(*o)++ = '\\';
        *(*o)++ = *s;
    }
}

void rlaas_scan_pattern(char *out, const char *prefix, const char *suffix)
{
    char *o = out;

    literal(&o, prefix);
    *o++ = '*';
    literal(&o, suffix);
    *o = '\0';
}

/* SCAN answers [cursor, [key...]], all strings; anything else (a proxy in
 * between, a future Redis) is refused, never dereferenced. */
static int scan_reply_ok(const redisReply *rep)
{
    size_t i;

    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_ARRAY)
        return 0;
    for (i = 0; i < rep->element[1]->elements; i++)
        if (rep->element[1]->element[i]->type != REDIS_REPLY_STRING)
            return 0;
    return 1;
}

static rlaas_rerr_e server_error(const redisReply *rep, const char *what,
                                 char *detail)
{
    snprintf(detail, RLAAS_DETAIL_MAX, "%s: %.140s", what,
             rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
    return RLAAS_RERR_REPLY;
}

/* An error reply to GET that leaves the key out rather than failing the
 * list: another type, or (Cluster) a key that is another node's now. */
static int skipped(const redisReply *v)
{
    static const char *const codes[] = {"WRONGTYPE", "MOVED ", "ASK ",
                                        "TRYAGAIN"};
    size_t i;

    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strncmp(v->str, codes[i], strlen(codes[i])) == 0)
            return 1;
    return 0;
}

/* The values of the keys one SCAN found: their GETs in one write, the
 * replies read in turn (one round trip: the pooled connection is held
 * as briefly as can be). */
static rlaas_rerr_e values(scan_t *s, rlaas_conn_t *c, const redisReply *keys,
                           int64_t deadline, char *detail)
{
    size_t i, n = keys->elements;
    rlaas_rerr_e e = RLAAS_RERR_NONE;

    if (n > (size_t)s->left)
        n = (size_t)s->left;
    for (i = 0; i < n; i++)
        if (redisAppendCommand(c->ctx, "GET %b", keys->element[i]->str,
                               (size_t)keys->element[i]->len) != REDIS_OK) {
            apr_cpystrn(detail, "out of memory", RLAAS_DETAIL_MAX);
            return RLAAS_RERR_IO;
        }
    if (n > 0 && (e = rlaas_conn_flush(c, deadline, detail)) != RLAAS_RERR_NONE)
        return e;
    /* every reply is read, even once fn said stop: the connection goes
     * back to the pool with nothing pending */
    for (i = 0; i < n; i++) {
        const redisReply *k = keys->element[i];
        redisReply *v = NULL;

        if ((e = rlaas_conn_read(c, deadline, (void **)&v, detail)) !=
            RLAAS_RERR_NONE)
            return e;
        if (v->type == REDIS_REPLY_ERROR && !skipped(v)) {
            e = server_error(v, "GET", detail);
            freeReplyObject(v);
            return e;
        }
        if (!s->stop && v->type == REDIS_REPLY_STRING) {
            s->left--;
            s->stop = !s->fn(s->baton, k->str, k->len, v->str, v->len);
        }
        freeReplyObject(v);
    }
    return RLAAS_RERR_NONE;
}

static rlaas_rerr_e scan_node(void *baton, rlaas_conn_t *c, int64_t deadline,
                              char *detail, int *stop)
{
    scan_t *s = baton;
    char cursor[32] = "0";
    rlaas_rerr_e e = RLAAS_RERR_NONE;
    int round;

    for (round = 0; round < SCAN_ROUNDS && !s->stop; round++) {
        redisReply *rep =
            rlaas_conn_command(c, deadline, detail, "SCAN %s MATCH %s COUNT %s",
                               cursor, s->pattern, SCAN_COUNT);

        if (rep == NULL)
            return RLAAS_RERR_IO;
        if (!scan_reply_ok(rep) ||
            rep->element[0]->len >= (size_t)sizeof(cursor)) {
            e = server_error(rep, "SCAN", detail);
            freeReplyObject(rep);
            return e;
        }
        memcpy(cursor, rep->element[0]->str, rep->element[0]->len + 1);
        e = values(s, c, rep->element[1], deadline, detail);
        freeReplyObject(rep);
        s->stop = s->stop || s->left <= 0;
        if (e != RLAAS_RERR_NONE || strcmp(cursor, "0") == 0)
            break;
    }
    *stop = s->stop;
    return e;
}

rlaas_rerr_e rlaas_scan(rlaas_redis_t *rd, const char *pattern, int max,
                        int64_t deadline, rlaas_scan_fn fn, void *baton,
                        char *detail)
{
    scan_t s = {pattern, max, fn, baton, max < 1};
    int stop = s.stop;

    return rlaas_redis_each_node(rd, deadline, scan_node, &s, detail, &stop);
}
