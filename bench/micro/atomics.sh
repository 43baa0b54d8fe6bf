#!/usr/bin/env bash
# Atomic read-modify-writes per in-process dispatch (lock-prefixed instructions and xchg
# with memory, each a full barrier on x86), from callgrind with per-instruction counts: the
# difference between runs of 2N and N dispatches, divided by N, and the sites that make
# them (inlined frames from addr2line). callgrind counts such an instruction as one, so
# `ir.sh` cannot see what they cost; this counts them.
#   bench/micro/atomics.sh [call|stateless|list|layered|guarded|...] [N] [sites]
# `sites` (default 12) is how many of the busiest sites to name.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-call}
n=${2:-2000}
sites=${3:-12}
cargo build --profile profiling -p bench-micro --example dispatch_loop --quiet
bin=target/profiling/examples/dispatch_loop
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Executed count per instruction address of the binary itself (the runtime's and the
# framework's atomics are there; libc's lock-free fast paths take none).
counts() {
  valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
    --callgrind-out-file="$work/cg" "$bin" "$mode" "$1" > /dev/null 2>&1
  # A cost line is `0xADDR LINE COUNT`; the line after `calls=` is a call's inclusive
  # cost, not the instruction's own.
  awk -v bin="$bin" '
    /^ob=/ { mine = index($0, bin) > 0; next }
    /^calls=/ { skip = 1; next }
    /^0x/ { if (skip) { skip = 0; next } if (mine) count[$1] += $3 }
    END { for (a in count) print a, count[a] }
  ' "$work/cg"
}
counts "$n" > "$work/a"
counts $((2 * n)) > "$work/b"

# Every atomic read-modify-write in the binary, by address.
objdump -d --no-show-raw-insn "$bin" |
  awk '$2 == "lock" || ($2 ~ /^xchg/ && $3 ~ /\(/) { sub(":", "", $1); print "0x" $1 }' \
    > "$work/atomic"

awk -v n="$n" '
  FILENAME == ARGV[1] { atomic[$1] = 1; next }
  FILENAME == ARGV[2] { a[$1] = $2; next }
  ($1 in atomic) { d = ($2 - a[$1]) / n; if (d > 0.01) { total += d; print d, $1 > "/dev/stderr" } }
  END { printf "%s: %.1f atomic read-modify-writes per dispatch\n", "'"$mode"'", total }
' "$work/atomic" "$work/a" "$work/b" 2> "$work/sites"

# The busiest sites, each with the frames it was inlined through (innermost first).
sort -rn "$work/sites" | head -n "$sites" | while read -r per addr; do
  frames=$(addr2line -e "$bin" -f -i -C "$addr" | paste - - |
    awk -F'\t' 'NR > 1 && NR <= 5 { sub(/.*\//, "", $2); printf "%s%s (%s)", sep, $1, $2; sep = " <- " }')
  printf '%5.2f  %s\n' "$per" "$frames"
done
