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
#include "rlaas_target.h"

APLOG_USE_MODULE(rlaas);

/* Why a section's RLaaSLease on does not apply to a request
 * (rlaas_lease_not_e): each said once per child, at notice level (a
 * configuration choice, not a fault), and counted
 * (rlaas_lease_fallbacks_total). Under auto nothing is said: the operator
 * asked for a lease only where one applies. */
static const char *const whys[RLAAS_LEASE_NOT_COUNT] = {
    "the request meets several policies (RLaaSApply, RLaaSEnforce), "
    "decided together",
    "the sliding log (sliding_log) keeps no count to share out",
    "a dry run (RLaaSDryRun on)",
    "bans (RLaaSBan, or a ban of its zone honoured): a ban is read with "
    "every decision",
    "a calendar window (RLaaSWindow N calendar): its periods are Redis' "
    "to pick",
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

rlaas_lease_e rlaas_lease_decide(request_rec *r, const rlaas_dir_conf_t *d,
                                 rlaas_item_t *it, int n, int with,
                                 rlaas_rerr_e *e, char *detail)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(r->server);
    rlaas_local_t *table = rlaas_backend_table();
    /* the request's verdict, the grant, the units given back, Redis'
     * time (in remaining) */
    rlaas_verdict_t v[4] = {
        {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
    rlaas_grant_back_t back;
    rlaas_grant_from_t from = {0, 0};
    rlaas_ban_conf_t ban;
    seen_t sn = {NULL, 0, 0};
    rlaas_grant_ask_t a;
    rlaas_grant_e what;
    rlaas_call_t call;
    int64_t want = 0, sent, granted, now_us, lapsed = 0;

    it->lease_at_ms = it->lease_at_us = 0;
    /* a tenant's lease is its own limit's alone */
    /* a slot in flight is no quota to take a portion of */
    if (d == NULL || d->use.lease == RLAAS_LEASE_MODE_OFF || n < 1 ||
        it->conc || (it->p != NULL && (d->by_tenant & RLAAS_T_LEASE)))
        return RLAAS_LEASE_NO;
    if (n > 1)
        return not_here(r, d, it, RLAAS_LEASE_NOT_POLICIES);
    if (it->call.strategy == RLAAS_STRATEGY_SLIDING_LOG)
        return not_here(r, d, it, RLAAS_LEASE_NOT_LOG);
    if (it->cal != NULL)
        return not_here(r, d, it, RLAAS_LEASE_NOT_CALENDAR);
    if (it->dry_run || (it->call.mode & RLAAS_MODE_DRY_RUN))
        return not_here(r, d, it, RLAAS_LEASE_NOT_DRY_RUN);
    /* a limit read per request (RLaaSLimit expr=, the only mode left
     * here) is leased per limit: the record is made for one
     * (rlaas_grant_take), and a request of another takes a portion of
     * its own */
    if (rlaas_outcome_ban(d, &ban) || (with & RLAAS_LEASE_WITH_BAN))
        return not_here(r, d, it, RLAAS_LEASE_NOT_BAN);
    if (it->bytes_unit > 0)
        return not_here(r, d, it, RLAAS_LEASE_NOT_BYTES);
    if (table == NULL || sc->target->redis == NULL)
        return RLAAS_LEASE_NO;
    ask_of(d, it, &a);
    if (a.cost < 1)
        return RLAAS_LEASE_NO; /* a check (cost 0) is asked of Redis */
    now_us = rlaas_clock_us();
    if (a.adaptive && seen != NULL &&
        !seen_lately(&sn, it->call.key, it->call.key_len, now_us / 1000,
                     rlaas_grant_lease_ms(a.window_ms, -1), a.window_ms)) {
        rlaas_metrics_lease_fallback(RLAAS_LEASE_NOT_QUIET);
        return RLAAS_LEASE_NO;
    }
    if (rlaas_grant_spend(table, it->call.key, it->call.key_len, &a,
                          rlaas_local_now_ms(), now_us,
                          RLAAS_LOCAL_LOCK_WAIT_US, 0, &what, &want, &back,
                          &from, &it->v) != RLAAS_TABLE_OK) {
        rlaas_metrics_lease_fallback(RLAAS_LEASE_NOT_TABLE);
        return RLAAS_LEASE_NO;
    }
    if (sn.slot != NULL && what != RLAAS_GRANT_PLAIN)
        seen_holds(&sn, what != RLAAS_GRANT_QUIET);
    if (what == RLAAS_GRANT_SPENT) {
        spent_from(it, &from);
        rlaas_metrics_outcome(RLAAS_METRIC_LEASE_SPENDS);
        trace(r, it, "spent, units left and Redis' remaining", it->v.remaining);
        return RLAAS_LEASE_DECIDED;
    }
    if (what == RLAAS_GRANT_PLAIN || what == RLAAS_GRANT_QUIET) {
        /* a fetch in flight, or (auto) an identity too quiet for a
         * portion: one exact call of its own */
        rlaas_metrics_lease_fallback(what == RLAAS_GRANT_PLAIN
                                         ? RLAAS_LEASE_NOT_IN_FLIGHT
                                         : RLAAS_LEASE_NOT_QUIET);
        return RLAAS_LEASE_NO;
    }
    /* one round trip takes the request's verdict and a new lease */
    call = it->call;
    call.lease_want = want;
    /* and gives back what the last portion left to lapse */
    call.lease_back = back.units;
    call.lease_back_at = back.at_ms;
    sent = rlaas_clock_us();
    *e = rlaas_redis_eval(sc->target->redis, &call, 1, v, detail);
    if (*e != RLAAS_RERR_NONE) {
        /* no answer: the fetch ends, nothing is known of a refusal, nor
         * of a give-back (lapsed, as far as anyone here knows) */
        v[0].allowed = 1;
        v[0].retry_ms = 0;
        v[1].allowed = 0;
        v[2].remaining = 0;
    }
    returned(back.units, v[2].remaining);
    granted = v[1].allowed ? v[1].remaining : 0;
    if (rlaas_grant_put(table, it->call.key, it->call.key_len, &a,
                        rlaas_local_now_ms(), sent, granted,
                        granted > 0 ? v[1].reset_ms : 0,
                        granted > 0 ? v[1].retry_ms : 0, v[3].remaining, &v[0],
                        RLAAS_LOCAL_LOCK_WAIT_US, &lapsed) == RLAAS_TABLE_OK &&
        lapsed > 0)
        rlaas_metrics_outcome_add(RLAAS_METRIC_LEASE_UNITS_LAPSED,
                                  (apr_uint64_t)lapsed);
    if (granted > 0) {
        rlaas_metrics_outcome(RLAAS_METRIC_LEASE_GRANTS);
        rlaas_metrics_outcome_add(RLAAS_METRIC_LEASE_UNITS_GRANTED,
                                  (apr_uint64_t)granted);
    }
    if (*e != RLAAS_RERR_NONE)
        return RLAAS_LEASE_FAILED;
    /* Redis has nothing left, but an early fetch may have left units
     * here, taken before: spent rather than refused */
    if (!v[0].allowed &&
        rlaas_grant_spend(table, it->call.key, it->call.key_len, &a,
                          rlaas_local_now_ms(), rlaas_clock_us(),
                          RLAAS_LOCAL_LOCK_WAIT_US, 1, &what, &want, NULL,
                          &from, &it->v) == RLAAS_TABLE_OK &&
        what == RLAAS_GRANT_SPENT) {
        spent_from(it, &from);
        rlaas_metrics_outcome(RLAAS_METRIC_LEASE_SPENDS);
        trace(r, it, "refused by Redis, spent here; left", it->v.remaining);
        return RLAAS_LEASE_DECIDED;
    }
    it->v = v[0];
    /* what this server now holds is the client's too */
    if (granted > a.cost)
        it->v.remaining += granted - a.cost;
    trace(r, it, "taken, asked for", want);
    trace(r, it, "taken, granted", granted);
    return RLAAS_LEASE_DECIDED;
}
