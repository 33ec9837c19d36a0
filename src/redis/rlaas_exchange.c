#include "rlaas_exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlaas_cal.h"
#include "rlaas_clock.h"
#include "rlaas_pipeline.h"
#include "rlaas_resp.h"
#include "rlaas_scripts.h"

static void set_detail(char *out, const char *text, size_t len)
{
    if (len >= RLAAS_DETAIL_MAX)
        len = RLAAS_DETAIL_MAX - 1;
    memcpy(out, text, len);
    out[len] = '\0';
}

/* Redis Cluster's ASKING, as the protocol writes it. */
static const char ASKING[] = "*1\r\n$6\r\nASKING\r\n";

static void fail(rlaas_job_t **jobs, int n, rlaas_rerr_e e, const char *text)
{
    int i;

    for (i = 0; i < n; i++) {
        jobs[i]->e = e;
        set_detail(jobs[i]->detail, text, strlen(text));
    }
}

/* Redis failed the group: the jobs not answered yet carry it. */
static void lost(rlaas_outcome_t *out, rlaas_job_t **jobs, int n,
                 rlaas_rerr_e e, const char *detail)
{
    fail(jobs, n, e, detail);
    out->e = e;
    set_detail(out->cause, detail, strlen(detail));
}

int rlaas_job_script(const rlaas_job_t *j)
{
    if (j->calls[0].credit)
        return RLAAS_SCRIPT_CREDIT;
    if (j->calls[0].release)
        return RLAAS_SCRIPT_RELEASE;
    if (j->calls[0].forget)
        return RLAAS_SCRIPT_FORGET;
    if (rlaas_call_lease(j->calls, j->n))
        return RLAAS_SCRIPT_LEASE;
    return j->n == 1 && j->calls[0].strategy < RLAAS_STRATEGY_COUNT
               ? (int)j->calls[0].strategy
               : RLAAS_SCRIPT_MULTI;
}

/* Where Redis Cluster sent the call instead (it did not run). */
static void redirected(rlaas_job_t *j, const char *err, size_t len)
{
    static const char again[] = "TRYAGAIN";

    if (len >= sizeof(again) - 1 && memcmp(err, again, sizeof(again) - 1) == 0)
        j->redirect = RLAAS_REDIRECT_AGAIN;
    else
        j->redirect =
            rlaas_reply_redirect(err, len, &j->redirect_slot, j->redirect_to,
                                 sizeof(j->redirect_to));
}

static int declares_window(const rlaas_job_t *j)
{
    int i;

    for (i = 0; i < j->n; i++) {
        if (j->calls[i].window_at != 0)
            return 1;
    }
    return 0;
}

/* "RLAASWINDOW <n> <ms>": a fixed policy reckons another window than the
 * one in its declared key (the module's clock and Redis' differ near a
 * boundary), at Redis' time ms; nothing was written. */
static int other_window(rlaas_job_t *j, const char *err, size_t len)
{
    static const char code[] = "RLAASWINDOW ";
    const char *sp;

    if (!declares_window(j) || len <= sizeof(code) - 1 ||
        memcmp(err, code, sizeof(code) - 1) != 0)
        return 0;
    sp = memchr(err + sizeof(code) - 1, ' ', len - (sizeof(code) - 1));
    j->window = sp != NULL ? atoll(sp + 1) : -1;
    return j->window >= 0;
}

/* One reply into its job. An error about the call fails that request
 * alone; an error about the server fails it too and tells the group. */
static void take_reply(rlaas_job_t *j, const rlaas_reply_sink_t *rep,
                       rlaas_outcome_t *out)
{
    /* a lease's reply holds, for each policy, the grant as a second
     * verdict, what it gave back as a third, Redis' time as a fourth */
    int nv = rlaas_job_script(j) == RLAAS_SCRIPT_LEASE ? 4 * j->n : j->n;
    rlaas_errc_e c;

    switch (rlaas_reply_verdicts(rep, nv, j->v)) {
    case RLAAS_REPLY_OK:
        j->e = RLAAS_RERR_NONE;
        return;
    case RLAAS_REPLY_NOSCRIPT:
        j->noscript = 1;
        return;
    case RLAAS_REPLY_ERROR:
        set_detail(j->detail, rep->err, rep->err_len);
        if (other_window(j, rep->err, rep->err_len))
            return;
        c = rlaas_reply_error_class(rep->err, rep->err_len);
        j->e = c == RLAAS_ERRC_CALL ? RLAAS_RERR_REPLY : RLAAS_RERR_SERVER;
        redirected(j, rep->err, rep->err_len);
        if (c != RLAAS_ERRC_CALL && c >= out->errc) {
            out->e = RLAAS_RERR_SERVER;
            out->errc = c;
            set_detail(out->cause, rep->err, rep->err_len);
        }
        return;
    case RLAAS_REPLY_BAD:
        break;
    }
    j->e = RLAAS_RERR_REPLY;
    set_detail(j->detail, "unexpected reply", 16);
}

/* Writes the calls and reads their replies into the jobs. */
static void round_trip(rlaas_conn_t *c, rlaas_job_t **jobs, int n,
                       int64_t deadline, rlaas_outcome_t *out)
{
    /* the facade bounds the keys of a job to RLAAS_CALL_KEY_MAX each */
    char cmd[RLAAS_RESP_CALL_MAX(RLAAS_CALL_POLICIES_MAX * RLAAS_CALL_KEY_MAX,
                                 RLAAS_CALL_POLICIES_MAX)];
    char detail[RLAAS_DETAIL_MAX];
    redisReplyObjectFunctions *fns;
    rlaas_reply_sink_t sink;
    rlaas_rerr_e e;
    int i;

    for (i = 0; i < n; i++) {
        size_t len =
            rlaas_resp_call(cmd, rlaas_scripts[rlaas_job_script(jobs[i])].sha1,
                            jobs[i]->calls, jobs[i]->n);

        jobs[i]->e = RLAAS_RERR_NONE;
        jobs[i]->noscript = 0;
        jobs[i]->redirect = RLAAS_REDIRECT_NONE;
        jobs[i]->window = -1;
        if (jobs[i]->calls[0].asking)
            redisAppendFormattedCommand(c->ctx, ASKING, sizeof(ASKING) - 1);
        redisAppendFormattedCommand(c->ctx, cmd, len);
    }
    if ((e = rlaas_conn_flush(c, deadline, detail)) != RLAAS_RERR_NONE) {
        lost(out, jobs, n, e, detail);
        return;
    }
    /* the replies are read into a sink, not into reply objects */
    fns = c->ctx->reader->fn;
    c->ctx->reader->fn = &rlaas_reply_sink_fns;
    c->ctx->reader->privdata = &sink;
    for (i = 0; i < n; i++) {
        void *rep;

        /* ASKING's own +OK (or error) comes first */
        if (jobs[i]->calls[0].asking &&
            (e = rlaas_conn_read(c, deadline, &rep, detail)) !=
                RLAAS_RERR_NONE) {
            lost(out, jobs + i, n - i, e, detail);
            return;
        }
        rlaas_reply_sink_reset(&sink);
        if ((e = rlaas_conn_read(c, deadline, &rep, detail)) !=
            RLAAS_RERR_NONE) {
            lost(out, jobs + i, n - i, e, detail);
            return; /* c is closed: nothing to restore */
        }
        take_reply(jobs[i], rep, out);
    }
    c->ctx->reader->fn = fns;
    c->ctx->reader->privdata = NULL;
}

/* SCRIPT LOAD for each script in need, in one round trip. */
static void load_scripts(rlaas_conn_t *c, const int *need, int64_t deadline,
                         rlaas_outcome_t *out)
{
    char detail[RLAAS_DETAIL_MAX];
    int st;

    for (st = 0; st < RLAAS_SCRIPT_COUNT; st++) {
        const char *argv[3] = {"SCRIPT", "LOAD", rlaas_scripts[st].body};
        size_t lens[3] = {6, 4, rlaas_scripts[st].len};

        if (need[st])
            redisAppendCommandArgv(c->ctx, 3, argv, lens);
    }
    if (rlaas_conn_flush(c, deadline, detail) != RLAAS_RERR_NONE) {
        out->e = RLAAS_RERR_IO;
        set_detail(out->cause, detail, strlen(detail));
        return;
    }
    for (st = 0; st < RLAAS_SCRIPT_COUNT; st++) {
        redisReply *rep;
        rlaas_rerr_e e;

        if (!need[st])
            continue;
        if ((e = rlaas_conn_read(c, deadline, (void **)&rep, detail)) !=
            RLAAS_RERR_NONE) {
            out->e = e;
            set_detail(out->cause, detail, strlen(detail));
            return;
        }
        out->loaded[st] =
            rep->type == REDIS_REPLY_STRING && rep->len == 40 &&
                    memcmp(rep->str, rlaas_scripts[st].sha1, 40) == 0
                ? 1
                : -1;
        freeReplyObject(rep);
    }
}

/* The calls Redis answered NOSCRIPT did not run: load their scripts and
 * send them once more. */
static void reload_and_retry(rlaas_conn_t *c, rlaas_job_t **jobs, int n,
                             int64_t deadline, rlaas_outcome_t *out)
{
    rlaas_job_t *again[RLAAS_PIPE_MAX_BATCH];
    int need[RLAAS_SCRIPT_COUNT] = {0};
    int m = 0, i;

    for (i = 0; i < n; i++) {
        if (jobs[i]->noscript)
            need[rlaas_job_script(jobs[i])] = 1;
    }
    if (c->ctx != NULL)
        load_scripts(c, need, deadline, out);
    for (i = 0; i < n; i++) {
        if (!jobs[i]->noscript)
            continue;
        if (c->ctx == NULL)
            fail(jobs + i, 1, out->e ? out->e : RLAAS_RERR_IO,
                 out->e ? out->cause : "connection lost");
        else if (out->loaded[rlaas_job_script(jobs[i])] < 0)
            fail(jobs + i, 1, RLAAS_RERR_REPLY, "script could not be loaded");
        else
            again[m++] = jobs[i];
    }
    if (m == 0)
        return;
    round_trip(c, again, m, deadline, out);
    for (i = 0; i < m; i++) {
        if (again[i]->noscript)
            fail(again + i, 1, RLAAS_RERR_REPLY, "NOSCRIPT after loading");
    }
}

/* The name of the window holding Redis' time t, for a call's window
 * argument: its number, or a calendar's period (rlaas_cal.h); into buf
 * (RLAAS_CAL_NAME_MAX + 1 bytes). 0 when there is none (a calendar's
 * periods that do not reach t): the call goes again as it was, and is
 * refused again. */
static size_t window_name(const rlaas_call_t *call, long long t, char *buf)
{
    rlaas_cal_table_t tb;
    int64_t from, to;

    if (call->cal != NULL) {
        if (!rlaas_cal_arg_read(call->cal, strlen(call->cal), &tb) ||
            !rlaas_cal_pick(&tb, t, &from, &to))
            return 0;
        return rlaas_cal_name(tb.tag, from, buf);
    }
    return call->window_ms > 0
               ? (size_t)snprintf(buf, RLAAS_CAL_NAME_MAX + 1, "%lld",
                                  t / (long long)call->window_ms)
               : 0;
}

/* A job again, each declared window the one of Redis' time ms. */
static void rekey(rlaas_job_t *j)
{
    char name[RLAAS_CAL_NAME_MAX + 1];
    size_t n;
    int i;

    for (i = 0; i < j->n; i++) {
        const rlaas_call_t *call = &j->calls[i];
        size_t at = call->window_at;

        j->again[i] = *call;
        j->again[i].window_at = 0; /* once */
        if (at == 0 || (n = window_name(call, j->window, name)) == 0)
            continue;
        memcpy(j->again_key[i], call->key, at);
        memcpy(j->again_key[i] + at, name, n);
        j->again[i].key_len = at + n;
        j->again[i].key = j->again_key[i];
    }
    j->calls = j->again;
}

/* Jobs whose declared windows were not Redis': made again with the
 * windows Redis reckons, and sent once more (nothing was written). */
static void other_windows(rlaas_conn_t *c, rlaas_job_t **jobs, int n,
                          int64_t deadline, rlaas_outcome_t *out)
{
    rlaas_job_t *again[RLAAS_PIPE_MAX_BATCH];
    int m = 0, i;

    for (i = 0; i < n; i++) {
        rlaas_job_t *j = jobs[i];

        if (j->window < 0)
            continue;
        if (c->ctx == NULL) {
            fail(jobs + i, 1, out->e ? out->e : RLAAS_RERR_IO,
                 out->e ? out->cause : "connection lost");
            continue;
        }
        rekey(j);
        again[m++] = j;
    }
    if (m > 0)
        round_trip(c, again, m, deadline, out);
    for (i = 0; i < m; i++) {
        if (again[i]->window >= 0)
            fail(again + i, 1, RLAAS_RERR_REPLY, "no agreement on the window");
    }
}

void rlaas_exchange(rlaas_conn_t *c, rlaas_job_t **jobs, int n,
                    int64_t deadline, rlaas_outcome_t *out)
{
    int64_t t0 = rlaas_clock_us();
    int i, noscript = 0;

    memset(out, 0, sizeof(*out));
    round_trip(c, jobs, n, deadline, out);
    out->latency_us = rlaas_clock_us() - t0;
    for (i = 0; i < n; i++)
        noscript |= jobs[i]->noscript;
    if (noscript)
        reload_and_retry(c, jobs, n, deadline, out);
    other_windows(c, jobs, n, deadline, out);
    /* After an error about the server this connection is not trusted:
     * NOAUTH, a master turned replica, a server still loading. */
    if (out->errc != RLAAS_ERRC_CALL)
        rlaas_conn_close(c);
}
