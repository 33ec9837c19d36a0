/*
 * The local engine on standard input, for t/lua: the same calls the Lua
 * tests make of the scripts, made of the C strategies and the table, at a
 * clock the caller gives, so that the two engines are compared call by
 * call (t/lua/ScriptTest.pm) and against one model (t/lua/30-model.t).
 *
 *   hit STRATEGY KEY LIMIT WINDOW_MS NOW_MS [COST [MODE]]
 *       (WINDOW_MS may be a calendar's periods, as the scripts take them:
 *       TAG/B0/B1/B2/B3, src/core/rlaas_cal.h)
 *       -> ALLOWED REMAINING RESET_MS RETRY_MS RECORD_KEY TTL_MS
 *   multi NOW_MS STRATEGY KEY LIMIT WINDOW_MS COST MODE ...  (1 to 8)
 *       -> the four integers of each, then RECORD_KEY TTL_MS of each
 *   credit NOW_MS AGE_MS STRATEGY KEY LIMIT WINDOW_MS UNITS MODE ...  (1 to 8)
 *       -> 1 GIVEN 0 0 of each, then RECORD_KEY TTL_MS of each
 *          (lua/credit.lua's reply; rlaas_local_credit_n)
 *   release NOW_MS conc KEY LIMIT TIMEOUT_MS TOKEN MODE ...  (1 to 8)
 *       -> 1 REMOVED 0 0 of each, then RECORD_KEY TTL_MS of each
 *          (lua/release.lua's reply; rlaas_local_release_n)
 * STRATEGY "conc" is a concurrency limit (RLAAS_CONCURRENCY): LIMIT N,
 * WINDOW_MS its timeout, and the request's token (16 hex digits) in place
 * of the cost. Its slots are held by this process, which is alive.
 *   flush
 *       -> ok                         (an empty table, as FLUSHALL)
 * TTL_MS -2: the record is gone (or was never written). Anything else,
 * or a call the engine refuses: "ERR <why>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlaas_conc.h"
#include "rlaas_local.h"

#define TABLE_BYTES (64 * 1024 * 1024)
#define ARGS_MAX    (3 + 6 * RLAAS_LOCAL_CALLS_MAX)

static void *mem;
static rlaas_cal_table_t cals[RLAAS_LOCAL_CALLS_MAX];

static rlaas_local_t *fresh(void)
{
    static const uint8_t seed[RLAAS_TABLE_SEED_LEN] = "rlaas-local-cli";

    return rlaas_table_init(mem, TABLE_BYTES, seed);
}

static int64_t num(const char *s, int *ok)
{
    char *end;
    long long v = strtoll(s, &end, 10);

    if (*s == '\0' || *end != '\0')
        *ok = 0;
    return (int64_t)v;
}

/* One policy from arg[0..n): STRATEGY KEY LIMIT WINDOW_MS [COST [MODE]];
 * STRATEGY "ban": a ban, KEY LENGTH_MS MAX_MS FACTOR 0; "conc": a
 * concurrency limit, KEY N TIMEOUT_MS TOKEN MODE. A calendar's
 * periods go into *cal. */
static int policy(char **arg, int n, rlaas_local_call_t *call,
                  rlaas_cal_table_t *cal)
{
    int ok = n >= 4 && n <= 6, conc = ok && strcmp(arg[0], "conc") == 0;

    memset(call, 0, sizeof(*call));
    if (ok && strchr(arg[3], '/') != NULL) {
        /* the window a calendar's period has, for the range checks */
        if (!rlaas_cal_arg_read(arg[3], strlen(arg[3]), cal))
            return 0;
        call->cal = cal;
    }
    if (ok && strcmp(arg[0], "ban") == 0)
        call->strategy = RLAAS_BAN;
    else if (conc)
        call->strategy = RLAAS_CONCURRENCY;
    else if (!ok || rlaas_parse_strategy(arg[0], &call->strategy) != NULL)
        return 0;
    call->key = arg[1];
    call->key_len = strlen(arg[1]);
    call->limit = num(arg[2], &ok);
    call->window_ms =
        call->cal != NULL ? cal->b[2] - cal->b[1] : num(arg[3], &ok);
    if (conc)
        ok = ok && n > 4 &&
             rlaas_conc_token_parse(arg[4], strlen(arg[4]), &call->token);
    else
        call->cost = n > 4 ? num(arg[4], &ok) : 1;
    call->mode = n > 5 ? (int)num(arg[5], &ok) : 0;
    return ok;
}

static void answer(rlaas_local_t *lc, const rlaas_local_call_t *calls, int n,
                   int64_t now)
{
    static rlaas_local_record_t rec[RLAAS_LOCAL_CALLS_MAX];
    rlaas_verdict_t v[RLAAS_LOCAL_CALLS_MAX];
    rlaas_lerr_e e = rlaas_local_eval_n(lc, calls, n, now, v, NULL, rec);
    int i;

    if (e != RLAAS_LERR_NONE) {
        printf("ERR %s\n", rlaas_lerr_name(e));
        return;
    }
    for (i = 0; i < n; i++)
        printf("%s%d %lld %lld %lld", i ? " " : "", v[i].allowed,
               (long long)v[i].remaining, (long long)v[i].reset_ms,
               (long long)v[i].retry_ms);
    for (i = 0; i < n; i++)
        printf(" %s %lld", rec[i].key, (long long)rec[i].ttl_ms);
    printf("\n");
}

static void hit(rlaas_local_t *lc, char **arg, int n)
{
    rlaas_local_call_t call;
    int ok = n >= 6;
    int64_t now = ok ? num(arg[5], &ok) : 0;
    char *pol[6];

    /* STRATEGY KEY LIMIT WINDOW_MS, then COST and MODE after NOW_MS */
    memcpy(pol, arg + 1, 4 * sizeof(char *));
    if (n > 6)
        pol[4] = arg[6];
    if (n > 7)
        pol[5] = arg[7];
    if (!ok || n > 8 || !policy(pol, n - 2, &call, &cals[0])) {
        printf("ERR usage: hit STRATEGY KEY LIMIT WINDOW_MS NOW_MS "
               "[COST [MODE]]\n");
        return;
    }
    answer(lc, &call, 1, now);
}

static void multi(rlaas_local_t *lc, char **arg, int n)
{
    rlaas_local_call_t calls[RLAAS_LOCAL_CALLS_MAX];
    int ok = n >= 8 && (n - 2) % 6 == 0, k = (n - 2) / 6, i;
    int64_t now = ok ? num(arg[1], &ok) : 0;

    for (i = 0; ok && i < k; i++)
        ok = policy(arg + 2 + 6 * i, 6, &calls[i], &cals[i]);
    if (!ok || k > RLAAS_LOCAL_CALLS_MAX) {
        printf("ERR usage: multi NOW_MS (STRATEGY KEY LIMIT WINDOW_MS COST "
               "MODE)...\n");
        return;
    }
    answer(lc, calls, k, now);
}

static void credit(rlaas_local_t *lc, char **arg, int n)
{
    static rlaas_local_record_t rec[RLAAS_LOCAL_CALLS_MAX];
    rlaas_local_call_t calls[RLAAS_LOCAL_CALLS_MAX];
    int64_t given[RLAAS_LOCAL_CALLS_MAX];
    int ok = n >= 9 && (n - 3) % 6 == 0, k = (n - 3) / 6, i;
    int64_t now = ok ? num(arg[1], &ok) : 0, age = ok ? num(arg[2], &ok) : 0;
    rlaas_lerr_e e;

    for (i = 0; ok && i < k; i++)
        ok = policy(arg + 3 + 6 * i, 6, &calls[i], &cals[i]);
    if (!ok || k > RLAAS_LOCAL_CALLS_MAX) {
        printf("ERR usage: credit NOW_MS AGE_MS (STRATEGY KEY LIMIT "
               "WINDOW_MS UNITS MODE)...\n");
        return;
    }
    e = rlaas_local_credit_n(lc, calls, k, age, now, given, NULL, rec);
    if (e != RLAAS_LERR_NONE) {
        printf("ERR %s\n", rlaas_lerr_name(e));
        return;
    }
    for (i = 0; i < k; i++)
        printf("%s1 %lld 0 0", i ? " " : "", (long long)given[i]);
    for (i = 0; i < k; i++)
        printf(" %s %lld", rec[i].key, (long long)rec[i].ttl_ms);
    printf("\n");
}

static void release(rlaas_local_t *lc, char **arg, int n)
{
    static rlaas_local_record_t rec[RLAAS_LOCAL_CALLS_MAX];
    rlaas_local_call_t calls[RLAAS_LOCAL_CALLS_MAX];
    int removed[RLAAS_LOCAL_CALLS_MAX];
    int ok = n >= 8 && (n - 2) % 6 == 0, k = (n - 2) / 6, i;
    int64_t now = ok ? num(arg[1], &ok) : 0;
    rlaas_lerr_e e;

    for (i = 0; ok && i < k && i < RLAAS_LOCAL_CALLS_MAX; i++)
        ok = policy(arg + 2 + 6 * i, 6, &calls[i], &cals[i]);
    if (!ok || k > RLAAS_LOCAL_CALLS_MAX) {
        printf("ERR usage: release NOW_MS (conc KEY N TIMEOUT_MS TOKEN "
               "MODE)...\n");
        return;
    }
    e = rlaas_local_release_n(lc, calls, k, now, removed, NULL, rec);
    if (e != RLAAS_LERR_NONE) {
        printf("ERR %s\n", rlaas_lerr_name(e));
        return;
    }
    for (i = 0; i < k; i++)
        printf("%s1 %d 0 0", i ? " " : "", removed[i]);
    for (i = 0; i < k; i++)
        printf(" %s %lld", rec[i].key, (long long)rec[i].ttl_ms);
    printf("\n");
}

int main(void)
{
    static char line[RLAAS_LOCAL_CALLS_MAX * (RLAAS_TABLE_KEY_MAX + 128)];
    rlaas_local_t *lc;

    mem = calloc(1, TABLE_BYTES);
    if (mem == NULL || (lc = fresh()) == NULL) {
        fprintf(stderr, "rlaas_local_cli: no table\n");
        return 1;
    }
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *arg[ARGS_MAX + 1];
        int n = 0;
        char *tok = strtok(line, " \t\r\n");

        while (tok != NULL && n <= ARGS_MAX) {
            arg[n++] = tok;
            tok = strtok(NULL, " \t\r\n");
        }
        if (n == 1 && strcmp(arg[0], "flush") == 0) {
            lc = fresh();
            printf(lc != NULL ? "ok\n" : "ERR no table\n");
        }
        else if (n > 0 && strcmp(arg[0], "hit") == 0 && lc != NULL)
            hit(lc, arg, n);
        else if (n > 0 && strcmp(arg[0], "multi") == 0 && lc != NULL)
            multi(lc, arg, n);
        else if (n > 0 && strcmp(arg[0], "credit") == 0 && lc != NULL)
            credit(lc, arg, n);
        else if (n > 0 && strcmp(arg[0], "release") == 0 && lc != NULL)
            release(lc, arg, n);
        else
            printf("ERR unknown command\n");
        fflush(stdout);
    }
    return 0;
}
