/* Bans (src/core/rlaas_ban.c): length, escalation, the clock rule, the
 * record's life; the ban record's key (":ban", never another's key); and
 * the local engine refusing a banned identity without touching its
 * counters, one identity's ban never another's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_ban.h"
#include "rlaas_keybuild.h"
#include "rlaas_local.h"

#define T0 1699920000000LL

static void conf_bounds(void **state)
{
    rlaas_ban_conf_t b = {5000, 40000, 3};

    (void)state;
    assert_true(rlaas_ban_conf_ok(&b));
    b.length_ms = 0;
    assert_false(rlaas_ban_conf_ok(&b));
    b.length_ms = 50000; /* longer than the max */
    assert_false(rlaas_ban_conf_ok(&b));
    b.length_ms = 5000;
    b.factor = RLAAS_BAN_READ; /* read, never started */
    assert_true(rlaas_ban_conf_ok(&b));
    b.factor = -1;
    assert_false(rlaas_ban_conf_ok(&b));
    b.factor = RLAAS_BAN_FACTOR_MAX + 1;
    assert_false(rlaas_ban_conf_ok(&b));
    b.factor = 1;
    b.max_ms = RLAAS_BAN_MS_MAX + 1;
    assert_false(rlaas_ban_conf_ok(&b));
}

static void left_and_escalation(void **state)
{
    rlaas_ban_conf_t b = {5000, 40000, 3};
    unsigned char st[RLAAS_BAN_STATE_LEN] = {0};
    size_t len = 0;
    int64_t last, len1;

    (void)state;
    assert_int_equal(rlaas_ban_left(st, 0, T0, &b, &last), 0);
    assert_int_equal(last, 0);
    assert_int_equal(rlaas_ban_length(&b, 0), 5000);
    /* escalation keeps the record M past the ban's end */
    assert_int_equal(rlaas_ban_store(st, &len, T0, 5000, &b), 45000);
    assert_int_equal(len, RLAAS_BAN_STATE_LEN);
    assert_int_equal(rlaas_ban_left(st, len, T0 + 1000, &b, &last), 4000);
    assert_int_equal(last, 5000);
    assert_int_equal(rlaas_ban_left(st, len, T0 + 5000, &b, &last), 0);
    assert_int_equal(last, 5000);
    len1 = rlaas_ban_length(&b, last);
    assert_int_equal(len1, 15000);
    assert_int_equal(rlaas_ban_length(&b, len1), 40000); /* 45 s, capped */
    assert_int_equal(rlaas_ban_length(&b, 40000), 40000);
    /* a last ban shorter than D (D raised since) starts from D */
    assert_int_equal(rlaas_ban_length(&b, 10), 15000);
    /* no escalation: always D, the record lives as long as the ban */
    b.factor = 1;
    assert_int_equal(rlaas_ban_length(&b, 5000), 5000);
    assert_int_equal(rlaas_ban_store(st, &len, T0, 5000, &b), 5000);
    /* the clock went back: a ban ending over 2 M ahead is none */
    assert_int_equal(rlaas_ban_left(st, len, T0 - 80001, &b, &last), 0);
    assert_int_equal(last, 0);
    assert_int_equal(rlaas_ban_left(st, len, T0 - 75000, &b, &last), 80000);
    /* a record of another shape is none */
    assert_int_equal(rlaas_ban_left(st, 8, T0, &b, &last), 0);
}

static size_t key(char *out, rlaas_strategy_e st, const char *user)
{
    rlaas_key_part_t part = {RLAAS_SRC_USER, NULL, 0, 0, user, strlen(user)};
    rlaas_key_spec_t k;

    memset(&k, 0, sizeof(k));
    k.prefix = "rlaas:rate_limit:";
    k.prefix_len = strlen(k.prefix);
    k.zone = "login";
    k.zone_len = 5;
    k.ip = "127.0.0.1";
    k.ip_len = 9;
    k.strategy = st;
    k.parts = &part;
    k.nparts = 1;
    return rlaas_key_build(out, &k);
}

static void ban_key(void **state)
{
    char a[RLAAS_KEY_MAX + 1], b[RLAAS_KEY_MAX + 1];
    int st;

    (void)state;
    assert_true(key(a, RLAAS_BAN, "alice") > 0);
    assert_string_equal(a, "rlaas:rate_limit:login:alice:ban");
    /* a user named "ban" is hashed: never alice's ban record, nor a ban
     * record's text under the sliding log (no suffix) */
    assert_true(key(b, RLAAS_STRATEGY_SLIDING_LOG, "alice:ban") > 0);
    assert_string_not_equal(a, b);
    assert_true(key(b, RLAAS_STRATEGY_SLIDING_LOG, "ban") > 0);
    assert_non_null(strstr(b, "~"));
    for (st = 0; st < RLAAS_STRATEGY_COUNT; st++) {
        key(b, (rlaas_strategy_e)st, "alice");
        assert_string_not_equal(a, b);
    }
}

static rlaas_lerr_e call(rlaas_local_t *lc, const char *who, int64_t now,
                         rlaas_verdict_t *v)
{
    static char k[2][64];
    rlaas_local_call_t c[2];

    snprintf(k[0], sizeof(k[0]), "p:%s:", who);
    snprintf(k[1], sizeof(k[1]), "p:%s:ban", who);
    memset(c, 0, sizeof(c));
    c[0].strategy = RLAAS_STRATEGY_FIXED;
    c[0].key = k[0];
    c[0].key_len = strlen(k[0]);
    c[0].limit = 2;
    c[0].window_ms = 1000;
    c[0].cost = 1;
    c[1].strategy = RLAAS_BAN;
    c[1].key = k[1];
    c[1].key_len = strlen(k[1]);
    c[1].limit = 10000;     /* D */
    c[1].window_ms = 10000; /* M */
    c[1].cost = 1;          /* F */
    return rlaas_local_eval_n(lc, c, 2, now, v, NULL, NULL);
}

/* A local engine's table in plain memory (*mem: to free). */
#define TABLE_BYTES (8 * 1024 * 1024)
static rlaas_local_t *fresh_table(void **mem)
{
    static const uint8_t seed[RLAAS_TABLE_SEED_LEN] = "test-ban";

    *mem = calloc(1, TABLE_BYTES);
    return rlaas_table_init(*mem, TABLE_BYTES, seed);
}

static void local_engine(void **state)
{
    void *mem;
    rlaas_local_t *lc = fresh_table(&mem);
    rlaas_verdict_t v[2];
    int64_t t = T0;

    (void)state;
    assert_non_null(lc);
    assert_int_equal(call(lc, "a", t, v), RLAAS_LERR_NONE);
    assert_int_equal(call(lc, "a", t + 1, v), RLAAS_LERR_NONE);
    assert_true(v[0].allowed && v[1].allowed);
    assert_int_equal(call(lc, "a", t + 2, v), RLAAS_LERR_NONE);
    assert_false(v[0].allowed);
    assert_int_equal(v[1].remaining, 2); /* banned now */
    assert_int_equal(v[1].retry_ms, 10000);
    /* the next window would allow: the ban refuses, for 10 s */
    assert_int_equal(call(lc, "a", t + 5000, v), RLAAS_LERR_NONE);
    assert_false(v[0].allowed);
    assert_int_equal(v[0].retry_ms, 5002);
    assert_int_equal(v[1].remaining, 1);
    /* another identity is not banned */
    assert_int_equal(call(lc, "b", t + 5000, v), RLAAS_LERR_NONE);
    assert_true(v[0].allowed && v[1].allowed);
    /* over: allowed, its window's counter untouched by the refusals */
    assert_int_equal(call(lc, "a", t + 10002, v), RLAAS_LERR_NONE);
    assert_true(v[0].allowed);
    assert_int_equal(v[0].remaining, 1);
    free(mem);
}

/* The console's list (rlaas_local_bans): the bans that hold now, with
 * when they end and how long they are; not an identity that is only
 * limited, nor a ban that is over; the caller may stop it. */
typedef struct {
    int n, stop_after;
    char key[4][64];
    int64_t until[4], length[4];
} listed_t;

static int list_fn(void *baton, const char *key, size_t klen, int64_t until,
                   int64_t length)
{
    listed_t *l = baton;

    assert_true(l->n < 4 && klen < sizeof(l->key[0]));
    memcpy(l->key[l->n], key, klen);
    l->key[l->n][klen] = '\0';
    l->until[l->n] = until;
    l->length[l->n++] = length;
    return l->n != l->stop_after;
}

static void local_bans_listed(void **state)
{
    void *mem;
    rlaas_local_t *lc = fresh_table(&mem);
    rlaas_verdict_t v[2];
    listed_t l;
    int i;

    (void)state;
    assert_non_null(lc);
    for (i = 0; i < 3; i++) {
        assert_int_equal(call(lc, "a", T0 + i, v), RLAAS_LERR_NONE);
        assert_int_equal(call(lc, "c", T0 + 10 + i, v), RLAAS_LERR_NONE);
    }
    assert_int_equal(call(lc, "b", T0, v), RLAAS_LERR_NONE); /* limited only */
    memset(&l, 0, sizeof(l));
    assert_int_equal(rlaas_local_bans(lc, T0 + 20, list_fn, &l),
                     RLAAS_LERR_NONE);
    assert_int_equal(l.n, 2);
    for (i = 0; i < 2; i++) {
        int a = strcmp(l.key[i], "p:a:ban") == 0;

        assert_true(a || strcmp(l.key[i], "p:c:ban") == 0);
        assert_int_equal(l.until[i], a ? T0 + 2 + 10000 : T0 + 12 + 10000);
        assert_int_equal(l.length[i], 10000);
    }
    /* the caller stops the walk */
    memset(&l, 0, sizeof(l));
    l.stop_after = 1;
    assert_int_equal(rlaas_local_bans(lc, T0 + 20, list_fn, &l),
                     RLAAS_LERR_NONE);
    assert_int_equal(l.n, 1);
    /* a's over, c's still holds */
    memset(&l, 0, sizeof(l));
    assert_int_equal(rlaas_local_bans(lc, T0 + 10005, list_fn, &l),
                     RLAAS_LERR_NONE);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.key[0], "p:c:ban");
    assert_int_equal(rlaas_local_bans(NULL, T0, list_fn, &l),
                     RLAAS_LERR_NONE_HERE);
    free(mem);
}

static void ban_read(void **state)
{
    int64_t st[2] = {T0 + 5, 5}, until, length;

    (void)state;
    assert_true(rlaas_ban_read(st, sizeof(st), &until, &length));
    assert_int_equal(until, T0 + 5);
    assert_int_equal(length, 5);
    assert_false(rlaas_ban_read(st, sizeof(st) - 1, &until, &length));
    st[1] = -1;
    assert_false(rlaas_ban_read(st, sizeof(st), &until, &length));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conf_bounds),
        cmocka_unit_test(left_and_escalation),
        cmocka_unit_test(ban_key),
        cmocka_unit_test(local_engine),
        cmocka_unit_test(local_bans_listed),
        cmocka_unit_test(ban_read),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
