/*
 * RLaaSCost bytes: a section's own limit counts the bytes its responses
 * send. The request is checked before it is served (admitted while at
 * least one unit of the quota remains: cost 0, a check) and charged after
 * the response with the body bytes httpd sent (r->bytes_sent, what %B
 * logs), on RLaaSCountIf's deferred path (rlaas_settle.c). A limit may be
 * a size (3M, 10G); one above RLAAS_LIMIT_MAX bytes counts in KiB.
 */
#ifndef RLAAS_BYTES_H
#define RLAAS_BYTES_H

#include "httpd.h"

#include "rlaas_config.h"

/* d->cost of a section that counts bytes. */
#define RLAAS_COST_BYTES (-2)

/* Whether arg is a size (digits and K, M or G): RLaaSLimit 3M. */
int rlaas_bytes_is_size(const char *arg);

/* A size limit as the engines count it: *units of *unit bytes each (1, or
 * 1024 above RLAAS_LIMIT_MAX bytes); NULL, or what is accepted. */
const char *rlaas_bytes_limit(const char *arg, int64_t *units, int64_t *unit);

/* Why d's own limit can't be counted as it stands (a size limit that
 * counts no bytes; bytes counted by a bucket), or NULL. final: d is the
 * merged configuration a request reads (an unset cost counts requests);
 * else one section as it is read (unset settings may come from above). */
const char *rlaas_bytes_conflict(apr_pool_t *p, const rlaas_dir_conf_t *d,
                                 int final);

/* Whether st is a bucket (token, leaky, gcra), which can't count bytes:
 * it fills to its capacity at most, so a client admitted with one byte
 * left would download for free. */
int rlaas_bytes_bucket(rlaas_strategy_e st);

/* Bytes per unit of d's own limit when it counts bytes, else 0. */
int64_t rlaas_bytes_unit(const rlaas_dir_conf_t *d);

/* The units bytes take, rounded up, at most limit (the engines take no
 * cost above the limit; a response that big uses the whole quota). */
int64_t rlaas_bytes_units(int64_t bytes, int64_t unit, int64_t limit);

#endif
