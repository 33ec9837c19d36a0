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

/* Default pool size: the MPM's threads per child. */
int rlaas_remote_threads(void);

#endif
