/*
 * The strategy scripts, embedded at build time from the joined files in
 * build/lua/ (lua/prelude.lua + lua/<strategy>.lua) by
 * tools/embed-lua.sh (which also computes each SHA1, the name EVALSHA uses),
 * so that nothing is read from disk at run time.
 */
#ifndef RLAAS_SCRIPTS_H
#define RLAAS_SCRIPTS_H

#include <stddef.h>

#include "rlaas_parse.h"

typedef struct {
    const char *file; /* lua/<file>.lua */
    const char *sha1; /* 40 lowercase hex digits */
    const char *body;
    size_t len;
} rlaas_script_t;

/* Indexed by rlaas_strategy_e. */
extern const rlaas_script_t rlaas_scripts[RLAAS_STRATEGY_COUNT];

#endif
