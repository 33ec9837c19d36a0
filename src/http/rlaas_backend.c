#include "rlaas_backend.h"

#include "http_log.h"
#include "apr_shm.h"
#include "apr_strings.h"

#include "rlaas_clock.h"
#include "rlaas_config.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"
#include "rlaas_shm.h"

APLOG_USE_MODULE(rlaas);

#define SHM_KEY "rlaas_local_shm"

/* Evictions say the table is too small: one line a minute per child is
 * enough to tell, with the count since the line before. */
#define EVICT_LOG_INTERVAL_S 60

/* Set in the parent before children fork; NULL when no table could be
 * made (then local decisions fail and the section's policy applies). */
static rlaas_local_t *table;

static rlaas_log_gate_t gate_evicted;
static rlaas_log_gate_t gate_reset;
static rlaas_log_gate_t gate_full;
static volatile apr_uint32_t evicted_unlogged;
static volatile apr_uint32_t limiting_unlogged;
static volatile apr_uint32_t full_unlogged;

/* About how many identities of one small record each the table holds. */
static apr_uint64_t room(const rlaas_table_stats_t *st)
{
    return st->chunks * 64 / rlaas_table_record_bytes(40, 40);
}

static void log_table(server_rec *s, const char *how)
{
    rlaas_table_stats_t st;

    rlaas_table_stats(table, &st);
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s,
                 "RLAAS0060: local engine table %s: %" APR_UINT64_T_FMT
                 " bytes in %u stripes, room for about %" APR_UINT64_T_FMT
                 " identities, %" APR_UINT64_T_FMT " held",
                 how, st.bytes, st.stripes, room(&st), st.records);
}

/* A new segment, its table laid out with a secret of its own. */
static apr_shm_t *create(server_rec *s, apr_pool_t *keep, apr_size_t size)
{
    uint8_t seed[RLAAS_TABLE_SEED_LEN];
    apr_status_t rv;
    apr_shm_t *shm = rlaas_shm_make(keep, SHM_KEY, size, &rv);

    if (shm != NULL)
        rv = apr_generate_random_bytes(seed, sizeof(seed));
    if (shm != NULL && rv == APR_SUCCESS) {
        table = rlaas_table_init(apr_shm_baseaddr_get(shm), size, seed);
        if (table != NULL)
            return shm;
        rv = APR_ENOMEM;
    }
    /* no table in it: not kept, for the next start to find */
    rlaas_shm_drop(keep, SHM_KEY);
    ap_log_error(
        APLOG_MARK, APLOG_ERR, rv, s,
        "RLAAS0065: cannot make the local engine's table of %" APR_SIZE_T_FMT
        " bytes (" RLAAS_D_LOCAL_SIZE "); local decisions fail and "
        "get each section's " RLAAS_D_FAIL_OPEN " policy",
        size);
    return NULL;
}

int rlaas_backend_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                              apr_pool_t *ptemp, server_rec *s)
{
    apr_pool_t *keep = s->process->pool;
    apr_size_t size = (apr_size_t)rlaas_server_local_size(rlaas_server_conf(s));
    apr_shm_t *shm = rlaas_shm_kept(keep, SHM_KEY);
    int other = 0;

    (void)pconf;
    (void)plog;
    (void)ptemp;
    /* the metrics show the table's counters as this engine reads them */
    rlaas_metrics_table_source(rlaas_backend_stats);
    if (shm != NULL) {
        table =
            apr_shm_size_get(shm) == size
                ? rlaas_table_attach(apr_shm_baseaddr_get(shm), size, &other)
                : NULL;
        if (table != NULL) {
            log_table(s, "kept across the restart");
            return OK;
        }
        if (other)
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                         "RLAAS0171: the local engine's table was laid out "
                         "by another version of mod_rlaas: a new table; its "
                         "identities start afresh");
        else
            ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                         "RLAAS0064: " RLAAS_D_LOCAL_SIZE
                         " changed (%" APR_SIZE_T_FMT
                         " bytes, was %" APR_SIZE_T_FMT "): a new local engine "
                         "table; its identities start afresh",
                         size, apr_shm_size_get(shm));
    }
    if (create(s, keep, size) == NULL)
        return OK; /* Apache starts anyway, as without Redis */
    log_table(s, "made");
    return OK;
}

static void log_evicted(request_rec *r, const rlaas_table_report_t *rep)
{
    long dropped;

    apr_atomic_add32(&evicted_unlogged, rep->evicted);
    apr_atomic_add32(&limiting_unlogged, rep->limiting);
    dropped = rlaas_log_gate_pass(&gate_evicted, rlaas_clock_us(),
                                  EVICT_LOG_INTERVAL_S);
    if (dropped < 0)
        return;
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                  "RLAAS0061: the local engine's table is full: %u "
                  "identities evicted for newcomers of their own zone (%u of "
                  "them still limited), least recently used first, by this "
                  "child since its last such line; a larger " RLAAS_D_LOCAL_SIZE
                  " keeps them longer",
                  apr_atomic_xchg32(&evicted_unlogged, 0),
                  apr_atomic_xchg32(&limiting_unlogged, 0));
}

/* A newcomer (or a ban) found no room: what the table must keep (live
 * bans, other zones' state that still limits) fills its stripe. At most
 * once a second per child, with how many since the line before. */
static void log_full(request_rec *r, unsigned n)
{
    apr_atomic_add32(&full_unlogged, n);
    if (rlaas_log_gate_pass(&gate_full, rlaas_clock_us(), 1) < 0)
        return;
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                  "RLAAS0170: the local engine's table had no room for %u "
                  "new identities or bans (this child, since its last such "
                  "line): live bans and other zones' state that still "
                  "limits fill their part of the table and are kept; each "
                  "such request gets its section's " RLAAS_D_FAIL_OPEN
                  " policy, a ban is not started. A larger " RLAAS_D_LOCAL_SIZE
                  " makes room",
                  apr_atomic_xchg32(&full_unlogged, 0));
}

static void log_reset(request_rec *r, unsigned lost)
{
    if (rlaas_log_gate_pass(&gate_reset, rlaas_clock_us(), 1) < 0)
        return;
    ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
                  "RLAAS0062: a process died while changing the local "
                  "engine's table: one stripe of it was checked and "
                  "repaired; %u identities in it start afresh",
                  lost);
}

rlaas_lerr_e rlaas_backend_eval(request_rec *r, const rlaas_local_call_t *calls,
                                int n, rlaas_verdict_t *v)
{
    rlaas_table_report_t rep;
    rlaas_lerr_e e;

    e = rlaas_local_eval_n(table, calls, n, rlaas_local_now_ms(), v, &rep,
                           NULL);
    if (rep.evicted > 0)
        log_evicted(r, &rep);
    if (rep.full > 0)
        log_full(r, rep.full);
    if (rep.reset)
        log_reset(r, rep.lost);
    return e;
}

rlaas_lerr_e rlaas_backend_credit(request_rec *r,
                                  const rlaas_local_call_t *calls, int n,
                                  int64_t age_ms, int64_t *given)
{
    rlaas_table_report_t rep;
    rlaas_lerr_e e;

    e = rlaas_local_credit_n(table, calls, n, age_ms, rlaas_local_now_ms(),
                             given, &rep, NULL);
    if (r != NULL && rep.evicted > 0)
        log_evicted(r, &rep);
    if (r != NULL && rep.reset)
        log_reset(r, rep.lost);
    return e;
}

rlaas_lerr_e rlaas_backend_release(request_rec *r,
                                   const rlaas_local_call_t *calls, int n,
                                   int *removed)
{
    rlaas_table_report_t rep;
    rlaas_lerr_e e;

    e = rlaas_local_release_n(table, calls, n, rlaas_local_now_ms(), removed,
                              &rep, NULL);
    if (r != NULL && rep.reset)
        log_reset(r, rep.lost);
    return e;
}

int rlaas_backend_stats(rlaas_table_stats_t *st)
{
    if (table == NULL)
        return 0;
    rlaas_table_stats(table, st);
    return 1;
}

rlaas_local_t *rlaas_backend_table(void)
{
    return table;
}
