#include "rlaas_unit.h"

#include "http_config.h"
#include "http_log.h"

APLOG_USE_MODULE(rlaas);

static request_rec *initial(request_rec *r)
{
    while (r->prev != NULL)
        r = r->prev;
    return r;
}

rlaas_unit_t *rlaas_unit_find(request_rec *r)
{
    return ap_get_module_config(initial(r)->request_config, &rlaas_module);
}

/* A unit and room for a request's usual two entries of each array, in
 * one allocation: every limited request makes one. */
typedef struct {
    rlaas_unit_t u;
    apr_array_header_t decided, shown;
    rlaas_unit_limit_t decided_elts[2];
    rlaas_unit_shown_t shown_elts[2];
} unit_block_t;

/* An empty array over storage of n elements; apr_array_push moves it to
 * the pool when it outgrows them. */
static apr_array_header_t *room(apr_array_header_t *a, apr_pool_t *p,
                                void *elts, int size, int n)
{
    a->pool = p;
    a->elt_size = size;
    a->nelts = 0;
    a->nalloc = n;
    a->elts = elts;
    return a;
}

rlaas_unit_t *rlaas_unit_get(request_rec *r)
{
    request_rec *first = initial(r);
    rlaas_unit_t *u =
        ap_get_module_config(first->request_config, &rlaas_module);

    if (u == NULL) {
        unit_block_t *b = apr_palloc(first->pool, sizeof(*b));

        memset(&b->u, 0, sizeof(b->u));
        u = &b->u;
        u->decided = room(&b->decided, first->pool, b->decided_elts,
                          sizeof(b->decided_elts[0]), 2);
        u->shown = room(&b->shown, first->pool, b->shown_elts,
                        sizeof(b->shown_elts[0]), 2);
        ap_set_module_config(first->request_config, &rlaas_module, u);
    }
    return u;
}

static int same_text(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int same_source(const rlaas_key_source_t *a, const rlaas_key_source_t *b)
{
    return a->src.type == b->src.type && a->src.name_len == b->src.name_len &&
           (a->src.name_len == 0 ||
            memcmp(a->src.name, b->src.name, a->src.name_len) == 0);
}

/* Unset sources mean the client address, as a lone "ip" does. */
static int is_default_sources(const apr_array_header_t *s)
{
    return s == NULL ||
           (s->nelts == 1 &&
            ((const rlaas_key_source_t *)s->elts)[0].src.type == RLAAS_SRC_IP);
}

static int same_sources(const apr_array_header_t *a,
                        const apr_array_header_t *b)
{
    int i;

    if (a == b || (is_default_sources(a) && is_default_sources(b)))
        return 1;
    if (a == NULL || b == NULL || a->nelts != b->nelts)
        return 0;
    for (i = 0; i < a->nelts; i++)
        if (!same_source(&((const rlaas_key_source_t *)a->elts)[i],
                         &((const rlaas_key_source_t *)b->elts)[i]))
            return 0;
    return 1;
}

/* Two sections define the same limit when they would count the same
 * client's requests in the same counter: same zone and namespace, identity
 * sources, strategy, limit (or the same expression) and window. Headers,
 * dry run, cost and failure policy don't make another limit. The sources'
 * values are not compared: the identity of a limit is the one taken where
 * the client request first reached it, even if a later phase or redirect
 * would compute another. */
static int same_limit(const rlaas_dir_conf_t *a, const rlaas_dir_conf_t *b)
{
    return a == b || (a->limit == b->limit && a->limit_expr == b->limit_expr &&
                      same_text(a->zone, b->zone) && same_text(a->ns, b->ns) &&
                      a->use.strategy == b->use.strategy &&
                      a->use.window_ms == b->use.window_ms &&
                      same_sources(a->sources, b->sources));
}

/* Two sections define the same concurrency limit when they hold the same
 * client's slots in the same record: same zone and namespace, identity
 * sources, N and timeout. */
static int same_conc(const rlaas_dir_conf_t *a, const rlaas_dir_conf_t *b)
{
    return a == b ||
           (a->conc == b->conc && a->conc_timeout_ms == b->conc_timeout_ms &&
            same_text(a->zone, b->zone) && same_text(a->ns, b->ns) &&
            same_sources(a->sources, b->sources));
}

rlaas_unit_limit_t *rlaas_unit_decided(const rlaas_unit_t *u,
                                       const rlaas_policy_t *p,
                                       const rlaas_dir_conf_t *d, int conc)
{
    rlaas_unit_limit_t *l = (rlaas_unit_limit_t *)u->decided->elts;
    int i;

    for (i = 0; i < u->decided->nelts; i++) {
        if (p != NULL
                ? l[i].p == p
                : l[i].p == NULL && l[i].conc == conc &&
                      (conc ? same_conc(l[i].d, d) : same_limit(l[i].d, d)))
            return &l[i];
    }
    return NULL;
}

rlaas_unit_limit_t *rlaas_unit_add(rlaas_unit_t *u, const rlaas_policy_t *p,
                                   const rlaas_dir_conf_t *d, int conc,
                                   const char *claimed)
{
    rlaas_unit_limit_t *l = apr_array_push(u->decided);

    l->p = p;
    l->d = d;
    l->conc = conc;
    l->claimed = claimed;
    return l;
}
