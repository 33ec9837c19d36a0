#include "rlaas_outcome.h"

#include "http_log.h"
#include "ap_expr.h"
#include "apr_strings.h"

#include "rlaas_clock.h"
#include "rlaas_log.h"

APLOG_USE_MODULE(rlaas);

static rlaas_log_gate_t gate_expr;

const char *rlaas_outcome_set_count_if(cmd_parms *cmd, void *dv,
                                       const char *arg)
{
    rlaas_dir_conf_t *d = dv;
    const char *err = NULL;

    if (strcasecmp(arg, "off") == 0) {
        d->count_if = NULL;
        d->count_if_set = 0;
        return NULL;
    }
    d->count_if = ap_expr_parse_cmd(cmd, arg, 0, &err, NULL);
    if (err != NULL || arg[0] == '\0')
        return apr_psprintf(cmd->pool,
                            "%s: invalid expression '%s': %s (expected a "
                            "boolean ap_expr, e.g. \"%%{REQUEST_STATUS} == "
                            "401\", or off)",
                            cmd->cmd->name, arg, err ? err : "empty");
    d->count_if_set = 1;
    return NULL;
}

const char *rlaas_outcome_policy_count_if(cmd_parms *cmd, const char *policy,
                                          const char *text,
                                          ap_expr_info_t **out)
{
    const char *err = NULL;

    *out = text[0] ? ap_expr_parse_cmd(cmd, text, 0, &err, NULL) : NULL;
    if (err != NULL || text[0] == '\0')
        return apr_psprintf(cmd->pool,
                            "%s %s: invalid expression in 'countif=%s': %s "
                            "(expected a boolean ap_expr)",
                            cmd->cmd->name, policy, text, err ? err : "empty");
    return NULL;
}

static const char *bad(cmd_parms *cmd, const char *what, const char *arg,
                       const char *accepted)
{
    return apr_psprintf(cmd->pool, "%s: invalid %s '%s': expected %s",
                        cmd->cmd->name, what, arg, accepted);
}

#define BAN_USAGE "DURATION [escalate FACTOR MAX], or off"

const char *rlaas_outcome_set_ban(cmd_parms *cmd, void *dv, int argc,
                                  char *const argv[])
{
    rlaas_dir_conf_t *d = dv;
    rlaas_ban_conf_t b = {0, 0, 1};
    const char *err;

    if (argc == 1 && strcasecmp(argv[0], "off") == 0) {
        d->ban_ms = 0;
        return NULL;
    }
    if (argc != 1 && argc != 4)
        return apr_psprintf(cmd->pool, "%s: takes %s, not %d arguments",
                            cmd->cmd->name, BAN_USAGE, argc);
    if ((err = rlaas_parse_duration_ms(argv[0], 1, RLAAS_BAN_MS_MAX,
                                       &b.length_ms)) != NULL)
        return bad(cmd, "DURATION", argv[0],
                   apr_pstrcat(cmd->temp_pool, err, ", up to 397d", NULL));
    b.max_ms = b.length_ms;
    if (argc == 4) {
        if (strcasecmp(argv[1], "escalate") != 0)
            return bad(cmd, "word", argv[1], "escalate (" BAN_USAGE ")");
        if (rlaas_parse_nonneg_int(argv[2], RLAAS_BAN_FACTOR_MAX, &b.factor) !=
                NULL ||
            b.factor < 2)
            return bad(cmd, "FACTOR", argv[2], "an integer from 2 to 1000");
        if ((err = rlaas_parse_duration_ms(argv[3], 1, RLAAS_BAN_MS_MAX,
                                           &b.max_ms)) != NULL)
            return bad(cmd, "MAX", argv[3],
                       apr_pstrcat(cmd->temp_pool, err, ", up to 397d", NULL));
        if (b.max_ms < b.length_ms)
            return bad(cmd, "MAX", argv[3],
                       apr_psprintf(cmd->temp_pool,
                                    "a duration of at least DURATION (%s)",
                                    argv[0]));
    }
    d->ban_ms = b.length_ms;
    d->ban_factor = b.factor;
    d->ban_max_ms = b.max_ms;
    return NULL;
}

void rlaas_outcome_dir_init(rlaas_dir_conf_t *d)
{
    d->count_if = NULL;
    d->count_if_set = -1;
    d->ban_ms = -1;
    d->ban_factor = 1;
    d->ban_max_ms = 0;
}

void rlaas_outcome_dir_merge(rlaas_dir_conf_t *d, const rlaas_dir_conf_t *base,
                             const rlaas_dir_conf_t *add)
{
    const rlaas_dir_conf_t *c = add->count_if_set != -1 ? add : base;
    const rlaas_dir_conf_t *b = add->ban_ms != -1 ? add : base;

    d->count_if = c->count_if;
    d->count_if_set = c->count_if_set;
    d->ban_ms = b->ban_ms;
    d->ban_factor = b->ban_factor;
    d->ban_max_ms = b->ban_max_ms;
}

ap_expr_info_t *rlaas_outcome_count_if(const rlaas_dir_conf_t *d)
{
    return d != NULL && d->count_if_set == 1 ? d->count_if : NULL;
}

int rlaas_outcome_ban(const rlaas_dir_conf_t *d, rlaas_ban_conf_t *b)
{
    if (d == NULL || d->ban_ms <= 0)
        return 0;
    b->length_ms = d->ban_ms;
    b->max_ms = d->ban_max_ms;
    b->factor = d->ban_factor;
    return 1;
}

int rlaas_outcome_counts(request_rec *r, ap_expr_info_t *expr)
{
    const char *err = NULL;
    int rc;

    while (r->next != NULL)
        r = r->next;
    rc = ap_expr_exec(r, expr, &err);
    if (err != NULL || rc < 0) {
        long dropped = rlaas_log_gate_pass(&gate_expr, rlaas_clock_us(), 1);

        if (dropped >= 0)
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                          "RLAAS0100: " RLAAS_D_COUNT_IF
                          " could not be evaluated (%s): the request "
                          "counts%s",
                          err ? err : "error",
                          dropped > 0 ? " (and similar lines since)" : "");
        return 1;
    }
    return rc > 0;
}
