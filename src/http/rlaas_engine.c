#include "rlaas_engine.h"

#include "apr_strings.h"

const rlaas_engine_t *rlaas_engine_of(const server_rec *s)
{
    return rlaas_server_local(rlaas_server_conf(s)) ? &rlaas_engine_local
                                                    : &rlaas_engine_redis;
}

const char *rlaas_engine_why(apr_pool_t *p, const rlaas_engine_fault_t *f)
{
    return f->detail[0] ? apr_pstrcat(p, f->kind, ": ", f->detail, NULL)
                        : f->kind;
}
