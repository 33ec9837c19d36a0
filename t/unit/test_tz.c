/* Time zones (src/core/rlaas_tz.c): TZif files and POSIX rules read
 * without the C library, then checked against it: the offset at instants
 * from 1900 to 2100 in zones with every kind of rule (half-hour DST,
 * negative DST, two-hour DST, midnight transitions, a skipped day, the
 * far future from the files' footers) agrees with glibc's localtime_r
 * under the same TZ, instant by instant; and where a day starts
 * (rlaas_tz_first_at) is the first instant of that local date. The
 * tzdata files are the system's (/usr/share/zoneinfo, package tzdata). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rlaas_tz.h"

#define ZONEINFO "/usr/share/zoneinfo/"
#define T2040    2208988800LL  /* 2040-01-01T00:00:00Z */
#define T1900    -2208988800LL /* 1900-01-01T00:00:00Z */

static const char *const zones[] = {
    "Europe/Paris",      "America/New_York", "Australia/Lord_Howe",
    "America/Santiago",  "Pacific/Apia",     "Asia/Kolkata",
    "America/Sao_Paulo", "Europe/Dublin",    "Antarctica/Troll",
    "Africa/Casablanca", "Asia/Tehran",      "America/St_Johns",
    "Pacific/Chatham",   "Asia/Gaza",        "UTC"};

static unsigned char *slurp(const char *name, size_t *len)
{
    char path[256];
    unsigned char *buf;
    FILE *f;
    long n;

    snprintf(path, sizeof(path), ZONEINFO "%s", name);
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
    const char *err = rlaas_tz_read_tzif(tz, buf, len);

    if (err != NULL)
        print_error("%s: %s\n", name, err);
    assert_null(err);
    free(buf);
}

/* glibc's offset at t under TZ=tzvalue (single-threaded: this test). */
static long libc_offset(const char *tzvalue, int64_t t)
{
    static char current[256];
    struct tm tm;
    time_t tt = (time_t)t;

    if (strcmp(current, tzvalue) != 0) {
        snprintf(current, sizeof(current), "%s", tzvalue);
        setenv("TZ", tzvalue, 1);
        tzset();
    }
    localtime_r(&tt, &tm);
    return tm.tm_gmtoff;
}

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Every transition's neighbourhood and random instants, from `from` to
 * 2100. */
static void agree(const rlaas_tz_t *tz, const char *tzvalue, int64_t from)
{
    int64_t to = 4102444800LL, t;
    size_t i;
    int k, bad = 0;

    for (i = 0; i < tz->n; i++) {
        for (k = -2; k <= 1; k++) {
            t = tz->at[i] + k;
            if (t < from)
                continue;
            if (rlaas_tz_offset(tz, t) != libc_offset(tzvalue, t) && bad++ < 5)
                print_error("%s at %lld: %d, libc %ld\n", tzvalue, (long long)t,
                            rlaas_tz_offset(tz, t), libc_offset(tzvalue, t));
        }
    }
    for (k = 0; k < 100000; k++) {
        t = from + (int64_t)(rnd() % (uint64_t)(to - from));
        if (rlaas_tz_offset(tz, t) != libc_offset(tzvalue, t) && bad++ < 5)
            print_error("%s at %lld: %d, libc %ld\n", tzvalue, (long long)t,
                        rlaas_tz_offset(tz, t), libc_offset(tzvalue, t));
    }
    /* four years past the files' transitions (2040: the footers' rules),
     * every half hour */
    for (t = T2040; t < T2040 + 4 * 366 * 86400LL; t += 1800) {
        if (rlaas_tz_offset(tz, t) != libc_offset(tzvalue, t) && bad++ < 5)
            print_error("%s at %lld: %d, libc %ld\n", tzvalue, (long long)t,
                        rlaas_tz_offset(tz, t), libc_offset(tzvalue, t));
    }
    assert_int_equal(bad, 0);
}

static void files_agree_with_libc(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        rlaas_tz_t tz;
        char tzvalue[256];

        load(zones[i], &tz);
        snprintf(tzvalue, sizeof(tzvalue), ":%s", zones[i]);
        agree(&tz, tzvalue, T1900);
        rlaas_tz_free(&tz);
    }
}

static void rules_agree_with_libc(void **state)
{
    static const char *const rules[] = {
        "CET-1CEST,M3.5.0,M10.5.0/3",
        "EST5EDT,M3.2.0,M11.1.0",
        "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
        "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
        "IST-1GMT0,M10.5.0,M3.5.0/1",
        "<+0530>-5:30",
        "<-03>3",
        "NZST-12NZDT,M9.5.0,M4.1.0/3",
        "AAA+05:17:23BBB+04:17:23,J60/1:30,J300/-1",
        "XXX-2YYY,100/0,250/26",
        "<TTT>-23:59:58",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        rlaas_tz_t tz;
        const char *err = rlaas_tz_read_rule(&tz, rules[i]);

        if (err != NULL)
            print_error("%s: %s\n", rules[i], err);
        assert_null(err);
        /* glibc applies a rule's dates from 1970 on only */
        agree(&tz, rules[i], 0);
        rlaas_tz_free(&tz);
    }
}

/* A rule without dates takes the United States' rules, as tzcode does
 * (glibc derives its own from a posixrules file: not compared). */
static void rule_default_dates(void **state)
{
    rlaas_tz_t tz;

    (void)state;
    assert_null(rlaas_tz_read_rule(&tz, "ABC5DEF"));
    /* 2024-03-10 07:00 UTC: 02:00 EST became 03:00 EDT */
    assert_int_equal(rlaas_tz_offset(&tz, 1710053999), -5 * 3600);
    assert_int_equal(rlaas_tz_offset(&tz, 1710054000), -4 * 3600);
    /* 2024-11-03 06:00 UTC: 02:00 EDT became 01:00 EST */
    assert_int_equal(rlaas_tz_offset(&tz, 1730613599), -4 * 3600);
    assert_int_equal(rlaas_tz_offset(&tz, 1730613600), -5 * 3600);
    rlaas_tz_free(&tz);
}

static void rules_refused(void **state)
{
    static const char *const bad[] = {
        "",
        "UTC",
        "CET",
        "AB-1",
        "CET-1CEST,M3.5.0",
        "CET+",
        "CET-25",
        "CET-1:60",
        "<AB>-1",
        "CET-1CEST,M13.1.0,M1.1.0",
        "X-1Y",
        "CET-1 ",
        "CET-1CEST,J0,J100",
        "CET-1CEST,M3.6.0,M10.5.0",
        "CET-1CEST,M3.5.7,M10.5.0",
        "CET-1CEST,366,10",
        "CET-1CEST,M3.5.0/168,M10.5.0",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rlaas_tz_t tz;

        if (rlaas_tz_read_rule(&tz, bad[i]) == NULL)
            print_error("accepted: '%s'\n", bad[i]);
        assert_non_null(rlaas_tz_read_rule(&tz, bad[i]));
    }
}

/* Broken files: truncated anywhere, a byte flipped anywhere: refused or
 * read, never a crash (ASan/valgrind runs make that visible). */
static void broken_files(void **state)
{
    size_t len, cut;
    unsigned char *buf = slurp("Europe/Paris", &len), *copy;
    rlaas_tz_t tz;

    (void)state;
    for (cut = 0; cut < len; cut++) {
        copy = malloc(cut + 1);
        memcpy(copy, buf, cut);
        if (rlaas_tz_read_tzif(&tz, copy, cut) == NULL)
            rlaas_tz_free(&tz);
        free(copy);
    }
    for (cut = 0; cut < len; cut++) {
        buf[cut] ^= 0x5a;
        if (rlaas_tz_read_tzif(&tz, buf, len) == NULL) {
            (void)rlaas_tz_offset(&tz, 1700000000);
            (void)rlaas_tz_first_at(&tz, 1700000000);
            rlaas_tz_free(&tz);
        }
        buf[cut] ^= 0x5a;
    }
    assert_non_null(rlaas_tz_read_tzif(&tz, (const unsigned char *)"TZif", 4));
    free(buf);
}

/* first_at(l): local time there is >= l, one second before it is not,
 * and nowhere in the 27 hours before it is (looked at every quarter of
 * an hour: the transitions of these years fall on quarter hours). */
static void check_first_at(const rlaas_tz_t *tz, int64_t l)
{
    int64_t b = rlaas_tz_first_at(tz, l), t;

    assert_true(rlaas_tz_local(tz, b) >= l);
    assert_true(rlaas_tz_local(tz, b - 1) < l);
    for (t = b - 27 * 3600; t < b; t += 900) {
        if (rlaas_tz_local(tz, t) >= l) {
            print_error("first_at(%lld) = %lld but %lld is local %lld\n",
                        (long long)l, (long long)b, (long long)t,
                        (long long)rlaas_tz_local(tz, t));
            fail();
        }
    }
}

static void day_starts(void **state)
{
    size_t i;
    int64_t d;

    (void)state;
    for (i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
        rlaas_tz_t tz;

        load(zones[i], &tz);
        /* 2009 to 2031, every day: 23 years of transitions */
        for (d = rlaas_tz_days(2009, 1, 1); d < rlaas_tz_days(2031, 1, 1);
             d += 1)
            check_first_at(&tz, d * 86400);
        rlaas_tz_free(&tz);
    }
}

/* Days that are not 24 hours long, in a zone with a file and with its
 * rule alone. */
static void dst_days(void **state)
{
    rlaas_tz_t tz, rule;
    int64_t d = rlaas_tz_days(2024, 3, 31), a, b;

    (void)state;
    load("Europe/Paris", &tz);
    assert_null(rlaas_tz_read_rule(&rule, "CET-1CEST,M3.5.0,M10.5.0/3"));
    /* spring forward: 23 hours, from 23:00 UTC the day before */
    a = rlaas_tz_first_at(&tz, d * 86400);
    b = rlaas_tz_first_at(&tz, (d + 1) * 86400);
    assert_int_equal(a, d * 86400 - 3600);
    assert_int_equal(b - a, 23 * 3600);
    assert_int_equal(rlaas_tz_first_at(&rule, d * 86400), a);
    /* fall back: 25 hours */
    d = rlaas_tz_days(2024, 10, 27);
    a = rlaas_tz_first_at(&tz, d * 86400);
    b = rlaas_tz_first_at(&tz, (d + 1) * 86400);
    assert_int_equal(b - a, 25 * 3600);
    /* 2090, past the file's transitions: the footer's rule */
    d = rlaas_tz_days(2090, 3, 26);
    a = rlaas_tz_first_at(&tz, d * 86400);
    b = rlaas_tz_first_at(&tz, (d + 1) * 86400);
    assert_int_equal(b - a, 23 * 3600);
    assert_int_equal(rlaas_tz_first_at(&rule, d * 86400), a);
    rlaas_tz_free(&tz);
    rlaas_tz_free(&rule);
}

/* Santiago springs forward at midnight: that day starts at 01:00, the
 * transition; Apia skipped 2011-12-30 altogether. */
static void skipped_midnights(void **state)
{
    rlaas_tz_t tz;
    int64_t d = rlaas_tz_days(2024, 9, 8), a;

    (void)state;
    load("America/Santiago", &tz);
    a = rlaas_tz_first_at(&tz, d * 86400);
    /* 2024-09-08 04:00 UTC: 00:00 -04 became 01:00 -03 */
    assert_int_equal(a, d * 86400 + 4 * 3600);
    assert_int_equal(rlaas_tz_local(&tz, a), d * 86400 + 3600);
    rlaas_tz_free(&tz);
    load("Pacific/Apia", &tz);
    d = rlaas_tz_days(2011, 12, 30);
    assert_int_equal(rlaas_tz_first_at(&tz, d * 86400),
                     rlaas_tz_first_at(&tz, (d + 1) * 86400));
    rlaas_tz_free(&tz);
}

static void civil_round_trip(void **state)
{
    int64_t d, y;
    int m, dd;

    (void)state;
    assert_int_equal(rlaas_tz_days(1970, 1, 1), 0);
    assert_int_equal(rlaas_tz_days(2000, 3, 1), 11017);
    assert_int_equal(rlaas_tz_days(1969, 12, 31), -1);
    for (d = -800000; d < 800000; d += 7) {
        rlaas_tz_civil(d, &y, &m, &dd);
        assert_int_equal(rlaas_tz_days(y, m, dd), d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(civil_round_trip),
        cmocka_unit_test(rules_refused),
        cmocka_unit_test(rules_agree_with_libc),
        cmocka_unit_test(rule_default_dates),
        cmocka_unit_test(files_agree_with_libc),
        cmocka_unit_test(broken_files),
        cmocka_unit_test(dst_days),
        cmocka_unit_test(skipped_midnights),
        cmocka_unit_test(day_starts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
