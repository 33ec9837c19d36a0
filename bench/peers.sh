#!/usr/bin/env bash
# make bench-peers: what a rate limiter costs per request, mod_rlaas beside
# the limiters people compare it with, measured in one run on one machine.
#
# Every case serves the same 6-byte file over keep-alive connections
# (wrk -t1 -c$BENCH_CONNS, BENCH_SECONDS after a 1 s warm-up), BENCH_ROUNDS
# rounds with the cases alternating, and reports the median of: requests
# per second, p50 and p99 latency, and the CPU time per request of each
# process group (the web server's processes, Redis, wrk), read from /proc.
# Every limiter is configured so that it does its whole work on every
# request and never refuses one (the non-2xx column must be 0).
#
#   apache              httpd (event MPM), no limiter
#   rlaas-<st>          mod_rlaas, Redis, strategy <st>, one client
#   rlaas-gcra-nopipe   the same, RLaaSRedisPipeline off
#   rlaas-local-<st>    mod_rlaas, RLaaSBackend local (when built in)
#   rlaas-lease-<st>    mod_rlaas, Redis, RLaaSLease on: the client's quota
#                       taken in portions, spent in shared memory (fixed,
#                       gcra, token)
#   mod_qos             QS_ClientEventLimitCount on every request (32000 a
#                       second per client, its largest; shared
#                       memory, one global mutex)
#   mod_evasive         per child, nothing shared
#   nginx               no limiter
#   nginx-limit_req     limit_req (shared memory zone)
#   nginx-lua-redis     access_by_lua with lua-resty-redis: one EVALSHA of
#                       mod_rlaas' gcra script per request (the
#                       OpenResty/Kong way)
#
# Installs what it needs when run as root (Debian packages nginx,
# libnginx-mod-http-lua, lua-nginx-redis, libapache2-mod-qos,
# libapache2-mod-evasive, wrk, gnuplot-nox). Output: build/bench-peers/.
# Environment: BENCH_SECONDS (5), BENCH_ROUNDS (2), BENCH_CONNS (32),
# BENCH_CASES (a regex selecting case names).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
SECS=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-2}
CONNS=${BENCH_CONNS:-32}
SELECT=${BENCH_CASES:-.}
OUT=${BENCH_OUT:-$top/build/bench-peers}

PKGS="apache2 apache2-dev libhiredis-dev libssl-dev redis-server wrk gnuplot-nox
      nginx libnginx-mod-http-lua lua-nginx-redis libapache2-mod-qos
      libapache2-mod-evasive"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "Missing packages; install them with: sudo apt-get install -y$missing"
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends $missing >/dev/null
    # Debian enables the two modules it just installed in the system's
    # Apache, where mod_qos cannot load without its LoadFile of libpcre (and
    # every Apache::Test suite reading that configuration fails). The cases
    # below load them themselves; the system is left as it was.
    for m in qos evasive; do
        case "$missing" in *"libapache2-mod-$m"*) a2dismod -q "$m" >/dev/null 2>&1 || true ;; esac
    done
fi
# the packages start their services: not ours to keep
systemctl stop nginx apache2 >/dev/null 2>&1 || true
make -s >/dev/null 2>&1 || make -s
make -s lua >/dev/null 2>&1 || true

mkdir -p "$OUT"
work=$(mktemp -d /tmp/rlaas-peers.XXXXXX)
chmod 755 "$work"
MODDIR=$(apxs -q LIBEXECDIR)
cp .libs/mod_rlaas.so "$work/mod_rlaas.so"
mkdir -p "$work/htdocs" "$work/nginx"
printf 'hello\n' >"$work/htdocs/index.html"
chmod -R a+rX "$work"
TCK=$(getconf CLK_TCK)
free_port() {
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
HTTP_PORT=$(free_port 18180)
REDIS_PORT=$(free_port 16479)
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
cleanup() {
    [ -f "$work/httpd.pid" ] && kill "$(cat "$work/httpd.pid")" 2>/dev/null || true
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    rcli shutdown nosave >/dev/null 2>&1 || true
    sleep 0.5
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --daemonize yes --logfile "$work/redis.log" \
    --pidfile "$work/redis.pid" >/dev/null
until rcli ping >/dev/null 2>&1 && [ -s "$work/redis.pid" ]; do sleep 0.1; done
GCRA_SHA=$(rcli script load "$(cat build/lua/gcra.lua)")

cat >"$work/one.lua" <<'LUA'
wrk.headers["X-Client"] = "client-1"
LUA

# Does this build of the module take a directive? (features of other
# branches: the local engine, leases)
takes() {
    # (an ErrorLog of its own: apache2 -t fails without a writable one)
    printf 'ServerName x\nListen 127.0.0.1:1\nPidFile %s/t.pid\nErrorLog %s/probe.log\nLoadModule mpm_event_module %s/mod_mpm_event.so\nLoadModule authz_core_module %s/mod_authz_core.so\nLoadModule rlaas_module %s/mod_rlaas.so\n%s\n' \
        "$work" "$work" "$MODDIR" "$MODDIR" "$work" "$1" >"$work/probe.conf"
    apache2 -t -f "$work/probe.conf" >/dev/null 2>&1
}

apache_conf() {
    local extra=$1
    {
        cat <<CONF
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
LoadModule setenvif_module $MODDIR/mod_setenvif.so
TypesConfig /etc/mime.types
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
MaxKeepAliveRequests 0
KeepAliveTimeout 30
CONF
        [ "$(id -u)" -eq 0 ] && printf 'User www-data\nGroup www-data\n'
        printf '%s\n' "$extra"
    } >"$work/httpd.conf"
}

rlaas() {
    printf 'LoadModule rlaas_module %s/mod_rlaas.so\nRLaaSRedis 127.0.0.1:%s\n%s\n<Location "/">\n RLaaSLimit 1000000000\n RLaaSWindow 60s\n RLaaSStrategy %s\n RLaaSKeyBy header:X-Client\n</Location>\n' \
        "$work" "$REDIS_PORT" "$2" "$1"
}

nginx_conf() {
    local http_extra=$1 loc_extra=$2
    cat >"$work/nginx/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
    lua_package_path "/usr/share/lua/5.1/?.lua;;";
    $http_extra
    server {
        listen 127.0.0.1:$HTTP_PORT;
        root $work/htdocs;
        location / {
            $loc_extra
        }
    }
}
CONF
}

LUA_ACCESS="access_by_lua_block {
            local redis = require \"nginx.redis\"
            local red = redis:new()
            red:set_timeout(100)
            local ok, err = red:connect(\"127.0.0.1\", $REDIS_PORT)
            if not ok then return ngx.exit(500) end
            local key = \"peer:{\" .. (ngx.var.http_x_client or ngx.var.remote_addr) .. \"}:gcra\"
            local res, e = red:evalsha(\"$GCRA_SHA\", 1, key, 1000000000, 60000)
            if not res then return ngx.exit(500) end
            red:set_keepalive(10000, 64)
            if res[1] == 0 then return ngx.exit(429) end
        }"

# name kind config...
declare -A KIND
cases=()
add() {
    [[ $1 =~ $SELECT ]] || return 0
    cases+=("$1")
    KIND[$1]=$2
}
add apache apache
for st in fixed gcra sliding-window-algo; do add "rlaas-$st" apache; done
add rlaas-gcra-nopipe apache
if takes "RLaaSBackend local"; then
    for st in fixed gcra sliding-window-algo; do add "rlaas-local-$st" apache; done
fi
if takes "<Location /x>
RLaaSLimit 1
RLaaSStrategy gcra
RLaaSLease on
</Location>"; then
    for st in fixed gcra token; do add "rlaas-lease-$st" apache; done
fi
add mod_qos apache
add mod_evasive apache
add nginx nginx
add nginx-limit_req nginx
add nginx-lua-redis nginx

configure() {
    local name=$1 st
    case $name in
    apache) apache_conf "" ;;
    rlaas-gcra-nopipe) apache_conf "$(rlaas gcra 'RLaaSRedisPipeline off')" ;;
    rlaas-local-*) st=${name#rlaas-local-}
        apache_conf "$(rlaas "$st" 'RLaaSBackend local')" ;;
    rlaas-lease-*) st=${name#rlaas-lease-}
        apache_conf "$(rlaas "$st" '')
<Location \"/\">
 RLaaSLease on
</Location>" ;;
    rlaas-*) apache_conf "$(rlaas "${name#rlaas-}" '')" ;;
    mod_qos) apache_conf "LoadFile /usr/lib/x86_64-linux-gnu/libpcre.so.3
LoadModule qos_module $MODDIR/mod_qos.so
QS_ClientEntries 100000
SetEnvIf Request_URI . QS_Limit=yes
QS_ClientEventLimitCount 32000 1" ;;
    mod_evasive) apache_conf "LoadModule evasive20_module $MODDIR/mod_evasive20.so
DOSHashTableSize 3097
DOSPageCount 1000000000
DOSSiteCount 1000000000
DOSPageInterval 1
DOSSiteInterval 1
DOSBlockingPeriod 1" ;;
    nginx) nginx_conf "" "" ;;
    nginx-limit_req) nginx_conf \
        "limit_req_zone \$http_x_client zone=z:10m rate=1000000000r/s;" \
        "limit_req zone=z burst=1000000000 nodelay;" ;;
    nginx-lua-redis) nginx_conf "" "$LUA_ACCESS" ;;
    esac
}

start() {
    if [ "${KIND[$1]}" = nginx ]; then
        nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
    else
        apache2 -f "$work/httpd.conf" -k start
    fi
    local i=0
    until curl -s -o /dev/null -H "X-Client: client-1" \
        "http://127.0.0.1:$HTTP_PORT/index.html"; do
        i=$((i + 1))
        [ $i -gt 100 ] && { cat "$work/error_log" "$work/nginx/error.log" 2>/dev/null; exit 1; }
        sleep 0.05
    done
}

stop() {
    local f=$work/httpd.pid pid
    [ "${KIND[$1]}" = nginx ] && f=$work/nginx.pid
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$f"
}

ticks() {
    local p
    for p in "$@"; do awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || true; done |
        awk '{ s += $1 } END { print s + 0 }'
}

# name rps p50 p99 server_us redis_us wrk_us requests non2xx
run_case() {
    local name=$1 sp rp s0 r0 s1 r1
    configure "$name"
    rcli flushall >/dev/null
    rcli script load "$(cat build/lua/gcra.lua)" >/dev/null
    start "$name"
    wrk -t1 -c"$CONNS" -d1s -s "$work/one.lua" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >/dev/null 2>&1
    if [ "${KIND[$name]}" = nginx ]; then
        sp="$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr '\n' ' ')"
    else
        sp=$(pgrep -f "apache2 -f $work/httpd.conf" | tr '\n' ' ')
    fi
    rp=$(cat "$work/redis.pid")
    # shellcheck disable=SC2086
    s0=$(ticks $sp) r0=$(ticks "$rp")
    TIMEFORMAT='%U %S'
    { time wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$work/one.lua" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >"$work/wrk.out" 2>&1; } 2>"$work/wrk.time"
    # shellcheck disable=SC2086
    s1=$(ticks $sp) r1=$(ticks "$rp")
    stop "$name"
    awk -v name="$name" -v tck="$TCK" -v s=$((s1 - s0)) -v r=$((r1 - r0)) \
        -v wt="$(cat "$work/wrk.time")" '
        function ms(v) {
            if (v ~ /us$/) return v / 1000
            if (v ~ /ms$/) return v + 0
            if (v ~ /s$/) return v * 1000
            return v
        }
        /^ +50%/ { p50 = ms($2) }
        /^ +99%/ { p99 = ms($2) }
        /requests in/ { n = $1 }
        /^Requests\/sec:/ { rps = $2 }
        /Non-2xx or 3xx responses:/ { non2xx = $NF }
        END {
            split(wt, w, " ")
            us = n > 0 ? 1e6 / n : 0
            printf "%s %.0f %.3f %.3f %.1f %.1f %.1f %d %d\n", name, rps, p50, p99,
                s / tck * us, r / tck * us, (w[1] + w[2]) * us, n, non2xx
        }' "$work/wrk.out"
}

echo "== bench-peers: ${#cases[@]} cases x $ROUNDS rounds x ${SECS}s, wrk -t1 -c$CONNS, $(nproc) CPUs"
raw=$OUT/raw.txt
: >"$raw"
n=${#cases[@]}
for round in $(seq 1 "$ROUNDS"); do
    for k in $(seq 0 $((n - 1))); do
        c=${cases[$(((k + round - 1) % n))]}
        line=$(run_case "$c")
        echo "$round $line" | tee -a "$raw" |
            awk '{ printf "   round %s  %-22s %8s req/s  server %6s us  redis %6s us  non-2xx %s\n", $1, $2, $3, $6, $7, $10 }'
    done
done

awk '
    function median(list,    a, k, i, j, t) {
        k = split(list, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
            if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    # the first pass: the rate of apache in each round
    NR == FNR { if ($2 == "apache") base[$1] = $3; next }
    {
        name = $2
        if (!(name in seen)) { seen[name] = 1; order[++n] = name }
        for (f = 3; f <= 11; f++) col[name, f] = col[name, f] " " $f
        # the rate over that of apache in the same round: a machine
        # drifting between rounds does not tilt it
        if ($1 in base && base[$1] > 0) ratio[name] = ratio[name] " " $3 / base[$1]
    }
    END {
        for (i = 1; i <= n; i++) {
            nm = order[i]
            printf "%s %.0f %.2f %.2f %.1f %.1f %.1f %d %s\n", nm, median(col[nm, 3]),
                median(col[nm, 4]), median(col[nm, 5]), median(col[nm, 6]),
                median(col[nm, 7]), median(col[nm, 8]), median(col[nm, 11]),
                nm in ratio ? sprintf("%.3f", median(ratio[nm])) : "-"
        }
    }' "$raw" "$raw" >"$OUT/results.txt"

{
    echo "| server | req/s | × apache (median of rounds) | p50 ms | p99 ms | CPU us/req: web server | Redis | wrk | non-2xx |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $9, $3, $4, $5, $6, $7, $8 }' \
        "$OUT/results.txt"
} >"$OUT/results.md"
echo
cat "$OUT/results.md"
awk '$10 > 0 { printf "!! round %s %s: %d responses were not 200\n", $1, $2, $10 }' "$raw"

# Chart: CPU per request, web server and Redis stacked.
awk '{ print $1, $5, $6 }' "$OUT/results.txt" >"$OUT/cpu.dat"
gnuplot <<PLOT
set terminal svg size 900,420 font "sans,11"
set output "$OUT/cpu.svg"
set title "CPU time per request (us): web server and Redis, one run on one machine"
set style data histograms
set style histogram rowstacked
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set xtics rotate by -45 scale 0 font ",9"
set key top left
plot "$OUT/cpu.dat" using 2:xtic(1) title "web server" lc rgb "#3b6ea5", \
     "" using 3 title "Redis" lc rgb "#c0504d"
PLOT
echo
echo "table: $OUT/results.md   chart: $OUT/cpu.svg   raw rounds: $raw"
