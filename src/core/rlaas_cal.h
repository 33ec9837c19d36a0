/*
 * Calendar windows: `RLaaSWindow 1d calendar` (also w, weeks, and M,
 * months), periods that start at midnight in a time zone (rlaas_tz.h)
 * rather than at multiples of a length since 1970.
 *
 * A period of N days starts on the days whose number since 1970-01-01
 * (in the zone) is a multiple of N; N weeks, on the Mondays whose number
 * of weeks since Monday 1970-01-05 is a multiple of N; N months, on the
 * first of the months whose number since January of year 0 is a multiple
 * of N (N of 1, 2, 3, 4, 6 or 12: a period never straddles a new year;
 * 3M are quarters). A day starts at the first instant whose local date
 * is that day (rlaas_tz_first_at): on the days a zone moves its clocks,
 * a day lasts 23 or 25 hours, and one whose midnight is skipped starts
 * at the transition.
 *
 * The module computes, from its own clock, the period holding now and
 * those before and after it (a table of four boundaries), and gives that
 * to the engine, which picks the one holding its own time (Redis' TIME):
 * so the reset is the same on every server, with no second round trip,
 * as long as the module's clock is within a period of Redis'. The state
 * of a period lives under the key K<tag>+<start ms> (K ending in ':', as
 * fixed's; tag "1d", "1w", "3M"): '+' is in no identity, zone or suffix,
 * so no client value can spell a period's key (rlaas_keybuild.h).
 *
 * No httpd headers: unit-tested on its own (t/unit/test_cal.c).
 */
#ifndef RLAAS_CAL_H
#define RLAAS_CAL_H

#include <stddef.h>
#include <stdint.h>

#include "rlaas_tz.h"

/* The longest tag ("52w") and period name ("52w+" and 16 digits of ms). */
#define RLAAS_CAL_TAG_MAX  3
#define RLAAS_CAL_NAME_MAX (RLAAS_CAL_TAG_MAX + 1 + 16)

/* The window argument the scripts take: tag and four boundaries. */
#define RLAAS_CAL_ARG_MAX (RLAAS_CAL_TAG_MAX + 4 * 17)

/* The bounds the scripts hold boundaries to: times below 2^52 ms, periods
 * up to 2^35 ms (397 days), as windows. */
#define RLAAS_CAL_MS_MAX     ((int64_t)1 << 52)
#define RLAAS_CAL_PERIOD_MAX ((int64_t)1 << 35)

typedef struct {
    char unit; /* 'd', 'w' or 'M' */
    int n;     /* periods of n units */
    const rlaas_tz_t *tz;
} rlaas_cal_t;

/* The periods around an instant: [b[0], b[1]) the one before, [b[1],
 * b[2]) the one holding the instant, [b[2], b[3]) the next; ms. */
typedef struct {
    char tag[RLAAS_CAL_TAG_MAX + 1];
    int64_t b[4];
} rlaas_cal_table_t;

/* "Nd", "Nw" or "NM" (case matters: m is minutes), followed by the word
 * calendar: into *out (its tz left NULL). NULL, or what is accepted. */
const char *rlaas_cal_parse(const char *duration, rlaas_cal_t *out);

/* The nominal length, for bounds and displays: N days, N weeks, N times
 * 31 days. */
int64_t rlaas_cal_nominal_ms(const rlaas_cal_t *c);

/* The period holding UTC ms t: [*start, *end), ms. */
void rlaas_cal_period(const rlaas_cal_t *c, int64_t t, int64_t *start,
                      int64_t *end);

/* The table around t. */
void rlaas_cal_table(const rlaas_cal_t *c, int64_t t, rlaas_cal_table_t *tb);

/* The tag of c ("1d"), NUL-terminated into tag (RLAAS_CAL_TAG_MAX + 1). */
void rlaas_cal_tag(const rlaas_cal_t *c, char *tag);

/* The script's window argument, "<tag>/<b0>/<b1>/<b2>/<b3>", into buf
 * (RLAAS_CAL_ARG_MAX + 1 bytes, NUL-terminated); its length. */
size_t rlaas_cal_arg(const rlaas_cal_table_t *tb, char *buf);

/* Reads a window argument back, as the scripts check it (a tag, four
 * increasing boundaries below 2^52, periods up to 2^35 ms): 1, or 0 if
 * it is none. */
int rlaas_cal_arg_read(const char *s, size_t len, rlaas_cal_table_t *tb);

/* The period of the table holding ms t (as a script picks it): 1 and
 * its bounds, or 0 when t is outside the table. */
int rlaas_cal_pick(const rlaas_cal_table_t *tb, int64_t t, int64_t *start,
                   int64_t *end);

/* A period's name in its key, "<tag>+<start ms>", into buf
 * (RLAAS_CAL_NAME_MAX + 1 bytes, NUL-terminated); its length. */
size_t rlaas_cal_name(const char *tag, int64_t start, char *buf);

#endif
