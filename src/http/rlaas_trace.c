#include "rlaas_trace.h"

#include "http_core.h"
#include "http_log.h"
#include "http_request.h"

#include "rlaas_limit.h"

APLOG_USE_MODULE(rlaas);

/* What ap_process_request_internal does for any other method between
 * map_to_storage and the access checkers: the core's directory and file
 * walks (<Directory>, .htaccess, <Files>), then the location and <If>
 * walks again, on top of the host's defaults, which is where httpd has
 * just put r->per_dir_config. */
static int walk(request_rec *r)
{
    int rc;

    if ((rc = ap_directory_walk(r)) != OK || (rc = ap_file_walk(r)) != OK)
        return rc;
    if ((rc = ap_location_walk(r)) != OK)
        return rc;
    return ap_if_walk(r);
}

int rlaas_trace_map_to_storage(request_rec *r)
{
    core_server_config *core;
    ap_conf_vector_t *defaults = r->per_dir_config;
    int rc;

    if (r->method_number != M_TRACE || r->main != NULL)
        return DECLINED;
    /* a proxied TRACE goes on to the access checkers (mod_proxy maps it) */
    if (r->proxyreq != PROXYREQ_NONE ||
        (r->filename != NULL && strncmp(r->filename, "proxy:", 6) == 0))
        return DECLINED;
    core = ap_get_core_module_config(r->server->module_config);
    if (core->trace_enable == AP_TRACE_DISABLE)
        return DECLINED; /* refused with 405 by httpd, nothing served */
    if ((rc = walk(r)) != OK) {
        /* a GET would fail the same way, so it spent nothing where this
         * walk stopped: decide with the host's and <Location> limits */
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r,
                      "RLAAS0141: TRACE: the walk of <Directory> and "
                      ".htaccess gave %d; decided with the host's and "
                      "<Location> limits",
                      rc);
        r->per_dir_config = defaults;
        if (ap_location_walk(r) != OK || ap_if_walk(r) != OK)
            r->per_dir_config = defaults;
    }
    rc = rlaas_limit_trace(r);
    /* allowed: httpd answers the TRACE from where it left off; refused:
     * the sections' ErrorDocument and headers apply, as for a GET */
    if (rc == DECLINED)
        r->per_dir_config = defaults;
    return rc;
}
