/*
 * The console's list of records by pattern on a Redis target: SCAN MATCH
 * on every node (rlaas_redis_each_node), then the values of the keys
 * each SCAN found, in one round trip. Bounded: at most a number of keys
 * and of SCAN rounds per node, all by one deadline. The pooled connection
 * of a node is held while its rounds run. Outside the request path's calls; no
 * httpd headers.
 */
#ifndef RLAAS_SCAN_H
#define RLAAS_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_redis.h"

/* Gets each key found that holds a string, and its value; returns 0 to
 * stop. */
typedef int (*rlaas_scan_fn)(void *baton, const char *key, size_t klen,
                             const char *val, size_t vlen);

/* Keys matching pattern (SCAN's MATCH syntax), at most max of them, each
 * given to fn with its value. NONE, or why not (detail). */
rlaas_rerr_e rlaas_scan(rlaas_redis_t *rd, const char *pattern, int max,
                        int64_t deadline, rlaas_scan_fn fn, void *baton,
                        char *detail);

/* SCAN's MATCH pattern for "<prefix>*<suffix>", both taken literally
 * (the glob's special characters escaped): out has room for twice their
 * lengths and 2 more bytes. */
void rlaas_scan_pattern(char *out, const char *prefix, const char *suffix);

#endif
