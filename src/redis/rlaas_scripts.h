/*
 * The scripts, embedded at build time from the joined files in build/lua/
 * by tools/embed-lua.sh (which also computes each SHA1, the name EVALSHA
 * uses), so that nothing is read from disk at run time: one per strategy
 * (lua/prelude.lua + lua/<strategy>.lua + a line calling it), for a
 * request with one policy, and the multi script (the prelude, the six
 * bodies and lua/multi.lua) for a request with several, decided together.
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

/* The multi script's index, after the strategies' own. */
#define RLAAS_SCRIPT_MULTI RLAAS_STRATEGY_COUNT
/* RLaaSLease: portions of a request's policies taken at once
 * (lua/lease.lua). */
#define RLAAS_SCRIPT_LEASE (RLAAS_STRATEGY_COUNT + 1)
/* Credits: units given back to one or more keys (lua/credit.lua). */
#define RLAAS_SCRIPT_CREDIT (RLAAS_STRATEGY_COUNT + 2)
/* Concurrency slots given back (lua/release.lua). */
#define RLAAS_SCRIPT_RELEASE (RLAAS_STRATEGY_COUNT + 3)
/* Records deleted: the console's reset and unban (lua/forget.lua). */
#define RLAAS_SCRIPT_FORGET (RLAAS_STRATEGY_COUNT + 4)
#define RLAAS_SCRIPT_COUNT  (RLAAS_STRATEGY_COUNT + 5)

/* Indexed by rlaas_strategy_e, then RLAAS_SCRIPT_MULTI, RLAAS_SCRIPT_LEASE,
 * RLAAS_SCRIPT_CREDIT, RLAAS_SCRIPT_RELEASE, RLAAS_SCRIPT_FORGET. */
extern const rlaas_script_t rlaas_scripts[RLAAS_SCRIPT_COUNT];

#endif
