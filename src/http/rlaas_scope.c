#include "rlaas_scope.h"

#include "http_log.h"
#include "apr_strings.h"

#include "rlaas_admin.h"
#include "rlaas_clock.h"
#include "rlaas_config.h"
#include "rlaas_log.h"
#include "rlaas_metrics.h"

APLOG_USE_MODULE(rlaas);

static rlaas_log_gate_t gate_console;
static rlaas_log_gate_t gate_metrics;

static int not_here(request_rec *r, rlaas_log_gate_t *gate, const char *tag,
                    const char *handler, const char *directive)
{
    long dropped = rlaas_log_gate_pass(gate, rlaas_clock_us(), 1);

    if (dropped >= 0)
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      "%s: SetHandler %s without %s on in the server's "
                      "configuration: not served%s",
                      tag, handler, directive,
                      dropped > 0 ? apr_psprintf(r->pool,
                                                 " (%ld similar lines "
                                                 "suppressed)",
                                                 dropped)
                                  : "");
    return HTTP_NOT_FOUND;
}

int rlaas_scope_console_handler(request_rec *r)
{
    if (r->handler == NULL || strcmp(r->handler, RLAAS_ADMIN_HANDLER) != 0)
        return DECLINED;
    if (!rlaas_dir_console(rlaas_dir_conf(r)))
        return not_here(r, &gate_console, "RLAAS0124", RLAAS_ADMIN_HANDLER,
                        RLAAS_D_CONSOLE);
    return rlaas_admin_handler(r);
}

int rlaas_scope_metrics_handler(request_rec *r)
{
    if (r->handler == NULL || strcmp(r->handler, RLAAS_METRICS_HANDLER) != 0)
        return DECLINED;
    if (!rlaas_dir_metrics(rlaas_dir_conf(r)))
        return not_here(r, &gate_metrics, "RLAAS0140", RLAAS_METRICS_HANDLER,
                        RLAAS_D_METRICS);
    return rlaas_metrics_handler(r);
}
