#include "rlaas_tz.h"

#include <stdlib.h>
#include <string.h>

#define DAY 86400

int64_t rlaas_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t rlaas_floor_mod(int64_t a, int64_t b)
{
    return a - rlaas_floor_div(a, b) * b;
}

/* ---- the civil calendar (proleptic Gregorian; H. Hinnant's algorithms) */

int64_t rlaas_tz_days(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = rlaas_floor_div(y, 400);
    yoe = y - era * 400;
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void rlaas_tz_civil(int64_t z, int64_t *y, int *m, int *d)
{
    int64_t era, doe, yoe, doy, mp;

    z += 719468;
    era = rlaas_floor_div(z, 146097);
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int month_days(int64_t y, int m)
{
    static const int n[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    return m == 2 && leap(y) ? 29 : n[m - 1];
}

/* ---- POSIX rules ---- */

/* The day (since 1970-01-01) a rule's date falls on in year y. */
static int64_t date_day(const rlaas_tz_date_t *dt, int64_t y)
{
    int64_t first, day;

    switch (dt->kind) {
    case 'J':
        return rlaas_tz_days(y, 1, 1) + dt->n - 1 + (leap(y) && dt->n >= 60);
    case 'n':
        return rlaas_tz_days(y, 1, 1) + dt->n;
    default:
        first = rlaas_tz_days(y, dt->m, 1);
        /* 1970-01-01 was a Thursday (4) */
        day = first +
              rlaas_floor_mod(dt->d - rlaas_floor_mod(first + 4, 7), 7) +
              7 * (dt->w - 1);
        while (day - first >= month_days(y, dt->m))
            day -= 7;
        return day;
    }
}

/* The instants (UTC) DST starts and ends in year y. */
static void rule_changes(const rlaas_tz_rule_t *r, int64_t y, int64_t *s,
                         int64_t *e)
{
    *s = date_day(&r->start, y) * DAY + r->start.time - r->std_off;
    *e = date_day(&r->end, y) * DAY + r->end.time - r->dst_off;
}

static int64_t year_of(int64_t t, int32_t off)
{
    int64_t y;
    int m, d;

    rlaas_tz_civil(rlaas_floor_div(t + off, DAY), &y, &m, &d);
    return y;
}

/* The latest change at or before t, from the years around it: a start
 * wins a tie (a rule of DST all year ends one year where the next
 * starts). */
static int32_t rule_offset(const rlaas_tz_rule_t *r, int64_t t)
{
    int64_t y = year_of(t, r->std_off), best = INT64_MIN, s, e, k;
    int dst = 0;

    if (!r->has_dst)
        return r->std_off;
    for (k = y - 1; k <= y + 1; k++) {
        rule_changes(r, k, &s, &e);
        if (e <= t && e > best) {
            best = e;
            dst = 0;
        }
        if (s <= t && s >= best) {
            best = s;
            dst = 1;
        }
    }
    return dst ? r->dst_off : r->std_off;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A zone's abbreviation: three or more letters, or <...> of letters,
 * digits, '+' and '-'. */
static int rule_name(const char **s)
{
    const char *p = *s;
    size_t n = 0;

    if (*p == '<') {
        for (p++; is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-'; p++)
            n++;
        if (*p != '>' || n < 3)
            return 0;
        *s = p + 1;
        return 1;
    }
    for (; is_alpha(*p); p++)
        n++;
    *s = p;
    return n >= 3;
}

static int digits(const char **s, int most, int max, int *out)
{
    int v = 0, n = 0;

    for (; is_digit(**s) && n < most; (*s)++, n++)
        v = v * 10 + (**s - '0');
    *out = v;
    return n > 0 && v <= max;
}

/* [+-]hh[:mm[:ss]], hours up to max_h; the seconds, signed. */
static int hms(const char **s, int max_h, int32_t *out)
{
    int sign = 1, h, m = 0, sec = 0;

    if (**s == '+' || **s == '-')
        sign = *(*s)++ == '-' ? -1 : 1;
    if (!digits(s, 3, max_h, &h))
        return 0;
    if (**s == ':') {
        (*s)++;
        if (!digits(s, 2, 59, &m))
            return 0;
        if (**s == ':') {
            (*s)++;
            if (!digits(s, 2, 59, &sec))
                return 0;
        }
    }
    *out = sign * (h * 3600 + m * 60 + sec);
    return 1;
}

static int rule_date(const char **s, rlaas_tz_date_t *dt)
{
    dt->time = 7200;
    if (**s == 'J') {
        (*s)++;
        dt->kind = 'J';
        if (!digits(s, 3, 365, &dt->n) || dt->n < 1)
            return 0;
    }
    else if (**s == 'M') {
        (*s)++;
        dt->kind = 'M';
        if (!digits(s, 2, 12, &dt->m) || dt->m < 1 || *(*s)++ != '.' ||
            !digits(s, 1, 5, &dt->w) || dt->w < 1 || *(*s)++ != '.' ||
            !digits(s, 1, 6, &dt->d))
            return 0;
    }
    else {
        dt->kind = 'n';
        if (!digits(s, 3, 365, &dt->n))
            return 0;
    }
    if (**s == '/') {
        (*s)++;
        return hms(s, 167, &dt->time);
    }
    return 1;
}

static const char rule_accepted[] =
    "a POSIX TZ rule: std offset [dst [offset] [,start[/time],end[/time]]], "
    "e.g. CET-1CEST,M3.5.0,M10.5.0/3 or <+0530>-5:30";

static const char *parse_rule(const char *s, rlaas_tz_rule_t *r)
{
    int32_t v;

    memset(r, 0, sizeof(*r));
    if (!rule_name(&s) || !hms(&s, 24, &v))
        return rule_accepted;
    r->std_off = -v; /* POSIX counts west of UTC */
    if (*s == '\0')
        return NULL;
    if (!rule_name(&s))
        return rule_accepted;
    r->has_dst = 1;
    r->dst_off = r->std_off + 3600;
    if (*s != ',' && *s != '\0') {
        if (!hms(&s, 24, &v))
            return rule_accepted;
        r->dst_off = -v;
    }
    if (*s == '\0') {
        /* no dates: the United States' rules, as glibc and tzcode take */
        s = ",M3.2.0,M11.1.0";
    }
    if (*s++ != ',' || !rule_date(&s, &r->start) || *s++ != ',' ||
        !rule_date(&s, &r->end) || *s != '\0')
        return rule_accepted;
    return NULL;
}

/* ---- zones ---- */

void rlaas_tz_utc(rlaas_tz_t *tz)
{
    memset(tz, 0, sizeof(*tz));
}

void rlaas_tz_free(rlaas_tz_t *tz)
{
    free(tz->at);
    free(tz->off);
    rlaas_tz_utc(tz);
}

const char *rlaas_tz_read_rule(rlaas_tz_t *tz, const char *s)
{
    const char *err;

    rlaas_tz_utc(tz);
    if ((err = parse_rule(s, &tz->rule)) != NULL)
        return err;
    tz->has_rule = 1;
    tz->before = tz->rule.std_off;
    return NULL;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

typedef struct {
    uint32_t isut, isstd, leap, time, type, chars;
} counts_t;

static int header(const unsigned char *p, size_t left, counts_t *c)
{
    if (left < 44 || memcmp(p, "TZif", 4) != 0)
        return 0;
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    return c->time <= RLAAS_TZ_TRANSITIONS_MAX && c->type >= 1 &&
           c->type <= 256 && c->chars <= 65536 && c->leap <= 65536 &&
           (c->isut == 0 || c->isut == c->type) &&
           (c->isstd == 0 || c->isstd == c->type);
}

static size_t block_size(const counts_t *c, size_t tsize)
{
    return c->time * tsize + c->time + c->type * 6 + c->chars +
           c->leap * (tsize + 4) + c->isstd + c->isut;
}

/* The transitions and types of one data block (times of tsize bytes). */
static const char *read_block(rlaas_tz_t *tz, const unsigned char *p,
                              const counts_t *c, size_t tsize)
{
    const unsigned char *idx = p + c->time * tsize, *types = idx + c->time;
    uint32_t i;

    for (i = 0; i < c->type; i++) {
        int32_t off = (int32_t)be32(types + 6 * i);

        if (off < RLAAS_TZ_OFF_MIN || off > RLAAS_TZ_OFF_MAX ||
            types[6 * i + 4] > 1)
            return "a time type out of range";
    }
    tz->n = c->time;
    tz->at = malloc(sizeof(*tz->at) * (c->time ? c->time : 1));
    tz->off = malloc(sizeof(*tz->off) * (c->time ? c->time : 1));
    if (tz->at == NULL || tz->off == NULL)
        return "out of memory";
    for (i = 0; i < c->time; i++) {
        tz->at[i] = tsize == 8 ? be64(p + 8 * i) : (int32_t)be32(p + 4 * i);
        if (idx[i] >= c->type || (i > 0 && tz->at[i] <= tz->at[i - 1]))
            return "transitions out of order or of an unknown type";
        tz->off[i] = (int32_t)be32(types + 6 * idx[i]);
    }
    /* RFC 8536 3.2: before the first transition, time type 0 */
    tz->before = (int32_t)be32(types);
    return NULL;
}

/* The footer of a version 2+ file: "\n<TZ rule>\n", the rule maybe
 * empty (then the last transition's offset holds on). */
static const char *read_footer(rlaas_tz_t *tz, const unsigned char *p,
                               size_t left)
{
    const unsigned char *end;
    char rule[256];
    size_t n;

    if (left < 2 || p[0] != '\n' ||
        (end = memchr(p + 1, '\n', left - 1)) == NULL)
        return "a footer that is no TZ rule";
    n = (size_t)(end - p - 1);
    if (n == 0)
        return NULL;
    if (n >= sizeof(rule) || memchr(p + 1, '\0', n) != NULL)
        return "a footer that is no TZ rule";
    memcpy(rule, p + 1, n);
    rule[n] = '\0';
    if (parse_rule(rule, &tz->rule) != NULL)
        return "a footer that is no TZ rule";
    tz->has_rule = 1;
    return NULL;
}

static const char *read_tzif(rlaas_tz_t *tz, const unsigned char *buf,
                             size_t len)
{
    const unsigned char *p = buf;
    size_t tsize = 4, size;
    counts_t c;

    if (!header(p, len, &c))
        return "not a TZif file";
    size = block_size(&c, 4);
    if (buf[4] >= '2') {
        /* the 64-bit data follows the 32-bit one, with its own header */
        if (len - 44 < size)
            return "a truncated TZif file";
        p += 44 + size;
        if (!header(p, len - (size_t)(p - buf), &c))
            return "a truncated TZif file";
        tsize = 8;
        size = block_size(&c, 8);
    }
    if (c.leap > 0)
        return "a zone with leap seconds (the right/ zones): their times "
               "are not Unix times";
    if (len - (size_t)(p - buf) - 44 < size)
        return "a truncated TZif file";
    if (read_block(tz, p + 44, &c, tsize) != NULL)
        return "a TZif file with bad data";
    if (tsize == 8)
        return read_footer(tz, p + 44 + size,
                           len - (size_t)(p - buf) - 44 - size);
    return NULL;
}

const char *rlaas_tz_read_tzif(rlaas_tz_t *tz, const unsigned char *buf,
                               size_t len)
{
    const char *err;

    rlaas_tz_utc(tz);
    if ((err = read_tzif(tz, buf, len)) != NULL)
        rlaas_tz_free(tz);
    return err;
}

/* The last transition at or before t, or -1. */
static long last_at(const rlaas_tz_t *tz, int64_t t)
{
    long lo = 0, hi = (long)tz->n - 1, best = -1;

    while (lo <= hi) {
        long mid = lo + (hi - lo) / 2;

        if (tz->at[mid] <= t) {
            best = mid;
            lo = mid + 1;
        }
        else
            hi = mid - 1;
    }
    return best;
}

int32_t rlaas_tz_offset(const rlaas_tz_t *tz, int64_t t)
{
    long i = tz->n > 0 ? last_at(tz, t) : -1;

    if (tz->n > 0 && i < 0)
        return tz->before;
    if (tz->has_rule && (tz->n == 0 || (size_t)i == tz->n - 1))
        return rule_offset(&tz->rule, t);
    return i >= 0 ? tz->off[i] : tz->before;
}

int64_t rlaas_tz_local(const rlaas_tz_t *tz, int64_t t)
{
    return t + rlaas_tz_offset(tz, t);
}

/* The instants in (from, to] where the offset may change: the file's
 * transitions, then the rule's (up to max). */
static int changes(const rlaas_tz_t *tz, int64_t from, int64_t to, int64_t *out,
                   int max)
{
    long i = tz->n > 0 ? last_at(tz, from) + 1 : 0;
    int64_t y, s, e, after = tz->n > 0 ? tz->at[tz->n - 1] : INT64_MIN;
    int n = 0;

    for (; (size_t)i < tz->n && tz->at[i] <= to && n < max; i++)
        out[n++] = tz->at[i];
    if (!tz->has_rule || !tz->rule.has_dst)
        return n;
    for (y = year_of(from, 0) - 1; y <= year_of(to, 0) + 1; y++) {
        rule_changes(&tz->rule, y, &s, &e);
        if (s > from && s <= to && s > after && n < max)
            out[n++] = s;
        if (e > from && e <= to && e > after && n < max)
            out[n++] = e;
    }
    return n;
}

int64_t rlaas_tz_first_at(const rlaas_tz_t *tz, int64_t l)
{
    /* local time is never more than 26 h from UTC: the answer lies in
     * [l - 26 h, l + 26 h], and within that either on a transition or
     * at l minus the offset of the stretch it falls in */
    int64_t lo = l - 27 * 3600, hi = l + 27 * 3600, ch[32], best = hi, c;
    int n = changes(tz, lo, hi, ch, 32), i;

    c = l - rlaas_tz_offset(tz, lo);
    if (c >= lo && c < best && rlaas_tz_local(tz, c) >= l)
        best = c;
    for (i = 0; i < n; i++) {
        if (ch[i] < best && rlaas_tz_local(tz, ch[i]) >= l)
            best = ch[i];
        c = l - rlaas_tz_offset(tz, ch[i]);
        if (c >= lo && c < best && rlaas_tz_local(tz, c) >= l)
            best = c;
    }
    return best;
}
