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
#   <st>-slow     strategy <st>, 10,000 clients, Redis in a network namespace
#                 of its own behind a veth link with BENCH_DELAY (1ms) of
#                 netem delay each way (run as root where the kernel has
#                 sch_netem; skipped, and said so, elsewhere)
# Every case runs BENCH_ROUNDS times, the cases alternating, and the median
# round is reported: requests per second and its ratio to the baseline's
# median in the same run, p50/p99 latency, Redis commands per request (INFO
# commandstats), and Redis memory per client (MEMORY USAGE of every key).
#
# Environment: BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_CONNS (32),
# BENCH_CASES (a regex selecting case names), BENCH_OUT (build/bench),
# BENCH_DELAY (1ms: the added latency of the -slow cases, each way).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

SECONDS_PER_CASE=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNS:-32}
SELECT=${BENCH_CASES:-.}
OUT=${BENCH_OUT:-$top/build/bench}
DELAY=${BENCH_DELAY:-1ms}
STRATEGIES="fixed sliding-window-algo sliding token leaky gcra"

need() {
    local missing=""
    for p in apache2 apache2-dev libhiredis-dev redis-server wrk gnuplot-nox; do
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

free_port() {
    local p=$1
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
    echo "$p"
}
HTTP_PORT=$(free_port 18080)
REDIS_PORT=$(free_port 16379)
# The Redis of the case being run: the local one, or the one behind the
# delayed link for the -slow cases (R_HOST, R_PORT are set per case).
R_HOST=127.0.0.1
R_PORT=$REDIS_PORT
rcli() { redis-cli -h "$R_HOST" -p "$R_PORT" "$@"; }
SLOW_NS=rlaas-bench-$$
SLOW_IF=rlb$$ # the veth pair: ${SLOW_IF}a here, ${SLOW_IF}b in the namespace
SLOW_HOST=""

# Undoes slow_setup, however far it got: the namespace lives on while a
# process is in it, so its Redis goes first; deleting the namespace takes
# the veth end inside it, and with it the pair; a pair that never got that
# far is deleted by its name here.
slow_teardown() {
    [ -f "$work/redis-slow.pid" ] && kill "$(cat "$work/redis-slow.pid")" 2>/dev/null || true
    ip netns del "$SLOW_NS" 2>/dev/null || true
    ip link del "${SLOW_IF}a" 2>/dev/null || true
}

cleanup() {
    [ -f "$work/httpd.pid" ] && kill "$(cat "$work/httpd.pid")" 2>/dev/null || true
    redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    slow_teardown
    sleep 0.5
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" --daemonize yes --logfile "$work/redis.log" >/dev/null
until rcli ping >/dev/null 2>&1; do sleep 0.1; done

# wrk scripts: one client, or one of 10,000 per request.
cat >"$work/one.lua" <<'EOF'
wrk.headers["X-Client"] = "client-1"
EOF
cat >"$work/many.lua" <<'EOF'
local i = 0
request = function()
    i = (i * 7921 + 1) % 10000  -- full period: visits all 10,000
    return wrk.format("GET", "/index.html", { ["X-Client"] = "client-" .. i })
end
EOF

# httpd.conf for one case: $1 = none | loaded | <strategy>, $2 = limit
write_conf() {
    local mode=$1 limit=${2:--}
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
StartServers 2
ServerLimit 2
ThreadsPerChild 32
MaxRequestWorkers 64
MaxKeepAliveRequests 0
KeepAliveTimeout 30
EOF
        [ "$(id -u)" -eq 0 ] && printf 'User www-data\nGroup www-data\n'
        if [ "$mode" != none ]; then
            cat <<EOF
LoadModule rlaas_module $work/mod_rlaas.so
RLaaSRedis $R_HOST:$R_PORT
EOF
        fi
        if [ "$limit" != - ]; then
            cat <<EOF
<Location "/">
    RLaaSLimit $limit
    RLaaSWindow 60s
    RLaaSStrategy $mode
    RLaaSKeyBy header:X-Client
</Location>
EOF
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
# calls included), and EVALSHA calls alone.
redis_calls() {
    rcli info commandstats | tr -d '\r' | awk -F'[:=,]' '
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

# The -slow cases' Redis: in a network namespace of this run, reached over
# a veth pair (10.77.0.1 here, 10.77.0.2 there) whose both ends delay every
# packet by $DELAY with netem. Needs root, iproute2 and the kernel's
# sch_netem; without them the cases are skipped.
slow_setup() {
    local a=${SLOW_IF}a b=${SLOW_IF}b
    [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && command -v tc >/dev/null ||
        return 1
    ip netns add "$SLOW_NS" 2>/dev/null || return 1
    ip link add "$a" type veth peer name "$b" 2>/dev/null || return 1
    ip link set "$b" netns "$SLOW_NS" &&
        ip addr add 10.77.0.1/30 dev "$a" && ip link set "$a" up &&
        ip netns exec "$SLOW_NS" ip addr add 10.77.0.2/30 dev "$b" &&
        ip netns exec "$SLOW_NS" ip link set "$b" up &&
        ip netns exec "$SLOW_NS" ip link set lo up || return 1
    tc qdisc add dev "$a" root netem delay "$DELAY" 2>/dev/null &&
        ip netns exec "$SLOW_NS" tc qdisc add dev "$b" root netem delay "$DELAY" \
            2>/dev/null || return 1
    # protected mode would refuse the peer: the namespace is this run's own
    ip netns exec "$SLOW_NS" redis-server --port 6379 --bind 10.77.0.2 \
        --protected-mode no --save '' --appendonly no --dir "$work" --daemonize yes \
        --pidfile "$work/redis-slow.pid" --logfile "$work/redis-slow.log" \
        >/dev/null || return 1
    SLOW_HOST=10.77.0.2
    local i=0
    until [ "$(redis-cli -h "$SLOW_HOST" -p 6379 ping 2>/dev/null)" = PONG ]; do
        i=$((i + 1))
        [ $i -gt 50 ] && return 1
        sleep 0.1
    done
}
SLOW=0
for st in $STRATEGIES; do
    [[ "$st-slow" =~ $SELECT ]] || continue
    if slow_setup; then
        SLOW=1
    else
        slow_teardown
        SLOW_HOST=""
    fi
    break
done

# One case, one round: prints "name rps p50_ms p99_ms cmds evalsha mem"
run_case() {
    local name=$1 mode=$2 limit=$3 script=$4
    R_HOST=127.0.0.1 R_PORT=$REDIS_PORT
    [[ $name == *-slow ]] && R_HOST=$SLOW_HOST R_PORT=6379
    write_conf "$mode" "$limit"
    rcli flushall >/dev/null
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
    wrk -t1 -c"$CONNS" -d"${SECONDS_PER_CASE}s" --latency -s "$work/$script" \
        "http://127.0.0.1:$HTTP_PORT/index.html" >"$work/wrk.out" 2>&1
    local calls
    calls=$(redis_calls)
    local mem="${MEM[$mode]:--}"
    stop_httpd
    awk -v name="$name" -v calls="$calls" -v mem="$mem" '
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
            printf "%s %.0f %.3f %.3f %.2f %.2f %s %d %d\n", name, rps, p50, p99,
                (n > 0 ? c[1] / n : 0), (n > 0 ? c[2] / n : 0), mem, n, non2xx
        }' "$work/wrk.out"
}

cases=()
add_case() { [[ $1 =~ $SELECT ]] && cases+=("$*"); return 0; }
add_case baseline none - one.lua
add_case loaded loaded - one.lua
for st in $STRATEGIES; do
    add_case "$st-1" "$st" 1000000000 one.lua
    add_case "$st-10k" "$st" 1000000000 many.lua
    add_case "$st-deny" "$st" 1 one.lua
    [ "$SLOW" = 1 ] && add_case "$st-slow" "$st" 1000000000 many.lua
done

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
    MEM[$st]=$(memory_per_client "$(rcli dbsize)")
    stop_httpd
done

# What one round trip to Redis costs on this machine: the floor under
# every limited request (one client, one PING at a time).
RTT_US=$(redis-benchmark -p "$REDIS_PORT" -c 1 -n 20000 -q -t ping 2>/dev/null |
    tr '\r' '\n' | awk '/PING_MBULK:/ && / requests per second/ {
        for (i = 1; i <= NF; i++) if ($i == "requests") { printf "%.0f", 1e6 / $(i - 1); exit } }')
echo "== one Redis round trip here (redis-benchmark -c 1 PING): ${RTT_US:-?} us"

echo "== mod_rlaas benchmark: ${#cases[@]} cases x $ROUNDS rounds x ${SECONDS_PER_CASE}s," \
    "$CONNS keep-alive connections, event MPM, $(nproc) CPUs"
if [ "$SLOW" = 1 ]; then
    echo "== -slow cases: Redis at $SLOW_HOST, $DELAY of netem delay each way"
else
    echo "== the added-latency (-slow) cases are skipped: they need root and tc netem (sch_netem), which this machine lacks"
fi
raw="$OUT/raw.txt"
: >"$raw"
for round in $(seq 1 "$ROUNDS"); do
    for c in "${cases[@]}"; do
        # shellcheck disable=SC2086
        line=$(run_case $c)
        echo "$round $line" | tee -a "$raw" | awk '{ printf "   round %s  %-24s %8s req/s\n", $1, $2, $3 }'
    done
done

# Median round per case (by req/s); the ratio is the case's median over the
# baseline's median, both from this run.
awk '
    { r = $1; name = $2; rps[name, r] = $3; line[name, r] = $0
      if (!(name in seen)) { seen[name] = 1; order[++n] = name }
      rounds = r > rounds ? r : rounds }
    function median_round(name,    k, a, b, t, v, rr) {
        k = 0
        for (r = 1; r <= rounds; r++) if ((name, r) in rps) {
            k++; v[k] = rps[name, r]; rr[k] = r
        }
        for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++)
            if (v[b] < v[a]) { t = v[a]; v[a] = v[b]; v[b] = t; t = rr[a]; rr[a] = rr[b]; rr[b] = t }
        return rr[int((k + 1) / 2)]
    }
    END {
        base = ("baseline" in seen) ? rps["baseline", median_round("baseline")] : 0
        for (i = 1; i <= n; i++) {
            name = order[i]; m = median_round(name)
            split(line[name, m], f, " ")
            printf "%s %s %s %s %s %s %s %s %s\n", name, f[3],
                (base > 0 ? sprintf("%.3f", f[3] / base) : "-"), f[4], f[5], f[6], f[7], f[8], f[10]
        }
    }' "$raw" >"$OUT/results.txt"

{
    printf "| case | req/s | × baseline | p50 ms | p99 ms | Redis cmds/req | EVALSHA/req | Redis bytes per idle client | non-2xx |\n"
    printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    awk '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$OUT/results.txt"
} >"$OUT/results.md"
echo
cat "$OUT/results.md"

# Chart: throughput relative to the baseline, one bar per case.
awk '{ print $1, $3 }' "$OUT/results.txt" >"$OUT/ratio.dat"
gnuplot <<EOF
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
EOF
echo
echo "table: $OUT/results.md   chart: $OUT/results.svg   raw rounds: $raw"
