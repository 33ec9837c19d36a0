/*
 * Named policies: RLaaSPolicy declares one (server-wide, or a virtual
 * host's own), RLaaSEnforce makes it hold everywhere on its host,
 * RLaaSApply adds or removes them in a section or a .htaccess file.
 */
#include "rlaas_config_policy.h"

#include "apr_strings.h"

#include "rlaas_bytes.h"
#include "rlaas_calendar.h"
#include "rlaas_conc.h"
#include "rlaas_concurrency.h"
#include "rlaas_metrics.h"
#include "rlaas_outcome.h"
#include "rlaas_tenant.h"

/* The main server's policies, filled while its directives are read, so
 * that a virtual host and its sections find those declared before them
 * (as a Define); and the number the next policy gets. Both are made anew
 * in pre_config, for every reading of the configuration. */
static apr_hash_t *main_policies;
static int next_policy_id;
static int main_enforced; /* RLaaSEnforce names in the main server */

void rlaas_config_policy_pre_config(apr_pool_t *pconf)
{
    main_policies = apr_hash_make(pconf);
    next_policy_id = 0;
    main_enforced = 0;
}

/* A policy by name, as a directive sees them: in a .htaccess, the merged
 * table of the request's host; in a virtual host, its own and the main
 * server's declared before it; in the main server, its own. */
static rlaas_policy_t *find_policy(cmd_parms *cmd, const char *name)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    rlaas_policy_t *p = NULL;

    if (sc->policies != NULL)
        p = apr_hash_get(sc->policies, name, APR_HASH_KEY_STRING);
    if (p == NULL && !rlaas_tenant_reading(cmd) && cmd->server->is_virtual)
        p = apr_hash_get(main_policies, name, APR_HASH_KEY_STRING);
    return p;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_names(apr_array_header_t *names, apr_hash_t *h)
{
    apr_hash_index_t *hi;

    for (hi = h ? apr_hash_first(NULL, h) : NULL; hi; hi = apr_hash_next(hi)) {
        const void *k;
        int i;

        apr_hash_this(hi, &k, NULL, NULL);
        for (i = 0; i < names->nelts; i++) {
            if (strcmp(APR_ARRAY_IDX(names, i, const char *), k) == 0)
                break;
        }
        if (i == names->nelts)
            APR_ARRAY_PUSH(names, const char *) = k;
    }
}

/* "a, b, c", the names a directive could have used. */
static const char *known_names(cmd_parms *cmd)
{
    apr_array_header_t *names =
        apr_array_make(cmd->temp_pool, 8, sizeof(char *));

    add_names(names, rlaas_server_conf(cmd->server)->policies);
    if (!rlaas_tenant_reading(cmd) && cmd->server->is_virtual)
        add_names(names, main_policies);
    if (names->nelts == 0)
        return "none is declared";
    qsort(names->elts, (size_t)names->nelts, sizeof(char *), by_name);
    return apr_pstrcat(cmd->temp_pool, "declared: ",
                       apr_array_pstrcat(cmd->temp_pool, names, ','), NULL);
}

static const char *unknown_policy(cmd_parms *cmd, const char *name)
{
    return apr_psprintf(cmd->pool,
                        "%s: unknown policy '%s': expected the name of a "
                        "policy declared before with " RLAAS_D_POLICY " (%s)",
                        cmd->cmd->name, name, known_names(cmd));
}

/* The words of a raw line (rlaas_parse_word). */
static const char *split_words(cmd_parms *cmd, const char *line,
                               apr_array_header_t **out)
{
    char *w = apr_palloc(cmd->temp_pool, strlen(line) + 1);
    int rc;

    *out = apr_array_make(cmd->temp_pool, 8, sizeof(char *));
    while ((rc = rlaas_parse_word(&line, w)) == 1) {
        APR_ARRAY_PUSH(*out, char *) = apr_pstrdup(cmd->pool, w);
        w = apr_palloc(cmd->temp_pool, strlen(line) + 1);
    }
    if (rc < 0)
        return apr_psprintf(cmd->pool, "%s: a quote is left open in '%s'",
                            cmd->cmd->name, line);
    return NULL;
}

/* key="SOURCES": one to eight sources, as RLaaSKeyBy takes them. */
static const char *policy_sources(cmd_parms *cmd, rlaas_policy_t *p,
                                  const char *text)
{
    apr_array_header_t *words;
    const char *err = split_words(cmd, text, &words);
    int i;

    if (err != NULL)
        return err;
    if (words->nelts < 1 || words->nelts > RLAAS_SOURCES_MAX)
        return apr_psprintf(cmd->pool,
                            "%s %s: key=\"%s\": expected 1 to %d sources",
                            cmd->cmd->name, p->name, text, RLAAS_SOURCES_MAX);
    p->sources =
        apr_array_make(cmd->pool, words->nelts, sizeof(rlaas_key_source_t));
    for (i = 0; i < words->nelts; i++) {
        rlaas_key_source_t *ks = apr_array_push(p->sources);

        memset(ks, 0, sizeof(*ks));
        if ((err = rlaas_config_add_source(cmd, ks,
                                           APR_ARRAY_IDX(words, i, char *))))
            return err;
        p->sources_need_user |= ks->src.type == RLAAS_SRC_USER;
    }
    return NULL;
}

/* cost=N (0 to the limit) or cost=bytes, one of them. bytes_unit < 0:
 * the limit is a size (policy_limit), whose unit cost=bytes takes. */
static const char *policy_cost(cmd_parms *cmd, rlaas_policy_t *p,
                               const char *opt)
{
    int64_t v;

    if (rlaas_parse_keyword(opt + 5, "bytes")) {
        if (p->cost >= 0 && p->bytes_unit <= 0)
            return apr_psprintf(
                cmd->pool,
                "%s %s: invalid value '%s': cost=%" APR_INT64_T_FMT
                " is set already; expected one cost",
                cmd->cmd->name, p->name, opt, p->cost);
        if (p->bytes_unit <= 0)
            p->bytes_unit = p->bytes_unit < 0 ? -p->bytes_unit : 1;
        p->cost = 0; /* checked; charged after the response */
        return NULL;
    }
    if (p->bytes_unit > 0)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value '%s': the policy counts "
                            "bytes (cost=bytes); expected one cost",
                            cmd->cmd->name, p->name, opt);
    if (rlaas_parse_nonneg_int(opt + 5, RLAAS_LIMIT_MAX, &v) != NULL ||
        v > p->limit)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value '%s': expected a cost from "
                            "0 to the limit (%" APR_INT64_T_FMT
                            ") or cost=bytes",
                            cmd->cmd->name, p->name, opt, p->limit);
    p->cost = v;
    return NULL;
}

/* strategy=S, key="SOURCES", cost=N or cost=bytes. */
static const char *policy_option(cmd_parms *cmd, rlaas_policy_t *p,
                                 const char *opt)
{
    const char *err;

    if (rlaas_parse_prefixed(opt, "strategy=")) {
        if ((err = rlaas_parse_strategy(opt + 9, &p->strategy)) != NULL)
            return apr_psprintf(cmd->pool,
                                "%s %s: invalid value '%s': expected %s",
                                cmd->cmd->name, p->name, opt, err);
        return NULL;
    }
    if (rlaas_parse_prefixed(opt, "key="))
        return policy_sources(cmd, p, opt + 4);
    if (rlaas_parse_prefixed(opt, "countif="))
        return rlaas_outcome_policy_count_if(cmd, p->name, opt + 8,
                                             &p->count_if);
    if (rlaas_parse_prefixed(opt, "cost="))
        return policy_cost(cmd, p, opt);
    return apr_psprintf(cmd->pool,
                        "%s %s: invalid option '%s': expected "
                        "strategy=STRATEGY, key=\"SOURCES\", cost=N, "
                        "cost=bytes or countif=EXPR",
                        cmd->cmd->name, p->name, opt);
}

/* LIMIT: a number, or a size (3M, 10G) that cost=bytes must count. */
static const char *policy_limit(cmd_parms *cmd, rlaas_policy_t *p,
                                const char *arg)
{
    const char *err;

    if (rlaas_bytes_is_size(arg)) {
        if ((err = rlaas_bytes_limit(arg, &p->limit, &p->bytes_unit)) != NULL)
            return apr_psprintf(cmd->pool,
                                "%s %s: invalid limit '%s': expected %s",
                                cmd->cmd->name, p->name, arg, err);
        p->bytes_unit = -p->bytes_unit; /* a size: cost=bytes must follow */
    }
    else if ((err = rlaas_parse_limit(arg, &p->limit)) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid limit '%s': expected %s (or a "
                            "size such as 3M with cost=bytes)",
                            cmd->cmd->name, p->name, arg, err);
    return NULL;
}

/* cost=bytes: a size limit needs it, and a bucket can't count bytes. */
static const char *policy_bytes(cmd_parms *cmd, rlaas_policy_t *p,
                                const char *limit)
{
    if (p->bytes_unit < 0)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid limit '%s': a size (K, M or G) "
                            "counts bytes: it needs cost=bytes",
                            cmd->cmd->name, p->name, limit);
    if (p->bytes_unit > 0 && rlaas_bytes_bucket(p->strategy))
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value 'strategy=%s': cost=bytes "
                            "counts with the fixed, sliding or sliding_log "
                            "strategy (a bucket can't be charged beyond "
                            "empty after the response)",
                            cmd->cmd->name, p->name,
                            rlaas_strategy_name(p->strategy));
    return NULL;
}

/* The window, w[2], and the calendar word after it if any: *next is the
 * first option's place. */
static const char *policy_window(cmd_parms *cmd, rlaas_policy_t *p,
                                 const apr_array_header_t *w, int *next)
{
    const char *arg = APR_ARRAY_IDX(w, 2, char *);
    const char *word = w->nelts > 3 ? APR_ARRAY_IDX(w, 3, char *) : "";
    const char *err;

    /* a word after the window is "calendar", or the first option */
    *next = strcasecmp(word, RLAAS_CAL_WORD) == 0 ? 4 : 3;
    if ((err = rlaas_calendar_window(
             cmd, apr_pstrcat(cmd->pool, cmd->cmd->name, " ", p->name, NULL),
             arg, *next == 4 ? word : NULL, &p->cal, &p->window_ms)) != NULL)
        return err;
    return NULL;
}

/* RLaaSPolicy NAME concurrency=N [timeout=DURATION] [key="SOURCES"]: at
 * most N requests of one identity in flight (rlaas_concurrency.h). */
static const char *conc_policy(cmd_parms *cmd, rlaas_policy_t *p,
                               apr_array_header_t *w)
{
    const char *arg = APR_ARRAY_IDX(w, 1, char *) + 12, *err;
    int i;

    if (rlaas_parse_nonneg_int(arg, RLAAS_CONC_MAX, &p->limit) != NULL ||
        p->limit < 1)
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid value 'concurrency=%s': expected "
                            "an integer from 1 to %d (requests in flight)",
                            cmd->cmd->name, p->name, arg, RLAAS_CONC_MAX);
    p->strategy = RLAAS_CONCURRENCY;
    p->window_ms = RLAAS_CONC_TIMEOUT_DEFAULT_MS;
    for (i = 2; i < w->nelts; i++) {
        const char *opt = APR_ARRAY_IDX(w, i, char *);

        if (rlaas_parse_prefixed(opt, "key=")) {
            if ((err = policy_sources(cmd, p, opt + 4)) != NULL)
                return err;
        }
        else if (rlaas_parse_prefixed(opt, "timeout=")) {
            if ((err = rlaas_parse_duration_ms(opt + 8, 1, RLAAS_WINDOW_MAX_MS,
                                               &p->window_ms)) != NULL)
                return apr_psprintf(cmd->pool,
                                    "%s %s: invalid value '%s': expected %s, "
                                    "from 1ms to 30d",
                                    cmd->cmd->name, p->name, opt, err);
        }
        else
            return apr_psprintf(cmd->pool,
                                "%s %s: invalid option '%s': a concurrency "
                                "policy takes timeout=DURATION and "
                                "key=\"SOURCES\"",
                                cmd->cmd->name, p->name, opt);
    }
    return NULL;
}

/* LIMIT WINDOW [strategy=S] [key="SOURCES"] [cost=N|bytes] [countif=EXPR] */
static const char *rate_policy(cmd_parms *cmd, rlaas_policy_t *p,
                               apr_array_header_t *w)
{
    const char *limit = APR_ARRAY_IDX(w, 1, char *), *arg, *err;
    int i;

    if ((err = policy_limit(cmd, p, limit)) != NULL)
        return err;
    arg = APR_ARRAY_IDX(w, 2, char *);
    if ((err = policy_window(cmd, p, w, &i)) != NULL)
        return err;
    for (; i < w->nelts; i++) {
        if ((err = policy_option(cmd, p, APR_ARRAY_IDX(w, i, char *))))
            return err;
    }
    /* a calendar window counts with fixed, the one strategy it has */
    if (p->strategy == RLAAS_STRATEGY_UNSET)
        p->strategy =
            p->cal != NULL ? RLAAS_STRATEGY_FIXED : RLAAS_DEFAULT_STRATEGY;
    if ((err = policy_bytes(cmd, p, limit)) != NULL)
        return err;
    if ((err = rlaas_calendar_strategy(
             cmd, apr_pstrcat(cmd->pool, cmd->cmd->name, " ", p->name, NULL),
             apr_pstrcat(cmd->pool, arg, " " RLAAS_CAL_WORD " strategy=",
                         rlaas_strategy_name(p->strategy), NULL),
             p->cal, p->strategy)) != NULL)
        return err;
    return NULL;
}

/* RLaaSPolicy NAME LIMIT WINDOW [calendar] [strategy=S] [key="SOURCES"]
 * [cost=N|bytes], or
 * RLaaSPolicy NAME concurrency=N [timeout=DURATION] [key="SOURCES"] */
const char *rlaas_config_set_policy(cmd_parms *cmd, void *dummy,
                                    const char *line)
{
    static const char usage[] = "NAME LIMIT WINDOW [calendar] "
                                "[strategy=STRATEGY] "
                                "[key=\"SOURCES\"] [cost=N|bytes]";
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    apr_array_header_t *w;
    rlaas_policy_t *p;
    const char *err;
    int conc;

    (void)dummy;
    if ((err = split_words(cmd, line, &w)) != NULL)
        return err;
    conc = w->nelts >= 2 &&
           rlaas_parse_prefixed(APR_ARRAY_IDX(w, 1, char *), "concurrency=");
    if (w->nelts < 3 && !conc)
        return apr_psprintf(cmd->pool,
                            "%s: expected %s, got '%s' (or NAME "
                            "concurrency=N [timeout=DURATION] "
                            "[key=\"SOURCES\"])",
                            cmd->cmd->name, usage, line);
    p = apr_pcalloc(cmd->pool, sizeof(*p));
    p->name = APR_ARRAY_IDX(w, 0, char *);
    p->strategy = RLAAS_STRATEGY_UNSET;
    p->cost = -1;
    if ((err = rlaas_parse_name(p->name)) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid name '%s': expected %s (the name is "
                            "the policy's zone)",
                            cmd->cmd->name, p->name, err);
    if (find_policy(cmd, p->name) != NULL)
        return apr_psprintf(cmd->pool,
                            "%s: duplicate name '%s': a policy of that name is "
                            "declared already; expected a name of its own",
                            cmd->cmd->name, p->name);
    if ((err = conc ? conc_policy(cmd, p, w) : rate_policy(cmd, p, w)))
        return err;
    if (p->cost < 0)
        p->cost = 1;
    p->id = next_policy_id++;
    p->server = cmd->server;
    p->metric = rlaas_metrics_name(p->name, 1);
    if (!cmd->server->is_virtual)
        sc->policies = main_policies;
    else if (sc->policies == NULL)
        sc->policies = apr_hash_make(cmd->pool);
    apr_hash_set(sc->policies, p->name, APR_HASH_KEY_STRING, p);
    return NULL;
}

/* Enforced policies a virtual host sees: the main server's and its own. */
static int enforced_count(cmd_parms *cmd)
{
    const rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    int n = sc->enforce ? sc->enforce->nelts : 0;

    if (!rlaas_tenant_reading(cmd) && cmd->server->is_virtual)
        n += main_enforced;
    return n;
}

/* RLaaSEnforce NAME... */
const char *rlaas_config_set_enforce(cmd_parms *cmd, void *dummy, int argc,
                                     char *const argv[])
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    int i;

    (void)dummy;
    if (argc < 1)
        return apr_psprintf(cmd->pool, "%s: expected one or more policy names",
                            cmd->cmd->name);
    for (i = 0; i < argc; i++) {
        rlaas_policy_t *p = find_policy(cmd, argv[i]);
        rlaas_apply_op_t *op;

        if (p == NULL)
            return unknown_policy(cmd, argv[i]);
        if (enforced_count(cmd) + 1 > RLAAS_POLICIES_MAX - 1)
            return apr_psprintf(cmd->pool,
                                "%s: too many policies enforced with '%s': "
                                "expected at most %d for a host, so that a "
                                "request meets at most %d policies",
                                cmd->cmd->name, argv[i], RLAAS_POLICIES_MAX - 1,
                                RLAAS_POLICIES_MAX);
        if (sc->enforce == NULL)
            sc->enforce =
                apr_array_make(cmd->pool, 4, sizeof(rlaas_apply_op_t));
        op = apr_array_push(sc->enforce);
        op->kind = RLAAS_APPLY_ADD;
        op->id = p->id;
        op->ref = p;
        if (!cmd->server->is_virtual)
            main_enforced++;
    }
    return NULL;
}

/* RLaaSApply NAME | -NAME | none ... */
const char *rlaas_config_set_apply(cmd_parms *cmd, void *dv, int argc,
                                   char *const argv[])
{
    rlaas_dir_conf_t *d = dv;
    apr_array_header_t *ops;
    const rlaas_apply_op_t **sel;
    int i;

    if (argc < 1)
        return apr_psprintf(cmd->pool,
                            "%s: expected policy names, -NAME or none",
                            cmd->cmd->name);
    ops = d->apply ? d->apply
                   : apr_array_make(cmd->pool, argc, sizeof(rlaas_apply_op_t));
    for (i = 0; i < argc; i++) {
        rlaas_apply_op_t *op = apr_array_push(ops);
        const char *name = argv[i][0] == '-' ? argv[i] + 1 : argv[i];
        const rlaas_policy_t *p;

        memset(op, 0, sizeof(*op));
        if (rlaas_parse_keyword(argv[i], "none")) {
            op->kind = RLAAS_APPLY_NONE;
            continue;
        }
        if ((p = find_policy(cmd, name)) == NULL)
            return unknown_policy(cmd, name);
        op->kind = argv[i][0] == '-' ? RLAAS_APPLY_REMOVE : RLAAS_APPLY_ADD;
        op->id = p->id;
        op->ref = p;
    }
    /* what the section's lines apply together, with those enforced and
     * the section's own limit (one place), fits one call */
    sel = apr_palloc(cmd->temp_pool, sizeof(*sel) * RLAAS_POLICIES_MAX);
    if (rlaas_policy_resolve(NULL, 0, (const rlaas_apply_op_t *)ops->elts,
                             ops->nelts, sel,
                             RLAAS_POLICIES_MAX - 1 - enforced_count(cmd)) < 0)
        return apr_psprintf(
            cmd->pool,
            "%s: too many policies: with those enforced and "
            "the section's own limit, a request here would "
            "meet more than %d (counting what every " RLAAS_D_APPLY
            " line of the section applies)",
            cmd->cmd->name, RLAAS_POLICIES_MAX);
    d->apply = ops;
    return NULL;
}
