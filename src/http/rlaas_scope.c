#include "rlaas_scope.h"

#include "http_log.h"

#include "rlaas_config.h"
#include "rlaas_metrics.h"

APLOG_USE_MODULE(rlaas);

int rlaas_scope_metrics_handler(request_rec *r)
{
    if (r->handler == NULL || strcmp(r->handler, RLAAS_METRICS_HANDLER) != 0)
        return DECLINED;
    if (!rlaas_dir_metrics(rlaas_dir_conf(r))) {
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
                      "RLAAS0140: SetHandler " RLAAS_METRICS_HANDLER
                      " without " RLAAS_D_METRICS
                      " on in the server's configuration: not served");
        return HTTP_NOT_FOUND;
    }
    return rlaas_metrics_handler(r);
}
