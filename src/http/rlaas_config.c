#include "rlaas_config.h"

#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_ip.h"
#include "rlaas_keysecret.h"

APLOG_USE_MODULE(rlaas);

extern module AP_MODULE_DECLARE_DATA rlaas_module;

const char *rlaas_config_bad_value(cmd_parms *cmd, const char *arg,
                                   const char *accepted)
{
    return apr_psprintf(cmd->pool, "%s: invalid value '%s': expected %s",
                        cmd->cmd->name, arg, accepted);
}

const char *rlaas_config_word(cmd_parms *cmd, const char *arg,
                              const rlaas_config_word_t *words,
                              const char *accepted, int *out)
{
    for (; words->word != NULL; words++) {
        if (ap_cstr_casecmp(arg, words->word) == 0) {
            *out = words->value;
            return NULL;
        }
    }
    return rlaas_config_bad_value(cmd, arg, accepted);
}

const char *rlaas_config_add_source(cmd_parms *cmd, rlaas_key_source_t *ks,
                                    const char *arg)
{
    const char *err = rlaas_parse_source(arg, &ks->src);

    if (err != NULL)
        return rlaas_config_bad_value(cmd, arg, err);
    rlaas_keysecret_note_source(&ks->src);
    /* a copy that lives as long as the configuration: the key names the
     * source by it (an expression by a hash of its text) */
    if (ks->src.name != NULL)
        ks->name = apr_pstrndup(cmd->pool, ks->src.name, ks->src.name_len);
    if (ks->src.type == RLAAS_SRC_EXPR) {
        ks->expr = ap_expr_parse_cmd(cmd, ks->name, AP_EXPR_FLAG_STRING_RESULT,
                                     &err, NULL);
        if (err != NULL)
            return apr_psprintf(cmd->pool, "%s: invalid expression in '%s': %s",
                                cmd->cmd->name, arg, err);
    }
    return NULL;
}

/* ---- accessors ---- */

rlaas_server_conf_t *rlaas_server_conf(const server_rec *s)
{
    return ap_get_module_config(s->module_config, &rlaas_module);
}

rlaas_dir_conf_t *rlaas_dir_conf(const request_rec *r)
{
    return ap_get_module_config(r->per_dir_config, &rlaas_module);
}

int rlaas_dir_has_limit(const rlaas_dir_conf_t *d)
{
    return d != NULL && (d->limit > 0 || d->limit_expr != NULL);
}

int rlaas_dir_active(const rlaas_dir_conf_t *d)
{
    return rlaas_dir_has_limit(d) && d->engine != 0;
}

int64_t rlaas_dir_window_ms(const rlaas_dir_conf_t *d)
{
    return d->window_ms > 0 ? d->window_ms : RLAAS_DEFAULT_WINDOW_MS;
}

rlaas_strategy_e rlaas_dir_strategy(const rlaas_dir_conf_t *d)
{
    /* a calendar window counts with fixed, the one strategy it has */
    if (d->strategy == RLAAS_STRATEGY_UNSET)
        return d->cal != NULL ? RLAAS_STRATEGY_FIXED : RLAAS_DEFAULT_STRATEGY;
    return (rlaas_strategy_e)d->strategy;
}

int rlaas_dir_console(const rlaas_dir_conf_t *d)
{
    return d != NULL && d->console == 1;
}

int rlaas_dir_metrics(const rlaas_dir_conf_t *d)
{
    return d != NULL && d->metrics == 1;
}

const char *rlaas_server_prefix(const rlaas_server_conf_t *sc)
{
    return sc->key_prefix != NULL ? sc->key_prefix : RLAAS_DEFAULT_PREFIX;
}

int rlaas_server_ipv6_prefix(const rlaas_server_conf_t *sc)
{
    return sc->ipv6_prefix > 0 ? sc->ipv6_prefix : RLAAS_IPV6_PREFIX_DEFAULT;
}

int64_t rlaas_server_limit_max(const rlaas_server_conf_t *sc)
{
    return sc->limit_max > 0 ? sc->limit_max : RLAAS_LIMIT_MAX;
}

const rlaas_dir_conf_t *rlaas_server_dir_conf(const request_rec *r)
{
    return ap_get_module_config(r->server->lookup_defaults, &rlaas_module);
}

int rlaas_server_local(const rlaas_server_conf_t *sc)
{
    return sc->backend == RLAAS_BACKEND_LOCAL;
}

int rlaas_server_user_fold(const rlaas_server_conf_t *sc)
{
    return sc->user_case == 1;
}

int rlaas_server_local_divisor(const rlaas_server_conf_t *sc)
{
    return sc->local_divisor > 0 ? sc->local_divisor : 1;
}

int64_t rlaas_server_local_size(const rlaas_server_conf_t *sc)
{
    return sc->local_size > 0 ? sc->local_size : RLAAS_DEFAULT_LOCAL_SIZE;
}
