#include "rlaas_admin_tally.h"

#include "http_log.h"
#include "apr_hash.h"
#include "apr_shm.h"
#include "apr_strings.h"

#include "rlaas_fnv.h"
#include "rlaas_keybuild.h"
#include "rlaas_metrics.h"
#include "rlaas_shm.h"

APLOG_USE_MODULE(rlaas);

#define SHM_KEY    "rlaas_admin_shm"
#define TALLY_ROWS 1024 /* (host, name) pairs; past them, "other" */

/* Set in the parent before children fork; NULL: no counts (the console
 * still acts). */
static rlaas_tally_t *tally;

/* The hosts of the configuration (the main server first), each with the
 * key its rows carry in the tally: made of its name, port and rank among
 * hosts of the same name, so that a restart that keeps a host keeps its
 * rows, whatever was added before it. */
static rlaas_admin_host_t *hosts;
static int nhosts;
static apr_hash_t *host_by_server; /* server_rec * -> rlaas_admin_host_t * */

static const char *label_of(apr_pool_t *p, const server_rec *s)
{
    const char *name = s->server_hostname ? s->server_hostname : "";
    int port =
        s->addrs != NULL && s->addrs->host_port ? s->addrs->host_port : s->port;

    if (!s->is_virtual)
        return apr_pstrcat(p, name, " (main server)", NULL);
    return port > 0 ? apr_psprintf(p, "%s:%d", name, port) : name;
}

static void hosts_build(apr_pool_t *pconf, server_rec *s)
{
    server_rec *o;
    int i, j, rank;

    for (nhosts = 0, o = s; o != NULL; o = o->next)
        nhosts++;
    hosts = apr_pcalloc(pconf, sizeof(*hosts) * (size_t)nhosts);
    host_by_server = apr_hash_make(pconf);
    for (i = 0, o = s; o != NULL; o = o->next, i++) {
        rlaas_admin_host_t *h = &hosts[i];

        h->s = o;
        h->label = label_of(pconf, o);
        for (rank = 0, j = 0; j < i; j++)
            rank += strcmp(hosts[j].label, h->label) == 0;
        h->key = rlaas_fnv1a(RLAAS_TALLY_BASIS, h->label, strlen(h->label));
        h->key = rlaas_fnv1a(h->key, &rank, sizeof(rank));
        h->key = h->key != 0 ? h->key : 1;
        apr_hash_set(host_by_server, &h->s, sizeof(h->s), h);
    }
}

const rlaas_admin_host_t *rlaas_admin_host_of(const server_rec *s)
{
    return host_by_server != NULL ? apr_hash_get(host_by_server, &s, sizeof(s))
                                  : NULL;
}

const char *rlaas_admin_host_label(uint64_t key)
{
    int i;

    for (i = 0; i < nhosts; i++)
        if (hosts[i].key == key)
            return hosts[i].label;
    return NULL;
}

static apr_shm_t *tally_shm(apr_pool_t *keep, apr_size_t size, server_rec *s)
{
    apr_status_t rv;
    apr_shm_t *shm = rlaas_shm_sized(keep, SHM_KEY, size, &rv);

    if (shm == NULL)
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s,
                     "RLAAS0123: cannot create shared memory for the "
                     "operator's console; it shows no counts");
    return shm;
}

/* The hosts, always (the console's page names them); the tally, where a
 * console counts: kept across restarts, its rows of hosts the new
 * configuration no longer has freed. */
void rlaas_admin_tally_start(apr_pool_t *pconf, apr_pool_t *ptemp,
                             server_rec *s, int counted)
{
    apr_size_t size = rlaas_tally_bytes(TALLY_ROWS);
    apr_shm_t *shm;
    uint64_t *keys;
    int i;

    hosts_build(pconf, s);
    tally = NULL;
    if (!counted) {
        rlaas_shm_drop(s->process->pool, SHM_KEY);
        return;
    }
    if ((shm = tally_shm(s->process->pool, size, s)) == NULL)
        return;
    tally = rlaas_tally_init(apr_shm_baseaddr_get(shm), size, TALLY_ROWS);
    if (tally == NULL)
        return;
    keys = apr_palloc(ptemp, sizeof(*keys) * (size_t)nhosts);
    for (i = 0; i < nhosts; i++)
        keys[i] = hosts[i].key;
    rlaas_tally_retain(tally, keys, nhosts);
}

rlaas_tally_t *rlaas_admin_tally(void)
{
    return tally;
}

/* The name a decision of it counts under: a zone or policy of the
 * server's configuration, or "other" (a tenant's zone). */
static const char *name_of(int handle)
{
    int pol;
    const char *name = rlaas_metrics_name_of(handle, &pol);

    return name != NULL ? name : RLAAS_METRICS_OTHER;
}

/* A memo of this process, (host, name handle) -> row: the tally's own
 * look-up hashes the name and probes shared memory; a hit here costs one
 * word and a check of the row it names. Threads race on it harmlessly:
 * an entry is one word, and the row is checked before it is used. */
#define MEMO_SLOTS 1024
static uint64_t memo[MEMO_SLOTS];

static int row_of(const rlaas_admin_host_t *h, int handle, const char *name)
{
    uint64_t tag, v, *e;
    uint32_t check;
    int row;

    if (h == NULL)
        return rlaas_tally_row(tally, 0, name); /* "other" */
    tag = (h->key ^ (uint64_t)(uint32_t)handle) * 0x9e3779b97f4a7c15ULL;
    check = (uint32_t)(tag >> 32) | 1;
    e = &memo[(tag >> 16) % MEMO_SLOTS];
    v = __atomic_load_n(e, __ATOMIC_RELAXED);
    if ((uint32_t)(v >> 32) == check &&
        rlaas_tally_row_is(tally, (int)(uint32_t)v, h->key, name))
        return (int)(uint32_t)v;
    row = rlaas_tally_row(tally, h->key, name);
    __atomic_store_n(e, (uint64_t)check << 32 | (uint32_t)row,
                     __ATOMIC_RELAXED);
    return row;
}

/* A concurrency limit's row: its name (a zone's or a policy's, which hold
 * no ':') with RLAAS_ADMIN_CONC_SUFFIX, beside the zone's rate row of the same
 * name; its memo entry keyed by a hash of the name (it has no metric). */

static void conc_name(char *buf, size_t size, const char *name)
{
    /* a name too long for the row loses its end, never the suffix */
    apr_snprintf(buf, size, "%.*s" RLAAS_ADMIN_CONC_SUFFIX,
                 (int)(size - sizeof(RLAAS_ADMIN_CONC_SUFFIX)), name);
}

static int conc_row(const rlaas_admin_host_t *h, const char *name)
{
    char buf[RLAAS_TALLY_NAME_MAX + 1];
    uint64_t k = rlaas_fnv1a(RLAAS_TALLY_BASIS, name, strlen(name));

    conc_name(buf, sizeof(buf), name);
    return row_of(h, -2 - (int)(k & 0x3fffffff), buf);
}

static int item_row(const rlaas_admin_host_t *h, const rlaas_item_t *it)
{
    return it->conc ? conc_row(h, it->name)
                    : row_of(h, it->metric, name_of(it->metric));
}

int rlaas_admin_take(const server_rec *s, const rlaas_item_t *it)
{
    int row;

    if (tally == NULL)
        return -1;
    row = conc_row(rlaas_admin_host_of(s), it->name);
    rlaas_tally_hold(tally, row, 1);
    return row;
}

void rlaas_admin_give(const server_rec *s, const rlaas_item_t *it, int row)
{
    char buf[RLAAS_TALLY_NAME_MAX + 1];
    const rlaas_admin_host_t *h = rlaas_admin_host_of(s);

    if (tally == NULL || row < 0)
        return;
    /* to the row that took it, unless a new configuration gave that row
     * to another name ("other", the last row, stays itself) */
    conc_name(buf, sizeof(buf), it->name);
    if (row == rlaas_tally_rows(tally) - 1 ||
        (h != NULL && rlaas_tally_row_is(tally, row, h->key, buf)))
        rlaas_tally_hold(tally, row, 0);
}

void rlaas_admin_note(request_rec *r, const rlaas_dir_conf_t *d,
                      const rlaas_item_t *it, int denied)
{
    int64_t now_s;
    const rlaas_admin_host_t *h;
    const rlaas_server_conf_t *sc;
    const char *id;
    size_t len;
    int row;

    if (tally == NULL)
        return; /* no console: no clock read either */
    now_s = apr_time_sec(apr_time_now());
    /* counted for the host that served the request, whoever declared
     * the policy: each host's console sees its own traffic */
    h = rlaas_admin_host_of(r->server);
    row = item_row(h, it);
    rlaas_tally_add(tally, row, denied, now_s);
    if (!denied || it->call.key == NULL)
        return;
    /* the identity as its key holds it: credentials are hashed there */
    sc = rlaas_server_conf(it->p != NULL ? it->p->server : r->server);
    len = rlaas_key_ident(it->call.key, it->call.key_len,
                          strlen(rlaas_server_prefix(sc)),
                          it->p != NULL || (d != NULL && (d->zone || d->ns)),
                          it->call.strategy, &id);
    rlaas_tally_top_add(tally, row, id, len, now_s);
}
