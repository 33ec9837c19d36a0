#include "rlaas_policies.h"

#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_bytes.h"
#include "rlaas_calendar.h"
#include "rlaas_clock.h"
#include "rlaas_concurrency.h"
#include "rlaas_identity.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_policy.h"
#include "rlaas_tenant.h"

APLOG_USE_MODULE(rlaas);

/* Values read per request (RLaaSLimit expr=, RLaaSCost expr=) that are no
 * integer in range: at most one line a second per child. */
static rlaas_log_gate_t gate_value;

const char *rlaas_num_text(apr_pool_t *p, int64_t v)
{
    char *d = apr_palloc(p, 21); /* INT64_MIN and its NUL */

    d[rlaas_fmt_i64(d, v)] = '\0';
    return d;
}

static void named(rlaas_item_t *it, const rlaas_policy_t *p, int enforced,
                  const rlaas_dir_conf_t *d)
{
    memset(it, 0, sizeof(*it));
    it->p = p;
    it->name = p->name;
    it->enforced = enforced;
    /* a tenant's dry run is its own limit's alone */
    it->dry_run = !enforced && d != NULL && d->dry_run == 1 &&
                  !(d->by_tenant & RLAAS_T_DRY_RUN);
    it->need_user = p->sources_need_user;
    it->metric = p->metric;
    it->call.strategy = p->strategy;
    it->call.limit = p->limit;
    it->call.window_ms = p->window_ms;
    it->call.cost = p->cost; /* 0 with cost=bytes: a check */
    it->bytes_unit = p->bytes_unit;
    /* concurrency=N: slots in flight, its token for a cost */
    it->conc = p->strategy == RLAAS_CONCURRENCY;
    it->cal = p->cal;
    it->tz = rlaas_calendar_zone(rlaas_server_conf(p->server));
}

static void own(rlaas_item_t *it, const rlaas_dir_conf_t *d)
{
    memset(it, 0, sizeof(*it));
    it->name = d->zone != NULL ? d->zone : RLAAS_POLICY_DEFAULT;
    it->dry_run = d->dry_run == 1;
    it->need_user = d->sources_need_user;
    /* a tenant's zones count together, as "other" */
    it->metric = d->ns != NULL     ? -1
                 : d->zone != NULL ? d->zone_metric
                                   : rlaas_metrics_default_name();
    it->call.strategy = d->use.strategy;
    it->call.limit = d->limit;
    it->call.window_ms = d->use.window_ms;
    it->call.cost = 1;
    it->cal = d->cal;
    it->field = d->use.field;
}

/* The policies: the host's enforced ones, and unless only those are
 * asked for, those the section applies and its own limit. */
static int gather(request_rec *r, const rlaas_dir_conf_t *d, rlaas_item_t *it,
                  int enforced_only)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    const rlaas_apply_op_t *sel[RLAAS_POLICIES_MAX];
    const rlaas_apply_op_t *enf = NULL, *ops = NULL;
    int on = !enforced_only && d != NULL && d->engine != 0;
    int mine = on && rlaas_dir_has_limit(d);
    int conc = on && rlaas_dir_conc(d);
    int nenf = 0, nops = 0, n, i;

    if (sc->enforce != NULL) {
        enf = (const rlaas_apply_op_t *)sc->enforce->elts;
        nenf = sc->enforce->nelts;
    }
    if (on && d->apply != NULL) {
        ops = (const rlaas_apply_op_t *)d->apply->elts;
        nops = d->apply->nelts;
    }
    n = rlaas_policy_resolve(enf, nenf, ops, nops, sel,
                             RLAAS_POLICIES_MAX - mine - conc);
    if (n < 0)
        return -1;
    for (i = 0; i < n; i++)
        named(&it[i], sel[i]->ref, sel[i] >= enf && sel[i] < enf + nenf, d);
    if (mine)
        own(&it[n++], d);
    /* after the own limit: a ban follows that */
    if (conc)
        rlaas_concurrency_item(&it[n++], d);
    return n;
}

int rlaas_policies_gather(request_rec *r, const rlaas_dir_conf_t *d,
                          rlaas_item_t *it)
{
    return gather(r, d, it, 0);
}

int rlaas_policies_enforced(request_rec *r, const rlaas_dir_conf_t *d,
                            rlaas_item_t *it)
{
    return gather(r, d, it, 1);
}

/* An integer read per request, or -1 (the expression failed or gave
 * something else). */
static int64_t read_int(request_rec *r, ap_expr_info_t *expr, int64_t max,
                        const char **text)
{
    const char *err = NULL;
    int64_t v;

    *text = ap_expr_str_exec(r, expr, &err);
    if (err != NULL) {
        *text = err;
        return -1;
    }
    if (*text == NULL || rlaas_parse_nonneg_int(*text, max, &v) != NULL)
        return -1;
    return v;
}

static void log_value(request_rec *r, const char *what, const char *text,
                      const char *then)
{
    long dropped = rlaas_log_gate_pass(&gate_value, rlaas_clock_us(), 1);

    if (dropped < 0)
        return;
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                  "RLAAS0070: %s gave '%.64s', not an integer in range; %s%s",
                  what, text ? text : "", then,
                  dropped > 0 ? " (and similar lines since)" : "");
}

/* RLaaSLimit expr=EXPR [fallback], bounded by RLaaSLimitMax (and
 * RLaaSLogMax for a tenant's sliding log). */
static const char *limit_read(request_rec *r, const rlaas_dir_conf_t *d,
                              rlaas_item_t *it)
{
    int64_t max = rlaas_tenant_limit_cap(r, d);
    const char *text;
    int64_t v = read_int(r, d->limit_expr, RLAAS_LIMIT_MAX, &text);

    if (v < 1) {
        if (d->limit_fallback < 1) {
            log_value(r, RLAAS_D_LIMIT " expr=", text,
                      "no fallback: the request is undecided");
            return "RLaaSLimit expr= gave no limit and there is no fallback";
        }
        log_value(r, RLAAS_D_LIMIT " expr=", text, "the fallback applies");
        v = d->limit_fallback;
    }
    it->call.limit = v < max ? v : max;
    it->call.mode |= RLAAS_MODE_LIMIT_VARIES;
    return NULL;
}

/* The section's cost applies to its own limit and, when the operator set
 * it, to the policies the section applies; an enforced policy, and any
 * policy under a tenant's cost, has its own. A cost that is no integer
 * from 0 to the limit costs 1. */
static void cost_of(request_rec *r, const rlaas_dir_conf_t *d, rlaas_item_t *it,
                    int64_t *section_cost)
{
    /* bytes are the own limit's unit alone: a policy keeps its own cost,
     * and a policy counting bytes (cost=bytes) is never given a section's */
    if (d != NULL && d->cost == RLAAS_COST_BYTES) {
        if (it->p == NULL) {
            it->call.cost = 0;
            it->bytes_unit = rlaas_bytes_unit(d);
        }
    }
    else if (d != NULL && d->cost != -1 && it->bytes_unit == 0 &&
             (it->p == NULL ||
              (!it->enforced && !(d->by_tenant & RLAAS_T_COST)))) {
        if (d->cost_expr != NULL && *section_cost < 0) {
            const char *text;

            *section_cost = read_int(r, d->cost_expr, RLAAS_LIMIT_MAX, &text);
            if (*section_cost < 0) {
                log_value(r, RLAAS_D_COST " expr=", text, "it costs 1");
                *section_cost = 1;
            }
        }
        it->call.cost = d->cost_expr != NULL ? *section_cost : d->cost;
    }
    if (it->call.cost > it->call.limit) {
        log_value(r, it->name, rlaas_num_text(r->pool, it->call.cost),
                  "a cost above the limit costs 1");
        it->call.cost = 1;
    }
}

/* A calendar window: the periods around the module's time (the engine
 * picks the one holding its own). Only fixed counts in them: a section
 * that inherits a calendar window and sets another strategy (or the
 * reverse, where no one file holds both) is undecided. */
static const char *periods_of(request_rec *r, rlaas_item_t *it)
{
    long dropped;

    if (it->call.strategy != RLAAS_STRATEGY_FIXED) {
        dropped = rlaas_log_gate_pass(&gate_value, rlaas_clock_us(), 1);
        if (dropped >= 0)
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                          "RLAAS0190: %s: a calendar window (" RLAAS_D_WINDOW
                          " N " RLAAS_CAL_WORD ") with the %s strategy, "
                          "inherited from another section: only fixed "
                          "counts in calendar periods; the request is "
                          "undecided%s",
                          it->name, rlaas_strategy_name(it->call.strategy),
                          dropped > 0 ? " (and similar lines since)" : "");
        return "a calendar window with a strategy other than fixed";
    }
    if (it->tz == NULL)
        it->tz = rlaas_calendar_zone(rlaas_server_conf(r->server));
    it->periods =
        rlaas_calendar_table(r->pool, it->cal, it->tz,
                             apr_time_as_msec(apr_time_now()), &it->call.cal);
    it->call.window_ms = it->periods->b[2] - it->periods->b[1];
    return NULL;
}

static void key_of(request_rec *r, const rlaas_dir_conf_t *d, rlaas_item_t *it)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    rlaas_identity_spec_t spec;

    spec.strategy = it->call.strategy;
    spec.window_ms = it->call.window_ms;
    spec.periods = it->periods;
    if (it->p != NULL) {
        /* a policy counts under the key prefix of where it was declared */
        spec.prefix = rlaas_server_prefix(rlaas_server_conf(it->p->server));
        spec.zone = it->p->name;
        spec.ns = it->p->ns;
        spec.sources = it->p->sources;
    }
    else {
        spec.prefix = rlaas_server_prefix(sc);
        spec.zone = d->zone;
        spec.ns = d->ns;
        spec.sources = d->sources;
    }
    it->call.key = rlaas_identity_key(r, sc, &spec, &it->call.key_len,
                                      &it->call.window_at);
    it->zone_len = rlaas_identity_zone_len(&spec);
}

/* Two items with one key (operator's sections may name their zone after
 * a policy) are one counter, decided never more loosely than either
 * would: enforced if either is (the enforced one's settings stay: its
 * window, condition and failure policy), a dry run only if both are, the
 * lower limit, the higher cost (at most that limit). */
static void merge(rlaas_item_t *a, const rlaas_item_t *b)
{
    const rlaas_item_t *low = b->call.limit < a->call.limit ? b : a;
    const rlaas_item_t *keep = low;
    int64_t cost = a->call.cost >= b->call.cost ? a->call.cost : b->call.cost;
    int mode = low->call.mode & RLAAS_MODE_LIMIT_VARIES;
    rlaas_item_t m;

    if (a->enforced != b->enforced)
        keep = a->enforced ? a : b;
    m = *keep;

    m.enforced = a->enforced || b->enforced;
    m.dry_run = a->dry_run && b->dry_run;
    m.call.limit = low->call.limit;
    m.call.cost = cost < m.call.limit ? cost : m.call.limit;
    m.call.mode = mode | (m.dry_run ? RLAAS_MODE_DRY_RUN : 0);
    *a = m; /* one unit (dedupe) */
}

/* One counter, one decision (merge); -1 if one counter would be counted
 * in two units (bytes and requests, or bytes and KiB): no limit of the two
 * can be said to be the lower. */
static int dedupe(rlaas_item_t *it, int n)
{
    int i, j, k;

    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            if (it[i].call.key_len != it[j].call.key_len ||
                memcmp(it[i].call.key, it[j].call.key, it[i].call.key_len))
                continue;
            if (it[i].bytes_unit != it[j].bytes_unit)
                return -1;
            merge(&it[i], &it[j]);
            for (k = j; k + 1 < n; k++)
                it[k] = it[k + 1];
            n--;
            j--;
        }
    }
    return n;
}

const char *rlaas_policies_prepare(request_rec *r, const rlaas_dir_conf_t *d,
                                   rlaas_item_t *it, int *n)
{
    int64_t section_cost = -1; /* RLaaSCost expr=: read once, if at all */
    const char *err;
    int i;

    for (i = 0; i < *n; i++) {
        if (it[i].conc)
            rlaas_concurrency_prepare(r, &it[i]); /* its token, no cost */
        else if (it[i].p == NULL && d->limit_expr != NULL &&
                 (err = limit_read(r, d, &it[i])) != NULL)
            return err;
        else {
            /* a size limit and RLaaSCost bytes set in different sections */
            if (it[i].p == NULL &&
                (err = rlaas_bytes_conflict(r->pool, d, 1)) != NULL)
                return err;
            cost_of(r, d, &it[i], &section_cost);
        }
        if (it[i].dry_run)
            it[i].call.mode |= RLAAS_MODE_DRY_RUN;
        if (it[i].cal != NULL && (err = periods_of(r, &it[i])) != NULL)
            return err;
        key_of(r, d, &it[i]);
        if (it[i].call.key_len == 0)
            return "the key could not be built";
    }
    if ((i = dedupe(it, *n)) < 0)
        return "a zone named after a policy counts in another unit (bytes "
               "or requests, or a size above 10^9 bytes beside one below)";
    *n = i;
    return NULL;
}
