/* The console's tally (src/core/rlaas_tally.c): per-second and per-minute
 * counts that forget what is older than they keep; rows claimed per host
 * and name (one host's name never counts another's), kept by a restart,
 * freed with their identities when their host leaves the configuration,
 * the last row for what finds no room; and the most-denied list: bounded,
 * heavy hitters kept while one-off identities churn, stale entries
 * replaced first, an identity forgotten on request, ids cut to their
 * bound; the slots a row holds (taken less given back, never below 0,
 * from 0 again when the row is claimed for another name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rlaas_tally.h"

#define ROWS 4
#define T0   1700000000LL /* a minute's start: 1700000000 % 60 == 20 */

static rlaas_tally_t *fresh(void **mem)
{
    size_t n = rlaas_tally_bytes(ROWS);

    *mem = calloc(1, n);
    assert_non_null(*mem);
    return rlaas_tally_init(*mem, n, ROWS);
}

static void counts_last_minute(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    uint64_t a, d;
    int i;

    (void)state;
    for (i = 0; i < 5; i++)
        rlaas_tally_add(t, 0, 0, T0);
    rlaas_tally_add(t, 0, 1, T0);
    rlaas_tally_add(t, 0, 1, T0 + 30);
    rlaas_tally_add(t, 1, 1, T0 + 30);
    rlaas_tally_sum(t, 0, T0 + 30, 60, &a, &d);
    assert_int_equal(a, 5);
    assert_int_equal(d, 2);
    /* 60 s later the first second is out of the minute */
    rlaas_tally_sum(t, 0, T0 + 60, 60, &a, &d);
    assert_int_equal(a, 0);
    assert_int_equal(d, 1);
    /* a bucket reused 64 s later counts its new second only */
    rlaas_tally_add(t, 0, 0, T0 + 64);
    rlaas_tally_sum(t, 0, T0 + 64, 60, &a, &d);
    assert_int_equal(a, 1);
    assert_int_equal(d, 1);
    /* the clock going back: nothing counted into a newer bucket */
    rlaas_tally_add(t, 0, 1, T0);
    rlaas_tally_sum(t, 0, T0 + 64, 60, &a, &d);
    assert_int_equal(d, 1);
    /* out-of-range rows count as the last one ("other") */
    rlaas_tally_add(t, 99, 1, T0);
    rlaas_tally_add(t, -1, 1, T0);
    rlaas_tally_sum(t, ROWS - 1, T0, 60, &a, &d);
    assert_int_equal(d, 2);
    free(mem);
}

static void minutes_for_the_chart(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    uint32_t m[4];

    (void)state;
    rlaas_tally_add(t, 2, 1, T0 - 20);       /* minute M */
    rlaas_tally_add(t, 2, 1, T0 - 20 + 59);  /* still M */
    rlaas_tally_add(t, 2, 1, T0 - 20 + 120); /* M + 2 */
    rlaas_tally_add(t, 2, 0, T0 - 20 + 120); /* allowed: not charted */
    rlaas_tally_minutes(t, 2, T0 - 20 + 125, 4, m);
    assert_int_equal(m[0], 0);
    assert_int_equal(m[1], 2);
    assert_int_equal(m[2], 0);
    assert_int_equal(m[3], 1);
    /* 16 minutes on, minute M's bucket holds another minute */
    rlaas_tally_add(t, 2, 1, T0 - 20 + 16 * 60);
    rlaas_tally_minutes(t, 2, T0 - 20 + 16 * 60, 4, m);
    assert_int_equal(m[3], 1);
    assert_int_equal(m[0] + m[1] + m[2], 0);
    free(mem);
}

static void rows_per_host_and_name(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    uint64_t a, d;
    int api_a, api_b, web_a;

    (void)state;
    assert_string_equal(rlaas_tally_row_name(t, ROWS - 1), "other");
    assert_int_equal(rlaas_tally_row_host(t, ROWS - 1), 0);
    api_a = rlaas_tally_row(t, 0xa, "api");
    api_b = rlaas_tally_row(t, 0xb, "api");
    web_a = rlaas_tally_row(t, 0xa, "web");
    assert_true(api_a >= 0 && api_a < ROWS - 1);
    assert_true(api_b >= 0 && api_b < ROWS - 1 && api_b != api_a);
    assert_true(web_a >= 0 && web_a < ROWS - 1 && web_a != api_a &&
                web_a != api_b);
    assert_int_equal(rlaas_tally_row(t, 0xa, "api"), api_a);
    assert_true(rlaas_tally_row_is(t, api_a, 0xa, "api"));
    assert_false(rlaas_tally_row_is(t, api_a, 0xb, "api"));
    assert_false(rlaas_tally_row_is(t, api_a, 0xa, "web"));
    assert_false(rlaas_tally_row_is(t, ROWS + 5, 0xa, "api"));
    assert_int_equal(rlaas_tally_row_host(t, api_b), 0xb);
    assert_string_equal(rlaas_tally_row_name(t, web_a), "web");
    /* host b's decisions never land in host a's row of the same name */
    rlaas_tally_add(t, api_b, 1, T0);
    rlaas_tally_sum(t, api_a, T0, 60, &a, &d);
    assert_int_equal(d, 0);
    rlaas_tally_sum(t, api_b, T0, 60, &a, &d);
    assert_int_equal(d, 1);
    /* full: the last row; no host, no name: the last row too */
    assert_int_equal(rlaas_tally_row(t, 0xc, "api"), ROWS - 1);
    assert_int_equal(rlaas_tally_row(t, 0, "api"), ROWS - 1);
    assert_int_equal(rlaas_tally_row(t, 0xa, ""), ROWS - 1);
    /* the same layout found again (a graceful restart): rows and counts
     * kept */
    t = rlaas_tally_init(mem, rlaas_tally_bytes(ROWS), ROWS);
    assert_int_equal(rlaas_tally_row(t, 0xb, "api"), api_b);
    rlaas_tally_sum(t, api_b, T0, 60, &a, &d);
    assert_int_equal(d, 1);
    /* another number of rows: laid out afresh; too small: none */
    assert_null(rlaas_tally_init(mem, 16, ROWS));
    assert_null(rlaas_tally_init(mem, rlaas_tally_bytes(1), 1));
    free(mem);
}

static void retain_frees_gone_hosts(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    rlaas_tally_top_t top[RLAAS_TALLY_TOP];
    uint64_t keep[] = {0xa}, a, d;
    int api_a, api_b, web_b, again, n;

    (void)state;
    api_a = rlaas_tally_row(t, 0xa, "api");
    api_b = rlaas_tally_row(t, 0xb, "api");
    web_b = rlaas_tally_row(t, 0xb, "web");
    rlaas_tally_add(t, api_b, 1, T0);
    rlaas_tally_top_add(t, api_b, "10.0.0.2", 8, T0);
    rlaas_tally_top_add(t, api_a, "10.0.0.1", 8, T0);
    rlaas_tally_retain(t, keep, 1);
    assert_true(rlaas_tally_row_used(t, api_a));
    assert_false(rlaas_tally_row_used(t, api_b));
    assert_false(rlaas_tally_row_is(t, api_b, 0xb, "api"));
    assert_false(rlaas_tally_row_used(t, web_b));
    n = rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP);
    assert_int_equal(n, 1);
    assert_string_equal(top[0].id, "10.0.0.1");
    /* a freed row is claimed again, from zero; rows past it are found */
    again = rlaas_tally_row(t, 0xc, "api");
    assert_true(again == api_b || again == web_b);
    rlaas_tally_sum(t, again, T0, 60, &a, &d);
    assert_int_equal(d, 0);
    assert_int_equal(rlaas_tally_row(t, 0xa, "api"), api_a);
    assert_int_equal(rlaas_tally_row(t, 0xc, "api"), again);
    free(mem);
}

static void slots_held(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    uint64_t keep[] = {0xa};
    int conc = rlaas_tally_row(t, 0xb, "api:concurrency"), again;

    (void)state;
    assert_int_equal(rlaas_tally_held(t, conc), 0);
    rlaas_tally_hold(t, conc, 1);
    rlaas_tally_hold(t, conc, 1);
    rlaas_tally_hold(t, conc, 1);
    rlaas_tally_hold(t, conc, 0);
    assert_int_equal(rlaas_tally_held(t, conc), 2);
    rlaas_tally_hold(t, conc, 0);
    rlaas_tally_hold(t, conc, 0);
    /* one given back more than taken (its row was claimed again between
     * the two): never below 0 */
    rlaas_tally_hold(t, conc, 0);
    assert_int_equal(rlaas_tally_held(t, conc), 0);
    rlaas_tally_hold(t, conc, 1);
    assert_int_equal(rlaas_tally_held(t, conc), 0);
    rlaas_tally_hold(t, conc, 1);
    assert_int_equal(rlaas_tally_held(t, conc), 1);
    /* its host gone, the row claimed again for another name: from 0 */
    rlaas_tally_retain(t, keep, 1);
    again = rlaas_tally_row(t, 0xc, "web:concurrency");
    assert_int_equal(again, conc);
    assert_int_equal(rlaas_tally_held(t, again), 0);
    /* out of range: the last row counts, nothing reads from nowhere */
    rlaas_tally_hold(t, -1, 1);
    assert_int_equal(rlaas_tally_held(t, ROWS - 1), 1);
    assert_int_equal(rlaas_tally_held(t, ROWS), 0);
    free(mem);
}

/* Several processes claiming the same names at once: every row they are
 * given is in use for their host and name (never another host's), and
 * none is sent to the last row while there is room. */
#define PROCS  4
#define CLAIMS 200
static void concurrent_claims(void **state)
{
    size_t n = rlaas_tally_bytes(64);
    size_t got_n = sizeof(int) * PROCS * CLAIMS;
    void *mem = mmap(NULL, n + got_n, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int *got = (int *)((char *)mem + n);
    char name[16];
    rlaas_tally_t *t;
    int p, i, rows[2] = {0, 0};

    (void)state;
    assert_true(mem != MAP_FAILED);
    memset(mem, 0, n + got_n);
    t = rlaas_tally_init(mem, n, 64);
    for (p = 0; p < PROCS; p++) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
            for (i = 0; i < CLAIMS; i++) {
                snprintf(name, sizeof(name), "z%d", i % 10);
                got[p * CLAIMS + i] =
                    rlaas_tally_row(t, 1 + (uint64_t)(i % 2), name);
            }
            _exit(0);
        }
    }
    for (p = 0; p < PROCS; p++)
        wait(NULL);
    for (p = 0; p < PROCS; p++) {
        for (i = 0; i < CLAIMS; i++) {
            int k = got[p * CLAIMS + i];

            snprintf(name, sizeof(name), "z%d", i % 10);
            assert_true(k >= 0 && k < 63);
            assert_true(rlaas_tally_row_used(t, k));
            assert_int_equal(rlaas_tally_row_host(t, k), 1 + (uint64_t)(i % 2));
            assert_string_equal(rlaas_tally_row_name(t, k), name);
        }
    }
    for (i = 0; i < 63; i++)
        if (rlaas_tally_row_used(t, i))
            rows[rlaas_tally_row_host(t, i) - 1]++;
    /* five names per host; a race may give a name a second row */
    assert_true(rows[0] >= 5 && rows[0] <= 5 * PROCS);
    assert_true(rows[1] >= 5 && rows[1] <= 5 * PROCS);
    munmap(mem, n + got_n);
}

static void top_keeps_heavy_hitters(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    rlaas_tally_top_t top[RLAAS_TALLY_TOP];
    char id[32];
    int i, n;

    (void)state;
    /* two attackers among 500 one-off identities, in every row */
    for (i = 0; i < 500; i++) {
        rlaas_tally_top_add(t, 0, "key=~attacker", 13, T0);
        if (i % 2 == 0)
            rlaas_tally_top_add(t, 1, "10.0.0.9", 8, T0);
        snprintf(id, sizeof(id), "user-%d", i);
        rlaas_tally_top_add(t, 0, id, strlen(id), T0);
    }
    n = rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP);
    assert_int_equal(n, RLAAS_TALLY_TOP); /* bounded */
    assert_string_equal(top[0].id, "key=~attacker");
    assert_int_equal(top[0].row, 0);
    assert_int_equal(top[0].count, 500);
    assert_int_equal(top[0].error, 0);
    assert_string_equal(top[1].id, "10.0.0.9");
    assert_int_equal(top[1].row, 1);
    assert_int_equal(top[1].count, 250);
    /* one identity in two rows is two entries */
    rlaas_tally_top_add(t, 1, "key=~attacker", 13, T0);
    n = rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP);
    for (i = 0; i < n; i++)
        if (top[i].row == 1 && strcmp(top[i].id, "key=~attacker") == 0)
            break;
    assert_true(i < n);
    free(mem);
}

/* Denials of one identity from several processes at once, as a burst's
 * refusals arrive: each waits its turn for the list rather than going
 * uncounted. Before the wait, about half were lost (38,800 of 80,000
 * counted); the margin is for a holder descheduled longer than a denial
 * waits, on a busy machine. */
#define HAMMER_PROCS 4
#define HAMMER_ADDS  20000
static void top_counts_a_burst(void **state)
{
    size_t n = rlaas_tally_bytes(ROWS);
    void *mem = mmap(NULL, n, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    rlaas_tally_top_t top[RLAAS_TALLY_TOP];
    rlaas_tally_t *t;
    uint32_t want = HAMMER_PROCS * HAMMER_ADDS;
    int p, i;

    (void)state;
    assert_true(mem != MAP_FAILED);
    memset(mem, 0, n);
    t = rlaas_tally_init(mem, n, ROWS);
    for (p = 0; p < HAMMER_PROCS; p++) {
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
            for (i = 0; i < HAMMER_ADDS; i++)
                rlaas_tally_top_add(t, 0, "10.0.0.7", 8, T0);
            _exit(0);
        }
    }
    for (p = 0; p < HAMMER_PROCS; p++)
        wait(NULL);
    assert_int_equal(rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP), 1);
    assert_int_equal(top[0].error, 0);
    printf("# %u of %u denials counted\n", top[0].count, want);
    assert_true(top[0].count <= want && top[0].count >= want - want / 1000);
    munmap(mem, n);
}

static void top_stale_and_forget(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    rlaas_tally_top_t top[RLAAS_TALLY_TOP];
    char id[32], longid[300];
    int i, n;

    (void)state;
    for (i = 0; i < RLAAS_TALLY_TOP; i++) {
        snprintf(id, sizeof(id), "old-%d", i);
        rlaas_tally_top_add(t, 0, id, strlen(id), T0);
        rlaas_tally_top_add(t, 0, id, strlen(id), T0);
    }
    /* a minute later the old ones are stale: a newcomer takes a slot
     * with a count of its own, no inherited error */
    rlaas_tally_top_add(t, 0, "new", 3, T0 + 61);
    n = rlaas_tally_top(t, T0 + 61, 60, top, RLAAS_TALLY_TOP);
    assert_int_equal(n, 1);
    assert_string_equal(top[0].id, "new");
    assert_int_equal(top[0].count, 1);
    assert_int_equal(top[0].error, 0);
    assert_int_equal(rlaas_tally_top_forget(t, 0, "new", 3), 1);
    assert_int_equal(rlaas_tally_top_forget(t, 0, "new", 3), 0);
    assert_int_equal(rlaas_tally_top(t, T0 + 61, 60, top, RLAAS_TALLY_TOP), 0);
    /* a long identity is kept cut to its bound, and found again so */
    memset(longid, 'a', sizeof(longid));
    rlaas_tally_top_add(t, 2, longid, sizeof(longid), T0 + 61);
    rlaas_tally_top_add(t, 2, longid, sizeof(longid), T0 + 61);
    n = rlaas_tally_top(t, T0 + 61, 60, top, RLAAS_TALLY_TOP);
    assert_int_equal(n, 1);
    assert_int_equal(strlen(top[0].id), RLAAS_TALLY_ID_MAX);
    assert_int_equal(top[0].count, 2);
    free(mem);
}

/* One name claimed twice at the same instant (the first request of a
 * burst in two children): an identity whose refusals landed in both rows
 * is listed once with both counted, and forgotten from both; another
 * host's row of the same name stays apart. Fails if the reader lists
 * each row's slot on its own. */
static void top_adds_up_twin_rows(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    rlaas_tally_top_t top[RLAAS_TALLY_TOP];
    int a, b, other, n;

    (void)state;
    a = rlaas_tally_row(t, 0xa, "con:concurrency");
    rlaas_tally_set_claiming(t, a, 1); /* another child is still at it */
    b = rlaas_tally_row(t, 0xa, "con:concurrency");
    rlaas_tally_set_claiming(t, a, 0);
    assert_int_not_equal(a, b);
    assert_true(rlaas_tally_row_is(t, b, 0xa, "con:concurrency"));
    other = rlaas_tally_row(t, 0xb, "con:concurrency");
    rlaas_tally_top_add(t, a, "10.0.0.1", 8, T0);
    rlaas_tally_top_add(t, b, "10.0.0.1", 8, T0 + 1);
    rlaas_tally_top_add(t, other, "10.0.0.1", 8, T0);
    n = rlaas_tally_top(t, T0 + 1, 60, top, RLAAS_TALLY_TOP);
    assert_int_equal(n, 2);
    assert_int_equal(top[0].count, 2);
    assert_int_equal(top[0].error, 0);
    assert_int_equal(top[0].last_s, T0 + 1);
    assert_true(top[0].row == a || top[0].row == b);
    assert_int_equal(top[1].row, other);
    assert_int_equal(top[1].count, 1);
    assert_int_equal(rlaas_tally_top_forget(t, b, "10.0.0.1", 8), 1);
    n = rlaas_tally_top(t, T0 + 1, 60, top, RLAAS_TALLY_TOP);
    assert_int_equal(n, 1);
    assert_int_equal(top[0].row, other);
    free(mem);
}

/* A child killed while it held the top list's lock: the next reader, or
 * denial, takes the lock over, so the list is not frozen until a full
 * restart; a live holder's lock is never taken. */
static void lock_of_a_dead_holder(void **state)
{
    void *mem;
    rlaas_tally_t *t = fresh(&mem);
    rlaas_tally_top_t top[RLAAS_TALLY_TOP];
    pid_t dead = fork();

    (void)state;
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    rlaas_tally_top_add(t, 0, "before", 6, T0);
    rlaas_tally_set_holder(t, (uint32_t)getppid()); /* alive */
    assert_int_equal(rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP), 0);
    rlaas_tally_set_holder(t, (uint32_t)dead);
    assert_int_equal(rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP), 1);
    assert_string_equal(top[0].id, "before");
    rlaas_tally_top_add(t, 0, "after", 5, T0); /* released by the reader */
    assert_int_equal(rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP), 2);
    /* a denial takes it over as well */
    rlaas_tally_set_holder(t, (uint32_t)dead);
    rlaas_tally_top_add(t, 0, "while", 5, T0);
    assert_int_equal(rlaas_tally_top(t, T0, 60, top, RLAAS_TALLY_TOP), 3);
    free(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_last_minute),
        cmocka_unit_test(minutes_for_the_chart),
        cmocka_unit_test(rows_per_host_and_name),
        cmocka_unit_test(retain_frees_gone_hosts),
        cmocka_unit_test(slots_held),
        cmocka_unit_test(concurrent_claims),
        cmocka_unit_test(top_keeps_heavy_hitters),
        cmocka_unit_test(top_counts_a_burst),
        cmocka_unit_test(top_stale_and_forget),
        cmocka_unit_test(top_adds_up_twin_rows),
        cmocka_unit_test(lock_of_a_dead_holder),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
