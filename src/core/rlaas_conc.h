/*
 * Concurrency limits (RLaaSConcurrency): the slots of one identity's
 * requests in flight, as lua/concurrency.lua keeps them in Redis and the
 * local engine keeps them in its table, with the same decisions, replies
 * and time to live. No httpd headers: unit-tested on its own, and compared
 * call by call with the script (t/lua/34-concurrency.t).
 *
 * A slot is a token (a 64-bit number unique to one client request, 16
 * hex digits in Redis) and the ms it was taken. A request is admitted
 * while fewer than N slots are held, and then takes one; it gives it back
 * when httpd is done with it (a release, by its token). A slot lasts at
 * most T ms (RLaaSConcurrencyTimeout): one older than that is gone, and,
 * by the scripts' rule for a clock gone back, so is one stamped more than
 * T ahead. The record lives as long as its newest slot.
 *
 * The local engine also knows who holds each slot (the process id and the
 * time the process started): when a request finds N slots held, slots of
 * processes that are gone (killed, crashed, zombies) are freed at once,
 * at most once per RLAAS_CONC_PROBE_MS per record. Redis knows nothing of
 * the processes: there T alone bounds a slot that is never released.
 */
#ifndef RLAAS_CONC_H
#define RLAAS_CONC_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_verdict.h"

/* The highest N, and the most slots a record holds (a dry run takes
 * slots beyond N, so that what is in flight stays known, up to this). */
#define RLAAS_CONC_MAX 500
/* The longest T (as the scripts bound a window) */
#define RLAAS_CONC_TIMEOUT_MAX ((int64_t)1 << 35)
/* What a refused request is told: a slot may come back any moment. */
#define RLAAS_CONC_RETRY_MS 1000
/* How often, at most, the holders of a full record are looked at. */
#define RLAAS_CONC_PROBE_MS 100

/* Room for a record's state: its header and RLAAS_CONC_MAX slots; and
 * the size of a record holding one slot (its first). */
#define RLAAS_CONC_STATE_MAX (16 + RLAAS_CONC_MAX * 32)
#define RLAAS_CONC_FIRST_LEN (16 + 32)

/* Whether the process pid that started at start is still there (not a
 * zombie, not another process under a reused pid). */
typedef int (*rlaas_conc_alive_fn)(void *baton, int32_t pid, uint64_t start);

typedef struct {
    int64_t limit;      /* N, 1 .. RLAAS_CONC_MAX */
    int64_t timeout_ms; /* T, 1 .. RLAAS_CONC_TIMEOUT_MAX */
    int64_t now_ms;
    uint64_t token;
    int mode;   /* bit 2: a dry run (the slot is taken whatever it decides) */
    int commit; /* 0: decide only (a multi call's first pass) */
    /* who takes the slot, and how to tell the holders that are gone
     * (alive NULL: never) */
    int32_t pid;
    uint64_t start;
    rlaas_conc_alive_fn alive;
    void *baton;
} rlaas_conc_call_t;

/* 1 if the call's N, T, time and mode are in range. */
int rlaas_conc_call_ok(const rlaas_conc_call_t *c);

/* What a take or a release does to the record (as rlaas_algo_hit). */
#define RLAAS_CONC_STORE 0 /* the new state: *len bytes (0: gone), *ttl_ms */
#define RLAAS_CONC_LEAVE 1 /* the record as it was */

/* A request's decision on the record in state (*len bytes; 0: none), in
 * place (room for RLAAS_CONC_STATE_MAX bytes). Allowed while fewer than N
 * slots are held: {1, N - held after it, 0 (1000 when none is left), 0};
 * refused: {0, 0, 1000, 1000}, and nothing taken unless it is a dry run.
 * Returns RLAAS_CONC_STORE with the new state, its size and its time to
 * live from now (RLAAS_ALGO_TTL_KEEP style -1: unchanged), or
 * RLAAS_CONC_LEAVE, or -1 if the call is out of range. A state of the
 * wrong shape counts as none. */
int rlaas_conc_take(const rlaas_conc_call_t *c, void *state, size_t *len,
                    int64_t *ttl_ms, rlaas_verdict_t *v);

/* The slot of token given back: *removed 1 if it was held (0: it had
 * expired, or was never taken). Returns as rlaas_conc_take; the time to
 * live is never changed (*ttl_ms -1), a record left empty is gone. */
int rlaas_conc_release(uint64_t token, void *state, size_t *len,
                       int64_t *ttl_ms, int *removed);

/* The slots the record holds (0 for none, or a state of the wrong
 * shape); for tests and the console. */
int rlaas_conc_held(const void *state, size_t len);

/* A token as Redis keeps it: 16 lowercase hex digits and a NUL into buf
 * (17 bytes); and back (0 if the text is not one). */
#define RLAAS_CONC_TOKEN_LEN 16
void rlaas_conc_token_hex(char *buf, uint64_t token);
int rlaas_conc_token_parse(const char *s, size_t len, uint64_t *token);

#endif
