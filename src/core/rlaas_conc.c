#include "rlaas_conc.h"

#include <string.h>

/* The record: a header, then its slots in no order (a ZSET in Redis). */
#define MAGIC 0x636f6e63u /* "conc" */

typedef struct {
    uint32_t magic;
    uint32_t n;
    int64_t probed_ms; /* when the holders were last looked at */
} head_t;

typedef struct {
    int64_t at_ms; /* when it was taken: its score in Redis */
    uint64_t token;
    uint64_t start; /* the holder's process start (0: unknown) */
    int32_t pid;    /* the holder (0: unknown) */
    int32_t pad;
} slot_t;

typedef char fits[sizeof(head_t) + RLAAS_CONC_MAX * sizeof(slot_t) <=
                          RLAAS_CONC_STATE_MAX
                      ? 1
                      : -1];
typedef char first_fits[sizeof(head_t) + sizeof(slot_t) == RLAAS_CONC_FIRST_LEN
                            ? 1
                            : -1];

int rlaas_conc_call_ok(const rlaas_conc_call_t *c)
{
    return c->limit >= 1 && c->limit <= RLAAS_CONC_MAX && c->timeout_ms >= 1 &&
           c->timeout_ms <= RLAAS_CONC_TIMEOUT_MAX && c->now_ms >= 0 &&
           c->now_ms <= ((int64_t)1 << 52) && c->mode >= 0 && c->mode <= 7;
}

/* The record's header and slots, or 0 if the state is none or of another
 * shape (then it counts as empty). */
static int read_state(void *state, size_t len, head_t **h, slot_t **s)
{
    head_t *hd = state;

    if (len < sizeof(head_t) || hd->magic != MAGIC || hd->n > RLAAS_CONC_MAX ||
        len != sizeof(head_t) + hd->n * sizeof(slot_t))
        return 0;
    *h = hd;
    *s = (slot_t *)(hd + 1);
    return 1;
}

int rlaas_conc_held(const void *state, size_t len)
{
    head_t *h;
    slot_t *s;

    return read_state((void *)state, len, &h, &s) ? (int)h->n : 0;
}

static void drop(head_t *h, slot_t *s, uint32_t i)
{
    s[i] = s[--h->n];
}

/* Slots older than T are gone; so are slots stamped over T ahead (the
 * clock went back): lua/concurrency.lua's two ZREMRANGEBYSCOREs. Returns
 * how many went. */
static int prune(const rlaas_conc_call_t *c, head_t *h, slot_t *s)
{
    int gone = 0;
    uint32_t i = 0;

    while (i < h->n) {
        if (s[i].at_ms <= c->now_ms - c->timeout_ms ||
            s[i].at_ms > c->now_ms + c->timeout_ms) {
            drop(h, s, i);
            gone++;
        }
        else {
            i++;
        }
    }
    return gone;
}

/* The record is full: the slots of holders that are gone are freed, at
 * most once per RLAAS_CONC_PROBE_MS (and at once if the clock went back
 * past the last look). Returns 1 if it looked (the header changed). */
static int probe(const rlaas_conc_call_t *c, head_t *h, slot_t *s)
{
    uint32_t i = 0;

    if (c->alive == NULL || (c->now_ms - h->probed_ms < RLAAS_CONC_PROBE_MS &&
                             c->now_ms >= h->probed_ms))
        return 0;
    h->probed_ms = c->now_ms;
    while (i < h->n) {
        if (s[i].pid != 0 && !c->alive(c->baton, s[i].pid, s[i].start))
            drop(h, s, i);
        else
            i++;
    }
    return 1;
}

static uint32_t find(const head_t *h, const slot_t *s, uint64_t token)
{
    uint32_t i;

    for (i = 0; i < h->n; i++) {
        if (s[i].token == token)
            break;
    }
    return i;
}

/* Takes the slot (ZADD: a token held already is stamped again). */
static void take(const rlaas_conc_call_t *c, head_t *h, slot_t *s)
{
    uint32_t i = find(h, s, c->token);

    if (i == h->n)
        h->n++;
    s[i].at_ms = c->now_ms;
    s[i].token = c->token;
    s[i].pid = c->pid;
    s[i].pad = 0;
    s[i].start = c->start;
}

/* The record lives as long as its newest slot: PEXPIRE newest + T - now,
 * the newest at least now. */
static int64_t ttl_of(const rlaas_conc_call_t *c, const head_t *h,
                      const slot_t *s)
{
    int64_t newest = c->now_ms;
    uint32_t i;

    for (i = 0; i < h->n; i++) {
        if (s[i].at_ms > newest)
            newest = s[i].at_ms;
    }
    return newest + c->timeout_ms - c->now_ms;
}

static void reply(rlaas_verdict_t *v, int ok, int64_t rem)
{
    v->allowed = ok;
    v->remaining = rem;
    v->reset_ms = ok && rem > 0 ? 0 : RLAAS_CONC_RETRY_MS;
    v->retry_ms = ok ? 0 : RLAAS_CONC_RETRY_MS;
}

int rlaas_conc_take(const rlaas_conc_call_t *c, void *state, size_t *len,
                    int64_t *ttl_ms, rlaas_verdict_t *v)
{
    head_t *h;
    slot_t *s;
    int changed = 0, ok, dry = (c->mode & 2) != 0;

    if (!rlaas_conc_call_ok(c))
        return -1;
    if (!read_state(state, *len, &h, &s)) {
        h = state;
        h->magic = MAGIC;
        h->n = 0;
        h->probed_ms = 0;
        s = (slot_t *)(h + 1);
        *len = 0; /* nothing stored yet */
    }
    changed = prune(c, h, s) > 0;
    if ((int64_t)h->n >= c->limit)
        changed |= probe(c, h, s);
    ok = (int64_t)h->n < c->limit;
    if (c->commit && (ok || (dry && h->n < RLAAS_CONC_MAX))) {
        take(c, h, s);
        reply(v, ok, ok ? c->limit - (int64_t)h->n : 0);
        *len = sizeof(head_t) + h->n * sizeof(slot_t);
        *ttl_ms = ttl_of(c, h, s);
        return RLAAS_CONC_STORE;
    }
    reply(v, ok, ok ? c->limit - (int64_t)h->n : 0);
    if (!changed || *len == 0)
        return RLAAS_CONC_LEAVE;
    /* slots gone: the rest kept as long as before; none left, no record */
    *len = h->n > 0 ? sizeof(head_t) + h->n * sizeof(slot_t) : 0;
    *ttl_ms = h->n > 0 ? -1 : 0;
    return RLAAS_CONC_STORE;
}

int rlaas_conc_release(uint64_t token, void *state, size_t *len,
                       int64_t *ttl_ms, int *removed)
{
    head_t *h;
    slot_t *s;
    uint32_t i;

    *removed = 0;
    if (!read_state(state, *len, &h, &s))
        return RLAAS_CONC_LEAVE;
    i = find(h, s, token);
    if (i == h->n)
        return RLAAS_CONC_LEAVE;
    drop(h, s, i);
    *removed = 1;
    *len = h->n > 0 ? sizeof(head_t) + h->n * sizeof(slot_t) : 0;
    *ttl_ms = h->n > 0 ? -1 : 0;
    return RLAAS_CONC_STORE;
}

void rlaas_conc_token_hex(char *buf, uint64_t token)
{
    static const char hex[] = "0123456789abcdef";
    int i;

    for (i = RLAAS_CONC_TOKEN_LEN - 1; i >= 0; i--) {
        buf[i] = hex[token & 15];
        token >>= 4;
    }
    buf[RLAAS_CONC_TOKEN_LEN] = '\0';
}

int rlaas_conc_token_parse(const char *s, size_t len, uint64_t *token)
{
    uint64_t t = 0;
    size_t i;

    if (len != RLAAS_CONC_TOKEN_LEN)
        return 0;
    for (i = 0; i < len; i++) {
        char ch = s[i];

        if (ch >= '0' && ch <= '9')
            t = t << 4 | (uint64_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            t = t << 4 | (uint64_t)(ch - 'a' + 10);
        else
            return 0;
    }
    *token = t;
    return 1;
}
