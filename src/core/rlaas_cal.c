#include "rlaas_cal.h"

#include <string.h>

#include "rlaas_verdict.h"

#define DAY_S 86400

const char *rlaas_cal_parse(const char *s, rlaas_cal_t *out)
{
    static const char accepted[] =
        "a calendar period: N days (1d to 31d), weeks (1w to 52w) or months "
        "(1M, 2M, 3M, 4M, 6M or 12M; M is months, m minutes) followed by "
        "the word calendar; hours and minutes need no calendar";
    int n = 0, i;

    for (i = 0; s[i] >= '0' && s[i] <= '9' && i < 3; i++)
        n = n * 10 + (s[i] - '0');
    if (i == 0 || n < 1 || s[i] == '\0' || s[i + 1] != '\0')
        return accepted;
    switch (s[i]) {
    case 'd':
        if (n > 31)
            return accepted;
        break;
    case 'w':
        if (n > 52)
            return accepted;
        break;
    case 'M':
        if (12 % n != 0)
            return accepted;
        break;
    default:
        return accepted;
    }
    out->unit = s[i];
    out->n = n;
    out->tz = NULL;
    return NULL;
}

int64_t rlaas_cal_nominal_ms(const rlaas_cal_t *c)
{
    int64_t days = c->unit == 'w' ? 7 : c->unit == 'M' ? 31 : 1;

    return (int64_t)c->n * days * DAY_S * 1000;
}

void rlaas_cal_tag(const rlaas_cal_t *c, char *tag)
{
    size_t n = rlaas_fmt_i64(tag, c->n);

    tag[n++] = c->unit;
    tag[n] = '\0';
}

/* The first day of the period holding local day d, and of the next. */
static int64_t start_day(const rlaas_cal_t *c, int64_t d)
{
    int64_t y, k;
    int m, dd;

    switch (c->unit) {
    case 'w':
        /* weeks from Monday 1970-01-05, day 4 */
        k = rlaas_floor_div(d - 4, 7);
        return 4 + 7 * (k - rlaas_floor_mod(k, c->n));
    case 'M':
        rlaas_tz_civil(d, &y, &m, &dd);
        k = y * 12 + (m - 1);
        k -= rlaas_floor_mod(k, c->n);
        return rlaas_tz_days(rlaas_floor_div(k, 12),
                             (int)rlaas_floor_mod(k, 12) + 1, 1);
    default:
        return d - rlaas_floor_mod(d, c->n);
    }
}

static int64_t next_day(const rlaas_cal_t *c, int64_t start)
{
    int64_t y, k;
    int m, dd;

    switch (c->unit) {
    case 'w':
        return start + 7 * (int64_t)c->n;
    case 'M':
        rlaas_tz_civil(start, &y, &m, &dd);
        k = y * 12 + (m - 1) + c->n;
        return rlaas_tz_days(rlaas_floor_div(k, 12),
                             (int)rlaas_floor_mod(k, 12) + 1, 1);
    default:
        return start + c->n;
    }
}

/* Where local day d starts, in UTC seconds. */
static int64_t day_at(const rlaas_cal_t *c, int64_t d)
{
    return rlaas_tz_first_at(c->tz, d * DAY_S);
}

/* The period holding UTC second t, in UTC seconds. Local dates may go
 * back (a clock set back across midnight): the periods are the stretches
 * between the starts of their first days, which always go forward, and
 * t's is found from its local date, moved by at most a period or two. */
static void period_s(const rlaas_cal_t *c, int64_t t, int64_t *s, int64_t *e)
{
    int64_t d = start_day(c, rlaas_floor_div(rlaas_tz_local(c->tz, t), DAY_S));
    int i;

    for (i = 0; i < 4; i++) {
        *s = day_at(c, d);
        *e = day_at(c, next_day(c, d));
        if (t < *s)
            d = start_day(c, d - 1);
        else if (t >= *e)
            d = next_day(c, d);
        else
            return;
    }
}

void rlaas_cal_period(const rlaas_cal_t *c, int64_t t, int64_t *start,
                      int64_t *end)
{
    int64_t s, e;

    period_s(c, rlaas_floor_div(t, 1000), &s, &e);
    *start = s * 1000;
    *end = e * 1000;
}

void rlaas_cal_table(const rlaas_cal_t *c, int64_t t, rlaas_cal_table_t *tb)
{
    int64_t s, e, s0, e0;

    rlaas_cal_tag(c, tb->tag);
    period_s(c, rlaas_floor_div(t, 1000), &s, &e);
    period_s(c, s - 1, &s0, &e0);
    tb->b[0] = s0 * 1000;
    tb->b[1] = s * 1000;
    tb->b[2] = e * 1000;
    period_s(c, e, &s0, &e0);
    tb->b[3] = e0 * 1000;
}

size_t rlaas_cal_arg(const rlaas_cal_table_t *tb, char *buf)
{
    size_t n = strlen(tb->tag);
    int i;

    memcpy(buf, tb->tag, n);
    for (i = 0; i < 4; i++) {
        buf[n++] = '/';
        n += rlaas_fmt_i64(buf + n, tb->b[i]);
    }
    buf[n] = '\0';
    return n;
}

static int read_num(const char **p, const char *end, int64_t *v)
{
    const char *s = *p;

    *v = 0;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
        if (*v > RLAAS_CAL_MS_MAX / 10)
            return 0;
        *v = *v * 10 + (**p - '0');
    }
    return *p > s && *p - s <= 16;
}

int rlaas_cal_arg_read(const char *s, size_t len, rlaas_cal_table_t *tb)
{
    const char *p = s, *end = s + len;
    size_t t = 0;
    int i;

    while (p < end && *p >= '0' && *p <= '9' && t < RLAAS_CAL_TAG_MAX)
        tb->tag[t++] = *p++;
    if (t == 0 || p >= end || t >= RLAAS_CAL_TAG_MAX ||
        (*p != 'd' && *p != 'w' && *p != 'M'))
        return 0;
    tb->tag[t++] = *p++;
    tb->tag[t] = '\0';
    for (i = 0; i < 4; i++) {
        if (p >= end || *p++ != '/' || !read_num(&p, end, &tb->b[i]) ||
            tb->b[i] >= RLAAS_CAL_MS_MAX)
            return 0;
        if (i > 0 && (tb->b[i] <= tb->b[i - 1] ||
                      tb->b[i] - tb->b[i - 1] > RLAAS_CAL_PERIOD_MAX))
            return 0;
    }
    return p == end;
}

int rlaas_cal_pick(const rlaas_cal_table_t *tb, int64_t t, int64_t *start,
                   int64_t *end)
{
    int i;

    for (i = 0; i < 3; i++) {
        if (t >= tb->b[i] && t < tb->b[i + 1]) {
            *start = tb->b[i];
            *end = tb->b[i + 1];
            return 1;
        }
    }
    return 0;
}

size_t rlaas_cal_name(const char *tag, int64_t start, char *buf)
{
    size_t n = strlen(tag);

    memcpy(buf, tag, n);
    buf[n++] = '+';
    n += rlaas_fmt_i64(buf + n, start);
    buf[n] = '\0';
    return n;
}
