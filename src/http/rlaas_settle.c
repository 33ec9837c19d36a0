/*
 * What a decision's charges become once the response is known (the
 * log_transaction hook): RLaaSCountIf gives back those whose condition
 * does not hold, RLaaSCost bytes charges the bytes sent, each by the
 * engine that made the charges at the check.
 */
#include "rlaas_settle.h"

#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_bytes.h"
#include "rlaas_clock.h"
#include "rlaas_concurrency.h"
#include "rlaas_lease.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_outcome.h"

APLOG_USE_MODULE(rlaas);

/* Charges lost: at most one line a second per child. */
static rlaas_log_gate_t gate_lost;

/* A decision's charges, made at the check, that the response may give
 * back (RLaaSCountIf) or add to (RLaaSCost bytes): where and when they
 * were made. */
struct rlaas_settle_t {
    const rlaas_dir_conf_t *d;
    rlaas_item_t it[RLAAS_POLICIES_MAX];
    ap_expr_info_t *expr[RLAAS_POLICIES_MAX]; /* each item's condition */
    int at[RLAAS_POLICIES_MAX];               /* its place in the decision */
    int n;
    const rlaas_engine_t *en; /* the engine that charged them */
    int64_t t0_us; /* rlaas_clock_us() before the decision was asked */
    /* RLaaSCost bytes: the items (checked only) are charged the bytes
     * sent where their condition holds (or they have none: expr NULL),
     * instead of given back where it does not */
    int bytes;
};

/* The items that count by outcome (a policy's countif=, else the
 * section's RLaaSCountIf for its own limit and, when the operator set it,
 * the policies it applies, never the host's enforced ones) are charged at
 * the check, as any other: at most the limit's worth of requests is
 * admitted and not yet known, a burst included; those the response shows
 * not to count are given back after it (a refund). A check of cost 0
 * charges nothing, gives nothing back. */
static ap_expr_info_t *count_if_of(const rlaas_dir_conf_t *d,
                                   const rlaas_item_t *it)
{
    int tenant = d != NULL && (d->by_tenant & RLAAS_T_COUNT_IF);

    return it->p != NULL && it->p->count_if != NULL ? it->p->count_if
           : it->enforced || (it->p != NULL && tenant)
               ? NULL
               : rlaas_outcome_count_if(d);
}

rlaas_settle_t *rlaas_settle_prepare(request_rec *r, const rlaas_dir_conf_t *d,
                                     const rlaas_item_t *it, int n, int bytes)
{
    ap_expr_info_t *expr;
    rlaas_settle_t *pd = NULL;
    int i;

    for (i = 0; i < n; i++) {
        expr = count_if_of(d, &it[i]);
        if (it[i].conc || (bytes ? it[i].bytes_unit == 0
                                 : expr == NULL || it[i].call.cost == 0))
            continue;
        if (pd == NULL) {
            pd = apr_pcalloc(r->pool, sizeof(*pd));
            pd->d = d;
            pd->bytes = bytes;
        }
        pd->it[pd->n] = it[i];
        pd->at[pd->n] = i;
        pd->expr[pd->n++] = expr;
    }
    if (pd != NULL)
        pd->t0_us = rlaas_clock_us();
    return pd;
}

void rlaas_settle_keep(request_rec *r, rlaas_unit_t *u, rlaas_settle_t *pd,
                       const rlaas_item_t *it, const rlaas_engine_t *en)
{
    int i, n = 0;

    if (pd == NULL)
        return;
    pd->en = en;
    /* a dry run's denial charged nothing */
    for (i = 0; i < pd->n; i++) {
        if (!it[pd->at[i]].v.allowed)
            continue;
        pd->it[n] = it[pd->at[i]];
        pd->expr[n++] = pd->expr[i];
    }
    pd->n = n;
    if (n == 0)
        return;
    if (u->outcome == NULL)
        u->outcome = apr_array_make(r->pool, 2, sizeof(const rlaas_settle_t *));
    APR_ARRAY_PUSH((apr_array_header_t *)u->outcome, const rlaas_settle_t *) =
        pd;
}

/* it[0..n) settled by the engine that charged them: their charges given
 * back (units NULL) or units[i] charged. A settlement lost is logged: a
 * refund's charge stands until it expires (the client's quota lower,
 * never higher); bytes not charged were served free. Returns whether it
 * was made. */
static int settled(request_rec *r, const rlaas_settle_t *pd,
                   const rlaas_item_t *it, int n, const int64_t *units,
                   int64_t t0_us)
{
    char room[RLAAS_LOG_SUPPRESSED_MAX];
    rlaas_engine_fault_t f;
    const char *why, *more;
    long dropped;

    if (pd->en->settle(r, it, n, units, t0_us, &f))
        return 1;
    if ((dropped = rlaas_log_gate_pass(&gate_lost, rlaas_clock_us(), 1)) < 0)
        return 0;
    why = rlaas_engine_why(r->pool, &f);
    more = rlaas_log_suppressed(room, sizeof(room), dropped);
    if (units == NULL)
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      "RLAAS0150: " RLAAS_D_COUNT_IF
                      ": a charge made at the check could not be given "
                      "back (%s); it stands until it expires%s",
                      why, more);
    else
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      "RLAAS0210: " RLAAS_D_COST
                      " bytes: the bytes a response sent could not be "
                      "charged (%s)%s",
                      why, more);
    return 0;
}

/* The charges of it[0..n) given back, where they were made (tried once
 * more by the engine if the first try never reached it). A unit spent
 * from a portion held here goes back into it (rlaas_lease_refund), else
 * to Redis, aged from that portion's charge rather than the request's: a
 * bucket's refill since then is not given twice. */
static void refund(request_rec *r, const rlaas_settle_t *pd,
                   const rlaas_item_t *it, int n)
{
    rlaas_item_t rest[RLAAS_POLICIES_MAX];
    int i, m = 0, ok = 1;

    for (i = 0; i < n; i++) {
        if (it[i].lease_at_ms <= 0)
            rest[m++] = it[i];
        else if (!rlaas_lease_refund(r, pd->d, &it[i]) &&
                 !settled(r, pd, &it[i], 1, NULL, it[i].lease_at_us))
            ok = 0;
    }
    if (m > 0 && !settled(r, pd, rest, m, NULL, pd->t0_us))
        ok = 0;
    rlaas_metrics_outcome(ok ? RLAAS_METRIC_COUNTIF_REFUNDS
                             : RLAAS_METRIC_COUNTIF_REFUNDS_LOST);
}

/* The body bytes the response sent (r->bytes_sent of its last record,
 * after internal redirects: what %B logs; none for a HEAD, whose body
 * httpd counts but drops). */
static apr_off_t bytes_sent(request_rec *r)
{
    while (r->next != NULL)
        r = r->next;
    return r->header_only || r->bytes_sent < 0 ? 0 : r->bytes_sent;
}

/* Those bytes as units of an item, at least 1 and at most its limit; 0:
 * nothing to charge. */
static int bytes_units(request_rec *r, const rlaas_item_t *it, int64_t *units)
{
    apr_off_t sent = bytes_sent(r);

    if (sent <= 0)
        return 0;
    *units = rlaas_bytes_units(sent, it->bytes_unit, it->call.limit);
    return 1;
}

/* RLaaSCost bytes: each item whose condition holds (or that has none) is
 * charged the bytes sent. Returns -1 if nothing was to be charged, else
 * whether the charge was made. */
static int settle_bytes(request_rec *r, const rlaas_settle_t *pd)
{
    rlaas_item_t to[RLAAS_POLICIES_MAX];
    int64_t units[RLAAS_POLICIES_MAX];
    int i, n = 0;

    for (i = 0; i < pd->n; i++) {
        if (pd->expr[i] != NULL && !rlaas_outcome_counts(r, pd->expr[i]))
            continue;
        if (bytes_units(r, &pd->it[i], &units[n]))
            to[n++] = pd->it[i];
    }
    return n > 0 ? settled(r, pd, to, n, units, pd->t0_us) : -1;
}

/* The response's bytes in the metrics, once however many decisions and
 * limits charged them: lost if any charge of them was. */
static void count_bytes(request_rec *r, int charged, int lost)
{
    if (charged || lost)
        rlaas_metrics_outcome_add(lost ? RLAAS_METRIC_BYTES_LOST
                                       : RLAAS_METRIC_BYTES_CHARGED,
                                  (apr_uint64_t)bytes_sent(r));
}

/* One decision's charges once the response is known: those whose
 * condition holds stand, the others are given back. */
static void settle(request_rec *r, const rlaas_settle_t *pd)
{
    rlaas_item_t back[RLAAS_POLICIES_MAX];
    int i, j, holds[RLAAS_POLICIES_MAX], n = 0, kept = 0;

    /* each condition evaluated once */
    for (i = 0; i < pd->n; i++) {
        for (j = 0; j < i && pd->expr[j] != pd->expr[i]; j++)
            ;
        holds[i] = j < i ? holds[j] : rlaas_outcome_counts(r, pd->expr[i]);
        if (holds[i])
            kept = 1;
        else
            back[n++] = pd->it[i];
    }
    if (kept)
        rlaas_metrics_outcome(RLAAS_METRIC_COUNTIF_CHARGES);
    if (n > 0)
        refund(r, pd, back, n);
}

/* After the response (log_transaction): each decision that RLaaSCountIf
 * charged is settled by its conditions. */
int rlaas_settle_log_transaction(request_rec *r)
{
    rlaas_unit_t *u;
    apr_array_header_t *pending;
    int i, charged = 0, lost = 0, rc;

    if (r->main != NULL || (u = rlaas_unit_find(r)) == NULL)
        return DECLINED;
    /* RLaaSConcurrency: httpd is done with the request */
    rlaas_concurrency_release(r);
    if (u->outcome == NULL)
        return DECLINED;
    pending = u->outcome;
    u->outcome = NULL;
    for (i = 0; i < pending->nelts; i++) {
        const rlaas_settle_t *pd =
            APR_ARRAY_IDX(pending, i, const rlaas_settle_t *);

        if (!pd->bytes)
            settle(r, pd);
        else if ((rc = settle_bytes(r, pd)) >= 0)
            *(rc ? &charged : &lost) = 1;
    }
    count_bytes(r, charged, lost);
    return DECLINED;
}
