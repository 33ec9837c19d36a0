/*
 * The module's directives: the command table, the creation and merge of
 * the server and directory configurations, and what pre_config and
 * post_config do for them. The one file that knows every feature's
 * directives (RLAAS_*_CMDS); each feature knows the configuration's types
 * (rlaas_config.h), never this file.
 */
#ifndef RLAAS_DIRECTIVES_H
#define RLAAS_DIRECTIVES_H

#include "rlaas_config.h"

extern const command_rec rlaas_cmds[];

void *rlaas_create_server_conf(apr_pool_t *p, server_rec *s);
void *rlaas_merge_server_conf(apr_pool_t *p, void *basev, void *addv);
void *rlaas_create_dir_conf(apr_pool_t *p, char *dir);
void *rlaas_merge_dir_conf(apr_pool_t *p, void *basev, void *addv);

/* pre_config: a fresh table of the main server's policies. */
int rlaas_config_pre_config(apr_pool_t *pconf, apr_pool_t *plog,
                            apr_pool_t *ptemp);

/* post_config: what needs the whole configuration (policies' namespaces). */
void rlaas_config_post_config(apr_pool_t *pconf, server_rec *s);

/* child_init: the child's memory for the merges it remembers. */
void rlaas_config_child_init(apr_pool_t *pchild);

/* Whether the configuration read last says RLaaSConsole on anywhere. */
int rlaas_config_console_any(void);

#endif
