/*
 * Who sees what. The metrics name every host's zones and policies and the
 * Redis nodes: SetHandler rlaas-metrics (open to a tenant's .htaccess
 * under AllowOverride FileInfo) serves them only where the operator set
 * RLaaSMetrics on in a section of the server's configuration, as the
 * console needs RLaaSConsole on (rlaas_admin.c).
 */
#ifndef RLAAS_SCOPE_H
#define RLAAS_SCOPE_H

#include "httpd.h"

/* The handler of "SetHandler rlaas-metrics": 404 and a log line where
 * RLaaSMetrics is not on, else the metrics (rlaas_metrics_handler). */
int rlaas_scope_metrics_handler(request_rec *r);

#endif
