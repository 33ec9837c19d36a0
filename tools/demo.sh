#!/bin/sh
# make demo: build the module, start a private redis-server and an httpd with
# conf/demo.conf on localhost, show a burst turning from 200 to 429 on a
# Redis-backed port and on one decided by the local engine (no Redis), then
# keep serving until Ctrl-C. Both servers are stopped on exit; a Redis the
# demo did not start is never touched.
#
# Ports: the first free ones from 8080, 8081 and 6390, or those given in
# RLAAS_DEMO_PORT, RLAAS_DEMO_LOCAL_PORT and RLAAS_DEMO_REDIS_PORT.
set -eu

PKGS="apache2 apache2-dev libhiredis-dev libssl-dev redis-server curl make gcc"
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "== installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $missing
    else
        echo "Missing packages. Install them with:"
        echo "  sudo apt-get install -y$missing"
        exit 1
    fi
fi

echo "== building"
make -s >/dev/null

# First TCP port from $1 upwards that nothing listens on at 127.0.0.1:
# found by binding it (any /bin/sh: dash has no /dev/tcp), so a busy port
# is never taken for a free one.
free_port() {
    perl -MIO::Socket::INET -e '
        for my $p ($ARGV[0] .. 65535) {
            IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $p,
                                  Proto => "tcp", Listen => 1) or next;
            print $p;
            exit 0;
        }
        exit 1' "$1"
}

# port VAR DEFAULT: the port the user set in VAR (refused if busy), else
# the first free one from DEFAULT.
port() {
    eval "want=\${$1:-}"
    if [ -n "$want" ]; then
        if [ "$(free_port "$want")" != "$want" ]; then
            echo "$1=$want: that port is in use; choose another" >&2
            exit 1
        fi
        echo "$want"
    else
        free_port "$2"
    fi
}

RLAAS_DEMO_DIR=$(mktemp -d /tmp/rlaas-demo.XXXXXX)
RLAAS_DEMO_PORT=$(port RLAAS_DEMO_PORT 8080)
RLAAS_DEMO_LOCAL_PORT=$(port RLAAS_DEMO_LOCAL_PORT $((RLAAS_DEMO_PORT + 1)))
RLAAS_DEMO_REDIS_PORT=$(port RLAAS_DEMO_REDIS_PORT 6390)
RLAAS_MODDIR=$(apxs -q LIBEXECDIR)
RLAAS_MODULE="$top/.libs/mod_rlaas.so"
export RLAAS_DEMO_DIR RLAAS_DEMO_PORT RLAAS_DEMO_LOCAL_PORT \
    RLAAS_DEMO_REDIS_PORT RLAAS_MODDIR RLAAS_MODULE
mkdir -p "$RLAAS_DEMO_DIR/htdocs/api" "$RLAAS_DEMO_DIR/htdocs/login" \
    "$RLAAS_DEMO_DIR/htdocs/static"
echo "hello from the API" >"$RLAAS_DEMO_DIR/htdocs/api/index.html"
echo "login form" >"$RLAAS_DEMO_DIR/htdocs/login/index.html"
echo "static file" >"$RLAAS_DEMO_DIR/htdocs/static/index.html"
echo "mod_rlaas demo" >"$RLAAS_DEMO_DIR/htdocs/index.html"
chmod -R a+rX "$RLAAS_DEMO_DIR"

defines=""
[ "$(id -u)" -eq 0 ] && defines="-D RLAAS_DEMO_ROOT"

# Stops both servers before saying so: after a hang-up the terminal is
# gone and any output fails.
cleanup() {
    trap - HUP INT TERM EXIT
    [ -f "$RLAAS_DEMO_DIR/httpd.pid" ] &&
        kill "$(cat "$RLAAS_DEMO_DIR/httpd.pid")" 2>/dev/null || true
    # only the redis-server this demo started, by its own pid
    [ -f "$RLAAS_DEMO_DIR/redis.pid" ] &&
        kill "$(cat "$RLAAS_DEMO_DIR/redis.pid")" 2>/dev/null || true
    { echo; echo "== stopped httpd and redis-server"; } 2>/dev/null || true
    sleep 1
    rm -rf "$RLAAS_DEMO_DIR"
}
# Ctrl-C ends the demo: clean up and leave quietly, not through the
# serving loop below (which would report httpd as gone).
trap 'cleanup; exit 0' HUP INT TERM
trap cleanup EXIT

echo "== redis-server on 127.0.0.1:$RLAAS_DEMO_REDIS_PORT"
redis-server --port "$RLAAS_DEMO_REDIS_PORT" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$RLAAS_DEMO_DIR" --daemonize yes \
    --pidfile "$RLAAS_DEMO_DIR/redis.pid" \
    --logfile "$RLAAS_DEMO_DIR/redis.log" >/dev/null
i=0
until [ -s "$RLAAS_DEMO_DIR/redis.pid" ]; do
    i=$((i + 1))
    if [ $i -gt 50 ]; then
        echo "redis-server did not start; its log:"
        cat "$RLAAS_DEMO_DIR/redis.log"
        exit 1
    fi
    sleep 0.1
done

echo "== httpd on http://127.0.0.1:$RLAAS_DEMO_PORT/ (Redis) and" \
    "http://127.0.0.1:$RLAAS_DEMO_LOCAL_PORT/ (local engine), conf/demo.conf"
# shellcheck disable=SC2086
apache2 -f "$top/conf/demo.conf" $defines -k start
i=0
until curl -s -o /dev/null "http://127.0.0.1:$RLAAS_DEMO_PORT/"; do
    i=$((i + 1))
    if [ $i -gt 50 ]; then
        echo "httpd did not start; its log:"
        cat "$RLAAS_DEMO_DIR/error_log"
        exit 1
    fi
    sleep 0.1
done

show() {
    curl -s -o /dev/null -D - "$@" |
        awk 'NR == 1 { printf "%s", $2 }
             /^(Retry-After|X-RLaaS-Status|RateLimit|RateLimit-Policy|X-RateLimit-[A-Za-z]*):/ {
                 sub(/\r$/, ""); printf "  %s", $0 }
             END { print "" }'
}

echo
echo "-- /api/ allows 5 requests per 10 s per X-API-Key; 8 quick requests:"
for n in 1 2 3 4 5 6 7 8; do
    printf "   request %d: " "$n"
    show -H "X-API-Key: demo-key-1" "http://127.0.0.1:$RLAAS_DEMO_PORT/api/"
done
echo
echo "-- another API key has its own quota:"
printf "   other key: "
show -H "X-API-Key: demo-key-2" "http://127.0.0.1:$RLAAS_DEMO_PORT/api/"
echo
echo "-- /static/ is exempt (RLaaSEngine off):"
printf "   static:    "
show "http://127.0.0.1:$RLAAS_DEMO_PORT/static/"
echo
echo "-- the body of a denied request:"
printf "   "
curl -s -H "X-API-Key: demo-key-1" "http://127.0.0.1:$RLAAS_DEMO_PORT/api/"
echo
echo
echo "-- the same API on port $RLAAS_DEMO_LOCAL_PORT, decided by the local engine" \
    "(RLaaSBackend local: shared memory, no Redis); 8 quick requests:"
for n in 1 2 3 4 5 6 7 8; do
    printf "   request %d: " "$n"
    show -H "X-API-Key: demo-key-1" "http://127.0.0.1:$RLAAS_DEMO_LOCAL_PORT/api/"
done
echo
echo "-- the local engine's table (rlaas-metrics):"
curl -s "http://127.0.0.1:$RLAAS_DEMO_LOCAL_PORT/rlaas-metrics" |
    grep -E '^rlaas_local_(identities|bytes|capacity_bytes|evictions_total) ' |
    sed 's/^/   /'
echo
echo "-- what Redis holds (keys and their types; nothing of the local engine):"
redis-cli -p "$RLAAS_DEMO_REDIS_PORT" --scan --pattern 'rlaas:*' |
    while read -r k; do
        printf "   %s  %s  ttl=%sms\n" "$k" \
            "$(redis-cli -p "$RLAAS_DEMO_REDIS_PORT" type "$k")" \
            "$(redis-cli -p "$RLAAS_DEMO_REDIS_PORT" pttl "$k")"
    done
echo
echo "Serving on http://127.0.0.1:$RLAAS_DEMO_PORT/ (Redis) and" \
    "http://127.0.0.1:$RLAAS_DEMO_LOCAL_PORT/ (local engine) until Ctrl-C. Try:"
echo "  curl -i -H 'X-API-Key: mine' http://127.0.0.1:$RLAAS_DEMO_PORT/api/"
echo "  curl -i -H 'X-API-Key: mine' http://127.0.0.1:$RLAAS_DEMO_LOCAL_PORT/api/"
echo "  curl -i http://127.0.0.1:$RLAAS_DEMO_PORT/login/"
echo "The operator's console (who is limited; reset, credit, unban):"
echo "  http://127.0.0.1:$RLAAS_DEMO_PORT/rlaas-admin (the main server: every host)"
echo "  http://127.0.0.1:$RLAAS_DEMO_LOCAL_PORT/rlaas-admin (the local engine's virtual host: its own view)"
echo "Access log: $RLAAS_DEMO_DIR/access_log"
while :; do
    sleep 1
    [ -f "$RLAAS_DEMO_DIR/httpd.pid" ] || { echo "httpd stopped"; exit 1; }
done
