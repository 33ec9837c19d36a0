/* Which policies apply (RLaaSApply operations replayed down the tree,
 * enforced ones first and for good) and which one a response shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_policy.h"

#define ADD(id)                                                                \
    {                                                                          \
        RLAAS_APPLY_ADD, (id), NULL                                            \
    }
#define REMOVE(id)                                                             \
    {                                                                          \
        RLAAS_APPLY_REMOVE, (id), NULL                                         \
    }
#define NONE                                                                   \
    {                                                                          \
        RLAAS_APPLY_NONE, 0, NULL                                              \
    }
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int resolve(const int *enf_ids, int nenf, const rlaas_apply_op_t *ops,
                   int nops, int *ids, int max)
{
    rlaas_apply_op_t enf[16];
    const rlaas_apply_op_t *out[RLAAS_POLICIES_MAX];
    int n, i;

    for (i = 0; i < nenf; i++) {
        enf[i].kind = RLAAS_APPLY_ADD;
        enf[i].id = enf_ids[i];
        enf[i].ref = &enf[i];
    }
    n = rlaas_policy_resolve(enf, nenf, ops, nops, out, max);
    for (i = 0; i < n; i++) {
        ids[i] = out[i]->id;
        /* each points at the operation (or enforced entry) it came from */
        assert_true((out[i] >= enf && out[i] < enf + nenf) ||
                    (out[i] >= ops && out[i] < ops + nops));
    }
    return n;
}

static void expect_set(const int *enf, int nenf, const rlaas_apply_op_t *ops,
                       int nops, const int *want, int nwant)
{
    int out[RLAAS_POLICIES_MAX], n, i;

    n = resolve(enf, nenf, ops, nops, out, RLAAS_POLICIES_MAX);
    assert_int_equal(n, nwant);
    for (i = 0; i < n; i++)
        assert_int_equal(out[i], want[i]);
}

static void apply_accumulates_down_the_tree(void **state)
{
    /* server: a b; directory: c; location: -a */
    const rlaas_apply_op_t ops[] = {ADD(1), ADD(2), ADD(3), REMOVE(1)};
    const int want[] = {2, 3};

    (void)state;
    expect_set(NULL, 0, ops, COUNT(ops), want, COUNT(want));
    expect_set(NULL, 0, ops, 3, (const int[]){1, 2, 3}, 3);
    expect_set(NULL, 0, NULL, 0, NULL, 0);
}

static void none_clears_what_came_before(void **state)
{
    const rlaas_apply_op_t ops[] = {ADD(1), ADD(2), NONE, ADD(4), ADD(2)};

    (void)state;
    expect_set(NULL, 0, ops, COUNT(ops), (const int[]){4, 2}, 2);
    expect_set(NULL, 0, ops, 3, NULL, 0);
}

static void added_twice_counts_once_in_first_place(void **state)
{
    const rlaas_apply_op_t ops[] = {ADD(5), ADD(6), ADD(5), REMOVE(9)};

    (void)state;
    expect_set(NULL, 0, ops, COUNT(ops), (const int[]){5, 6}, 2);
}

/* An enforced policy can't be removed by name or by none, and is not
 * counted twice when a section applies it as well. */
static void enforced_ones_stay(void **state)
{
    const int enf[] = {7, 8, 7};
    const rlaas_apply_op_t ops[] = {ADD(1),    REMOVE(7), NONE,
                                    REMOVE(8), ADD(8),    ADD(2)};

    (void)state;
    expect_set(enf, COUNT(enf), ops, COUNT(ops), (const int[]){7, 8, 2}, 3);
    expect_set(enf, 2, NULL, 0, (const int[]){7, 8}, 2);
}

static void more_than_the_bound_is_an_error(void **state)
{
    rlaas_apply_op_t ops[RLAAS_POLICIES_MAX + 1];
    int out[RLAAS_POLICIES_MAX], i;
    const int enf[] = {100};

    (void)state;
    for (i = 0; i < COUNT(ops); i++) {
        ops[i].kind = RLAAS_APPLY_ADD;
        ops[i].id = i;
        ops[i].ref = NULL;
    }
    assert_int_equal(
        resolve(NULL, 0, ops, RLAAS_POLICIES_MAX, out, RLAAS_POLICIES_MAX),
        RLAAS_POLICIES_MAX);
    assert_int_equal(resolve(NULL, 0, ops, COUNT(ops), out, RLAAS_POLICIES_MAX),
                     -1);
    assert_int_equal(
        resolve(enf, 1, ops, RLAAS_POLICIES_MAX, out, RLAAS_POLICIES_MAX), -1);
    /* a smaller room: the section's own limit takes one place */
    assert_int_equal(resolve(enf, 1, ops, 6, out, RLAAS_POLICIES_MAX - 1), 7);
    /* removed again before the end: within the bound */
    ops[RLAAS_POLICIES_MAX].kind = RLAAS_APPLY_REMOVE;
    ops[RLAAS_POLICIES_MAX].id = 3;
    assert_int_equal(resolve(NULL, 0, ops, COUNT(ops), out, RLAAS_POLICIES_MAX),
                     RLAAS_POLICIES_MAX - 1);
}

static rlaas_policy_outcome_t out_of(int allowed, int64_t rem, int64_t reset,
                                     int64_t retry, int dry)
{
    rlaas_policy_outcome_t o;

    o.v.allowed = allowed;
    o.v.remaining = rem;
    o.v.reset_ms = reset;
    o.v.retry_ms = retry;
    o.dry_run = dry;
    return o;
}

static void pick_the_longest_denial(void **state)
{
    rlaas_policy_outcome_t o[4];
    rlaas_pick_e why;

    (void)state;
    o[0] = out_of(1, 0, 500, 500, 0);
    o[1] = out_of(0, 0, 1000, 1000, 0);
    o[2] = out_of(0, 0, 90000, 3600000, 0);
    o[3] = out_of(0, 0, 900000, 9000000, 1);
    assert_int_equal(rlaas_policy_pick(o, 4, &why), 2);
    assert_int_equal(why, RLAAS_PICK_DENIED);
    /* the dry run waits longer, but it denies nothing */
    o[2].v.allowed = 1;
    assert_int_equal(rlaas_policy_pick(o, 4, &why), 1);
    assert_int_equal(why, RLAAS_PICK_DENIED);
    o[1].v.allowed = 1;
    assert_int_equal(rlaas_policy_pick(o, 4, &why), 3);
    assert_int_equal(why, RLAAS_PICK_DRY_RUN_DENIED);
}

static void pick_the_closest_when_allowed(void **state)
{
    rlaas_policy_outcome_t o[3];
    rlaas_pick_e why;

    (void)state;
    /* 10/s with 9 left, 1000/h with 500 left: the 10/s one is closer */
    o[0] = out_of(1, 500, 1800000, 0, 0);
    o[1] = out_of(1, 9, 100, 0, 0);
    o[2] = out_of(1, 9, 800, 0, 0);
    assert_int_equal(rlaas_policy_pick(o, 3, &why), 2);
    assert_int_equal(why, RLAAS_PICK_ALLOWED);
    assert_int_equal(rlaas_policy_pick(o, 2, &why), 1);
    assert_int_equal(rlaas_policy_pick(o, 1, &why), 0);
    /* ties: the first */
    o[2] = o[1];
    assert_int_equal(rlaas_policy_pick(o, 3, &why), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(apply_accumulates_down_the_tree),
        cmocka_unit_test(none_clears_what_came_before),
        cmocka_unit_test(added_twice_counts_once_in_first_place),
        cmocka_unit_test(enforced_ones_stay),
        cmocka_unit_test(more_than_the_bound_is_an_error),
        cmocka_unit_test(pick_the_longest_denial),
        cmocka_unit_test(pick_the_closest_when_allowed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
