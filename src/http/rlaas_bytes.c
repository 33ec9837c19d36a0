#include "rlaas_bytes.h"

#include <string.h>

#include "apr_strings.h"

#include "rlaas_parse.h"

/* The largest size limit: 10^9 KiB. */
#define RLAAS_BYTES_KIB 1024
#define RLAAS_BYTES_MAX (RLAAS_LIMIT_MAX * RLAAS_BYTES_KIB)

int rlaas_bytes_is_size(const char *arg)
{
    size_t n = strlen(arg);

    return n > 1 && strchr("kKmMgG", arg[n - 1]) != NULL;
}

const char *rlaas_bytes_limit(const char *arg, int64_t *units, int64_t *unit)
{
    int64_t v;

    if (rlaas_parse_size(arg, 1, RLAAS_BYTES_MAX, &v) != NULL)
        return "a size from 1K to 953G (K, M, G: 1024, 1024^2, 1024^3 "
               "bytes)";
    /* sizes are whole KiB: above 10^9 bytes, counted in KiB exactly */
    *unit = v > RLAAS_LIMIT_MAX ? RLAAS_BYTES_KIB : 1;
    *units = v / *unit;
    return NULL;
}

/* Strategies whose state is a level that a charge after the fact can't
 * take into debt: a bucket fills to its capacity at most, so a client
 * admitted with one byte left would download for free. */
int rlaas_bytes_bucket(rlaas_strategy_e st)
{
    return st == RLAAS_STRATEGY_TOKEN || st == RLAAS_STRATEGY_LEAKY ||
           st == RLAAS_STRATEGY_GCRA;
}

const char *rlaas_bytes_conflict(apr_pool_t *p, const rlaas_dir_conf_t *d,
                                 int final)
{
    if (d->cost == RLAAS_COST_BYTES &&
        (final || d->strategy != RLAAS_STRATEGY_UNSET) &&
        rlaas_bytes_bucket(rlaas_dir_strategy(d)))
        return apr_psprintf(p,
                            RLAAS_D_COST
                            " bytes counts with the fixed, sliding or "
                            "sliding_log strategy, not %s (a bucket can't be "
                            "charged beyond empty after the response)",
                            rlaas_strategy_name(rlaas_dir_strategy(d)));
    if (d->limit_unit > 0 && d->limit_expr == NULL &&
        d->cost != RLAAS_COST_BYTES && (final || d->cost != -1))
        return RLAAS_D_LIMIT " is a size (K, M or G) and counts bytes: "
                             "it needs " RLAAS_D_COST " bytes";
    return NULL;
}

int64_t rlaas_bytes_unit(const rlaas_dir_conf_t *d)
{
    if (d->cost != RLAAS_COST_BYTES)
        return 0;
    return d->limit_unit > 0 && d->limit_expr == NULL ? d->limit_unit : 1;
}

int64_t rlaas_bytes_units(int64_t bytes, int64_t unit, int64_t limit)
{
    int64_t n = bytes / unit + (bytes % unit != 0);

    return n < limit ? n : limit;
}
