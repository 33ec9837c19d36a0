#include "rlaas_breaker.h"

void rlaas_breaker_init(rlaas_breaker_t *b, unsigned threshold,
                        apr_interval_time_t cooldown)
{
    b->state = RLAAS_CIRCUIT_CLOSED;
    b->failures = 0;
    b->open_until = 0;
    b->threshold = threshold;
    b->cooldown = cooldown;
}

int rlaas_breaker_allow(rlaas_breaker_t *b, apr_time_t now)
{
    apr_uint32_t st = apr_atomic_read32(&b->state);

    if (st == RLAAS_CIRCUIT_CLOSED)
        return 1;
    if (st == RLAAS_CIRCUIT_PROBING ||
        (apr_time_t)apr_atomic_read64(&b->open_until) > now)
        return 0;
    /* Cool-down over: the one thread that wins this exchange probes. */
    return apr_atomic_cas32(&b->state, RLAAS_CIRCUIT_PROBING,
                            RLAAS_CIRCUIT_OPEN) == RLAAS_CIRCUIT_OPEN;
}

rlaas_breaker_event_e rlaas_breaker_success(rlaas_breaker_t *b)
{
    apr_uint32_t st;

    /* Read before writing: on the hot path nothing changes, and a store on
     * every request would bounce the cache line between cores. */
    if (apr_atomic_read32(&b->failures) != 0)
        apr_atomic_set32(&b->failures, 0);
    st = apr_atomic_read32(&b->state);
    if (st != RLAAS_CIRCUIT_CLOSED &&
        apr_atomic_cas32(&b->state, RLAAS_CIRCUIT_CLOSED, st) == st)
        return RLAAS_BREAKER_CLOSED;
    return RLAAS_BREAKER_SAME;
}

static void open_from(rlaas_breaker_t *b, apr_time_t now)
{
    apr_atomic_set64(&b->open_until, (apr_uint64_t)(now + b->cooldown));
}

rlaas_breaker_event_e rlaas_breaker_failure(rlaas_breaker_t *b, apr_time_t now)
{
    apr_uint32_t n;

    if (b->threshold == 0)
        return RLAAS_BREAKER_SAME;
    /* The cool-down time is written before the state flips, so a thread
     * that sees "open" never reads a stale deadline. */
    if (apr_atomic_read32(&b->state) == RLAAS_CIRCUIT_PROBING) {
        open_from(b, now);
        if (apr_atomic_cas32(&b->state, RLAAS_CIRCUIT_OPEN,
                             RLAAS_CIRCUIT_PROBING) == RLAAS_CIRCUIT_PROBING)
            return RLAAS_BREAKER_REOPENED;
        return RLAAS_BREAKER_SAME;
    }
    n = apr_atomic_inc32(&b->failures) + 1;
    if (n < b->threshold)
        return RLAAS_BREAKER_SAME;
    open_from(b, now);
    if (apr_atomic_cas32(&b->state, RLAAS_CIRCUIT_OPEN, RLAAS_CIRCUIT_CLOSED) ==
        RLAAS_CIRCUIT_CLOSED) {
        apr_atomic_set32(&b->failures, 0);
        return RLAAS_BREAKER_OPENED;
    }
    return RLAAS_BREAKER_SAME;
}

int rlaas_breaker_is_open(rlaas_breaker_t *b)
{
    return apr_atomic_read32(&b->state) != RLAAS_CIRCUIT_CLOSED;
}

int rlaas_breaker_probing(rlaas_breaker_t *b)
{
    return apr_atomic_read32(&b->state) == RLAAS_CIRCUIT_PROBING;
}
