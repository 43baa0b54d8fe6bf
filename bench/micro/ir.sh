#!/usr/bin/env bash
# Instructions per in-process dispatch, from callgrind: the difference between runs of
# 2N and N dispatches, divided by N, so start-up cost cancels out.
#   bench/micro/ir.sh [call|stateless|list|layered] [N]
# BENCH_FEATURES=otel measures a build with those features of bench-micro;
# BENCH_AUDIT_ROUTINE=debug puts the guarded modes' routine audit events below INFO.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-call}
n=${2:-5000}
features=${BENCH_FEATURES:-}
target=target
if [ -n "$features" ]; then
  # Its own target directory: the two builds do not overwrite each other.
  target=target/with-$features
fi
cargo build --profile profiling -p bench-micro --example dispatch_loop --quiet \
  --features "$features" --target-dir "$target"
bin=$target/profiling/examples/dispatch_loop
ir() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$mode" "$1" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
a=$(ir "$n")
b=$(ir $((2 * n)))
echo "$mode: $(( (b - a) / n )) instructions per dispatch"
