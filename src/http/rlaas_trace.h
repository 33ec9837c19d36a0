/*
 * TRACE: httpd answers it in map_to_storage (ap_send_http_trace), before
 * the location walk is redone and before any access checker runs, so the
 * limits were never asked: an exhausted identity got 200. This hook, run
 * first in map_to_storage for TRACE only, builds the configuration a GET
 * of the same URL would get and decides the limits there.
 */
#ifndef RLAAS_TRACE_H
#define RLAAS_TRACE_H

#include "httpd.h"

int rlaas_trace_map_to_storage(request_rec *r);

#endif
