#include "rlaas_ban.h"

#include <string.h>

int rlaas_ban_conf_ok(const rlaas_ban_conf_t *b)
{
    return b->length_ms >= 1 && b->length_ms <= RLAAS_BAN_MS_MAX &&
           b->max_ms >= b->length_ms && b->max_ms <= RLAAS_BAN_MS_MAX &&
           b->factor >= RLAAS_BAN_READ && b->factor <= RLAAS_BAN_FACTOR_MAX;
}

int64_t rlaas_ban_left(const void *state, size_t len, int64_t now,
                       const rlaas_ban_conf_t *b, int64_t *last)
{
    int64_t v[2];

    *last = 0;
    if (len != sizeof(v))
        return 0;
    memcpy(v, state, sizeof(v));
    /* a record of another shape, or ending too far ahead: none */
    if (v[0] < 0 || v[1] < 0 || v[0] > now + 2 * b->max_ms)
        return 0;
    *last = v[1];
    return v[0] > now ? v[0] - now : 0;
}

int rlaas_ban_read(const void *state, size_t len, int64_t *until,
                   int64_t *length)
{
    int64_t v[2];

    if (len != sizeof(v))
        return 0;
    memcpy(v, state, sizeof(v));
    *until = v[0];
    *length = v[1];
    return v[0] >= 0 && v[1] >= 0;
}

int64_t rlaas_ban_length(const rlaas_ban_conf_t *b, int64_t last)
{
    int64_t n;

    if (last <= 0 || b->factor <= 1)
        return b->length_ms;
    n = (last > b->length_ms ? last : b->length_ms) * b->factor;
    return n < b->max_ms ? n : b->max_ms;
}

int64_t rlaas_ban_store(void *state, size_t *len, int64_t now, int64_t length,
                        const rlaas_ban_conf_t *b)
{
    int64_t v[2] = {now + length, length};

    memcpy(state, v, sizeof(v));
    *len = sizeof(v);
    /* escalation remembers the ban for M past its end */
    return b->factor > 1 ? length + b->max_ms : length;
}
