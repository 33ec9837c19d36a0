#include "rlaas_tally.h"
#include "rlaas_clock.h"
#include "rlaas_fnv.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <string.h>

#define MAGIC 0x726c7433u /* "rlt3" */

typedef struct {
    int64_t stamp; /* the second (or minute) it counts; 0: none */
    uint32_t allowed;
    uint32_t denied;
} bucket_t;

/* A row's states: free (probing stops there), being claimed, in use, and
 * freed by a new configuration (probing goes on past it; a claim may take
 * it again). */
enum { ROW_FREE = 0, ROW_CLAIMING, ROW_USED, ROW_FREED };

typedef struct {
    uint32_t state;
    uint32_t pad;
    uint64_t host;
    uint64_t hash;         /* of host and name */
    uint64_t taken, given; /* slots held (rlaas_tally_hold) */
    char name[RLAAS_TALLY_NAME_MAX + 1];
    bucket_t sec[RLAAS_TALLY_SECONDS];
    bucket_t min[RLAAS_TALLY_MINUTES];
} row_t;

typedef struct {
    uint64_t hash; /* 0: free */
    int32_t row;
    uint32_t count;
    uint32_t error;
    int64_t last_s;
    char id[RLAAS_TALLY_ID_MAX + 1];
} slot_t;

struct rlaas_tally_t {
    uint32_t magic;
    int32_t rows;
    uint32_t lock; /* the top list's: 0 free, else the holder's pid */
    uint32_t pad;
    slot_t top[RLAAS_TALLY_TOP];
    row_t row[];
};

#define OTHER "other"

size_t rlaas_tally_bytes(int rows)
{
    return sizeof(rlaas_tally_t) +
           (size_t)(rows > 0 ? rows : 0) * sizeof(row_t);
}

rlaas_tally_t *rlaas_tally_init(void *mem, size_t bytes, int rows)
{
    rlaas_tally_t *t = mem;
    row_t *last;

    if (mem == NULL || rows < 2 || bytes < rlaas_tally_bytes(rows))
        return NULL;
    if (t->magic == MAGIC && t->rows == rows)
        return t;
    memset(mem, 0, rlaas_tally_bytes(rows));
    t->rows = rows;
    last = &t->row[rows - 1];
    memcpy(last->name, OTHER, sizeof(OTHER));
    last->state = ROW_USED;
    t->magic = MAGIC;
    return t;
}

int rlaas_tally_rows(const rlaas_tally_t *t)
{
    return t->rows;
}

/* FNV-1a over the host (its bytes from the lowest) and the name as a row
 * keeps it. */
static uint64_t row_hash(uint64_t host, const char *name)
{
    unsigned char b[8];
    int i;

    for (i = 0; i < 8; i++)
        b[i] = (unsigned char)(host >> (8 * i));
    return rlaas_fnv1a(rlaas_fnv1a(RLAAS_TALLY_BASIS, b, sizeof(b)), name,
                       strnlen(name, RLAAS_TALLY_NAME_MAX));
}

static int row_is(const row_t *w, uint64_t host, uint64_t h, const char *name)
{
    return w->hash == h && w->host == host &&
           strncmp(w->name, name, RLAAS_TALLY_NAME_MAX) == 0;
}

/* Takes row k if it is still in state from; -1 if another did. */
static int claim_row(rlaas_tally_t *t, int k, uint32_t from, uint64_t host,
                     uint64_t h, const char *name)
{
    row_t *w = &t->row[k];

    if (!__atomic_compare_exchange_n(&w->state, &from, ROW_CLAIMING, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return -1;
    memset(w->sec, 0, sizeof(w->sec));
    memset(w->min, 0, sizeof(w->min));
    memset(w->name, 0, sizeof(w->name));
    strncpy(w->name, name, RLAAS_TALLY_NAME_MAX);
    __atomic_store_n(&w->taken, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&w->given, 0, __ATOMIC_RELAXED);
    w->host = host;
    w->hash = h;
    __atomic_store_n(&w->state, ROW_USED, __ATOMIC_RELEASE);
    return k;
}

int rlaas_tally_row(rlaas_tally_t *t, uint64_t host, const char *name)
{
    int n = t->rows - 1, i, k, c, freed = -1;
    uint64_t h;

    if (host == 0 || name == NULL || *name == '\0')
        return n;
    h = row_hash(host, name);
    for (i = 0; i < n; i++) {
        k = (int)((h + (uint64_t)i) % (uint64_t)n);
        switch (__atomic_load_n(&t->row[k].state, __ATOMIC_ACQUIRE)) {
        case ROW_USED:
            if (row_is(&t->row[k], host, h, name))
                return k;
            break;
        case ROW_FREED:
            if (freed < 0)
                freed = k;
            break;
        case ROW_FREE:
            c = freed >= 0 ? claim_row(t, freed, ROW_FREED, host, h, name)
                           : claim_row(t, k, ROW_FREE, host, h, name);
            if (c >= 0)
                return c;
            /* another process took it first: look at this row again
             * (each retry leaves one row fewer free or freed) */
            freed = -1;
            i--;
            break;
        default: /* being claimed: maybe for this very name, then two rows
                  * count it, which readers add up */
            break;
        }
    }
    if (freed >= 0 && (c = claim_row(t, freed, ROW_FREED, host, h, name)) >= 0)
        return c;
    return n;
}

int rlaas_tally_row_used(const rlaas_tally_t *t, int row)
{
    return row >= 0 && row < t->rows &&
           __atomic_load_n(&t->row[row].state, __ATOMIC_ACQUIRE) == ROW_USED;
}

int rlaas_tally_row_is(const rlaas_tally_t *t, int row, uint64_t host,
                       const char *name)
{
    return rlaas_tally_row_used(t, row) && t->row[row].host == host &&
           strncmp(t->row[row].name, name, RLAAS_TALLY_NAME_MAX) == 0;
}

uint64_t rlaas_tally_row_host(const rlaas_tally_t *t, int row)
{
    return rlaas_tally_row_used(t, row) ? t->row[row].host : 0;
}

const char *rlaas_tally_row_name(const rlaas_tally_t *t, int row)
{
    return rlaas_tally_row_used(t, row) ? t->row[row].name : "";
}

/* The bucket of stamp, claimed for it if it held an older one. */
static bucket_t *claim(bucket_t *b, int64_t stamp)
{
    int64_t s = __atomic_load_n(&b->stamp, __ATOMIC_ACQUIRE);

    while (s < stamp) {
        if (__atomic_compare_exchange_n(&b->stamp, &s, stamp, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&b->allowed, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&b->denied, 0, __ATOMIC_RELAXED);
            return b;
        }
    }
    return s == stamp ? b : NULL; /* a later one: the clock went back */
}

static void count(bucket_t *b, int denied)
{
    if (b == NULL)
        return;
    if (denied)
        __atomic_add_fetch(&b->denied, 1, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&b->allowed, 1, __ATOMIC_RELAXED);
}

void rlaas_tally_add(rlaas_tally_t *t, int row, int denied, int64_t now_s)
{
    row_t *w;
    int64_t m;

    if (t == NULL || now_s < 1)
        return;
    if (row < 0 || row >= t->rows)
        row = t->rows - 1; /* the last row: "other" */
    w = &t->row[row];
    count(claim(&w->sec[now_s % RLAAS_TALLY_SECONDS], now_s), denied);
    m = now_s / 60 + 1;
    count(claim(&w->min[m % RLAAS_TALLY_MINUTES], m), denied);
}

void rlaas_tally_hold(rlaas_tally_t *t, int row, int taken)
{
    row_t *w;

    if (t == NULL)
        return;
    if (row < 0 || row >= t->rows)
        row = t->rows - 1;
    w = &t->row[row];
    __atomic_add_fetch(taken ? &w->taken : &w->given, 1, __ATOMIC_RELAXED);
}

uint64_t rlaas_tally_held(const rlaas_tally_t *t, int row)
{
    uint64_t taken, given;

    if (row < 0 || row >= t->rows)
        return 0;
    /* given first: a slot given back between the two reads is never
     * counted as given and not taken */
    given = __atomic_load_n(&t->row[row].given, __ATOMIC_ACQUIRE);
    taken = __atomic_load_n(&t->row[row].taken, __ATOMIC_ACQUIRE);
    return taken > given ? taken - given : 0;
}

void rlaas_tally_sum(const rlaas_tally_t *t, int row, int64_t now_s, int span_s,
                     uint64_t *allowed, uint64_t *denied)
{
    int i;

    *allowed = *denied = 0;
    if (row < 0 || row >= t->rows)
        return;
    if (span_s > RLAAS_TALLY_SECONDS - 1)
        span_s = RLAAS_TALLY_SECONDS - 1;
    for (i = 0; i < RLAAS_TALLY_SECONDS; i++) {
        const bucket_t *b = &t->row[row].sec[i];
        int64_t s = __atomic_load_n(&b->stamp, __ATOMIC_ACQUIRE);

        if (s > now_s - span_s && s <= now_s) {
            *allowed += __atomic_load_n(&b->allowed, __ATOMIC_RELAXED);
            *denied += __atomic_load_n(&b->denied, __ATOMIC_RELAXED);
        }
    }
}

void rlaas_tally_minutes(const rlaas_tally_t *t, int row, int64_t now_s, int n,
                         uint32_t *denied)
{
    int64_t m = now_s / 60 + 1;
    int i;

    if (n > RLAAS_TALLY_MINUTES)
        n = RLAAS_TALLY_MINUTES;
    for (i = 0; i < n; i++) {
        int64_t want = m - (n - 1 - i);
        const bucket_t *b;

        denied[i] = 0;
        if (row < 0 || row >= t->rows || want < 1)
            continue;
        b = &t->row[row].min[want % RLAAS_TALLY_MINUTES];
        if (__atomic_load_n(&b->stamp, __ATOMIC_ACQUIRE) == want)
            denied[i] = __atomic_load_n(&b->denied, __ATOMIC_RELAXED);
    }
}

/* ---- the most-denied list ---- */

/* FNV-1a over the row and the text; never 0 (0 marks a free slot). */
static uint64_t hash_of(int row, const char *id, size_t len)
{
    uint64_t h =
        rlaas_fnv1a(RLAAS_TALLY_BASIS ^ (uint64_t)(uint32_t)row, id, len);

    return h != 0 ? h : 1;
}

static int try_lock(rlaas_tally_t *t)
{
    uint32_t free_ = 0;

    return __atomic_compare_exchange_n(&t->lock, &free_, (uint32_t)getpid(), 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* The holder of the lock, if it died holding it (a child killed, which
 * would leave the list frozen for good), replaced by this process. */
static int take_over(rlaas_tally_t *t)
{
    uint32_t holder = __atomic_load_n(&t->lock, __ATOMIC_ACQUIRE);

    return holder != 0 && kill((pid_t)holder, 0) == -1 && errno == ESRCH &&
           __atomic_compare_exchange_n(&t->lock, &holder, (uint32_t)getpid(), 0,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* The lock, waited for up to max_us; 0: a live process held it all that
 * time. A holder keeps it for a few hundred instructions, so a waiter
 * spins first; then it yields, which gives a holder that was descheduled
 * its CPU back, and each millisecond it looks whether the holder died.
 * A denial on the request path waits its turn too: the refusals of one
 * burst arrive together, and the second would else go uncounted (t/unit's
 * top_counts_a_burst). */
#define LOCK_SPINS      64
#define LOCK_CHECK_US   1000
#define LOCK_REQUEST_US 20000  /* a denial: then it goes uncounted */
#define LOCK_READER_US  100000 /* the console: then it shows no list */

static int lock_within(rlaas_tally_t *t, int64_t max_us)
{
    int64_t now, until = 0, check = 0;
    int i;

    for (i = 0;; i++) {
        if (__atomic_load_n(&t->lock, __ATOMIC_RELAXED) == 0 && try_lock(t))
            return 1;
        if (i < LOCK_SPINS)
            continue;
        now = rlaas_clock_us();
        if (until == 0) {
            until = now + max_us;
            check = now + LOCK_CHECK_US;
        }
        else if (now >= check) {
            if (take_over(t))
                return 1;
            if (now >= until)
                return 0;
            check = now + LOCK_CHECK_US;
        }
        sched_yield();
    }
}

static int lock_wait(rlaas_tally_t *t)
{
    return lock_within(t, LOCK_READER_US);
}

void rlaas_tally_set_claiming(rlaas_tally_t *t, int row, int on)
{
    __atomic_store_n(&t->row[row].state, on ? ROW_CLAIMING : ROW_USED,
                     __ATOMIC_RELEASE);
}

void rlaas_tally_set_holder(rlaas_tally_t *t, uint32_t pid)
{
    __atomic_store_n(&t->lock, pid, __ATOMIC_RELEASE);
}

static void unlock(rlaas_tally_t *t)
{
    __atomic_store_n(&t->lock, 0, __ATOMIC_RELEASE);
}

#define STALE_S 60

void rlaas_tally_top_add(rlaas_tally_t *t, int row, const char *id, size_t len,
                         int64_t now_s)
{
    uint64_t h;
    slot_t *pick = NULL;
    int i, live = 0;

    if (t == NULL || len == 0)
        return;
    if (len > RLAAS_TALLY_ID_MAX)
        len = RLAAS_TALLY_ID_MAX;
    h = hash_of(row, id, len);
    if (!lock_within(t, LOCK_REQUEST_US))
        return;
    for (i = 0; i < RLAAS_TALLY_TOP; i++) {
        slot_t *s = &t->top[i];

        if (s->hash == h && s->row == row && strncmp(s->id, id, len) == 0 &&
            s->id[len] == '\0') {
            s->count++;
            s->last_s = now_s;
            unlock(t);
            return;
        }
        /* a free slot, else a stale one, else the least counted */
        if (s->hash == 0 || s->last_s <= now_s - STALE_S) {
            if (pick == NULL || live) {
                pick = s;
                live = 0;
            }
        }
        else if (pick == NULL || (live && s->count < pick->count)) {
            pick = s;
            live = 1;
        }
    }
    if (live) {
        pick->error = pick->count; /* space-saving: it inherits the count */
        pick->count++;
    }
    else {
        pick->error = 0;
        pick->count = 1;
    }
    pick->hash = h;
    pick->row = row;
    pick->last_s = now_s;
    memcpy(pick->id, id, len);
    pick->id[len] = '\0';
    unlock(t);
}

/* Whether rows a and b count the same name for the same host: the same
 * row, or twins (two processes claimed a row for one name at the same
 * instant, rlaas_tally_row()). */
static int same_row(const rlaas_tally_t *t, int a, int b)
{
    if (a == b)
        return 1;
    if (!rlaas_tally_row_used(t, a) || !rlaas_tally_row_used(t, b))
        return 0;
    return row_is(&t->row[b], t->row[a].host, t->row[a].hash, t->row[a].name);
}

/* An identity denied under twin rows is listed once, its counts added
 * up (the refusals of one burst may land in both); returns how many
 * entries are left. */
static int merge_twins(const rlaas_tally_t *t, rlaas_tally_top_t *out, int n)
{
    int i, j, m = 0;

    for (i = 0; i < n; i++) {
        for (j = 0; j < m; j++)
            if (strcmp(out[j].id, out[i].id) == 0 &&
                same_row(t, out[j].row, out[i].row))
                break;
        if (j == m) {
            out[m++] = out[i];
            continue;
        }
        out[j].count += out[i].count;
        out[j].error += out[i].error;
        if (out[i].last_s > out[j].last_s)
            out[j].last_s = out[i].last_s;
    }
    return m;
}

int rlaas_tally_top(const rlaas_tally_t *t, int64_t now_s, int64_t max_age_s,
                    rlaas_tally_top_t *out, int max)
{
    rlaas_tally_t *w = (rlaas_tally_t *)t;
    int n = 0, i, j;

    if (!lock_wait(w))
        return 0;
    for (i = 0; i < RLAAS_TALLY_TOP && n < max; i++) {
        const slot_t *s = &t->top[i];

        if (s->hash == 0 || s->last_s <= now_s - max_age_s)
            continue;
        out[n].row = s->row;
        memcpy(out[n].id, s->id, sizeof(out[n].id));
        out[n].count = s->count;
        out[n].error = s->error;
        out[n].last_s = s->last_s;
        n++;
    }
    unlock(w);
    n = merge_twins(t, out, n);
    /* most denied first (insertion sort: 32 at most) */
    for (i = 1; i < n; i++) {
        rlaas_tally_top_t x = out[i];

        for (j = i; j > 0 && out[j - 1].count < x.count; j--)
            out[j] = out[j - 1];
        out[j] = x;
    }
    return n;
}

int rlaas_tally_top_forget(rlaas_tally_t *t, int row, const char *id,
                           size_t len)
{
    int i, found = 0;

    if (len > RLAAS_TALLY_ID_MAX)
        len = RLAAS_TALLY_ID_MAX;
    if (!lock_wait(t))
        return 0;
    for (i = 0; i < RLAAS_TALLY_TOP; i++) {
        slot_t *s = &t->top[i];

        /* under row or a twin of it */
        if (s->hash != 0 && strncmp(s->id, id, len) == 0 &&
            s->id[len] == '\0' && same_row(t, row, s->row)) {
            memset(s, 0, sizeof(*s));
            found = 1;
        }
    }
    unlock(t);
    return found;
}

void rlaas_tally_retain(rlaas_tally_t *t, const uint64_t *hosts, int n)
{
    int k, i;

    /* a live holder that never lets go (none should): rows are kept */
    if (!lock_wait(t))
        return;
    for (k = 0; k < t->rows - 1; k++) {
        row_t *w = &t->row[k];

        if (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) != ROW_USED)
            continue;
        for (i = 0; i < n && hosts[i] != w->host; i++)
            ;
        if (i < n)
            continue;
        /* its identities leave the list first: no slot names a row that
         * another host may claim next */
        for (i = 0; i < RLAAS_TALLY_TOP; i++)
            if (t->top[i].hash != 0 && t->top[i].row == k)
                memset(&t->top[i], 0, sizeof(t->top[i]));
        __atomic_store_n(&w->state, ROW_FREED, __ATOMIC_RELEASE);
    }
    unlock(t);
}
