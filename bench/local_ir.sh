#!/bin/sh
# bench/local_ir.sh - `make bench-local`: instructions per decision of the
# local engine, counted by callgrind (bench/local_ir.c), for each case.
# With BASE=<git ref> (e.g. BASE=main), the same cases on that ref's
# src/ as well, side by side: what a change to the engine costs.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=build/bench
mkdir -p "$out"
cases="hit denied fresh two"
srcs() {
    d=$1
    # the whole httpd-free core and the local engine: what the engine
    # links against changes with it
    echo "$d"/src/core/*.c "$d"/src/local/*.c
}
build() {
    d=$1 bin=$2 defs=$3
    # shellcheck disable=SC2046
    ${CC:-cc} -O2 -g $defs -I "$d/src/core" -I "$d/src/local" \
        $(apr-1-config --cppflags --includes) $(apu-1-config --includes) \
        -o "$bin" bench/local_ir.c $(srcs "$d") \
        $(apu-1-config --link-ld) $(apr-1-config --link-ld) -lcrypto -lpthread
}
ir() {
    valgrind --tool=callgrind --collect-atstart=no \
        --callgrind-out-file=/dev/null "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
build . "$out/local_ir" -DRLAAS_BENCH_ZONES
if [ -n "${BASE:-}" ]; then
    rm -rf "$out/base" && mkdir -p "$out/base"
    git archive "$BASE" src | tar -x -C "$out/base"
    build "$out/base" "$out/local_ir_base" ""
fi
printf '%-8s %14s' case "Ir/decision"
[ -n "${BASE:-}" ] && printf ' %14s' "$BASE"
echo
for c in $cases; do
    printf '%-8s %14s' "$c" "$(echo "$(ir "$out/local_ir" "$c") / 100000" | bc)"
    [ -n "${BASE:-}" ] &&
        printf ' %14s' "$(echo "$(ir "$out/local_ir_base" "$c") / 100000" | bc)"
    echo
done
