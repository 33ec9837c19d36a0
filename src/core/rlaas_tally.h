/*
 * What the operator's console shows of the recent past, kept cheaply in
 * one block of memory shared by every child of a server: per row the
 * allowed and denied decisions of each of the last 64 seconds and of the
 * last 16 minutes, the slots a concurrency limit holds now,
 * and a bounded list of the identities most often denied
 * (space-saving: 32 slots; an identity that is not listed takes a free or
 * stale slot, else the least counted one, inheriting its count as its
 * error bound).
 *
 * A row counts one name (a zone or a policy) for one host (the virtual
 * host that served the request, as a key the caller makes): a console in
 * a virtual host shows that host's rows only. Rows are claimed on first
 * use, in an open-addressed table, with a compare-and-swap; the last row
 * counts what finds no room ("other", host 0). A name claimed twice at
 * the same instant may hold two rows: readers add them up.
 *
 * The request path adds with atomic operations only: a bucket is claimed
 * for its second by a compare-and-swap of its stamp; the top list is
 * updated under a try-lock that a request never waits for (when another
 * holds it, that one denial is not listed). Counts are approximate under
 * races (a bucket's reset may lose an increment made at the same instant);
 * they are a console's, not the metrics'.
 *
 * No httpd headers: the caller makes the memory and passes the time in.
 */
#ifndef RLAAS_TALLY_H
#define RLAAS_TALLY_H

#include <stddef.h>
#include <stdint.h>

/* The tally's FNV-1a basis (rlaas_fnv.h), for its rows and lists and for
 * the hosts' keys they carry: not FNV's own (a digit short of it), and
 * kept, so that what shared memory holds means the same after a restart
 * onto a new build. */
#define RLAAS_TALLY_BASIS UINT64_C(1469598103934665603)

#define RLAAS_TALLY_SECONDS                                                    \
    64                          /* per-second buckets kept (a minute + slack)  \
                                 */
#define RLAAS_TALLY_MINUTES  16 /* per-minute buckets, for the chart */
#define RLAAS_TALLY_TOP      32 /* slots of the most-denied list */
#define RLAAS_TALLY_ID_MAX   95 /* identity text kept (longer: cut) */
#define RLAAS_TALLY_NAME_MAX 79 /* a zone name (64) and ":concurrency" */

typedef struct rlaas_tally_t rlaas_tally_t;

typedef struct {
    int row;
    char id[RLAAS_TALLY_ID_MAX + 1];
    uint32_t count; /* denials counted since it took its slot */
    uint32_t error; /* at most this many of them are another's */
    int64_t last_s; /* last denial, seconds */
} rlaas_tally_top_t;

/* Bytes a tally of rows rows takes. */
size_t rlaas_tally_bytes(int rows);

/* Lays out a tally of rows rows (at least 2) in mem (rlaas_tally_bytes(rows)
 * long), or finds the one laid out there before with the same number of
 * rows (a graceful restart keeps its counts). NULL if mem is too small. */
rlaas_tally_t *rlaas_tally_init(void *mem, size_t bytes, int rows);

int rlaas_tally_rows(const rlaas_tally_t *t);

/* The row of name for host (a key other than 0), claimed if it has
 * none; the last row when the table is full. */
int rlaas_tally_row(rlaas_tally_t *t, uint64_t host, const char *name);

/* Whether row is in use, whether it is (host, name)'s, and its host and
 * name (host 0 and "other": the last row). */
int rlaas_tally_row_used(const rlaas_tally_t *t, int row);
int rlaas_tally_row_is(const rlaas_tally_t *t, int row, uint64_t host,
                       const char *name);
uint64_t rlaas_tally_row_host(const rlaas_tally_t *t, int row);
const char *rlaas_tally_row_name(const rlaas_tally_t *t, int row);

/* After a new configuration is read (before its children run): the rows
 * of hosts not among hosts[0..n-1] are freed, and their identities taken
 * off the top list. */
void rlaas_tally_retain(rlaas_tally_t *t, const uint64_t *hosts, int n);

/* One decision of row at now_s (seconds, wall clock). */
void rlaas_tally_add(rlaas_tally_t *t, int row, int denied, int64_t now_s);

/* A slot of row taken (taken 1) or given back (0): a concurrency limit's
 * requests in flight. */
void rlaas_tally_hold(rlaas_tally_t *t, int row, int taken);
/* The slots of row taken and not given back (a row claimed again, for
 * another name, starts at 0; a slot given back there is not counted). */
uint64_t rlaas_tally_held(const rlaas_tally_t *t, int row);
/* The decisions of the last span_s seconds (at most
 * RLAAS_TALLY_SECONDS - 1), now_s's included. */
void rlaas_tally_sum(const rlaas_tally_t *t, int row, int64_t now_s, int span_s,
                     uint64_t *allowed, uint64_t *denied);

/* Denials per minute, oldest first, of the n (<= RLAAS_TALLY_MINUTES)
 * minutes up to now_s's. */
void rlaas_tally_minutes(const rlaas_tally_t *t, int row, int64_t now_s, int n,
                         uint32_t *denied);

/* One denial of identity id (not NUL-terminated) in row. */
void rlaas_tally_top_add(rlaas_tally_t *t, int row, const char *id, size_t len,
                         int64_t now_s);

/* The listed identities denied within the last max_age_s seconds, most
 * denied first, an identity denied under twin rows (one name claimed
 * twice at the same instant) once with their counts added up; returns
 * how many were written (at most max). */
int rlaas_tally_top(const rlaas_tally_t *t, int64_t now_s, int64_t max_age_s,
                    rlaas_tally_top_t *out, int max);

/* Takes an identity off the list (after an operator's reset), under row
 * and any twin of it; returns 1 if it was listed. */
int rlaas_tally_top_forget(rlaas_tally_t *t, int row, const char *id,
                           size_t len);

/* For tests: as if another process were claiming row (on 1), or had
 * claimed it (0). */
void rlaas_tally_set_claiming(rlaas_tally_t *t, int row, int on);
/* For tests: as if process pid held the top list's lock. */
void rlaas_tally_set_holder(rlaas_tally_t *t, uint32_t pid);

#endif
