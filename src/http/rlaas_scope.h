/*
 * Who sees what. SetHandler is open to a tenant's .htaccess (AllowOverride
 * FileInfo); the console (rlaas-admin) and the server-wide metrics
 * (rlaas-metrics) are served only where the operator set RLaaSConsole or
 * RLaaSMetrics on, which only a section of the server's configuration can
 * (rlaas_config.c). Anywhere else: 404, and a line in the error log (at
 * most one a second per child: a client can send such requests at will).
 */
#ifndef RLAAS_SCOPE_H
#define RLAAS_SCOPE_H

#include "httpd.h"

/* The handlers of "SetHandler rlaas-admin" and "SetHandler rlaas-metrics":
 * 404 where the directive is not on, else rlaas_admin_handler or
 * rlaas_metrics_handler. */
int rlaas_scope_console_handler(request_rec *r);
int rlaas_scope_metrics_handler(request_rec *r);

#endif
