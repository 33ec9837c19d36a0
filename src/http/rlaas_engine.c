#include "rlaas_engine.h"

#include "rlaas_config.h"

const rlaas_engine_t *rlaas_engine_of(const server_rec *s)
{
    return rlaas_server_local(rlaas_server_conf(s)) ? &rlaas_engine_local
                                                    : &rlaas_engine_redis;
}
