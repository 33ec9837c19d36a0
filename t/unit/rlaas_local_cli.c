/*
 * The local engine on standard input, for t/lua: the same calls the Lua
 * tests make of the scripts, made of the C strategies and the table, at a
 * clock the caller gives, so that the two engines are compared call by
 * call (t/lua/ScriptTest.pm) and against one model (t/lua/30-model.t).
 *
 *   hit STRATEGY KEY LIMIT WINDOW_MS NOW_MS
 *       -> ALLOWED REMAINING RESET_MS RETRY_MS RECORD_KEY TTL_MS
 *   flush
 *       -> ok                         (an empty table, as FLUSHALL)
 * Anything else, or a call the engine refuses: "ERR <why>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlaas_local.h"

#define TABLE_BYTES (64 * 1024 * 1024)

static void *mem;

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

static void hit(rlaas_local_t *lc, char **arg, int n)
{
    rlaas_local_call_t call;
    rlaas_verdict_t v;
    char rkey[RLAAS_TABLE_KEY_MAX + 1];
    int64_t now, ttl;
    int ok = n == 6;
    rlaas_lerr_e e;

    if (ok && rlaas_parse_strategy(arg[1], &call.strategy) != NULL)
        ok = 0;
    if (!ok) {
        printf("ERR usage: hit STRATEGY KEY LIMIT WINDOW_MS NOW_MS\n");
        return;
    }
    call.key = arg[2];
    call.key_len = strlen(arg[2]);
    call.limit = num(arg[3], &ok);
    call.window_ms = num(arg[4], &ok);
    now = num(arg[5], &ok);
    e = ok ? rlaas_local_eval_ex(lc, &call, now, &v, NULL, rkey, &ttl)
           : RLAAS_LERR_CALL;
    if (e != RLAAS_LERR_NONE) {
        printf("ERR %s\n", rlaas_lerr_name(e));
        return;
    }
    printf("%d %lld %lld %lld %s %lld\n", v.allowed, (long long)v.remaining,
           (long long)v.reset_ms, (long long)v.retry_ms, rkey, (long long)ttl);
}

int main(void)
{
    static char line[RLAAS_TABLE_KEY_MAX + 256];
    rlaas_local_t *lc;

    mem = calloc(1, TABLE_BYTES);
    if (mem == NULL || (lc = fresh()) == NULL) {
        fprintf(stderr, "rlaas_local_cli: no table\n");
        return 1;
    }
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char *arg[8];
        int n = 0;
        char *tok = strtok(line, " \t\r\n");

        while (tok != NULL && n < 8) {
            arg[n++] = tok;
            tok = strtok(NULL, " \t\r\n");
        }
        if (n == 1 && strcmp(arg[0], "flush") == 0) {
            lc = fresh();
            printf(lc != NULL ? "ok\n" : "ERR no table\n");
        }
        else if (n > 0 && strcmp(arg[0], "hit") == 0 && lc != NULL)
            hit(lc, arg, n);
        else
            printf("ERR unknown command\n");
        fflush(stdout);
    }
    return 0;
}
