/*
 * Host names of Redis servers, resolved outside the request path. A name
 * is looked up when the child starts and then by a thread of its own:
 * every refresh interval, and soon after a connection to the address it
 * gave failed (a failover behind a DNS name). A request only copies the
 * address last found; it never waits for DNS. Numeric addresses need none
 * of this and get no thread. POSIX threads, no httpd headers.
 */
#ifndef RLAAS_RESOLVE_H
#define RLAAS_RESOLVE_H

#include <stddef.h>

typedef struct rlaas_resolver_t rlaas_resolver_t;

/* NULL when out of memory. The first lookup runs here, before returning. */
rlaas_resolver_t *rlaas_resolver_create(const char *host, int refresh_s);
void rlaas_resolver_destroy(rlaas_resolver_t *r);

/* Copies the numeric address last found (NUL-terminated) into buf;
 * returns 0 when no lookup has succeeded yet. */
int rlaas_resolver_get(rlaas_resolver_t *r, char *buf, size_t size);

/* A connection to the address failed: look the name up again soon (at
 * most once a second). */
void rlaas_resolver_poke(rlaas_resolver_t *r);

/* Room for any numeric address. */
#define RLAAS_ADDR_MAX 64

#endif
