/* The local engine's table: eviction of the least recently used, time
 * going back and far forward, many threads and processes on one record, a
 * full table, a process dying with a stripe's lock held, reattaching after
 * a restart. Built with RLAAS_TABLE_TESTING (the hook inside a change). */
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
    int64_t ttl;  /* what the update sets */
    int64_t seen; /* the value before it: 0 for none */
    int64_t vlen; /* the value's length to write (>= 8) */
    int die;      /* _exit inside the update, lock held, nothing changed */
    int hold_fd;  /* >= 0: say so on this pipe, then sleep */
} counter_t;

static int count_fn(void *baton, void *val, size_t *len, int64_t *ttl_ms)
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
    memset(val, 0, (size_t)c->vlen);
    memcpy(val, &n, sizeof(n));
    *len = (size_t)c->vlen;
    *ttl_ms = c->ttl;
    return 0;
}

static counter_t counter(int64_t ttl)
{
    counter_t c = {ttl, 0, 8, 0, -1};

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
static int refuse_fn(void *baton, void *val, size_t *len, int64_t *ttl_ms)
{
    (void)baton;
    (void)val;
    (void)len;
    (void)ttl_ms;
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
        RLAAS_STRATEGY_FIXED, "rlaas:hot", 9, 5000, 3600000, 1, 0, NULL};
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
    rlaas_local_call_t c[2] = {
        {RLAAS_STRATEGY_FIXED, "rlaas:per-minute:ip", 19, 100, 60000, 1, 0,
         NULL},
        {RLAAS_STRATEGY_GCRA, "rlaas:per-hour:ip:gcra", 22, 150, 3600000, 1,
         0, NULL}};
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
    rlaas_local_call_t check = {
        RLAAS_STRATEGY_GCRA, "rlaas:per-hour:ip:gcra", 22, 150, 3600000, 0, 0,
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

/* ---- a process dying with a lock held ---- */

static void die_mid_change(void)
{
    _exit(0);
}

static pid_t child(rlaas_table_t *t, counter_t *c, int hook)
{
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        if (hook)
            rlaas_table_test_hook = die_mid_change;
        rlaas_table_update(t, "k", 1, T0, WAIT_US, count_fn, c, NULL);
        _exit(2); /* not reached */
    }
    return pid;
}

static void dies_mid_change_stripe_emptied(void **state)
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
    waitpid(child(t, &c, 1), &status, 0);
    /* its change may be half done: the stripe starts afresh */
    assert_int_equal(bump(t, "other", T0, &rep), 0);
    assert_int_equal(rep.reset, 1);
    rlaas_table_stats(t, &st);
    assert_int_equal(st.resets, 1);
    assert_int_equal(bump(t, "other", T0, &rep), 1);
    assert_int_equal(rep.reset, 0);
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
    assert_int_equal(rep.reset, 0);
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

    (void)state;
    bump(t, "k", T0, NULL);
    t2 = rlaas_table_attach(mem, bytes);
    assert_ptr_equal(t2, t);
    assert_int_equal(bump(t2, "k", T0, NULL), 1);
    /* another size: not this table */
    assert_null(rlaas_table_attach(mem, bytes - 64));
    memset(mem, 0, 64);
    assert_null(rlaas_table_attach(mem, bytes));
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
        cmocka_unit_test(dies_mid_change_stripe_emptied),
        cmocka_unit_test(dies_before_changing_state_kept),
        cmocka_unit_test(lock_held_waits_then_killed),
        cmocka_unit_test(reattached_with_its_records),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
