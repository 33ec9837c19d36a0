# fuzz/http/lib.sh - sourced (not run) by tools/sanitize.sh and
# tools/valgrind.sh: a private redis-server, a junk "Redis", the httpd
# configuration fuzz/http/httpd.conf with its files, the request mix of
# fuzz/http/drive.pl and the sequence of Redis faults. The caller starts and
# stops httpd itself (under ASan or valgrind) and calls ck_cleanup from its
# trap.
#
# Everything lives in one temporary directory ($CK_DIR) and listens on
# 127.0.0.1 only; nothing reaches the network.

: "${CK_TOP:?set CK_TOP to the source tree before sourcing lib.sh}"
CK_HTTP="$CK_TOP/fuzz/http"
CK_REDIS_PID=""
CK_JUNK_PID=""
CK_USED_PORTS=""
CK_STATS=""

ck_log() { echo "== $(date +%H:%M:%S) $*"; }

# A free TCP port on 127.0.0.1 at or above $1 not handed out before: one
# that can be bound now, as httpd and redis-server will bind it (with
# SO_REUSEADDR). Perl, not /dev/tcp, which dash (Debian's sh) lacks.
ck_free_port() {
    _ck_p=$1
    while :; do
        case " $CK_USED_PORTS " in
        *" $_ck_p "*) ;;
        *) perl -MIO::Socket::INET -e 'exit(IO::Socket::INET->new(
               LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 1,
               ReuseAddr => 1) ? 0 : 1)' "$_ck_p" && break ;;
        esac
        _ck_p=$((_ck_p + 1))
    done
    CK_USED_PORTS="$CK_USED_PORTS $_ck_p"
    echo "$_ck_p"
}

# ck_setup DIR: the directory, ports and environment for one run.
ck_setup() {
    CK_DIR=$1
    mkdir -p "$CK_DIR/htdocs/errdoc" "$CK_DIR/cores" "$CK_DIR/redis"
    echo ok >"$CK_DIR/htdocs/ok.txt"
    echo "<html><body>429 page</body></html>" >"$CK_DIR/htdocs/errdoc/429.html"
    htpasswd -cbm "$CK_DIR/htpasswd" alice secret 2>/dev/null ||
        { echo "htpasswd failed" >&2; return 1; }
    CK_STATS=$CK_DIR/requests.txt
    : >"$CK_STATS"

    # a base that differs between runs, so that two checks started at once
    # rarely race for the same ports
    _ck_base=$((20000 + ($$ % 2000) * 10))
    for _ck_v in PORT PORT_BIGKEY PORT_BADPASS PORT_ACL PORT_DB99 PORT_REFUSED \
        PORT_UNIX PORT_JUNK REDIS_PORT JUNK_REDIS_PORT DEAD_PORT; do
        # not p=$(ck_free_port): the subshell would forget the port
        ck_free_port "$_ck_base" >"$CK_DIR/.port"
        _ck_p=$(cat "$CK_DIR/.port")
        eval "RLAAS_CK_$_ck_v=$_ck_p"
        export "RLAAS_CK_$_ck_v"
    done
    rm -f "$CK_DIR/.port"
    RLAAS_CK_DIR=$CK_DIR
    RLAAS_CK_MODDIR=$(apxs -q LIBEXECDIR 2>/dev/null || echo /usr/lib/apache2/modules)
    RLAAS_CK_REDIS_SOCK=$CK_DIR/redis/redis.sock
    RLAAS_CK_REDIS_PASSWORD=ck-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
    : "${RLAAS_CK_MPM:=event}"
    : "${RLAAS_CK_TIMEOUT:=100ms}"
    : "${RLAAS_CK_MAXCONN:=300}"
    : "${RLAAS_CK_LOGLEVEL:=info}"
    : "${RLAAS_CK_MAXMEMFREE:=2048}"
    export RLAAS_CK_DIR RLAAS_CK_MODDIR RLAAS_CK_REDIS_SOCK \
        RLAAS_CK_REDIS_PASSWORD RLAAS_CK_MPM RLAAS_CK_TIMEOUT \
        RLAAS_CK_MAXCONN RLAAS_CK_LOGLEVEL RLAAS_CK_MAXMEMFREE
    # httpd's children may run as www-data: they read htdocs and write
    # sanitizer logs and cores here.
    chmod 755 "$CK_DIR" "$CK_DIR/redis"
    chmod -R a+rX "$CK_DIR/htdocs" "$CK_DIR/htpasswd"
    chmod 1777 "$CK_DIR/cores"
}

ck_redis_start() {
    cat >"$CK_DIR/redis/redis.conf" <<EOF
port $RLAAS_CK_REDIS_PORT
bind 127.0.0.1
save ""
appendonly no
dir $CK_DIR/redis
daemonize yes
pidfile $CK_DIR/redis/redis.pid
logfile $CK_DIR/redis/redis.log
enable-debug-command local
user default on nopass ~* &* +@all
user rlaas on >$RLAAS_CK_REDIS_PASSWORD ~* &* +@all
unixsocket $RLAAS_CK_REDIS_SOCK
unixsocketperm 777
EOF
    redis-server "$CK_DIR/redis/redis.conf" >/dev/null || return 1
    _ck_i=0
    until redis-cli -p "$RLAAS_CK_REDIS_PORT" ping >/dev/null 2>&1; do
        _ck_i=$((_ck_i + 1))
        [ $_ck_i -gt 100 ] && { echo "redis-server did not start" >&2; return 1; }
        sleep 0.05
    done
    CK_REDIS_PID=$(cat "$CK_DIR/redis/redis.pid")
    # Every command the module sends, for ck_check_keys: keys are checked
    # as they were written, not just those still alive at the end.
    CK_MONITOR_N=$((${CK_MONITOR_N:-0} + 1))
    redis-cli -p "$RLAAS_CK_REDIS_PORT" monitor \
        >"$CK_DIR/redis/monitor.$CK_MONITOR_N.log" 2>/dev/null &
    CK_MONITOR_PID=$!
}

ck_redis_stop() {
    [ -n "${CK_MONITOR_PID:-}" ] && kill "$CK_MONITOR_PID" 2>/dev/null
    CK_MONITOR_PID=""
    redis-cli -p "$RLAAS_CK_REDIS_PORT" shutdown nosave >/dev/null 2>&1
    _ck_i=0
    while [ -n "$CK_REDIS_PID" ] && kill -0 "$CK_REDIS_PID" 2>/dev/null; do
        _ck_i=$((_ck_i + 1))
        [ $_ck_i -gt 100 ] && kill -9 "$CK_REDIS_PID" 2>/dev/null
        sleep 0.05
    done
    CK_REDIS_PID=""
}

ck_redis() { redis-cli -p "$RLAAS_CK_REDIS_PORT" "$@"; }

ck_junk_start() {
    perl "$CK_HTTP/junk-redis.pl" "$RLAAS_CK_JUNK_REDIS_PORT" "${CK_SEED:-1}" \
        >"$CK_DIR/junk-redis.log" 2>&1 &
    CK_JUNK_PID=$!
}

# Waits until httpd answers on its main port ($1: tries of 0.1 s).
ck_wait_http() {
    _ck_i=0
    until curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$RLAAS_CK_PORT/rl/free"; do
        _ck_i=$((_ck_i + 1))
        if [ "$_ck_i" -gt "${1:-100}" ]; then
            echo "httpd did not answer; its error_log:" >&2
            tail -n 40 "$CK_DIR/error_log" >&2
            return 1
        fi
        sleep 0.1
    done
}

# ck_drive PHASE REQUESTS [MIX [PROCS]]: the mix of drive.pl; counts go to
# $CK_STATS.
ck_drive() {
    perl "$CK_HTTP/drive.pl" --phase "$1" --requests "$2" --mix "${3:-all}" \
        --procs "${4:-${CK_PROCS:-4}}" --seed "${CK_SEED:-1}" \
        --stats "$CK_STATS" || return 1
}

# ck_bulk PHASE REQUESTS: ab keep-alive load on every strategy, with a
# handful of identities so each one crosses its limit.
ck_bulk() {
    for _ck_s in fixed sliding-window-algo sliding token leaky gcra; do
        ab -q -k -n "$2" -c "${CK_PROCS:-4}" -H "X-User: bulk-$_ck_s" \
            "http://127.0.0.1:$RLAAS_CK_PORT/rl/s/$_ck_s" >"$CK_DIR/ab.out" 2>&1
        _ck_done_n=$(sed -n 's/^Complete requests: *//p' "$CK_DIR/ab.out")
        _ck_non2xx=$(sed -n 's/^Non-2xx responses: *//p' "$CK_DIR/ab.out")
        # ab counts a 429's shorter body as a "Length" failure: only
        # connect, receive and exception failures are real ones
        _ck_broken=$(sed -n 's/.*(Connect: \([0-9]*\), Receive: \([0-9]*\), Length: [0-9]*, Exceptions: \([0-9]*\)).*/\1 \2 \3/p' \
            "$CK_DIR/ab.out" | awk '{ print $1 + $2 + $3 }')
        echo "phase=$1-$_ck_s requests=${_ck_done_n:-0} non2xx=${_ck_non2xx:-0} noresp=${_ck_broken:-0}" |
            tee -a "$CK_STATS"
    done
}

# The Redis faults, each followed by the request mix. $1 scales the
# number of requests per phase. The callers' timeouts (RLAAS_CK_TIMEOUT)
# and CK_PAUSE_MS / CK_SLEEP_S (longer than that timeout) are theirs.
ck_fault_phases() {
    _ck_n=$1
    ck_log "fault: redis-server stopped"
    ck_redis_stop
    ck_drive redis-down "$_ck_n" all || return 1
    ck_log "fault: redis-server started again (empty script cache)"
    ck_redis_start || return 1
    sleep 0.3 # the circuit breaker's cool-down
    ck_drive redis-back "$_ck_n" all || return 1

    ck_log "fault: SCRIPT FLUSH (NOSCRIPT, then SCRIPT LOAD)"
    ck_redis script flush >/dev/null
    ck_drive script-flush "$_ck_n" main || return 1

    ck_log "fault: CLIENT PAUSE ${CK_PAUSE_MS}ms (longer than RLaaSRedisTimeout $RLAAS_CK_TIMEOUT)"
    ck_redis client pause "$CK_PAUSE_MS" all >/dev/null
    ck_drive client-pause "$((_ck_n / 4))" main || return 1
    ck_redis client unpause >/dev/null 2>&1

    ck_log "fault: DEBUG SLEEP ${CK_SLEEP_S}s"
    ck_redis debug sleep "$CK_SLEEP_S" >/dev/null &
    _ck_bg=$!
    sleep 0.05
    ck_drive debug-sleep "$((_ck_n / 4))" main || return 1
    wait "$_ck_bg"

    ck_log "fault: redis-server restarted under load"
    ck_drive redis-restart "$_ck_n" all &
    _ck_bg=$!
    sleep 0.3
    ck_redis_stop
    ck_redis_start || return 1
    wait "$_ck_bg" || return 1
    sleep 0.3
}

# Every key the module sent to Redis (EVALSHA's key argument, as MONITOR
# saw it) must be key text the key builder makes (src/core/rlaas_keybuild.h):
# only [A-Za-z0-9.-_@~:={}] (sources tagged "h.name=", a cluster's hash tag
# in braces), and at most RLAAS_KEY_MAX = 1299 bytes (prefix 128, zone 64
# and ':', eight tagged segments of at most 134 bytes joined by ':', the
# strategy's suffix, a cluster's braces and window number). redis-cli shows
# other bytes as \xNN escapes and quotes as \", which the pattern refuses.
ck_check_keys() {
    cat "$CK_DIR"/redis/monitor.*.log 2>/dev/null |
        sed -n 's/.*"EVALSHA" "[0-9a-f]*" "1" "\([^"]*\)".*/\1/p' |
        LC_ALL=C sort -u >"$CK_DIR/keys.txt"
    _ck_nkeys=$(wc -l <"$CK_DIR/keys.txt")
    _ck_evals=$(cat "$CK_DIR"/redis/monitor.*.log 2>/dev/null | grep -c '"EVALSHA"')
    _ck_bad=$(LC_ALL=C awk 'length($0) > 1299 || $0 !~ /^[A-Za-z0-9.@_~:={}-]+$/' \
        "$CK_DIR/keys.txt" | head -5)
    _ck_longest=$(LC_ALL=C awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' \
        "$CK_DIR/keys.txt")
    echo "keys: $_ck_evals EVALSHA calls seen by MONITOR, $_ck_nkeys distinct keys, longest $_ck_longest bytes"
    if [ "$_ck_nkeys" = 0 ]; then
        echo "no EVALSHA seen: the key check checked nothing" >&2
        return 1
    fi
    if [ -n "$_ck_bad" ]; then
        echo "UNSAFE KEYS:" >&2
        printf '%s\n' "$_ck_bad" | head -c 2000 >&2
        return 1
    fi
}

# ck_stuck_stacks PID...: after a request went unanswered, the stacks of
# the threads of these httpd processes that are inside mod_rlaas (gdb, if
# installed), into $CK_DIR/stuck-stacks.txt; shows the first of them.
ck_stuck_stacks() {
    command -v gdb >/dev/null || return 0
    : >"$CK_DIR/stuck-stacks.txt"
    for _ck_p in "$@"; do
        timeout 60 gdb -p "$_ck_p" -batch -ex "thread apply all bt 20" \
            2>/dev/null | awk -v pid="$_ck_p" '
                /^Thread / { if (keep) printf "%s", t; t = "pid " pid " " $0 "\n"; keep = 0; next }
                /^#/ { t = t $0 "\n"; if (/rlaas_/) keep = 1 }
                END { if (keep) printf "%s", t }' >>"$CK_DIR/stuck-stacks.txt"
    done
    if [ -s "$CK_DIR/stuck-stacks.txt" ]; then
        echo "threads inside mod_rlaas (all in $CK_DIR/stuck-stacks.txt):"
        grep -E '^pid|^#[0-9] |^#1[0-2] ' "$CK_DIR/stuck-stacks.txt" | head -30
    fi
}

# Sum of requests in $CK_STATS, and of responses that never came.
ck_totals() {
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "=");
             if (kv[1] == "requests") r += kv[2];
             if (kv[1] == "noresp") n += kv[2];
             if (kv[1] == "connect_failed") c += kv[2] } }
         END { printf "requests=%d noresp=%d connect_failed=%d\n", r, n, c }' \
        "$CK_STATS"
}

ck_cleanup() {
    [ -n "$CK_JUNK_PID" ] && kill "$CK_JUNK_PID" 2>/dev/null
    CK_JUNK_PID=""
    [ -n "${RLAAS_CK_REDIS_PORT:-}" ] && ck_redis_stop
}

# ck_stop_pid PID TENTHS: SIGTERM to PID, then waits for it at most TENTHS
# tenths of a second before SIGKILL to it and to its children (only ours,
# by their parent's id).
ck_stop_pid() {
    [ -n "$1" ] || return 0
    kill -TERM "$1" 2>/dev/null
    ck_i=0
    while kill -0 "$1" 2>/dev/null; do
        ck_i=$((ck_i + 1))
        if [ $ck_i -gt "$2" ]; then
            echo "httpd ($1) did not stop: killing it" >&2
            kill -KILL "$1" 2>/dev/null
            pkill -KILL -P "$1" 2>/dev/null
        fi
        sleep 0.1
    done
}

# ck_finish NAME KEEP RUN_ROOT: after ck_cleanup, removes RUN_ROOT when the
# check passed ($rc 0) and KEEP is empty, else says where it is.
ck_finish() {
    if [ "${rc:-1}" = 0 ] && [ -z "$2" ]; then
        rm -rf "$3"
    else
        echo "$1: run directories kept in $3"
    fi
}
