/*
 * The six strategies' arithmetic in C, for the local engine: the same
 * decisions, the same reply {allowed, remaining, reset_ms, retry_ms}, the
 * same state under the same key and the same time to live as the Lua
 * scripts in lua/ keep in Redis, so that a section decides alike on either
 * backend. The t/lua suite runs every call on both and compares them
 * (t/lua/ScriptTest.pm), and t/lua/30-model.t checks both against one
 * reference model.
 *
 * Integer arithmetic only, as in the scripts: time in milliseconds, rates
 * as integer ticks (limit and window divided by their gcd), products by
 * exact 128-bit multiplication. The clock is passed in, so tests drive
 * time by hand. No httpd headers; one file per strategy.
 */
#ifndef RLAAS_ALGO_H
#define RLAAS_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_cal.h"
#include "rlaas_parse.h"
#include "rlaas_verdict.h"

/* The scripts' bounds on their arguments ("bad limit or window"). */
#define RLAAS_ALGO_WINDOW_MAX ((int64_t)1 << 35)
#define RLAAS_ALGO_NOW_MAX    ((int64_t)1 << 52)
/* fixed keeps one integer per window: limits (and costs) up to 2^50, for
 * quotas of bytes; the others up to RLAAS_LIMIT_MAX (lua/prelude.lua's
 * BIG). */
#define RLAAS_ALGO_LIMIT_BIG ((int64_t)1 << 50)

/* The sliding log keeps runs of charged hits: hits of one millisecond and
 * one cost share a run. Past this many runs, two neighbouring ones merge
 * into the later one, those whose units move the least: they then count
 * as if they came a little later, so the log grows stricter, never admits
 * more. A window with at most this many runs is kept exactly, as Redis
 * keeps it. */
#define RLAAS_ALGO_LOG_MAX 700

/* Room for any strategy's state, and for a record key's suffix. */
#define RLAAS_ALGO_STATE_MAX  (16 + RLAAS_ALGO_LOG_MAX * 24)
#define RLAAS_ALGO_SUFFIX_MAX 24

/* *ttl_ms of a hit that leaves the record's time to live as it was. */
#define RLAAS_ALGO_TTL_KEEP (-1)

/* Mode bits: RLAAS_MODE_* (rlaas_parse.h), the same in both engines. */

typedef struct {
    rlaas_strategy_e strategy;
    int64_t limit;     /* 1 .. RLAAS_LIMIT_MAX (fixed: RLAAS_ALGO_LIMIT_BIG) */
    int64_t window_ms; /* 1 .. RLAAS_ALGO_WINDOW_MAX */
    int64_t now_ms;    /* ms since the epoch, as Redis' TIME gives it */
    int64_t cost;      /* units a hit takes, 0 .. limit; 0: a check */
    int mode;          /* RLAAS_ALGO_* bits */
    /* 0: decide only, charge nothing (the multi call's first pass) */
    int commit;
    /* fixed: a calendar window (rlaas_cal.h), the periods around the
     * module's time, as the script gets them (window_ms is then not
     * read); NULL: windows of window_ms */
    const rlaas_cal_table_t *cal;
} rlaas_algo_call_t;

/* The highest limit strategy st takes. */
int64_t rlaas_algo_limit_max(rlaas_strategy_e st);

/* 1 if the call's limit, window, cost, mode and time are in range (and
 * with a calendar window, the time in one of its periods: else the
 * script answers RLAASWINDOW). */
int rlaas_algo_call_ok(const rlaas_algo_call_t *c);

/* Writes what the script adds to its key, the whole key the module builds
 * (KEYS[1], the strategy's suffix included): fixed's window number, or
 * its calendar period's name; nothing for the others. NUL terminated,
 * into buf (RLAAS_ALGO_SUFFIX_MAX bytes); returns its length. */
size_t rlaas_algo_suffix(const rlaas_algo_call_t *c, char *buf);

/* The size of a strategy's state after its first charge: the room a new
 * record needs (a ban's strategy, RLAAS_STRATEGY_COUNT: its record's). */
size_t rlaas_algo_first_len(rlaas_strategy_e st);

/* What a hit does to the record (rlaas_algo_hit's return value). */
#define RLAAS_ALGO_STORE 0 /* the new state: *len bytes, *ttl_ms */
#define RLAAS_ALGO_LEAVE 1 /* the record as it was, TTL and all */

/* One hit, in place. state holds *len bytes of the record's state (*len 0:
 * there is none: never written, or expired). Returns RLAAS_ALGO_STORE with
 * the new state in state, its size in *len and the record's time to live
 * from now in *ttl_ms (RLAAS_ALGO_TTL_KEEP: unchanged); a *len of 0 then
 * means the script deleted the key (its time to live is 0). Returns
 * RLAAS_ALGO_LEAVE when the script wrote nothing (a denial, a check, a
 * first pass), or -1 if the call is out of range. state must have room
 * for RLAAS_ALGO_STATE_MAX bytes. A state of the wrong shape counts as
 * none. */
int rlaas_algo_hit(const rlaas_algo_call_t *c, void *state, size_t *len,
                   int64_t *ttl_ms, rlaas_verdict_t *v);

/* The same for a call rlaas_algo_call_ok has found in range (and not
 * changed since but for commit): not checked again. The local engine
 * checks each call once, as it prepares it, then decides it once or
 * twice under the lock. */
int rlaas_algo_hit_ok(const rlaas_algo_call_t *c, void *state, size_t *len,
                      int64_t *ttl_ms, rlaas_verdict_t *v);

/* A credit (lua/credit.lua): c->cost units given back to the state, as if
 * a charge of them made at at_ms (<= now; now for "the latest") had not
 * been made, or as near as the state allows: never below the fresh state,
 * never creating state where there is none. fixed: the window of at_ms,
 * if it is now's (an earlier window no longer limits); sliding: the
 * window of at_ms, then (at_ms in now's window) the previous one; the
 * sliding log: the units of the first live hits at or after at_ms (those
 * the charge added, or ones of the same moment), and, if fewer hits than
 * RLAAS_ALGO_CREDIT_RENUMBER_MAX follow them, else or if they are too few,
 * the newest units; token: tokens back, up to a full bucket; leaky, gcra:
 * the water back out, down to empty. A state that is fresh again is
 * deleted. c->cost may exceed the limit (1 .. RLAAS_LIMIT_MAX); c->commit
 * is not read. Returns RLAAS_ALGO_STORE or RLAAS_ALGO_LEAVE as a hit
 * does, or -1 if the call is out of range; *given: the units given back
 * (what the state showed used, at most c->cost). */
#define RLAAS_ALGO_CREDIT_RENUMBER_MAX 256
int rlaas_algo_credit(const rlaas_algo_call_t *c, int64_t at_ms, void *state,
                      size_t *len, int64_t *ttl_ms, int64_t *given);

#endif
