#include "rlaas_rerr.h"

const char *rlaas_rerr_name(rlaas_rerr_e e)
{
    static const char *const names[RLAAS_RERR_COUNT] = {
        "none",    "pool", "connect", "auth",         "select",
        "timeout", "io",   "reply",   "circuit_open", "server"};

    return e >= 0 && e < RLAAS_RERR_COUNT ? names[e] : "unknown";
}

int rlaas_rerr_is_redis_failure(rlaas_rerr_e e)
{
    return e != RLAAS_RERR_NONE && e != RLAAS_RERR_REPLY &&
           e != RLAAS_RERR_CIRCUIT;
}
