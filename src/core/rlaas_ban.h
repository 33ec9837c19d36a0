/*
 * Bans (RLaaSBan): the arithmetic both engines share, as lua/multi.lua
 * does it in Redis. A ban record is kept under the identity's key with the
 * suffix ":ban"; it holds when the ban ends and how long it was, in ms
 * ("<until>:<length>" in Redis, two integers in the local table).
 *
 * While until is ahead of now the identity is refused, its counters
 * untouched. When it is denied by a policy, a ban starts: D ms long, or,
 * with escalation (factor F > 1) while the last ban's record still lives
 * (it is kept M ms past that ban's end), F times the last length, at most
 * M. The clock rule of the scripts: a ban ending more than 2 M ahead of
 * now (the clock went back) is none.
 *
 * No httpd headers.
 */
#ifndef RLAAS_BAN_H
#define RLAAS_BAN_H

#include <stddef.h>
#include <stdint.h>

/* Bounds of the directive's values, as the script checks them. */
#define RLAAS_BAN_MS_MAX     ((int64_t)1 << 35) /* D and M: about a year */
#define RLAAS_BAN_FACTOR_MAX 1000

/* What the request path sends: D, M (>= D) and F (1: no escalation;
 * RLAAS_BAN_READ: a section that does not ban but honours the bans of
 * its zone: the record is read, never started). */
#define RLAAS_BAN_READ 0
typedef struct {
    int64_t length_ms;
    int64_t max_ms;
    int64_t factor;
} rlaas_ban_conf_t;

/* 1 if D, M and F are in range. */
int rlaas_ban_conf_ok(const rlaas_ban_conf_t *b);

/* The ms the ban in state (len bytes; 0: none) has left at now (0: none
 * now), and into *last the length of the last ban while its record lives
 * (0: none). */
int64_t rlaas_ban_left(const void *state, size_t len, int64_t now,
                       const rlaas_ban_conf_t *b, int64_t *last);

/* The length of a ban starting now, after a last one of *last ms (0:
 * none). */
int64_t rlaas_ban_length(const rlaas_ban_conf_t *b, int64_t last);

/* A ban's record in the local table read: when it ends and how long it
 * was (ms). 0 if state is not one. */
int rlaas_ban_read(const void *state, size_t len, int64_t *until,
                   int64_t *length);

/* Writes the record of a ban of length ms starting at now into state
 * (room for RLAAS_BAN_STATE_LEN bytes), its size into *len; returns its
 * time to live from now. */
#define RLAAS_BAN_STATE_LEN 16
int64_t rlaas_ban_store(void *state, size_t *len, int64_t now, int64_t length,
                        const rlaas_ban_conf_t *b);

#endif
