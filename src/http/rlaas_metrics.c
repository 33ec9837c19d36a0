#include "rlaas_metrics.h"

#include "http_log.h"
#include "http_protocol.h"
#include "apr_atomic.h"
#include "apr_shm.h"
#include "apr_strings.h"
#include "ap_mpm.h"
#include "mod_status.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "rlaas_headers.h"
#include "rlaas_shm.h"
#include "rlaas_version.h"

APLOG_USE_MODULE(rlaas);

#define SHM_KEY "rlaas_metrics_shm"

/* Latency bucket upper bounds: microseconds, and as exposed (seconds). */
static const apr_uint32_t lat_bounds_us[] = {100,   250,    500,    1000,
                                             2500,  5000,   10000,  25000,
                                             50000, 100000, 250000, 1000000};
static const char *const lat_labels[] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
    "0.025",  "0.05",    "0.1",    "0.25",  "1",      "+Inf"};
#define LAT_N (sizeof(lat_bounds_us) / sizeof(lat_bounds_us[0]))

typedef struct {
    apr_uint64_t decisions[RLAAS_STRATEGY_COUNT][RLAAS_OUT_COUNT];
    apr_uint64_t redis_errors[RLAAS_RERR_COUNT];
    apr_uint64_t local_errors[RLAAS_LERR_COUNT];
    apr_uint64_t latency[LAT_N + 1]; /* per bucket, last is +Inf */
    apr_uint64_t latency_sum_us;
    apr_uint64_t connects;
    apr_uint64_t script_loads;
    apr_uint64_t circuit_opened;
    apr_uint64_t outcome[RLAAS_METRIC_OUTCOME_COUNT]; /* bans, countif, ... */
    apr_uint64_t lease_not[RLAAS_LEASE_NOT_COUNT];
    apr_uint32_t nslots; /* gauge slots that follow the counters */
} rlaas_counters_t;

/* One Redis node's counters (a cluster's nodes, a Sentinel master, or
 * the one Redis). A slot is claimed by the first child that reports the
 * node: state 0 free, 1 being named, 2 named. */
#define NODE_NAME_MAX 96
typedef struct {
    apr_uint32_t state;
    char name[NODE_NAME_MAX];
    apr_uint64_t calls;
    apr_uint64_t failures[RLAAS_RERR_COUNT];
} rlaas_node_t;

/* A row of decisions by policy, after the gauge slots. The last row is
 * "other". */
typedef struct {
    char name[RLAAS_NAME_MAX + 1]; /* "" free */
    apr_uint64_t n[RLAAS_OUT_COUNT];
} rlaas_policy_row_t;

#define POLICY_ROWS (RLAAS_METRICS_POLICY_ROWS + 1)

/* Names registered while the configuration is read, and their rows. */
typedef struct {
    const char *name;
    int policy; /* a declared policy's name: a row before any zone */
    int row;
} rlaas_metric_name_t;

static apr_array_header_t *names; /* of rlaas_metric_name_t */
static rlaas_policy_row_t *rows;

/* One child's gauges. A child claims a free slot (pid 0, or the pid of a
 * process that is gone) in child_init and clears it when it leaves; a
 * reader sums the slots whose process is alive, so a child killed with
 * its connections open or its circuit open leaves nothing behind. */
typedef struct {
    apr_uint32_t pid;
    apr_uint32_t connections;
    apr_uint32_t circuits;
    /* the console's view of this child (rlaas_metrics_children) */
    apr_uint64_t calls;      /* script calls timed */
    apr_uint64_t latency_us; /* their round trips, summed */
    apr_uint64_t errors;     /* Redis errors, all kinds */
} rlaas_slot_t;

/* Set in the parent before children fork; NULL if the segment could not
 * be made, which disables metrics and nothing else. */
static rlaas_counters_t *counters;
static rlaas_slot_t *slots;
static rlaas_node_t *nodes; /* RLAAS_METRICS_NODES of them */
/* This child's slot; NULL in the parent, or when every slot was taken. */
static rlaas_slot_t *my_slot;

static const char *const lease_not_names[RLAAS_LEASE_NOT_COUNT] = {
    "policies", "sliding_log", "dry_run", "ban",
    "bytes",    "in_flight",   "table",   "quiet"};

static const char *const outcome_names[RLAAS_OUT_COUNT] = {
    "allowed",        "denied", "error",       "fail_open",
    "dry_run_denied", "local",  "local_denied"};
/* The same, as keys of server-status?auto. */
static const char *const outcome_keys[RLAAS_OUT_COUNT] = {
    "RLaaSAllowed",      "RLaaSDenied", "RLaaSError",      "RLaaSFailOpen",
    "RLaaSDryRunDenied", "RLaaSLocal",  "RLaaSLocalDenied"};

const char *rlaas_outcome_name(rlaas_outcome_e o)
{
    return o >= 0 && o < RLAAS_OUT_COUNT ? outcome_names[o] : "unknown";
}

/* Children of this generation and of the one before (a graceful restart
 * overlaps them), with room to spare. */
static apr_uint32_t slot_count(void)
{
    int daemons = 0;

    if (ap_mpm_query(AP_MPMQ_HARD_LIMIT_DAEMONS, &daemons) != APR_SUCCESS ||
        daemons < 1)
        daemons = 256;
    return (apr_uint32_t)daemons * 2 + 16;
}

void rlaas_metrics_names_reset(apr_pool_t *pconf)
{
    names = apr_array_make(pconf, 16, sizeof(rlaas_metric_name_t));
    rlaas_metrics_name(RLAAS_POLICY_DEFAULT, 1);
}

int rlaas_metrics_name(const char *name, int is_policy)
{
    rlaas_metric_name_t *e;
    int i;

    if (names == NULL)
        return -1;
    for (i = 0; i < names->nelts; i++) {
        e = &APR_ARRAY_IDX(names, i, rlaas_metric_name_t);
        if (strcmp(e->name, name) == 0) {
            e->policy |= is_policy;
            return i;
        }
    }
    e = apr_array_push(names);
    e->name = apr_pstrdup(names->pool, name);
    e->policy = is_policy;
    e->row = POLICY_ROWS - 1;
    return i;
}

int rlaas_metrics_default_name(void)
{
    return 0;
}

static int row_of(const char *name)
{
    int i;

    for (i = 0; i < POLICY_ROWS - 1; i++) {
        if (strcmp(rows[i].name, name) == 0)
            return i;
    }
    return -1;
}

/* New names of one kind (policies, then zones) take free rows, or rows
 * no name of this configuration holds, cleared; past the table's end
 * they are counted as "other". */
static void assign_new(char *used, int policies)
{
    int i, r = 0;

    for (i = 0; i < names->nelts; i++) {
        rlaas_metric_name_t *e = &APR_ARRAY_IDX(names, i, rlaas_metric_name_t);

        if (e->row >= 0 || e->policy != policies)
            continue;
        while (r < POLICY_ROWS - 1 && used[r])
            r++;
        if (r == POLICY_ROWS - 1) {
            e->row = POLICY_ROWS - 1;
            continue;
        }
        memset(&rows[r], 0, sizeof(rows[r]));
        apr_cpystrn(rows[r].name, e->name, sizeof(rows[r].name));
        used[r] = 1;
        e->row = r;
    }
}

/* Each name keeps the row it had, so counts survive a restart. */
static void assign_rows(void)
{
    char *used = calloc(POLICY_ROWS, 1);
    int i;

    if (used == NULL || names == NULL) {
        free(used);
        return;
    }
    for (i = 0; i < names->nelts; i++) {
        rlaas_metric_name_t *e = &APR_ARRAY_IDX(names, i, rlaas_metric_name_t);

        e->row = row_of(e->name);
        if (e->row >= 0)
            used[e->row] = 1;
    }
    assign_new(used, 1);
    assign_new(used, 0);
    apr_cpystrn(rows[POLICY_ROWS - 1].name, RLAAS_METRICS_OTHER,
                sizeof(rows[0].name));
    free(used);
}

int rlaas_metrics_post_config(apr_pool_t *pconf, apr_pool_t *plog,
                              apr_pool_t *ptemp, server_rec *s)
{
    apr_pool_t *keep = s->process->pool;
    apr_shm_t *shm = NULL;
    apr_uint32_t n = slot_count();
    apr_size_t size = sizeof(rlaas_counters_t) + n * sizeof(rlaas_slot_t) +
                      RLAAS_METRICS_NODES * sizeof(rlaas_node_t) +
                      POLICY_ROWS * sizeof(rlaas_policy_row_t);
    apr_status_t rv;

    (void)pconf;
    (void)plog;
    (void)ptemp;
    shm = rlaas_shm_sized(keep, SHM_KEY, size, &rv);
    if (shm == NULL) {
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                     "RLAAS0030: cannot create shared memory for "
                     "metrics; metrics are disabled");
        counters = NULL;
        slots = NULL;
        nodes = NULL;
        rows = NULL;
        return OK;
    }
    counters = apr_shm_baseaddr_get(shm);
    counters->nslots = n;
    slots = (rlaas_slot_t *)(counters + 1);
    nodes = (rlaas_node_t *)(slots + n);
    rows = (rlaas_policy_row_t *)(nodes + RLAAS_METRICS_NODES);
    assign_rows();
    return OK;
}

/* Alive, and not a zombie we could confuse with it: kill(0) is enough
 * here, since a reused pid is an httpd child claiming the slot anew. */
static int alive(apr_uint32_t pid)
{
    return pid != 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static apr_status_t slot_release(void *data)
{
    rlaas_slot_t *sl = data;

    apr_atomic_set32(&sl->connections, 0);
    apr_atomic_set32(&sl->circuits, 0);
    apr_atomic_set32(&sl->pid, 0);
    my_slot = NULL;
    return APR_SUCCESS;
}

void rlaas_metrics_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_uint32_t me = (apr_uint32_t)getpid(), i;

    (void)s;
    if (slots == NULL)
        return;
    for (i = 0; i < counters->nslots && my_slot == NULL; i++) {
        rlaas_slot_t *sl = &slots[i];
        apr_uint32_t pid = apr_atomic_read32(&sl->pid);

        if ((pid == 0 || pid == me || !alive(pid)) &&
            apr_atomic_cas32(&sl->pid, me, pid) == pid) {
            apr_atomic_set32(&sl->connections, 0);
            apr_atomic_set32(&sl->circuits, 0);
            apr_atomic_set64(&sl->calls, 0);
            apr_atomic_set64(&sl->latency_us, 0);
            apr_atomic_set64(&sl->errors, 0);
            my_slot = sl;
        }
    }
    if (my_slot != NULL)
        apr_pool_cleanup_register(pchild, my_slot, slot_release,
                                  apr_pool_cleanup_null);
}

/* The sum of a gauge over the children alive. */
static apr_uint32_t gauge(size_t offset)
{
    apr_uint32_t i, sum = 0;

    for (i = 0; slots != NULL && i < counters->nslots; i++) {
        if (alive(apr_atomic_read32(&slots[i].pid)))
            sum += apr_atomic_read32(
                (volatile apr_uint32_t *)((char *)&slots[i] + offset));
    }
    return sum;
}

#define GAUGE(field) gauge(APR_OFFSETOF(rlaas_slot_t, field))

void rlaas_metrics_decision(rlaas_strategy_e st, rlaas_outcome_e o)
{
    /* a concurrency limit has counters of its own (write_outcome) */
    if (counters != NULL && st >= 0 && st < RLAAS_STRATEGY_COUNT)
        apr_atomic_inc64(&counters->decisions[st][o]);
}

void rlaas_metrics_policy(int handle, rlaas_outcome_e o)
{
    int row = POLICY_ROWS - 1;

    if (rows == NULL)
        return;
    if (names != NULL && handle >= 0 && handle < names->nelts)
        row = APR_ARRAY_IDX(names, handle, rlaas_metric_name_t).row;
    apr_atomic_inc64(&rows[row].n[o]);
}

void rlaas_metrics_redis_error(rlaas_rerr_e e)
{
    if (counters != NULL)
        apr_atomic_inc64(&counters->redis_errors[e]);
    if (my_slot != NULL)
        apr_atomic_inc64(&my_slot->errors);
}

void rlaas_metrics_local_error(rlaas_lerr_e e)
{
    if (counters != NULL && e > 0 && e < RLAAS_LERR_COUNT)
        apr_atomic_inc64(&counters->local_errors[e]);
}

void rlaas_metrics_latency(apr_interval_time_t t)
{
    size_t i = 0;

    if (counters == NULL)
        return;
    if (t < 0)
        t = 0;
    while (i < LAT_N && t > (apr_interval_time_t)lat_bounds_us[i])
        i++;
    apr_atomic_inc64(&counters->latency[i]);
    apr_atomic_add64(&counters->latency_sum_us, (apr_uint64_t)t);
    if (my_slot != NULL) {
        apr_atomic_inc64(&my_slot->calls);
        apr_atomic_add64(&my_slot->latency_us, (apr_uint64_t)t);
    }
}

/* Something opened (counted in all) or closed, and how many of it this
 * child has open now (its slot's gauge, if it has a slot). */
static void opened_closed(volatile apr_uint64_t *all,
                          volatile apr_uint32_t *mine, int opened)
{
    if (opened > 0)
        apr_atomic_inc64(all);
    if (mine == NULL)
        return;
    if (opened > 0)
        apr_atomic_inc32(mine);
    else
        apr_atomic_dec32(mine);
}

void rlaas_metrics_connection(int opened)
{
    if (counters != NULL)
        opened_closed(&counters->connects,
                      my_slot != NULL ? &my_slot->connections : NULL, opened);
}

static rlaas_node_t *node_slot(const char *name)
{
    size_t len = strlen(name);
    int i;

    if (nodes == NULL || len >= NODE_NAME_MAX)
        return NULL;
    for (i = 0; i < RLAAS_METRICS_NODES; i++) {
        rlaas_node_t *nd = &nodes[i];
        apr_uint32_t st = apr_atomic_read32(&nd->state);

        if (st == 2 && strcmp(nd->name, name) == 0)
            return nd;
        if (st == 0 && apr_atomic_cas32(&nd->state, 1, 0) == 0) {
            memcpy(nd->name, name, len + 1);
            apr_atomic_set32(&nd->state, 2);
            return nd;
        }
        /* state 1: another child is naming it, maybe this very node: a
         * second slot for it is harmless (write_nodes() adds twins up) */
    }
    return NULL;
}

void rlaas_metrics_node(const char *node, rlaas_rerr_e e, int calls)
{
    rlaas_node_t *nd = node_slot(node);

    if (nd == NULL)
        return;
    apr_atomic_add64(&nd->calls, (apr_uint64_t)calls);
    if (e > RLAAS_RERR_NONE && e < RLAAS_RERR_COUNT)
        apr_atomic_inc64(&nd->failures[e]);
}

void rlaas_metrics_script_load(void)
{
    if (counters != NULL)
        apr_atomic_inc64(&counters->script_loads);
}

void rlaas_metrics_circuit(int opened)
{
    if (counters != NULL)
        opened_closed(&counters->circuit_opened,
                      my_slot != NULL ? &my_slot->circuits : NULL, opened);
}

/* ---- the operator's console (rlaas_admin) ---- */

int rlaas_metrics_children(rlaas_child_health_t *out, int max)
{
    apr_uint32_t i;
    int n = 0;

    for (i = 0; slots != NULL && i < counters->nslots && n < max; i++) {
        rlaas_slot_t *sl = &slots[i];
        apr_uint32_t pid = apr_atomic_read32(&sl->pid);

        if (!alive(pid))
            continue;
        out[n].pid = pid;
        out[n].connections = apr_atomic_read32(&sl->connections);
        out[n].circuits = apr_atomic_read32(&sl->circuits);
        out[n].calls = apr_atomic_read64(&sl->calls);
        out[n].latency_us = apr_atomic_read64(&sl->latency_us);
        out[n].errors = apr_atomic_read64(&sl->errors);
        n++;
    }
    return n;
}

int rlaas_metrics_names(void)
{
    return names != NULL ? names->nelts : 0;
}

const char *rlaas_metrics_name_of(int handle, int *is_policy)
{
    const rlaas_metric_name_t *e;

    if (names == NULL || handle < 0 || handle >= names->nelts)
        return NULL;
    e = &APR_ARRAY_IDX(names, handle, rlaas_metric_name_t);
    *is_policy = e->policy;
    return e->name;
}

/* ---- exposition ---- */

static apr_uint64_t rd(volatile apr_uint64_t *v)
{
    return apr_atomic_read64(v);
}

static void help(request_rec *r, const char *name, const char *type,
                 const char *text)
{
    ap_rprintf(r, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* The rows of this configuration's names, and "other". */
static void write_policies(request_rec *r)
{
    char *shown = calloc(POLICY_ROWS, 1);
    int i, o;

    if (rows == NULL || shown == NULL) {
        free(shown);
        return;
    }
    help(r, "rlaas_policy_decisions_total", "counter",
         "Decisions by policy (a section's own limit: its zone or "
         "default) and outcome.");
    for (i = 0; names != NULL && i <= names->nelts; i++) {
        int row = i < names->nelts
                      ? APR_ARRAY_IDX(names, i, rlaas_metric_name_t).row
                      : POLICY_ROWS - 1;

        if (shown[row])
            continue;
        shown[row] = 1;
        for (o = 0; o < RLAAS_OUT_COUNT; o++)
            ap_rprintf(r,
                       "rlaas_policy_decisions_total{policy=\"%s\","
                       "outcome=\"%s\"} %" APR_UINT64_T_FMT "\n",
                       rows[row].name, outcome_names[o], rd(&rows[row].n[o]));
    }
    free(shown);
}

static void write_decisions(request_rec *r, rlaas_counters_t *c)
{
    apr_uint64_t fail_open = 0;
    int st, o;

    help(r, "rlaas_decisions_total", "counter",
         "Rate-limit decisions by strategy and outcome.");
    for (st = 0; st < RLAAS_STRATEGY_COUNT; st++) {
        for (o = 0; o < RLAAS_OUT_COUNT; o++) {
            apr_uint64_t n = rd(&c->decisions[st][o]);

            if (o == RLAAS_OUT_FAIL_OPEN)
                fail_open += n;
            ap_rprintf(r,
                       "rlaas_decisions_total{strategy=\"%s\","
                       "outcome=\"%s\"} %" APR_UINT64_T_FMT "\n",
                       rlaas_strategy_name(st), outcome_names[o], n);
        }
    }
    write_policies(r);
    help(r, "rate_limiter_fail_open_total", "counter",
         "Requests allowed because the limiter could not decide.");
    ap_rprintf(r, "rate_limiter_fail_open_total %" APR_UINT64_T_FMT "\n",
               fail_open);
}

/* RLaaSBan and RLaaSCountIf. */
static void write_outcome(request_rec *r, rlaas_counters_t *c)
{
    static const char *const name[RLAAS_METRIC_OUTCOME_COUNT] = {
        "rlaas_bans_total",
        "rlaas_ban_refusals_total",
        "rlaas_countif_charges_total",
        "rlaas_countif_refunds_total",
        "rlaas_countif_refunds_lost_total",
        "rlaas_concurrency_taken_total",
        "rlaas_concurrency_released_total",
        "rlaas_concurrency_lost_total",
        "rlaas_concurrency_refused_total",
        "rlaas_bytes_charged_total",
        "rlaas_bytes_lost_total",
        "rlaas_lease_grants_total",
        "rlaas_lease_units_granted_total",
        "rlaas_lease_spends_total",
        "rlaas_lease_units_lapsed_total",
        "rlaas_lease_units_returned_total"};
    static const char *const text[RLAAS_METRIC_OUTCOME_COUNT] = {
        "Bans started (RLaaSBan).",
        "Requests refused by a ban.",
        "Requests whose charge stood once the response was known "
        "(RLaaSCountIf: the condition held).",
        "Charges given back once the response was known (RLaaSCountIf: "
        "the condition did not hold).",
        "Charges that could not be given back (RLaaSCountIf): they stand, "
        "the client's quota lower by them until they expire.",
        "Slots taken by requests admitted (RLaaSConcurrency).",
        "Slots given back once httpd was done with the request.",
        "Slots that could not be given back: free once their holder is "
        "gone (local engine) or after RLaaSConcurrencyTimeout (Redis).",
        "Requests refused for want of a slot (RLaaSConcurrency).",
        "Bytes of responses charged to their limits after them "
        "(RLaaSCost bytes, cost=bytes), each response once.",
        "Bytes of responses of which a charge failed (RLAAS0210): served "
        "free to that limit.",
        "Portions of a quota taken from Redis (RLaaSLease), each with the "
        "request that asked for it.",
        "Units of those portions, the asking requests' own cost included.",
        "Requests decided from a portion this server held: no round trip.",
        "Units of portions that ran out of time unspent and were not given "
        "back (charged in Redis: the fleet admits fewer, never more).",
        "Units of portions that ran out of time unspent, given back to "
        "Redis with their identity's next portion."};
    apr_uint64_t taken, back;
    int i;

    for (i = 0; i < RLAAS_METRIC_OUTCOME_COUNT; i++) {
        help(r, name[i], "counter", text[i]);
        ap_rprintf(r, "%s %" APR_UINT64_T_FMT "\n", name[i],
                   rd(&c->outcome[i]));
    }
    /* read in this order, a slot given back between the reads is never
     * seen given back and not taken */
    back = rd(&c->outcome[RLAAS_METRIC_CONC_RELEASED]) +
           rd(&c->outcome[RLAAS_METRIC_CONC_LOST]);
    taken = rd(&c->outcome[RLAAS_METRIC_CONC_TAKEN]);
    help(r, "rlaas_concurrency_in_flight", "gauge",
         "Requests of this server holding a slot (RLaaSConcurrency) now: "
         "taken and not yet given back (a child killed leaves its own "
         "counted until the server restarts).");
    ap_rprintf(r, "rlaas_concurrency_in_flight %" APR_UINT64_T_FMT "\n",
               taken > back ? taken - back : 0);
    help(r, "rlaas_lease_fallbacks_total", "counter",
         "Requests of a section with RLaaSLease on or auto decided one round "
         "trip each, by why a portion could not be spent.");
    for (i = 0; i < RLAAS_LEASE_NOT_COUNT; i++)
        ap_rprintf(r,
                   "rlaas_lease_fallbacks_total{reason=\"%s\"} "
                   "%" APR_UINT64_T_FMT "\n",
                   lease_not_names[i], rd(&c->lease_not[i]));
}

void rlaas_metrics_lease_fallback(rlaas_lease_not_e why)
{
    if (counters != NULL && why >= 0 && why < RLAAS_LEASE_NOT_COUNT)
        apr_atomic_inc64(&counters->lease_not[why]);
}

void rlaas_metrics_outcome(rlaas_metric_outcome_e m)
{
    rlaas_metrics_outcome_add(m, 1);
}

void rlaas_metrics_outcome_add(rlaas_metric_outcome_e m, apr_uint64_t n)
{
    if (counters != NULL && m >= 0 && m < RLAAS_METRIC_OUTCOME_COUNT)
        apr_atomic_add64(&counters->outcome[m], n);
}

/* Whether slot i is named and the first slot of its node's name: a node
 * named by two children at once holds twin slots, written as one series
 * (a series twice in one exposition is malformed, and a scraper would
 * keep one of them). */
static int node_first(int i)
{
    int j;

    if (apr_atomic_read32(&nodes[i].state) != 2)
        return 0;
    for (j = 0; j < i; j++)
        if (apr_atomic_read32(&nodes[j].state) == 2 &&
            strcmp(nodes[j].name, nodes[i].name) == 0)
            return 0;
    return 1;
}

/* Counter e of node i's name (RLAAS_RERR_NONE: its calls), twins added. */
static apr_uint64_t node_sum(int i, int e)
{
    apr_uint64_t n = 0;
    int j;

    for (j = i; j < RLAAS_METRICS_NODES; j++)
        if (apr_atomic_read32(&nodes[j].state) == 2 &&
            strcmp(nodes[j].name, nodes[i].name) == 0)
            n += e == RLAAS_RERR_NONE ? rd(&nodes[j].calls)
                                      : rd(&nodes[j].failures[e]);
    return n;
}

/* Per node: calls, and the groups that failed by kind. */
static void write_nodes(request_rec *r)
{
    int i, e;

    help(r, "rlaas_redis_node_calls_total", "counter",
         "Script calls sent to each Redis node.");
    for (i = 0; nodes != NULL && i < RLAAS_METRICS_NODES; i++) {
        if (node_first(i))
            ap_rprintf(r,
                       "rlaas_redis_node_calls_total{node=\"%s\"} "
                       "%" APR_UINT64_T_FMT "\n",
                       nodes[i].name, node_sum(i, RLAAS_RERR_NONE));
    }
    help(r, "rlaas_redis_node_failures_total", "counter",
         "Groups of calls a Redis node failed, by kind.");
    for (i = 0; nodes != NULL && i < RLAAS_METRICS_NODES; i++) {
        if (!node_first(i))
            continue;
        for (e = 1; e < RLAAS_RERR_COUNT; e++) {
            apr_uint64_t n = node_sum(i, e);

            if (n > 0)
                ap_rprintf(r,
                           "rlaas_redis_node_failures_total{node=\"%s\","
                           "kind=\"%s\"} %" APR_UINT64_T_FMT "\n",
                           nodes[i].name, rlaas_rerr_name(e), n);
        }
    }
}

static void write_redis(request_rec *r, rlaas_counters_t *c)
{
    apr_uint64_t cum = 0;
    size_t i;
    int e;

    help(r, "rlaas_redis_errors_total", "counter", "Redis errors by kind.");
    for (e = 1; e < RLAAS_RERR_COUNT; e++)
        ap_rprintf(
            r, "rlaas_redis_errors_total{kind=\"%s\"} %" APR_UINT64_T_FMT "\n",
            rlaas_rerr_name(e), rd(&c->redis_errors[e]));
    help(r, "rlaas_redis_latency_seconds", "histogram",
         "Round-trip time of the rate-limit script call.");
    for (i = 0; i <= LAT_N; i++) {
        cum += rd(&c->latency[i]);
        ap_rprintf(r,
                   "rlaas_redis_latency_seconds_bucket{le=\"%s\"} "
                   "%" APR_UINT64_T_FMT "\n",
                   lat_labels[i], cum);
    }
    ap_rprintf(r, "rlaas_redis_latency_seconds_sum %.6f\n",
               rd(&c->latency_sum_us) / 1e6);
    ap_rprintf(r, "rlaas_redis_latency_seconds_count %" APR_UINT64_T_FMT "\n",
               cum);
    help(r, "rlaas_redis_connections", "gauge",
         "Open Redis connections, all children.");
    ap_rprintf(r, "rlaas_redis_connections %u\n", GAUGE(connections));
    help(r, "rlaas_redis_connects_total", "counter",
         "Redis connections opened.");
    ap_rprintf(r, "rlaas_redis_connects_total %" APR_UINT64_T_FMT "\n",
               rd(&c->connects));
    help(r, "rlaas_redis_script_loads_total", "counter",
         "Scripts loaded after NOSCRIPT (Redis restart or failover).");
    ap_rprintf(r, "rlaas_redis_script_loads_total %" APR_UINT64_T_FMT "\n",
               rd(&c->script_loads));
    help(r, "rlaas_circuit_open", "gauge",
         "Circuit breakers currently open (one per child and Redis).");
    ap_rprintf(r, "rlaas_circuit_open %u\n", GAUGE(circuits));
    write_nodes(r);
    help(r, "rlaas_circuit_opened_total", "counter",
         "Times a circuit breaker opened.");
    ap_rprintf(r, "rlaas_circuit_opened_total %" APR_UINT64_T_FMT "\n",
               rd(&c->circuit_opened));
}

/* One of the local engine's table's counters. */
static void local_counter(request_rec *r, const char *name, const char *text,
                          apr_uint64_t v)
{
    help(r, name, "counter", text);
    ap_rprintf(r, "%s %" APR_UINT64_T_FMT "\n", name, v);
}

static rlaas_metrics_table_fn table_source;

void rlaas_metrics_table_source(rlaas_metrics_table_fn fn)
{
    table_source = fn;
}

static int table_stats(rlaas_table_stats_t *st)
{
    return table_source != NULL && table_source(st);
}

/* The local engine's table, read without its locks. */
static void write_local(request_rec *r, rlaas_counters_t *c)
{
    rlaas_table_stats_t st;
    int e;

    help(r, "rlaas_local_errors_total", "counter",
         "Requests the local engine could not decide, by kind.");
    for (e = 1; e < RLAAS_LERR_COUNT; e++)
        ap_rprintf(
            r, "rlaas_local_errors_total{kind=\"%s\"} %" APR_UINT64_T_FMT "\n",
            rlaas_lerr_name(e), rd(&c->local_errors[e]));
    if (!table_stats(&st))
        return;
    help(r, "rlaas_local_identities", "gauge",
         "Records held by the local engine's table.");
    ap_rprintf(r, "rlaas_local_identities %" APR_UINT64_T_FMT "\n", st.records);
    help(r, "rlaas_local_bytes", "gauge",
         "Bytes of the local engine's table holding records.");
    ap_rprintf(r, "rlaas_local_bytes %" APR_UINT64_T_FMT "\n", st.used * 64);
    help(r, "rlaas_local_capacity_bytes", "gauge",
         "Bytes of the local engine's table for records (RLaaSLocalSize "
         "less its headers).");
    ap_rprintf(r, "rlaas_local_capacity_bytes %" APR_UINT64_T_FMT "\n",
               st.chunks * 64);
    local_counter(r, "rlaas_local_evictions_total",
                  "Live records evicted to make room for newcomers of their "
                  "own zone, partly used ones first, least recently used "
                  "first.",
                  st.evictions);
    local_counter(r, "rlaas_local_evicted_limiting_total",
                  "Of those, records that still refused their identity (an "
                  "exhausted counter, an empty bucket): evicted only when "
                  "nothing else of their zone could go.",
                  st.limiting);
    local_counter(r, "rlaas_local_full_total",
                  "New identities and bans the table had no room for: live "
                  "bans and other zones' state that still limits filled their "
                  "stripe; each got its section's failure policy (a ban: not "
                  "started).",
                  st.full);
    local_counter(r, "rlaas_local_expired_total", "Expired records dropped.",
                  st.expired);
    local_counter(r, "rlaas_local_resets_total",
                  "Stripes checked and repaired because a process died "
                  "holding their lock.",
                  st.resets);
    local_counter(r, "rlaas_local_repair_lost_total",
                  "Records those repairs dropped (the one the dead process "
                  "was writing): their identities start afresh.",
                  st.lost);
}

static void write_build(request_rec *r)
{
    help(r, "rlaas_build_info", "gauge",
         "Always 1; the version of mod_rlaas serving the metrics.");
    ap_rprintf(r, "rlaas_build_info{version=\"" RLAAS_VERSION "\"} 1\n");
}

int rlaas_metrics_handler(request_rec *r)
{
    if (r->handler == NULL || strcmp(r->handler, RLAAS_METRICS_HANDLER) != 0)
        return DECLINED;
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET)
        return HTTP_METHOD_NOT_ALLOWED;
    if (counters == NULL)
        return HTTP_SERVICE_UNAVAILABLE;
    ap_set_content_type(r, "text/plain; version=0.0.4; charset=utf-8");
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    if (r->header_only)
        return OK;
    write_build(r);
    write_decisions(r, counters);
    write_outcome(r, counters);
    write_redis(r, counters);
    write_local(r, counters);
    return OK;
}

int rlaas_metrics_status_hook(request_rec *r, int flags)
{
    rlaas_counters_t *c = counters;
    rlaas_table_stats_t ls;
    apr_uint64_t sum[RLAAS_OUT_COUNT] = {0};
    int st, o;

    if (c == NULL)
        return OK;
    for (st = 0; st < RLAAS_STRATEGY_COUNT; st++)
        for (o = 0; o < RLAAS_OUT_COUNT; o++)
            sum[o] += rd(&c->decisions[st][o]);
    if (flags & AP_STATUS_SHORT) {
        for (o = 0; o < RLAAS_OUT_COUNT; o++)
            ap_rprintf(r, "%s: %" APR_UINT64_T_FMT "\n", outcome_keys[o],
                       sum[o]);
        ap_rprintf(r, "RLaaSRedisConnections: %u\nRLaaSCircuitsOpen: %u\n",
                   GAUGE(connections), GAUGE(circuits));
        if (table_stats(&ls))
            ap_rprintf(r,
                       "RLaaSLocalIdentities: %" APR_UINT64_T_FMT
                       "\nRLaaSLocalEvictions: %" APR_UINT64_T_FMT "\n",
                       ls.records, ls.evictions);
        return OK;
    }
    ap_rputs("<hr />\n<h2>mod_rlaas</h2>\n<table border=\"0\">\n", r);
    for (o = 0; o < RLAAS_OUT_COUNT; o++)
        ap_rprintf(r, "<tr><td>%s</td><td>%" APR_UINT64_T_FMT "</td></tr>\n",
                   outcome_names[o], sum[o]);
    ap_rprintf(r,
               "<tr><td>Redis connections open</td><td>%u</td></tr>\n"
               "<tr><td>circuits open</td><td>%u</td></tr>\n",
               GAUGE(connections), GAUGE(circuits));
    if (table_stats(&ls))
        ap_rprintf(r,
                   "<tr><td>local engine: identities</td><td>%" APR_UINT64_T_FMT
                   "</td></tr>\n<tr><td>local engine: evictions</td><td>"
                   "%" APR_UINT64_T_FMT "</td></tr>\n",
                   ls.records, ls.evictions);
    ap_rputs("</table>\n", r);
    return OK;
}
