/* The console's actions and its list of bans, against the backend of the
 * request's server: Redis (one connection of its own per console request,
 * opened and closed here, never one of the request path's pool) or the
 * local engine's table. */
#include "rlaas_admin_impl.h"

#include "http_log.h"
#include "apr_network_io.h"
#include "apr_strings.h"

#include "rlaas_admin_zones.h"
#include "rlaas_backend.h"
#include "rlaas_calendar.h"
#include "rlaas_clock.h"
#include "rlaas_config.h"
#include "rlaas_conn.h"
#include "rlaas_local.h"
#include "rlaas_redis.h"
#include "rlaas_rerr.h"
#include "rlaas_scripts.h"

APLOG_USE_MODULE(rlaas);

#define ADMIN_BUDGET_MS 2000
#define BANS_MAX        100 /* bans listed at most */
#define SCAN_ROUNDS     32  /* SCAN calls at most */
#define SCAN_COUNT      "1000"

typedef struct {
    rlaas_conn_t c;
    int64_t deadline;
    char detail[RLAAS_DETAIL_MAX];
} admin_redis_t;

static apr_status_t close_conn(void *data)
{
    rlaas_conn_close(&((admin_redis_t *)data)->c);
    return APR_SUCCESS;
}

/* A connection to the server's Redis, closed with the request; NULL and
 * *why, or *why NULL and a 501 when the setup is one the console can't
 * reach yet. */
static admin_redis_t *redis_open(request_rec *r, const char **why, int *status)
{
    const rlaas_target_t *t = rlaas_server_conf(r->server)->target;
    admin_redis_t *a = apr_pcalloc(r->pool, sizeof(*a));
    rlaas_conn_params_t cp;
    apr_sockaddr_t *sa;
    char *ip;
    int timeout = rlaas_target_timeout_ms(t);

    *status = HTTP_SERVICE_UNAVAILABLE;
    if (t->tls == 1 || t->sentinel_n > 0 || t->cluster_n > 0) {
        *status = HTTP_NOT_IMPLEMENTED;
        *why = "the console reaches a plain Redis (RLaaSRedis host:port or a "
               "socket) only, not yet one behind TLS, Sentinel or Cluster";
        return NULL;
    }
    memset(&cp, 0, sizeof(cp));
    if (t->is_unix) {
        cp.addr = t->host;
        cp.port = 0;
    }
    else {
        const char *host = t->host ? t->host : RLAAS_DEFAULT_HOST;
        int port = t->port > 0 ? t->port : RLAAS_DEFAULT_PORT;

        if (apr_sockaddr_info_get(&sa, host, APR_UNSPEC, (apr_port_t)port, 0,
                                  r->pool) != APR_SUCCESS ||
            apr_sockaddr_ip_get(&ip, sa) != APR_SUCCESS) {
            *why = apr_psprintf(r->pool, "cannot resolve %s", host);
            return NULL;
        }
        cp.addr = ip;
        cp.port = port;
    }
    cp.username = t->username;
    cp.password = t->password;
    cp.database = t->database > 0 ? t->database : 0;
    cp.client_name = RLAAS_REDIS_CLIENT_NAME "-console";
    a->deadline =
        rlaas_clock_us() +
        (int64_t)(timeout > ADMIN_BUDGET_MS ? timeout : ADMIN_BUDGET_MS) * 1000;
    if (rlaas_conn_open(&a->c, &cp, a->deadline, a->detail) !=
        RLAAS_RERR_NONE) {
        *why = apr_psprintf(r->pool, "Redis: %s", a->detail);
        return NULL;
    }
    apr_pool_cleanup_register(r->pool, a, close_conn, apr_pool_cleanup_null);
    return a;
}

/* Sends n commands (argv arrays), reads n replies into rep[]; NULL, or
 * why not (the replies read so far are freed). */
static const char *run(request_rec *r, admin_redis_t *a, int n,
                       const apr_array_header_t *const *cmds, redisReply **rep)
{
    int i, j;

    for (i = 0; i < n; i++) {
        const char **argv = (const char **)cmds[i]->elts;
        size_t *lens = apr_palloc(r->pool, sizeof(size_t) * cmds[i]->nelts);

        for (j = 0; j < cmds[i]->nelts; j++)
            lens[j] = strlen(argv[j]);
        if (redisAppendCommandArgv(a->c.ctx, cmds[i]->nelts, argv, lens) !=
            REDIS_OK)
            return "out of memory";
    }
    if (rlaas_conn_flush(&a->c, a->deadline, a->detail) != RLAAS_RERR_NONE)
        return apr_psprintf(r->pool, "Redis: %s", a->detail);
    for (i = 0; i < n; i++) {
        rep[i] = NULL;
        if (rlaas_conn_read(&a->c, a->deadline, (void **)&rep[i], a->detail) !=
            RLAAS_RERR_NONE) {
            for (j = 0; j < i; j++)
                freeReplyObject(rep[j]);
            return apr_psprintf(r->pool, "Redis: %s", a->detail);
        }
    }
    return NULL;
}

static apr_array_header_t *argv_of(apr_pool_t *p, const char *cmd)
{
    apr_array_header_t *a = apr_array_make(p, 8, sizeof(const char *));

    APR_ARRAY_PUSH(a, const char *) = cmd;
    return a;
}

/* ---- keys of the identity ---- */

static const char *keys_of(request_rec *r, const apr_array_header_t *zs,
                           const char *id, int what, apr_array_header_t *keys,
                           apr_array_header_t *bases)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    int64_t now_ms = apr_time_as_msec(apr_time_now());
    const char *err, *first = NULL, *base;
    int i;

    for (i = 0; i < zs->nelts; i++) {
        const rlaas_admin_zone_t *z =
            APR_ARRAY_IDX(zs, i, const rlaas_admin_zone_t *);

        err = rlaas_admin_keys(r->pool, sc, z, id, what, now_ms, keys, &base);
        if (err != NULL) {
            /* one name keyed several ways: the id fits some of them */
            first = first ? first : err;
            if (bases != NULL)
                return err; /* credit: all or nothing */
            continue;
        }
        if (bases != NULL)
            APR_ARRAY_PUSH(bases, const char *) = base;
    }
    return keys->nelts > 0 ? NULL : first;
}

/* Deletes keys: Redis DEL, or the local table's records. */
static void delete_keys(request_rec *r, const apr_array_header_t *keys,
                        rlaas_admin_result_t *res)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    const char *why;
    int i, status;

    res->keys = apr_array_make(r->pool, keys->nelts, sizeof(const char *));
    if (rlaas_server_local(sc)) {
        for (i = 0; i < keys->nelts; i++) {
            const char *k = APR_ARRAY_IDX(keys, i, const char *);
            int found = 0;
            rlaas_lerr_e e = rlaas_backend_forget(k, &found);

            if (e != RLAAS_LERR_NONE) {
                res->status = HTTP_SERVICE_UNAVAILABLE;
                res->message = apr_psprintf(r->pool, "the local engine: %s",
                                            rlaas_lerr_name(e));
                return;
            }
            if (found) {
                APR_ARRAY_PUSH(res->keys, const char *) = k;
                res->changed++;
            }
        }
        return;
    }
    {
        admin_redis_t *a = redis_open(r, &why, &status);
        apr_array_header_t *cmd;
        const apr_array_header_t *cmds[1];
        redisReply *rep;

        if (a == NULL) {
            res->status = status;
            res->message = why;
            return;
        }
        /* one EXISTS per key tells which were there, then one DEL */
        for (i = 0; i < keys->nelts; i++) {
            cmd = argv_of(r->pool, "DEL");
            APR_ARRAY_PUSH(cmd, const char *) =
                APR_ARRAY_IDX(keys, i, const char *);
            cmds[0] = cmd;
            if ((why = run(r, a, 1, cmds, &rep)) != NULL) {
                res->status = HTTP_SERVICE_UNAVAILABLE;
                res->message = why;
                return;
            }
            if (rep->type == REDIS_REPLY_INTEGER && rep->integer > 0) {
                APR_ARRAY_PUSH(res->keys, const char *) =
                    APR_ARRAY_IDX(keys, i, const char *);
                res->changed++;
            }
            else if (rep->type == REDIS_REPLY_ERROR) {
                res->status = HTTP_BAD_GATEWAY;
                res->message = apr_psprintf(r->pool, "Redis: %s", rep->str);
                freeReplyObject(rep);
                return;
            }
            freeReplyObject(rep);
        }
    }
}

/* The credit of units to one zone's state (lua/credit.lua's, as
 * RLaaSCountIf's refunds give): the newest units, as if charged now; on
 * Redis by the console's connection, or the local engine's table. */
static const char *credit_one(request_rec *r, admin_redis_t *a,
                              const rlaas_admin_zone_t *z, const char *key,
                              int64_t units, int64_t *given)
{
    const rlaas_script_t *sc = &rlaas_scripts[RLAAS_SCRIPT_CREDIT];
    apr_array_header_t *cmd;
    const apr_array_header_t *cmds[1];
    rlaas_local_call_t lc;
    const rlaas_cal_table_t *periods = NULL;
    const char *window = NULL;
    redisReply *rep;
    const char *why;
    rlaas_lerr_e e;

    /* a calendar's periods around now: the credit goes to now's */
    if (z->cal != NULL)
        periods = rlaas_calendar_table(
            r->pool, z->cal, z->tz, apr_time_as_msec(apr_time_now()), &window);
    if (a == NULL) {
        memset(&lc, 0, sizeof(lc));
        lc.strategy = z->strategy;
        lc.key = key;
        lc.key_len = strlen(key);
        lc.limit = z->limit;
        lc.window_ms =
            periods != NULL ? periods->b[2] - periods->b[1] : z->window_ms;
        lc.cal = periods;
        lc.cost = units;
        e = rlaas_backend_credit(r, &lc, 1, 0, given);
        return e == RLAAS_LERR_NONE
                   ? NULL
                   : apr_psprintf(r->pool, "the local engine: %s",
                                  rlaas_lerr_name(e));
    }
    cmd = argv_of(r->pool, "EVAL");
    APR_ARRAY_PUSH(cmd, const char *) =
        apr_pstrmemdup(r->pool, sc->body, sc->len);
    APR_ARRAY_PUSH(cmd, const char *) = "1";
    APR_ARRAY_PUSH(cmd, const char *) = key;
    APR_ARRAY_PUSH(cmd, const char *) =
        apr_psprintf(r->pool, "%d", (int)z->strategy);
    APR_ARRAY_PUSH(cmd, const char *) =
        apr_psprintf(r->pool, "%" APR_INT64_T_FMT, z->limit);
    APR_ARRAY_PUSH(cmd, const char *) =
        window != NULL
            ? window
            : apr_psprintf(r->pool, "%" APR_INT64_T_FMT, z->window_ms);
    APR_ARRAY_PUSH(cmd, const char *) =
        apr_psprintf(r->pool, "%" APR_INT64_T_FMT, units);
    APR_ARRAY_PUSH(cmd, const char *) = "0"; /* mode */
    APR_ARRAY_PUSH(cmd, const char *) = "0"; /* age: now */
    cmds[0] = cmd;
    if ((why = run(r, a, 1, cmds, &rep)) != NULL)
        return why;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 4 &&
        rep->element[1]->type == REDIS_REPLY_INTEGER)
        *given = rep->element[1]->integer;
    else
        why = apr_psprintf(r->pool, "Redis: %s",
                           rep->type == REDIS_REPLY_ERROR ? rep->str
                                                          : "unexpected reply");
    freeReplyObject(rep);
    return why;
}

static void credit(request_rec *r, const apr_array_header_t *zs, const char *id,
                   int64_t units, rlaas_admin_result_t *res)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    apr_array_header_t *keys = apr_array_make(r->pool, 4, sizeof(char *));
    apr_array_header_t *bases = apr_array_make(r->pool, 4, sizeof(char *));
    admin_redis_t *a = NULL;
    const char *why;
    int64_t given;
    int i, status;

    for (i = 0; i < zs->nelts; i++) {
        const rlaas_admin_zone_t *z =
            APR_ARRAY_IDX(zs, i, const rlaas_admin_zone_t *);

        if (z->limit < 1) {
            res->status = HTTP_NOT_IMPLEMENTED;
            res->message = apr_psprintf(
                r->pool,
                "credit is not available for zone %s: its limit is read "
                "per request; use reset to forget the identity's state",
                z->name);
            return;
        }
    }
    if ((why = keys_of(r, zs, id, RLAAS_ADMIN_KEYS_STATE, keys, bases))) {
        res->status = HTTP_BAD_REQUEST;
        res->message = why;
        return;
    }
    if (!rlaas_server_local(sc) && (a = redis_open(r, &why, &status)) == NULL) {
        res->status = status;
        res->message = why;
        return;
    }
    res->keys = apr_array_make(r->pool, 2, sizeof(const char *));
    for (i = 0; i < zs->nelts; i++) {
        const rlaas_admin_zone_t *z =
            APR_ARRAY_IDX(zs, i, const rlaas_admin_zone_t *);
        /* a zone counting bytes: n is bytes, its count in units of
         * bytes_unit (1 KiB above 10^9 bytes): whole units, never more */
        int64_t unit = z->bytes_unit > 0 ? z->bytes_unit : 1;

        given = 0;
        why = units / unit > 0
                  ? credit_one(r, a, z, APR_ARRAY_IDX(bases, i, char *),
                               units / unit, &given)
                  : NULL;
        if (why != NULL) {
            res->status = HTTP_SERVICE_UNAVAILABLE;
            res->message = why;
            return;
        }
        res->changed += given * unit;
        if (given > 0)
            APR_ARRAY_PUSH(res->keys, const char *) =
                APR_ARRAY_IDX(bases, i, char *);
    }
    res->message = apr_psprintf(
        r->pool, "%" APR_INT64_T_FMT " of %" APR_INT64_T_FMT " %s given back",
        res->changed, units,
        APR_ARRAY_IDX(zs, 0, const rlaas_admin_zone_t *)->bytes_unit > 0
            ? "bytes"
            : "units");
}

void rlaas_admin_act(request_rec *r, const char *action, const char *zone,
                     const char *id, const char *n, rlaas_admin_result_t *res)
{
    apr_array_header_t *zs, *keys;
    int what = RLAAS_ADMIN_KEYS_STATE;
    const char *why;
    int64_t units = 0;

    memset(res, 0, sizeof(*res));
    res->status = HTTP_OK;
    res->action = action;
    res->zone = zone;
    if (action == NULL ||
        (strcmp(action, "reset") != 0 && strcmp(action, "credit") != 0 &&
         strcmp(action, "unban") != 0)) {
        res->status = HTTP_BAD_REQUEST;
        res->message = "action must be reset, credit or unban";
        return;
    }
    if (zone == NULL || *zone == '\0' || id == NULL || *id == '\0') {
        res->status = HTTP_BAD_REQUEST;
        res->message = "zone and id are needed";
        return;
    }
    zs = rlaas_admin_zones_named(r->pool, r->server, zone);
    if (zs->nelts == 0) {
        res->status = HTTP_NOT_FOUND;
        res->message = "no zone or policy of that name in this server's "
                       "configuration";
        return;
    }
    if (strcmp(action, "credit") == 0) {
        /* a zone counting bytes takes n in bytes: up to its limit's
         * largest, at least one of its units */
        const rlaas_admin_zone_t *z0 =
            APR_ARRAY_IDX(zs, 0, const rlaas_admin_zone_t *);
        int64_t unit = z0->bytes_unit > 0 ? z0->bytes_unit : 1;

        if (n == NULL ||
            rlaas_parse_nonneg_int(n, RLAAS_LIMIT_MAX * unit, &units) ||
            units < unit) {
            res->status = HTTP_BAD_REQUEST;
            res->message =
                z0->bytes_unit <= 0
                    ? "credit needs n, a whole number of units from 1"
                    : apr_psprintf(r->pool,
                                   "credit needs n, a whole number of bytes "
                                   "from %" APR_INT64_T_FMT
                                   " (one unit of zone %s)",
                                   unit, z0->name);
            return;
        }
        credit(r, zs, id, units, res);
        return;
    }
    if (strcmp(action, "unban") == 0)
        what = RLAAS_ADMIN_KEYS_BAN;
    keys = apr_array_make(r->pool, 4, sizeof(const char *));
    if ((why = keys_of(r, zs, id, what, keys, NULL)) != NULL) {
        res->status = HTTP_BAD_REQUEST;
        res->message = why;
        return;
    }
    delete_keys(r, keys, res);
    if (res->status == HTTP_OK)
        res->message = apr_psprintf(
            r->pool, "%" APR_INT64_T_FMT " %s deleted", res->changed,
            what == RLAAS_ADMIN_KEYS_BAN
                ? (res->changed == 1 ? "ban key" : "ban keys")
                : (res->changed == 1 ? "key" : "keys"));
}

/* ---- bans ---- */

/* SCAN's MATCH pattern for "<prefix>*:ban", the prefix taken literally. */
static const char *ban_pattern(apr_pool_t *p, const char *prefix)
{
    char *out = apr_palloc(p, strlen(prefix) * 2 + 8), *o = out;

    for (; *prefix; prefix++) {
        if (strchr("*?[]\\", *prefix))
            *o++ = '\\';
        *o++ = *prefix;
    }
    strcpy(o, "*:ban");
    return out;
}

/* SCAN answers [cursor, [key...]], all strings; anything else (a proxy
 * in between, a future Redis) is refused, never dereferenced. */
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

const char *rlaas_admin_bans(request_rec *r, apr_array_header_t *out)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    const char *why, *cursor = "0";
    const char *pattern = ban_pattern(r->pool, rlaas_server_prefix(sc));
    apr_array_header_t *found = apr_array_make(r->pool, 8, sizeof(char *));
    int64_t now_ms = apr_time_as_msec(apr_time_now());
    admin_redis_t *a;
    int round, i, status;

    if (rlaas_server_local(sc))
        return "the local engine keeps its bans in shared memory, not "
               "listed here; unban works";
    if ((a = redis_open(r, &why, &status)) == NULL)
        return why;
    for (round = 0; round < SCAN_ROUNDS && found->nelts < BANS_MAX; round++) {
        apr_array_header_t *cmd = argv_of(r->pool, "SCAN");
        const apr_array_header_t *cmds[1];
        redisReply *rep;

        APR_ARRAY_PUSH(cmd, const char *) = cursor;
        APR_ARRAY_PUSH(cmd, const char *) = "MATCH";
        APR_ARRAY_PUSH(cmd, const char *) = pattern;
        APR_ARRAY_PUSH(cmd, const char *) = "COUNT";
        APR_ARRAY_PUSH(cmd, const char *) = SCAN_COUNT;
        cmds[0] = cmd;
        if ((why = run(r, a, 1, cmds, &rep)) != NULL)
            return why;
        if (!scan_reply_ok(rep)) {
            freeReplyObject(rep);
            return "Redis: unexpected reply to SCAN";
        }
        cursor = apr_pstrdup(r->pool, rep->element[0]->str);
        for (i = 0;
             i < (int)rep->element[1]->elements && found->nelts < BANS_MAX;
             i++) {
            const char *k = rep->element[1]->element[i]->str;

            /* a virtual host's console: its own bans only */
            if (!r->server->is_virtual || rlaas_admin_zones_owns(r->server, k))
                APR_ARRAY_PUSH(found, char *) = apr_pstrdup(r->pool, k);
        }
        freeReplyObject(rep);
        if (strcmp(cursor, "0") == 0)
            break;
    }
    for (i = 0; i < found->nelts; i++) {
        apr_array_header_t *cmd = argv_of(r->pool, "GET");
        const apr_array_header_t *cmds[1];
        rlaas_admin_ban_t *b;
        redisReply *rep;
        char *end;

        APR_ARRAY_PUSH(cmd, const char *) = APR_ARRAY_IDX(found, i, char *);
        cmds[0] = cmd;
        if ((why = run(r, a, 1, cmds, &rep)) != NULL)
            return why;
        if (rep->type == REDIS_REPLY_STRING) {
            b = apr_array_push(out);
            b->key = APR_ARRAY_IDX(found, i, char *);
            b->until_ms = apr_strtoi64(rep->str, &end, 10);
            b->length_ms = *end == ':' ? apr_strtoi64(end + 1, &end, 10) : -1;
            if (*end != '\0' || b->length_ms < 0)
                b->until_ms = b->length_ms = -1;
            else if (b->until_ms < now_ms)
                out->nelts--; /* over: not an active ban */
        }
        freeReplyObject(rep);
    }
    return NULL;
}
