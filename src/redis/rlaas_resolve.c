#include "rlaas_resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include "rlaas_clock.h"

typedef struct {
    char addr[RLAAS_ADDR_MAX];
    int port;
} found_t;

struct rlaas_resolver_t {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    pthread_t thread;
    int has_thread, stop, poked;
    int64_t refresh_us, poke_gap_us;
    found_t found; /* addr "" until a look-up succeeds */
    unsigned version;
    /* how to look: DNS for host, or the sentinels */
    int (*look)(rlaas_resolver_t *r, found_t *out);
    char *host;
    rlaas_sentinel_conf_t sentinel; /* copies, owned */
    int good;                       /* the sentinel that answered last */
    redisContext *sctx;             /* kept open to it */
};

static int is_numeric(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1 ||
           inet_pton(AF_INET6, host, buf) == 1;
}

/* DNS: the first address the system gives, as numeric text. */
static int look_dns(rlaas_resolver_t *r, found_t *out)
{
    struct addrinfo hints, *res = NULL;
    const void *a = NULL;
    int ok = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(r->host, NULL, &hints, &res) != 0 || res == NULL)
        return 0;
    if (res->ai_family == AF_INET)
        a = &((struct sockaddr_in *)res->ai_addr)->sin_addr;
    else if (res->ai_family == AF_INET6)
        a = &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
    if (a != NULL &&
        inet_ntop(res->ai_family, a, out->addr, (socklen_t)sizeof(out->addr)))
        ok = 1;
    out->port = 0;
    freeaddrinfo(res);
    return ok;
}

/* ---- Sentinel ---- */

static struct timeval tv_ms(int ms)
{
    struct timeval tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

static redisContext *sentinel_connect(rlaas_resolver_t *r, int i)
{
    const rlaas_sentinel_conf_t *c = &r->sentinel;
    redisContext *ctx =
        redisConnectWithTimeout(c->hosts[i], c->ports[i], tv_ms(c->timeout_ms));
    redisReply *rep = NULL;

    if (ctx == NULL || ctx->err ||
        redisSetTimeout(ctx, tv_ms(c->timeout_ms)) != REDIS_OK)
        goto fail;
    if (c->password != NULL) {
        rep = c->username != NULL
                  ? redisCommand(ctx, "AUTH %s %s", c->username, c->password)
                  : redisCommand(ctx, "AUTH %s", c->password);
        if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
            goto fail;
        freeReplyObject(rep);
    }
    return ctx;
fail:
    if (rep != NULL)
        freeReplyObject(rep);
    if (ctx != NULL)
        redisFree(ctx);
    return NULL;
}

/* "SENTINEL get-master-addr-by-name" on one sentinel: [ip, port]. */
static int ask(redisContext *ctx, const char *master, found_t *out)
{
    redisReply *rep =
        redisCommand(ctx, "SENTINEL get-master-addr-by-name %s", master);
    int ok = 0;

    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_STRING &&
        rep->element[1]->type == REDIS_REPLY_STRING &&
        rep->element[0]->len < sizeof(out->addr)) {
        memcpy(out->addr, rep->element[0]->str, rep->element[0]->len + 1);
        out->port = atoi(rep->element[1]->str);
        ok = out->port > 0 && out->port < 65536;
    }
    if (rep != NULL)
        freeReplyObject(rep);
    return ok;
}

/* The sentinel that answered last first, then the others in turn; the
 * connection to the one that answers is kept for the next time. */
static int look_sentinel(rlaas_resolver_t *r, found_t *out)
{
    int k;

    for (k = 0; k < r->sentinel.n; k++) {
        int i = (r->good + k) % r->sentinel.n;

        if (r->sctx == NULL || i != r->good) {
            if (r->sctx != NULL)
                redisFree(r->sctx);
            r->good = i;
            if ((r->sctx = sentinel_connect(r, i)) == NULL)
                continue;
        }
        if (ask(r->sctx, r->sentinel.master, out))
            return 1;
        redisFree(r->sctx);
        r->sctx = NULL;
    }
    return 0;
}

/* ---- the thread ---- */

static void refresh(rlaas_resolver_t *r)
{
    found_t f;

    memset(&f, 0, sizeof(f));
    /* without the lock: DNS or a sentinel may take seconds */
    if (!r->look(r, &f))
        return; /* keep the last good address */
    pthread_mutex_lock(&r->mu);
    if (strcmp(f.addr, r->found.addr) != 0 || f.port != r->found.port) {
        r->found = f;
        __atomic_add_fetch(&r->version, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&r->mu);
}

static void *run(void *arg)
{
    rlaas_resolver_t *r = arg;
    int64_t next = rlaas_clock_us(); /* the first look: at once */
    int64_t not_before = 0;
    struct timespec ts;

    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        int64_t now = rlaas_clock_us();
        int due = now >= next || (r->poked && now >= not_before);

        if (!due) {
            int64_t at = r->poked && not_before < next ? not_before : next;

            rlaas_clock_timespec(at, &ts);
            pthread_cond_timedwait(&r->cond, &r->mu, &ts);
            continue;
        }
        r->poked = 0;
        pthread_mutex_unlock(&r->mu);
        refresh(r);
        now = rlaas_clock_us();
        next = now + r->refresh_us;
        not_before = now + r->poke_gap_us;
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static int start_thread(rlaas_resolver_t *r)
{
    pthread_condattr_t attr;
    int ok;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    ok = pthread_cond_init(&r->cond, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok)
        return 0;
    if (pthread_create(&r->thread, NULL, run, r) != 0) {
        pthread_cond_destroy(&r->cond);
        return 0;
    }
    r->has_thread = 1;
    return 1;
}

static rlaas_resolver_t *make(void)
{
    rlaas_resolver_t *r = calloc(1, sizeof(*r));

    if (r != NULL)
        pthread_mutex_init(&r->mu, NULL);
    return r;
}

rlaas_resolver_t *rlaas_resolver_create(const char *host, int refresh_s)
{
    rlaas_resolver_t *r = make();

    if (r == NULL || (r->host = strdup(host)) == NULL) {
        rlaas_resolver_destroy(r);
        return NULL;
    }
    if (is_numeric(host)) {
        size_t n = strlen(host);

        if (n < sizeof(r->found.addr))
            memcpy(r->found.addr, host, n + 1);
        return r;
    }
    r->look = look_dns;
    r->refresh_us = (int64_t)(refresh_s > 0 ? refresh_s : 1) * 1000000;
    r->poke_gap_us = 1000000;
    /* The first look too is the thread's: a DNS server that does not
     * answer must not hold the child's start. Without a thread, once
     * here: still never inside a request. */
    if (!start_thread(r))
        refresh(r);
    return r;
}

static char *dup_or_null(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

rlaas_resolver_t *rlaas_resolver_sentinel(const rlaas_sentinel_conf_t *c,
                                          int refresh_ms)
{
    rlaas_resolver_t *r = make();
    char **hosts;
    int *ports, i;

    if (r == NULL)
        return NULL;
    hosts = calloc((size_t)c->n, sizeof(*hosts));
    ports = calloc((size_t)c->n, sizeof(*ports));
    r->sentinel = *c;
    r->sentinel.hosts = (const char *const *)hosts;
    r->sentinel.ports = ports;
    r->sentinel.master = dup_or_null(c->master);
    r->sentinel.username = dup_or_null(c->username);
    r->sentinel.password = dup_or_null(c->password);
    for (i = 0; hosts != NULL && ports != NULL && i < c->n; i++) {
        hosts[i] = strdup(c->hosts[i]);
        ports[i] = c->ports[i];
    }
    if (hosts == NULL || ports == NULL || r->sentinel.master == NULL) {
        r->sentinel.n = hosts == NULL ? 0 : c->n;
        rlaas_resolver_destroy(r);
        return NULL;
    }
    r->look = look_sentinel;
    r->refresh_us = (int64_t)(refresh_ms > 0 ? refresh_ms : 1000) * 1000;
    /* after a failover every child asks: a few times a second at most */
    r->poke_gap_us = 200000;
    if (!start_thread(r))
        refresh(r);
    return r;
}

void rlaas_resolver_destroy(rlaas_resolver_t *r)
{
    int i;

    if (r == NULL)
        return;
    if (r->has_thread) {
        pthread_mutex_lock(&r->mu);
        r->stop = 1;
        pthread_cond_signal(&r->cond);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
        pthread_cond_destroy(&r->cond);
    }
    if (r->sctx != NULL)
        redisFree(r->sctx);
    for (i = 0; r->sentinel.hosts != NULL && i < r->sentinel.n; i++)
        free((char *)r->sentinel.hosts[i]);
    free((char **)r->sentinel.hosts);
    free((int *)r->sentinel.ports);
    free((char *)r->sentinel.master);
    free((char *)r->sentinel.username);
    free((char *)r->sentinel.password);
    pthread_mutex_destroy(&r->mu);
    free(r->host);
    free(r);
}

int rlaas_resolver_get(rlaas_resolver_t *r, char *buf, size_t size, int *port)
{
    int ok;

    pthread_mutex_lock(&r->mu);
    ok = r->found.addr[0] != '\0' && strlen(r->found.addr) < size;
    if (ok) {
        memcpy(buf, r->found.addr, strlen(r->found.addr) + 1);
        if (port != NULL)
            *port = r->found.port;
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}

/* Read once per group of calls: no lock. */
unsigned rlaas_resolver_version(rlaas_resolver_t *r)
{
    return __atomic_load_n(&r->version, __ATOMIC_ACQUIRE);
}

void rlaas_resolver_poke(rlaas_resolver_t *r)
{
    if (!r->has_thread)
        return;
    pthread_mutex_lock(&r->mu);
    r->poked = 1;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->mu);
}
