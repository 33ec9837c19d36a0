#!/bin/sh
# tools/sanitize.sh - `make asan` and `make asan-check`.
#
#   tools/sanitize.sh build   build the module with AddressSanitizer and
#                             UndefinedBehaviorSanitizer into
#                             build/asan/mod_rlaas.so
#   tools/sanitize.sh check   build, then run httpd with it against a private
#                             redis-server and drive thousands of requests
#                             through every strategy, identity source and
#                             Redis fault (fuzz/http/), then a graceful
#                             restart and a stop. Exits non-zero if any
#                             sanitizer report appears.
#
# The sanitized build is made in a copy of the tree (build/asan/tree) with
# the Makefile's own EXTRA_CFLAGS/EXTRA_LDFLAGS, so the normal
# .libs/mod_rlaas.so is never touched and the flags, warnings and source
# list stay the Makefile's.
#
# httpd itself is not instrumented, so the ASan runtime is preloaded
# (LD_PRELOAD): it has to be the first library in the process for its
# interceptors to see every malloc and free.
#
# Environment:
#   ASAN_MPMS        MPMs to run under (default "event prefork")
#   ASAN_REQUESTS    requests per phase of the mix (default 2000)
#   ASAN_LEAKS=0     don't run LeakSanitizer in httpd (see below)
#   ASAN_KEEP=1      keep the run directory even when the check passed
#   CK_SEED          seed of the request mix (default 1)
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
mode=${1:-check}
out=$top/build/asan
CK_TOP=$top
. "$top/fuzz/http/lib.sh"

apxs_cc=$(apxs -q CC 2>/dev/null || echo gcc)
# -O1 and frame pointers for exact stacks; UB is fatal (no recovery), so a
# single report fails the run instead of scrolling past in a log.
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
san_cflags="$san -fno-omit-frame-pointer -g -O1 -U_FORTIFY_SOURCE"

build() {
    ck_log "building the sanitized module in $out/tree"
    rm -rf "$out/tree"
    mkdir -p "$out/tree"
    # the working tree as it is, without build products or other checks
    tar -C "$top" --exclude=./.git --exclude=./build --exclude=./.libs \
        --exclude='./src/*/.libs' --exclude='./t/logs*' --exclude=./mk \
        --exclude='*.lo' --exclude='*.slo' --exclude='*.la' --exclude='*.o' \
        --exclude=./src/redis/rlaas_scripts.c -cf - . | tar -C "$out/tree" -xf - ||
        return 1
    if ! ${MAKE:-make} -C "$out/tree" EXTRA_CFLAGS="$san_cflags" \
        EXTRA_LDFLAGS="$san" >"$out/build.log" 2>&1; then
        tail -n 40 "$out/build.log"
        echo "asan: build failed (log: $out/build.log)"
        return 1
    fi
    cp "$out/tree/.libs/mod_rlaas.so" "$out/mod_rlaas.so" || return 1
    # libtool has been known to drop -fsanitize from link lines: make sure
    # the runtimes really are linked in
    for rt in asan ubsan; do
        if ! readelf -d "$out/mod_rlaas.so" | grep -q "lib$rt"; then
            echo "asan: $out/mod_rlaas.so does not link lib$rt" >&2
            return 1
        fi
    done
    ck_log "built $out/mod_rlaas.so"
}

if [ "$mode" = build ]; then
    build
    exit $?
fi
if [ "$mode" != check ]; then
    echo "usage: $0 build|check" >&2
    exit 2
fi

build || exit 1
asan_rt=$(readlink -f "$($apxs_cc -print-file-name=libasan.so)")
[ -f "$asan_rt" ] || { echo "asan: no ASan runtime for $apxs_cc" >&2; exit 1; }

run_root=$(mktemp -d /tmp/rlaas-asan.XXXXXX) || exit 1
chmod 755 "$run_root"
httpd_pid=""

stop_httpd() {
    ck_stop_pid "$httpd_pid" 300
    httpd_pid=""
}

cleanup() {
    trap - INT TERM EXIT
    stop_httpd
    ck_cleanup
    ck_finish asan "${ASAN_KEEP:-}" "$run_root"
}
trap 'rc=1; cleanup; exit 1' INT TERM
trap cleanup EXIT

# Sanitizer settings for httpd (parent and children):
# - reports go to files, one per process, which decide pass or fail;
# - LeakSanitizer is on: httpd frees its pools at exit (children destroy
#   pchild, the parent pconf), so what is left is malloc'd memory nobody
#   owns. Modules are unloaded before the parent's check, which would
#   leave frames in them unnamed; fuzz/http/lsan.supp holds the few
#   known leaks of httpd/APR/libc start-up, never a mod_rlaas frame;
# - a UB report aborts the process, ASan's own default.
export ASAN_OPTIONS_BASE="detect_leaks=${ASAN_LEAKS:-1}:halt_on_error=1:\
abort_on_error=0:disable_coredump=1:detect_stack_use_after_return=1:\
strict_string_checks=1:check_initialization_order=1:print_suppressions=0:\
fast_unwind_on_malloc=0:malloc_context_size=40"

failed=""
total_requests=0

run_mpm() {
    mpm=$1
    dir=$run_root/$mpm
    mkdir -p "$dir"
    ck_setup "$dir" || return 1
    mkdir -p "$dir/san"
    chmod 1777 "$dir/san"
    RLAAS_CK_MPM=$mpm
    RLAAS_CK_MODULE=$out/mod_rlaas.so
    RLAAS_CK_TIMEOUT=100ms
    RLAAS_CK_MAXCONN=300
    export RLAAS_CK_MODULE RLAAS_CK_MPM RLAAS_CK_TIMEOUT RLAAS_CK_MAXCONN
    CK_PAUSE_MS=400
    CK_SLEEP_S=0.4
    n=${ASAN_REQUESTS:-2000}

    ck_redis_start || return 1
    ck_junk_start

    defines=""
    [ "$(id -u)" = 0 ] && defines="-D RLAAS_CK_ROOT"
    ck_log "[$mpm] httpd with $RLAAS_CK_MODULE (run dir $dir)"
    # In the foreground (no daemonizing process that would exit with a
    # leak report of its own) and in a session of its own: prefork's parent
    # signals its whole process group when it stops, which would otherwise
    # include this script.
    # shellcheck disable=SC2086
    setsid env LD_PRELOAD="$asan_rt" \
        ASAN_OPTIONS="$ASAN_OPTIONS_BASE:log_path=$dir/san/asan" \
        LSAN_OPTIONS="suppressions=$top/fuzz/http/lsan.supp:print_suppressions=0" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$dir/san/ubsan" \
        apache2 -f "$top/fuzz/http/httpd.conf" $defines -D FOREGROUND &
    httpd_pid=$! # setsid, not a group leader here, execs without forking
    ck_wait_http 300 || return 1
    httpd_pid=$(cat "$dir/httpd.pid")

    ck_log "[$mpm] request mix"
    ck_drive mix "$n" all || return 1
    ck_log "[$mpm] bulk load on every strategy (ab, keep-alive)"
    ck_bulk bulk "$((n / 4))"
    ck_log "[$mpm] junk replies from a fake Redis"
    ck_drive junk "$((n / 10))" junk || return 1
    ck_fault_phases "$((n / 2))" || return 1

    ck_log "[$mpm] graceful restart under load"
    ck_drive during-graceful "$n" all &
    drv=$!
    sleep 1
    kill -USR1 "$httpd_pid"
    sleep 2
    kill -USR1 "$httpd_pid"
    wait "$drv"
    ck_wait_http 100 || return 1
    ck_drive after-graceful "$((n / 2))" all || return 1
    curl -s "http://127.0.0.1:$RLAAS_CK_PORT/metrics" >"$dir/metrics.txt"
    ck_check_keys || failed="$failed $mpm(keys)"

    totals=$(ck_totals)
    case $totals in
    *" noresp=0 "*) ;;
    *)  # a request that never got an answer: where are the threads?
        ck_stuck_stacks $(pgrep -P "$httpd_pid") ;;
    esac
    ck_log "[$mpm] stopping httpd"
    stop_httpd
    ck_cleanup
    sleep 0.5 # children's exit-time leak checks finish writing

    totals=$(ck_totals)
    echo "[$mpm] $totals"
    reqs=$(echo "$totals" | sed 's/.*requests=\([0-9]*\).*/\1/')
    total_requests=$((total_requests + reqs))
    grep -E '^rlaas_decisions_total|^rate_limiter_fail_open_total|^rlaas_redis_errors_total|^rlaas_redis_script_loads_total|^rlaas_circuit_opened_total' \
        "$dir/metrics.txt" | grep -v ' 0$' | sed "s/^/[$mpm] metrics: /"

    # Verdict: any sanitizer report file, any child killed by a signal,
    # any request that got no response at all.
    reports=$(find "$dir/san" -type f -size +0 2>/dev/null)
    if [ -n "$reports" ]; then
        failed="$failed $mpm(sanitizer)"
        for f in $reports; do
            echo "---------------- $f"
            head -n 80 "$f"
        done
    fi
    if grep -E 'exit signal|AH00052|AH00051' "$dir/error_log" >/dev/null; then
        failed="$failed $mpm(child-crash)"
        grep -E 'exit signal|AH00052|AH00051' "$dir/error_log" | head -5
    fi
    case $totals in
    *" noresp=0 "*) ;;
    *) failed="$failed $mpm(noresp)" ;;
    esac
    echo "[$mpm] sanitizer reports: $(echo "$reports" | grep -c .)"
}

start=$(date +%s)
for mpm in ${ASAN_MPMS:-event prefork}; do
    if ! run_mpm "$mpm"; then
        failed="$failed $mpm(run)"
        stop_httpd
        ck_cleanup
    fi
done

echo
echo "asan-check: $total_requests requests in $(($(date +%s) - start))s under ASan+UBSan (MPMs: ${ASAN_MPMS:-event prefork})"
if [ -n "$failed" ]; then
    echo "asan-check: FAILED:$failed"
    rc=1
    exit 1
fi
echo "asan-check: no sanitizer reports"
rc=0
exit 0
