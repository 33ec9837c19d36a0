#!/usr/bin/env bash
# make bench-profile: where a limited request's time goes, counted in
# instructions (valgrind --tool=callgrind), which repeat exactly from run to
# run whatever else the machine is doing.
#
# Runs a single-process httpd (-X) under callgrind with one strategy, sends
# PROFILE_REQUESTS keep-alive requests, and prints instructions per request:
# the whole server, the module's access checker (inclusive), and its parts.
# Also runs the same without the module, for the baseline.
#
# Environment: PROFILE_STRATEGY (gcra), PROFILE_REQUESTS (3000),
# PROFILE_OUT (build/profile), PROFILE_BACKEND (redis, or local: the local
# engine decides, no Redis), PROFILE_KEYBY (header:X-Client; ip keys by the
# client address, the module's default), PROFILE_EXTRA (more directives
# for the section, e.g. "RLaaSHeaders off"), PROFILE_SERVER (directives
# for the server, e.g. an RLaaSPolicy the section applies),
# PROFILE_IDENTITIES (busy:
# every request from client-1, as ab sends them; quiet: each request from
# an identity of its own, client-<n>, so that RLaaSLease auto never finds
# one worth a lease: what a quiet identity costs under the default).
#
# Both servers have the same <Location "/"> section (empty without the
# module): what httpd spends walking and merging a section is httpd's, not
# the limiter's, and an operator's section exists either way.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
STRATEGY=${PROFILE_STRATEGY:-gcra}
BACKEND=${PROFILE_BACKEND:-redis}
N=${PROFILE_REQUESTS:-3000}
KEYBY=${PROFILE_KEYBY:-header:X-Client}
EXTRA=${PROFILE_EXTRA:-}
SERVER=${PROFILE_SERVER:-}
IDENTITIES=${PROFILE_IDENTITIES:-busy}
OUT=${PROFILE_OUT:-$top/build/profile}

for tool in valgrind callgrind_annotate ab redis-server; do
    command -v "$tool" >/dev/null || { echo "needs $tool (valgrind, apache2-utils, redis-server)"; exit 1; }
done
make -s >/dev/null
mkdir -p "$OUT"
work=$(mktemp -d /tmp/rlaas-profile.XXXXXX)
chmod 755 "$work"
cp .libs/mod_rlaas.so "$work/"
mkdir "$work/htdocs"
printf 'hello\n' >"$work/htdocs/index.html"
chmod -R a+rX "$work"
mkdir "$work/cg"
MODDIR=$(apxs -q LIBEXECDIR)

free_port() {
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
# ports from a random base, and a token only our server serves: two
# profiles run side by side must not send requests to each other's httpd
HTTP_PORT=$(free_port $((18180 + RANDOM % 2000)))
REDIS_PORT=$(free_port $((16479 + RANDOM % 2000)))
token=$(basename "$work")
printf '%s' "$token" >"$work/htdocs/token.txt"

cleanup() {
    [ -f "$work/httpd.pid" ] && kill "$(cat "$work/httpd.pid")" 2>/dev/null || true
    redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --daemonize yes --logfile "$work/redis.log" >/dev/null

# N keep-alive requests on one connection, each with an X-Client of its
# own ($1 port, $2 N)
quiet_client() {
    perl -MIO::Socket::INET -e '
        my ($port, $n) = @ARGV;
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port")
            or die "connect: $!";
        for my $i (1 .. $n) {
            print $s "GET /index.html HTTP/1.1\r\nHost: localhost\r\n",
                "X-Client: client-$i\r\n\r\n";
            my ($len, $line) = (0);
            while (defined($line = <$s>) && $line ne "\r\n") {
                $len = $1 if $line =~ /^Content-Length:\s*(\d+)/i;
            }
            read($s, my $body, $len) if $len;
        }' "$1" "$2"
}

# $1: with or without
profile() {
    local with=$1
    {
        cat <<EOF
ServerRoot "$work"
ServerName localhost
Listen 127.0.0.1:$HTTP_PORT
PidFile "$work/httpd.pid"
ErrorLog "$work/error_log"
LogLevel warn
DocumentRoot "$work/htdocs"
LoadModule mpm_event_module $MODDIR/mod_mpm_event.so
LoadModule authz_core_module $MODDIR/mod_authz_core.so
LoadModule mime_module $MODDIR/mod_mime.so
TypesConfig /etc/mime.types
MaxKeepAliveRequests 0
EOF
        if [ "$with" = with ]; then
            cat <<EOF
LoadModule rlaas_module $work/mod_rlaas.so
RLaaSRedis 127.0.0.1:$REDIS_PORT
RLaaSBackend $BACKEND
$SERVER
<Location "/">
    RLaaSLimit 1000000000
    RLaaSWindow 60s
    RLaaSStrategy $STRATEGY
    RLaaSKeyBy $KEYBY
    $EXTRA
</Location>
EOF
        else
            printf '<Location "/">\n</Location>\n'
        fi
    } >"$work/httpd.conf"
    valgrind --tool=callgrind --callgrind-out-file="$work/cg/callgrind.$with.out" \
        apache2 -X -f "$work/httpd.conf" >"$work/valgrind.log" 2>&1 &
    local vg=$! i=0
    until [ "$(curl -s "http://127.0.0.1:$HTTP_PORT/token.txt")" = "$token" ]; do
        i=$((i + 1)); [ $i -gt 300 ] && { cat "$work/valgrind.log"; exit 1; }
        kill -0 "$vg" 2>/dev/null || { echo "httpd did not start (port $HTTP_PORT taken?)"; cat "$work/valgrind.log"; exit 1; }
        sleep 0.1
    done
    if [ "$IDENTITIES" = quiet ]; then
        quiet_client "$HTTP_PORT" "$N"
    else
        ab -q -k -n "$N" -c 1 -H "X-Client: client-1" \
            "http://127.0.0.1:$HTTP_PORT/index.html" >"$work/ab.out"
    fi
    kill -TERM "$(cat "$work/httpd.pid")"
    wait "$vg" || true
    rm -f "$work/httpd.pid"
    cp "$work/cg/callgrind.$with.out" "$OUT/"
}

per_request() { # file, function (inclusive) -> instructions per request
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        awk -v fn="$2" -v n="$N" '
            index($0, fn) && !done { gsub(",", "", $1); printf "%.0f", $1 / n; done = 1 }
            END { if (!done) printf "0" }'
}

profile without
profile with
base=$(per_request "$OUT/callgrind.without.out" "ap_process_async_request")
with=$(per_request "$OUT/callgrind.with.out" "ap_process_async_request")
echo "== instructions per request (callgrind, $N keep-alive requests, strategy $STRATEGY, backend $BACKEND, key $KEYBY, identities $IDENTITIES)"
printf "  %-44s %8s\n" "request processing, httpd without the module" "$base"
printf "  %-44s %8s\n" "request processing, with the module" "$with"
for fn in rlaas_limit_access_checker rlaas_identity_key rlaas_redis_eval \
    rlaas_pipe_submit rlaas_resp_call redisAppendFormattedCommand \
    rlaas_conn_read rlaas_conn_is_stale rlaas_reply_verdict apr_reslist_acquire apr_reslist_release \
    rlaas_fmt_policy rlaas_fmt_ratelimit apr_table_set \
    rlaas_backend_eval rlaas_table_update rlaas_siphash rlaas_algo_hit; do
    printf "  %-44s %8s\n" "$fn" "$(per_request "$OUT/callgrind.with.out" "$fn")"
done
echo "(user-space instructions only: system calls and waiting for Redis are"
echo " not counted; profiles kept in $OUT for callgrind_annotate)"
