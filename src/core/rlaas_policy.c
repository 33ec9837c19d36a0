#include "rlaas_policy.h"

static int find(const rlaas_apply_op_t *const *set, int n, int id)
{
    int i;

    for (i = 0; i < n; i++) {
        if (set[i]->id == id)
            return i;
    }
    return -1;
}

/* The operations replayed: the applied set, in order of first addition. */
static int replay(const rlaas_apply_op_t *ops, int nops,
                  const rlaas_apply_op_t **set, int room)
{
    int n = 0, i, at;

    for (i = 0; i < nops; i++) {
        switch (ops[i].kind) {
        case RLAAS_APPLY_ADD:
            if (find(set, n, ops[i].id) >= 0)
                break;
            if (n == room)
                return -1;
            set[n++] = &ops[i];
            break;
        case RLAAS_APPLY_REMOVE:
            at = find(set, n, ops[i].id);
            if (at < 0)
                break;
            for (; at + 1 < n; at++)
                set[at] = set[at + 1];
            n--;
            break;
        case RLAAS_APPLY_NONE:
            n = 0;
            break;
        }
    }
    return n;
}

int rlaas_policy_resolve(const rlaas_apply_op_t *enforced, int nenforced,
                         const rlaas_apply_op_t *ops, int nops,
                         const rlaas_apply_op_t **out, int max)
{
    /* room for every distinct policy an operation can name */
    const rlaas_apply_op_t *applied[256];
    int n = 0, k, i;

    for (i = 0; i < nenforced; i++) {
        if (find(out, n, enforced[i].id) >= 0)
            continue;
        if (n == max)
            return -1;
        out[n++] = &enforced[i];
    }
    k = replay(ops, nops, applied, (int)(sizeof(applied) / sizeof(*applied)));
    if (k < 0)
        return -1;
    for (i = 0; i < k; i++) {
        if (find(out, n, applied[i]->id) >= 0)
            continue;
        if (n == max)
            return -1;
        out[n++] = applied[i];
    }
    return n;
}

/* Orders among candidates to be shown. */
static int waits_longer(const rlaas_policy_outcome_t *a,
                        const rlaas_policy_outcome_t *b)
{
    return a->v.retry_ms > b->v.retry_ms;
}

static int closer(const rlaas_policy_outcome_t *a,
                  const rlaas_policy_outcome_t *b)
{
    return a->v.remaining < b->v.remaining ||
           (a->v.remaining == b->v.remaining && a->v.reset_ms > b->v.reset_ms);
}

/* The index of the denial (of a dry run, or not) that waits longest. */
static int longest_denial(const rlaas_policy_outcome_t *o, int n, int dry)
{
    int best = -1, i;

    for (i = 0; i < n; i++) {
        if (o[i].v.allowed || (o[i].dry_run != 0) != dry)
            continue;
        if (best < 0 || waits_longer(&o[i], &o[best]))
            best = i;
    }
    return best;
}

int rlaas_policy_pick(const rlaas_policy_outcome_t *o, int n, rlaas_pick_e *why)
{
    int best = longest_denial(o, n, 0), i;

    if (best >= 0) {
        *why = RLAAS_PICK_DENIED;
        return best;
    }
    best = longest_denial(o, n, 1);
    if (best >= 0) {
        *why = RLAAS_PICK_DRY_RUN_DENIED;
        return best;
    }
    *why = RLAAS_PICK_ALLOWED;
    best = 0;
    for (i = 1; i < n; i++) {
        if (closer(&o[i], &o[best]))
            best = i;
    }
    return best;
}
