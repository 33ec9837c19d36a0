/*
 * The client's identity: the values of the RLaaSKeyBy sources for one
 * request, made safe (rlaas_key.h) and joined into the Redis key
 *   <RLaaSKeyPrefix>[<RLaaSZone>:]<segment>[:<segment>...]
 */
#ifndef RLAAS_IDENTITY_H
#define RLAAS_IDENTITY_H

#include "httpd.h"

#include "rlaas_config.h"
#include "rlaas_key.h"

/* Longest key this module can build, a strategy's suffix included. */
#define RLAAS_KEY_MAX                                                          \
    (RLAAS_PREFIX_MAX + RLAAS_NAME_MAX + 1 +                                   \
     RLAAS_SOURCES_MAX * (RLAAS_SEG_MAX + 1) + RLAAS_KEY_SUFFIX_MAX)

/* Returns the whole key the section's strategy script writes, suffix
 * included, allocated from r->pool, and its length in *len. */
const char *rlaas_identity_key(request_rec *r, const rlaas_server_conf_t *sc,
                               const rlaas_dir_conf_t *d, size_t *len);

#endif
