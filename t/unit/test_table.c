/* The local engine's table: eviction of the least recently used, in
 * order of how much records still limit, never a live ban nor another
 * zone's state that limits; time going back and far forward, many threads
 * and processes on one record, a full table, a process dying with a
 * stripe's lock held anywhere in a change (the stripe repaired, counts
 * kept), reattaching after a restart. Built with RLAAS_TABLE_TESTING (the
 * hook inside a change). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rlaas_local.h"
#include "rlaas_table.h"

static const uint8_t seed[RLAAS_TABLE_SEED_LEN] = "0123456789abcde";

#define WAIT_US 2000000 /* generous: the machine may be busy */
#define T0      1699920000000LL

/* Shared anonymous memory, as httpd's children get it; its contents are
 * garbage to start with, which the table must not mind. */
static void *shared(size_t bytes)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    assert_true(m != MAP_FAILED);
    memset(m, 0xab, bytes);
    return m;
}

/* ---- a counter record: the update the tests make ---- */

typedef struct {
    int64_t ttl;    /* what the update sets */
    int64_t seen;   /* the value before it: 0 for none */
    int64_t vlen;   /* the value's length to write (>= 8) */
    int die;        /* _exit inside the update, lock held, nothing changed */
    int hold_fd;    /* >= 0: say so on this pipe, then sleep */
    int64_t refuse; /* it refuses its identity this long (ms) */
    int ban;        /* a ban's record */
    int cache;      /* any zone may take it */
} counter_t;

static int count_fn(void *baton, void *val, size_t *len,
                    rlaas_table_life_t *life)
{
    counter_t *c = baton;
    int64_t n = 0;

    if (*len >= sizeof(n))
        memcpy(&n, val, sizeof(n));
    c->seen = n;
    if (c->die)
        _exit(0);
    if (c->hold_fd >= 0) {
        if (write(c->hold_fd, "x", 1) != 1)
            _exit(1);
        sleep(30);
    }
    n++;
    /* a length over the maximum is said, not written: the buffer holds
     * the maximum */
    memset(val, 0,
           c->vlen < RLAAS_TABLE_VALUE_MAX ? (size_t)c->vlen
                                           : RLAAS_TABLE_VALUE_MAX);
    memcpy(val, &n, sizeof(n));
    *len = (size_t)c->vlen;
    life->ttl_ms = c->ttl;
    life->refuse_ms = c->refuse;
    life->ban = c->ban;
    life->cache = c->cache;
    return 0;
}

static counter_t counter(int64_t ttl)
{
    counter_t c = {ttl, 0, 8, 0, -1, 0, 0, 0};

    return c;
}

/* The counter of key before one more increment at time now. */
static int64_t bump(rlaas_table_t *t, const char *key, int64_t now,
                    rlaas_table_report_t *rep)
{
    counter_t c = counter(60000);

    assert_int_equal(rlaas_table_update(t, key, strlen(key), now, WAIT_US,
                                        count_fn, &c, rep),
                     RLAAS_TABLE_OK);
    return c.seen;
}

static rlaas_table_t *small_table(void **mem, size_t *bytes)
{
    rlaas_table_t *t;

    *bytes = rlaas_table_min_bytes();
    *mem = shared(*bytes);
    t = rlaas_table_init(*mem, *bytes, seed);
    assert_non_null(t);
    return t;
}

/* ---- eviction ---- */

static void evicts_least_recently_used(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_stats_t st;
    rlaas_table_report_t rep;
    unsigned evicted = 0;
    char key[32];
    int i, n;

    (void)state;
    rlaas_table_stats(t, &st);
    assert_int_equal(st.stripes, 1);
    /* a short key and 8 bytes: one chunk each */
    n = (int)st.chunks * 3;
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(bump(t, key, T0, &rep), 0);
        evicted += rep.evicted;
        /* "hot" is touched all along: never the least recently used */
        assert_int_equal(bump(t, "hot", T0, NULL), i);
    }
    rlaas_table_stats(t, &st);
    assert_true(evicted > 0);
    assert_int_equal(st.evictions, evicted);
    assert_true(st.used <= st.chunks);
    assert_int_equal(st.records + evicted, (uint64_t)n + 1);
    assert_int_equal(st.expired, 0);
    /* the newest keys are there, the oldest went first */
    snprintf(key, sizeof(key), "k%d", n - 1);
    assert_int_equal(bump(t, key, T0, NULL), 1);
    assert_int_equal(bump(t, "k0", T0, NULL), 0);
    munmap(mem, bytes);
}

/* An update that leaves the value as it is (a denied request) still uses
 * the record: refused again and again, it is never the one evicted. */
static int refuse_fn(void *baton, void *val, size_t *len,
                     rlaas_table_life_t *life)
{
    (void)baton;
    (void)val;
    (void)len;
    (void)life;
    return 1;
}

static void refused_update_keeps_record_recent(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_stats_t st;
    char key[32];
    int i, n;

    (void)state;
    rlaas_table_stats(t, &st);
    n = (int)st.chunks * 3;
    assert_int_equal(bump(t, "denied", T0, NULL), 0);
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        bump(t, key, T0, NULL);
        assert_int_equal(rlaas_table_update(t, "denied", 6, T0, WAIT_US,
                                            refuse_fn, NULL, NULL),
                         RLAAS_TABLE_REFUSED);
    }
    /* still there with its value: 1 before this increment */
    assert_int_equal(bump(t, "denied", T0, NULL), 1);
    munmap(mem, bytes);
}

static void expired_records_go_before_live_ones(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_stats_t st;
    char key[32];
    int i, n;

    (void)state;
    rlaas_table_stats(t, &st);
    n = (int)st.chunks;
    /* fill it with records living 10 ms, then fill it again later */
    for (i = 0; i < n; i++) {
        counter_t c = counter(10);

        snprintf(key, sizeof(key), "old%d", i);
        rlaas_table_update(t, key, strlen(key), T0, WAIT_US, count_fn, &c,
                           NULL);
    }
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "new%d", i);
        bump(t, key, T0 + 11, NULL);
    }
    rlaas_table_stats(t, &st);
    assert_int_equal(st.evictions, 0);
    assert_int_equal(st.expired, n);
    munmap(mem, bytes);
}

/* ---- time ---- */

static void expiry_to_the_millisecond(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    counter_t c = counter(100);

    (void)state;
    rlaas_table_update(t, "k", 1, T0, WAIT_US, count_fn, &c, NULL);
    c.ttl = RLAAS_TABLE_TTL_KEEP;
    rlaas_table_update(t, "k", 1, T0 + 100, WAIT_US, count_fn, &c, NULL);
    assert_int_equal(c.seen, 1); /* alive at its expiry (Redis: now > exp) */
    rlaas_table_update(t, "k", 1, T0 + 101, WAIT_US, count_fn, &c, NULL);
    assert_int_equal(c.seen, 0); /* gone a ms later */
    munmap(mem, bytes);
}

static void clock_stepping_back(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    counter_t c = counter(100);

    (void)state;
    rlaas_table_update(t, "a", 1, T0, WAIT_US, count_fn, &c, NULL);
    /* another record, an hour later: "a" expired meanwhile */
    bump(t, "b", T0 + 3600000, NULL);
    /* the clock steps back: "a" stays gone, as Redis would have expired it */
    assert_int_equal(bump(t, "a", T0 + 50, NULL), 0);
    /* written after the step, it lives its TTL at the clock of now */
    assert_int_equal(bump(t, "a", T0 + 51, NULL), 1);
    /* and "b" is kept */
    assert_int_equal(bump(t, "b", T0 + 52, NULL), 1);
    munmap(mem, bytes);
}

static void times_far_ahead(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    int64_t far = (int64_t)1 << 52; /* the strategies' bound on now */
    counter_t c = counter(60LL * 86400000);

    (void)state;
    rlaas_table_update(t, "k", 1, far, WAIT_US, count_fn, &c, NULL);
    assert_int_equal(bump(t, "k", far + 60LL * 86400000, NULL), 1);
    assert_int_equal(bump(t, "k", far + 400LL * 86400000, NULL), 0);
    munmap(mem, bytes);
}

/* ---- one record, many at once ---- */

typedef struct {
    rlaas_table_t *t;
    int n;
    int allowed;
} worker_t;

static void *worker(void *arg)
{
    worker_t *w = arg;
    rlaas_local_call_t call = {
        RLAAS_STRATEGY_FIXED, "rlaas:hot", 9, 5000, 3600000, 1, 0, 0, 0, NULL};
    int i;

    for (i = 0; i < w->n; i++) {
        rlaas_verdict_t v;

        if (rlaas_local_eval(w->t, &call, T0, &v, NULL) == RLAAS_LERR_NONE)
            w->allowed += v.allowed;
        bump(w->t, "counter", T0, NULL);
    }
    return NULL;
}

static void threads_hammering_one_slot(void **state)
{
    size_t bytes = 1 << 20;
    void *mem = shared(bytes);
    rlaas_table_t *t = rlaas_table_init(mem, bytes, seed);
    pthread_t th[16];
    worker_t w[16];
    int i, allowed = 0;

    (void)state;
    for (i = 0; i < 16; i++) {
        w[i].t = t;
        w[i].n = 1000;
        w[i].allowed = 0;
        assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]), 0);
    }
    for (i = 0; i < 16; i++) {
        pthread_join(th[i], NULL);
        allowed += w[i].allowed;
    }
    /* 16,000 hits on a limit of 5,000: exactly 5,000 allowed; every
     * increment of the plain counter kept */
    assert_int_equal(allowed, 5000);
    assert_int_equal(bump(t, "counter", T0, NULL), 16000);
    munmap(mem, bytes);
}

/* Two policies of one request from many threads, half of them naming
 * the policies the other way round: all or nothing under both stripes'
 * locks, never waiting crosswise. */
typedef struct {
    rlaas_table_t *t;
    int n;
    int reverse;
    int allowed;
} pair_worker_t;

static void *pair_worker(void *arg)
{
    pair_worker_t *w = arg;
    rlaas_local_call_t c[2] = {{RLAAS_STRATEGY_FIXED, "rlaas:per-minute:ip", 19,
                                100, 60000, 1, 0, 0, 0, NULL},
                               {RLAAS_STRATEGY_GCRA, "rlaas:per-hour:ip:gcra",
                                22, 150, 3600000, 1, 0, 0, 0, NULL}};
    int i;

    if (w->reverse) {
        rlaas_local_call_t x = c[0];

        c[0] = c[1];
        c[1] = x;
    }
    for (i = 0; i < w->n; i++) {
        rlaas_verdict_t v[2];

        assert_int_equal(rlaas_local_eval_n(w->t, c, 2, T0, v, NULL, NULL),
                         RLAAS_LERR_NONE);
        w->allowed += v[0].allowed && v[1].allowed;
    }
    return NULL;
}

static void two_policies_all_or_nothing(void **state)
{
    size_t bytes = 1 << 20;
    void *mem = shared(bytes);
    rlaas_table_t *t = rlaas_table_init(mem, bytes, seed);
    rlaas_local_call_t check = {RLAAS_STRATEGY_GCRA,
                                "rlaas:per-hour:ip:gcra",
                                22,
                                150,
                                3600000,
                                0,
                                0,
                                0,
                                0,
                                NULL};
    rlaas_local_call_t twice[2] = {check, check};
    pthread_t th[16];
    pair_worker_t w[16];
    rlaas_verdict_t v[2];
    int i, allowed = 0;

    (void)state;
    for (i = 0; i < 16; i++) {
        w[i] = (pair_worker_t){t, 50, i % 2, 0};
        assert_int_equal(pthread_create(&th[i], NULL, pair_worker, &w[i]), 0);
    }
    for (i = 0; i < 16; i++) {
        pthread_join(th[i], NULL);
        allowed += w[i].allowed;
    }
    /* 800 requests: the smaller quota, exactly; the other policy charged
     * for those alone (a check: 150 - 100 left) */
    assert_int_equal(allowed, 100);
    assert_int_equal(rlaas_local_eval(t, &check, T0, v, NULL), RLAAS_LERR_NONE);
    assert_int_equal(v[0].allowed, 1);
    assert_int_equal(v[0].remaining, 50);
    /* one record twice would be charged twice: refused */
    assert_int_equal(rlaas_local_eval_n(t, twice, 2, T0, v, NULL, NULL),
                     RLAAS_LERR_CALL);
    munmap(mem, bytes);
}

static void processes_hammering_one_slot(void **state)
{
    size_t bytes = 1 << 20;
    void *mem = shared(bytes);
    rlaas_table_t *t = rlaas_table_init(mem, bytes, seed);
    int *allowed = mmap(NULL, sizeof(int) * 4, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pid[4];
    int i, sum = 0;

    (void)state;
    for (i = 0; i < 4; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            worker_t w = {t, 2000, 0};

            worker(&w);
            allowed[i] = w.allowed;
            _exit(0);
        }
    }
    for (i = 0; i < 4; i++) {
        int st;

        waitpid(pid[i], &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        sum += allowed[i];
    }
    assert_int_equal(sum, 5000);
    assert_int_equal(bump(t, "counter", T0, NULL), 8000);
    munmap(allowed, sizeof(int) * 4);
    munmap(mem, bytes);
}

/* ---- limits ---- */

static void full_table_and_largest_record(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    static char key[RLAAS_TABLE_KEY_MAX + 2];
    counter_t c = counter(60000);
    rlaas_table_report_t rep;
    rlaas_table_stats_t st;
    int i;

    (void)state;
    for (i = 0; i < 500; i++) {
        char k[16];

        snprintf(k, sizeof(k), "k%d", i);
        bump(t, k, T0, NULL);
    }
    /* the largest record fits in the smallest table: everything else goes */
    memset(key, 'x', sizeof(key));
    c.vlen = RLAAS_TABLE_VALUE_MAX;
    assert_int_equal(rlaas_table_update(t, key, RLAAS_TABLE_KEY_MAX, T0,
                                        WAIT_US, count_fn, &c, &rep),
                     RLAAS_TABLE_OK);
    assert_true(rep.evicted > 0);
    rlaas_table_stats(t, &st);
    assert_int_equal(
        st.used * 64,
        rlaas_table_record_bytes(RLAAS_TABLE_KEY_MAX, RLAAS_TABLE_VALUE_MAX) +
            (st.records - 1) * 64);
    /* and it shrinks back */
    c.vlen = 8;
    rlaas_table_update(t, key, RLAAS_TABLE_KEY_MAX, T0, WAIT_US, count_fn, &c,
                       NULL);
    assert_int_equal(c.seen, 1);
    /* too long: refused, nothing changed */
    assert_int_equal(rlaas_table_update(t, key, RLAAS_TABLE_KEY_MAX + 1, T0,
                                        WAIT_US, count_fn, &c, NULL),
                     RLAAS_TABLE_TOO_BIG);
    c.vlen = RLAAS_TABLE_VALUE_MAX + 1;
    assert_int_equal(
        rlaas_table_update(t, "k", 1, T0, WAIT_US, count_fn, &c, NULL),
        RLAAS_TABLE_TOO_BIG);
    /* a table too small to hold the largest record is refused */
    assert_null(rlaas_table_init(mem, rlaas_table_min_bytes() - 1024, seed));
    munmap(mem, bytes);
}

/* ---- what is kept under pressure: classes and zones ---- */

/* Keys "<zone>:<name>": the zone is the part before the ':'. */
static size_t zone_len(const char *key)
{
    return (size_t)(strchr(key, ':') - key) + 1;
}

/* An update of key in its zone; c says how the record lives on. */
static rlaas_table_rc_e put(rlaas_table_t *t, const char *key, int64_t now,
                            counter_t *c, rlaas_table_report_t *rep)
{
    size_t klen = strlen(key), zlen = zone_len(key);
    rlaas_table_report_t dummy;
    rlaas_table_hold_t hd;
    rlaas_table_rc_e rc;

    if (rep == NULL)
        rep = &dummy;
    rc = rlaas_table_hold(t, &key, &klen, &zlen, 1, now, WAIT_US, &hd, rep);
    if (rc == RLAAS_TABLE_OK)
        rc = rlaas_table_update_held(&hd, 0, key, klen, count_fn, c, rep);
    rlaas_table_release(&hd);
    return rc;
}

/* A record of each kind: partly used, refusing its identity for an hour,
 * a ban of an hour, living ttl ms. */
static counter_t used(int64_t ttl)
{
    return counter(ttl);
}

static counter_t limiting(int64_t ttl)
{
    counter_t c = counter(ttl);

    c.refuse = 3600000;
    return c;
}

static counter_t banned(void)
{
    counter_t c = counter(7200000);

    c.refuse = 3600000;
    c.ban = 1;
    return c;
}

/* Records PREFIX000, PREFIX001, ... of c, each put at T0, until no chunk
 * is left; returns how many. */
static int fill(rlaas_table_t *t, const char *prefix, counter_t c)
{
    rlaas_table_stats_t st;
    char key[32];
    int n;

    for (n = 0;; n++) {
        counter_t k = c;

        rlaas_table_stats(t, &st);
        if (st.used == st.chunks)
            return n;
        snprintf(key, sizeof(key), "%s%03d", prefix, n);
        assert_int_equal(put(t, key, T0, &k, NULL), RLAAS_TABLE_OK);
    }
}

/* The value of key without changing it. */
static int seen_fn(void *baton, void *val, size_t *len,
                   rlaas_table_life_t *life)
{
    int64_t *n = baton;

    (void)life;
    *n = 0;
    if (*len >= sizeof(*n))
        memcpy(n, val, sizeof(*n));
    return 1;
}

static int64_t value_of(rlaas_table_t *t, const char *key, int64_t now)
{
    size_t klen = strlen(key), zlen = zone_len(key);
    rlaas_table_report_t rep;
    rlaas_table_hold_t hd;
    int64_t n = -1;

    assert_int_equal(
        rlaas_table_hold(t, &key, &klen, &zlen, 1, now, WAIT_US, &hd, &rep),
        RLAAS_TABLE_OK);
    rlaas_table_update_held(&hd, 0, key, klen, seen_fn, &n, &rep);
    rlaas_table_release(&hd);
    return n;
}

/* Fills a one-stripe table, oldest first: a live ban, a record refusing
 * its identity, a partly used one, one that expires at T0 + 10, then
 * partly used ones up to the brim; all of zone "z". Returns how many
 * partly used fillers. */
static int fill_classes(rlaas_table_t *t)
{
    rlaas_table_stats_t st;
    counter_t c;
    int i = 0;

    c = banned();
    assert_int_equal(put(t, "z:ban", T0, &c, NULL), RLAAS_TABLE_OK);
    c = limiting(7200000);
    assert_int_equal(put(t, "z:lim", T0, &c, NULL), RLAAS_TABLE_OK);
    c = used(7200000);
    assert_int_equal(put(t, "z:used", T0, &c, NULL), RLAAS_TABLE_OK);
    c = used(10);
    assert_int_equal(put(t, "z:idle", T0, &c, NULL), RLAAS_TABLE_OK);
    i = fill(t, "z:f", used(7200000));
    rlaas_table_stats(t, &st);
    assert_int_equal(st.evictions + st.expired, 0);
    return i;
}

static void evicts_by_class_then_least_recently_used(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_stats_t st;
    rlaas_table_report_t rep;
    counter_t c;
    char key[32];
    int fillers = fill_classes(t), i;

    (void)state;
    /* newcomers that refuse their identity, each a chunk: the expired
     * record goes first, though it is not the least recently used */
    c = limiting(7200000);
    assert_int_equal(put(t, "z:n0", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.expired, 1);
    assert_int_equal(st.evictions, 0);
    /* then the partly used, least recently used first: "z:used" before
     * the fillers, "z:f000" before "z:f001" */
    c = limiting(7200000);
    assert_int_equal(put(t, "z:n1", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 1);
    assert_int_equal(rep.limiting, 0);
    assert_int_equal(value_of(t, "z:used", T0 + 20), 0);
    assert_int_equal(value_of(t, "z:f001", T0 + 20), 1);
    c = limiting(7200000);
    assert_int_equal(put(t, "z:n2", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(value_of(t, "z:f000", T0 + 20), 0);
    /* every partly used one goes before the record refusing its identity,
     * though that one is older than all of them */
    for (i = 3; i < fillers + 2; i++) {
        snprintf(key, sizeof(key), "z:n%d", i);
        c = limiting(7200000);
        assert_int_equal(put(t, key, T0 + 20, &c, &rep), RLAAS_TABLE_OK);
        assert_int_equal(rep.limiting, 0);
    }
    rlaas_table_stats(t, &st);
    assert_int_equal(st.limiting, 0);
    /* none left: the least recently used refusing one, "z:lim"; never the
     * ban */
    c = limiting(7200000);
    assert_int_equal(put(t, "z:last", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 1);
    assert_int_equal(rep.limiting, 1);
    assert_int_equal(value_of(t, "z:lim", T0 + 20), 0);
    assert_int_equal(value_of(t, "z:ban", T0 + 20), 1);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.limiting, 1);
    assert_int_equal(st.full, 0);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

static void a_record_refusing_its_identity_is_used_once_it_allows(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_report_t rep;
    counter_t c;

    (void)state;
    fill_classes(t);
    /* an hour on, the ban is over and the refusing record allows again:
     * both partly used, the least recently used of those; the expired
     * record goes first */
    c = used(7200000);
    assert_int_equal(put(t, "z:n", T0 + 3600000 + 1000, &c, &rep),
                     RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 0);
    assert_int_equal(put(t, "z:m", T0 + 3600000 + 1000, &c, &rep),
                     RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 1);
    assert_int_equal(value_of(t, "z:ban", T0 + 3600000 + 1000), 0);
    assert_int_equal(put(t, "z:o", T0 + 3600000 + 1000, &c, &rep),
                     RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 1);
    assert_int_equal(rep.limiting, 0);
    assert_int_equal(value_of(t, "z:lim", T0 + 3600000 + 1000), 0);
    assert_int_equal(value_of(t, "z:used", T0 + 3600000 + 1000), 1);
    munmap(mem, bytes);
}

static void bans_are_never_evicted(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_report_t rep;
    rlaas_table_stats_t st;
    counter_t c = banned();
    int i;

    (void)state;
    i = fill(t, "z:b", c);
    /* a newcomer of the same zone finds no room: refused, nothing taken */
    c = used(60000);
    assert_int_equal(put(t, "z:new", T0, &c, &rep), RLAAS_TABLE_FULL);
    assert_int_equal(rep.full, 1);
    assert_int_equal(rep.evicted, 0);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.full, 1);
    assert_int_equal(st.records, (uint64_t)i);
    assert_int_equal(value_of(t, "z:b000", T0), 1);
    /* the bans over, their records take newcomers */
    assert_int_equal(put(t, "z:new", T0 + 3600000, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

static void one_zone_never_evicts_what_limits_in_another(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_report_t rep;
    rlaas_table_stats_t st;
    counter_t c;
    char key[32];
    int i;

    (void)state;
    /* zone a: a ban, an exhausted identity, a partly used one; the rest
     * of the stripe partly used by zone b, one record of it expiring */
    c = banned();
    put(t, "a:ban", T0, &c, NULL);
    c = limiting(7200000);
    put(t, "a:lim", T0, &c, NULL);
    c = used(7200000);
    put(t, "a:used", T0, &c, NULL);
    c = used(10);
    put(t, "b:idle", T0, &c, NULL);
    fill(t, "b:f", used(7200000));
    /* zone c's flood: it may take what limits no one (the expired record,
     * of zone b), then only its own records, each newcomer the one before */
    c = used(7200000);
    assert_int_equal(put(t, "c:0", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 0);
    for (i = 1; i < 100; i++) {
        snprintf(key, sizeof(key), "c:%d", i);
        assert_int_equal(put(t, key, T0 + 20, &c, &rep), RLAAS_TABLE_OK);
        assert_int_equal(rep.evicted, 1);
        snprintf(key, sizeof(key), "c:%d", i - 1);
        assert_int_equal(value_of(t, key, T0 + 20), 0);
    }
    /* zone d holds nothing it may take: refused, nothing evicted */
    assert_int_equal(put(t, "d:0", T0 + 20, &c, &rep), RLAAS_TABLE_FULL);
    assert_int_equal(rep.evicted, 0);
    assert_int_equal(rep.full, 1);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.full, 1);
    assert_int_equal(st.evictions, 99);
    assert_int_equal(value_of(t, "a:ban", T0 + 20), 1);
    assert_int_equal(value_of(t, "a:lim", T0 + 20), 1);
    assert_int_equal(value_of(t, "a:used", T0 + 20), 1);
    assert_int_equal(value_of(t, "b:f000", T0 + 20), 1);
    /* zone b's own newcomers take b's partly used records, least recently
     * used first, never a's */
    assert_int_equal(put(t, "b:new", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 1);
    assert_int_equal(value_of(t, "b:f001", T0 + 20), 0);
    assert_int_equal(value_of(t, "a:used", T0 + 20), 1);
    /* and a's newcomer takes a's partly used one before its exhausted
     * one; never its ban */
    assert_int_equal(put(t, "a:new", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(value_of(t, "a:used", T0 + 20), 0);
    assert_int_equal(value_of(t, "a:lim", T0 + 20), 1);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

/* Records that limit no one but save work (a lease's portion, marked
 * cache): any zone's newcomer takes them, after the expired ones and
 * before its own partly used ones; another zone's record that limits is
 * still never taken. */
static void any_zone_takes_a_cached_record(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_report_t rep;
    rlaas_table_stats_t st;
    counter_t c;
    char key[32];
    int n, i;

    (void)state;
    /* zone a limits (one record); zone l's leases fill the rest */
    c = limiting(7200000);
    put(t, "a:lim", T0, &c, NULL);
    c = used(7200000);
    c.cache = 1;
    n = fill(t, "l:", c);
    /* a flood of zone b: each newcomer takes a lease's room, the least
     * recently used first, then its own partly used records */
    c = used(7200000);
    for (i = 0; i < n + 20; i++) {
        snprintf(key, sizeof(key), "b:%03d", i);
        assert_int_equal(put(t, key, T0 + 20, &c, &rep), RLAAS_TABLE_OK);
        if (i < n) {
            snprintf(key, sizeof(key), "l:%03d", i);
            assert_int_equal(value_of(t, key, T0 + 20), 0);
        }
    }
    rlaas_table_stats(t, &st);
    assert_int_equal(st.full, 0);
    /* zone a's record still refuses its identity: never taken */
    assert_int_equal(value_of(t, "a:lim", T0 + 20), 1);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

/* A stripe whose walks found no cached record skips looking for one (it
 * notes that none may be there); a record marked cache written after
 * that is still the first a newcomer takes. */
static void a_cached_record_after_none_is_taken_first(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_report_t rep;
    counter_t c = used(7200000);
    char key[32];
    int i;

    (void)state;
    fill(t, "b:", c);
    /* newcomers of b take b's oldest: walks that find no cached record */
    for (i = 0; i < 3; i++) {
        snprintf(key, sizeof(key), "b:new%d", i);
        assert_int_equal(put(t, key, T0 + 10, &c, &rep), RLAAS_TABLE_OK);
        assert_int_equal(rep.evicted, 1);
    }
    /* a lease's portion takes b's oldest in turn, marked cache */
    c.cache = 1;
    assert_int_equal(put(t, "b:lease", T0 + 20, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(value_of(t, "b:003", T0 + 20), 0);
    /* the next newcomer takes it, not b's oldest partly used record */
    c.cache = 0;
    assert_int_equal(put(t, "b:next", T0 + 30, &c, &rep), RLAAS_TABLE_OK);
    assert_int_equal(rep.evicted, 1);
    assert_int_equal(value_of(t, "b:lease", T0 + 30), 0);
    assert_int_equal(value_of(t, "b:004", T0 + 30), 1);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

/* Two new identities of one request, room for one: neither is charged
 * (nothing half done), both start afresh once there is room. */
static void no_room_for_all_charges_none(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_local_call_t c[2] = {
        {RLAAS_STRATEGY_TOKEN, "q:tok:alice", 11, 10, 60000, 1, 0, 2, 0, NULL},
        {RLAAS_STRATEGY_FIXED, "q:fix:alice:", 12, 10, 60000, 1, 0, 2, 0,
         NULL}};
    rlaas_table_stats_t st;
    rlaas_verdict_t v[2];
    counter_t k;
    char key[32];
    int i;

    (void)state;
    /* another zone refusing its identities fills all but 2 chunks: one
     * record of a token bucket with its key takes 2 */
    k = limiting(120000);
    for (i = 0;; i++) {
        rlaas_table_stats(t, &st);
        if (st.chunks - st.used <= 2)
            break;
        snprintf(key, sizeof(key), "z:%03d", i);
        put(t, key, T0, &k, NULL);
    }
    assert_int_equal(st.chunks - st.used, 2);
    assert_int_equal(rlaas_local_eval_n(t, c, 2, T0, v, NULL, NULL),
                     RLAAS_LERR_FULL);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.chunks - st.used, 2);
    assert_int_equal(st.full, 1);
    /* alone, the one that fits is charged */
    assert_int_equal(rlaas_local_eval(t, &c[1], T0, v, NULL), RLAAS_LERR_NONE);
    assert_int_equal(v[0].remaining, 9);
    /* two minutes on, zone z expired: the token bucket was never charged */
    assert_int_equal(rlaas_local_eval(t, &c[0], T0 + 120001, v, NULL),
                     RLAAS_LERR_NONE);
    assert_int_equal(v[0].remaining, 9);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

/* Each strategy's state after a first charge fits the room made for it. */
static void first_charge_fits_its_room(void **state)
{
    size_t bytes = 1 << 20;
    void *mem = shared(bytes);
    rlaas_table_t *t = rlaas_table_init(mem, bytes, seed);
    rlaas_table_report_t rep;
    rlaas_verdict_t v;
    int st;

    (void)state;
    for (st = 0; st < RLAAS_STRATEGY_COUNT; st++) {
        char key[16];
        rlaas_local_call_t c = {
            (rlaas_strategy_e)st, key, 0, 10, 60000, 1, 0, 2, 0, NULL};

        c.key_len = (size_t)snprintf(key, sizeof(key), "f:%d:", st);

        assert_int_equal(rlaas_local_eval(t, &c, T0, &v, &rep),
                         RLAAS_LERR_NONE);
        assert_true(rep.vlen > 0);
        assert_true(rep.vlen <= rlaas_algo_first_len((rlaas_strategy_e)st));
    }
    munmap(mem, bytes);
}

/* ---- a process dying with a lock held ---- */

static rlaas_table_at_e die_where;

static void die_at(rlaas_table_at_e at)
{
    if (at == die_where)
        _exit(0);
}

/* A child updating key with fn, dying where die_where says (hook), or as
 * the update function says. */
static pid_t child_fn(rlaas_table_t *t, const char *key, rlaas_table_fn fn,
                      void *baton, int hook)
{
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        if (hook)
            rlaas_table_test_hook = die_at;
        rlaas_table_update(t, key, strlen(key), T0, WAIT_US, fn, baton, NULL);
        _exit(2); /* not reached */
    }
    return pid;
}

static pid_t child(rlaas_table_t *t, counter_t *c, int hook)
{
    return child_fn(t, "k", count_fn, c, hook);
}

static void dies_mid_change_stripe_repaired(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    counter_t c = counter(60000);
    rlaas_table_report_t rep;
    rlaas_table_stats_t st;
    int status;

    (void)state;
    bump(t, "k", T0, NULL);
    bump(t, "other", T0, NULL);
    die_where = RLAAS_TABLE_AT_CHANGE;
    waitpid(child(t, &c, 1), &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* the stripe is checked: nothing was half done, all is kept */
    assert_int_equal(bump(t, "other", T0, &rep), 1);
    assert_int_equal(rep.reset, 1);
    assert_int_equal(rep.lost, 0);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.resets, 1);
    assert_int_equal(bump(t, "k", T0, &rep), 1);
    assert_int_equal(rep.reset, 0);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

/* The case: a denied request's record moved to the front of the
 * list, the process dying between unlinking it and linking it again. The
 * repair puts it back: the stripe is whole, the identity's count goes on,
 * and it is still the last to be evicted when used all along. */
static void dies_between_the_steps_of_an_lru_move(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    rlaas_table_report_t rep;
    rlaas_table_stats_t st;
    char key[32];
    int status, i, n;

    (void)state;
    /* the stripe full, "k" the oldest */
    bump(t, "k", T0, NULL);
    for (i = 0;; i++) {
        rlaas_table_stats(t, &st);
        if (st.used == st.chunks)
            break;
        snprintf(key, sizeof(key), "o%d", i);
        bump(t, key, T0, NULL);
    }
    die_where = RLAAS_TABLE_AT_LRU;
    waitpid(child_fn(t, "k", refuse_fn, NULL, 1), &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(rlaas_table_verify(t), 0);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.resets, 1);
    assert_int_equal(st.lost, 0);
    assert_int_equal(st.records, (uint64_t)i + 1);
    /* counts go on: 1 before, 2 after */
    assert_int_equal(bump(t, "k", T0, &rep), 1);
    assert_int_equal(bump(t, "k", T0, &rep), 2);
    /* used all along among a flood of others: never evicted, counting on
     * (before the repair it was the one record left in the list, evicted
     * for every newcomer: its count stayed at 1) */
    n = (int)st.chunks * 3;
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "f%d", i);
        bump(t, key, T0, NULL);
        assert_int_equal(bump(t, "k", T0, NULL), 3 + i);
    }
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

/* Dying half way through writing a value: that record can't be trusted
 * and starts afresh (counted as lost); the others keep their counts. */
static void dies_writing_a_value_that_record_dropped(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    counter_t c = counter(60000);
    rlaas_table_report_t rep;
    int status;

    (void)state;
    bump(t, "k", T0, NULL);
    bump(t, "other", T0, NULL);
    die_where = RLAAS_TABLE_AT_VALUE;
    waitpid(child(t, &c, 1), &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(bump(t, "other", T0, &rep), 1);
    assert_int_equal(rep.reset, 1);
    assert_int_equal(rep.lost, 1);
    assert_int_equal(bump(t, "k", T0, NULL), 0);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

/* Dying while a record is being dropped to make room: the record is gone
 * (it was out of its bucket), the newcomer was never written, the others
 * stay. */
static void dies_dropping_a_record_stripe_whole(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    counter_t c = counter(60000);
    rlaas_table_stats_t st;
    char key[32];
    int status, i;

    (void)state;
    for (i = 0;; i++) {
        rlaas_table_stats(t, &st);
        if (st.used == st.chunks)
            break;
        snprintf(key, sizeof(key), "k%03d", i);
        bump(t, key, T0, NULL);
    }
    die_where = RLAAS_TABLE_AT_DROP;
    waitpid(child_fn(t, "newcomer", count_fn, &c, 1), &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(rlaas_table_verify(t), 0);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.records, (uint64_t)i - 1);
    assert_int_equal(st.lost, 0);
    /* the one dropped starts afresh, in the chunk it left */
    assert_int_equal(bump(t, "k000", T0, NULL), 0);
    assert_int_equal(bump(t, "k002", T0, NULL), 1);
    /* the newcomer was never written; it takes the least recently used */
    assert_int_equal(bump(t, "newcomer", T0, NULL), 0);
    assert_int_equal(bump(t, "k001", T0, NULL), 0);
    assert_int_equal(rlaas_table_verify(t), 0);
    munmap(mem, bytes);
}

static void dies_before_changing_state_kept(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    counter_t c = counter(60000);
    rlaas_table_report_t rep;
    int status;

    (void)state;
    bump(t, "k", T0, NULL);
    c.die = 1;
    waitpid(child(t, &c, 0), &status, 0);
    assert_int_equal(bump(t, "k", T0, &rep), 1);
    assert_int_equal(rep.reset, 1);
    assert_int_equal(rep.lost, 0);
    munmap(mem, bytes);
}

static void lock_held_waits_then_killed(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes);
    counter_t c = counter(60000);
    int fd[2], status;
    char x;
    pid_t pid;

    (void)state;
    bump(t, "k", T0, NULL);
    assert_int_equal(pipe(fd), 0);
    c.hold_fd = fd[1];
    pid = child(t, &c, 0);
    assert_int_equal(read(fd[0], &x, 1), 1); /* it holds the lock now */
    c = counter(60000);
    assert_int_equal(
        rlaas_table_update(t, "k", 1, T0, 50000, count_fn, &c, NULL),
        RLAAS_TABLE_BUSY);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    /* killed inside the update, before any change: nothing lost */
    assert_int_equal(bump(t, "k", T0, NULL), 1);
    close(fd[0]);
    close(fd[1]);
    munmap(mem, bytes);
}

/* ---- a graceful restart ---- */

static void reattached_with_its_records(void **state)
{
    void *mem;
    size_t bytes;
    rlaas_table_t *t = small_table(&mem, &bytes), *t2;
    int other = -1;

    (void)state;
    bump(t, "k", T0, NULL);
    t2 = rlaas_table_attach(mem, bytes, &other);
    assert_ptr_equal(t2, t);
    assert_int_equal(other, 0);
    assert_int_equal(bump(t2, "k", T0, NULL), 1);
    /* another size: not this table */
    assert_null(rlaas_table_attach(mem, bytes - 64, &other));
    assert_int_equal(other, 0);
    /* another layout (the version after the magic): said so */
    ((uint32_t *)mem)[1] ^= 0xff;
    assert_null(rlaas_table_attach(mem, bytes, &other));
    assert_int_equal(other, 1);
    memset(mem, 0, 64);
    assert_null(rlaas_table_attach(mem, bytes, &other));
    assert_int_equal(other, 0);
    munmap(mem, bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(evicts_least_recently_used),
        cmocka_unit_test(refused_update_keeps_record_recent),
        cmocka_unit_test(expired_records_go_before_live_ones),
        cmocka_unit_test(expiry_to_the_millisecond),
        cmocka_unit_test(clock_stepping_back),
        cmocka_unit_test(times_far_ahead),
        cmocka_unit_test(threads_hammering_one_slot),
        cmocka_unit_test(processes_hammering_one_slot),
        cmocka_unit_test(two_policies_all_or_nothing),
        cmocka_unit_test(full_table_and_largest_record),
        cmocka_unit_test(evicts_by_class_then_least_recently_used),
        cmocka_unit_test(a_record_refusing_its_identity_is_used_once_it_allows),
        cmocka_unit_test(bans_are_never_evicted),
        cmocka_unit_test(one_zone_never_evicts_what_limits_in_another),
        cmocka_unit_test(any_zone_takes_a_cached_record),
        cmocka_unit_test(a_cached_record_after_none_is_taken_first),
        cmocka_unit_test(no_room_for_all_charges_none),
        cmocka_unit_test(first_charge_fits_its_room),
        cmocka_unit_test(dies_mid_change_stripe_repaired),
        cmocka_unit_test(dies_between_the_steps_of_an_lru_move),
        cmocka_unit_test(dies_writing_a_value_that_record_dropped),
        cmocka_unit_test(dies_dropping_a_record_stripe_whole),
        cmocka_unit_test(dies_before_changing_state_kept),
        cmocka_unit_test(lock_held_waits_then_killed),
        cmocka_unit_test(reattached_with_its_records),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
