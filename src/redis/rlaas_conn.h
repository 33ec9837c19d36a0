/*
 * One connection to Redis, and every wait on it bounded by one deadline
 * on the monotonic clock. hiredis 0.14 bounds only the connect; after it
 * the socket is switched to non-blocking and every write and read waits in
 * poll() for what is left of the deadline, so a Redis that trickles its
 * reply a byte at a time can't hold a request longer than its budget.
 * hiredis still writes the commands and parses the replies; the bytes go
 * through the socket or, with TLS, through OpenSSL (rlaas_tls.h). No httpd
 * headers.
 */
#ifndef RLAAS_CONN_H
#define RLAAS_CONN_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include "rlaas_rerr.h"
#include "rlaas_tls.h"

typedef struct {
    const char *addr; /* numeric address, or a socket path when port is 0 */
    int port;
    const char *username;    /* NULL: AUTH with the password alone */
    const char *password;    /* NULL: no AUTH; never logged */
    int database;            /* > 0: SELECT */
    const char *client_name; /* CLIENT SETNAME, so operators see us */
    rlaas_tls_t *tls;        /* NULL: plain TCP (or a unix socket) */
    const char *server_name; /* with tls: the name the certificate must
                                carry; NULL: the context's */
} rlaas_conn_params_t;

typedef struct {
    redisContext *ctx; /* NULL: closed */
    void *tls;         /* the TLS session, or NULL */
    unsigned gen;      /* the pool generation it was opened in */
} rlaas_conn_t;

/* Connects, then AUTH, SELECT and CLIENT SETNAME in one round trip.
 * On failure the connection stays closed and detail says why. */
rlaas_rerr_e rlaas_conn_open(rlaas_conn_t *c, const rlaas_conn_params_t *p,
                             int64_t deadline, char *detail);
void rlaas_conn_close(rlaas_conn_t *c);

/* 1 if an idle connection can't be used: the peer closed it (Redis'
 * "timeout", a restart, a proxy) or sent bytes nobody asked for. Checked
 * before anything is written on it, because nothing written is ever sent
 * again (the scripts are not idempotent). */
int rlaas_conn_is_stale(const rlaas_conn_t *c);

/* Writes what hiredis holds in its output buffer. */
rlaas_rerr_e rlaas_conn_flush(rlaas_conn_t *c, int64_t deadline, char *detail);

/* Reads one reply, built by the reader's current object functions. */
rlaas_rerr_e rlaas_conn_read(rlaas_conn_t *c, int64_t deadline, void **reply,
                             char *detail);

/* One command, written and its reply read within deadline, for the
 * threads that work outside requests (Sentinel, Cluster): the reply (to
 * freeReplyObject), or NULL with detail saying why (out of memory closes
 * the connection). */
redisReply *rlaas_conn_command(rlaas_conn_t *c, int64_t deadline, char *detail,
                               const char *fmt, ...);

#endif
