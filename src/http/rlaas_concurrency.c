#include "rlaas_concurrency.h"

#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_admin_tally.h"
#include "rlaas_clock.h"
#include "rlaas_conc.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_tenant.h"
#include "rlaas_unit.h"

APLOG_USE_MODULE(rlaas);

/* Slots that could not be given back: at most one line a second per
 * child. */
static rlaas_log_gate_t gate_lost;

/* ---- configuration ---- */

void rlaas_conc_dir_init(rlaas_dir_conf_t *d)
{
    d->conc = -1;
    d->conc_timeout_ms = -1;
    d->conc_status = -1;
}

void rlaas_conc_dir_merge(rlaas_dir_conf_t *d, const rlaas_dir_conf_t *base,
                          const rlaas_dir_conf_t *add)
{
    const rlaas_dir_conf_t *n = add->conc != -1 ? add : base;
    const rlaas_dir_conf_t *t = add->conc_timeout_ms != -1 ? add : base;

    d->conc = n->conc;
    d->conc_timeout_ms = t->conc_timeout_ms;
    d->conc_status =
        add->conc_status != -1 ? add->conc_status : base->conc_status;
}

const char *rlaas_conc_set(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;
    int64_t v;

    if (strcasecmp(arg, "off") == 0)
        v = 0;
    else if (rlaas_parse_nonneg_int(arg, RLAAS_CONC_MAX, &v) != NULL || v < 1)
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected an integer "
                            "from 1 to %d (requests in flight), or off",
                            cmd->cmd->name, arg, RLAAS_CONC_MAX);
    d->conc = v;
    rlaas_tenant_mark(cmd, d, RLAAS_T_CONC);
    return NULL;
}

const char *rlaas_conc_set_timeout(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;
    const char *err = rlaas_parse_duration_ms(arg, 1, RLAAS_WINDOW_MAX_MS,
                                              &d->conc_timeout_ms);

    if (err != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected %s, "
                            "from 1ms to 30d",
                            cmd->cmd->name, arg, err);
    /* a slot is held in Redis as long as a window is: bounded alike */
    if ((err = rlaas_tenant_window_bound(cmd, arg, d->conc_timeout_ms)) != NULL)
        return err;
    rlaas_tenant_mark(cmd, d, RLAAS_T_CONC);
    return NULL;
}

const char *rlaas_conc_set_status(cmd_parms *cmd, void *dv, const char *arg)
{
    rlaas_dir_conf_t *d = dv;

    if (strcmp(arg, "429") == 0)
        d->conc_status = HTTP_TOO_MANY_REQUESTS;
    else if (strcmp(arg, "503") == 0)
        d->conc_status = HTTP_SERVICE_UNAVAILABLE;
    else
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected 429 or 503",
                            cmd->cmd->name, arg);
    return NULL;
}

int rlaas_dir_conc(const rlaas_dir_conf_t *d)
{
    return d != NULL && d->conc > 0;
}

int64_t rlaas_dir_conc_timeout_ms(const rlaas_dir_conf_t *d)
{
    return d->conc_timeout_ms > 0 ? d->conc_timeout_ms
                                  : RLAAS_CONC_TIMEOUT_DEFAULT_MS;
}

int rlaas_dir_conc_status(const rlaas_dir_conf_t *d)
{
    return d->conc_status > 0 ? d->conc_status : HTTP_TOO_MANY_REQUESTS;
}

void rlaas_concurrency_item(rlaas_item_t *it, const rlaas_dir_conf_t *d)
{
    memset(it, 0, sizeof(*it));
    it->conc = 1;
    it->name = d->zone != NULL ? d->zone : RLAAS_POLICY_DEFAULT;
    it->dry_run = d->dry_run == 1;
    it->need_user = d->sources_need_user;
    it->metric = -1; /* counted by the concurrency counters */
    it->call.strategy = RLAAS_CONCURRENCY;
    it->call.limit = d->conc;
    it->call.window_ms = d->use.conc_timeout_ms;
    it->call.cost = 1;
}

/* ---- the slots of one client request ---- */

typedef struct {
    rlaas_item_t it;
    const rlaas_engine_t *en; /* the engine that took it */
    int done;                 /* given back, or tried: never twice */
    int row; /* the console's row counting it (rlaas_admin_take) */
} held_t;

typedef struct {
    server_rec *s;
    uint64_t token;
    char hex[RLAAS_CONC_TOKEN_LEN + 1];
    apr_array_header_t *held; /* of held_t; NULL: none yet */
} conc_t;

static conc_t *conc_of(request_rec *r)
{
    rlaas_unit_t *u = rlaas_unit_get(r);
    request_rec *first = r;
    conc_t *c;

    if (u->conc != NULL)
        return u->conc;
    while (first->prev != NULL)
        first = first->prev;
    c = apr_pcalloc(first->pool, sizeof(*c));
    c->s = first->server;
    /* unique among every server's requests in flight on one record */
    ap_random_insecure_bytes(&c->token, sizeof(c->token));
    rlaas_conc_token_hex(c->hex, c->token);
    u->conc = c;
    return c;
}

void rlaas_concurrency_prepare(request_rec *r, rlaas_item_t *it)
{
    it->call.token = conc_of(r)->hex;
}

static void log_lost(server_rec *s, const char *key, const char *why)
{
    long dropped = rlaas_log_gate_pass(&gate_lost, rlaas_clock_us(), 1);

    if (dropped < 0)
        return;
    ap_log_error(
        APLOG_MARK, APLOG_WARNING, 0, s,
        "RLAAS0200: " RLAAS_D_CONCURRENCY
        ": a slot of %s could not be given back (%s); it is free "
        "once its holder is gone (local engine) or after " RLAAS_D_CONC_TIMEOUT
        " (Redis)%s",
        key, why, dropped > 0 ? " (and similar lines since)" : "");
}

/* The slots of all[0..count) that en took and that are not given back
 * yet, in one call (a slot never given back twice: each is marked done
 * first, whatever happens). */
static void release_by(conc_t *c, const rlaas_engine_t *en, held_t *all,
                       int count)
{
    rlaas_item_t it[RLAAS_POLICIES_MAX];
    held_t *h[RLAAS_POLICIES_MAX];
    rlaas_engine_fault_t f;
    const char *why = NULL;
    int i, n = 0;

    for (i = 0; i < count && n < RLAAS_POLICIES_MAX; i++) {
        if (all[i].done || all[i].en != en)
            continue;
        all[i].done = 1;
        h[n] = &all[i];
        it[n++] = all[i].it;
    }
    if (n == 0)
        return;
    if (!en->release(c->s, c->held->pool, it, n, &f))
        why = rlaas_engine_why(c->held->pool, &f);
    for (i = 0; i < n; i++) {
        rlaas_admin_give(c->s, &h[i]->it, h[i]->row); /* or lost */
        rlaas_metrics_outcome(why == NULL ? RLAAS_METRIC_CONC_RELEASED
                                          : RLAAS_METRIC_CONC_LOST);
        if (why != NULL)
            log_lost(c->s, h[i]->it.call.key, why);
    }
}

/* Every slot not given back yet. */
static void release_all(conc_t *c)
{
    held_t *all;
    int i;

    if (c->held == NULL)
        return;
    all = (held_t *)c->held->elts;
    for (i = 0; i < c->held->nelts; i++)
        if (!all[i].done)
            release_by(c, all[i].en, all, c->held->nelts);
}

/* The request's pool goes: httpd is done with the client request, whether
 * it got to log_transaction or not. */
static apr_status_t release_cleanup(void *data)
{
    release_all(data);
    return APR_SUCCESS;
}

void rlaas_concurrency_hold(request_rec *r, const rlaas_item_t *it, int n,
                            const rlaas_engine_t *en)
{
    conc_t *c = NULL;
    int i;

    for (i = 0; i < n; i++) {
        held_t *h;

        if (!it[i].conc)
            continue;
        if (c == NULL)
            c = conc_of(r);
        if (c->held == NULL) {
            request_rec *first = r;

            while (first->prev != NULL)
                first = first->prev;
            c->held = apr_array_make(first->pool, 1, sizeof(held_t));
            apr_pool_cleanup_register(first->pool, c, release_cleanup,
                                      apr_pool_cleanup_null);
        }
        h = apr_array_push(c->held);
        h->it = it[i];
        h->en = en;
        h->done = 0;
        h->row = rlaas_admin_take(c->s, it + i);
        rlaas_metrics_outcome(RLAAS_METRIC_CONC_TAKEN);
    }
}

void rlaas_concurrency_release(request_rec *r)
{
    rlaas_unit_t *u = rlaas_unit_find(r);

    if (u != NULL && u->conc != NULL)
        release_all(u->conc);
}
