/*
 * Leases (RLaaSLease on): the units a server took from Redis in one
 * round trip for one identity, kept in the local engine's shared-memory
 * table and spent there by every child and thread of the server, so that
 * most of a busy identity's requests need no round trip.
 *
 * One record per identity and policy, under the policy's key with a
 * prefix no Redis key has. A request with units left spends its cost
 * under the record's stripe lock (a decrement, no I/O). One with none
 * left marks the record "being fetched" and takes a new lease with one
 * EVALSHA (lua/lease.lua); requests that find no units left while a
 * fetch is in flight are decided one round trip each, as without leases,
 * so one server never takes several portions at once. So that a busy identity
 * seldom runs dry, the next portion is fetched while units are still left: the
 * request that finds less than half of the last grant left takes it (its own
 * cost charged by the lease script; if Redis has nothing left, it is spent from
 * the units instead, and no such early fetch is made again before Redis' retry
 * time). Units left of a lease join the next one (not across a fixed or sliding
 * window); units not spent by the expiry lapse: they were charged in Redis when
 * granted, so the fleet never admits more than the limit, and no request here
 * spends them after it; the next fetch takes them out of the record and gives
 * them back (lua/lease.lua credits them before it decides).
 *
 * How much to ask for adapts to the identity's traffic: its own cost for
 * an identity that spent no more than that in its last lease (a quiet one
 * wastes nothing); after a lease lapsed, what it spent; while a lease
 * runs low, what its pace spends in a whole lease, growing at most
 * twofold from one portion to the next. Redis grants at most max(cost,
 * 1/8 of what remains) of it.
 *
 * No httpd headers; the clocks are passed in (tests drive them by hand).
 */
#ifndef RLAAS_GRANT_H
#define RLAAS_GRANT_H

#include <stdint.h>

#include "rlaas_table.h"
#include "rlaas_verdict.h"

/* A fetch in flight for longer than this is taken as lost (its request
 * gone with its process): the next request fetches again. */
#define RLAAS_GRANT_FETCH_STALE_US 1000000
/* A record outlives its lease by this much, so that the next fetch knows
 * what the last lease spent. */
#define RLAAS_GRANT_KEEP_MS 10000
/* A record holding units lives on for its window (at most this long), so
 * that the identity's next portion can give back what lapsed. */
#define RLAAS_GRANT_BACK_KEEP_MS 86400000
/* Prefixed to the policy's key: no Redis key starts with a control
 * character, so a lease never meets the local engine's own records. */
#define RLAAS_GRANT_KEY_PREFIX     "\001lease:"
#define RLAAS_GRANT_KEY_PREFIX_LEN 7

/* The policy a request spends from: a record made for other settings (the
 * configuration changed) is not spent from. */
typedef struct {
    int strategy;
    int64_t limit;
    int64_t window_ms;
    int64_t cost; /* >= 1 */
    /* RLaaSLease auto: a portion only for an identity whose pace makes
     * one pay off (QUIET otherwise) */
    int adaptive;
} rlaas_grant_ask_t;

/* The record's value. */
typedef struct {
    int64_t strategy, limit, window_ms;
    int64_t units;         /* left to spend */
    int64_t expire_us;     /* the lease lapses then (rlaas_clock_us) */
    int64_t fetch_us;      /* a lease being fetched since then; 0: none */
    int64_t want;          /* what the last fetch asked for */
    int64_t granted;       /* units of the current lease, merged ones too */
    int64_t spent;         /* of them, spent (the fetching request's too) */
    int64_t redis_left;    /* what Redis had left after the last grant */
    int64_t reset_at_us;   /* Redis' whole quota back, as it said then */
    int64_t quiet_us;      /* no early fetch before then (Redis refused) */
    int64_t window_end_us; /* fixed, sliding: the grant's window ends */
    int64_t granted_us;    /* when the current lease was asked for */
    int64_t lease_us;      /* how long its portions last */
    int64_t seen_us;       /* the identity's last request here */
    int64_t charged_ms;    /* Redis' time the oldest units held were
                              charged at, as the lease script said */
    int64_t charged_us;    /* when the fetch that charged them was sent:
                              no later than that charge */
} rlaas_grant_rec_t;

typedef enum {
    RLAAS_GRANT_SPENT = 0, /* decided from the lease: no round trip */
    RLAAS_GRANT_FETCH,     /* take a lease of *want units (one EVALSHA) */
    RLAAS_GRANT_PLAIN,     /* a fetch is in flight: an ordinary call */
    /* adaptive, an identity too quiet for a portion to pay off (no request
     * before this one within a lease's time, nothing held): an ordinary
     * call, its request noted */
    RLAAS_GRANT_QUIET
} rlaas_grant_e;

/* Units of a lease that lapsed unspent, which the next fetch gives back
 * (lua/lease.lua credits them before it decides): how many (0: none),
 * and when Redis charged them, by its own clock. */
typedef struct {
    int64_t units;
    int64_t at_ms; /* Redis' time they were charged at (the oldest) */
} rlaas_grant_back_t;

/* Where a request spent from: the record's oldest charge then, by Redis'
 * clock and by this server's (no later than the charge of the units
 * spent); at_ms 0: not from a portion. */
typedef struct {
    int64_t at_ms;
    int64_t at_us;
} rlaas_grant_from_t;

/* ---- the arithmetic, on a record in hand ---- */

/* A request's turn at record g (have: 0 if there is none yet; it is then
 * made). SPENT: its cost came off the units, v says so; FETCH: g is
 * marked being fetched and *want is what to ask for; where the lease ran
 * out of time with units left, they leave the record for *back (NULL:
 * they lapse, seen by the next store); QUIET (a->adaptive): no portion
 * for this one. spend_only: never FETCH (PLAIN instead). */
rlaas_grant_e rlaas_grant_take(rlaas_grant_rec_t *g, int have,
                               const rlaas_grant_ask_t *a, int64_t now_us,
                               int spend_only, int64_t *want,
                               rlaas_grant_back_t *back, rlaas_verdict_t *v);

/* What Redis answered a fetch sent at sent_us: granted units (the
 * request's cost included; 0: none, a denial or a failure) for lease_ms
 * ms; window_left_ms: for fixed and sliding, the grant's window ends then
 * (0: no windows); charged_ms: Redis' time it was charged at; v: the
 * request's verdict. Units left of a lease still
 * running join the new one and its expiry, except those of another window
 * (fixed, sliding), which lapse: a window's units are spent in it.
 * Returns the units that lapsed unspent and are seen now (an expired
 * lease's, another window's, another configuration's): an identity that
 * never comes back is not seen. */
int64_t rlaas_grant_store(rlaas_grant_rec_t *g, const rlaas_grant_ask_t *a,
                          int64_t sent_us, int64_t granted, int64_t lease_ms,
                          int64_t window_left_ms, int64_t charged_ms,
                          const rlaas_verdict_t *v);

/* A unit spent from record g (from: as rlaas_grant_spend said then) goes
 * back into it at now_us, its cost again to spend here or to give back
 * with the next portion (RLaaSCountIf's refund), if g is still of a's
 * settings, its lease still running, and it holds nothing charged later
 * than the spent units were, by Redis' clock or this server's: then
 * their give-back is never aged less than it is. Returns 1 if it went
 * back, 0 if the refund is Redis' to make. */
int rlaas_grant_unspend_rec(rlaas_grant_rec_t *g, int have,
                            const rlaas_grant_ask_t *a,
                            const rlaas_grant_from_t *from, int64_t now_us);

/* What a request decided from the lease is told: allowed; remaining, the
 * units this server holds and what Redis had left at the grant; reset,
 * as Redis said at the grant. */
void rlaas_grant_verdict(const rlaas_grant_rec_t *g, int64_t now_us,
                         rlaas_verdict_t *v);

/* What lua/lease.lua grants of want when `remaining` units are left and
 * the request costs cost (the same arithmetic, for the tests): min(want,
 * max(cost, remaining / 8)), never above remaining; 0 if cost > remaining. */
int64_t rlaas_grant_portion(int64_t remaining, int64_t cost, int64_t want);

/* How long lua/lease.lua's lease lasts: min(window / 10, 1 s), at least
 * 1 ms, and for fixed and sliding no longer than the window's rest
 * (window_left_ms; -1: no such bound). */
int64_t rlaas_grant_lease_ms(int64_t window_ms, int64_t window_left_ms);

/* ---- in the table ---- */

/* A request's turn at key's record (rlaas_grant_take under the stripe's
 * lock). now_ms: the wall clock the table keeps time by; now_us: the
 * monotonic one leases are timed by. Anything but RLAAS_TABLE_OK: the
 * request is decided as if there were no lease. */
rlaas_table_rc_e
rlaas_grant_spend(rlaas_table_t *t, const char *key, size_t klen,
                  const rlaas_grant_ask_t *a, int64_t now_ms, int64_t now_us,
                  int64_t lock_wait_us, int spend_only, rlaas_grant_e *out,
                  int64_t *want, rlaas_grant_back_t *back,
                  rlaas_grant_from_t *from, rlaas_verdict_t *v);

/* rlaas_grant_unspend_rec on key's record: RLAAS_TABLE_OK if the unit
 * went back into it; anything else, the refund is Redis' to make (no such
 * record, another one since, the table busy). */
rlaas_table_rc_e rlaas_grant_unspend(rlaas_table_t *t, const char *key,
                                     size_t klen, const rlaas_grant_ask_t *a,
                                     const rlaas_grant_from_t *from,
                                     int64_t now_ms, int64_t now_us,
                                     int64_t lock_wait_us);

/* A fetch's answer into key's record (rlaas_grant_store under the lock);
 * a failed fetch stores granted 0, which ends the fetch. *lapsed (if not
 * NULL): what rlaas_grant_store says lapsed. */
rlaas_table_rc_e rlaas_grant_put(rlaas_table_t *t, const char *key, size_t klen,
                                 const rlaas_grant_ask_t *a, int64_t now_ms,
                                 int64_t sent_us, int64_t granted,
                                 int64_t lease_ms, int64_t window_left_ms,
                                 int64_t charged_ms, const rlaas_verdict_t *v,
                                 int64_t lock_wait_us, int64_t *lapsed);

#endif
