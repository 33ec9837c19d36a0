#include "rlaas_headers.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *rlaas_parse_headers_mode(const char *s, rlaas_headers_e *out)
{
    static const struct {
        const char *name;
        rlaas_headers_e mode;
    } modes[] = {{"draft", RLAAS_HEADERS_DRAFT},
                 {"legacy", RLAAS_HEADERS_LEGACY},
                 {"both", RLAAS_HEADERS_BOTH},
                 {"off", RLAAS_HEADERS_OFF}};
    size_t i;

    for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(s, modes[i].name) == 0) {
            *out = modes[i].mode;
            return NULL;
        }
    }
    return "draft, legacy, both or off";
}

int rlaas_fmt_policy(char *buf, size_t size, const char *name, int64_t limit,
                     int64_t window_ms)
{
    /* w is whole seconds; a sub-second window still reads as 1. */
    int64_t w = rlaas_ms_to_s_ceil(window_ms);

    return snprintf(buf, size, "\"%s\";q=%" PRId64 ";w=%" PRId64, name, limit,
                    w < 1 ? 1 : w);
}

int rlaas_fmt_ratelimit(char *buf, size_t size, const char *name,
                        const rlaas_verdict_t *v)
{
    return snprintf(buf, size, "\"%s\";r=%" PRId64 ";t=%" PRId64, name,
                    v->remaining, rlaas_ms_to_s_ceil(v->reset_ms));
}
