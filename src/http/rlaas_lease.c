#include "rlaas_lease.h"

#include "http_core.h"
#include "http_log.h"
#include "apr_atomic.h"
#include "apr_general.h"
#include "apr_strings.h"

#include "rlaas_backend.h"
#include "rlaas_clock.h"
#include "rlaas_fnv.h"
#include "rlaas_grant.h"
#include "rlaas_local.h"
#include "rlaas_metrics.h"
#include "rlaas_outcome.h"
#include "rlaas_redis.h"
#include "rlaas_shm.h"
#include "rlaas_slot.h"
#include "rlaas_target.h"

APLOG_USE_MODULE(rlaas);

/* Why a section's RLaaSLease on does not apply to a request
 * (rlaas_lease_not_e): each said once per child, at notice level (a
 * configuration choice, not a fault), and counted
 * (rlaas_lease_fallbacks_total). Under auto nothing is said: the operator
 * asked for a lease only where one applies. */
static const char *const whys[RLAAS_LEASE_NOT_COUNT] = {
    "the request meets several policies (RLaaSApply, RLaaSEnforce) whose "
    "keys lie in different Redis Cluster slots (a lease's policies are "
    "decided together, in one script)",
    "the sliding log (sliding_log) keeps no count to share out",
    "a dry run (RLaaSDryRun on)",
    "bans (RLaaSBan, or a ban of its zone honoured): a ban is read with "
    "every decision",
    "it counts bytes (RLaaSCost bytes, cost=bytes): they are charged after "
    "the response, when httpd knows them",
    "another request of its identity is taking a portion",
    "the local engine's table could not hold its record",
    "its identity is too quiet for a portion to pay off"};

static volatile apr_uint32_t told[RLAAS_LEASE_NOT_COUNT];

/* The line names the section's policy (its zone), not the request: no
 * client text in it. */
static rlaas_lease_e not_here(request_rec *r, const rlaas_dir_conf_t *d,
                              const rlaas_item_t *it, rlaas_lease_not_e why)
{
    rlaas_metrics_lease_fallback(why);
    if (d->use.lease == RLAAS_LEASE_MODE_ON &&
        apr_atomic_cas32(&told[why], 1, 0) == 0)
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r,
                      "RLAAS0081: " RLAAS_D_LEASE
                      " on is not used for policy %s: %s; such requests are "
                      "decided one round trip each (said once per process)",
                      it->name, whys[why]);
    return RLAAS_LEASE_NO;
}

static void trace(request_rec *r, const rlaas_item_t *it, const char *what,
                  int64_t n)
{
    ap_log_rerror(APLOG_MARK, APLOG_TRACE2, 0, r,
                  "RLAAS0082: lease %s: %s %" APR_INT64_T_FMT, it->call.key,
                  what, n);
}

/* RLaaSLease auto: the identities this server saw lately, by a hash of
 * their key, each word a tag of the hash (23 bits), whether the table
 * held a portion of it then (1 bit) and when (ms, 40 bits), in shared
 * memory every child reads and writes with single atomic words. A quiet
 * identity is told apart here, and costs the table (its lock, a record)
 * nothing: only one the server saw again within a lease's time, or one
 * that held a portion within its window (units it left to lapse go back
 * with its next request, as before), goes to the table, which decides as
 * it did. Lossy (a slot keeps the last identity hashed to it) by design:
 * a miss sends one request alone, as without leases, and leaves what a
 * portion left to a later request. */
#define SEEN_SHM    "rlaas_lease_seen"
#define SEEN_SLOTS  16384
#define SEEN_MS     ((UINT64_C(1) << 40) - 1)
#define SEEN_LEASED (UINT64_C(1) << 40)

typedef struct {
    uint64_t seed; /* kept with the words it placed, across restarts */
    uint64_t word[SEEN_SLOTS];
} seen_mem_t;

static seen_mem_t *seen; /* NULL: every request goes to the table */

typedef struct {
    uint64_t *slot;
    uint64_t tag; /* in place: above SEEN_LEASED */
    uint64_t now_ms;
} seen_t;

void rlaas_lease_post_config(server_rec *s, int leases)
{
    apr_pool_t *keep = s->process->pool;
    apr_status_t rv;
    apr_shm_t *shm;

    seen = NULL;
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG)
        return;
    if (!leases) {
        rlaas_shm_drop(keep, SEEN_SHM);
        return;
    }
    if ((shm = rlaas_shm_sized(keep, SEEN_SHM, sizeof(*seen), &rv)) == NULL) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s,
                     "RLAAS0230: cannot create shared memory for the "
                     "identities RLaaSLease auto saw lately; every request "
                     "of a leased section looks its lease up");
        return;
    }
    seen = apr_shm_baseaddr_get(shm);
    /* no fixed hash for a client to aim many identities at one slot */
    while (seen->seed == 0 &&
           apr_generate_random_bytes((unsigned char *)&seen->seed,
                                     sizeof(seen->seed)) != APR_SUCCESS)
        seen->seed = (uint64_t)apr_time_now();
}

/* Whether the table is worth asking about the key; notes that the server
 * sees it now (keeping what the table held, as last noted). */
static int seen_lately(seen_t *sn, const char *key, size_t len, int64_t now_ms,
                       int64_t lease_ms, int64_t window_ms)
{
    uint64_t h = rlaas_fnv1a(seen->seed ^ RLAAS_FNV_BASIS, key, len), was, age;

    sn->slot = &seen->word[h % SEEN_SLOTS];
    sn->tag = h >> 41 << 41; /* the slot comes from the low bits */
    sn->now_ms = (uint64_t)now_ms & SEEN_MS;
    was = __atomic_load_n(sn->slot, __ATOMIC_RELAXED);
    if ((was & ~(SEEN_LEASED | SEEN_MS)) != sn->tag)
        was = 0;
    __atomic_store_n(sn->slot, sn->tag | (was & SEEN_LEASED) | sn->now_ms,
                     __ATOMIC_RELAXED);
    age = (sn->now_ms - was) & SEEN_MS;
    return was != 0 && (age < (uint64_t)lease_ms ||
                        ((was & SEEN_LEASED) && age < (uint64_t)window_ms));
}

/* What the table said of the identity: it holds a portion (spent from,
 * or being taken), or nothing (too quiet). */
static void seen_holds(const seen_t *sn, int holds)
{
    __atomic_store_n(sn->slot, sn->tag | (holds ? SEEN_LEASED : 0) | sn->now_ms,
                     __ATOMIC_RELAXED);
}

/* Units of a lapsed portion sent back with a fetch: those Redis took
 * back (a bucket above full, a window gone take fewer) and the rest,
 * lapsed. */
static void returned(int64_t sent, int64_t taken)
{
    if (sent <= 0)
        return;
    if (taken > sent)
        taken = sent;
    if (taken > 0)
        rlaas_metrics_outcome_add(RLAAS_METRIC_LEASE_UNITS_RETURNED,
                                  (apr_uint64_t)taken);
    if (sent > taken)
        rlaas_metrics_outcome_add(RLAAS_METRIC_LEASE_UNITS_LAPSED,
                                  (apr_uint64_t)(sent - taken));
}

/* The grant a request of it asks of its record. */
static void ask_of(const rlaas_dir_conf_t *d, const rlaas_item_t *it,
                   rlaas_grant_ask_t *a)
{
    a->strategy = it->call.strategy;
    a->limit = it->call.limit;
    a->window_ms = it->call.window_ms;
    a->cost = it->call.cost;
    a->adaptive = d->use.lease == RLAAS_LEASE_MODE_AUTO;
}

/* A request decided from a portion: where its refund goes (RLaaSCountIf,
 * rlaas_lease_refund). */
static void spent_from(rlaas_item_t *it, const rlaas_grant_from_t *from)
{
    it->lease_at_ms = from->at_ms;
    it->lease_at_us = from->at_us;
}

int rlaas_lease_refund(request_rec *r, const rlaas_dir_conf_t *d,
                       const rlaas_item_t *it)
{
    rlaas_local_t *table = rlaas_backend_table();
    rlaas_grant_from_t from = {it->lease_at_ms, it->lease_at_us};
    rlaas_grant_ask_t a;

    if (table == NULL || d == NULL || it->lease_at_ms <= 0)
        return 0;
    ask_of(d, it, &a);
    if (rlaas_grant_unspend(table, it->call.key, it->call.key_len, &a, &from,
                            rlaas_local_now_ms(), rlaas_clock_us(),
                            RLAAS_LOCAL_LOCK_WAIT_US) != RLAAS_TABLE_OK)
        return 0;
    trace(r, it, "refunded into the portion held here, units", it->call.cost);
    return 1;
}

/* Why a policy takes no portion (a RLAAS_LEASE_NOT_* reason); -1: it may.
 * A limit read per request (RLaaSLimit expr=, the only mode left) is no
 * reason: it is leased per limit (the record is made for one,
 * rlaas_grant_take, and a request of another takes a portion of its
 * own). */
static int why_not(const rlaas_dir_conf_t *d, const rlaas_item_t *it, int with)
{
    rlaas_ban_conf_t ban;

    if (it->call.strategy == RLAAS_STRATEGY_SLIDING_LOG)
        return RLAAS_LEASE_NOT_LOG;
    if (it->dry_run || (it->call.mode & RLAAS_MODE_DRY_RUN))
        return RLAAS_LEASE_NOT_DRY_RUN;
    if (rlaas_outcome_ban(d, &ban) || (with & RLAAS_LEASE_WITH_BAN))
        return RLAAS_LEASE_NOT_BAN;
    if (it->bytes_unit > 0)
        return RLAAS_LEASE_NOT_BYTES;
    return -1;
}

/* A lease's policies are decided in one script: on a Cluster, their keys
 * must share a slot (one identity's do: its hash tag). */
static int one_slot(const rlaas_server_conf_t *sc, const rlaas_item_t *it,
                    int n)
{
    int i;

    if (!rlaas_target_cluster(sc->target))
        return 1;
    for (i = 1; i < n; i++) {
        if (rlaas_slot(it[i].call.key, it[i].call.key_len) !=
            rlaas_slot(it[0].call.key, it[0].call.key_len))
            return 0;
    }
    return 1;
}

/* The request's records, as its policies' turns left them. */
typedef struct {
    rlaas_grant_ask_t a[RLAAS_POLICIES_MAX];
    rlaas_grant_e what[RLAAS_POLICIES_MAX];
    int64_t want[RLAAS_POLICIES_MAX];
    rlaas_grant_back_t back[RLAAS_POLICIES_MAX];
    rlaas_grant_from_t from[RLAAS_POLICIES_MAX];
    seen_t sn[RLAAS_POLICIES_MAX];
} turns_t;

/* Each policy's turn at its record; returns how many took one (fewer
 * than n: the table failed). */
static int take_all(rlaas_local_t *table, rlaas_item_t *it, int n, turns_t *t,
                    int64_t now_us)
{
    int64_t now_ms = rlaas_local_now_ms();
    int i;

    for (i = 0; i < n; i++) {
        if (rlaas_grant_spend(
                table, it[i].call.key, it[i].call.key_len, &t->a[i], now_ms,
                now_us, RLAAS_LOCAL_LOCK_WAIT_US, 0, &t->what[i], &t->want[i],
                &t->back[i], &t->from[i], &it[i].v) != RLAAS_TABLE_OK)
            return i;
        if (t->sn[i].slot != NULL && t->what[i] != RLAAS_GRANT_PLAIN)
            seen_holds(&t->sn[i], t->what[i] != RLAAS_GRANT_QUIET);
    }
    return n;
}

/* The units spent of the first n records go back into their portions
 * (the request is refused, or decided elsewhere: all or nothing); a
 * lease that ended in the meantime (a round trip's time) keeps its unit:
 * one fewer admitted, never one more. */
static void unspend_all(rlaas_local_t *table, const rlaas_item_t *it, int n,
                        const turns_t *t)
{
    int i;

    for (i = 0; i < n; i++) {
        if (t->what[i] == RLAAS_GRANT_SPENT)
            rlaas_grant_unspend(table, it[i].call.key, it[i].call.key_len,
                                &t->a[i], &t->from[i], rlaas_local_now_ms(),
                                rlaas_clock_us(), RLAAS_LOCAL_LOCK_WAIT_US);
    }
}

/* A policy's units held here, spent (never a fetch): 1 if so, its
 * verdict then in it->v. */
static int spend_held(rlaas_local_t *table, rlaas_item_t *it,
                      const rlaas_grant_ask_t *a, rlaas_grant_from_t *from)
{
    rlaas_grant_e what;
    int64_t want;

    return rlaas_grant_spend(table, it->call.key, it->call.key_len, a,
                             rlaas_local_now_ms(), rlaas_clock_us(),
                             RLAAS_LOCAL_LOCK_WAIT_US, 1, &what, &want, NULL,
                             from, &it->v) == RLAAS_TABLE_OK &&
           what == RLAAS_GRANT_SPENT;
}

/* Every policy decided from the portions held here. */
static rlaas_lease_e spent_here(request_rec *r, rlaas_item_t *it, int n,
                                const turns_t *t, const char *how)
{
    int i;

    for (i = 0; i < n; i++) {
        spent_from(&it[i], &t->from[i]);
        trace(r, &it[i], how, it[i].v.remaining);
    }
    rlaas_metrics_outcome(RLAAS_METRIC_LEASE_SPENDS);
    return RLAAS_LEASE_DECIDED;
}

/* One round trip for the policies it[sub[0..m)] not decided here: a
 * portion for each whose turn was a fetch (with what its last portion
 * left to lapse), its cost alone for the others, all or nothing (a lease
 * call if one asks a portion, else an ordinary one); each fetch's answer
 * into its record. Their verdicts into it[sub[j]].v (a refusal grants
 * nothing). */
static rlaas_rerr_e fetch(request_rec *r, rlaas_local_t *table,
                          rlaas_item_t *it, const int *sub, int m,
                          const turns_t *t, char *detail)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    rlaas_call_t calls[RLAAS_POLICIES_MAX];
    /* for each policy: its verdict, the grant, the units given back,
     * Redis' time (in remaining) */
    rlaas_verdict_t v[4 * RLAAS_POLICIES_MAX];
    int64_t sent, lapsed, granted;
    rlaas_rerr_e e;
    int j, lease;

    for (j = 0; j < m; j++) {
        int i = sub[j], f = t->what[i] == RLAAS_GRANT_FETCH;

        calls[j] = it[i].call;
        calls[j].lease_want = f ? t->want[i] : 0;
        calls[j].lease_back = f ? t->back[i].units : 0;
        calls[j].lease_back_at = f ? t->back[i].at_ms : 0;
    }
    lease = rlaas_call_lease(calls, m);
    memset(v, 0, sizeof(v));
    sent = rlaas_clock_us();
    e = rlaas_redis_eval(sc->target->redis, calls, m, v, detail);
    for (j = 0; j < m; j++) {
        int i = sub[j];
        rlaas_verdict_t *w = &v[lease ? 4 * j : j];

        it[i].v = w[0];
        if (t->what[i] != RLAAS_GRANT_FETCH)
            continue;
        if (e != RLAAS_RERR_NONE) {
            /* no answer: the fetch ends, nothing is known of a refusal,
             * nor of a give-back (lapsed, as far as anyone here knows) */
            w[0].allowed = 1;
            w[1].allowed = 0;
            w[2].remaining = 0;
        }
        returned(t->back[i].units, w[2].remaining);
        granted = w[1].allowed ? w[1].remaining : 0;
        lapsed = 0;
        if (rlaas_grant_put(table, it[i].call.key, it[i].call.key_len, &t->a[i],
                            rlaas_local_now_ms(), sent, granted,
                            granted > 0 ? w[1].reset_ms : 0,
                            granted > 0 ? w[1].retry_ms : 0, w[3].remaining,
                            &w[0], RLAAS_LOCAL_LOCK_WAIT_US,
                            &lapsed) == RLAAS_TABLE_OK &&
            lapsed > 0)
            rlaas_metrics_outcome_add(RLAAS_METRIC_LEASE_UNITS_LAPSED,
                                      (apr_uint64_t)lapsed);
        if (granted > 0) {
            rlaas_metrics_outcome(RLAAS_METRIC_LEASE_GRANTS);
            rlaas_metrics_outcome_add(RLAAS_METRIC_LEASE_UNITS_GRANTED,
                                      (apr_uint64_t)granted);
            trace(r, &it[i], "taken, asked for", t->want[i]);
            trace(r, &it[i], "taken, granted", granted);
        }
        /* what this server now holds is the client's too */
        if (granted > t->a[i].cost)
            it[i].v.remaining += granted - t->a[i].cost;
    }
    return e;
}

/* The table failed at a record (took of n had their turn): the units
 * spent go back, a fetch begun ends with nothing, and what its last
 * portion left lapses. */
static void abandon(rlaas_local_t *table, rlaas_item_t *it, int took,
                    const turns_t *t)
{
    const rlaas_verdict_t none = {1, 0, 0, 0};
    int i;

    unspend_all(table, it, took, t);
    for (i = 0; i < took; i++) {
        if (t->what[i] != RLAAS_GRANT_FETCH)
            continue;
        rlaas_grant_put(table, it[i].call.key, it[i].call.key_len, &t->a[i],
                        rlaas_local_now_ms(), rlaas_clock_us(), 0, 0, 0, 0,
                        &none, RLAAS_LOCAL_LOCK_WAIT_US, NULL);
        returned(t->back[i].units, 0);
    }
}

/* fetch() for it[sub[0..m)]: 1 if Redis allowed them all, 0 if it
 * refused one (nothing was charged there), -1 if it could not answer
 * (*e, detail): every unit spent here then goes back. */
static int ask_redis(request_rec *r, rlaas_local_t *table, rlaas_item_t *it,
                     int n, const int *sub, int m, turns_t *t, rlaas_rerr_e *e,
                     char *detail)
{
    int j;

    if ((*e = fetch(r, table, it, sub, m, t, detail)) != RLAAS_RERR_NONE) {
        unspend_all(table, it, n, t);
        return -1;
    }
    for (j = 0; j < m && it[sub[j]].v.allowed; j++)
        ;
    return j == m;
}

/* Where the policies spent from portions held here spent (RLaaSCountIf's
 * refunds go back there). */
static void spent_some(rlaas_item_t *it, int n, const turns_t *t)
{
    int i;

    for (i = 0; i < n; i++) {
        if (t->what[i] == RLAAS_GRANT_SPENT)
            spent_from(&it[i], &t->from[i]);
    }
}

/* Redis refused the policies it[sub[0..m)] (nothing was charged there).
 * Early fetches may have left units here, taken before: each policy
 * spends them if it has some; those Redis allowed that have none are
 * asked once more, exactly (a second round trip, only where Redis ran
 * out of what this server holds); if one that Redis refused has none,
 * every unit spent goes back (all or nothing) and Redis' verdicts
 * stand. */
static rlaas_lease_e after_refusal(request_rec *r, rlaas_local_t *table,
                                   rlaas_item_t *it, int n, const int *sub,
                                   int m, turns_t *t, rlaas_rerr_e *e,
                                   char *detail)
{
    rlaas_verdict_t said[RLAAS_POLICIES_MAX];
    int rest[RLAAS_POLICIES_MAX];
    int i, j, k = 0, held = 1;

    for (j = 0; j < m; j++)
        said[j] = it[sub[j]].v;
    for (j = 0; j < m && held; j++) {
        i = sub[j];
        if (spend_held(table, &it[i], &t->a[i], &t->from[i]))
            t->what[i] = RLAAS_GRANT_SPENT;
        else if (said[j].allowed) {
            t->what[i] = RLAAS_GRANT_PLAIN; /* its fetch, if any, is over */
            rest[k++] = i;
        }
        else
            held = 0;
    }
    if (held && k == 0)
        return spent_here(r, it, n, t, "refused by Redis, spent here; left");
    if (held) {
        switch (ask_redis(r, table, it, n, rest, k, t, e, detail)) {
        case -1:
            return RLAAS_LEASE_FAILED;
        case 1:
            spent_some(it, n, t);
            return RLAAS_LEASE_DECIDED;
        }
        /* refused again: the second answer stands */
        unspend_all(table, it, n, t);
        return RLAAS_LEASE_DECIDED;
    }
    for (j = 0; j < m; j++)
        it[sub[j]].v = said[j];
    unspend_all(table, it, n, t);
    return RLAAS_LEASE_DECIDED;
}

/* Whether the policies of it[0..n) may take portions; NO (and why, where
 * one is said) if not. */
static rlaas_lease_e leasable(request_rec *r, const rlaas_dir_conf_t *d,
                              const rlaas_local_t *table, rlaas_item_t *it,
                              int n, int with)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    int i, why;

    /* nothing spent from a portion yet (RLaaSCountIf's refunds) */
    for (i = 0; i < n && i < RLAAS_POLICIES_MAX; i++)
        it[i].lease_at_ms = it[i].lease_at_us = 0;
    if (d == NULL || d->use.lease == RLAAS_LEASE_MODE_OFF || n < 1 ||
        n > RLAAS_POLICIES_MAX)
        return RLAAS_LEASE_NO;
    for (i = 0; i < n; i++) {
        /* a slot in flight is no quota to take a portion of; a tenant's
         * lease is its own limit's alone */
        if (it[i].conc || (it[i].p != NULL && (d->by_tenant & RLAAS_T_LEASE)))
            return RLAAS_LEASE_NO;
    }
    for (i = 0; i < n; i++) {
        if ((why = why_not(d, &it[i], with)) >= 0)
            return not_here(r, d, &it[i], (rlaas_lease_not_e)why);
    }
    if (table == NULL || sc->target->redis == NULL)
        return RLAAS_LEASE_NO;
    if (!one_slot(sc, it, n))
        return not_here(r, d, it, RLAAS_LEASE_NOT_POLICIES);
    return RLAAS_LEASE_DECIDED;
}

rlaas_lease_e rlaas_lease_decide(request_rec *r, const rlaas_dir_conf_t *d,
                                 rlaas_item_t *it, int n, int with,
                                 rlaas_rerr_e *e, char *detail)
{
    rlaas_local_t *table = rlaas_backend_table();
    int64_t now_us;
    int sub[RLAAS_POLICIES_MAX];
    int i, m, took, fetches, plain, quiet = 0;
    turns_t t;

    if (leasable(r, d, table, it, n, with) != RLAAS_LEASE_DECIDED)
        return RLAAS_LEASE_NO;
    now_us = rlaas_clock_us();
    for (i = 0; i < n; i++) {
        ask_of(d, &it[i], &t.a[i]);
        if (t.a[i].cost < 1)
            return RLAAS_LEASE_NO; /* a check (cost 0) is asked of Redis */
        t.sn[i].slot = NULL;
    }
    /* auto: a quiet identity costs the table nothing (each key noted) */
    for (i = 0; i < n && t.a[0].adaptive && seen != NULL; i++)
        quiet |= !seen_lately(
            &t.sn[i], it[i].call.key, it[i].call.key_len, now_us / 1000,
            rlaas_grant_lease_ms(t.a[i].window_ms, -1), t.a[i].window_ms);
    if (quiet) {
        rlaas_metrics_lease_fallback(RLAAS_LEASE_NOT_QUIET);
        return RLAAS_LEASE_NO;
    }
    if ((took = take_all(table, it, n, &t, now_us)) < n) {
        abandon(table, it, took, &t);
        rlaas_metrics_lease_fallback(RLAAS_LEASE_NOT_TABLE);
        return RLAAS_LEASE_NO;
    }
    for (i = m = fetches = plain = 0; i < n; i++) {
        if (t.what[i] == RLAAS_GRANT_SPENT)
            continue;
        sub[m++] = i;
        fetches += t.what[i] == RLAAS_GRANT_FETCH;
        plain += t.what[i] == RLAAS_GRANT_PLAIN;
    }
    if (m == 0)
        return spent_here(r, it, n, &t,
                          "spent, units left and Redis' remaining");
    if (m == n && fetches == 0) {
        /* a fetch in flight, or (auto) an identity too quiet for a
         * portion: one exact call of its own */
        rlaas_metrics_lease_fallback(plain ? RLAAS_LEASE_NOT_IN_FLIGHT
                                           : RLAAS_LEASE_NOT_QUIET);
        return RLAAS_LEASE_NO;
    }
    /* the policies with units here spend them; one round trip decides
     * the others (and takes new portions) */
    switch (ask_redis(r, table, it, n, sub, m, &t, e, detail)) {
    case -1:
        return RLAAS_LEASE_FAILED;
    case 0:
        return after_refusal(r, table, it, n, sub, m, &t, e, detail);
    }
    spent_some(it, n, &t);
    return RLAAS_LEASE_DECIDED;
}
