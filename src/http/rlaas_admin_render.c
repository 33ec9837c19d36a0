/* The console's output: one HTML page with its own CSS, a little plain
 * JavaScript and an inline SVG chart (no external asset), or the same data
 * as JSON. Every text from the configuration or from keys is escaped. */
#include "rlaas_admin_impl.h"

#include "http_protocol.h"
#include "apr_strings.h"

#include "rlaas_admin.h"
#include "rlaas_verdict.h"

APLOG_USE_MODULE(rlaas);

#define CHART_ZONES 8
#define CHART_W     480
#define CHART_H     140

static const char *js(apr_pool_t *p, const char *s)
{
    char *out, *o;

    if (s == NULL)
        return "null";
    out = o = apr_palloc(p, strlen(s) * 6 + 3);
    *o++ = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        }
        else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            apr_snprintf(o, 7, "\\u%04x", c);
            o += 6;
        }
        else
            *o++ = (char)c;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

static const char *h(apr_pool_t *p, const char *s)
{
    return s ? ap_escape_html2(p, s, 1) : "";
}

/* "default" (a section's own limit without a zone) is no declared
 * policy, though the metrics register it with them. */
static const char *kind(const rlaas_admin_row_t *w)
{
    if (w->conc)
        return "concurrency";
    return w->policy && strcmp(w->name, RLAAS_POLICY_DEFAULT) != 0 ? "policy"
                                                                   : "zone";
}

/* What its limit counts: requests, or the bytes responses sent. */
static const char *unit(const rlaas_admin_row_t *w)
{
    return w->bytes ? "bytes" : "requests";
}

/* A row's name where its kind is not beside it (the chart, the idle). */
static const char *label(apr_pool_t *p, const rlaas_admin_row_t *w)
{
    return h(p, w->conc ? apr_pstrcat(p, w->name, " (concurrency)", NULL)
                        : w->name);
}

/* A concurrency limit's requests in flight: "3 of 5" (JSON: its fields);
 * nothing for a rate's row. */
static const char *in_flight(apr_pool_t *p, const rlaas_admin_row_t *w,
                             int json)
{
    if (!w->conc)
        return "";
    if (json)
        return apr_psprintf(p,
                            ",\"in_flight\":%" APR_UINT64_T_FMT
                            ",\"limit\":%" APR_INT64_T_FMT,
                            w->held, w->limit);
    return w->limit > 0
               ? apr_psprintf(p, "%" APR_UINT64_T_FMT " of %" APR_INT64_T_FMT,
                              w->held, w->limit)
               : apr_psprintf(p, "%" APR_UINT64_T_FMT, w->held);
}

static const char *ban_zone_id(apr_pool_t *p, const char *key, int json)
{
    return json ? js(p, key) : h(p, key);
}

/* ---- JSON ---- */

static void page_json(request_rec *r, const rlaas_admin_view_t *v)
{
    apr_pool_t *p = r->pool;
    int i, m;

    ap_set_content_type(r, "application/json");
    ap_rprintf(r,
               "{\"scope\":%s,\"host\":%s,\"backend\":%s,\"redis\":%s,"
               "\"now_ms\":%" APR_INT64_T_FMT
               ",\"window_s\":60,\"counts\":%s,\n\"zones\":[",
               v->scope ? "\"host\"" : "\"server\"", js(p, v->scope),
               js(p, v->backend), js(p, v->redis), v->now_ms,
               v->tally ? "true" : "false");
    for (i = 0; i < v->rows->nelts; i++) {
        const rlaas_admin_row_t *w =
            &APR_ARRAY_IDX(v->rows, i, rlaas_admin_row_t);

        ap_rprintf(r,
                   "%s\n{\"name\":%s,\"host\":%s,\"kind\":\"%s\","
                   "\"counts\":\"%s\"%s,\"allowed\":%" APR_UINT64_T_FMT
                   ",\"denied\":%" APR_UINT64_T_FMT ",\"denied_per_minute\":[",
                   i ? "," : "", js(p, w->name), js(p, w->host), kind(w),
                   unit(w), in_flight(p, w, 1), w->allowed, w->denied);
        for (m = 0; m < RLAAS_TALLY_MINUTES; m++)
            ap_rprintf(r, "%s%u", m ? "," : "", w->minutes[m]);
        ap_rputs("]}", r);
    }
    ap_rputs("],\n\"top_denied\":[", r);
    for (i = 0; i < v->ntop; i++)
        ap_rprintf(
            r,
            "%s\n{\"zone\":%s,\"host\":%s,\"identity\":%s,"
            "\"denied\":%u,\"error\":%u,\"last_denied_s_ago\":%" APR_INT64_T_FMT
            "}",
            i ? "," : "", js(p, v->top_zone[i]), js(p, v->top_host[i]),
            js(p, v->top[i].id), v->top[i].count, v->top[i].error,
            v->now_ms / 1000 - v->top[i].last_s);
    ap_rputs("],\n\"bans\":[", r);
    for (i = 0; i < v->bans->nelts; i++) {
        const rlaas_admin_ban_t *b =
            &APR_ARRAY_IDX(v->bans, i, rlaas_admin_ban_t);

        ap_rprintf(r,
                   "%s\n{\"key\":%s,\"until_ms\":%" APR_INT64_T_FMT
                   ",\"length_ms\":%" APR_INT64_T_FMT "}",
                   i ? "," : "", ban_zone_id(p, b->key, 1), b->until_ms,
                   b->length_ms);
    }
    ap_rprintf(r, "],\"bans_error\":%s,\n\"children\":[", js(p, v->bans_error));
    for (i = 0; i < v->nchildren; i++) {
        const rlaas_child_health_t *c = &v->children[i];

        /* a virtual host's console: the server's traffic is not its own */
        ap_rprintf(
            r,
            "%s\n{\"pid\":%u,\"redis_connections\":%u,"
            "\"circuits_open\":%u,\"calls\":%s"
            ",\"latency_avg_ms\":%.3f,\"redis_errors\":%" APR_UINT64_T_FMT "}",
            i ? "," : "", c->pid, c->connections, c->circuits,
            v->scope ? "null" : apr_psprintf(p, "%" APR_UINT64_T_FMT, c->calls),
            c->calls ? c->latency_us / 1000.0 / c->calls : 0.0, c->errors);
    }
    ap_rputs("]}\n", r);
}

/* ---- HTML ---- */

static const char CSS[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;"
    "background:#fafafa}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}"
    "table{border-collapse:collapse;background:#fff}"
    "th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".den{color:#b00020;font-weight:600}.muted{color:#777}"
    "code{font-size:.95em}form.act{background:#fff;border:1px solid #ddd;"
    "padding:.8em;display:inline-block}form.act label{margin-right:.8em}"
    "svg{background:#fff;border:1px solid #ddd}details{margin-top:.5em;"
    "color:#555;max-width:60em}";

static const char *const colours[CHART_ZONES] = {
    "#b00020", "#1565c0", "#2e7d32", "#ef6c00",
    "#6a1b9a", "#00838f", "#5d4037", "#546e7a"};

/* Denied per minute of the zones that denied most, one line each. */
static void chart(request_rec *r, const rlaas_admin_view_t *v)
{
    int pick[CHART_ZONES], n = 0, i, j, m;
    uint32_t max = 1;

    for (i = 0; i < v->rows->nelts && n < CHART_ZONES; i++) {
        const rlaas_admin_row_t *w =
            &APR_ARRAY_IDX(v->rows, i, rlaas_admin_row_t);
        uint32_t sum = 0;

        for (m = 0; m < RLAAS_TALLY_MINUTES; m++) {
            sum += w->minutes[m];
            if (w->minutes[m] > max)
                max = w->minutes[m];
        }
        if (sum > 0)
            pick[n++] = i;
    }
    ap_rprintf(r,
               "<h2>Denied per minute, last %d minutes</h2>\n<svg id=\"chart\" "
               "role=\"img\" aria-label=\"denied per minute per zone\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
               RLAAS_TALLY_MINUTES, CHART_W, CHART_H + 20, CHART_W,
               CHART_H + 20);
    ap_rprintf(r,
               "<text x=\"4\" y=\"12\" font-size=\"10\">%u</text>"
               "<text x=\"4\" y=\"%d\" font-size=\"10\">0</text>"
               "<text x=\"%d\" y=\"%d\" font-size=\"10\">now</text>\n",
               max, CHART_H, CHART_W - 26, CHART_H + 14);
    if (n == 0)
        ap_rprintf(r,
                   "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#777\">"
                   "no denials</text>\n",
                   CHART_W / 2 - 30, CHART_H / 2);
    for (j = 0; j < n; j++) {
        const rlaas_admin_row_t *w =
            &APR_ARRAY_IDX(v->rows, pick[j], rlaas_admin_row_t);

        ap_rprintf(r,
                   "<polyline class=\"zone\" data-zone=\"%s\" fill=\"none\" "
                   "stroke=\"%s\" stroke-width=\"2\" points=\"",
                   h(r->pool, w->name), colours[j]);
        for (m = 0; m < RLAAS_TALLY_MINUTES; m++)
            ap_rprintf(
                r, "%s%d,%d", m ? " " : "",
                30 + m * (CHART_W - 40) / (RLAAS_TALLY_MINUTES - 1),
                CHART_H - (int)((int64_t)w->minutes[m] * (CHART_H - 20) / max));
        ap_rprintf(r, "\"><title>%s</title></polyline>\n", label(r->pool, w));
        ap_rprintf(r,
                   "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s"
                   "</text>\n",
                   40 + (j % 4) * 110, CHART_H + 14 + (j / 4) * 0, colours[j],
                   label(r->pool, w));
    }
    ap_rputs("</svg>\n", r);
}

/* Shown in the table: decided in the last minute, or denied in the
 * chart's span. */
static int active(const rlaas_admin_row_t *w)
{
    int m;

    if (w->allowed + w->denied > 0 || w->held > 0)
        return 1;
    for (m = 0; m < RLAAS_TALLY_MINUTES; m++)
        if (w->minutes[m] > 0)
            return 1;
    return 0;
}

static void page_html(request_rec *r, const rlaas_admin_view_t *v)
{
    apr_pool_t *p = r->pool;
    const char *idle = "";
    int i, nidle = 0;

    ap_set_content_type(r, "text/html; charset=utf-8");
    ap_rprintf(
        r,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>mod_rlaas console</title><style>%s</style></head>\n"
        "<body>\n<h1>mod_rlaas console</h1>\n<p id=\"scope\">%s%s%s</p>\n"
        "<p id=\"backend\">Backend: <b>%s</b>%s%s%s</p>\n",
        CSS, v->scope ? "Virtual host <b>" : "The whole server: every host",
        v->scope ? h(p, v->scope) : "",
        v->scope ? "</b>: its zones, policies, identities and bans only" : "",
        h(p, v->backend), v->redis ? " &middot; Redis <code>" : "",
        v->redis ? h(p, v->redis) : "", v->redis ? "</code>" : "");
    if (!v->tally)
        ap_rputs("<p class=\"den\">No shared memory for the counts: see the "
                 "error log.</p>\n",
                 r);
    ap_rputs("<h2>Last minute, per zone and policy</h2>\n<table id=\"zones\">"
             "<tr><th>zone / policy</th><th>host</th><th>kind</th>"
             "<th>allowed</th><th>denied</th><th>in flight</th></tr>\n",
             r);
    for (i = 0; i < v->rows->nelts; i++) {
        const rlaas_admin_row_t *w =
            &APR_ARRAY_IDX(v->rows, i, rlaas_admin_row_t);

        if (!active(w)) {
            idle = apr_pstrcat(p, idle, *idle ? ", " : "", label(p, w), NULL);
            nidle++;
            continue;
        }
        ap_rprintf(
            r,
            "<tr data-zone=\"%s\" data-kind=\"%s\"><td>%s</td><td>%s"
            "</td><td>%s</td><td class=\"n\">%" APR_UINT64_T_FMT
            "</td><td class=\"n%s\">%" APR_UINT64_T_FMT
            "</td><td class=\"n\">%s</td></tr>\n",
            h(p, w->name), kind(w), h(p, w->name), h(p, w->host),
            w->bytes ? apr_pstrcat(p, kind(w), " (bytes)", NULL) : kind(w),
            w->allowed, w->denied ? " den" : "", w->denied, in_flight(p, w, 0));
    }
    ap_rputs("</table>\n", r);
    if (nidle > 0)
        ap_rprintf(
            r,
            "<details id=\"idle\"><summary>%d more without a decision "
            "in the last minute or a denial in the last %d minutes</summary>"
            "<p>%s</p></details>\n",
            nidle, RLAAS_TALLY_MINUTES, idle);
    chart(r, v);
    ap_rputs("<h2>Most denied right now</h2>\n<p class=\"muted\">Identities "
             "as their keys hold them: credentials (API keys, credential "
             "headers and cookies) only hashed.</p>\n<table id=\"top\"><tr>"
             "<th>zone</th><th>host</th><th>identity</th><th>denials</th>"
             "<th>&plusmn;</th><th>last</th></tr>\n",
             r);
    for (i = 0; i < v->ntop; i++)
        ap_rprintf(r,
                   "<tr><td>%s</td><td>%s</td><td><code>%s</code></td><td "
                   "class=\"n\">%u</td><td class=\"n\">%u</td><td "
                   "class=\"n\">%" APR_INT64_T_FMT " s ago</td></tr>\n",
                   h(p, v->top_zone[i]), h(p, v->top_host[i]),
                   h(p, v->top[i].id), v->top[i].count, v->top[i].error,
                   v->now_ms / 1000 - v->top[i].last_s);
    if (v->ntop == 0)
        ap_rputs("<tr><td colspan=\"6\" class=\"muted\">nobody denied in the "
                 "last minute</td></tr>\n",
                 r);
    ap_rputs("</table>\n<h2>Active bans</h2>\n<table id=\"bans\"><tr><th>key"
             "</th><th>left</th><th>length</th></tr>\n",
             r);
    for (i = 0; i < v->bans->nelts; i++) {
        const rlaas_admin_ban_t *b =
            &APR_ARRAY_IDX(v->bans, i, rlaas_admin_ban_t);

        ap_rprintf(
            r,
            "<tr><td><code>%s</code></td><td class=\"n\">%" APR_INT64_T_FMT
            " s</td><td class=\"n\">%" APR_INT64_T_FMT " s</td></tr>\n",
            ban_zone_id(p, b->key, 0),
            b->until_ms >= 0 ? (b->until_ms - v->now_ms + 999) / 1000 : -1,
            b->length_ms >= 0 ? b->length_ms / 1000 : -1);
    }
    if (v->bans_error != NULL)
        ap_rprintf(r,
                   "<tr><td colspan=\"3\" class=\"den\">could not list: %s"
                   "</td></tr>\n",
                   h(p, v->bans_error));
    else if (v->bans->nelts == 0)
        ap_rputs("<tr><td colspan=\"3\" class=\"muted\">none</td></tr>\n", r);
    ap_rputs(
        "</table>\n<h2>Redis health, per child</h2>\n<table id=\"children\">"
        "<tr><th>pid</th><th>connections</th><th>circuit</th><th>calls</th>"
        "<th>avg latency</th><th>errors</th></tr>\n",
        r);
    for (i = 0; i < v->nchildren; i++) {
        const rlaas_child_health_t *c = &v->children[i];

        ap_rprintf(
            r,
            "<tr><td>%u</td><td class=\"n\">%u</td><td%s>%s</td>"
            "<td class=\"n\">%s</td><td class=\"n\">"
            "%.3f ms</td><td class=\"n\">%" APR_UINT64_T_FMT "</td></tr>\n",
            c->pid, c->connections, c->circuits ? " class=\"den\"" : "",
            c->circuits ? "open" : "closed",
            v->scope ? "&ndash;"
                     : apr_psprintf(p, "%" APR_UINT64_T_FMT, c->calls),
            c->calls ? c->latency_us / 1000.0 / c->calls : 0.0, c->errors);
    }
    ap_rputs(
        "</table>\n<h2>Act</h2>\n<form class=\"act\" method=\"post\" "
        "id=\"act\">\n<label>action <select name=\"action\" id=\"action\">"
        "<option>reset</option><option>credit</option><option>unban</option>"
        "</select></label>\n<label>zone <input name=\"zone\" required "
        "size=\"14\"></label>\n<label>id <input name=\"id\" required "
        "size=\"28\" placeholder=\"client address or raw API key\" "
        "autocomplete=\"off\"></label>\n<label id=\"nl\">n <input name=\"n\" "
        "size=\"5\" value=\"1\"></label>\n<button>apply</button>\n</form>\n"
        "<p class=\"muted\">reset forgets the identity's state in the zone; "
        "credit gives n units back (the newest first; bytes, in a zone "
        "counting bytes); unban lifts a "
        "ban. The id is hashed as for requests and never logged.</p>\n"
        "<script>var s=document.getElementById('action'),n=document."
        "getElementById('nl');function f(){n.style.display=s.value=="
        "'credit'?'':'none'}s.onchange=f;f();</script>\n</body></html>\n",
        r);
}

void rlaas_admin_render_page(request_rec *r, const rlaas_admin_view_t *v,
                             int json)
{
    if (json)
        page_json(r, v);
    else
        page_html(r, v);
}

void rlaas_admin_render_result(request_rec *r, const rlaas_admin_result_t *res,
                               int json)
{
    apr_pool_t *p = r->pool;
    int i;

    if (json) {
        ap_set_content_type(r, "application/json");
        ap_rprintf(r,
                   "{\"status\":%d,\"action\":%s,\"zone\":%s,\"message\":%s,"
                   "\"changed\":%" APR_INT64_T_FMT ",\"keys\":[",
                   res->status, js(p, res->action), js(p, res->zone),
                   js(p, res->message), res->changed);
        for (i = 0; res->keys != NULL && i < res->keys->nelts; i++)
            ap_rprintf(r, "%s%s", i ? "," : "",
                       js(p, APR_ARRAY_IDX(res->keys, i, const char *)));
        ap_rputs("]}\n", r);
        return;
    }
    ap_set_content_type(r, "text/html; charset=utf-8");
    ap_rprintf(
        r,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>mod_rlaas console</title><style>%s</style></head><body>\n"
        "<h1>%s</h1>\n<p id=\"result\">%s%s%s: %s</p>\n<ul>",
        CSS, res->status == HTTP_OK ? "Done" : "Not done", h(p, res->action),
        res->zone ? " in zone " : "", h(p, res->zone), h(p, res->message));
    for (i = 0; res->keys != NULL && i < res->keys->nelts; i++)
        ap_rprintf(r, "<li><code>%s</code></li>",
                   h(p, APR_ARRAY_IDX(res->keys, i, const char *)));
    ap_rputs("</ul>\n<p><a href=\"\">back to the console</a></p>\n</body>"
             "</html>\n",
             r);
}
