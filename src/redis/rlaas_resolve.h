/*
 * Where the Redis master is, found outside the request path. For a host
 * name, DNS; with Redis Sentinel, the sentinels' answer to "where is the
 * master called NAME". Looks happen in a thread of the resolver's own,
 * started with the child: at once (a name server or sentinel that does
 * not answer never holds the child's start), then every refresh interval,
 * and soon after a poke (a connect failed, or the server said it is not
 * the master). A request only copies the address last found, and compares
 * the version to learn that it moved. Numeric addresses need none of this
 * and get no thread. POSIX threads and hiredis, no httpd headers.
 */
#ifndef RLAAS_RESOLVE_H
#define RLAAS_RESOLVE_H

#include <stddef.h>

typedef struct rlaas_resolver_t rlaas_resolver_t;

/* A host name (or numeric address). NULL when out of memory. */
rlaas_resolver_t *rlaas_resolver_create(const char *host, int refresh_s);

/* The sentinels of one monitored master. */
typedef struct {
    const char *master;       /* the name Sentinel monitors */
    const char *const *hosts; /* n sentinels */
    const int *ports;
    int n;
    const char *username; /* Sentinel's own AUTH, or NULL */
    const char *password; /* never logged */
    int timeout_ms;       /* per sentinel asked */
} rlaas_sentinel_conf_t;

rlaas_resolver_t *rlaas_resolver_sentinel(const rlaas_sentinel_conf_t *c,
                                          int refresh_ms);

void rlaas_resolver_destroy(rlaas_resolver_t *r);

/* Copies the numeric address last found (NUL-terminated) into buf and, if
 * the resolver knows it (Sentinel), the port into *port (else 0); returns
 * 0 when nothing was found yet. */
int rlaas_resolver_get(rlaas_resolver_t *r, char *buf, size_t size, int *port);

/* Changes whenever the address or port found changes. */
unsigned rlaas_resolver_version(rlaas_resolver_t *r);

/* Look again soon (at most once per poke interval). */
void rlaas_resolver_poke(rlaas_resolver_t *r);

/* Room for any numeric address. */
#define RLAAS_ADDR_MAX 64

#endif
