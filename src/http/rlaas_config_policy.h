/*
 * Named policies (RLaaSPolicy, RLaaSEnforce, RLaaSApply): their
 * directives, read into the server's and the sections' configuration.
 */
#ifndef RLAAS_CONFIG_POLICY_H
#define RLAAS_CONFIG_POLICY_H

#include "httpd.h"
#include "http_config.h"

#include "rlaas_config.h"

/* pre_config: no policy declared yet (every reading of the
 * configuration starts afresh). */
void rlaas_config_policy_pre_config(apr_pool_t *pconf);

const char *rlaas_config_set_policy(cmd_parms *cmd, void *dummy,
                                    const char *line);
const char *rlaas_config_set_enforce(cmd_parms *cmd, void *dummy, int argc,
                                     char *const argv[]);
const char *rlaas_config_set_apply(cmd_parms *cmd, void *dv, int argc,
                                   char *const argv[]);

#define RLAAS_POLICY_CMDS                                                      \
    AP_INIT_TAKE_ARGV(RLAAS_D_APPLY, rlaas_config_set_apply, NULL, DIR_SCOPE,  \
                      "Policies applied here and below: NAME, -NAME "          \
                      "(remove an inherited one) or none"),                    \
        AP_INIT_RAW_ARGS(RLAAS_D_POLICY, rlaas_config_set_policy, NULL,        \
                         RSRC_CONF,                                            \
                         "NAME LIMIT WINDOW [calendar] [strategy=S] "          \
                         "[key=\"SOURCES\"] "                                  \
                         "[cost=N|bytes] [countif=EXPR]: a named policy"),     \
        AP_INIT_TAKE_ARGV(                                                     \
            RLAAS_D_ENFORCE, rlaas_config_set_enforce, NULL, RSRC_CONF,        \
            "Policies applied to every request of the server or "              \
            "virtual host, whatever its sections say")

#endif
