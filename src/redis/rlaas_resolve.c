#include "rlaas_resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rlaas_clock.h"

/* Poked lookups come no closer together than this. */
#define POKE_GAP_US 1000000

struct rlaas_resolver_t {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    pthread_t thread;
    int has_thread, stop, poked;
    int refresh_s;
    char *host;
    char addr[RLAAS_ADDR_MAX]; /* "" until a lookup succeeds */
};

static int is_numeric(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1 ||
           inet_pton(AF_INET6, host, buf) == 1;
}

/* One lookup: the first address the system gives, as numeric text. */
static int lookup(const char *host, char *out, size_t size)
{
    struct addrinfo hints, *res = NULL;
    const void *a = NULL;
    int ok = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL)
        return 0;
    if (res->ai_family == AF_INET)
        a = &((struct sockaddr_in *)res->ai_addr)->sin_addr;
    else if (res->ai_family == AF_INET6)
        a = &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
    if (a != NULL && inet_ntop(res->ai_family, a, out, (socklen_t)size))
        ok = 1;
    freeaddrinfo(res);
    return ok;
}

static void refresh(rlaas_resolver_t *r)
{
    char found[RLAAS_ADDR_MAX];

    /* without the lock: DNS may take seconds */
    if (!lookup(r->host, found, sizeof(found)))
        return; /* keep the last good address */
    pthread_mutex_lock(&r->mu);
    memcpy(r->addr, found, sizeof(found));
    pthread_mutex_unlock(&r->mu);
}

static void *run(void *arg)
{
    rlaas_resolver_t *r = arg;
    int64_t next = rlaas_clock_us() + (int64_t)r->refresh_s * 1000000;
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
        next = now + (int64_t)r->refresh_s * 1000000;
        not_before = now + POKE_GAP_US;
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

rlaas_resolver_t *rlaas_resolver_create(const char *host, int refresh_s)
{
    rlaas_resolver_t *r = calloc(1, sizeof(*r));

    if (r == NULL || (r->host = strdup(host)) == NULL) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->refresh_s = refresh_s > 0 ? refresh_s : 1;
    if (is_numeric(host)) {
        size_t n = strlen(host);

        if (n < sizeof(r->addr))
            memcpy(r->addr, host, n + 1);
        return r;
    }
    refresh(r);
    /* Without a thread the first address is kept for good: still never a
     * lookup inside a request. */
    start_thread(r);
    return r;
}

void rlaas_resolver_destroy(rlaas_resolver_t *r)
{
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
    pthread_mutex_destroy(&r->mu);
    free(r->host);
    free(r);
}

int rlaas_resolver_get(rlaas_resolver_t *r, char *buf, size_t size)
{
    int ok;

    pthread_mutex_lock(&r->mu);
    ok = r->addr[0] != '\0' && strlen(r->addr) < size;
    if (ok)
        memcpy(buf, r->addr, strlen(r->addr) + 1);
    pthread_mutex_unlock(&r->mu);
    return ok;
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
