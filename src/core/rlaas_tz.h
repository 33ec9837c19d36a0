/*
 * Time zones for calendar windows (RLaaSTimeZone): a zone's rules read
 * once, at configuration time, from the system's tzdata (a TZif file, RFC
 * 8536, as /usr/share/zoneinfo holds them) or from a POSIX TZ rule
 * ("CET-1CEST,M3.5.0,M10.5.0/3"), then asked, from any thread, for the
 * offset from UTC at an instant. Nothing here touches the process'
 * environment or the C library's own zone (localtime_r with setenv("TZ")
 * is one zone per process, and not thread-safe across zones).
 *
 * No httpd headers: unit-tested on its own (t/unit/test_tz.c).
 */
#ifndef RLAAS_TZ_H
#define RLAAS_TZ_H

#include <stddef.h>
#include <stdint.h>

/* Offsets the zones may have, as RFC 8536 bounds them (seconds east of
 * UTC): a zone's local time is never more than 26 hours from UTC. */
#define RLAAS_TZ_OFF_MIN (-89999)
#define RLAAS_TZ_OFF_MAX 93599

/* Transitions a TZif file may hold here (tzdata's largest have a few
 * hundred). */
#define RLAAS_TZ_TRANSITIONS_MAX 10000

/* One date of a POSIX rule: Jn (1..365, February 29 never counted), n
 * (0..365, counted), or Mm.w.d (month, week 1..5 where 5 is the last,
 * weekday 0..6 from Sunday); at time seconds of local time (-167h..167h,
 * as TZif version 3 allows). */
typedef struct {
    char kind; /* 'J', 'n' or 'M' */
    int n, m, w, d;
    int32_t time;
} rlaas_tz_date_t;

/* A POSIX TZ rule: standard offset, and daylight saving time between two
 * dates each year if has_dst. */
typedef struct {
    int32_t std_off; /* seconds east of UTC */
    int32_t dst_off;
    int has_dst;
    rlaas_tz_date_t start, end; /* start in standard time, end in DST */
} rlaas_tz_rule_t;

typedef struct {
    /* transitions, ascending (UTC seconds), each with the offset that
     * holds from it on */
    int64_t *at;
    int32_t *off;
    size_t n;
    int32_t before; /* the offset before the first transition */
    /* after the last transition (or always, with n 0): the rule if
     * has_rule, else the last transition's offset */
    int has_rule;
    rlaas_tz_rule_t rule;
} rlaas_tz_t;

/* Reads a TZif file (version 1 to 4; the 64-bit data and the footer's
 * rule where the version has them) into tz, which then owns memory that
 * rlaas_tz_free gives back. Returns NULL, or what is wrong with the file
 * (tz then holds nothing). Files with leap seconds ("right/" zones) are
 * refused: their times are not Unix times. */
const char *rlaas_tz_read_tzif(rlaas_tz_t *tz, const unsigned char *buf,
                               size_t len);

/* A POSIX TZ rule as the whole zone (no transitions before it). Returns
 * NULL, or what is accepted. */
const char *rlaas_tz_read_rule(rlaas_tz_t *tz, const char *s);

/* UTC: offset 0, always. */
void rlaas_tz_utc(rlaas_tz_t *tz);

void rlaas_tz_free(rlaas_tz_t *tz);

/* The offset (seconds east of UTC) at UTC second t. */
int32_t rlaas_tz_offset(const rlaas_tz_t *tz, int64_t t);

/* The local time (seconds since 1970-01-01 00:00 local) of UTC second t. */
int64_t rlaas_tz_local(const rlaas_tz_t *tz, int64_t t);

/* The first UTC second whose local time is at or after the local second
 * l: where a local day starts when l is its midnight, also when midnight
 * falls in a gap (the day then starts at the transition) or is passed
 * twice (the first time). */
int64_t rlaas_tz_first_at(const rlaas_tz_t *tz, int64_t l);

/* Division rounded towards minus infinity, and its remainder (of b's
 * sign): days and periods before 1970 count as after. b != 0. */
int64_t rlaas_floor_div(int64_t a, int64_t b);
int64_t rlaas_floor_mod(int64_t a, int64_t b);

/* Days since 1970-01-01 of a date in the proleptic Gregorian calendar,
 * and back (month 1..12). */
int64_t rlaas_tz_days(int64_t y, int m, int d);
void rlaas_tz_civil(int64_t days, int64_t *y, int *m, int *d);

#endif
