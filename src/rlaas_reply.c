#include "rlaas_reply.h"

#include <string.h>

static int int_in(const redisReply *e, long long lo, long long hi, int64_t *out)
{
    if (e == NULL || e->type != REDIS_REPLY_INTEGER || e->integer < lo ||
        e->integer > hi)
        return 0;
    *out = e->integer;
    return 1;
}

rlaas_reply_status_e rlaas_reply_verdict(const redisReply *rep,
                                         rlaas_verdict_t *v)
{
    int64_t allowed;

    if (rep == NULL)
        return RLAAS_REPLY_BAD;
    if (rep->type == REDIS_REPLY_ERROR) {
        if (rep->str != NULL && rep->len >= 8 &&
            strncmp(rep->str, "NOSCRIPT", 8) == 0)
            return RLAAS_REPLY_NOSCRIPT;
        return RLAAS_REPLY_ERROR;
    }
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 4 ||
        rep->element == NULL)
        return RLAAS_REPLY_BAD;
    if (!int_in(rep->element[0], 0, 1, &allowed) ||
        !int_in(rep->element[1], 0, INT64_MAX, &v->remaining) ||
        !int_in(rep->element[2], 0, RLAAS_REPLY_MS_MAX, &v->reset_ms) ||
        !int_in(rep->element[3], 0, RLAAS_REPLY_MS_MAX, &v->retry_ms))
        return RLAAS_REPLY_BAD;
    v->allowed = (int)allowed;
    return RLAAS_REPLY_OK;
}

int64_t rlaas_ms_to_s_ceil(int64_t ms)
{
    return ms <= 0 ? 0 : (ms + 999) / 1000;
}

int64_t rlaas_retry_after_s(int64_t retry_ms)
{
    int64_t s = rlaas_ms_to_s_ceil(retry_ms);

    return s < 1 ? 1 : s;
}
