/* Calendar windows (src/core/rlaas_cal.c): what `RLaaSWindow 1d calendar`
 * accepts, the periods of days, weeks and months in a time zone, days of
 * 23 and 25 hours, the last millisecond of a day and the first of the
 * next in two periods, and the table of boundaries the scripts get. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlaas_cal.h"

#define H  3600000LL
#define DY (24 * H)

static unsigned char *slurp(const char *name, size_t *len)
{
    char path[256];
    unsigned char *buf;
    FILE *f;
    long n;

    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
    f = fopen(path, "rb");
    if (f == NULL) {
        print_error("%s: not found: the tests need the tzdata package\n", path);
        fail();
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void load(const char *name, rlaas_tz_t *tz)
{
    size_t len;
    unsigned char *buf = slurp(name, &len);

    assert_null(rlaas_tz_read_tzif(tz, buf, len));
    free(buf);
}

/* ms of a UTC date and time */
static int64_t utc(int y, int m, int d, int hh, int mm, int ss)
{
    return (rlaas_tz_days(y, m, d) * 86400 + hh * 3600 + mm * 60 + ss) * 1000LL;
}

static void parse(void **state)
{
    static const char *const good[] = {"1d", "31d", "1w", "52w", "1M",
                                       "2M", "3M",  "4M", "6M",  "12M"};
    static const char *const bad[] = {
        "",   "d",  "0d",  "32d",  "53w", "5M",  "7M",  "1m",  "1h",  "1s",
        "1D", "1W", "1dd", "100d", "1ms", "-1d", " 1d", "1d ", "24M", "0M"};
    rlaas_cal_t c;
    char tag[RLAAS_CAL_TAG_MAX + 1];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_null(rlaas_cal_parse(good[i], &c));
        rlaas_cal_tag(&c, tag);
        assert_string_equal(tag, good[i]);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (rlaas_cal_parse(bad[i], &c) == NULL)
            print_error("accepted: '%s'\n", bad[i]);
        assert_non_null(rlaas_cal_parse(bad[i], &c));
    }
    assert_null(rlaas_cal_parse("1M", &c));
    assert_int_equal(rlaas_cal_nominal_ms(&c), 31 * DY);
    assert_null(rlaas_cal_parse("2w", &c));
    assert_int_equal(rlaas_cal_nominal_ms(&c), 14 * DY);
}

static void check(const char *spec, const rlaas_tz_t *tz, int64_t t,
                  int64_t want_s, int64_t want_e)
{
    rlaas_cal_t c;
    int64_t s, e;

    assert_null(rlaas_cal_parse(spec, &c));
    c.tz = tz;
    rlaas_cal_period(&c, t, &s, &e);
    if (s != want_s || e != want_e)
        print_error("%s at %lld: [%lld, %lld), expected [%lld, %lld)\n", spec,
                    (long long)t, (long long)s, (long long)e, (long long)want_s,
                    (long long)want_e);
    assert_true(s == want_s && e == want_e);
}

static void utc_periods(void **state)
{
    rlaas_tz_t tz;
    int64_t t = utc(2024, 5, 15, 13, 45, 7) + 123;

    (void)state;
    rlaas_tz_utc(&tz);
    check("1d", &tz, t, utc(2024, 5, 15, 0, 0, 0), utc(2024, 5, 16, 0, 0, 0));
    /* Wednesday: the week from Monday the 13th */
    check("1w", &tz, t, utc(2024, 5, 13, 0, 0, 0), utc(2024, 5, 20, 0, 0, 0));
    check("1M", &tz, t, utc(2024, 5, 1, 0, 0, 0), utc(2024, 6, 1, 0, 0, 0));
    check("3M", &tz, t, utc(2024, 4, 1, 0, 0, 0), utc(2024, 7, 1, 0, 0, 0));
    check("6M", &tz, t, utc(2024, 1, 1, 0, 0, 0), utc(2024, 7, 1, 0, 0, 0));
    check("12M", &tz, t, utc(2024, 1, 1, 0, 0, 0), utc(2025, 1, 1, 0, 0, 0));
    /* February of a leap year, December into January */
    check("1M", &tz, utc(2024, 2, 29, 23, 59, 59), utc(2024, 2, 1, 0, 0, 0),
          utc(2024, 3, 1, 0, 0, 0));
    check("1M", &tz, utc(2023, 12, 31, 12, 0, 0), utc(2023, 12, 1, 0, 0, 0),
          utc(2024, 1, 1, 0, 0, 0));
    /* 2 days from 1970-01-01: day 19858 (2024-05-15) is even */
    check("2d", &tz, t, utc(2024, 5, 15, 0, 0, 0), utc(2024, 5, 17, 0, 0, 0));
    /* 2 weeks from Monday 1970-01-05 */
    check("2w", &tz, utc(2024, 5, 15, 0, 0, 0), utc(2024, 5, 13, 0, 0, 0),
          utc(2024, 5, 27, 0, 0, 0));
}

/* The last millisecond of a day and the first of the next: two periods. */
static void midnight_to_the_ms(void **state)
{
    rlaas_tz_t tz;
    int64_t mid = utc(2024, 5, 16, 0, 0, 0);

    (void)state;
    rlaas_tz_utc(&tz);
    check("1d", &tz, mid - 1, mid - DY, mid);
    check("1d", &tz, mid, mid, mid + DY);
    load("Europe/Paris", &tz);
    /* midnight in Paris in May: 22:00 UTC */
    mid = utc(2024, 5, 15, 22, 0, 0);
    check("1d", &tz, mid - 1, mid - DY, mid);
    check("1d", &tz, mid, mid, mid + DY);
    rlaas_tz_free(&tz);
}

static void dst_days(void **state)
{
    rlaas_tz_t tz;
    rlaas_cal_t c;
    int64_t s, e;

    (void)state;
    load("Europe/Paris", &tz);
    /* 2024-03-31: 23 hours, 2024-10-27: 25 hours */
    check("1d", &tz, utc(2024, 3, 31, 12, 0, 0), utc(2024, 3, 30, 23, 0, 0),
          utc(2024, 3, 31, 22, 0, 0));
    check("1d", &tz, utc(2024, 10, 27, 12, 0, 0), utc(2024, 10, 26, 22, 0, 0),
          utc(2024, 10, 27, 23, 0, 0));
    /* the week and the month that hold them are an hour short or long */
    check("1w", &tz, utc(2024, 3, 31, 12, 0, 0), utc(2024, 3, 24, 23, 0, 0),
          utc(2024, 3, 31, 22, 0, 0));
    check("1M", &tz, utc(2024, 3, 15, 0, 0, 0), utc(2024, 2, 29, 23, 0, 0),
          utc(2024, 3, 31, 22, 0, 0));
    assert_null(rlaas_cal_parse("1d", &c));
    c.tz = &tz;
    rlaas_cal_period(&c, utc(2024, 3, 31, 1, 59, 59), &s, &e);
    assert_int_equal(e - s, 23 * H);
    rlaas_tz_free(&tz);
    /* the same from the rule alone */
    assert_null(rlaas_tz_read_rule(&tz, "CET-1CEST,M3.5.0,M10.5.0/3"));
    check("1d", &tz, utc(2024, 10, 27, 12, 0, 0), utc(2024, 10, 26, 22, 0, 0),
          utc(2024, 10, 27, 23, 0, 0));
    rlaas_tz_free(&tz);
    /* Lord Howe moves by half an hour: 23.5 and 24.5 hour days */
    load("Australia/Lord_Howe", &tz);
    rlaas_cal_period(&c, utc(2024, 10, 6, 6, 0, 0), &s, &e);
    assert_int_equal(e - s, 23 * H + H / 2);
    rlaas_cal_period(&c, utc(2024, 4, 7, 6, 0, 0), &s, &e);
    assert_int_equal(e - s, 24 * H + H / 2);
    rlaas_tz_free(&tz);
}

/* Whether s is where the local day `back` days before its local date
 * starts, and that day is the first of a period. */
static int first_day(const rlaas_cal_t *c, int64_t s, int back)
{
    int64_t day = rlaas_tz_local(c->tz, s / 1000) / 86400 - back, y;
    int m, d;

    if (rlaas_tz_first_at(c->tz, day * 86400) * 1000 != s)
        return 0;
    rlaas_tz_civil(day, &y, &m, &d);
    switch (c->unit) {
    case 'M':
        return d == 1 && (y * 12 + m - 1) % c->n == 0;
    case 'w':
        return ((day - 4) % (7 * c->n) + 7 * c->n) % (7 * c->n) == 0;
    default:
        return day % c->n == 0;
    }
}

/* Every period of random instants, 1971 to 2090, in zones of every kind:
 * it holds the instant, starts where a local day starts (a period's first
 * day), ends where the next starts, and is the period of its own first
 * and last millisecond. */
static void properties(void **state)
{
    static const char *const zones[] = {
        "Europe/Paris", "America/Santiago",    "Pacific/Apia",
        "Asia/Kolkata", "Australia/Lord_Howe", "UTC"};
    static const char *const specs[] = {"1d", "2d", "1w",  "2w",
                                        "1M", "3M", "12M", "7d"};
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    size_t z, k;
    int i;

    (void)state;
    for (z = 0; z < sizeof(zones) / sizeof(zones[0]); z++) {
        rlaas_tz_t tz;

        load(zones[z], &tz);
        for (k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
            rlaas_cal_t c;

            assert_null(rlaas_cal_parse(specs[k], &c));
            c.tz = &tz;
            for (i = 0; i < 3000; i++) {
                int64_t t, s, e, s2, e2;

                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                t = utc(1971, 1, 1, 0, 0, 0) +
                    (int64_t)(x % (uint64_t)(119LL * 365 * DY));
                rlaas_cal_period(&c, t, &s, &e);
                assert_true(s <= t && t < e);
                assert_int_equal(s % 1000, 0);
                assert_true(e - s <= RLAAS_CAL_PERIOD_MAX);
                rlaas_cal_period(&c, s, &s2, &e2);
                assert_true(s2 == s && e2 == e);
                rlaas_cal_period(&c, e - 1, &s2, &e2);
                assert_true(s2 == s && e2 == e);
                rlaas_cal_period(&c, e, &s2, &e2);
                assert_int_equal(s2, e);
                /* s is where a local day starts, a period's first day
                 * (or, for a day a zone skipped, the day after it) */
                assert_true(first_day(&c, s, 0) || first_day(&c, s, 1));
            }
        }
        rlaas_tz_free(&tz);
    }
}

static void table_and_pick(void **state)
{
    rlaas_tz_t tz;
    rlaas_cal_t c;
    rlaas_cal_table_t tb, back;
    char arg[RLAAS_CAL_ARG_MAX + 1], name[RLAAS_CAL_NAME_MAX + 1];
    int64_t t = utc(2024, 3, 31, 12, 0, 0), s, e;
    size_t n;

    (void)state;
    load("Europe/Paris", &tz);
    assert_null(rlaas_cal_parse("1d", &c));
    c.tz = &tz;
    rlaas_cal_table(&c, t, &tb);
    assert_string_equal(tb.tag, "1d");
    assert_int_equal(tb.b[0], utc(2024, 3, 29, 23, 0, 0));
    assert_int_equal(tb.b[1], utc(2024, 3, 30, 23, 0, 0));
    assert_int_equal(tb.b[2], utc(2024, 3, 31, 22, 0, 0));
    assert_int_equal(tb.b[3], utc(2024, 4, 1, 22, 0, 0));
    /* an engine whose clock is a little behind or ahead picks its own */
    assert_true(rlaas_cal_pick(&tb, tb.b[1] - 1, &s, &e));
    assert_true(s == tb.b[0] && e == tb.b[1]);
    assert_true(rlaas_cal_pick(&tb, tb.b[2], &s, &e));
    assert_true(s == tb.b[2] && e == tb.b[3]);
    assert_false(rlaas_cal_pick(&tb, tb.b[3], &s, &e));
    assert_false(rlaas_cal_pick(&tb, tb.b[0] - 1, &s, &e));
    /* the argument, and back */
    n = rlaas_cal_arg(&tb, arg);
    assert_int_equal(n, strlen(arg));
    assert_string_equal(arg, "1d/1711753200000/1711839600000/1711922400000/"
                             "1712008800000");
    assert_true(rlaas_cal_arg_read(arg, strlen(arg), &back));
    assert_string_equal(back.tag, tb.tag);
    assert_memory_equal(back.b, tb.b, sizeof(tb.b));
    n = rlaas_cal_name(tb.tag, tb.b[1], name);
    assert_int_equal(n, strlen(name));
    assert_string_equal(name, "1d+1711839600000");
    rlaas_tz_free(&tz);
}

static void arg_refused(void **state)
{
    static const char *const bad[] = {
        "",
        "1d",
        "1d/1/2/3",
        "1d/1/2/3/4/5",
        "1d/2/1/3/4",
        "1d/1/1/3/4",
        "d/1/2/3/4",
        "123d/1/2/3/4",
        "1x/1/2/3/4",
        "1d/1/2/3/4 ",
        "1d/-1/2/3/4",
        "1d/1/2/3/4503599627370496",
        "1d/1/2/3/34359738372", /* a period over 2^35 ms */
        "1d/01/2/3/00000000000000004",
    };
    rlaas_cal_table_t tb;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (rlaas_cal_arg_read(bad[i], strlen(bad[i]), &tb))
            print_error("accepted: '%s'\n", bad[i]);
        assert_false(rlaas_cal_arg_read(bad[i], strlen(bad[i]), &tb));
    }
    assert_true(rlaas_cal_arg_read("12M/1/2/3/4", 11, &tb));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse),
        cmocka_unit_test(utc_periods),
        cmocka_unit_test(midnight_to_the_ms),
        cmocka_unit_test(dst_days),
        cmocka_unit_test(properties),
        cmocka_unit_test(table_and_pick),
        cmocka_unit_test(arg_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
