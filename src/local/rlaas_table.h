/*
 * The local engine's table: records (a key and a value of a few bytes to
 * a few KB, with a time to live) in one block of memory shared by every
 * process and thread of a server, bounded in size.
 *
 * The memory is cut into stripes of about 64 KB, each with its own lock,
 * hash buckets, least-recently-used list and 64-byte chunks; a key's
 * stripe comes from a hash keyed with a secret, so requests for different
 * identities rarely meet on one lock and no client can aim at one.
 *
 * Each record knows its zone (a keyed hash of the key's zone part) and
 * how much it still limits its identity: it refuses it until a time the
 * update says (an exhausted counter, an empty bucket), and a ban's record
 * is marked as such. A full stripe makes room for a record of zone Z by
 * dropping, least recently used first within each class: any zone's
 * records that no longer limit anyone (expired), then zone Z's records
 * that are merely partly used, then zone Z's records that still refuse
 * their identity. A live ban, and another zone's record that still
 * limits anyone, are never taken: when they fill the stripe, the new
 * record is refused (RLAAS_TABLE_FULL) and nothing is evicted.
 *
 * The locks are process-shared robust mutexes: when a process dies
 * holding one (killed by a signal, a crash), the next to take it finds
 * out and checks the stripe, rebuilding its lists from its hash buckets:
 * records stay, with their counts, except one whose value the dead
 * process was writing, which starts afresh.
 *
 * No httpd or APR headers: the caller makes the memory (shared memory in
 * httpd, plain memory in tests) and passes the time in.
 */
#ifndef RLAAS_TABLE_H
#define RLAAS_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define RLAAS_TABLE_SEED_LEN 16
/* The longest key and value a record may have. */
#define RLAAS_TABLE_KEY_MAX   4224
#define RLAAS_TABLE_VALUE_MAX (17 * 1024)

typedef struct rlaas_table_t rlaas_table_t;

typedef enum {
    RLAAS_TABLE_OK = 0,
    RLAAS_TABLE_BUSY,    /* the stripe's lock was not free in time */
    RLAAS_TABLE_TOO_BIG, /* the key or the value is longer than allowed */
    RLAAS_TABLE_BROKEN,  /* the stripe's lock can't be used any more */
    RLAAS_TABLE_REFUSED, /* the update function refused: nothing written */
    RLAAS_TABLE_FULL     /* no room: what the stripe must keep fills it */
} rlaas_table_rc_e;

/* What one update did besides its own record. */
typedef struct {
    unsigned evicted;  /* live records dropped to make room */
    unsigned limiting; /* ... of which still refused their identity */
    unsigned full;     /* records refused for want of room */
    int reset;         /* a process died changing the stripe: repaired */
    unsigned lost;     /* records the repair dropped (start afresh) */
    int64_t expire;    /* the record's expiry after the update (ms) */
    size_t vlen;       /* its value's length after it (0: none) */
} rlaas_table_report_t;

typedef struct {
    uint64_t bytes;     /* the memory the table lays itself out in */
    uint32_t stripes;   /* number of stripes (locks) */
    uint64_t chunks;    /* 64-byte chunks, all stripes */
    uint64_t used;      /* chunks holding records */
    uint64_t records;   /* records held (expired ones not yet dropped too) */
    uint64_t evictions; /* live records dropped to make room */
    uint64_t limiting;  /* ... of which still refused their identity */
    uint64_t full;      /* records refused for want of room */
    uint64_t expired;   /* expired records dropped */
    uint64_t resets;    /* stripes repaired after a process died in them */
    uint64_t lost;      /* records those repairs dropped */
} rlaas_table_stats_t;

/* How the record lives on after an update, set by the update function:
 * ttl_ms from now (RLAAS_TABLE_TTL_KEEP: as long as it did), and how much
 * it limits its identity: it refuses it for refuse_ms from now (0: it
 * doesn't), and ban says it is a ban's record, never evicted while it
 * refuses. A record refusing nobody is partly used until it expires.
 * cache: it limits no one but saves work (a lease's portion): any zone's
 * newcomer may take it, after the expired records. */
#define RLAAS_TABLE_TTL_KEEP (-1)
typedef struct {
    int64_t ttl_ms;    /* RLAAS_TABLE_TTL_KEEP when called */
    int64_t refuse_ms; /* 0 when called */
    int ban;           /* 0 when called */
    int cache;         /* 0 when called */
} rlaas_table_life_t;

/* The update of one record, called with its stripe locked. val holds the
 * record's value, *len bytes (0: no record, or an expired one); write the
 * new value in place (room for RLAAS_TABLE_VALUE_MAX bytes) and its length
 * into *len, and into *life how it lives on. Return 0 to store, anything
 * else to leave the table as it was. */
typedef int (*rlaas_table_fn)(void *baton, void *val, size_t *len,
                              rlaas_table_life_t *life);

/* The smallest memory a table can be laid out in. */
size_t rlaas_table_min_bytes(void);

/* Lays out an empty table in mem (bytes long, shared between the
 * processes that will use it if any; pages past the headers are first
 * touched when records need them), its stripes' locks process-shared
 * and robust. Returns NULL if the memory is too small or a lock can't be
 * made. */
rlaas_table_t *rlaas_table_init(void *mem, size_t bytes,
                                const uint8_t seed[RLAAS_TABLE_SEED_LEN]);

/* The table rlaas_table_init laid out in the same memory before (a
 * graceful restart), or NULL if that memory holds none of this size and
 * layout; *other_layout (may be NULL) is then set if it holds one of
 * another layout (a module of another version made it). */
rlaas_table_t *rlaas_table_attach(void *mem, size_t bytes, int *other_layout);

/* Runs fn on the record of key at time now_ms (ms), waiting at most
 * lock_wait_us for the stripe's lock. A record is gone once now_ms is past
 * its expiry, or once any update was made at a time past it since it was
 * written (the clock stepped back since: Redis would have expired it in
 * the meantime). rep (may be NULL) tells what else happened. The key's
 * zone is the one of keys naming no zone (a zone length of 0). */
rlaas_table_rc_e rlaas_table_update(rlaas_table_t *t, const char *key,
                                    size_t klen, int64_t now_ms,
                                    int64_t lock_wait_us, rlaas_table_fn fn,
                                    void *baton, rlaas_table_report_t *rep);

/* Several records updated under their stripes' locks held together: what
 * one request's policies need to be decided all or nothing. Hold takes the
 * locks of the n keys' stripes (in ascending order, each once) within one
 * wait of lock_wait_us, from the first that was not free; key i's first
 * zlens[i] bytes name its zone (zlens NULL: none does); update_held updates key
 * i (the same key and length as given to hold), as often as needed;
 * reserve_held makes room for key i's record of vlen bytes if it has none yet,
 * so that the updates after it find room (RLAAS_TABLE_FULL, nothing evicted, if
 * they would not); release lets them go. rep as for rlaas_table_update, counted
 * from hold on (expire and vlen: the last record updated). */
#define RLAAS_TABLE_HOLD_MAX 8
typedef struct {
    rlaas_table_t *t;
    uint64_t h[RLAAS_TABLE_HOLD_MAX];
    size_t zlen[RLAAS_TABLE_HOLD_MAX];
    uint32_t locked[RLAAS_TABLE_HOLD_MAX];   /* stripes held, ascending */
    uint32_t reserved[RLAAS_TABLE_HOLD_MAX]; /* chunks kept free in each */
    int nlocked;
    int64_t now;
    int64_t high;
} rlaas_table_hold_t;

rlaas_table_rc_e rlaas_table_hold(rlaas_table_t *t, const char *const *keys,
                                  const size_t *klens, const size_t *zlens,
                                  int n, int64_t now_ms, int64_t lock_wait_us,
                                  rlaas_table_hold_t *hd,
                                  rlaas_table_report_t *rep);
rlaas_table_rc_e rlaas_table_update_held(rlaas_table_hold_t *hd, int i,
                                         const char *key, size_t klen,
                                         rlaas_table_fn fn, void *baton,
                                         rlaas_table_report_t *rep);
rlaas_table_rc_e rlaas_table_reserve_held(rlaas_table_hold_t *hd, int i,
                                          const char *key, size_t klen,
                                          size_t vlen,
                                          rlaas_table_report_t *rep);
void rlaas_table_release(rlaas_table_hold_t *hd);

/* The console's list of bans: fn gets the key and value of each record
 * marked a ban that still refuses its identity at now_ms (a concurrency
 * limit's record holding slots is marked so too: the caller tells them
 * apart), stripe by stripe, called with the stripe's lock held (it must be
 * quick: the stripe's requests wait); fn returns 0 to stop. RLAAS_TABLE_BUSY
 * when a stripe's lock was not free within lock_wait_us (the stripes before it
 * were walked). */
#define RLAAS_TABLE_BAN_VALUE_MAX 64
typedef int (*rlaas_table_each_fn)(void *baton, const char *key, size_t klen,
                                   const void *val, size_t vlen);
rlaas_table_rc_e rlaas_table_bans(rlaas_table_t *t, int64_t now_ms,
                                  int64_t lock_wait_us, rlaas_table_each_fn fn,
                                  void *baton);

/* A snapshot of the counters, read without taking the locks. */
void rlaas_table_stats(const rlaas_table_t *t, rlaas_table_stats_t *st);

/* Bytes of table memory a record with this key and value takes. */
size_t rlaas_table_record_bytes(size_t klen, size_t vlen);

/* Checks every stripe's structure under its lock (tests, the fuzzer):
 * each record in one bucket and once in its stripe's list, its chunks its
 * own, the others free, the counts right. 0 if all hold, else the number
 * of the first stripe found wrong plus one. */
uint32_t rlaas_table_verify(rlaas_table_t *t);

#ifdef RLAAS_TABLE_TESTING
/* Tests only: called with a stripe locked, where the change is at. */
typedef enum {
    RLAAS_TABLE_AT_CHANGE, /* an update's change has begun, nothing done */
    RLAAS_TABLE_AT_LRU,    /* between the two steps of an LRU move */
    RLAAS_TABLE_AT_VALUE,  /* half of a record's value written */
    RLAAS_TABLE_AT_DROP    /* a record out of its bucket, still listed */
} rlaas_table_at_e;
extern void (*rlaas_table_test_hook)(rlaas_table_at_e at);
#endif

#endif
