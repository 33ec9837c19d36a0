/*
 * Parsers for directive values. Pure C: no httpd or APR headers, so the
 * unit tests and the fuzz targets can drive them without a server.
 */
#ifndef RLAAS_PARSE_H
#define RLAAS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define RLAAS_LIMIT_MAX      1000000000LL
#define RLAAS_WINDOW_MAX_MS  (30LL * 24 * 3600 * 1000) /* 30 days */
#define RLAAS_TIMEOUT_MAX_MS (60LL * 1000)
#define RLAAS_NAME_MAX       64  /* zone names, header/cookie/query/env names */
#define RLAAS_PREFIX_MAX     128 /* RLaaSKeyPrefix */
#define RLAAS_SOURCES_MAX    8   /* sources per RLaaSKeyBy */

/* Strategy identifiers; the order is the order of the embedded scripts. */
typedef enum {
    RLAAS_STRATEGY_UNSET = -1,
    RLAAS_STRATEGY_FIXED = 0,
    RLAAS_STRATEGY_SLIDING_LOG,
    RLAAS_STRATEGY_SLIDING,
    RLAAS_STRATEGY_TOKEN,
    RLAAS_STRATEGY_LEAKY,
    RLAAS_STRATEGY_GCRA,
    RLAAS_STRATEGY_COUNT
} rlaas_strategy_e;

/* Mode bits of a call, the same to both engines and as the scripts take
 * them (lua/prelude.lua): the limit varies per request (a bucket keeps
 * the limit it was charged under); a dry run (its denial blocks no other
 * policy; only the multi call reads it); a forced charge (charged
 * whatever the verdict; counters count it whole, a bucket fills up to its
 * capacity at most; kept as the scripts keep it, no longer sent by the
 * module: RLaaSCountIf charges at the check). */
#define RLAAS_MODE_LIMIT_VARIES 1
#define RLAAS_MODE_DRY_RUN      2
#define RLAAS_MODE_FORCE        4
#define RLAAS_MODE_MAX          7

/* An identity's ban (RLaaSBan, rlaas_ban.h) where a strategy goes: its
 * key's suffix (":ban"), its place among a call's policies in Redis
 * (lua/multi.lua) and in the local engine, its record. One name for the
 * idea in every layer. */
#define RLAAS_BAN ((rlaas_strategy_e)RLAAS_STRATEGY_COUNT)

/* A concurrency limit (RLaaSConcurrency, rlaas_conc.h) where a strategy
 * goes, likewise: its key's suffix (":conc"), its place among a call's
 * policies (lua/multi.lua's 7), its name in logs and metrics. */
#define RLAAS_CONCURRENCY ((rlaas_strategy_e)(RLAAS_STRATEGY_COUNT + 1))

typedef enum {
    RLAAS_SRC_IP = 0,
    RLAAS_SRC_USER,
    RLAAS_SRC_API_KEY,
    RLAAS_SRC_HEADER,
    RLAAS_SRC_COOKIE,
    RLAAS_SRC_QUERY,
    RLAAS_SRC_ENV,
    RLAAS_SRC_EXPR
} rlaas_source_type_e;

/* One RLaaSKeyBy source. For EXPR, name is the expression text. */
typedef struct {
    rlaas_source_type_e type;
    const char *name; /* points into the parsed argument; NULL if none */
    size_t name_len;
    int credential; /* value is a secret: always hashed */
} rlaas_source_t;

/* Keywords are case-insensitive, as httpd's own are (ASCII folding):
 * 1 if s is word, or (rlaas_parse_prefixed) begins with prefix. */
int rlaas_parse_keyword(const char *s, const char *word);
int rlaas_parse_prefixed(const char *s, const char *prefix);

/* Each parser returns NULL on success or a static text saying what is
 * accepted, for the caller to put into its error message. */
const char *rlaas_parse_limit(const char *s, int64_t *out);
const char *rlaas_parse_duration_ms(const char *s, int64_t min_ms,
                                    int64_t max_ms, int64_t *out);
const char *rlaas_parse_nonneg_int(const char *s, int64_t max, int64_t *out);
const char *rlaas_parse_strategy(const char *s, rlaas_strategy_e *out);
const char *rlaas_parse_source(const char *s, rlaas_source_t *out);
const char *rlaas_parse_name(const char *s);
const char *rlaas_parse_prefix(const char *s);

/* The next word of a directive's line from *s (moved past it): words are
 * split at spaces and tabs; a quote (" or ') anywhere in a word quotes up
 * to the same quote, and the quotes themselves are dropped, so that
 * key="ip api_key" is one word, key=ip api_key. out has room for
 * strlen(*s) + 1 bytes and gets the word, NUL-terminated. Returns 1 for a
 * word, 0 at the end of the line, -1 for a quote left open. */
int rlaas_parse_word(const char **s, char *out);

/* RLaaSRedis: "host", "host:port", "[v6addr]:port" or "unix:/path".
 * host (NUL-terminated copy, bracket-free) must have room for len(s)+1. */
const char *rlaas_parse_redis_addr(const char *s, char *host, int *port,
                                   int *is_unix);

/* A memory size: bytes, or a number followed by K, M or G (powers of 1024),
 * from min to max bytes (RLaaSLocalSize). */
const char *rlaas_parse_size(const char *s, int64_t min, int64_t max,
                             int64_t *out);

/* Canonical name of a strategy, as used in logs and metrics. */
const char *rlaas_strategy_name(rlaas_strategy_e st);

/* Accepted spellings, for error messages. */
#define RLAAS_STRATEGY_CHOICES                                                 \
    "fixed (fixed-window-algo, fixed_window), "                                \
    "sliding_log (sliding-window-algo), sliding (sliding_window), "            \
    "token (token_bucket), leaky (leaky_bucket), gcra"

#endif
