/* One connection against a fake Redis on a local socket: every wait is
 * bounded by one deadline however the peer dribbles its bytes, a peer
 * that closed an idle connection is found out before anything is
 * written, and an error or a lost connection closes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "rlaas_clock.h"
#include "rlaas_conn.h"
#include "rlaas_resolve.h"

/* ---- a fake server: accepts one connection, then follows a script ---- */

typedef struct {
    int lfd, port;
    int gap_us;        /* between the bytes of the reply */
    const char *reply; /* sent after the first command arrives */
    int close_after_accept;
} fake_t;

static void *serve(void *arg)
{
    fake_t *f = arg;
    int c = accept(f->lfd, NULL, NULL);
    char buf[512];
    size_t i;

    if (c < 0)
        return NULL;
    if (f->close_after_accept) {
        close(c);
        return NULL;
    }
    if (read(c, buf, sizeof(buf)) > 0 && f->reply != NULL) {
        for (i = 0; f->reply[i]; i++) {
            if (send(c, f->reply + i, 1, MSG_NOSIGNAL) != 1)
                break;
            usleep((useconds_t)f->gap_us);
        }
    }
    usleep(300000);
    close(c);
    return NULL;
}

static pthread_t start_fake(fake_t *f)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    pthread_t t;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(f->lfd, 4), 0);
    getsockname(f->lfd, (struct sockaddr *)&a, &al);
    f->port = ntohs(a.sin_port);
    pthread_create(&t, NULL, serve, f);
    return t;
}

static void open_to(fake_t *f, rlaas_conn_t *c)
{
    rlaas_conn_params_t p;
    char detail[RLAAS_DETAIL_MAX];

    memset(&p, 0, sizeof(p));
    p.addr = "127.0.0.1";
    p.port = f->port;
    assert_int_equal(rlaas_conn_open(c, &p, rlaas_clock_us() + 1000000, detail),
                     RLAAS_RERR_NONE);
}

/* A reply trickled one byte every 30 ms takes about 0.5 s in all; a
 * budget of 100 ms ends the wait at 100 ms, not at the last byte. */
static void trickle_bounded_by_the_deadline(void **state)
{
    fake_t f = {0, 0, 30000, "*4\r\n:1\r\n:4\r\n:5000\r\n:0\r\n", 0};
    pthread_t t = start_fake(&f);
    rlaas_conn_t c = {NULL, NULL, 0};
    char detail[RLAAS_DETAIL_MAX];
    void *rep;
    int64_t t0;

    (void)state;
    open_to(&f, &c);
    redisAppendCommand(c.ctx, "PING");
    t0 = rlaas_clock_us();
    assert_int_equal(rlaas_conn_flush(&c, t0 + 100000, detail),
                     RLAAS_RERR_NONE);
    assert_int_equal(rlaas_conn_read(&c, t0 + 100000, &rep, detail),
                     RLAAS_RERR_TIMEOUT);
    assert_true(rlaas_clock_us() - t0 < 180000);
    assert_null(c.ctx); /* a connection with a reply pending is dropped */
    pthread_join(t, NULL);
    close(f.lfd);
}

/* The same reply, with time enough: read whole. */
static void trickle_within_the_deadline(void **state)
{
    fake_t f = {0, 0, 2000, "+PONG\r\n", 0};
    pthread_t t = start_fake(&f);
    rlaas_conn_t c = {NULL, NULL, 0};
    char detail[RLAAS_DETAIL_MAX];
    redisReply *rep;

    (void)state;
    open_to(&f, &c);
    redisAppendCommand(c.ctx, "PING");
    assert_int_equal(rlaas_conn_flush(&c, rlaas_clock_us() + 1000000, detail),
                     RLAAS_RERR_NONE);
    assert_int_equal(
        rlaas_conn_read(&c, rlaas_clock_us() + 1000000, (void **)&rep, detail),
        RLAAS_RERR_NONE);
    assert_string_equal(rep->str, "PONG");
    freeReplyObject(rep);
    assert_false(rlaas_conn_is_stale(&c));
    rlaas_conn_close(&c);
    pthread_join(t, NULL);
    close(f.lfd);
}

/* An idle connection the peer closed is stale before anything is sent. */
static void closed_by_peer_is_stale(void **state)
{
    fake_t f = {0, 0, 0, NULL, 1};
    pthread_t t = start_fake(&f);
    rlaas_conn_t c = {NULL, NULL, 0};

    (void)state;
    open_to(&f, &c);
    pthread_join(t, NULL);
    usleep(20000);
    assert_true(rlaas_conn_is_stale(&c));
    rlaas_conn_close(&c);
    close(f.lfd);
}

/* Bytes nobody asked for: stale too (the replies would be misread). */
static void unasked_bytes_are_stale(void **state)
{
    fake_t f = {0, 0, 0, "+LATE\r\n", 0};
    pthread_t t = start_fake(&f);
    rlaas_conn_t c = {NULL, NULL, 0};
    char detail[RLAAS_DETAIL_MAX];

    (void)state;
    open_to(&f, &c);
    assert_false(rlaas_conn_is_stale(&c));
    /* the fake answers the first bytes it reads: send some, read nothing */
    redisAppendCommand(c.ctx, "PING");
    assert_int_equal(rlaas_conn_flush(&c, rlaas_clock_us() + 1000000, detail),
                     RLAAS_RERR_NONE);
    usleep(50000);
    assert_true(rlaas_conn_is_stale(&c));
    rlaas_conn_close(&c);
    pthread_join(t, NULL);
    close(f.lfd);
}

/* A closed port: a connect error, and no connection left behind. */
static void connect_refused(void **state)
{
    fake_t f = {0, 0, 0, NULL, 1};
    pthread_t t = start_fake(&f);
    int port = f.port;
    rlaas_conn_params_t p;
    rlaas_conn_t c = {NULL, NULL, 0};
    char detail[RLAAS_DETAIL_MAX];

    (void)state;
    /* free the port: connect to it once so the thread ends, then close */
    open_to(&f, &c);
    rlaas_conn_close(&c);
    pthread_join(t, NULL);
    close(f.lfd);
    memset(&p, 0, sizeof(p));
    p.addr = "127.0.0.1";
    p.port = port;
    assert_int_equal(rlaas_conn_open(&c, &p, rlaas_clock_us() + 500000, detail),
                     RLAAS_RERR_CONNECT);
    assert_null(c.ctx);
    assert_true(strlen(detail) > 0);
}

/* Numeric addresses need no lookup; a name is looked up when the
 * resolver is made, never when an address is asked for. */
static void resolver(void **state)
{
    rlaas_resolver_t *r = rlaas_resolver_create("127.0.0.1", 30);
    char a[RLAAS_ADDR_MAX];
    int i;

    (void)state;
    assert_non_null(r);
    assert_true(rlaas_resolver_get(r, a, sizeof(a), NULL));
    assert_string_equal(a, "127.0.0.1");
    rlaas_resolver_poke(r);
    rlaas_resolver_destroy(r);
    r = rlaas_resolver_create("::1", 30);
    assert_true(rlaas_resolver_get(r, a, sizeof(a), NULL));
    assert_string_equal(a, "::1");
    rlaas_resolver_destroy(r);
    r = rlaas_resolver_create("localhost", 1);
    assert_non_null(r);
    /* looked up by the resolver's thread, at once */
    for (i = 0; i < 200 && !rlaas_resolver_get(r, a, sizeof(a), NULL); i++)
        usleep(10000);
    assert_true(rlaas_resolver_get(r, a, sizeof(a), NULL));
    assert_true(strcmp(a, "127.0.0.1") == 0 || strcmp(a, "::1") == 0);
    rlaas_resolver_poke(r);
    rlaas_resolver_destroy(r); /* joins its thread */
}

int main(void)
{
    /* as in httpd: a write to a closed peer is an error, not a signal */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trickle_bounded_by_the_deadline),
        cmocka_unit_test(trickle_within_the_deadline),
        cmocka_unit_test(closed_by_peer_is_stale),
        cmocka_unit_test(unasked_bytes_are_stale),
        cmocka_unit_test(connect_refused),
        cmocka_unit_test(resolver),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
