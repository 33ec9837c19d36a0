#!/bin/sh
# tools/valgrind.sh - `make valgrind`: the normal module (.libs/mod_rlaas.so)
# in a single-process httpd (apache2 -X) under valgrind's memcheck,
# driven with the request mix and Redis faults of fuzz/http/ (thousands of
# requests: every strategy, identity source, denial, header mode, dry run,
# metrics, junk replies, Redis stopped/restarted/flushed/paused/sleeping,
# wrong password, database 99, connection refused).
#
# Fails when memcheck reports
#   - any memory error (invalid read/write/free, use of uninitialised
#     values, overlapping copies) in the process, or
#   - a "definitely lost" block allocated through mod_rlaas or hiredis,
#   - or heap growth per request (below).
# fuzz/http/valgrind.supp holds suppressions for httpd/APR/libc start-up
# noise only; it never names a mod_rlaas frame.
#
# "No growth per request" is measured in two ways, because httpd keeps its
# memory in two places: APR pools take their memory from mmap (Debian's
# APR), everything else (hiredis contexts, replies and buffers, the pool
# slots) from malloc.
#   1. malloc heap, exactly: memcheck's gdbserver is asked (vgdb
#      "leak_check summary") for the bytes and blocks still allocated -
#      reachable or not - after a warm-up of the whole mix (which creates
#      every pool, connection and cached script) and after each of two
#      further rounds of the same mix;
#   2. everything, pools included: the same warm-up and rounds in a second
#      httpd -X without valgrind, reading its VmData (all private writable
#      memory: heap, arenas and mmap) from /proc after each round. Both
#      allocators are told to give freed memory back rather than cache it
#      (APR: MaxMemFree 64; glibc: a fixed 64 kB mmap threshold and a
#      128 kB trim threshold), so that VmData counts memory still held.
#      With their defaults it drifts up by some 5 MB over 60,000 requests
#      (glibc's per-thread arenas fragment after the 100 kB junk replies),
#      then stays flat within 12 kB with these settings, as it does with
#      "RLaaSEngine off" either way.
# Anything kept per request shows as growth proportional to the requests
# in between. The check fails when the last round grew the malloc heap by
# more than VG_MAX_GROWTH bytes or VG_MAX_BLOCKS blocks, or VmData by more
# than VG_MAX_VMDATA kB.
#
# Environment:
#   VG_MPM           event (default: its threads share Redis calls through
#                    the group commit of rlaas_pipeline.c) or prefork
#   VG_REQUESTS      requests per round under memcheck (default 2000)
#   VG_RSS_REQUESTS  requests per round without valgrind (default 10000)
#   VG_MAX_GROWTH    allowed malloc heap growth in the last round (32768 B)
#   VG_MAX_BLOCKS    allowed growth in the last round, blocks (20)
#   VG_MAX_VMDATA    allowed VmData growth in the last plain round (64 kB)
#   VG_KEEP=1        keep the run directory even when the check passed
#   CK_SEED          seed of the request mix (default 1)
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
CK_TOP=$top
. "$top/fuzz/http/lib.sh"

module=$top/.libs/mod_rlaas.so
[ -f "$module" ] || { echo "valgrind: build the module first (make)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind: not installed" >&2; exit 1; }

n=${VG_REQUESTS:-2000}
n_rss=${VG_RSS_REQUESTS:-10000}
max_growth=${VG_MAX_GROWTH:-32768}
max_blocks=${VG_MAX_BLOCKS:-20}
max_vmdata=${VG_MAX_VMDATA:-64}

# httpd runs as an ordinary user from the start (no "User" switch): vgdb
# must talk to valgrind's gdbserver as the user the process runs as, and a
# process that changed user after valgrind made its FIFOs can't open them.
as_user=""
if [ "$(id -u)" = 0 ]; then
    run_user=${VG_USER:-www-data}
    as_user="setpriv --reuid=$run_user --regid=$run_user --clear-groups"
fi
run_root=$(mktemp -d /tmp/rlaas-valgrind.XXXXXX) || exit 1
chmod 755 "$run_root"
dir=$run_root
vg_pid=""

stop_httpd() {
    # memcheck's leak search at exit takes a while
    ck_stop_pid "$vg_pid" 1200
    vg_pid=""
}

cleanup() {
    trap - INT TERM EXIT
    stop_httpd
    ck_cleanup
    ck_finish valgrind "${VG_KEEP:-}" "$run_root"
}
trap 'rc=1; cleanup; exit 1' INT TERM
trap cleanup EXIT

ck_setup "$dir" || exit 1
RLAAS_CK_MPM=${VG_MPM:-event}
RLAAS_CK_MODULE=$module
# valgrind slows httpd down some 20-50 times: a longer Redis timeout keeps
# the ordinary requests from timing out, and the faults longer still.
RLAAS_CK_TIMEOUT=500ms
RLAAS_CK_MAXCONN=0 # one process that must live through the whole run
RLAAS_CK_LOGLEVEL=warn
export RLAAS_CK_MPM RLAAS_CK_MODULE RLAAS_CK_TIMEOUT RLAAS_CK_MAXCONN \
    RLAAS_CK_LOGLEVEL
CK_PAUSE_MS=1500
CK_SLEEP_S=1.5
# concurrent clients: with the event MPM, calls meet in the group commit
CK_PROCS=4
[ -n "$as_user" ] && chown -R "$run_user:" "$dir"

ck_redis_start || exit 1
ck_junk_start

ck_log "httpd -X under valgrind memcheck with $module (run dir $dir)"
# --keep-debuginfo: names for frames of code unloaded before the report;
# --errors-for-leak-kinds=definite: only definite leaks count as errors.
# shellcheck disable=SC2086
# (setsid: a session of its own, so no signal httpd sends to its process
# group reaches this script)
setsid $as_user valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite --track-origins=yes --keep-debuginfo=yes \
    --num-callers=40 --suppressions="$top/fuzz/http/valgrind.supp" \
    --gen-suppressions=all --log-file="$dir/memcheck.log" \
    --vgdb=yes --vgdb-prefix="$dir/vgdb" \
    apache2 -X -f "$top/fuzz/http/httpd.conf" &
vg_pid=$! # setsid, setpriv and valgrind exec: the same process as httpd
ck_wait_http 1200 || exit 1

# heap_now LABEL: live malloc heap (bytes and blocks, reachable or not)
# from memcheck's gdbserver, without its "(+delta)" notes and thousands
# separators.
heap_now() {
    # shellcheck disable=SC2086
    $as_user vgdb --vgdb-prefix="$dir/vgdb" --pid="$vg_pid" leak_check summary \
        >"$dir/leak_check.$1.txt" 2>&1
    sed 's/ ([+-][0-9,]*)//g; s/,//g' "$dir/leak_check.$1.txt" | awk '
        /definitely lost:|indirectly lost:|possibly lost:|still reachable:/ {
            for (i = 2; i <= NF; i++) {
                if ($i == "bytes") b += $(i - 1)
                if ($i == "blocks" || $i == "blocks.") k += $(i - 1)
            }
            seen = 1 }
        END { if (seen) printf "%d %d\n", b, k; else print "-1 -1" }'
}
status_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }

# warm_up: the whole mix once, so that every pool, connection, cached
# script and code path exists before anything is measured.
warm_up() {
    ck_drive "$1-warmup" "$2" all || return 1
    ck_bulk "$1-bulk" "$(($2 / 10))"
    ck_drive "$1-junk" "$(($2 / 20))" junk || return 1
    ck_fault_phases "$(($2 / 4))" || return 1
    sleep 1
}

start=$(date +%s)
ck_log "memcheck, warm-up: the whole mix, bulk load, junk replies, every Redis fault"
warm_up memcheck "$n" || exit 1
set -- $(heap_now 1)
h1=$1 b1=$2 r1=$(status_kb "$vg_pid" VmRSS)
ck_log "after warm-up: live malloc heap $h1 bytes in $b1 blocks"
ck_log "memcheck, round 2: $n requests"
ck_drive memcheck-round2 "$n" all || exit 1
set -- $(heap_now 2)
h2=$1 b2=$2
ck_log "after round 2: live malloc heap $h2 bytes in $b2 blocks"
ck_log "memcheck, round 3: $n requests"
ck_drive memcheck-round3 "$n" all || exit 1
set -- $(heap_now 3)
h3=$1 b3=$2 r3=$(status_kb "$vg_pid" VmRSS)
ck_log "after round 3: live malloc heap $h3 bytes in $b3 blocks"

curl -s "http://127.0.0.1:$RLAAS_CK_PORT/metrics" >"$dir/metrics.txt"
ck_check_keys || keys_failed=1
ck_log "stopping httpd (memcheck's leak search follows)"
stop_httpd
memcheck_s=$(($(date +%s) - start))
memcheck_totals=$(ck_totals)

# ---- the same without valgrind: VmData and VmRSS per round
start=$(date +%s)
: >"$CK_STATS"
ck_log "plain httpd -X (no valgrind): VmData and VmRSS per round of $n_rss requests"
RLAAS_CK_MAXMEMFREE=64
export RLAAS_CK_MAXMEMFREE
# shellcheck disable=SC2086
setsid $as_user env \
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536:glibc.malloc.trim_threshold=131072 \
    apache2 -X -f "$top/fuzz/http/httpd.conf" &
vg_pid=$!
ck_wait_http 300 || exit 1
warm_up plain "$n_rss" || exit 1
d1=$(status_kb "$vg_pid" VmData) p1=$(status_kb "$vg_pid" VmRSS)
ck_log "after warm-up: VmData $d1 kB, VmRSS $p1 kB"
ck_drive plain-round2 "$n_rss" all || exit 1
d2=$(status_kb "$vg_pid" VmData) p2=$(status_kb "$vg_pid" VmRSS)
ck_log "after round 2: VmData $d2 kB, VmRSS $p2 kB"
ck_drive plain-round3 "$n_rss" all || exit 1
d3=$(status_kb "$vg_pid" VmData) p3=$(status_kb "$vg_pid" VmRSS)
ck_log "after round 3: VmData $d3 kB, VmRSS $p3 kB"
stop_httpd
ck_cleanup
plain_s=$(($(date +%s) - start))
plain_totals=$(ck_totals)

# ---- verdict
log=$dir/memcheck.log
failed=""
for t in "$memcheck_totals" "$plain_totals"; do
    case $t in
    *" noresp=0 "*) ;;
    *) failed="$failed noresp" ;;
    esac
done
[ -n "${keys_failed:-}" ] && failed="$failed keys"

# memcheck's records: the lines between blank "==pid== " lines
awk '/^==[0-9]+== $/ { if (rec != "") print rec "\n\036"; rec = ""; next }
     { sub(/^==[0-9]+== /, ""); rec = rec $0 "\n" }
     END { if (rec != "") print rec "\n\036" }' "$log" >"$dir/records.txt"
err_re='Invalid (read|write|free)|uninitialised|Mismatched free|overlap|Jump to the invalid|Syscall param'
ours_re='mod_rlaas|rlaas_|hiredis|redis[A-Z]'
errors=$(awk -v re="$err_re" 'BEGIN { RS = "\036" } $0 ~ re { n++ } END { print n + 0 }' \
    "$dir/records.txt")
ours_lost=$(awk -v re="$ours_re" 'BEGIN { RS = "\036" }
    /definitely lost in loss record/ && $0 ~ re { n++ } END { print n + 0 }' \
    "$dir/records.txt")
other_lost=$(awk -v re="$ours_re" 'BEGIN { RS = "\036" }
    /definitely lost in loss record/ && $0 !~ re { n++ } END { print n + 0 }' \
    "$dir/records.txt")
definite=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1 bytes in \2 blocks/p' "$log" | tail -1)
summary=$(sed -n 's/.*ERROR SUMMARY: //p' "$log" | tail -1)

# the first few offending records, without their generated suppressions
show() {
    awk -v re="$1" -v lost="$2" 'BEGIN { RS = "\036" }
        $0 ~ re && (lost == "" || /definitely lost in loss record/) {
            print; if (++n == 3) exit }' "$dir/records.txt" |
        awk '/^\{$/ { skip = 1 } !skip { print } /^\}$/ { skip = 0 }' | head -100
}
if [ "$errors" != 0 ]; then
    failed="$failed memory-errors($errors)"
    show "$err_re" ""
fi
if [ "$ours_lost" != 0 ]; then
    failed="$failed definitely-lost($ours_lost)"
    show "$ours_re" lost
fi
if [ "$h1" -lt 0 ] || [ "$h3" -lt 0 ]; then
    failed="$failed no-heap-measure"
fi
growth=$((h3 - h2))
bgrowth=$((b3 - b2))
vgrowth=$((d3 - d2))
[ "$growth" -gt "$max_growth" ] && failed="$failed heap-growth"
[ "$bgrowth" -gt "$max_blocks" ] && failed="$failed block-growth"
[ "$vgrowth" -gt "$max_vmdata" ] && failed="$failed vmdata-growth"

per() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo
echo "valgrind: memcheck run: $memcheck_totals in ${memcheck_s}s (httpd -X, $RLAAS_CK_MPM MPM)"
echo "valgrind: plain run:    $plain_totals in ${plain_s}s"
echo "valgrind: memcheck: ERROR SUMMARY: ${summary:-?}"
echo "valgrind: memcheck: memory errors: $errors; definitely lost at exit: ${definite:-0 bytes in 0 blocks} ($ours_lost records through mod_rlaas/hiredis, $other_lost elsewhere)"
echo "valgrind: malloc heap (memcheck): after warm-up $h1 B in $b1 blocks; +$n requests: $h2 B in $b2 blocks; +$n more: $h3 B in $b3 blocks"
echo "valgrind:   last round: $growth B ($(per "$growth" "$n") B/request), $bgrowth blocks (limits $max_growth B, $max_blocks blocks)"
echo "valgrind: VmData/VmRSS (no valgrind): after warm-up $d1/$p1 kB; +$n_rss requests: $d2/$p2 kB; +$n_rss more: $d3/$p3 kB"
echo "valgrind:   last round: VmData $vgrowth kB ($(per "$((vgrowth * 1024))" "$n_rss") B/request), VmRSS $((p3 - p2)) kB (limit $max_vmdata kB VmData)"
if [ -n "$failed" ]; then
    echo "valgrind: FAILED:$failed (log: $log)"
    rc=1
    exit 1
fi
echo "valgrind: ok"
rc=0
exit 0
