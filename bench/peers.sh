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
# Two figures make the table readable on any machine:
#   x floor   CPU per request (web server + Redis) over that of the floor
#             case in the same round, median of the rounds: what a design
#             costs as a multiple of the one round trip every Redis-backed
#             limiter must make, whatever the machine's speed or load.
#   instr/req instructions of the web server per request, which do not
#             swing with the machine's load: counted by perf for the
#             measured seconds where the CPU's counters are readable (most
#             bare machines), else by callgrind on a short run of
#             BENCH_IR_REQUESTS requests, one connection (virtual machines,
#             containers); user space only under callgrind.
# Also, from Redis' INFO commandstats around the measured seconds: the
# scripts called per request (EVALSHA: 1 for a round trip per request,
# near 0 with a lease) and the commands Redis ran per request, those run
# inside the scripts included.
#
#   apache              httpd (event MPM), no limiter
#   floor               one round trip to Redis per request and nothing
#                       else: bench/mod_rlaas_floor.c, mod_rlaas' own Redis
#                       engine (pool, pipeline, exchange; the very objects
#                       of mod_rlaas.so) running a script that returns a
#                       constant verdict (bench/floor.lua)
#   rlaas-<st>          mod_rlaas, Redis, strategy <st>, one client, the
#                       default configuration (RLaaSLease auto): the busy
#                       client's quota taken in portions (the sliding log
#                       takes none)
#   rlaas-off-<st>      the same, RLaaSLease off: a round trip per request
#   rlaas-gcra-nopipe   rlaas-off-gcra, RLaaSRedisPipeline off
#   rlaas-local-<st>    mod_rlaas, RLaaSBackend local (when built in)
#   rlaas-lease-<st>    mod_rlaas, Redis, RLaaSLease on: the client's quota
#                       taken in portions, spent in shared memory (fixed,
#                       gcra, token)
#   mod_qos             QS_ClientEventLimitCount on every request (shared
#                       memory, one global mutex): each request counted as
#                       it starts and taken off as it is logged
#                       (QS_Limit_Decrement), so the count (requests in
#                       flight) never nears the limit; a count per second
#                       cannot do it: the counter is a short and a window
#                       of N seconds spans up to N + 1
#   mod_evasive         per child, nothing shared
#   nginx               no limiter
#   nginx-limit_req     limit_req (shared memory zone)
#   nginx-lua-redis     access_by_lua with lua-resty-redis: one EVALSHA of
#                       mod_rlaas' gcra script per request (the
#                       OpenResty/Kong way)
#
# Installs what it needs when run as root (Debian packages nginx,
# libnginx-mod-http-lua, lua-nginx-redis, libapache2-mod-qos,
# libapache2-mod-evasive, wrk, gnuplot-nox; valgrind for instr/req where
# perf cannot count). Output: build/bench-peers/.
# Environment: BENCH_SECONDS (5), BENCH_ROUNDS (2), BENCH_CONNS (32),
# BENCH_CASES (a regex selecting case names), BENCH_IR (auto: perf if it
# can count instructions here, else callgrind; perf, callgrind or off),
# BENCH_IR_REQUESTS (1000).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
SECS=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-2}
CONNS=${BENCH_CONNS:-32}
SELECT=${BENCH_CASES:-.}
OUT=${BENCH_OUT:-$top/build/bench-peers}
IR=${BENCH_IR:-auto}
IR_REQS=${BENCH_IR_REQUESTS:-1000}
# (another event than instructions only to try the perf path where the
# CPU's counters cannot be read)
PERF_EVENT=${BENCH_PERF_EVENT:-instructions}

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
make -s bench-floor >/dev/null 2>&1 || make -s bench-floor

# How instructions are counted: perf where the CPU's counters can be read
# (a virtual machine often has none: "<not supported>"), else callgrind.
perf_counts() {
    local out
    command -v perf >/dev/null || return 1
    out=$(perf stat -x, -e "$PERF_EVENT" true 2>&1) || return 1
    grep -q "^[0-9][0-9.]*," <<<"$out"
}
if [ "$IR" = auto ]; then
    if perf_counts; then IR=perf
    elif command -v valgrind >/dev/null; then IR=callgrind
    else IR=off
    fi
fi
case $IR in
perf) perf_counts || { echo "perf cannot count $PERF_EVENT here (BENCH_IR=callgrind)"; exit 1; } ;;
callgrind)
    if ! command -v valgrind >/dev/null || ! command -v ab >/dev/null; then
        echo "BENCH_IR=callgrind needs valgrind and ab (apache2-utils)"
        exit 1
    fi ;;
off) ;;
*) echo "BENCH_IR: auto, perf, callgrind or off"; exit 1 ;;
esac

mkdir -p "$OUT"
work=$(mktemp -d /tmp/rlaas-peers.XXXXXX)
chmod 755 "$work"
MODDIR=$(apxs -q LIBEXECDIR)
cp .libs/mod_rlaas.so "$work/mod_rlaas.so"
cp build/floor/.libs/mod_rlaas_floor.so "$work/mod_rlaas_floor.so"
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
add floor apache
for st in fixed gcra sliding-window-algo; do add "rlaas-$st" apache; done
for st in fixed gcra sliding-window-algo; do add "rlaas-off-$st" apache; done
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
    floor) apache_conf "LoadModule rlaas_floor_module $work/mod_rlaas_floor.so
RLaaSBenchFloor 127.0.0.1:$REDIS_PORT" ;;
    rlaas-gcra-nopipe) apache_conf "$(rlaas gcra 'RLaaSRedisPipeline off
 RLaaSLease off')" ;;
    rlaas-off-*) apache_conf "$(rlaas "${name#rlaas-off-}" 'RLaaSLease off')" ;;
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
SetEnvIf Request_URI . QS_Limit_Decrement=1
QS_ClientEventLimitCount 1000 60" ;;
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

# The web server's processes now.
server_pids() {
    if [ "${KIND[$1]}" = nginx ]; then
        echo "$(cat "$work/nginx.pid") $(pgrep -P "$(cat "$work/nginx.pid")" | tr '\n' ' ')"
    else
        pgrep -f "apache2 -f $work/httpd.conf" | tr '\n' ' '
    fi
}

# Scripts called, and commands run (those inside scripts too, INFO left
# out), so far.
redis_calls() {
    rcli info commandstats | awk -F'[:=,]' '
        /^cmdstat_/ && $1 != "cmdstat_info" { n += $3 }
        $1 ~ /^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro)$/ { e += $3 }
        END { print e + 0, n + 0 }'
}

# name rps p50 p99 server_us redis_us wrk_us requests non2xx instr/req
# scripts/req commands/req (instr/req -1 unless perf counts)
run_case() {
    local name=$1 sp rp s0 r0 s1 r1 c0 c1 perf_pid=""
    configure "$name"
    rcli flushall >/dev/null
    rcli script load "$(cat build/lua/gcra.lua)" >/dev/null
    start "$name"
    wrk -t1 -c"$CONNS" -d1s -s "$work/one.lua" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >/dev/null 2>&1
    sp=$(server_pids "$name")
    rp=$(cat "$work/redis.pid")
    # shellcheck disable=SC2086
    s0=$(ticks $sp) r0=$(ticks "$rp") c0=$(redis_calls)
    rm -f "$work/perf.out"
    if [ "$IR" = perf ]; then
        # shellcheck disable=SC2086
        perf stat -x, -e "$PERF_EVENT" -o "$work/perf.out" \
            -p "$(echo $sp | tr ' ' ,)" &
        perf_pid=$!
    fi
    TIMEFORMAT='%U %S'
    { time wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -s "$work/one.lua" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >"$work/wrk.out" 2>&1; } 2>"$work/wrk.time"
    # shellcheck disable=SC2086
    s1=$(ticks $sp) r1=$(ticks "$rp") c1=$(redis_calls)
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
    fi
    stop "$name"
    awk -v name="$name" -v tck="$TCK" -v s=$((s1 - s0)) -v r=$((r1 - r0)) \
        -v c0="$c0" -v c1="$c1" -v wt="$(cat "$work/wrk.time")" \
        -v ins="$(awk -F, '$1 ~ /^[0-9.]+$/ { print $1; exit }' "$work/perf.out" 2>/dev/null)" '
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
            split(c0, a, " ")
            split(c1, b, " ")
            us = n > 0 ? 1e6 / n : 0
            k = n > 0 ? 1 / n : 0
            printf "%s %.0f %.3f %.3f %.1f %.1f %.1f %d %d %.0f %.3f %.3f\n", name, rps, p50, p99,
                s / tck * us, r / tck * us, (w[1] + w[2]) * us, n, non2xx,
                (ins != "" && n > 0 ? ins / n : -1), (b[1] - a[1]) * k, (b[2] - a[2]) * k
        }' "$work/wrk.out"
}

# ---- instructions per request under callgrind ----
# One process (httpd -X, nginx without its master) under callgrind, twice:
# with IR_BASE and with IR_BASE + IR_REQS keep-alive requests on one
# connection (ab -k -c1). The difference over IR_REQS is the cost of a
# request, without start-up and shutdown.
IR_BASE=200

# Instructions of the whole run of case $1 serving $2 requests.
callgrind_run() {
    local name=$1 n=$2 pidf vg i=0
    rm -f "$work/vg.log"
    # both runs alike: the same scripts to load
    rcli flushall >/dev/null
    rcli script flush >/dev/null
    rcli script load "$(cat build/lua/gcra.lua)" >/dev/null
    if [ "${KIND[$name]}" = nginx ]; then
        sed 's/^worker_processes .*/worker_processes 1;\nmaster_process off;\ndaemon off;/' \
            "$work/nginx/nginx.conf" >"$work/nginx/one.conf"
        pidf=$work/nginx.pid
        valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            --log-file="$work/vg.log" \
            nginx -c "$work/nginx/one.conf" -p "$work/nginx" >/dev/null 2>&1 &
    else
        pidf=$work/httpd.pid
        valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            --log-file="$work/vg.log" \
            apache2 -X -f "$work/httpd.conf" >/dev/null 2>&1 &
    fi
    vg=$!
    until curl -s -o /dev/null -H "X-Client: client-1" \
        "http://127.0.0.1:$HTTP_PORT/index.html"; do
        i=$((i + 1))
        [ $i -gt 600 ] && { cat "$work/vg.log" >&2; kill "$vg"; return 1; }
        sleep 0.1
    done
    ab -q -k -c1 -n "$n" -H "X-Client: client-1" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >"$work/ab.out" 2>&1 || true
    kill -TERM "$(cat "$pidf")" 2>/dev/null || kill -TERM "$vg"
    wait "$vg" 2>/dev/null || true
    rm -f "$pidf"
    if ! grep -q "^Non-2xx responses" "$work/ab.out" &&
        grep -q "^Complete requests: *$n$" "$work/ab.out"; then
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$work/vg.log"
    fi
}

# name instr/req, or -1 if a run failed
callgrind_case() {
    local name=$1 a b
    configure "$name"
    a=$(callgrind_run "$name" "$IR_BASE") || a=""
    b=$(callgrind_run "$name" $((IR_BASE + IR_REQS))) || b=""
    if [ -n "$a" ] && [ -n "$b" ]; then
        echo "$name $(((b - a) / IR_REQS))"
    else
        echo "$name -1"
    fi
}

echo "== bench-peers: ${#cases[@]} cases x $ROUNDS rounds x ${SECS}s, wrk -t1 -c$CONNS, $(nproc) CPUs, instr/req: $IR"
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

# name instr/req (callgrind: once per case, after the rounds)
irs=$OUT/instructions.txt
: >"$irs"
if [ "$IR" = callgrind ]; then
    echo "== instructions per request: callgrind, $IR_REQS requests, one connection"
    for c in "${cases[@]}"; do
        callgrind_case "$c" | tee -a "$irs" | awk '{ printf "   %-22s %s\n", $1, $2 }'
    done
fi

# raw: round name rps p50 p99 server redis wrk requests non2xx instr/req
# scripts/req commands/req
awk -v irs="$irs" '
    function median(list,    a, k, i, j, t) {
        k = split(list, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
            if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    BEGIN { while ((getline l < irs) > 0) { split(l, w, " "); ir[w[1]] = w[2] } }
    # the first pass: per round, the rate of apache and the CPU per request
    # (web server and Redis) of the floor
    NR == FNR {
        if ($2 == "apache") base[$1] = $3
        if ($2 == "floor") floor[$1] = $6 + $7
        next
    }
    {
        name = $2
        if (!(name in seen)) { seen[name] = 1; order[++n] = name }
        for (f = 3; f <= 13; f++) col[name, f] = col[name, f] " " $f
        # each ratio within its round: a machine drifting between rounds
        # does not tilt it
        if ($1 in base && base[$1] > 0) ratio[name] = ratio[name] " " $3 / base[$1]
        if ($1 in floor && floor[$1] > 0) fr[name] = fr[name] " " ($6 + $7) / floor[$1]
        # refusals: all of them, not a median that could hide a round of them
        non2xx[name] += $10
    }
    END {
        for (i = 1; i <= n; i++) {
            nm = order[i]
            # callgrind counted once per case, perf in every round
            v = nm in ir ? ir[nm] : median(col[nm, 11])
            printf "%s %.0f %.2f %.2f %.1f %.1f %.1f %d %s %s %s %.2f %.2f\n", nm, median(col[nm, 3]),
                median(col[nm, 4]), median(col[nm, 5]), median(col[nm, 6]),
                median(col[nm, 7]), median(col[nm, 8]), non2xx[nm],
                (nm in ratio ? sprintf("%.3f", median(ratio[nm])) : "-"),
                (nm in fr ? sprintf("%.2f", median(fr[nm])) : "-"),
                (v >= 0 ? sprintf("%.0f", v) : "n/a"), median(col[nm, 12]), median(col[nm, 13])
        }
    }' "$raw" "$raw" >"$OUT/results.txt"

case $IR in
perf) ir_head="instr/req: web server (perf, $PERF_EVENT)" ;;
callgrind) ir_head="instr/req: web server (callgrind, user space, one connection)" ;;
*) ir_head="instr/req" ;;
esac
{
    echo "| server | req/s | × apache (median of rounds) | p50 ms | p99 ms | CPU us/req: web server | Redis | wrk | × floor (CPU: web server + Redis) | $ir_head | scripts/req | Redis commands/req | non-2xx (all rounds) |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    awk '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $9, $3, $4, $5, $6, $7, $10, $11, $12, $13, $8 }' \
        "$OUT/results.txt"
} >"$OUT/results.md"
echo
cat "$OUT/results.md"
awk '$10 > 0 { printf "!! round %s %s: %d responses were not 200\n", $1, $2, $10 }' "$raw"
awk '$2 < 0 { printf "!! %s: instructions not counted (a callgrind run failed)\n", $1 }' "$irs"

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
