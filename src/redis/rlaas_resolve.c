#include "rlaas_resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>

#include "rlaas_clock.h"
#include "rlaas_conn.h"

/* Sentinels one resolver asks, at most (RLaaSRedisSentinel takes 16). */
#define RLAAS_SENTINELS_ASKED_MAX 16

typedef struct {
    char addr[RLAAS_ADDR_MAX];
    int port;
} found_t;

struct rlaas_resolver_t {
    pthread_mutex_t mu;
    pthread_cond_t cond;   /* CLOCK_MONOTONIC: the thread's */
    pthread_cond_t looked; /* CLOCK_MONOTONIC: requests waiting for the
                              first look (rlaas_resolver_wait_first) */
    pthread_t thread;
    int has_thread, stop, poked;
    int looks; /* look-ups finished, found or not */
    int64_t refresh_us, poke_gap_us;
    found_t found; /* addr "" until a look-up succeeds */
    unsigned version;
    /* how to look: DNS for host, or the sentinels */
    int (*look)(rlaas_resolver_t *r, found_t *out);
    char *host;
    rlaas_sentinel_conf_t sentinel; /* copies, owned */
    rlaas_conn_t *sconn;            /* one per sentinel, kept open */
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

/* One sentinel's answer: an address for the master, or why none. */
typedef struct {
    found_t f;
    int ok;
    char why[RLAAS_DETAIL_MAX];
} answer_t;

/* A server's words, for the log: whatever a sentinel sends, no control
 * character reaches it. */
static void say(char *out, const char *text)
{
    char *c;

    snprintf(out, RLAAS_DETAIL_MAX, "%s", text);
    for (c = out; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    }
}

/* An address as Sentinel announces one: an IP address, or a host name
 * with announce-hostnames. Anything else is not believed. */
static int plausible(const char *a, size_t len)
{
    return len > 0 && len < RLAAS_ADDR_MAX &&
           strspn(a, "0123456789abcdefABCDEFghijklmnopqrstuvwxyz"
                     "GHIJKLMNOPQRSTUVWXYZ.-_:%") == len;
}

int rlaas_sentinel_quorum(int n)
{
    return n / 2 + 1;
}

static int same(const found_t *a, const found_t *b)
{
    return a->port == b->port && strcmp(a->addr, b->addr) == 0;
}

static int64_t deadline_of(const rlaas_resolver_t *r)
{
    return rlaas_clock_us() + (int64_t)r->sentinel.timeout_ms * 1000;
}

/* "SENTINEL get-master-addr-by-name" on sentinel i, on the connection
 * kept open to it (made again when the sentinel closed it). */
static void ask(rlaas_resolver_t *r, int i, answer_t *a)
{
    const rlaas_sentinel_conf_t *sc = &r->sentinel;
    rlaas_conn_t *c = &r->sconn[i];
    int64_t deadline = deadline_of(r);
    redisReply *rep;

    memset(a, 0, sizeof(*a));
    if (c->ctx != NULL && rlaas_conn_is_stale(c))
        rlaas_conn_close(c);
    if (c->ctx == NULL) {
        rlaas_conn_params_t p;

        memset(&p, 0, sizeof(p));
        p.addr = sc->hosts[i];
        p.port = sc->ports[i];
        p.username = sc->username;
        p.password = sc->password;
        p.client_name = sc->client_name;
        p.tls = sc->tls;
        p.server_name = sc->tls_name != NULL ? sc->tls_name : sc->hosts[i];
        if (rlaas_conn_open(c, &p, deadline, a->why) != RLAAS_RERR_NONE)
            return;
    }
    rep = rlaas_conn_command(c, deadline, a->why,
                             "SENTINEL get-master-addr-by-name %s", sc->master);
    if (rep == NULL)
        return;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_STRING &&
        rep->element[1]->type == REDIS_REPLY_STRING &&
        plausible(rep->element[0]->str, rep->element[0]->len)) {
        memcpy(a->f.addr, rep->element[0]->str, rep->element[0]->len + 1);
        a->f.port = atoi(rep->element[1]->str);
        a->ok = a->f.port > 0 && a->f.port < 65536;
    }
    if (!a->ok)
        say(a->why, rep->type == REDIS_REPLY_ERROR ? rep->str
                    : rep->type == REDIS_REPLY_NIL
                        ? "does not know the master"
                        : "an answer of the wrong shape");
    if (rep->type == REDIS_REPLY_ERROR)
        rlaas_conn_close(c); /* NOAUTH and the like: AUTH again next time */
    freeReplyObject(rep);
}

/* The address most sentinels name (-1: none named), and how many do. */
static int most_named(const answer_t *a, int n, int *votes)
{
    int best = -1, i, j;

    *votes = 0;
    for (i = 0; i < n; i++) {
        int v = 0;

        for (j = 0; j < n && a[i].ok; j++)
            v += a[j].ok && same(&a[i].f, &a[j].f);
        if (v > *votes) {
            *votes = v;
            best = i;
        }
    }
    return best;
}

/* The field of a HELLO 2 reply (key, value, key, value...), or NULL. */
static const char *hello_field(const redisReply *rep, const char *key)
{
    size_t i;

    for (i = 0; i + 1 < rep->elements; i += 2) {
        const redisReply *k = rep->element[i], *v = rep->element[i + 1];

        if (k->type == REDIS_REPLY_STRING && strcmp(k->str, key) == 0 &&
            v->type == REDIS_REPLY_STRING)
            return v->str;
    }
    return NULL;
}

/* 1 if rep says a master that is not a sentinel: HELLO's role and mode
 * (which any ACL user may ask), or ROLE's first element. */
static int says_master(const redisReply *rep, int hello, char *why)
{
    const char *role = NULL, *mode = "";

    if (rep->type == REDIS_REPLY_ARRAY && hello) {
        role = hello_field(rep, "role");
        mode = hello_field(rep, "mode");
        mode = mode != NULL ? mode : "";
    }
    else if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
             rep->element[0]->type == REDIS_REPLY_STRING) {
        role = rep->element[0]->str;
    }
    if (role != NULL && strcmp(role, "master") == 0 &&
        strcmp(mode, "sentinel") != 0)
        return 1;
    if (rep->type == REDIS_REPLY_ERROR)
        say(why, rep->str);
    else
        snprintf(why, RLAAS_DETAIL_MAX, "it says it is %s%s",
                 role != NULL ? role : "no master",
                 strcmp(mode, "sentinel") == 0 ? " (a sentinel)" : "");
    return 0;
}

/* Connects to the address the sentinels agree on as a data connection
 * would (TLS and its name, AUTH) and asks the server what it is. */
static int verify(rlaas_resolver_t *r, const found_t *f, char *why)
{
    const rlaas_sentinel_conf_t *sc = &r->sentinel;
    int64_t deadline = deadline_of(r);
    rlaas_conn_params_t p;
    rlaas_conn_t c = {NULL, NULL, 0};
    redisReply *rep;
    int ok = 0;

    memset(&p, 0, sizeof(p));
    p.addr = f->addr;
    p.port = f->port;
    p.username = sc->master_username;
    p.password = sc->master_password;
    p.client_name = sc->client_name;
    p.tls = sc->tls;
    p.server_name = sc->master_tls_name != NULL ? sc->master_tls_name : f->addr;
    if (rlaas_conn_open(&c, &p, deadline, why) != RLAAS_RERR_NONE)
        return 0;
    if ((rep = rlaas_conn_command(&c, deadline, why, "HELLO 2")) != NULL &&
        rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOAUTH", 6) != 0) {
        /* a Redis before 6 has no HELLO */
        freeReplyObject(rep);
        rep = rlaas_conn_command(&c, deadline, why, "ROLE");
        if (rep != NULL)
            ok = says_master(rep, 0, why);
    }
    else if (rep != NULL) {
        ok = says_master(rep, 1, why);
    }
    if (rep != NULL)
        freeReplyObject(rep);
    rlaas_conn_close(&c);
    return ok;
}

static void note(rlaas_resolver_t *r, rlaas_sentinel_note_e what,
                 const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    if (r->sentinel.note == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    r->sentinel.note(r->sentinel.baton, what, text);
}

/* "the master verified last, a:p" or "no master yet" */
static void kept(const rlaas_resolver_t *r, char *out, size_t size)
{
    if (r->found.addr[0] == '\0')
        snprintf(out, size, "no master is known yet");
    else
        snprintf(out, size, "%s:%d, verified before, stays the master",
                 r->found.addr, r->found.port);
}

static void note_disagree(rlaas_resolver_t *r, const answer_t *a, int votes)
{
    char list[768], keep[RLAAS_ADDR_MAX + 64];
    size_t at = 0;
    int i;

    list[0] = '\0';
    for (i = 0; i < r->sentinel.n && at < sizeof(list); i++) {
        int k = a[i].ok
                    ? snprintf(list + at, sizeof(list) - at,
                               "%s%.64s:%d names %s:%d", i ? "; " : "",
                               r->sentinel.hosts[i], r->sentinel.ports[i],
                               a[i].f.addr, a[i].f.port)
                    : snprintf(list + at, sizeof(list) - at, "%s%.64s:%d: %s",
                               i ? "; " : "", r->sentinel.hosts[i],
                               r->sentinel.ports[i], a[i].why);

        at += k > 0 ? (size_t)k : 0;
    }
    kept(r, keep, sizeof(keep));
    note(r, RLAAS_SENTINEL_DISAGREE,
         "no address for master %s has the agreement of %d of the %d "
         "sentinels (at most %d agree): %s; %s",
         r->sentinel.master, rlaas_sentinel_quorum(r->sentinel.n),
         r->sentinel.n, votes, list, keep);
}

/* Every sentinel asked; the address a majority names, checked. Only the
 * resolver's thread writes r->found: it reads it here without the lock. */
static int look_sentinel(rlaas_resolver_t *r, found_t *out)
{
    answer_t a[RLAAS_SENTINELS_ASKED_MAX];
    char why[RLAAS_DETAIL_MAX], keep[RLAAS_ADDR_MAX + 64];
    int i, best, votes;

    for (i = 0; i < r->sentinel.n; i++)
        ask(r, i, &a[i]);
    best = most_named(a, r->sentinel.n, &votes);
    if (best < 0 || votes < rlaas_sentinel_quorum(r->sentinel.n)) {
        note_disagree(r, a, votes);
        return 0;
    }
    *out = a[best].f;
    if (same(out, &r->found))
        return 1; /* checked when it was adopted */
    if (!verify(r, out, why)) {
        kept(r, keep, sizeof(keep));
        note(r, RLAAS_SENTINEL_UNVERIFIED,
             "%d of the %d sentinels name %s:%d the master %s, but it is "
             "not used: %s; %s",
             votes, r->sentinel.n, out->addr, out->port, r->sentinel.master,
             why, keep);
        return 0;
    }
    note(r, RLAAS_SENTINEL_MOVED,
         "the master %s is %s:%d (%d of the %d sentinels agree, and it says "
         "it is the master)",
         r->sentinel.master, out->addr, out->port, votes, r->sentinel.n);
    return 1;
}

/* ---- the thread ---- */

static void refresh(rlaas_resolver_t *r)
{
    found_t f;
    int ok;

    memset(&f, 0, sizeof(f));
    /* without the lock: DNS or a sentinel may take seconds */
    ok = r->look(r, &f);
    pthread_mutex_lock(&r->mu);
    /* else: keep the last good address */
    if (ok && (strcmp(f.addr, r->found.addr) != 0 || f.port != r->found.port)) {
        r->found = f;
        __atomic_add_fetch(&r->version, 1, __ATOMIC_RELEASE);
    }
    if (r->looks++ == 0 && r->has_thread)
        pthread_cond_broadcast(&r->looked);
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
    if (ok && pthread_cond_init(&r->looked, &attr) != 0) {
        pthread_cond_destroy(&r->cond);
        ok = 0;
    }
    pthread_condattr_destroy(&attr);
    if (!ok)
        return 0;
    if (pthread_create(&r->thread, NULL, run, r) != 0) {
        pthread_cond_destroy(&r->cond);
        pthread_cond_destroy(&r->looked);
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

/* The strings of the sentinels' settings, copied (or freed: copy 0). */
static int own_strings(rlaas_sentinel_conf_t *c, int copy)
{
    const char **f[] = {&c->master,          &c->username,
                        &c->password,        &c->tls_name,
                        &c->master_username, &c->master_password,
                        &c->master_tls_name, &c->client_name};
    size_t i;
    int ok = 1;

    for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        if (!copy)
            free((char *)*f[i]);
        else if (*f[i] != NULL && (*f[i] = strdup(*f[i])) == NULL)
            ok = 0;
    }
    return ok;
}

rlaas_resolver_t *rlaas_resolver_sentinel(const rlaas_sentinel_conf_t *c,
                                          int refresh_ms)
{
    rlaas_resolver_t *r;
    char **hosts;
    int *ports, i, ok;

    if (c->n < 1 || c->n > RLAAS_SENTINELS_ASKED_MAX || c->master == NULL ||
        (r = make()) == NULL)
        return NULL;
    r->sentinel = *c;
    ok = own_strings(&r->sentinel, 1);
    r->sentinel.hosts =
        (const char *const *)(hosts = calloc((size_t)c->n, sizeof(*hosts)));
    r->sentinel.ports = ports = calloc((size_t)c->n, sizeof(*ports));
    r->sconn = calloc((size_t)c->n, sizeof(*r->sconn));
    for (i = 0; hosts != NULL && ports != NULL && i < c->n; i++) {
        ok = ok && (hosts[i] = strdup(c->hosts[i])) != NULL;
        ports[i] = c->ports[i];
    }
    if (!ok || hosts == NULL || ports == NULL || r->sconn == NULL) {
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
        pthread_cond_destroy(&r->looked);
    }
    for (i = 0; r->sconn != NULL && i < r->sentinel.n; i++)
        rlaas_conn_close(&r->sconn[i]);
    free(r->sconn);
    for (i = 0; r->sentinel.hosts != NULL && i < r->sentinel.n; i++)
        free((char *)r->sentinel.hosts[i]);
    free((char **)r->sentinel.hosts);
    free((int *)r->sentinel.ports);
    own_strings(&r->sentinel, 0); /* all NULL for a host name */
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

int rlaas_resolver_wait_first(rlaas_resolver_t *r, int64_t deadline_us)
{
    struct timespec ts;
    int looked;

    if (!r->has_thread)
        return 0;
    rlaas_clock_timespec(deadline_us, &ts);
    pthread_mutex_lock(&r->mu);
    while (r->looks == 0 && !r->stop && rlaas_clock_left_us(deadline_us) > 0)
        if (pthread_cond_timedwait(&r->looked, &r->mu, &ts) == ETIMEDOUT)
            break;
    looked = r->looks > 0 && r->found.addr[0] != '\0';
    pthread_mutex_unlock(&r->mu);
    return looked;
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
