#include "rlaas_calendar.h"

#include "apr_file_io.h"
#include "apr_hash.h"
#include "apr_lib.h"
#include "apr_strings.h"

/* Zones read in this configuration, by name: a zone named by every
 * virtual host is read once. In the configuration's pool. */
#define ZONES_KEY "rlaas-calendar-zones"

/* The largest TZif file read (tzdata's are a few kB). */
#define TZIF_MAX (1 << 20)

/* UTC: no transitions, offset 0 (what rlaas_tz_utc makes) */
static const rlaas_tz_t utc;

/* DURATION followed by WORD (which must be "calendar"): a calendar window
 * into *out (allocated from cmd->pool; its zone NULL: the host's). */
static const char *calendar_parse(cmd_parms *cmd, const char *what,
                                  const char *duration, const char *word,
                                  const rlaas_cal_t **out)
{
    rlaas_cal_t *c = apr_pcalloc(cmd->pool, sizeof(*c));
    const char *err;

    if (strcasecmp(word, RLAAS_CAL_WORD) != 0)
        return apr_psprintf(cmd->pool,
                            "%s: invalid word '%s' after '%s': expected "
                            "'" RLAAS_CAL_WORD "' (a window of days, weeks "
                            "or months aligned to the calendar)",
                            what, word, duration);
    if ((err = rlaas_cal_parse(duration, c)) != NULL)
        return apr_psprintf(
            cmd->pool, "%s: invalid value '%s " RLAAS_CAL_WORD "': expected %s",
            what, duration, err);
    *out = c;
    return NULL;
}

const char *rlaas_calendar_window(cmd_parms *cmd, const char *what,
                                  const char *arg, const char *word,
                                  const rlaas_cal_t **cal, int64_t *ms)
{
    const char *err;

    *cal = NULL;
    if (word != NULL) {
        if ((err = calendar_parse(cmd, what, arg, word, cal)) != NULL)
            return err;
        *ms = rlaas_cal_nominal_ms(*cal);
        return NULL;
    }
    if ((err = rlaas_parse_duration_ms(arg, 1, RLAAS_WINDOW_MAX_MS, ms)) !=
        NULL)
        return apr_psprintf(cmd->pool,
                            "%s: invalid window '%s': expected %s, from 1ms "
                            "to 30d (or Nd, Nw, NM followed by "
                            "'" RLAAS_CAL_WORD "')",
                            what, arg, err);
    return NULL;
}

const char *rlaas_calendar_strategy(cmd_parms *cmd, const char *what,
                                    const char *arg, const rlaas_cal_t *cal,
                                    rlaas_strategy_e st)
{
    if (cal == NULL || st == RLAAS_STRATEGY_UNSET || st == RLAAS_STRATEGY_FIXED)
        return NULL;
    return apr_psprintf(cmd->pool,
                        "%s: invalid value '%s': a calendar window "
                        "(" RLAAS_D_WINDOW " N " RLAAS_CAL_WORD
                        ") counts with the fixed strategy only; expected "
                        "fixed, or a window without '" RLAAS_CAL_WORD "'",
                        what, arg);
}

/* Zone names as tzdata spells them: letters, digits, '_', '-', '+' and
 * '/' between non-empty parts, none starting with '.'. */
static int zone_name_ok(const char *s)
{
    size_t i, n = strlen(s);

    if (n == 0 || n > 255 || s[0] == '/' || s[n - 1] == '/')
        return 0;
    for (i = 0; i < n; i++) {
        char ch = s[i];

        if ((i == 0 || s[i - 1] == '/') && (ch == '.' || ch == '/'))
            return 0;
        if (!apr_isalnum(ch) && ch != '_' && ch != '-' && ch != '+' &&
            ch != '/')
            return 0;
    }
    return 1;
}

static apr_status_t free_zone(void *data)
{
    rlaas_tz_free(data);
    return APR_SUCCESS;
}

/* Reads the zone's TZif file into a zone of p: NULL, or what is wrong. */
static const char *read_zone(apr_pool_t *p, const char *name, rlaas_tz_t **out)
{
    const char *path = apr_pstrcat(p, RLAAS_ZONEINFO_DIR "/", name, NULL);
    apr_finfo_t fi;
    apr_file_t *f;
    apr_size_t got;
    unsigned char *buf;
    rlaas_tz_t *tz;
    const char *err;

    if (apr_stat(&fi, path, APR_FINFO_TYPE | APR_FINFO_SIZE, p) !=
            APR_SUCCESS ||
        fi.filetype != APR_REG)
        return apr_pstrcat(p, "no such zone in " RLAAS_ZONEINFO_DIR, NULL);
    if (fi.size > TZIF_MAX)
        return "the file is too large for a zone";
    buf = apr_palloc(p, (apr_size_t)fi.size + 1);
    if (apr_file_open(&f, path, APR_FOPEN_READ, 0, p) != APR_SUCCESS ||
        apr_file_read_full(f, buf, (apr_size_t)fi.size, &got) != APR_SUCCESS)
        return "the zone's file can't be read";
    apr_file_close(f);
    tz = apr_pcalloc(p, sizeof(*tz));
    if ((err = rlaas_tz_read_tzif(tz, buf, got)) != NULL)
        return err;
    apr_pool_cleanup_register(p, tz, free_zone, apr_pool_cleanup_null);
    *out = tz;
    return NULL;
}

const char *rlaas_calendar_set_zone(cmd_parms *cmd, void *dummy,
                                    const char *arg)
{
    rlaas_server_conf_t *sc = rlaas_server_conf(cmd->server);
    apr_hash_t *zones = NULL;
    rlaas_tz_t *tz;
    const char *err;

    (void)dummy;
    if (!zone_name_ok(arg))
        return apr_psprintf(cmd->pool,
                            "%s: invalid value '%s': expected a time zone "
                            "name of the system's tzdata, such as UTC, "
                            "Europe/Paris or America/New_York",
                            cmd->cmd->name, arg);
    apr_pool_userdata_get((void **)&zones, ZONES_KEY, cmd->pool);
    if (zones == NULL) {
        zones = apr_hash_make(cmd->pool);
        apr_pool_userdata_set(zones, ZONES_KEY, NULL, cmd->pool);
    }
    tz = apr_hash_get(zones, arg, APR_HASH_KEY_STRING);
    if (tz == NULL) {
        if ((err = read_zone(cmd->pool, arg, &tz)) != NULL)
            return apr_psprintf(cmd->pool,
                                "%s: invalid value '%s': %s; expected a "
                                "time zone name of the system's tzdata "
                                "(" RLAAS_ZONEINFO_DIR "), such as UTC, "
                                "Europe/Paris or America/New_York",
                                cmd->cmd->name, arg, err);
        apr_hash_set(zones, apr_pstrdup(cmd->pool, arg), APR_HASH_KEY_STRING,
                     tz);
    }
    sc->tz = tz;
    sc->tz_name = apr_pstrdup(cmd->pool, arg);
    return NULL;
}

const rlaas_tz_t *rlaas_calendar_zone(const rlaas_server_conf_t *sc)
{
    return sc->tz != NULL ? sc->tz : &utc;
}

rlaas_cal_table_t *rlaas_calendar_table(apr_pool_t *p, const rlaas_cal_t *cal,
                                        const rlaas_tz_t *tz, int64_t now_ms,
                                        const char **arg)
{
    rlaas_cal_table_t *tb = apr_palloc(p, sizeof(*tb));
    rlaas_cal_t c = *cal;
    char *buf = apr_palloc(p, RLAAS_CAL_ARG_MAX + 1);

    c.tz = tz;
    rlaas_cal_table(&c, now_ms, tb);
    rlaas_cal_arg(tb, buf);
    *arg = buf;
    return tb;
}
