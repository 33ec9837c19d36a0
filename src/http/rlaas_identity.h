/*
 * The client's identity for one request: the values of the RLaaSKeyBy
 * sources, read from the request and handed to the key builder
 * (rlaas_keybuild.h), which makes the whole Redis key the section's
 * strategy script writes.
 */
#ifndef RLAAS_IDENTITY_H
#define RLAAS_IDENTITY_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_keybuild.h"

/* Returns the whole key the section's strategy script writes, suffix
 * included, allocated from r->pool, and its length in *len. */
/* With Redis Cluster and fixed, *window_at is where the window number
 * the key ends in starts (else 0). */
const char *rlaas_identity_key(request_rec *r, const rlaas_server_conf_t *sc,
                               const rlaas_dir_conf_t *d, size_t *len,
                               size_t *window_at);

#endif
