/* Concurrency limits in C (src/core/rlaas_conc.c): slots taken and given
 * back, their expiry and the clock rule, dry runs, first passes, the
 * holders that are gone, tokens; and a random model check (what is held is
 * exactly what was taken, not released and not expired, and never more
 * than N unless a dry run took it). The same calls are compared with
 * lua/concurrency.lua in t/lua/34-concurrency.t. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rlaas_conc.h"
#include "rlaas_local.h"

#define T0 1699920000000LL

static unsigned char state[RLAAS_CONC_STATE_MAX];
static size_t len;

/* holders 100..199 are alive unless listed dead */
static int dead[256];
static int probes;

static int alive(void *baton, int32_t pid, uint64_t start)
{
    (void)baton;
    probes++;
    return pid < 0 || pid >= 256 || !dead[pid] || start == 7;
}

static rlaas_conc_call_t call(int64_t n, int64_t t, int64_t now, uint64_t tok)
{
    rlaas_conc_call_t c;

    memset(&c, 0, sizeof(c));
    c.limit = n;
    c.timeout_ms = t;
    c.now_ms = now;
    c.token = tok;
    c.commit = 1;
    c.pid = 100;
    c.start = 1;
    return c;
}

/* ... whose holders are looked at when the record is full */
static rlaas_conc_call_t watched(int64_t n, int64_t t, int64_t now,
                                 uint64_t tok)
{
    rlaas_conc_call_t c = call(n, t, now, tok);

    c.alive = alive;
    return c;
}

/* A take that stores or leaves, as the table would apply it. */
static int take(const rlaas_conc_call_t *c, rlaas_verdict_t *v, int64_t *ttl)
{
    size_t l = len;
    int rc;

    *ttl = -5;
    rc = rlaas_conc_take(c, state, &l, ttl, v);
    if (rc == RLAAS_CONC_STORE)
        len = l;
    return rc;
}

static int give_back(uint64_t tok)
{
    size_t l = len;
    int64_t ttl = -5;
    int removed = -1, rc = rlaas_conc_release(tok, state, &l, &ttl, &removed);

    if (rc == RLAAS_CONC_STORE) {
        len = l;
        assert_true(ttl == -1 || (ttl == 0 && l == 0));
    }
    else {
        assert_int_equal(removed, 0);
    }
    return removed;
}

static void reset(void)
{
    memset(state, 0, sizeof(state));
    len = 0;
    memset(dead, 0, sizeof(dead));
    probes = 0;
}

static void verdict(const rlaas_verdict_t *v, int ok, int64_t rem,
                    int64_t reset_ms, int64_t retry)
{
    assert_int_equal(v->allowed, ok);
    assert_int_equal(v->remaining, rem);
    assert_int_equal(v->reset_ms, reset_ms);
    assert_int_equal(v->retry_ms, retry);
}

static void n_then_refused_then_released(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;
    uint64_t i;

    (void)st;
    reset();
    for (i = 1; i <= 3; i++) {
        c = call(3, 60000, T0 + (int64_t)i, i);
        assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
        verdict(&v, 1, 3 - (int64_t)i, i < 3 ? 0 : RLAAS_CONC_RETRY_MS, 0);
        assert_int_equal(ttl, 60000);
        assert_int_equal(rlaas_conc_held(state, len), (int)i);
    }
    c = call(3, 60000, T0 + 10, 4);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_LEAVE);
    verdict(&v, 0, 0, RLAAS_CONC_RETRY_MS, RLAAS_CONC_RETRY_MS);
    assert_int_equal(rlaas_conc_held(state, len), 3);
    /* the refused one never held a slot */
    assert_int_equal(give_back(4), 0);
    assert_int_equal(give_back(2), 1);
    assert_int_equal(give_back(2), 0); /* once only */
    c = call(3, 60000, T0 + 20, 5);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    verdict(&v, 1, 0, RLAAS_CONC_RETRY_MS, 0);
    /* the newest slot sets the time to live */
    assert_int_equal(ttl, 60000);
    assert_int_equal(give_back(1), 1);
    assert_int_equal(give_back(3), 1);
    assert_int_equal(give_back(5), 1);
    assert_int_equal(len, 0); /* no slot, no record */
}

static void slots_expire_after_the_timeout(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;

    (void)st;
    reset();
    c = call(1, 1000, T0, 1);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    c = call(1, 1000, T0 + 999, 2);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_LEAVE);
    assert_false(v.allowed);
    /* at T0 + T the slot is gone: taken at or before now - T */
    c = call(1, 1000, T0 + 1000, 2);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    verdict(&v, 1, 0, RLAAS_CONC_RETRY_MS, 0);
    assert_int_equal(rlaas_conc_held(state, len), 1);
    /* the late release of the expired one changes nothing */
    assert_int_equal(give_back(1), 0);
    assert_int_equal(rlaas_conc_held(state, len), 1);
    /* a shorter timeout ends older slots sooner */
    c = call(1, 300, T0 + 1300, 3);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    assert_true(v.allowed);
    assert_int_equal(ttl, 300);
}

/* The scripts' rule for a clock gone back: a slot stamped up to T ahead
 * is held, one stamped further ahead is none. */
static void clock_gone_back(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;

    (void)st;
    reset();
    c = call(1, 1000, T0 + 5000, 1);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    c = call(1, 1000, T0 + 4000, 2); /* 1000 back: held */
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_LEAVE);
    assert_false(v.allowed);
    c = call(2, 1000, T0 + 4000, 2);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    /* the newest slot, 1000 ahead, sets the time to live */
    assert_int_equal(ttl, 2000);
    c = call(1, 1000, T0 + 3999, 3); /* 5000 is over T ahead: none */
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    assert_false(v.allowed); /* the one taken at 4000 still holds */
    assert_int_equal(rlaas_conc_held(state, len), 1);
}

static void dry_run_takes_whatever(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;
    uint64_t i;

    (void)st;
    reset();
    for (i = 1; i <= RLAAS_CONC_MAX + 3; i++) {
        c = call(2, 60000, T0, i);
        c.mode = 2;
        take(&c, &v, &ttl);
        assert_int_equal(v.allowed, i <= 2);
    }
    /* known up to RLAAS_CONC_MAX, no further */
    assert_int_equal(rlaas_conc_held(state, len), RLAAS_CONC_MAX);
    assert_int_equal(give_back(RLAAS_CONC_MAX + 1), 0);
    assert_int_equal(give_back(RLAAS_CONC_MAX), 1);
}

/* A multi call's first pass decides, takes nothing, but prunes. */
static void first_pass_takes_nothing(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;

    (void)st;
    reset();
    c = call(2, 1000, T0, 1);
    take(&c, &v, &ttl);
    c = call(2, 1000, T0 + 10, 2);
    c.commit = 0;
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_LEAVE);
    verdict(&v, 1, 1, 0, 0);
    assert_int_equal(rlaas_conc_held(state, len), 1);
    c = call(2, 1000, T0 + 1000, 2);
    c.commit = 0;
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    assert_int_equal(len, 0); /* the expired one went: no record */
    verdict(&v, 1, 2, 0, 0);
}

/* Slots of processes that are gone are freed when the record is full,
 * once per RLAAS_CONC_PROBE_MS at most; the living keep theirs; a slot of
 * no known holder (pid 0) is kept. */
static void holders_gone(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;

    (void)st;
    reset();
    c = watched(3, 60000, T0, 1);
    c.pid = 101;
    take(&c, &v, &ttl);
    c = watched(3, 60000, T0, 2);
    c.pid = 102;
    take(&c, &v, &ttl);
    c = watched(3, 60000, T0, 3);
    c.pid = 0;
    take(&c, &v, &ttl);
    assert_int_equal(probes, 0); /* not full before: nobody looked */
    dead[101] = 1;
    c = watched(3, 60000, T0 + 1, 4);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    assert_true(v.allowed); /* 101's slot freed, this one taken */
    assert_int_equal(probes, 2);
    assert_int_equal(give_back(1), 0);
    dead[102] = 1;
    c = watched(3, 60000, T0 + 50, 5);
    /* looked at 1 ms ago: not again before RLAAS_CONC_PROBE_MS */
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_LEAVE);
    assert_false(v.allowed);
    assert_int_equal(probes, 2);
    c = watched(3, 60000, T0 + 1 + RLAAS_CONC_PROBE_MS, 5);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    assert_true(v.allowed);
    assert_int_equal(give_back(2), 0);
    /* a clock gone back past the last look: looked at again */
    c = watched(3, 60000, T0 + 2 + RLAAS_CONC_PROBE_MS, 6);
    take(&c, &v, &ttl);
    assert_false(v.allowed);
    dead[100] = 1; /* this test's default holder: slots 4, 5 */
    c = watched(3, 60000, T0 + 1, 6);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    assert_true(v.allowed);
    /* the slot of no known holder is kept */
    assert_int_equal(give_back(3), 1);
}

/* The holder is a pid and the time its process started: both are asked
 * about (rlaas_local_alive tells a reused pid by the start). */
static void holder_is_pid_and_start(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;

    (void)st;
    reset();
    c = watched(1, 60000, T0, 1);
    c.pid = 120;
    c.start = 7; /* alive() says alive for start 7 whatever */
    take(&c, &v, &ttl);
    dead[120] = 1;
    c = watched(1, 60000, T0 + 1000, 2);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE); /* looked */
    assert_false(v.allowed);
    assert_int_equal(probes, 1);
}

static void out_of_range(void **st)
{
    rlaas_conc_call_t c;
    rlaas_verdict_t v;
    int64_t ttl;

    (void)st;
    reset();
    c = call(0, 1000, T0, 1);
    assert_int_equal(take(&c, &v, &ttl), -1);
    c = call(RLAAS_CONC_MAX + 1, 1000, T0, 1);
    assert_int_equal(take(&c, &v, &ttl), -1);
    c = call(1, 0, T0, 1);
    assert_int_equal(take(&c, &v, &ttl), -1);
    c = call(1, RLAAS_CONC_TIMEOUT_MAX + 1, T0, 1);
    assert_int_equal(take(&c, &v, &ttl), -1);
    c = call(1, 1000, T0, 1);
    c.mode = 8;
    assert_int_equal(take(&c, &v, &ttl), -1);
    /* a state of another shape counts as none */
    memset(state, 0xab, 40);
    len = 40;
    c = call(1, 1000, T0, 1);
    assert_int_equal(take(&c, &v, &ttl), RLAAS_CONC_STORE);
    assert_true(v.allowed);
    assert_int_equal(rlaas_conc_held(state, len), 1);
}

static void tokens(void **st)
{
    char hex[RLAAS_CONC_TOKEN_LEN + 1];
    uint64_t t = 0;

    (void)st;
    rlaas_conc_token_hex(hex, 0x0123456789abcdefULL);
    assert_string_equal(hex, "0123456789abcdef");
    assert_true(rlaas_conc_token_parse(hex, 16, &t));
    assert_true(t == 0x0123456789abcdefULL);
    rlaas_conc_token_hex(hex, 0);
    assert_string_equal(hex, "0000000000000000");
    assert_false(rlaas_conc_token_parse("0123456789ABCDEF", 16, &t));
    assert_false(rlaas_conc_token_parse("0123456789abcde", 15, &t));
    assert_false(rlaas_conc_token_parse("0123456789abcdeg", 16, &t));
    assert_false(rlaas_conc_token_parse("0123456789abcdef0", 17, &t));
}

/* Random takes, releases and gaps against a plain model: a request is
 * allowed iff fewer than N slots are live (taken, not given back, not
 * older than T); a take drops the expired ones, a release gives back a
 * slot still there (expired or not). */
static void model(void **st)
{
    static int64_t taken_at[4096];
    static int held[4096]; /* still in the record */
    uint64_t rng = 88172645463325252ULL;
    int64_t now = T0, ttl;
    uint64_t next = 1;
    int step, k;

    (void)st;
    for (k = 0; k < 40; k++) {
        int64_t n = 1 + (int64_t)(k % 7), t = 50 + 37 * k;

        reset();
        memset(held, 0, sizeof(held));
        next = 1;
        for (step = 0; step < 300 && next < 4096; step++) {
            rlaas_conc_call_t c;
            rlaas_verdict_t v;
            int64_t live = 0;
            uint64_t i;

            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            now += (int64_t)(rng % 3 == 0 ? rng % (uint64_t)t : rng % 5);
            if (rng % 5 < 2 && next > 1) {
                i = 1 + (rng >> 8) % (next - 1);
                assert_int_equal(give_back(i), held[i]);
                held[i] = 0;
                continue;
            }
            for (i = 1; i < next; i++) {
                if (held[i] && taken_at[i] <= now - t)
                    held[i] = 0;
                live += held[i];
            }
            c = call(n, t, now, next);
            take(&c, &v, &ttl);
            assert_int_equal(v.allowed, live < n);
            if (v.allowed) {
                held[next] = 1;
                taken_at[next] = now;
                assert_int_equal(v.remaining, n - live - 1);
            }
            next++;
            for (i = 1, live = 0; i < next; i++)
                live += held[i];
            assert_int_equal(rlaas_conc_held(state, len), (int)live);
            assert_true(live <= n);
        }
    }
}

/* ---- the local engine, with real processes ---- */

/* A process is alive until it is gone: a zombie is gone, and so is
 * another process under the same pid (another start). */
static void local_alive_real_processes(void **st)
{
    int32_t me, kid;
    uint64_t start, kstart;
    pid_t pid;
    int status;
    int fds[2];

    (void)st;
    rlaas_local_self(&me, &start);
    assert_int_equal(me, (int32_t)getpid());
    assert_true(start > 0); /* /proc is there */
    assert_true(rlaas_local_alive(NULL, me, start));
    assert_false(rlaas_local_alive(NULL, me, start + 1)); /* pid reused */
    assert_true(rlaas_local_alive(NULL, me, 0));          /* start unknown */
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int32_t p;
        uint64_t s0;

        rlaas_local_self(&p, &s0); /* its own, not its parent's */
        if (write(fds[1], &s0, sizeof(s0)) != sizeof(s0) ||
            p != (int32_t)getpid())
            _exit(1);
        /* until killed; never a read of the pipe, which would race the
         * parent for its own bytes */
        for (;;)
            pause();
    }
    assert_int_equal(read(fds[0], &kstart, sizeof(kstart)), sizeof(kstart));
    kid = (int32_t)pid;
    assert_true(rlaas_local_alive(NULL, kid, kstart));
    kill(pid, SIGKILL);
    /* killed, not yet reaped: a zombie */
    while (rlaas_local_alive(NULL, kid, kstart))
        usleep(1000);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_false(rlaas_local_alive(NULL, kid, kstart));
    close(fds[0]);
    close(fds[1]);
}

static rlaas_local_call_t lconc(const char *key, int64_t n, uint64_t tok)
{
    rlaas_local_call_t c;

    memset(&c, 0, sizeof(c));
    c.strategy = RLAAS_CONCURRENCY;
    c.key = key;
    c.key_len = strlen(key);
    c.limit = n;
    c.window_ms = 3600000;
    c.token = tok;
    return c;
}

/* Children of one table take slots; one killed with its slots held: the
 * next request that finds the record full frees them, and not before
 * the holder is gone. */
static void local_slots_of_a_killed_process(void **st)
{
    size_t bytes = 1 << 20;
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    static const uint8_t seed[RLAAS_TABLE_SEED_LEN] = "conc-test-seed!";
    const char *key = "rlaas:rate_limit:php:{site}:conc";
    rlaas_local_t *t;
    rlaas_local_call_t c;
    rlaas_verdict_t v;
    int removed, status, fds[2];
    int64_t now = T0;
    pid_t pid;
    char b;

    (void)st;
    assert_true(mem != MAP_FAILED);
    t = rlaas_table_init(mem, bytes, seed);
    assert_non_null(t);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t i;

        for (i = 1; i <= 2; i++) {
            c = lconc(key, 3, i);
            if (rlaas_local_eval_n(t, &c, 1, now, &v, NULL, NULL) !=
                    RLAAS_LERR_NONE ||
                !v.allowed)
                _exit(1);
        }
        b = 'x';
        if (write(fds[1], &b, 1) != 1)
            _exit(1);
        pause(); /* in flight until killed */
        _exit(0);
    }
    assert_int_equal(read(fds[0], &b, 1), 1);
    c = lconc(key, 3, 3);
    assert_int_equal(rlaas_local_eval_n(t, &c, 1, now + 1, &v, NULL, NULL),
                     RLAAS_LERR_NONE);
    assert_true(v.allowed);
    assert_int_equal(v.remaining, 0);
    /* full, the holder alive: refused */
    c = lconc(key, 3, 4);
    assert_int_equal(rlaas_local_eval_n(t, &c, 1, now + 2, &v, NULL, NULL),
                     RLAAS_LERR_NONE);
    assert_false(v.allowed);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* within a probe interval of the last look: still refused */
    assert_int_equal(rlaas_local_eval_n(t, &c, 1, now + 3, &v, NULL, NULL),
                     RLAAS_LERR_NONE);
    assert_false(v.allowed);
    /* then its two slots are freed: this one and one more get in */
    now += 2 + RLAAS_CONC_PROBE_MS;
    assert_int_equal(rlaas_local_eval_n(t, &c, 1, now, &v, NULL, NULL),
                     RLAAS_LERR_NONE);
    assert_true(v.allowed);
    assert_int_equal(v.remaining, 1);
    /* the killed process' slots are gone; ours are given back once */
    c = lconc(key, 3, 1);
    assert_int_equal(rlaas_local_release_n(t, &c, 1, now, &removed, NULL, NULL),
                     RLAAS_LERR_NONE);
    assert_int_equal(removed, 0);
    c = lconc(key, 3, 3);
    assert_int_equal(rlaas_local_release_n(t, &c, 1, now, &removed, NULL, NULL),
                     RLAAS_LERR_NONE);
    assert_int_equal(removed, 1);
    assert_int_equal(rlaas_local_release_n(t, &c, 1, now, &removed, NULL, NULL),
                     RLAAS_LERR_NONE);
    assert_int_equal(removed, 0);
    /* a release is for a concurrency limit's record only */
    c.strategy = RLAAS_STRATEGY_FIXED;
    assert_int_equal(rlaas_local_release_n(t, &c, 1, now, &removed, NULL, NULL),
                     RLAAS_LERR_CALL);
    c = lconc("rlaas:rate_limit:php:{site}", 3, 3);
    assert_int_equal(rlaas_local_eval_n(t, &c, 1, now, &v, NULL, NULL),
                     RLAAS_LERR_CALL);
    close(fds[0]);
    close(fds[1]);
    munmap(mem, bytes);
}

/* Several processes against N = 10, each taking and giving back slots
 * as fast as it can: never more than 10 held at once. */
static void local_exact_across_processes(void **st)
{
    size_t bytes = 1 << 20;
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int *inflight = mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    static const uint8_t seed[RLAAS_TABLE_SEED_LEN] = "conc-test-seed2";
    const char *key = "rlaas:rate_limit:exact:conc";
    rlaas_local_t *t;
    pid_t pid[8];
    int i, status;

    (void)st;
    assert_true(mem != MAP_FAILED && inflight != MAP_FAILED);
    t = rlaas_table_init(mem, bytes, seed);
    inflight[0] = inflight[1] = 0;
    for (i = 0; i < 8; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            uint64_t tok = (uint64_t)(i + 1) << 32;
            int k, bad = 0;

            for (k = 0; k < 3000; k++) {
                rlaas_local_call_t c = lconc(key, 10, ++tok);
                rlaas_verdict_t v;
                int removed, now_in;

                if (rlaas_local_eval_n(t, &c, 1, T0, &v, NULL, NULL) !=
                    RLAAS_LERR_NONE)
                    _exit(2);
                if (!v.allowed)
                    continue;
                now_in = __atomic_add_fetch(&inflight[0], 1, __ATOMIC_SEQ_CST);
                if (now_in > 10)
                    bad = 1;
                if (now_in > __atomic_load_n(&inflight[1], __ATOMIC_SEQ_CST))
                    __atomic_store_n(&inflight[1], now_in, __ATOMIC_SEQ_CST);
                __atomic_sub_fetch(&inflight[0], 1, __ATOMIC_SEQ_CST);
                if (rlaas_local_release_n(t, &c, 1, T0, &removed, NULL, NULL) !=
                        RLAAS_LERR_NONE ||
                    removed != 1)
                    _exit(3);
            }
            _exit(bad);
        }
    }
    for (i = 0; i < 8; i++) {
        assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_true(inflight[1] >= 1 && inflight[1] <= 10);
    munmap(mem, bytes);
    munmap(inflight, 2 * sizeof(int));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(n_then_refused_then_released),
        cmocka_unit_test(slots_expire_after_the_timeout),
        cmocka_unit_test(clock_gone_back),
        cmocka_unit_test(dry_run_takes_whatever),
        cmocka_unit_test(first_pass_takes_nothing),
        cmocka_unit_test(holders_gone),
        cmocka_unit_test(holder_is_pid_and_start),
        cmocka_unit_test(out_of_range),
        cmocka_unit_test(tokens),
        cmocka_unit_test(model),
        cmocka_unit_test(local_alive_real_processes),
        cmocka_unit_test(local_slots_of_a_killed_process),
        cmocka_unit_test(local_exact_across_processes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
