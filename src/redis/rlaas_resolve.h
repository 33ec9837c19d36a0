/*
 * Where the Redis master is, found outside the request path. For a host
 * name, DNS; with Redis Sentinel, the sentinels' answer to "where is the
 * master called NAME". Looks happen in a thread of the resolver's own,
 * started with the child: at once (a name server or sentinel that does
 * not answer never holds the child's start), then every refresh interval,
 * and soon after a poke (a connect failed, or the server said it is not
 * the master). A request only copies the address last found, and compares
 * the version to learn that it moved. Numeric addresses need none of this
 * and get no thread. POSIX threads, hiredis and rlaas_conn (TLS to the
 * sentinels as to Redis), no httpd headers.
 */
#ifndef RLAAS_RESOLVE_H
#define RLAAS_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_tls.h"

typedef struct rlaas_resolver_t rlaas_resolver_t;

/* A host name (or numeric address). NULL when out of memory. */
rlaas_resolver_t *rlaas_resolver_create(const char *host, int refresh_s);

/* What the sentinels' answers made the resolver do, for the log (the
 * receiver rate-limits; text never holds a password). */
typedef enum {
    RLAAS_SENTINEL_DISAGREE,   /* no address has a majority: the last master
                                  verified stays */
    RLAAS_SENTINEL_UNVERIFIED, /* the sentinels agree on a server that is not
                                  a master we can use: it stays */
    RLAAS_SENTINEL_MOVED       /* a new master, agreed on and verified */
} rlaas_sentinel_note_e;

/* The sentinels of one monitored master. Every refresh asks each of them;
 * an address is used only when more than half of the n configured name
 * it, and only once the server there says it is a master (HELLO's role,
 * or ROLE), reached as the data connections reach it (TLS, name, AUTH).
 * Otherwise the master verified last stays. */
typedef struct {
    const char *master;       /* the name Sentinel monitors */
    const char *const *hosts; /* n sentinels */
    const int *ports;
    int n;
    const char *username; /* Sentinel's own AUTH, or NULL */
    const char *password; /* never logged */
    int timeout_ms;       /* per sentinel asked, and for the check */
    /* TLS to the sentinels and to the master checked: one context (the
     * engine's, which outlives the resolver), or NULL for plain TCP */
    rlaas_tls_t *tls;
    const char *tls_name; /* checked on every sentinel; NULL: the host as
                             configured for it */
    /* the master checked before use, as the data connections reach it */
    const char *master_username;
    const char *master_password; /* never logged */
    const char *master_tls_name; /* NULL: the address announced */
    const char *client_name;     /* CLIENT SETNAME, or NULL */
    void (*note)(void *baton, rlaas_sentinel_note_e what, const char *text);
    void *baton;
} rlaas_sentinel_conf_t;

/* How many sentinels must name an address for it to be used: a majority
 * of those configured, as Sentinel itself needs to fail over. */
int rlaas_sentinel_quorum(int n);

rlaas_resolver_t *rlaas_resolver_sentinel(const rlaas_sentinel_conf_t *c,
                                          int refresh_ms);

void rlaas_resolver_destroy(rlaas_resolver_t *r);

/* Copies the numeric address last found (NUL-terminated) into buf and, if
 * the resolver knows it (Sentinel), the port into *port (else 0); returns
 * 0 when nothing was found yet. */
int rlaas_resolver_get(rlaas_resolver_t *r, char *buf, size_t size, int *port);

/* A child's first requests arrive while its first look-up may still be
 * under way (a sentinel a little far, a slow name server): they wait for
 * that look, not past deadline_us (rlaas_clock_us), rather than fail.
 * Returns 1 when an address is known now. Once a look has finished, found
 * or not, it returns at once: a request never waits for a later one. */
int rlaas_resolver_wait_first(rlaas_resolver_t *r, int64_t deadline_us);

/* Changes whenever the address or port found changes. */
unsigned rlaas_resolver_version(rlaas_resolver_t *r);

/* Look again soon (at most once per poke interval). */
void rlaas_resolver_poke(rlaas_resolver_t *r);

/* Room for any numeric address. */
#define RLAAS_ADDR_MAX 64

#endif
