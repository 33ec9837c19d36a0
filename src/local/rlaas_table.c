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

#define MAGIC 0x726c6c74u /* "rllt" */
/* 2: records know their zone and how much they limit; 16-bit chunk
 * numbers; 3: records any zone may take (cache); 4: keys placed and
 * zones hashed by SipHash-1-3 (a table of 3 has them elsewhere); 5:
 * stripes note whether they may hold a cached record (may_cache) */
#define VERSION 5u

#define CHUNK     64
#define HEAD_DATA 24 /* bytes of key and value in a record's first chunk */
#define CONT_DATA 62 /* ... and in each chunk after it */
#define NIL       0u /* chunk numbers start at 1 */

/* Each stripe aims at this much memory: enough locks that the threads of
 * a server seldom meet on one, and few enough records in each (about a
 * thousand chunks) that making room, which may look at all of them, stays
 * cheap. A stripe holds at most CHUNKS_MAX chunks: their numbers fit 16
 * bits. */
#define STRIPE_TARGET (64 * 1024)
#define STRIPES_MAX   65536
#define CHUNKS_MAX    65535

#define ALIGN_UP(x, a) (((x) + (a)-1) / (a) * (a))

typedef uint16_t cno_t; /* a chunk number */

/* A record's first chunk. Chunk numbers are 1-based offsets into the
 * stripe's chunks, never pointers: each process may map the memory at its
 * own address. */
typedef struct {
    cno_t next;            /* the record's next chunk; NIL: the last */
    cno_t bnext;           /* the next record in the bucket */
    cno_t newer;           /* LRU neighbours: used more recently ... */
    cno_t older;           /* ... and less recently */
    uint32_t tag;          /* the key's hash bits: most mismatches end here */
    uint32_t zone;         /* the hash of the key's zone part */
    uint16_t klen;         /* the key's bytes come first, */
    uint16_t vlen;         /* then the value's */
    uint32_t ban : 1;      /* a ban's record */
    uint32_t refusing : 1; /* it refuses its identity until ... */
    uint32_t cache : 1;    /* any zone's newcomer may take it */
    uint32_t gap_s : 29;   /* ... this many seconds before its expiry */
    int64_t expire;        /* ms; the record is gone once the clock passed it */
    int64_t stamp; /* the table's clock high-water when it was written */
    unsigned char data[HEAD_DATA];
} rec_t;

typedef struct {
    cno_t next;
    unsigned char data[CONT_DATA];
} cont_t;

typedef union {
    rec_t r;
    cont_t c;
} chunk_t;

typedef char rec_is_a_chunk[sizeof(rec_t) == CHUNK ? 1 : -1];
typedef char cont_is_a_chunk[sizeof(cont_t) == CHUNK ? 1 : -1];

#define GAP_MAX ((1u << 29) - 1)

typedef struct {
    pthread_mutex_t mu;
    uint32_t nbuckets;
    uint32_t nchunks;
    uint32_t hwm;    /* chunks 1..hwm have been handed out before */
    cno_t free_head; /* chunks given back, linked by next */
    cno_t newest;    /* LRU ends */
    cno_t oldest;
    /* the record whose key or value is being written: a holder that died
     * meanwhile may have left it half written */
    cno_t writing;
    /* 0: no record is marked cache (a walk found none since one was
     * last written): making room need not look for one */
    uint16_t may_cache;
    /* no record expires before this (a lower bound): until the clock
     * passes it, making room need not look for expired records */
    int64_t low;
    /* counters, read without the lock by rlaas_table_stats */
    uint32_t records;
    uint32_t used;
    uint64_t evictions;
    uint64_t limiting;
    uint64_t full;
    uint64_t expired;
    uint64_t resets;
    uint64_t lost;
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
void (*rlaas_table_test_hook)(rlaas_table_at_e at);
#define TEST_HOOK(at)                                                          \
    do {                                                                       \
        if (rlaas_table_test_hook != NULL)                                     \
            rlaas_table_test_hook(RLAAS_TABLE_AT_##at);                        \
    } while (0)
#else
#define TEST_HOOK(at)
#endif

/* The counters' writers hold the lock; their readers don't. */
#define STORE(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define LOAD(field)     __atomic_load_n(&(field), __ATOMIC_RELAXED)
#define BUMP(field, n)  STORE(field, (field) + (n))

/* ---- layout ---- */

static stripe_t *stripe_at(const rlaas_table_t *t, uint32_t i)
{
    return (stripe_t *)((char *)t + TABLE_HDR + (size_t)i * t->stripe_bytes);
}

static cno_t *buckets_of(const rlaas_table_t *t, stripe_t *s)
{
    return (cno_t *)((char *)s + t->buckets_off);
}

static chunk_t *chunk_at(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    return (chunk_t *)((char *)s + t->chunks_off) + (n - 1);
}

static rec_t *rec(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    return &chunk_at(t, s, n)->r;
}

static uint32_t chunks_for(size_t bytes)
{
    return bytes <= HEAD_DATA
               ? 1
               : 1 + (uint32_t)((bytes - HEAD_DATA + CONT_DATA - 1) /
                                CONT_DATA);
}

static uint32_t rec_chunks(const rec_t *r)
{
    return chunks_for((size_t)r->klen + r->vlen);
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

    n = rest * 2 / (2 * CHUNK + sizeof(cno_t));
    b = n / 2 > 0 ? n / 2 : 1;
    n = (rest - ALIGN_UP(b * sizeof(cno_t), CHUNK)) / CHUNK;
    if (n > CHUNKS_MAX)
        n = CHUNKS_MAX; /* the rest of the stripe unused */
    if (n < chunks_for(RLAAS_TABLE_KEY_MAX + RLAAS_TABLE_VALUE_MAX))
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
           ALIGN_UP(need * sizeof(cno_t), CHUNK) + need * CHUNK;
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
        memset(buckets_of(t, s), 0, (size_t)nbuckets * sizeof(cno_t));
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

rlaas_table_t *rlaas_table_attach(void *mem, size_t bytes, int *other_layout)
{
    rlaas_table_t *t = aligned(mem, &bytes);
    int other = t != NULL && t->magic == MAGIC && t->version != VERSION;

    if (other_layout != NULL)
        *other_layout = other;
    if (t == NULL || t->magic != MAGIC || other || t->bytes != bytes)
        return NULL;
    return t;
}

/* ---- a stripe's lists, its lock held ---- */

static uint32_t free_chunks(const stripe_t *s)
{
    return s->nchunks - s->used;
}

static cno_t alloc_chunk(const rlaas_table_t *t, stripe_t *s)
{
    cno_t n = s->free_head;

    if (n != NIL)
        s->free_head = chunk_at(t, s, n)->c.next;
    else if (s->hwm < s->nchunks)
        n = (cno_t)++s->hwm; /* never handed out: no page touched before */
    else
        return NIL;
    chunk_at(t, s, n)->c.next = NIL;
    BUMP(s->used, 1);
    return n;
}

static void free_chain(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    while (n != NIL) {
        chunk_t *ch = chunk_at(t, s, n);
        cno_t next = ch->c.next;

        ch->c.next = s->free_head;
        s->free_head = n;
        BUMP(s->used, -1);
        n = next;
    }
}

static void lru_unlink(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    rec_t *r = rec(t, s, n);

    if (r->newer != NIL)
        rec(t, s, r->newer)->older = r->older;
    else
        s->newest = r->older;
    if (r->older != NIL)
        rec(t, s, r->older)->newer = r->newer;
    else
        s->oldest = r->newer;
    r->newer = r->older = NIL;
}

static void lru_push(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    rec_t *r = rec(t, s, n);

    r->newer = NIL;
    r->older = s->newest;
    if (s->newest != NIL)
        rec(t, s, s->newest)->newer = n;
    s->newest = n;
    if (s->oldest == NIL)
        s->oldest = n;
}

/* Record n becomes the most recently used. Two steps: a holder dying
 * between them leaves n out of the list, which the repair puts back. */
static void touch(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    if (s->newest == n)
        return;
    lru_unlink(t, s, n);
    TEST_HOOK(LRU);
    lru_push(t, s, n);
}

static cno_t *bucket_for(const rlaas_table_t *t, stripe_t *s, uint32_t tag)
{
    return &buckets_of(t, s)[tag % s->nbuckets];
}

/* Takes record n out of its bucket first (one store: from then on it is
 * no record, whatever a dying holder leaves), then out of the list, and
 * gives its chunks back. */
static void drop(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    cno_t *link = bucket_for(t, s, rec(t, s, n)->tag);

    while (*link != n)
        link = &rec(t, s, *link)->bnext;
    *link = rec(t, s, n)->bnext;
    TEST_HOOK(DROP);
    lru_unlink(t, s, n);
    free_chain(t, s, n);
    BUMP(s->records, -1);
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

/* How much a record limits, in the order they are evicted: no one (its
 * state is as good as none), no one either but it saves work (a cache's,
 * taken by any zone), its identity partly, its identity wholly (refused
 * until some time), and a live ban's record (never evicted). */
typedef enum { IDLE, CACHED, USED, LIMITING, BANNED } class_e;

static int64_t until_of(const rec_t *r)
{
    return r->expire - (int64_t)r->gap_s * 1000;
}

static class_e class_of(const rec_t *r, const when_t *w)
{
    if (gone(r, w))
        return IDLE;
    if (r->cache)
        return CACHED;
    if (r->refusing && w->now < until_of(r))
        return r->ban ? BANNED : LIMITING;
    return USED;
}

/* What the update said of the record's life: the time it refuses its
 * identity until, kept as whole seconds before its expiry, rounded so
 * that it is never earlier. */
static void set_life(rec_t *r, const rlaas_table_life_t *life, int64_t now)
{
    int64_t gap = life->refuse_ms > 0 && life->refuse_ms < r->expire - now
                      ? (r->expire - now - life->refuse_ms) / 1000
                      : 0;

    r->ban = life->ban != 0;
    r->refusing = life->refuse_ms > 0;
    r->cache = life->cache != 0;
    r->gap_s = gap > GAP_MAX ? GAP_MAX : (uint32_t)gap;
}

static void drop_counted(const rlaas_table_t *t, stripe_t *s, cno_t n,
                         class_e c, rlaas_table_report_t *rep)
{
    if (c == IDLE)
        BUMP(s->expired, 1);
    else {
        BUMP(s->evictions, 1);
        rep->evicted++;
    }
    if (c == LIMITING) {
        BUMP(s->limiting, 1);
        rep->limiting++;
    }
    drop(t, s, n);
}

/* Drops expired records, least recently used first, until want chunks
 * are free. Having looked at every record, it knows the earliest expiry
 * left: until the clock passes it, there is nothing to look for. */
static void drop_expired(const rlaas_table_t *t, stripe_t *s, uint32_t want,
                         const when_t *w, rlaas_table_report_t *rep)
{
    cno_t n = s->oldest;
    int64_t low = INT64_MAX;

    /* gone needs high past the expiry */
    if (s->low >= w->high)
        return;
    while (n != NIL && free_chunks(s) < want) {
        rec_t *r = rec(t, s, n);
        cno_t next = r->newer;

        if (gone(r, w))
            drop_counted(t, s, n, IDLE, rep);
        else if (r->expire < low)
            low = r->expire;
        n = next;
    }
    if (n == NIL)
        s->low = low;
}

/* A record of zone makes room for itself: want chunks free, never taking
 * record keep. Expired records of any zone go first, then any zone's
 * cached ones; then the zone's own partly used records, then its own
 * records that still refuse their identity, least recently used first in
 * each class. A live ban, and
 * another zone's record that still limits anyone, stay: if what may go
 * is not enough, nothing does and -1 says the record has no room. */
#define VICTIMS_MAX 1024
static int make_room(const rlaas_table_t *t, stripe_t *s, uint32_t want,
                     cno_t keep, uint32_t zone, const when_t *w,
                     rlaas_table_report_t *rep)
{
    cno_t v[VICTIMS_MAX], n;
    uint32_t need, got = 0;
    int nv = 0, i;
    class_e c;

    if (free_chunks(s) >= want)
        return 0;
    drop_expired(t, s, want, w, rep);
    if (free_chunks(s) >= want)
        return 0;
    need = want - free_chunks(s);
    for (c = CACHED; c <= LIMITING && got < need; c++) {
        int marked = 0;

        /* the cached pass walks the whole stripe when it finds too few,
         * as it does where no lease is taken */
        if (c == CACHED && !s->may_cache)
            continue;
        for (n = s->oldest; n != NIL && got < need; n = rec(t, s, n)->newer) {
            rec_t *r = rec(t, s, n);

            marked |= r->cache;
            /* the cheap tests first: only a record marked cache is of
             * that class, only the zone's own of the others */
            if (n == keep || (c == CACHED ? !r->cache : r->zone != zone) ||
                class_of(r, w) != c)
                continue;
            if (nv == VICTIMS_MAX)
                return -1;
            v[nv++] = n;
            got += rec_chunks(r);
        }
        /* every record seen, none marked: the next need not look */
        if (c == CACHED && n == NIL && !marked)
            s->may_cache = 0;
    }
    if (got < need)
        return -1;
    for (i = 0; i < nv; i++)
        drop_counted(t, s, v[i], class_of(rec(t, s, v[i]), w), rep);
    return 0;
}

/* ---- a record's bytes: the key, then the value, across its chunks ---- */

typedef enum { IO_READ, IO_WRITE, IO_EQUAL } io_e;

/* A place in a record's bytes: data, in chunk ch, with left bytes of the
 * chunk after it. left may be 0: the next chunk is looked up only when a
 * byte past it is wanted, so a place at the key's end stays good while
 * the record's chain grows or shrinks behind it. */
typedef struct {
    chunk_t *ch;
    unsigned char *data;
    size_t left;
} place_t;

static place_t place_of(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    chunk_t *ch = chunk_at(t, s, n);
    place_t at = {ch, ch->r.data, HEAD_DATA};

    return at;
}

/* Reads, writes or compares len bytes at place at, which moves past them;
 * for IO_EQUAL, returns 1 if they equal buf (at is then left anywhere).
 * Inlined where op is known, the place in locals: an update's three walks
 * of its record were a tenth of its instructions as calls (callgrind). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline int
place_io(const rlaas_table_t *t, stripe_t *s, place_t *at, void *buf,
         size_t len, io_e op)
{
    unsigned char *p = buf, *data = at->data;
    chunk_t *ch = at->ch;
    size_t left = at->left;

    while (len > 0) {
        size_t k;

        if (left == 0) {
            ch = chunk_at(t, s, ch->c.next);
            data = ch->c.data;
            left = CONT_DATA;
        }
        k = left < len ? left : len;
        /* a whole chunk's bytes, a constant size, are copied inline: a
         * sliding log's value spans hundreds of chunks */
        if (op == IO_READ && k == CONT_DATA)
            memcpy(p, data, CONT_DATA);
        else if (op == IO_READ)
            memcpy(p, data, k);
        else if (op == IO_WRITE && k == CONT_DATA)
            memcpy(data, p, CONT_DATA);
        else if (op == IO_WRITE)
            memcpy(data, p, k);
        else if (memcmp(data, p, k) != 0)
            return 0;
        p += k;
        len -= k;
        data += k;
        left -= k;
    }
    at->ch = ch;
    at->data = data;
    at->left = left;
    return 1;
}

/* Reads, writes or compares len bytes at offset off of record n; for
 * IO_EQUAL, returns 1 if they equal buf. */
static int record_io(const rlaas_table_t *t, stripe_t *s, cno_t n, size_t off,
                     void *buf, size_t len, io_e op)
{
    place_t at = place_of(t, s, n);

    /* whole chunks skipped; a place at a chunk's end is left there */
    while (off > at.left) {
        off -= at.left;
        at.ch = chunk_at(t, s, at.ch->c.next);
        at.data = at.ch->c.data;
        at.left = CONT_DATA;
    }
    at.data += off;
    at.left -= off;
    return place_io(t, s, &at, buf, len, op);
}

static uint32_t chain_length(const rlaas_table_t *t, stripe_t *s, cno_t n)
{
    uint32_t k = 0;

    for (; n != NIL; n = chunk_at(t, s, n)->c.next)
        k++;
    return k;
}

/* Makes record n exactly want chunks long. 0, or -1 without room. A chain
 * is cut before its tail is given back, and grown by chunks linked once
 * taken: a holder dying on the way leaves a chain as long as the record
 * needs or longer, never one pointing into free chunks. */
static int resize(const rlaas_table_t *t, stripe_t *s, cno_t n, uint32_t want,
                  const when_t *w, rlaas_table_report_t *rep)
{
    uint32_t have = chain_length(t, s, n), k;
    cno_t last = n;

    for (k = 1; k < want && k < have; k++)
        last = chunk_at(t, s, last)->c.next;
    if (want <= have) {
        cno_t tail = chunk_at(t, s, last)->c.next;

        chunk_at(t, s, last)->c.next = NIL;
        free_chain(t, s, tail);
        return 0;
    }
    if (make_room(t, s, want - have, n, rec(t, s, n)->zone, w, rep) != 0)
        return -1;
    for (; k < want; k++) {
        cno_t c = alloc_chunk(t, s);

        chunk_at(t, s, last)->c.next = c;
        last = c;
    }
    return 0;
}

/* A new record of zone, linked at the head of its bucket and as the
 * newest, its key written (*val: the key's end); NIL if it has no
 * room. */
static cno_t insert(const rlaas_table_t *t, stripe_t *s, uint32_t tag,
                    uint32_t zone, const char *key, size_t klen, uint32_t want,
                    const when_t *w, rlaas_table_report_t *rep, place_t *val)
{
    cno_t n, *bucket;
    rec_t *r;

    if (make_room(t, s, want, NIL, zone, w, rep) != 0)
        return NIL;
    n = alloc_chunk(t, s);
    s->writing = n;
    r = rec(t, s, n);
    r->tag = tag;
    r->zone = zone;
    r->klen = (uint16_t)klen;
    r->vlen = 0;
    r->ban = r->refusing = r->cache = 0;
    r->gap_s = 0;
    r->expire = w->now;
    r->stamp = w->high;
    bucket = bucket_for(t, s, tag);
    r->bnext = *bucket;
    *bucket = n;
    lru_push(t, s, n);
    BUMP(s->records, 1);
    resize(t, s, n, want, w, rep); /* the room was made above */
    *val = place_of(t, s, n);
    place_io(t, s, val, (void *)key, klen, IO_WRITE);
    return n;
}

/* Writes a record's value at at, its key's end (a test dies half way
 * through). */
static void write_value(const rlaas_table_t *t, stripe_t *s, place_t *at,
                        unsigned char *val, size_t vlen)
{
#ifdef RLAAS_TABLE_TESTING
    place_io(t, s, at, val, vlen / 2, IO_WRITE);
    TEST_HOOK(VALUE);
    place_io(t, s, at, val + vlen / 2, vlen - vlen / 2, IO_WRITE);
#else
    place_io(t, s, at, val, vlen, IO_WRITE);
#endif
}

/* The live record of key, or NIL; expired records met on the way are
 * dropped. *val: the found record's key's end, where its value starts
 * (the key compared is not walked again to read or write it). Inline: it
 * is most of an update's work. */
static inline cno_t find(const rlaas_table_t *t, stripe_t *s, uint32_t tag,
                         const char *key, size_t klen, const when_t *w,
                         rlaas_table_report_t *rep, place_t *val)
{
    cno_t n = *bucket_for(t, s, tag);

    while (n != NIL) {
        rec_t *r = rec(t, s, n);
        cno_t next = r->bnext;

        if (gone(r, w))
            drop_counted(t, s, n, IDLE, rep);
        else if (r->tag == tag && r->klen == klen) {
            *val = place_of(t, s, n);
            if (place_io(t, s, val, (void *)key, klen, IO_EQUAL))
                return n;
        }
        n = next;
    }
    return NIL;
}

/* ---- repair: after a holder died ---- */

/* What repair knows of each chunk. */
enum { C_FREE, C_CHAIN, C_HEAD, C_LISTED, C_BAD };

/* Whether record n, met in bucket b, is whole: its tag of that bucket,
 * its chunks in range and no other record's, at least as many as its key
 * and value need. Marks them (any beyond are cut off, to be free). */
static int whole(const rlaas_table_t *t, stripe_t *s, cno_t n, uint32_t b,
                 uint32_t hwm, unsigned char *st)
{
    rec_t *r = rec(t, s, n);
    uint32_t need, k;
    cno_t c = n;

    if (r->klen > RLAAS_TABLE_KEY_MAX || r->vlen > RLAAS_TABLE_VALUE_MAX ||
        r->tag % s->nbuckets != b)
        return 0;
    need = rec_chunks(r);
    for (k = 0; k < need; k++) {
        if (c == NIL || c > hwm || st[c] != C_FREE)
            break;
        st[c] = C_CHAIN;
        if (k + 1 < need)
            c = chunk_at(t, s, c)->c.next;
    }
    if (k < need) {
        for (c = n; k-- > 0; c = chunk_at(t, s, c)->c.next)
            st[c] = C_FREE;
        return 0;
    }
    chunk_at(t, s, c)->c.next = NIL;
    st[n] = C_HEAD;
    return 1;
}

/* Keeps each bucket's whole records but the one being written; returns
 * how many it dropped (a bucket whose chain broke loses the rest of it:
 * counted as one). */
static uint32_t repair_buckets(const rlaas_table_t *t, stripe_t *s,
                               uint32_t hwm, unsigned char *st, uint32_t *kept)
{
    cno_t *bk = buckets_of(t, s);
    uint32_t b, lost = 0;

    for (b = 0; b < s->nbuckets; b++) {
        cno_t *link = &bk[b];

        while (*link != NIL) {
            cno_t n = *link;

            if (n > hwm || st[n] != C_FREE) {
                *link = NIL;
                lost++;
                break;
            }
            if (n == s->writing || !whole(t, s, n, b, hwm, st)) {
                st[n] = C_BAD; /* met once: no cycle through it */
                *link = rec(t, s, n)->bnext;
                lost++;
                continue;
            }
            (*kept)++;
            link = &rec(t, s, n)->bnext;
        }
    }
    return lost;
}

/* The list rebuilt: the kept records in the order the old list had them,
 * then those it lost (a move cut short: they were in use) as the newest. */
static void repair_list(const rlaas_table_t *t, stripe_t *s, uint32_t hwm,
                        unsigned char *st)
{
    cno_t n = s->oldest;
    uint32_t k;

    s->oldest = s->newest = NIL;
    for (k = 0; n != NIL && n <= hwm && k < hwm; k++) {
        cno_t next = rec(t, s, n)->newer;

        if (st[n] == C_HEAD) {
            st[n] = C_LISTED;
            lru_push(t, s, n);
        }
        n = next;
    }
    for (k = 1; k <= hwm; k++) {
        if (st[k] == C_HEAD) {
            st[k] = C_LISTED;
            lru_push(t, s, (cno_t)k);
        }
    }
}

/* The stripe rebuilt from its buckets after a holder died in it: the
 * records that are whole stay, with their values, but the one whose key
 * or value the dead process was writing; the chunks no record holds are
 * free. */
static void repair(const rlaas_table_t *t, stripe_t *s,
                   rlaas_table_report_t *rep)
{
    uint32_t hwm = s->hwm < s->nchunks ? s->hwm : s->nchunks, kept = 0,
             used = 0;
    unsigned char st[hwm + 1];
    uint32_t lost, k;
    int64_t low = INT64_MAX;

    memset(st, C_FREE, hwm + 1);
    s->hwm = hwm;
    lost = repair_buckets(t, s, hwm, st, &kept);
    repair_list(t, s, hwm, st);
    s->free_head = NIL;
    for (k = hwm; k >= 1; k--) {
        if (st[k] == C_CHAIN || st[k] == C_LISTED) {
            used++;
            if (st[k] == C_LISTED && rec(t, s, (cno_t)k)->expire < low)
                low = rec(t, s, (cno_t)k)->expire;
            continue;
        }
        chunk_at(t, s, (cno_t)k)->c.next = s->free_head;
        s->free_head = (cno_t)k;
    }
    s->writing = NIL;
    s->low = low;
    s->may_cache = 1; /* the kept records' marks are not counted */
    STORE(s->records, kept);
    STORE(s->used, used);
    BUMP(s->resets, 1);
    BUMP(s->lost, lost);
    rep->reset = 1;
    rep->lost += lost;
}

/* ---- the lock ---- */

/* How long a taker may wait, from its first lock that was not free: the
 * clock is read only then, as most locks are free at once. */
typedef struct {
    int64_t wait_us;
    int set; /* at is the deadline */
    struct timespec at;
} deadline_t;

static void deadline_init(deadline_t *d, int64_t wait_us)
{
    d->wait_us = wait_us;
    d->set = 0;
}

/* Takes s's lock: at once if it is free, else waiting until the
 * deadline. Inline: a hold takes one or two on every decision. */
static inline rlaas_table_rc_e lock(const rlaas_table_t *t, stripe_t *s,
                                    deadline_t *d, rlaas_table_report_t *rep)
{
    int rc = pthread_mutex_trylock(&s->mu);

    if (rc == EBUSY) {
        if (!d->set) {
            rlaas_clock_timespec(rlaas_clock_us() + d->wait_us, &d->at);
            d->set = 1;
        }
        rc = pthread_mutex_clocklock(&s->mu, CLOCK_MONOTONIC, &d->at);
    }
    if (rc == EOWNERDEAD) {
        /* its holder died, perhaps half way through a change */
        repair(t, s, rep);
        rc = pthread_mutex_consistent(&s->mu);
    }
    if (rc == 0)
        return RLAAS_TABLE_OK;
    return rc == ETIMEDOUT ? RLAAS_TABLE_BUSY : RLAAS_TABLE_BROKEN;
}

/* ---- one update ---- */

static uint32_t zone_hash(const rlaas_table_t *t, const char *key, size_t zlen)
{
    return (uint32_t)rlaas_siphash13(t->seed, key, zlen);
}

static void no_room(stripe_t *s, rlaas_table_report_t *rep)
{
    BUMP(s->full, 1);
    rep->full++;
}

/* With the stripe locked: the record's value through fn, stored back.
 * Inline: rlaas_table_update_held, its one caller, is every update. */
static inline rlaas_table_rc_e
update_locked(const rlaas_table_t *t, stripe_t *s, uint32_t tag,
              const char *key, size_t klen, size_t zlen, const when_t *w,
              rlaas_table_fn fn, void *baton, rlaas_table_report_t *rep)
{
    unsigned char val[RLAAS_TABLE_VALUE_MAX];
    place_t at = {NULL, NULL, 0}; /* set by find, or by insert */
    cno_t n = find(t, s, tag, key, klen, w, rep, &at);
    rlaas_table_life_t life = {RLAAS_TABLE_TTL_KEEP, 0, 0, 0};
    size_t vlen = 0, was = 0;
    int64_t expire;
    rec_t *r;

    rep->expire = 0;
    if (n != NIL) {
        place_t rd = at;

        vlen = was = rec(t, s, n)->vlen;
        place_io(t, s, &rd, val, vlen, IO_READ);
        rep->expire = rec(t, s, n)->expire;
    }
    rep->vlen = vlen;
    if (fn(baton, val, &vlen, &life) != 0) {
        /* left as it was, but used: a client refused again and again is
         * the last one of its class to evict */
        if (n != NIL)
            touch(t, s, n);
        return RLAAS_TABLE_REFUSED;
    }
    if (vlen > RLAAS_TABLE_VALUE_MAX)
        return RLAAS_TABLE_TOO_BIG;
    expire = life.ttl_ms >= 0 ? w->now + life.ttl_ms
             : n != NIL       ? rec(t, s, n)->expire
                              : w->now;
    TEST_HOOK(CHANGE);
    /* the chain stays as long as its key and value were (the repair
     * and the checks hold it to that): most updates keep the length, and
     * a value of the same size needs no count */
    if (n == NIL)
        n = insert(t, s, tag, zone_hash(t, key, zlen), key, klen,
                   chunks_for(klen + vlen), w, rep, &at);
    else if (vlen != was && chunks_for(klen + vlen) != chunks_for(klen + was) &&
             resize(t, s, n, chunks_for(klen + vlen), w, rep) != 0)
        n = NIL;
    if (n == NIL) {
        no_room(s, rep);
        return RLAAS_TABLE_FULL;
    }
    r = rec(t, s, n);
    s->writing = n;
    write_value(t, s, &at, val, vlen);
    r->vlen = (uint16_t)vlen;
    r->expire = expire;
    r->stamp = w->high;
    if (life.cache)
        s->may_cache = 1; /* before the mark: never a marked record unseen */
    set_life(r, &life, w->now);
    s->writing = NIL;
    if (expire < s->low)
        s->low = expire;
    rep->expire = expire;
    rep->vlen = vlen;
    touch(t, s, n);
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

static void report_init(rlaas_table_report_t *rep)
{
    memset(rep, 0, sizeof(*rep));
}

rlaas_table_rc_e rlaas_table_hold(rlaas_table_t *t, const char *const *keys,
                                  const size_t *klens, const size_t *zlens,
                                  int n, int64_t now_ms, int64_t lock_wait_us,
                                  rlaas_table_hold_t *hd,
                                  rlaas_table_report_t *rep)
{
    deadline_t at;
    int i, j;

    report_init(rep);
    hd->t = t;
    hd->nlocked = 0;
    if (n < 1 || n > RLAAS_TABLE_HOLD_MAX)
        return RLAAS_TABLE_TOO_BIG;
    for (i = 0; i < n; i++) {
        uint32_t st;

        if (klens[i] > RLAAS_TABLE_KEY_MAX)
            return RLAAS_TABLE_TOO_BIG;
        hd->h[i] = rlaas_siphash13(t->seed, keys[i], klens[i]);
        hd->zlen[i] = zlens != NULL && zlens[i] <= klens[i] ? zlens[i] : 0;
        st = (uint32_t)hd->h[i] % t->nstripes;
        /* the stripes in ascending order, each once: two requests that
         * need the same two never wait for each other crosswise */
        for (j = 0; j < hd->nlocked && hd->locked[j] < st; j++)
            ;
        if (j < hd->nlocked && hd->locked[j] == st)
            continue;
        if (j < hd->nlocked)
            memmove(hd->locked + j + 1, hd->locked + j,
                    (size_t)(hd->nlocked - j) * sizeof(uint32_t));
        hd->locked[j] = st;
        hd->nlocked++;
    }
    memset(hd->reserved, 0, sizeof(hd->reserved));
    deadline_init(&at, lock_wait_us);
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

    return update_locked(t, s, (uint32_t)(hd->h[i] >> 32), key, klen,
                         hd->zlen[i], &w, fn, baton, rep);
}

rlaas_table_rc_e rlaas_table_reserve_held(rlaas_table_hold_t *hd, int i,
                                          const char *key, size_t klen,
                                          size_t vlen,
                                          rlaas_table_report_t *rep)
{
    rlaas_table_t *t = hd->t;
    uint32_t st = (uint32_t)hd->h[i] % t->nstripes, want;
    stripe_t *s = stripe_at(t, st);
    when_t w = {hd->now, hd->high};
    place_t at;
    int j;

    if (find(t, s, (uint32_t)(hd->h[i] >> 32), key, klen, &w, rep, &at) != NIL)
        return RLAAS_TABLE_OK;
    for (j = 0; hd->locked[j] != st; j++)
        ;
    want = hd->reserved[j] + chunks_for(klen + vlen);
    if (want > s->nchunks ||
        make_room(t, s, want, NIL, zone_hash(t, key, hd->zlen[i]), &w, rep) !=
            0) {
        no_room(s, rep);
        return RLAAS_TABLE_FULL;
    }
    hd->reserved[j] = want;
    return RLAAS_TABLE_OK;
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
    rc = rlaas_table_hold(t, &key, &klen, NULL, 1, now_ms, lock_wait_us, &hd,
                          rep);
    if (rc != RLAAS_TABLE_OK)
        return rc;
    rc = rlaas_table_update_held(&hd, 0, key, klen, fn, baton, rep);
    rlaas_table_release(&hd);
    return rc;
}

/* ---- the console's list ---- */

/* The live bans of one locked stripe; 0 once fn said stop. */
static int stripe_bans(const rlaas_table_t *t, stripe_t *s, const when_t *w,
                       rlaas_table_each_fn fn, void *baton)
{
    char key[RLAAS_TABLE_KEY_MAX];
    unsigned char val[RLAAS_TABLE_BAN_VALUE_MAX];
    cno_t n;

    for (n = s->newest; n != NIL; n = rec(t, s, n)->older) {
        const rec_t *r = rec(t, s, n);

        if (class_of(r, w) != BANNED || r->vlen > sizeof(val) ||
            r->klen > sizeof(key))
            continue;
        record_io(t, s, n, 0, key, r->klen, IO_READ);
        record_io(t, s, n, r->klen, val, r->vlen, IO_READ);
        if (!fn(baton, key, r->klen, val, r->vlen))
            return 0;
    }
    return 1;
}

rlaas_table_rc_e rlaas_table_bans(rlaas_table_t *t, int64_t now_ms,
                                  int64_t lock_wait_us, rlaas_table_each_fn fn,
                                  void *baton)
{
    rlaas_table_report_t rep; /* a repair on the way: counted in stats */
    deadline_t at;
    int64_t high = __atomic_load_n(&t->high_ms, __ATOMIC_RELAXED);
    /* a listing reads the clock's high-water, it does not move it */
    when_t w = {now_ms, now_ms > high ? now_ms : high};
    uint32_t i;
    int more = 1;

    report_init(&rep);
    deadline_init(&at, lock_wait_us);
    for (i = 0; i < t->nstripes && more; i++) {
        stripe_t *s = stripe_at(t, i);
        rlaas_table_rc_e rc = lock(t, s, &at, &rep);

        if (rc != RLAAS_TABLE_OK)
            return rc;
        more = stripe_bans(t, s, &w, fn, baton);
        pthread_mutex_unlock(&s->mu);
    }
    return RLAAS_TABLE_OK;
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
        st->limiting += LOAD(s->limiting);
        st->full += LOAD(s->full);
        st->expired += LOAD(s->expired);
        st->resets += LOAD(s->resets);
        st->lost += LOAD(s->lost);
    }
}

/* ---- checking a stripe (tests, the fuzzer) ---- */

/* 1 if the chunks of record n are exactly as many as it needs, in range
 * and unmarked; marks them. */
static int chain_ok(const rlaas_table_t *t, stripe_t *s, cno_t n,
                    unsigned char *st)
{
    uint32_t need = rec_chunks(rec(t, s, n)), k = 0;
    cno_t c;

    for (c = n; c != NIL && k < need; c = chunk_at(t, s, c)->c.next, k++) {
        if (c > s->hwm || st[c] != C_FREE)
            return 0;
        st[c] = C_CHAIN;
    }
    return c == NIL && k == need;
}

static int stripe_ok(const rlaas_table_t *t, stripe_t *s, unsigned char *st)
{
    uint32_t b, records = 0, used = 0, listed = 0, k;
    cno_t n, prev = NIL;

    for (b = 0; b < s->nbuckets; b++) {
        for (n = buckets_of(t, s)[b]; n != NIL; n = rec(t, s, n)->bnext) {
            if (n > s->hwm || st[n] != C_FREE ||
                rec(t, s, n)->tag % s->nbuckets != b || !chain_ok(t, s, n, st))
                return 0;
            st[n] = C_HEAD;
            records++;
            used += rec_chunks(rec(t, s, n));
        }
    }
    for (n = s->oldest; n != NIL; prev = n, n = rec(t, s, n)->newer) {
        if (n > s->hwm || st[n] != C_HEAD || rec(t, s, n)->older != prev)
            return 0;
        st[n] = C_LISTED;
        listed++;
    }
    if (listed != records || s->newest != prev)
        return 0;
    for (n = s->free_head, k = 0; n != NIL; n = chunk_at(t, s, n)->c.next) {
        if (n > s->hwm || st[n] != C_FREE)
            return 0;
        st[n] = C_BAD;
        k++;
    }
    return records == s->records && used == s->used && k + used == s->hwm;
}

uint32_t rlaas_table_verify(rlaas_table_t *t)
{
    rlaas_table_report_t rep;
    deadline_t at;
    uint32_t i;

    for (i = 0; i < t->nstripes; i++) {
        stripe_t *s = stripe_at(t, i);
        int ok;

        deadline_init(&at, 1000000);
        if (lock(t, s, &at, &rep) != RLAAS_TABLE_OK)
            return i + 1;
        ok = s->hwm <= s->nchunks && s->writing == NIL;
        if (ok) {
            unsigned char st[s->hwm + 1];

            memset(st, C_FREE, s->hwm + 1);
            ok = stripe_ok(t, s, st);
        }
        pthread_mutex_unlock(&s->mu);
        if (!ok)
            return i + 1;
    }
    return 0;
}
