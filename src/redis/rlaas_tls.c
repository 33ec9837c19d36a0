#include "rlaas_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct rlaas_tls_t {
    SSL_CTX *ctx;
    char *server_name;
};

static void last_error(const char *what, char *err, size_t size)
{
    unsigned long e = ERR_get_error();
    char buf[160];

    ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, size, "%s: %s", what, e ? buf : "unknown error");
    ERR_clear_error();
}

rlaas_tls_t *rlaas_tls_create(const rlaas_tls_conf_t *c, char *err, size_t size)
{
    rlaas_tls_t *t = calloc(1, sizeof(*t));

    if (t == NULL || (t->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
        snprintf(err, size, "out of memory");
        free(t);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    /* our own writes resume from where they stopped, with the same
     * buffer: let OpenSSL accept that */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                 SSL_MODE_ENABLE_PARTIAL_WRITE);
    if ((c->ca != NULL ? SSL_CTX_load_verify_locations(t->ctx, c->ca, NULL)
                       : SSL_CTX_set_default_verify_paths(t->ctx)) != 1) {
        last_error("cannot load the CA certificates", err, size);
        goto fail;
    }
    if (c->cert != NULL &&
        SSL_CTX_use_certificate_chain_file(t->ctx, c->cert) != 1) {
        last_error("cannot load the client certificate", err, size);
        goto fail;
    }
    if (c->key != NULL &&
        (SSL_CTX_use_PrivateKey_file(t->ctx, c->key, SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(t->ctx) != 1)) {
        last_error("cannot load the client key", err, size);
        goto fail;
    }
    if (c->server_name != NULL &&
        (t->server_name = strdup(c->server_name)) == NULL) {
        snprintf(err, size, "out of memory");
        goto fail;
    }
    return t;
fail:
    rlaas_tls_destroy(t);
    return NULL;
}

void rlaas_tls_destroy(rlaas_tls_t *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

void *rlaas_tls_session(rlaas_tls_t *t, int fd, const char *name)
{
    SSL *ssl = SSL_new(t->ctx);

    if (ssl == NULL)
        return NULL;
    if (SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        return NULL;
    }
    if (name == NULL)
        name = t->server_name;
    if (name != NULL) {
        /* SNI only for names: RFC 6066 forbids addresses there */
        if (strspn(name, "0123456789.:") != strlen(name))
            SSL_set_tlsext_host_name(ssl, name);
        /* an address is checked against the certificate's IP entries */
        if (SSL_set1_host(ssl, name) != 1) {
            SSL_free(ssl);
            return NULL;
        }
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

void rlaas_tls_session_free(void *session)
{
    SSL_free(session);
}

static int outcome(SSL *ssl, int rc)
{
    if (rc > 0)
        return rc;
    switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        return RLAAS_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return RLAAS_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN:
        return RLAAS_TLS_CLOSED;
    default:
        return RLAAS_TLS_ERROR;
    }
}

int rlaas_tls_handshake(void *session)
{
    ERR_clear_error();
    return outcome(session, SSL_connect(session));
}

int rlaas_tls_write(void *session, const char *buf, size_t len)
{
    ERR_clear_error();
    return outcome(session, SSL_write(session, buf, (int)len));
}

int rlaas_tls_read(void *session, char *buf, size_t len)
{
    ERR_clear_error();
    return outcome(session, SSL_read(session, buf, (int)len));
}

int rlaas_tls_pending(void *session)
{
    return SSL_pending(session);
}

void rlaas_tls_error(void *session, char *out, size_t size)
{
    long v = SSL_get_verify_result(session);

    if (v != X509_V_OK) {
        snprintf(out, size, "TLS: certificate verify failed: %s",
                 X509_verify_cert_error_string(v));
        ERR_clear_error();
        return;
    }
    last_error("TLS", out, size);
}
