#include "rlaas_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/sds.h>

#include "rlaas_clock.h"

static void say(char *detail, const char *text)
{
    size_t n = strlen(text);

    if (n >= RLAAS_DETAIL_MAX)
        n = RLAAS_DETAIL_MAX - 1;
    memcpy(detail, text, n);
    detail[n] = '\0';
}

void rlaas_conn_close(rlaas_conn_t *c)
{
    if (c->tls != NULL) {
        rlaas_tls_session_free(c->tls);
        c->tls = NULL;
    }
    if (c->ctx != NULL) {
        redisFree(c->ctx);
        c->ctx = NULL;
    }
}

/* A transport failure: the connection can't be trusted any more. */
static rlaas_rerr_e broken(rlaas_conn_t *c, rlaas_rerr_e e, char *detail,
                           const char *text)
{
    say(detail, text != NULL ? text : c->ctx->errstr);
    rlaas_conn_close(c);
    return e;
}

/* Waits until the socket is ready for events, or the deadline. */
static rlaas_rerr_e wait_ready(rlaas_conn_t *c, short events, int64_t deadline,
                               char *detail)
{
    struct pollfd pfd;
    int rc;

    pfd.fd = c->ctx->fd;
    pfd.events = events;
    do {
        int64_t left = rlaas_clock_left_us(deadline);

        if (left == 0)
            return broken(c, RLAAS_RERR_TIMEOUT, detail,
                          "no reply within the time budget");
        /* whole milliseconds, rounded up: never a wait cut to zero */
        rc = poll(&pfd, 1, (int)((left + 999) / 1000));
    } while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return broken(c, RLAAS_RERR_IO, detail, strerror(errno));
    if (rc == 0)
        return broken(c, RLAAS_RERR_TIMEOUT, detail,
                      "no reply within the time budget");
    return RLAAS_RERR_NONE;
}

/* What a TLS step asks for: wait for it, or fail. */
static rlaas_rerr_e tls_wait(rlaas_conn_t *c, int rc, int64_t deadline,
                             char *detail)
{
    char why[RLAAS_DETAIL_MAX];

    if (rc == RLAAS_TLS_WANT_READ)
        return wait_ready(c, POLLIN, deadline, detail);
    if (rc == RLAAS_TLS_WANT_WRITE)
        return wait_ready(c, POLLOUT, deadline, detail);
    if (rc == RLAAS_TLS_CLOSED)
        return broken(c, RLAAS_RERR_IO, detail, "Server closed the connection");
    rlaas_tls_error(c->tls, why, sizeof(why));
    return broken(c, RLAAS_RERR_IO, detail, why);
}

static rlaas_rerr_e tls_flush(rlaas_conn_t *c, int64_t deadline, char *detail)
{
    rlaas_rerr_e e;

    while (sdslen(c->ctx->obuf) > 0) {
        int n = rlaas_tls_write(c->tls, c->ctx->obuf, sdslen(c->ctx->obuf));

        if (n > 0)
            sdsrange(c->ctx->obuf, n, -1);
        else if ((e = tls_wait(c, n, deadline, detail)) != RLAAS_RERR_NONE)
            return e;
    }
    return RLAAS_RERR_NONE;
}

rlaas_rerr_e rlaas_conn_flush(rlaas_conn_t *c, int64_t deadline, char *detail)
{
    int done = 0;
    rlaas_rerr_e e;

    if (c->tls != NULL)
        return tls_flush(c, deadline, detail);
    for (;;) {
        if (redisBufferWrite(c->ctx, &done) != REDIS_OK)
            return broken(c, RLAAS_RERR_IO, detail, NULL);
        if (done)
            return RLAAS_RERR_NONE;
        if ((e = wait_ready(c, POLLOUT, deadline, detail)) != RLAAS_RERR_NONE)
            return e;
    }
}

/* Moves what TLS has for us into hiredis' reader. */
static rlaas_rerr_e tls_fill(rlaas_conn_t *c, int64_t deadline, char *detail)
{
    char buf[16 * 1024];
    int n;

    if (rlaas_tls_pending(c->tls) == 0) {
        rlaas_rerr_e e = wait_ready(c, POLLIN, deadline, detail);

        if (e != RLAAS_RERR_NONE)
            return e;
    }
    n = rlaas_tls_read(c->tls, buf, sizeof(buf));
    if (n > 0) {
        if (redisReaderFeed(c->ctx->reader, buf, (size_t)n) != REDIS_OK)
            return broken(c, RLAAS_RERR_IO, detail, c->ctx->reader->errstr);
        return RLAAS_RERR_NONE;
    }
    if (n == RLAAS_TLS_WANT_READ)
        return RLAAS_RERR_NONE; /* a record not whole yet: wait again */
    return tls_wait(c, n, deadline, detail);
}

rlaas_rerr_e rlaas_conn_read(rlaas_conn_t *c, int64_t deadline, void **reply,
                             char *detail)
{
    rlaas_rerr_e e;

    *reply = NULL;
    for (;;) {
        if (redisReaderGetReply(c->ctx->reader, reply) != REDIS_OK)
            return broken(c, RLAAS_RERR_IO, detail, c->ctx->reader->errstr);
        if (*reply != NULL)
            return RLAAS_RERR_NONE;
        if (c->tls != NULL) {
            if ((e = tls_fill(c, deadline, detail)) != RLAAS_RERR_NONE)
                return e;
            continue;
        }
        if ((e = wait_ready(c, POLLIN, deadline, detail)) != RLAAS_RERR_NONE)
            return e;
        /* Without REDIS_BLOCK, a read that finds nothing (EAGAIN) is not
         * an error: the loop waits again. End of file is. */
        if (redisBufferRead(c->ctx) != REDIS_OK)
            return broken(c, RLAAS_RERR_IO, detail, NULL);
    }
}

int rlaas_conn_is_stale(const rlaas_conn_t *c)
{
    char b;
    ssize_t n;

    if (c->ctx == NULL || c->ctx->err)
        return 1;
    n = recv(c->ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0; /* nothing to read: as it should be */
    return 1;     /* end of file, an error, or unasked bytes */
}

static struct timeval to_tv(int64_t us)
{
    struct timeval tv;

    tv.tv_sec = (time_t)(us / 1000000);
    tv.tv_usec = (suseconds_t)(us % 1000000);
    return tv;
}

/* From here on hiredis never blocks: every wait is ours, in poll(). */
static int make_nonblocking(redisContext *ctx)
{
    int fl = fcntl(ctx->fd, F_GETFL);

    if (fl < 0 || fcntl(ctx->fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return 0;
    ctx->flags &= ~REDIS_BLOCK;
    return 1;
}

/* The TLS handshake, by the deadline. A certificate that does not verify
 * (wrong CA, wrong name) is a connect failure: Redis is unreachable as
 * far as the limiter is concerned, and the log says why. */
static rlaas_rerr_e tls_start(rlaas_conn_t *c, const rlaas_conn_params_t *p,
                              int64_t deadline, char *detail)
{
    int rc;

    if ((c->tls = rlaas_tls_session(p->tls, c->ctx->fd, p->server_name)) ==
        NULL)
        return broken(c, RLAAS_RERR_CONNECT, detail,
                      "TLS: cannot make a session");
    while ((rc = rlaas_tls_handshake(c->tls)) <= 0) {
        rlaas_rerr_e e;

        if (rc != RLAAS_TLS_WANT_READ && rc != RLAAS_TLS_WANT_WRITE) {
            char why[RLAAS_DETAIL_MAX];

            rlaas_tls_error(c->tls, why, sizeof(why));
            return broken(c, RLAAS_RERR_CONNECT, detail, why);
        }
        if ((e = tls_wait(c, rc, deadline, detail)) != RLAAS_RERR_NONE)
            return e;
    }
    return RLAAS_RERR_NONE;
}

/* AUTH, SELECT and CLIENT SETNAME, pipelined. The first errors make the
 * connection useless; a refused CLIENT SETNAME (an ACL without CLIENT)
 * does not. */
static rlaas_rerr_e setup(rlaas_conn_t *c, const rlaas_conn_params_t *p,
                          int64_t deadline, char *detail)
{
    rlaas_rerr_e kind[3], e = RLAAS_RERR_NONE;
    int n = 0, i;

    if (p->password != NULL) {
        if (p->username != NULL)
            redisAppendCommand(c->ctx, "AUTH %s %s", p->username, p->password);
        else
            redisAppendCommand(c->ctx, "AUTH %s", p->password);
        kind[n++] = RLAAS_RERR_AUTH;
    }
    if (p->database > 0) {
        redisAppendCommand(c->ctx, "SELECT %d", p->database);
        kind[n++] = RLAAS_RERR_SELECT;
    }
    if (p->client_name != NULL) {
        redisAppendCommand(c->ctx, "CLIENT SETNAME %s", p->client_name);
        kind[n++] = RLAAS_RERR_NONE;
    }
    if (n > 0 && (e = rlaas_conn_flush(c, deadline, detail)) != RLAAS_RERR_NONE)
        return e;
    for (i = 0; i < n; i++) {
        redisReply *rep;
        rlaas_rerr_e re = rlaas_conn_read(c, deadline, (void **)&rep, detail);

        if (re != RLAAS_RERR_NONE)
            return re;
        if (rep->type == REDIS_REPLY_ERROR && e == RLAAS_RERR_NONE &&
            kind[i] != RLAAS_RERR_NONE) {
            e = kind[i];
            say(detail, rep->str); /* Redis' own text: never the password */
        }
        freeReplyObject(rep);
    }
    if (e != RLAAS_RERR_NONE)
        rlaas_conn_close(c);
    return e;
}

rlaas_rerr_e rlaas_conn_open(rlaas_conn_t *c, const rlaas_conn_params_t *p,
                             int64_t deadline, char *detail)
{
    int64_t left = rlaas_clock_left_us(deadline);

    c->ctx = NULL;
    c->tls = NULL;
    if (left == 0) {
        say(detail, "no time left to connect");
        return RLAAS_RERR_TIMEOUT;
    }
    c->ctx = p->port > 0
                 ? redisConnectWithTimeout(p->addr, p->port, to_tv(left))
                 : redisConnectUnixWithTimeout(p->addr, to_tv(left));
    if (c->ctx == NULL) {
        say(detail, "out of memory");
        return RLAAS_RERR_CONNECT;
    }
    if (c->ctx->err)
        return broken(c, RLAAS_RERR_CONNECT, detail, NULL);
    if (!make_nonblocking(c->ctx))
        return broken(c, RLAAS_RERR_CONNECT, detail, strerror(errno));
    if (p->tls != NULL) {
        rlaas_rerr_e e = tls_start(c, p, deadline, detail);

        if (e != RLAAS_RERR_NONE)
            return e;
    }
    return setup(c, p, deadline, detail);
}

redisReply *rlaas_conn_command(rlaas_conn_t *c, int64_t deadline, char *detail,
                               const char *fmt, ...)
{
    void *rep = NULL;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = redisvAppendCommand(c->ctx, fmt, ap);
    va_end(ap);
    if (rc != REDIS_OK) {
        say(detail, "out of memory");
        rlaas_conn_close(c);
        return NULL;
    }
    if (rlaas_conn_flush(c, deadline, detail) != RLAAS_RERR_NONE ||
        rlaas_conn_read(c, deadline, &rep, detail) != RLAAS_RERR_NONE)
        return NULL;
    return rep;
}
