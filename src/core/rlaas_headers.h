/*
 * Rate-limit header fields for clients: the IETF httpapi draft fields
 * (RateLimit-Policy, RateLimit) and the older X-RateLimit-* trio. Values
 * come from the script's reply. No httpd headers: formatting only.
 */
#ifndef RLAAS_HEADERS_H
#define RLAAS_HEADERS_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_verdict.h"

typedef enum {
    RLAAS_HEADERS_UNSET = -1,
    RLAAS_HEADERS_OFF = 0,
    RLAAS_HEADERS_DRAFT = 1,
    RLAAS_HEADERS_LEGACY = 2,
    RLAAS_HEADERS_BOTH = 3 /* DRAFT | LEGACY */
} rlaas_headers_e;

const char *rlaas_parse_headers_mode(const char *s, rlaas_headers_e *out);

/* A policy name as a structured-field string: the zone or "default".
 * Zone names are [A-Za-z0-9._-], so no escaping is needed. */
#define RLAAS_POLICY_DEFAULT "default"

/* A RateLimit-Policy item written once, with the name, limit and window
 * it tells of: a section's own limit keeps one from its merge, and the
 * request path uses it while the policy it shows is that. */
typedef struct {
    const char *name;
    int64_t limit, window_ms;
    const char *text;
    size_t len;
} rlaas_policy_field_t;

/* Writes `"<name>";q=<limit>;w=<window s>` into buf. */
int rlaas_fmt_policy(char *buf, size_t size, const char *name, int64_t limit,
                     int64_t window_ms);

/* Writes `"<name>";r=<remaining>;t=<reset s>` into buf. */
int rlaas_fmt_ratelimit(char *buf, size_t size, const char *name,
                        const rlaas_verdict_t *v);

#endif
