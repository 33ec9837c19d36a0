#include "rlaas_log.h"

#include <stdio.h>

long rlaas_log_gate_pass(rlaas_log_gate_t *g, int64_t now_us,
                         unsigned interval_s)
{
    apr_uint32_t sec = (apr_uint32_t)(now_us / 1000000);
    apr_uint32_t next = apr_atomic_read32(&g->next_sec);

    /* Only the thread that moves next_sec forward logs; the others count. */
    if (sec < next ||
        apr_atomic_cas32(&g->next_sec, sec + interval_s, next) != next) {
        apr_atomic_inc32(&g->suppressed);
        return -1;
    }
    return (long)apr_atomic_xchg32(&g->suppressed, 0);
}

const char *rlaas_log_suppressed(char *buf, size_t size, long dropped)
{
    if (dropped <= 0 || size == 0)
        return "";
    snprintf(buf, size, " (%ld similar lines suppressed)", dropped);
    return buf;
}
