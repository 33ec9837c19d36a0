#!/usr/bin/env bash
# make bench: what mod_rlaas costs an Apache server, measured in one run on
# one machine.
#
# Starts a private redis-server and, per case, an httpd (event MPM) on
# loopback, and drives it with wrk over keep-alive connections:
#   baseline      httpd without the module
#   loaded        the module loaded, no limit configured
#   <st>-1        strategy <st>, one client, limit never reached
#   <st>-10k      strategy <st>, 10,000 distinct clients, limit never reached
#   <st>-deny     strategy <st>, every request denied (the 429 path)
#   <st>-slow     strategy <st>, 10,000 clients, Redis behind a relay
#                 (bench/delay-proxy.pl) that holds every chunk of bytes for
#                 BENCH_DELAY_MS (1) in each direction
#   two-*         two policies on every request (fixed per minute and gcra
#                 per hour, RLaaSApply), decided in one call of the multi
#                 script: -1, -10k, -deny and -slow as above
#   cluster-10k   gcra, 10,000 clients, a Redis Cluster of three masters
#                 (RLaaSRedisCluster): Redis' CPU is the three nodes' sum
#   local-<st>-1, local-<st>-10k, local-<st>-deny, local-two-1, local-two-10k
#                 the same with RLaaSBackend local: the state in httpd's
#                 shared memory, no Redis
#   lease-<st>-1, lease-<st>-10k, lease-<st>-deny (fixed, gcra, token)
#                 Redis with RLaaSLease on: portions of each client's quota
#                 spent in shared memory
#   conc-1, conc-10k, local-conc-1, local-conc-10k
#                 gcra as gcra-1 and gcra-10k (and local-gcra-*), with
#                 RLaaSConcurrency 500 in the same section (never reached: at
#                 most BENCH_CONNS in flight): what a concurrency limit adds,
#                 its slot taken before and given back after each request
#   mod_qos, mod_evasive
#                 the Debian packages' modules (when installed) limiting per
#                 client address with limits never reached, for comparison
# Every case runs BENCH_ROUNDS times, the cases alternating, and the median
# is reported: requests per second; its ratio to the baseline (the median
# over rounds of the case's rate over the baseline's rate in the same
# round, so that a machine drifting between rounds does not tilt it);
# p50/p99 latency; CPU time per request of httpd, Redis and wrk, and the
# CPUs' idle time per request (from /proc); Redis commands per request
# (INFO commandstats); and memory per client: Redis' (MEMORY USAGE of
# every key), or the local engine's table (rlaas_local_bytes over
# rlaas_local_identities). It also prints what one Redis round trip and one thread wake-up
# (bench/wake.c) cost on this machine: the floor under a limited request.
#
# Environment: BENCH_SECONDS (5), BENCH_ROUNDS (5), BENCH_CONNS (32),
# BENCH_CASES (a regex selecting case names), BENCH_OUT (build/bench),
# BENCH_DELAY_MS (1: the added latency of the -slow cases, each way).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

SECONDS_PER_CASE=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-5}
CONNS=${BENCH_CONNS:-32}
SELECT=${BENCH_CASES:-.}
OUT=${BENCH_OUT:-$top/build/bench}
DELAY_MS=${BENCH_DELAY_MS:-1}
STRATEGIES="fixed sliding-window-algo sliding token leaky gcra"

need() {
    local missing=""
    for p in apache2 apache2-dev libhiredis-dev libssl-dev redis-server wrk gnuplot-nox gcc; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends $missing >/dev/null
    else
        echo "Missing packages; install them with: sudo apt-get install -y$missing"
        exit 1
    fi
}
need
make -s >/dev/null

mkdir -p "$OUT"
work=$(mktemp -d /tmp/rlaas-bench.XXXXXX)
chmod 755 "$work"
MODDIR=$(apxs -q LIBEXECDIR)
# httpd may switch to www-data when started as root: give it a copy of the
# module it can read, whatever the permissions of the checkout.
cp .libs/mod_rlaas.so "$work/mod_rlaas.so"
mkdir -p "$work/htdocs"
printf 'hello\n' >"$work/htdocs/index.html"
chmod -R a+rX "$work"
TCK=$(getconf CLK_TCK)

free_port() {
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
HTTP_PORT=$(free_port 18080)
REDIS_PORT=$(free_port 16379)
RELAY_PORT=$(free_port $((REDIS_PORT + 1)))
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
CLUSTER_PORTS=""

cleanup() {
    [ -f "$work/httpd.pid" ] && kill "$(cat "$work/httpd.pid")" 2>/dev/null || true
    [ -f "$work/relay.pid" ] && kill "$(cat "$work/relay.pid")" 2>/dev/null || true
    rcli shutdown nosave >/dev/null 2>&1 || true
    for p in $CLUSTER_PORTS; do
        redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true
    done
    sleep 0.5
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --daemonize yes --logfile "$work/redis.log" \
    --pidfile "$work/redis.pid" >/dev/null
until rcli ping >/dev/null 2>&1; do sleep 0.1; done
until [ -s "$work/redis.pid" ]; do sleep 0.1; done

# The -slow cases reach the same Redis through a relay that delays every
# chunk by DELAY_MS each way (a user-space stand-in for tc netem, which
# needs root and a kernel module many machines lack).
SLOW=0
for st in $STRATEGIES two; do
    [[ "$st-slow" =~ $SELECT ]] || continue
    perl bench/delay-proxy.pl "$RELAY_PORT" 127.0.0.1 "$REDIS_PORT" "$DELAY_MS" \
        >"$work/relay.log" 2>&1 &
    echo $! >"$work/relay.pid"
    until redis-cli -p "$RELAY_PORT" ping >/dev/null 2>&1; do sleep 0.1; done
    SLOW=1
    break
done

# The cluster case: three masters on loopback, slots spread by redis-cli.
if [[ cluster-10k =~ $SELECT ]]; then
    p=$((RELAY_PORT + 1))
    for i in 1 2 3; do
        p=$(free_port $((p + 1)))
        bus=$(free_port $((p + 100)))
        mkdir -p "$work/cluster-$p"
        redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
            --cluster-enabled yes --cluster-port "$bus" \
            --cluster-config-file "$work/cluster-$p/nodes.conf" \
            --dir "$work/cluster-$p" --daemonize yes \
            --logfile "$work/cluster-$p/redis.log" \
            --pidfile "$work/cluster-$p/redis.pid" >/dev/null
        CLUSTER_PORTS="$CLUSTER_PORTS $p"
    done
    for p in $CLUSTER_PORTS; do
        until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done
    done
    # shellcheck disable=SC2046
    redis-cli --cluster create $(printf '127.0.0.1:%s ' $CLUSTER_PORTS) \
        --cluster-yes >/dev/null
    for p in $CLUSTER_PORTS; do
        until redis-cli -p "$p" cluster info | grep -q cluster_state:ok; do
            sleep 0.1
        done
    done
fi

# wrk scripts: one client, or one of 10,000 per request.
cat >"$work/one.lua" <<'LUA'
wrk.headers["X-Client"] = "client-1"
LUA
cat >"$work/many.lua" <<'LUA'
local i = 0
request = function()
    i = (i * 7921 + 1) % 10000  -- full period: visits all 10,000
    return wrk.format("GET", "/index.html", { ["X-Client"] = "client-" .. i })
end
LUA

# httpd.conf for one case: $1 = none | loaded | qos | evasive | <strategy>
# | two (two policies) | conc (gcra and RLaaSConcurrency 500), $2 = limit, $3 = the Redis port, $4 = redis |
# local (the backend) | lease (Redis, RLaaSLease on)
write_conf() {
    local mode=$1 limit=${2:--} port=${3:-$REDIS_PORT} backend=${4:-redis}
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
TypesConfig /etc/mime.types
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
MaxKeepAliveRequests 0
KeepAliveTimeout 30
CONF
        [ "$(id -u)" -eq 0 ] && printf 'User www-data\nGroup www-data\n'
        case $mode in
        none) ;;
        qos)
            # per client address: every request a QS_Event, counted against
            # a rate per second it never reaches
            cat <<CONF
LoadFile $(ls /usr/lib/x86_64-linux-gnu/libpcre.so.3 /lib/x86_64-linux-gnu/libpcre.so.3 2>/dev/null | head -1)
LoadModule qos_module $MODDIR/mod_qos.so
LoadModule setenvif_module $MODDIR/mod_setenvif.so
QS_ClientEntries 50000
SetEnvIf Request_URI "^/" QS_Event=yes
QS_ClientEventPerSecLimit 1000000
CONF
            ;;
        evasive)
            cat <<CONF
LoadModule evasive20_module $MODDIR/mod_evasive20.so
DOSHashTableSize 16384
DOSPageCount 1000000000
DOSPageInterval 1
DOSSiteCount 1000000000
DOSSiteInterval 1
DOSBlockingPeriod 1
CONF
            ;;
        *)
            echo "LoadModule rlaas_module $work/mod_rlaas.so"
            if [ "$port" = cluster ]; then
                echo "RLaaSRedisCluster$(printf ' 127.0.0.1:%s' $CLUSTER_PORTS)"
            else
                echo "RLaaSRedis 127.0.0.1:$port"
            fi
            if [ "$backend" = lease ]; then
                echo "RLaaSBackend redis"
            else
                echo "RLaaSBackend $backend"
            fi
            ;;
        esac
        if [ "$limit" != - ] && [ "$mode" = two ]; then
            cat <<CONF
RLaaSPolicy per-minute $limit 60s strategy=fixed key="header:X-Client"
RLaaSPolicy per-hour $limit 1h strategy=gcra key="header:X-Client"
<Location "/">
    RLaaSApply per-minute per-hour
</Location>
CONF
        elif [ "$limit" != - ]; then
            cat <<CONF
<Location "/">
    RLaaSLimit $limit
    RLaaSWindow 60s
    RLaaSStrategy $([ "$mode" = conc ] && echo gcra || echo "$mode")
    RLaaSKeyBy header:X-Client
$([ "$backend" = lease ] && echo "    RLaaSLease on" || true)
$([ "$mode" = conc ] && echo "    RLaaSConcurrency 500" || true)
</Location>
<Location "/rlaas-metrics">
    RLaaSEngine off
    SetHandler rlaas-metrics
    RLaaSMetrics on
</Location>
CONF
        fi
    } >"$work/httpd.conf"
}

start_httpd() {
    apache2 -f "$work/httpd.conf" -k start
    local i=0
    until curl -s -o /dev/null "http://127.0.0.1:$HTTP_PORT/index.html"; do
        i=$((i + 1))
        [ $i -gt 100 ] && { cat "$work/error_log"; exit 1; }
        sleep 0.05
    done
}

stop_httpd() {
    local pid
    pid=$(cat "$work/httpd.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$work/httpd.pid"
}

# Redis commands executed so far (every command counts, scripts' inner
# calls included), and EVALSHA calls alone; of every cluster node too.
redis_calls() {
    { rcli info commandstats
      for p in $CLUSTER_PORTS; do redis-cli -p "$p" info commandstats; done
    } | tr -d '\r' | awk -F'[:=,]' '
        /^cmdstat_/ && $1 !~ /cmdstat_(info|config|flushall|memory|scan|dbsize|ping)/ {
            all += $3; if ($1 == "cmdstat_evalsha") ev += $3 }
        END { printf "%d %d\n", all, ev }'
}

# Average MEMORY USAGE per client: all keys' bytes over the clients seen.
memory_per_client() {
    local clients=$1
    rcli --scan | sed 's/^/MEMORY USAGE /' |
        rcli | awk -v c="$clients" '{ s += $1 } END { if (c > 0) printf "%.0f", s / c; else print "-" }'
}

# CPU ticks (user + system) used so far by the processes given, and by
# none (the machine's idle and iowait ticks).
ticks() {
    local p
    for p in "$@"; do
        awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || true
    done | awk '{ s += $1 } END { print s + 0 }'
}
idle_ticks() { awk '/^cpu / { print $5 + $6 }' /proc/stat; }

# One case, one round: prints "name rps p50_ms p99_ms cmds evalsha mem
# requests non2xx httpd_us redis_us wrk_us idle_us"
run_case() {
    local name=$1 mode=$2 limit=$3 script=$4 backend=${5:-redis} port=$REDIS_PORT
    [[ $name == *-slow ]] && port=$RELAY_PORT
    [[ $name == cluster-* ]] && port=cluster
    write_conf "$mode" "$limit" "$port" "$backend"
    rcli flushall >/dev/null
    for p in $CLUSTER_PORTS; do
        redis-cli -p "$p" flushall >/dev/null
        redis-cli -p "$p" config resetstat >/dev/null
    done
    start_httpd
    if [[ $name == *-deny ]]; then
        # use up the quota first, so that every measured request is a 429
        curl -s -o /dev/null -H "X-Client: client-1" \
            "http://127.0.0.1:$HTTP_PORT/index.html"
    fi
    # a short warm-up opens the pooled connections and loads the script
    wrk -t1 -c"$CONNS" -d1s -s "$work/$script" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >/dev/null 2>&1
    rcli config resetstat >/dev/null
    local hp rp h0 r0 i0 h1 r1 i1 wrk_s
    hp=$(pgrep -f "apache2 -f $work/httpd.conf" | tr '\n' ' ')
    rp=$(cat "$work/redis.pid")
    for p in $CLUSTER_PORTS; do
        rp="$rp $(cat "$work/cluster-$p/redis.pid")"
        redis-cli -p "$p" config resetstat >/dev/null
    done
    # shellcheck disable=SC2086
    h0=$(ticks $hp) r0=$(ticks $rp) i0=$(idle_ticks)
    TIMEFORMAT='%U %S'
    { time wrk -t1 -c"$CONNS" -d"${SECONDS_PER_CASE}s" --latency \
        -s "$work/$script" "http://127.0.0.1:$HTTP_PORT/index.html" \
        >"$work/wrk.out" 2>&1; } 2>"$work/wrk.time"
    # shellcheck disable=SC2086
    h1=$(ticks $hp) r1=$(ticks $rp) i1=$(idle_ticks)
    local calls
    calls=$(redis_calls)
    local mem="${MEM[$backend-$mode]:--}"
    stop_httpd
    awk -v name="$name" -v calls="$calls" -v mem="$mem" -v tck="$TCK" \
        -v h=$((h1 - h0)) -v r=$((r1 - r0)) -v idle=$((i1 - i0)) \
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
            split(calls, c, " ")
            split(wt, w, " ")
            us = n > 0 ? 1e6 / n : 0
            printf "%s %.0f %.3f %.3f %.2f %.2f %s %d %d %.1f %.1f %.1f %.1f\n",
                name, rps, p50, p99,
                (n > 0 ? c[1] / n : 0), (n > 0 ? c[2] / n : 0), mem, n, non2xx,
                h / tck * us, r / tck * us, (w[1] + w[2]) * us, idle / tck * us
        }' "$work/wrk.out"
}

# the baseline runs whatever BENCH_CASES selects: every ratio is to it
cases=("baseline none - one.lua")
add_case() { [[ $1 =~ $SELECT ]] && [ "$1" != baseline ] && cases+=("$*"); return 0; }
add_case loaded loaded - one.lua
for st in $STRATEGIES; do
    add_case "$st-1" "$st" 1000000000 one.lua
    add_case "$st-10k" "$st" 1000000000 many.lua
    add_case "$st-deny" "$st" 1 one.lua
    [ "$SLOW" = 1 ] && add_case "$st-slow" "$st" 1000000000 many.lua
done
add_case two-1 two 1000000000 one.lua
add_case two-10k two 1000000000 many.lua
add_case two-deny two 1 one.lua
[ "$SLOW" = 1 ] && add_case two-slow two 1000000000 many.lua
[ -n "$CLUSTER_PORTS" ] && add_case cluster-10k gcra 1000000000 many.lua
for st in $STRATEGIES; do
    add_case "local-$st-1" "$st" 1000000000 one.lua local
    add_case "local-$st-10k" "$st" 1000000000 many.lua local
    add_case "local-$st-deny" "$st" 1 one.lua local
done
# RLaaSLease on: one busy client (-1), many clients (-10k), refused (-deny)
for st in fixed gcra token; do
    add_case "lease-$st-1" "$st" 1000000000 one.lua lease
    add_case "lease-$st-10k" "$st" 1000000000 many.lua lease
    add_case "lease-$st-deny" "$st" 1 one.lua lease
done
add_case local-two-1 two 1000000000 one.lua local
add_case local-two-10k two 1000000000 many.lua local
# a concurrency limit beside gcra-1, gcra-10k and their local cases
add_case conc-1 conc 1000000000 one.lua
add_case conc-10k conc 1000000000 many.lua
add_case local-conc-1 conc 1000000000 one.lua local
add_case local-conc-10k conc 1000000000 many.lua local
[ -f "$MODDIR/mod_qos.so" ] && add_case mod_qos qos - one.lua
[ -f "$MODDIR/mod_evasive20.so" ] && add_case mod_evasive evasive - one.lua

# Redis memory per idle client, per strategy: clients that made one request
# under a limit of 5 per minute (so every key still lives), MEMORY USAGE of
# every key over the number of keys.
declare -A MEM
for st in $STRATEGIES; do
    [[ "$st-10k" =~ $SELECT ]] || continue
    write_conf "$st" 5
    rcli flushall >/dev/null
    start_httpd
    wrk -t1 -c8 -d1s -s "$work/many.lua" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >/dev/null 2>&1
    MEM[redis-$st]=$(memory_per_client "$(rcli dbsize)")
    stop_httpd
done
# The same for the local engine: the bytes of its table holding records
# (whole 64-byte chunks) over the identities held, and the hash buckets'
# share (4 bytes for every two chunks of the table).
for st in $STRATEGIES; do
    [[ "local-$st-10k" =~ $SELECT ]] || continue
    write_conf "$st" 5 "$REDIS_PORT" local
    start_httpd
    wrk -t1 -c8 -d1s -s "$work/many.lua" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >/dev/null 2>&1
    MEM[local-$st]=$(curl -s "http://127.0.0.1:$HTTP_PORT/rlaas-metrics" | awk '
        /^rlaas_local_bytes / { b = $2 } /^rlaas_local_identities / { n = $2 }
        END { if (n > 0) printf "%.0f", b * 33 / 32 / n; else print "-" }')
    stop_httpd
done

# What the machine charges for the two things every limited request does
# on top of serving itself: one round trip to Redis (one client, one PING
# at a time), and one wake-up of a sleeping thread (bench/wake.c).
RTT_US=$(redis-benchmark -p "$REDIS_PORT" -c 1 -n 20000 -q -t ping 2>/dev/null |
    tr '\r' '\n' | awk '/PING_MBULK:/ && / requests per second/ {
        for (i = 1; i <= NF; i++) if ($i == "requests") { printf "%.0f", 1e6 / $(i - 1); exit } }')
echo "== one Redis round trip here (redis-benchmark -c 1 PING): ${RTT_US:-?} us"
${CC:-cc} -O2 -pthread -o "$work/wake" bench/wake.c
"$work/wake" | sed 's/^/== /'

echo "== mod_rlaas benchmark: ${#cases[@]} cases x $ROUNDS rounds x ${SECONDS_PER_CASE}s," \
    "$CONNS keep-alive connections, event MPM, $(nproc) CPUs"
[ "$SLOW" = 1 ] &&
    echo "== -slow cases: Redis behind bench/delay-proxy.pl, ${DELAY_MS} ms each way"
raw="$OUT/raw.txt"
: >"$raw"
n=${#cases[@]}
for round in $(seq 1 "$ROUNDS"); do
    # each round starts one case further on, so that no case always runs
    # first, or always right after the same neighbour
    for k in $(seq 0 $((n - 1))); do
        c=${cases[$(((k + round - 1) % n))]}
        # shellcheck disable=SC2086
        line=$(run_case $c)
        echo "$round $line" | tee -a "$raw" | awk '{ printf "   round %s  %-24s %8s req/s\n", $1, $2, $3 }'
    done
done

# Per case, the median over rounds of each column; the ratio is the median
# over rounds of (case req/s / baseline req/s of the same round).
awk '
    function median(list,    a, k, i, j, t) {
        k = split(list, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
            if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    {
        r = $1; name = $2
        if (!(name in seen)) { seen[name] = 1; order[++n] = name }
        rps[name, r] = $3
        for (f = 3; f <= 14; f++) col[name, f] = col[name, f] " " $f
        rounds[r] = 1
    }
    END {
        for (i = 1; i <= n; i++) {
            name = order[i]; ratios = ""
            for (r in rounds)
                if (("baseline", r) in rps && (name, r) in rps && rps["baseline", r] > 0)
                    ratios = ratios " " rps[name, r] / rps["baseline", r]
            printf "%s %.0f %s %.3f %.3f %.2f %.2f %s %.0f %.0f %.0f %.0f %d\n", name,
                median(col[name, 3]), (ratios == "" ? "-" : sprintf("%.3f", median(ratios))),
                median(col[name, 4]), median(col[name, 5]),
                median(col[name, 6]), median(col[name, 7]),
                (col[name, 8] ~ /-/ ? "-" : median(col[name, 8])),
                median(col[name, 11]), median(col[name, 12]), median(col[name, 13]),
                median(col[name, 14]), median(col[name, 10])
        }
    }' "$raw" >"$OUT/results.txt"

{
    printf "| case | req/s | × baseline | p50 ms | p99 ms | Redis cmds/req | EVALSHA/req | bytes per idle client (Redis, or the local table) | CPU us/req: httpd | Redis | wrk | idle | non-2xx |\n"
    printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    awk '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
        $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }' "$OUT/results.txt"
} >"$OUT/results.md"
echo
cat "$OUT/results.md"
# the -deny cases answer every measured request with 429, the rest with 200
awk '($2 ~ /-deny$/ ? $10 != $9 : $10 > 0) {
        printf "!! round %s %s: %d of %d responses were not as expected\n", $1, $2,
            ($2 ~ /-deny$/ ? $9 - $10 : $10), $9 }' "$raw"

# Chart: throughput relative to the baseline, one bar per case.
awk '$3 ~ /^[0-9.]+$/ { print $1, $3 }' "$OUT/results.txt" >"$OUT/ratio.dat"
[ -s "$OUT/ratio.dat" ] && gnuplot <<PLOT
set terminal svg size 900,420 font "sans,11"
set output "$OUT/results.svg"
set title "mod_rlaas: requests per second relative to httpd without the module"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set yrange [0:1.15]
set ytics 0.1
set grid ytics
set xtics rotate by -45 scale 0 font ",9"
set key off
set arrow from graph 0, first 0.8 to graph 1, first 0.8 nohead dt 2 lc rgb "#aa0000"
plot "$OUT/ratio.dat" using 2:xtic(1) lc rgb "#3b6ea5"
PLOT
echo
echo "table: $OUT/results.md   chart: $OUT/results.svg   raw rounds: $raw"
