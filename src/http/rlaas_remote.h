/*
 * The httpd side of the remote engine: each Redis target's engine is made
 * in child_init from the configuration (defaults applied here), and what
 * the engine reports (connections, latency, script loads, the circuit,
 * failovers) becomes metrics and log lines.
 */
#ifndef RLAAS_REMOTE_H
#define RLAAS_REMOTE_H

#include "httpd.h"

void rlaas_remote_child_init(apr_pool_t *pchild, server_rec *s);

/* check_config (so apachectl -t too): settings that only the whole merged
 * configuration shows to be incomplete, such as Sentinel with TLS and no
 * name to check the master's certificate against. */
int rlaas_remote_check_config(apr_pool_t *pconf, apr_pool_t *plog,
                              apr_pool_t *ptemp, server_rec *s);

/* Default pool size: the MPM's threads per child. */
int rlaas_remote_threads(void);

#endif
