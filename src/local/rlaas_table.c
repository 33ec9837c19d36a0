#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_mutex_clocklock */
#endif
#include "rlaas_table.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "rlaas_clock.h"
#include "rlaas_siphash.h"

#define MAGIC   0x726c6c74u /* "rllt" */
#define VERSION 1u

#define CHUNK     64
#define HEAD_DATA 24 /* bytes of key and value in a record's first chunk */
#define CONT_DATA 60 /* ... and in each chunk after it */
#define NIL       0u /* chunk numbers start at 1 */

/* Each stripe aims at this much memory, within these bounds on their
 * number: enough locks that the threads of a server seldom meet on one. */
#define STRIPE_TARGET (64 * 1024)
#define STRIPES_MAX   256

#define ALIGN_UP(x, a) (((x) + (a)-1) / (a) * (a))

/* A record's first chunk. Chunk numbers are 1-based offsets into the
 * stripe's chunks, never pointers: each process may map the memory at its
 * own address. */
typedef struct {
    uint32_t next;  /* the record's next chunk; NIL: the last */
    uint32_t bnext; /* the next record in the bucket */
    uint32_t newer; /* LRU neighbours: used more recently ... */
    uint32_t older; /* ... and less recently */
    uint32_t tag;   /* the key's hash bits: most mismatches end here */
    uint16_t klen;  /* the key's bytes come first, */
    uint16_t vlen;  /* then the value's */
    int64_t expire; /* ms; the record is gone once the clock passed it */
    int64_t stamp;  /* the table's clock high-water when it was written */
    unsigned char data[HEAD_DATA];
} rec_t;

typedef struct {
    uint32_t next;
    unsigned char data[CONT_DATA];
} cont_t;

typedef union {
    rec_t r;
    cont_t c;
} chunk_t;

typedef struct {
    pthread_mutex_t mu;
    /* Set while the holder changes the stripe's structure: a holder that
     * died with it set may have left a list half linked. */
    uint32_t dirty;
    uint32_t nbuckets;
    uint32_t nchunks;
    uint32_t hwm;       /* chunks 1..hwm have been handed out before */
    uint32_t free_head; /* chunks given back, linked by next */
    uint32_t newest;    /* LRU ends */
    uint32_t oldest;
    /* counters, read without the lock by rlaas_table_stats */
    uint32_t records;
    uint32_t used;
    uint64_t evictions;
    uint64_t expired;
    uint64_t resets;
} stripe_t;

struct rlaas_table_t {
    uint32_t magic;
    uint32_t version;
    uint64_t bytes;
    uint32_t nstripes;
    uint32_t stripe_bytes;
    uint32_t buckets_off; /* from each stripe's start */
    uint32_t chunks_off;
    uint8_t seed[RLAAS_TABLE_SEED_LEN];
    int64_t high_ms; /* the latest time an update was made at */
};

#define TABLE_HDR  ALIGN_UP(sizeof(rlaas_table_t), CHUNK)
#define STRIPE_HDR ALIGN_UP(sizeof(stripe_t), CHUNK)

#ifdef RLAAS_TABLE_TESTING
void (*rlaas_table_test_hook)(void);
#define TEST_HOOK()                                                            \
    do {                                                                       \
        if (rlaas_table_test_hook != NULL)                                     \
            rlaas_table_test_hook();                                           \
    } while (0)
#else
#define TEST_HOOK()
#endif

/* The counters' writers hold the lock; their readers don't. */
#define STORE(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define LOAD(field)     __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* ---- layout ---- */

static stripe_t *stripe_at(const rlaas_table_t *t, uint32_t i)
{
    return (stripe_t *)((char *)t + TABLE_HDR + (size_t)i * t->stripe_bytes);
}

static uint32_t *buckets_of(const rlaas_table_t *t, stripe_t *s)
{
    return (uint32_t *)((char *)s + t->buckets_off);
}

static chunk_t *chunk_at(const rlaas_table_t *t, stripe_t *s, uint32_t n)
{
    return (chunk_t *)((char *)s + t->chunks_off) + (n - 1);
}

static uint32_t chunks_for(size_t bytes)
{
    return bytes <= HEAD_DATA
               ? 1
               : 1 + (uint32_t)((bytes - HEAD_DATA + CONT_DATA - 1) /
                                CONT_DATA);
}

size_t rlaas_table_record_bytes(size_t klen, size_t vlen)
{
    return (size_t)chunks_for(klen + vlen) * CHUNK;
}

/* Chunks a stripe of this size holds, with one bucket per two chunks
 * (a record takes two chunks or more); 0 if fewer than the largest record
 * needs, so that any record fits once the others are evicted. */
static uint32_t stripe_chunks(size_t stripe_bytes, uint32_t *nbuckets)
{
    size_t rest = stripe_bytes - STRIPE_HDR, n, b;

    n = rest * 2 / (2 * CHUNK + sizeof(uint32_t));
    b = n / 2 > 0 ? n / 2 : 1;
    n = (rest - ALIGN_UP(b * sizeof(uint32_t), CHUNK)) / CHUNK;
    if (n < chunks_for(RLAAS_TABLE_KEY_MAX + RLAAS_TABLE_VALUE_MAX) ||
        n > UINT32_MAX / 2)
        return 0;
    *nbuckets = (uint32_t)b;
    return (uint32_t)n;
}

size_t rlaas_table_min_bytes(void)
{
    size_t need = chunks_for(RLAAS_TABLE_KEY_MAX + RLAAS_TABLE_VALUE_MAX);

    /* alignment slack, the header, one stripe: its header, buckets and
     * chunks */
    return CHUNK + TABLE_HDR + STRIPE_HDR +
           ALIGN_UP(need * sizeof(uint32_t), CHUNK) + need * CHUNK;
}

static rlaas_table_t *aligned(void *mem, size_t *bytes)
{
    uintptr_t a = ALIGN_UP((uintptr_t)mem, CHUNK);
    size_t skip = a - (uintptr_t)mem;

    if (*bytes < skip + TABLE_HDR)
        return NULL;
    *bytes -= skip;
    return (rlaas_table_t *)a;
}

static int init_lock(pthread_mutex_t *mu)
{
    pthread_mutexattr_t at;
    int rc;

    if (pthread_mutexattr_init(&at) != 0)
        return -1;
    rc = pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED) |
         pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST) |
         pthread_mutex_init(mu, &at);
    pthread_mutexattr_destroy(&at);
    return rc == 0 ? 0 : -1;
}

rlaas_table_t *rlaas_table_init(void *mem, size_t bytes,
                                const uint8_t seed[RLAAS_TABLE_SEED_LEN])
{
    rlaas_table_t *t = aligned(mem, &bytes);
    size_t nst, sb;
    uint32_t nchunks, nbuckets = 0, i;

    if (t == NULL || bytes < rlaas_table_min_bytes() - CHUNK)
        return NULL;
    nst = (bytes - TABLE_HDR) / STRIPE_TARGET;
    nst = nst < 1 ? 1 : nst > STRIPES_MAX ? STRIPES_MAX : nst;
    sb = (bytes - TABLE_HDR) / nst / CHUNK * CHUNK;
    if (sb > UINT32_MAX || (nchunks = stripe_chunks(sb, &nbuckets)) == 0)
        return NULL;
    memset(t, 0, TABLE_HDR);
    t->bytes = bytes;
    t->nstripes = (uint32_t)nst;
    t->stripe_bytes = (uint32_t)sb;
    t->buckets_off = STRIPE_HDR;
    t->chunks_off = (uint32_t)(sb - (size_t)nchunks * CHUNK);
    memcpy(t->seed, seed, RLAAS_TABLE_SEED_LEN);
    for (i = 0; i < t->nstripes; i++) {
        stripe_t *s = stripe_at(t, i);

        memset(s, 0, STRIPE_HDR);
        memset(buckets_of(t, s), 0, (size_t)nbuckets * sizeof(uint32_t));
        s->nbuckets = nbuckets;
        s->nchunks = nchunks;
        if (init_lock(&s->mu) != 0)
            return NULL;
    }
    /* last: a table is attachable once it is whole */
    t->version = VERSION;
    t->magic = MAGIC;
    return t;
}

rlaas_table_t *rlaas_table_attach(void *mem, size_t bytes)
{
    rlaas_table_t *t = aligned(mem, &bytes);

    if (t == NULL || t->magic != MAGIC || t->version != VERSION ||
        t->bytes != bytes)
        return NULL;
    return t;
}

/* ---- a stripe's lists, its lock held ---- */

static uint32_t alloc_chunk(const rlaas_table_t *t, stripe_t *s)
{
    uint32_t n = s->free_head;

    if (n != NIL)
        s->free_head = chunk_at(t, s, n)->c.next;
    else if (s->hwm < s->nchunks)
        n = ++s->hwm; /* never handed out: no page touched before now */
    else
        return NIL;
    chunk_at(t, s, n)->c.next = NIL;
    STORE(s->used, s->used + 1);
    return n;
}

static void free_chain(const rlaas_table_t *t, stripe_t *s, uint32_t n)
{
    while (n != NIL) {
        chunk_t *ch = chunk_at(t, s, n);
        uint32_t next = ch->c.next;

        ch->c.next = s->free_head;
        s->free_head = n;
        STORE(s->used, s->used - 1);
        n = next;
    }
}

static void lru_unlink(const rlaas_table_t *t, stripe_t *s, uint32_t n)
{
    rec_t *r = &chunk_at(t, s, n)->r;

    if (r->newer != NIL)
        chunk_at(t, s, r->newer)->r.older = r->older;
    else
        s->newest = r->older;
    if (r->older != NIL)
        chunk_at(t, s, r->older)->r.newer = r->newer;
    else
        s->oldest = r->newer;
    r->newer = r->older = NIL;
}

static void lru_push(const rlaas_table_t *t, stripe_t *s, uint32_t n)
{
    rec_t *r = &chunk_at(t, s, n)->r;

    r->newer = NIL;
    r->older = s->newest;
    if (s->newest != NIL)
        chunk_at(t, s, s->newest)->r.newer = n;
    s->newest = n;
    if (s->oldest == NIL)
        s->oldest = n;
}

static uint32_t *bucket_for(const rlaas_table_t *t, stripe_t *s, uint32_t tag)
{
    return &buckets_of(t, s)[tag % s->nbuckets];
}

/* Takes record n out of its bucket, its LRU list and the stripe. */
static void drop(const rlaas_table_t *t, stripe_t *s, uint32_t n)
{
    uint32_t *link = bucket_for(t, s, chunk_at(t, s, n)->r.tag);

    while (*link != n)
        link = &chunk_at(t, s, *link)->r.bnext;
    *link = chunk_at(t, s, n)->r.bnext;
    lru_unlink(t, s, n);
    free_chain(t, s, n);
    STORE(s->records, s->records - 1);
}

/* The time of an update: its own, and the latest any update was made at.
 * A record is gone once either passed its expiry: a record that expired
 * while the clock was ahead stays gone when it steps back, as Redis will
 * have expired it meanwhile; one written after the step lives its TTL. */
typedef struct {
    int64_t now;
    int64_t high;
} when_t;

static int gone(const rec_t *r, const when_t *w)
{
    return w->now > r->expire || (w->high > r->stamp && w->high > r->expire);
}

static void drop_counted(const rlaas_table_t *t, stripe_t *s, uint32_t n,
                         const when_t *w, rlaas_table_report_t *rep)
{
    if (gone(&chunk_at(t, s, n)->r, w)) {
        STORE(s->expired, s->expired + 1);
    }
    else {
        STORE(s->evictions, s->evictions + 1);
        rep->evicted++;
    }
    drop(t, s, n);
}

/* Frees chunks until want are free: expired or not, the least recently
 * used records go first, never record keep. 0, or -1 if they can't. */
static int make_room(const rlaas_table_t *t, stripe_t *s, uint32_t want,
                     uint32_t keep, const when_t *w, rlaas_table_report_t *rep)
{
    uint32_t victim = s->oldest;

    while (s->nchunks - s->used < want) {
        if (victim == keep && victim != NIL)
            victim = chunk_at(t, s, victim)->r.newer;
        if (victim == NIL)
            return -1;
        {
            uint32_t next = chunk_at(t, s, victim)->r.newer;

            drop_counted(t, s, victim, w, rep);
            victim = next;
        }
    }
    return 0;
}

/* ---- a record's bytes: the key, then the value, across its chunks ---- */

typedef enum { IO_READ, IO_WRITE, IO_EQUAL } io_e;

/* Reads, writes or compares len bytes at offset off of record n; for
 * IO_EQUAL, returns 1 if they equal buf. */
static int record_io(const rlaas_table_t *t, stripe_t *s, uint32_t n,
                     size_t off, void *buf, size_t len, io_e op)
{
    chunk_t *ch = chunk_at(t, s, n);
    unsigned char *data = ch->r.data, *p = buf;
    size_t room = HEAD_DATA;

    while (len > 0) {
        size_t k;

        if (off >= room) {
            off -= room;
            ch = chunk_at(t, s, ch->c.next);
            data = ch->c.data;
            room = CONT_DATA;
            continue;
        }
        k = room - off < len ? room - off : len;
        if (op == IO_READ)
            memcpy(p, data + off, k);
        else if (op == IO_WRITE)
            memcpy(data + off, p, k);
        else if (memcmp(data + off, p, k) != 0)
            return 0;
        p += k;
        len -= k;
        off += k;
    }
    return 1;
}

static uint32_t chain_length(const rlaas_table_t *t, stripe_t *s, uint32_t n)
{
    uint32_t k = 0;

    for (; n != NIL; n = chunk_at(t, s, n)->c.next)
        k++;
    return k;
}

/* Makes record n exactly want chunks long. 0, or -1 without room. */
static int resize(const rlaas_table_t *t, stripe_t *s, uint32_t n,
                  uint32_t want, const when_t *w, rlaas_table_report_t *rep)
{
    uint32_t have = chain_length(t, s, n), last = n, k;

    for (k = 1; k < want && k < have; k++)
        last = chunk_at(t, s, last)->c.next;
    if (want <= have) {
        free_chain(t, s, chunk_at(t, s, last)->c.next);
        chunk_at(t, s, last)->c.next = NIL;
        return 0;
    }
    if (make_room(t, s, want - have, n, w, rep) != 0)
        return -1;
    for (; k < want; k++) {
        uint32_t c = alloc_chunk(t, s);

        chunk_at(t, s, last)->c.next = c;
        last = c;
    }
    return 0;
}

/* A new record, linked at the head of its bucket and as the newest. */
static uint32_t insert(const rlaas_table_t *t, stripe_t *s, uint32_t tag,
                       const char *key, size_t klen, uint32_t want,
                       const when_t *w, rlaas_table_report_t *rep)
{
    uint32_t n, *bucket;
    rec_t *r;

    if (make_room(t, s, want, NIL, w, rep) != 0)
        return NIL;
    n = alloc_chunk(t, s);
    r = &chunk_at(t, s, n)->r;
    r->tag = tag;
    r->klen = (uint16_t)klen;
    r->vlen = 0;
    bucket = bucket_for(t, s, tag);
    r->bnext = *bucket;
    *bucket = n;
    lru_push(t, s, n);
    STORE(s->records, s->records + 1);
    resize(t, s, n, want, w, rep); /* the room was made above */
    record_io(t, s, n, 0, (void *)key, klen, IO_WRITE);
    return n;
}

/* The live record of key, or NIL; expired records met on the way are
 * dropped. */
static uint32_t find(const rlaas_table_t *t, stripe_t *s, uint32_t tag,
                     const char *key, size_t klen, const when_t *w,
                     rlaas_table_report_t *rep)
{
    uint32_t n = *bucket_for(t, s, tag);

    while (n != NIL) {
        rec_t *r = &chunk_at(t, s, n)->r;
        uint32_t next = r->bnext;

        if (gone(r, w)) {
            s->dirty = 1;
            drop_counted(t, s, n, w, rep);
        }
        else if (r->tag == tag && r->klen == klen &&
                 record_io(t, s, n, 0, (void *)key, klen, IO_EQUAL))
            return n;
        n = next;
    }
    return NIL;
}

/* ---- the lock ---- */

/* Empties the stripe: what a process that died changing it left behind
 * can't be trusted. Chunks are handed out afresh from the first. */
static void wipe(const rlaas_table_t *t, stripe_t *s)
{
    memset(buckets_of(t, s), 0, (size_t)s->nbuckets * sizeof(uint32_t));
    s->hwm = 0;
    s->free_head = NIL;
    s->newest = s->oldest = NIL;
    STORE(s->records, 0);
    STORE(s->used, 0);
    STORE(s->resets, s->resets + 1);
    s->dirty = 0;
}

/* Takes s's lock, waiting until the monotonic deadline at. */
static rlaas_table_rc_e lock(const rlaas_table_t *t, stripe_t *s,
                             const struct timespec *at,
                             rlaas_table_report_t *rep)
{
    int rc = pthread_mutex_clocklock(&s->mu, CLOCK_MONOTONIC, at);

    if (rc == EOWNERDEAD) {
        /* its holder died: usable as it is unless it was changing it */
        if (s->dirty) {
            wipe(t, s);
            rep->reset = 1;
        }
        rc = pthread_mutex_consistent(&s->mu);
    }
    if (rc == 0)
        return RLAAS_TABLE_OK;
    return rc == ETIMEDOUT ? RLAAS_TABLE_BUSY : RLAAS_TABLE_BROKEN;
}

/* ---- one update ---- */

/* With the stripe locked: the record's value through fn, stored back. */
static rlaas_table_rc_e update_locked(const rlaas_table_t *t, stripe_t *s,
                                      uint32_t tag, const char *key,
                                      size_t klen, const when_t *w,
                                      rlaas_table_fn fn, void *baton,
                                      rlaas_table_report_t *rep)
{
    unsigned char val[RLAAS_TABLE_VALUE_MAX];
    uint32_t n = find(t, s, tag, key, klen, w, rep), want;
    size_t vlen = 0;
    int64_t ttl = RLAAS_TABLE_TTL_KEEP, expire;

    rep->expire = 0;
    if (n != NIL) {
        vlen = chunk_at(t, s, n)->r.vlen;
        record_io(t, s, n, klen, val, vlen, IO_READ);
        rep->expire = chunk_at(t, s, n)->r.expire;
    }
    rep->vlen = vlen;
    if (fn(baton, val, &vlen, &ttl) != 0) {
        /* left as it was, but used: a client refused again and again is
         * the last one to evict (its state is what refuses it) */
        if (n != NIL) {
            lru_unlink(t, s, n);
            lru_push(t, s, n);
        }
        return RLAAS_TABLE_REFUSED;
    }
    if (vlen > RLAAS_TABLE_VALUE_MAX)
        return RLAAS_TABLE_TOO_BIG;
    want = chunks_for(klen + vlen);
    expire = ttl >= 0   ? w->now + ttl
             : n != NIL ? chunk_at(t, s, n)->r.expire
                        : w->now;
    s->dirty = 1;
    TEST_HOOK();
    if (n == NIL)
        n = insert(t, s, tag, key, klen, want, w, rep);
    else if (resize(t, s, n, want, w, rep) != 0)
        n = NIL;
    if (n == NIL)
        return RLAAS_TABLE_TOO_BIG; /* can't be: a stripe holds any record */
    record_io(t, s, n, klen, val, vlen, IO_WRITE);
    chunk_at(t, s, n)->r.vlen = (uint16_t)vlen;
    chunk_at(t, s, n)->r.expire = expire;
    chunk_at(t, s, n)->r.stamp = w->high;
    rep->expire = expire;
    rep->vlen = vlen;
    lru_unlink(t, s, n);
    lru_push(t, s, n);
    return RLAAS_TABLE_OK;
}

/* Raises the table's high-water to now; returns it. */
static int64_t raise_high(rlaas_table_t *t, int64_t now)
{
    int64_t high = __atomic_load_n(&t->high_ms, __ATOMIC_RELAXED);

    while (now > high &&
           !__atomic_compare_exchange_n(&t->high_ms, &high, now, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    return now > high ? now : high;
}

/* ---- several records at once ---- */

rlaas_table_rc_e rlaas_table_hold(rlaas_table_t *t, const char *const *keys,
                                  const size_t *klens, int n, int64_t now_ms,
                                  int64_t lock_wait_us, rlaas_table_hold_t *hd,
                                  rlaas_table_report_t *rep)
{
    struct timespec at;
    int i, j;

    rep->evicted = 0;
    rep->reset = 0;
    rep->expire = 0;
    rep->vlen = 0;
    hd->t = t;
    hd->nlocked = 0;
    if (n < 1 || n > RLAAS_TABLE_HOLD_MAX)
        return RLAAS_TABLE_TOO_BIG;
    for (i = 0; i < n; i++) {
        uint32_t st;

        if (klens[i] > RLAAS_TABLE_KEY_MAX)
            return RLAAS_TABLE_TOO_BIG;
        hd->h[i] = rlaas_siphash(t->seed, keys[i], klens[i]);
        st = (uint32_t)hd->h[i] % t->nstripes;
        /* the stripes in ascending order, each once: two requests that
         * need the same two never wait for each other crosswise */
        for (j = 0; j < hd->nlocked && hd->locked[j] < st; j++)
            ;
        if (j < hd->nlocked && hd->locked[j] == st)
            continue;
        memmove(hd->locked + j + 1, hd->locked + j,
                (size_t)(hd->nlocked - j) * sizeof(uint32_t));
        hd->locked[j] = st;
        hd->nlocked++;
    }
    rlaas_clock_timespec(rlaas_clock_us() + lock_wait_us, &at);
    for (i = 0; i < hd->nlocked; i++) {
        rlaas_table_rc_e rc = lock(t, stripe_at(t, hd->locked[i]), &at, rep);

        if (rc != RLAAS_TABLE_OK) {
            hd->nlocked = i;
            rlaas_table_release(hd);
            return rc;
        }
    }
    /* after the locks: an update that waited for them sees the times of
     * those it waited behind */
    hd->now = now_ms;
    hd->high = raise_high(t, now_ms);
    return RLAAS_TABLE_OK;
}

rlaas_table_rc_e rlaas_table_update_held(rlaas_table_hold_t *hd, int i,
                                         const char *key, size_t klen,
                                         rlaas_table_fn fn, void *baton,
                                         rlaas_table_report_t *rep)
{
    rlaas_table_t *t = hd->t;
    stripe_t *s = stripe_at(t, (uint32_t)hd->h[i] % t->nstripes);
    when_t w = {hd->now, hd->high};
    rlaas_table_rc_e rc = update_locked(t, s, (uint32_t)(hd->h[i] >> 32), key,
                                        klen, &w, fn, baton, rep);

    s->dirty = 0;
    return rc;
}

void rlaas_table_release(rlaas_table_hold_t *hd)
{
    int i;

    for (i = hd->nlocked - 1; i >= 0; i--)
        pthread_mutex_unlock(&stripe_at(hd->t, hd->locked[i])->mu);
    hd->nlocked = 0;
}

rlaas_table_rc_e rlaas_table_update(rlaas_table_t *t, const char *key,
                                    size_t klen, int64_t now_ms,
                                    int64_t lock_wait_us, rlaas_table_fn fn,
                                    void *baton, rlaas_table_report_t *rep)
{
    rlaas_table_report_t dummy;
    rlaas_table_hold_t hd;
    rlaas_table_rc_e rc;

    if (rep == NULL)
        rep = &dummy;
    rc = rlaas_table_hold(t, &key, &klen, 1, now_ms, lock_wait_us, &hd, rep);
    if (rc != RLAAS_TABLE_OK)
        return rc;
    rc = rlaas_table_update_held(&hd, 0, key, klen, fn, baton, rep);
    rlaas_table_release(&hd);
    return rc;
}

void rlaas_table_stats(const rlaas_table_t *t, rlaas_table_stats_t *st)
{
    uint32_t i;

    memset(st, 0, sizeof(*st));
    st->bytes = t->bytes;
    st->stripes = t->nstripes;
    for (i = 0; i < t->nstripes; i++) {
        stripe_t *s = stripe_at(t, i);

        st->chunks += s->nchunks;
        st->used += LOAD(s->used);
        st->records += LOAD(s->records);
        st->evictions += LOAD(s->evictions);
        st->expired += LOAD(s->expired);
        st->resets += LOAD(s->resets);
    }
}
