#!/bin/sh
# tools/fuzz.sh - `make fuzz`: libFuzzer targets for the code that reads
# untrusted bytes without httpd (fuzz/*.c):
#
#   parse   the directive value parsers: httpd.conf and tenants' .htaccess
#   key     the key functions: client values, and the whole key's injectivity
#   reply   hiredis' reader and rlaas_reply_verdict: bytes from Redis
#   resp    the hand-written EVALSHA command, against hiredis' formatter
#   headers the hand-built RateLimit header values, against snprintf
#   cookie  the cookie finder: client Cookie headers, against a reference
#   local   the local engine: the strategies in C and the shared table,
#           under any sequence of calls and clock steps
#
# Each target is built with clang -fsanitize=fuzzer,address,undefined and
# runs for FUZZ_SECONDS (so `make fuzz` ends by itself), starting from the
# small committed seeds in fuzz/corpus/<target>/ plus whatever earlier runs
# found (build/fuzz/corpus/<target>/, not committed). A crash, sanitizer
# report, invariant failure, time-out or memory blow-up fails the run and
# leaves the reproducer in build/fuzz/crashes/<target>/; the summary prints
# the command that replays it. A fixed crash becomes a cmocka test
# t/unit/test_regress_<name>.c, which `make unit` runs.
#
#   tools/fuzz.sh            fuzz every target for FUZZ_SECONDS each
#   tools/fuzz.sh --replay   only run the seeds and saved crashes once
#                            (seconds; what a quick CI step would run)
#
# Environment:
#   FUZZ_SECONDS   time per target (default 30)
#   FUZZ_TARGETS   targets to run (default "parse key reply resp headers
#                  cookie local")
#   FUZZ_CC        a clang with libFuzzer (default clang)
#   FUZZ_FLAGS     extra libFuzzer flags, e.g. "-jobs=2 -workers=2"
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

seconds=${FUZZ_SECONDS:-30}
targets=${FUZZ_TARGETS:-parse key reply resp headers cookie local}
cc=${FUZZ_CC:-clang}
mode=fuzz
[ "${1:-}" = "--replay" ] && mode=replay
out=build/fuzz

# The httpd-free sources each target needs (rlaas_key.c hashes with
# apr-util's SHA-1, or with OpenSSL's HMAC-SHA-256 under a secret; times
# and numbers are formatted by rlaas_verdict.c).
sources() {
    case $1 in
    parse) echo src/core/rlaas_parse.c src/core/rlaas_headers.c \
        src/core/rlaas_verdict.c ;;
    key) echo src/core/rlaas_key.c src/core/rlaas_keybuild.c \
        src/core/rlaas_keyhash.c src/core/rlaas_ip.c ;;
    reply) echo src/redis/rlaas_reply.c src/core/rlaas_headers.c \
        src/core/rlaas_verdict.c src/core/rlaas_parse.c ;;
    resp) echo src/redis/rlaas_resp.c src/core/rlaas_verdict.c ;;
    headers) echo src/core/rlaas_headers.c src/core/rlaas_verdict.c \
        src/core/rlaas_parse.c ;;
    cookie) echo src/core/rlaas_cookie.c ;;
    local) echo src/core/rlaas_algo*.c src/core/rlaas_siphash.c \
        src/core/rlaas_clock.c src/core/rlaas_verdict.c \
        src/core/rlaas_parse.c src/local/rlaas_table.c \
        src/local/rlaas_local.c src/core/rlaas_ban.c \
        src/core/rlaas_cal.c src/core/rlaas_conc.c src/core/rlaas_tz.c ;;
    esac
}

if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz: $cc not found (Debian: apt-get install clang libclang-rt-dev)" >&2
    exit 1
fi

apr_cflags="$(apr-1-config --cppflags --includes) $(apu-1-config --includes)"
apr_libs="$(apu-1-config --link-ld) $(apr-1-config --link-ld)"
# -O1 and frame pointers: readable stacks at nearly full speed. UB aborts
# (no recovery), so libFuzzer sees it as a crash and keeps the input.
cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
-fno-sanitize-recover=undefined -Wall -Wextra -I src/core -I src/local \
-I src/redis $apr_cflags"

mkdir -p "$out"
# Sanitizer reports with whole stacks; leaks in a target are bugs too.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"

failed=""
summary=""
start_all=$(date +%s)

for t in $targets; do
    src=$(sources "$t")
    if [ -z "$src" ] || [ ! -f "fuzz/fuzz_$t.c" ]; then
        echo "fuzz: unknown target '$t'" >&2
        failed="$failed $t(unknown)"
        continue
    fi
    bin=$out/fuzz_$t
    echo "== building $bin"
    # shellcheck disable=SC2086
    if ! $cc $cflags -o "$bin" "fuzz/fuzz_$t.c" $src -lhiredis $apr_libs \
        -lcrypto -lpthread; then
        failed="$failed $t(build)"
        continue
    fi

    crashes=$out/crashes/$t
    work=$out/corpus/$t
    mkdir -p "$crashes" "$work"
    log=$out/$t.log
    dict=""
    [ -f "fuzz/dict/$t.dict" ] && dict="-dict=fuzz/dict/$t.dict"

    if [ "$mode" = replay ]; then
        # Every seed and every saved reproducer, once each: a fixed crash
        # must stay fixed. (libFuzzer takes either directories or files.)
        echo "== replaying fuzz/corpus/$t and $crashes"
        rc=0
        if [ -d "fuzz/corpus/$t" ]; then
            "$bin" -runs=0 "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
        fi
        found=$(find "$crashes" -type f 2>/dev/null)
        if [ "$rc" = 0 ] && [ -n "$found" ]; then
            # shellcheck disable=SC2086
            "$bin" $found >>"$log" 2>&1 || rc=$?
        fi
    else
        echo "== fuzzing $t for ${seconds}s (log: $log)"
        # -timeout: one input taking 10 s is a hang worth a report;
        # -rss_limit_mb: catches unbounded growth within a run.
        # New inputs go to $work (first directory); the seeds are read only.
        seeds=""
        [ -d "fuzz/corpus/$t" ] && seeds="fuzz/corpus/$t"
        # shellcheck disable=SC2086
        "$bin" -max_total_time="$seconds" -print_final_stats=1 \
            -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" \
            $dict ${FUZZ_FLAGS:-} "$work" $seeds >"$log" 2>&1
        rc=$?
    fi

    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(sed -n 's/.*\(DONE\|INITED\) *cov: \([0-9]*\).*/\2/p' "$log" | tail -1)
    corpus=$(find "$work" -type f | wc -l)
    if [ "$rc" = 0 ]; then
        result=ok
    else
        result="FAILED (exit $rc)"
        failed="$failed $t"
        echo "---- $log (sanitizer / libFuzzer report) ----"
        if grep -q -E 'ERROR: |runtime error|invariant failed' "$log"; then
            grep -E -A40 'ERROR: |runtime error|invariant failed' "$log" |
                head -60
        else
            tail -n 15 "$log"
        fi
        for f in $(ls -t "$crashes" 2>/dev/null | head -3); do
            echo "reproduce: $bin $crashes/$f"
        done
    fi
    summary="$summary
$(printf '  %-6s %-18s executions=%-10s cov=%-5s corpus=%-5s' \
        "$t" "$result" "${execs:-?}" "${cov:-?}" "$corpus")"
done

echo
if [ "$mode" = replay ]; then
    echo "== fuzz summary (replay, $(($(date +%s) - start_all))s in all)$summary"
else
    echo "== fuzz summary (${seconds}s per target, $(($(date +%s) - start_all))s in all)$summary"
fi
if [ -n "$failed" ]; then
    echo "fuzz: FAILED:$failed (reproducers in $out/crashes/)"
    exit 1
fi
echo "fuzz: no crashes"
exit 0
