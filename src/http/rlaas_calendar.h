/*
 * Calendar windows in the configuration and the request: `RLaaSWindow 1d
 * calendar` (also weeks and months), the `calendar` word of RLaaSPolicy,
 * and RLaaSTimeZone, the zone a host's periods start at midnight in
 * (src/core/rlaas_cal.h, rlaas_tz.h).
 *
 * A zone is read once, at configuration time, from the system's tzdata
 * (/usr/share/zoneinfo/NAME); "UTC", the default, needs no file. A
 * request asks for the periods around the module's clock (the local
 * engine's time; Redis picks among them by its own TIME), as the script
 * argument "<tag>/<b0>/<b1>/<b2>/<b3>".
 *
 * Only fixed counts in calendar periods: a calendar window with another
 * strategy is refused where one section (or RLaaSPolicy) sets both, and
 * leaves a request undecided where a section inherits one and sets the
 * other (RLAAS0190).
 */
#ifndef RLAAS_CALENDAR_H
#define RLAAS_CALENDAR_H

#include "httpd.h"
#include "http_config.h"

#include "rlaas_cal.h"
#include "rlaas_config.h"

#define RLAAS_D_TIME_ZONE "RLaaSTimeZone"
#define RLAAS_CAL_WORD    "calendar"

/* Where zone names are looked up. */
#define RLAAS_ZONEINFO_DIR "/usr/share/zoneinfo"

/* A window: DURATION, or DURATION followed by WORD (NULL: none; else it
 * must be "calendar"): its length into *ms, its calendar into *cal (NULL:
 * a rolling window). what names the directive (and the policy) in
 * messages. NULL, or the message. RLaaSWindow and RLaaSPolicy's window
 * read alike through it. */
const char *rlaas_calendar_window(cmd_parms *cmd, const char *what,
                                  const char *arg, const char *word,
                                  const rlaas_cal_t **cal, int64_t *ms);

/* The same-section check: NULL, or why strategy st can't count in a
 * calendar window (what: the directive, arg its value). */
const char *rlaas_calendar_strategy(cmd_parms *cmd, const char *what,
                                    const char *arg, const rlaas_cal_t *cal,
                                    rlaas_strategy_e st);

/* RLaaSTimeZone NAME (server config, virtual host). */
const char *rlaas_calendar_set_zone(cmd_parms *cmd, void *dummy,
                                    const char *arg);

/* The zone of a host (UTC when none is named). */
const rlaas_tz_t *rlaas_calendar_zone(const rlaas_server_conf_t *sc);

/* The periods of cal in zone tz around now_ms, allocated from p, and
 * their script argument in *arg. */
rlaas_cal_table_t *rlaas_calendar_table(apr_pool_t *p, const rlaas_cal_t *cal,
                                        const rlaas_tz_t *tz, int64_t now_ms,
                                        const char **arg);

#define RLAAS_CALENDAR_CMDS                                                    \
    AP_INIT_TAKE1(RLAAS_D_TIME_ZONE, rlaas_calendar_set_zone, NULL, RSRC_CONF, \
                  "The time zone calendar windows start their days in: a "     \
                  "tzdata name such as Europe/Paris (default UTC)")

#endif
