/* The console's actions and its list of bans, against the engine of the
 * request's server (rlaas_engine.h): the local engine's table, or its
 * Redis whatever stands behind it, reached through the child's pool. */
#include "rlaas_admin_impl.h"

#include "http_log.h"
#include "apr_hash.h"
#include "apr_strings.h"

#include "rlaas_admin_zones.h"
#include "rlaas_calendar.h"
#include "rlaas_config.h"
#include "rlaas_engine.h"

APLOG_USE_MODULE(rlaas);

#define BANS_MAX 100 /* bans listed at most */
/* records looked at for them at most: a virtual host lists its own */
#define BANS_LOOKED_AT (10 * BANS_MAX)

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

/* Forgets the keys' records; res counts those that were there. */
static void delete_keys(request_rec *r, const apr_array_header_t *keys,
                        rlaas_admin_result_t *res)
{
    const rlaas_engine_t *en = rlaas_engine_of(r->server);
    int i;

    res->keys = apr_array_make(r->pool, keys->nelts, sizeof(const char *));
    for (i = 0; i < keys->nelts; i++) {
        const char *k = APR_ARRAY_IDX(keys, i, const char *);
        int found = 0;
        const char *why = en->forget(r, k, &found);

        if (why != NULL) {
            res->status = HTTP_SERVICE_UNAVAILABLE;
            res->message = why;
            return;
        }
        if (found) {
            APR_ARRAY_PUSH(res->keys, const char *) = k;
            res->changed++;
        }
    }
}

/* The credit of units to one zone's state (lua/credit.lua's, as
 * RLaaSCountIf's refunds give): the newest units, as if charged now. */
static const char *credit_one(request_rec *r, const rlaas_admin_zone_t *z,
                              const char *key, int64_t units, int64_t *given)
{
    rlaas_engine_credit_t c;

    memset(&c, 0, sizeof(c));
    c.strategy = z->strategy;
    c.key = key;
    c.limit = z->limit;
    c.window_ms = z->window_ms;
    c.units = units;
    /* a calendar's periods around now: the credit goes to now's */
    if (z->cal != NULL)
        c.cal = rlaas_calendar_table(r->pool, z->cal, z->tz,
                                     apr_time_as_msec(apr_time_now()),
                                     &c.cal_window);
    return rlaas_engine_of(r->server)->credit(r, &c, given);
}

static void credit(request_rec *r, const apr_array_header_t *zs, const char *id,
                   int64_t units, rlaas_admin_result_t *res)
{
    apr_array_header_t *keys = apr_array_make(r->pool, 4, sizeof(char *));
    apr_array_header_t *bases = apr_array_make(r->pool, 4, sizeof(char *));
    const char *why;
    int64_t given;
    int i;

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
    res->keys = apr_array_make(r->pool, 2, sizeof(const char *));
    for (i = 0; i < zs->nelts; i++) {
        const rlaas_admin_zone_t *z =
            APR_ARRAY_IDX(zs, i, const rlaas_admin_zone_t *);
        /* a zone counting bytes: n is bytes, its count in units of
         * bytes_unit (1 KiB above 10^9 bytes): whole units, never more */
        int64_t unit = z->bytes_unit > 0 ? z->bytes_unit : 1;

        given = 0;
        why = units / unit > 0
                  ? credit_one(r, z, APR_ARRAY_IDX(bases, i, char *),
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

typedef struct {
    request_rec *r;
    apr_array_header_t *out;
    apr_hash_t *seen; /* a Cluster's node may answer for another's keys */
} bans_t;

static int ban_found(void *baton, const char *key, size_t klen,
                     int64_t until_ms, int64_t length_ms)
{
    bans_t *b = baton;
    rlaas_admin_ban_t *ban;
    char *k;

    k = apr_pstrmemdup(b->r->pool, key, klen);
    /* a virtual host's console: its own bans only */
    if ((b->r->server->is_virtual &&
         !rlaas_admin_zones_owns(b->r->server, k)) ||
        apr_hash_get(b->seen, k, (apr_ssize_t)klen) != NULL)
        return 1;
    apr_hash_set(b->seen, k, (apr_ssize_t)klen, k);
    ban = apr_array_push(b->out);
    ban->key = k;
    ban->until_ms = until_ms;
    ban->length_ms = length_ms;
    return b->out->nelts < BANS_MAX;
}

const char *rlaas_admin_bans(request_rec *r, apr_array_header_t *out)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    bans_t b = {r, out, apr_hash_make(r->pool)};

    return rlaas_engine_of(r->server)->bans(r, rlaas_server_prefix(sc),
                                            BANS_LOOKED_AT, ban_found, &b);
}
