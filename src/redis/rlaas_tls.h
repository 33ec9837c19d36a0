/*
 * TLS to Redis (Redis 6+ tls-port), which hiredis 0.14 cannot speak:
 * OpenSSL carries the bytes, as mod_ssl links it, while hiredis still
 * writes the commands into its buffer and parses the replies. One
 * context per Redis target in each child; the server's certificate is
 * checked against the CA given and the server name (SNI and host name
 * verification). No httpd headers.
 */
#ifndef RLAAS_TLS_H
#define RLAAS_TLS_H

#include <stddef.h>

typedef struct rlaas_tls_t rlaas_tls_t;

typedef struct {
    const char *ca;          /* CA certificate file; NULL: the system's */
    const char *cert;        /* client certificate file, or NULL */
    const char *key;         /* its private key file, or NULL */
    const char *server_name; /* checked against the certificate; SNI */
} rlaas_tls_conf_t;

/* NULL on failure, with why in err (size bytes). */
rlaas_tls_t *rlaas_tls_create(const rlaas_tls_conf_t *c, char *err,
                              size_t size);
void rlaas_tls_destroy(rlaas_tls_t *t);

/* For rlaas_conn.c: a new session on fd (an SSL *), or NULL. The name
 * checked is name, or the context's server_name when name is NULL (one
 * context serves a master and its sentinels, each with a name of its
 * own). */
void *rlaas_tls_session(rlaas_tls_t *t, int fd, const char *name);
void rlaas_tls_session_free(void *session);

/* One step of the handshake, a write or a read on a session:
 * > 0   done / bytes moved
 * RLAAS_TLS_WANT_READ, RLAAS_TLS_WANT_WRITE: wait for the socket
 * RLAAS_TLS_CLOSED: the peer closed the session
 * RLAAS_TLS_ERROR: failed; rlaas_tls_error() says why */
#define RLAAS_TLS_WANT_READ  (-1)
#define RLAAS_TLS_WANT_WRITE (-2)
#define RLAAS_TLS_CLOSED     (-3)
#define RLAAS_TLS_ERROR      (-4)
int rlaas_tls_handshake(void *session);
int rlaas_tls_write(void *session, const char *buf, size_t len);
int rlaas_tls_read(void *session, char *buf, size_t len);
/* Bytes already decrypted and waiting: read them before polling. */
int rlaas_tls_pending(void *session);
/* The last error of this thread, e.g. "certificate verify failed". */
void rlaas_tls_error(void *session, char *out, size_t size);

#endif
