#!/usr/bin/env bash
# Runs the whole benchmark: builds the three servers and the driver in release, runs every
# phase in interleaved rounds, and prints one table (medians, ratios against rmcp and the
# floor from the same run). Extra arguments go to the driver, e.g.:
#
#   bench/run.sh                       # 5 rounds, everything but the clean build times
#   bench/run.sh --rounds 3 --build-time
#   bench/run.sh --only stdio --rounds 9
#   MICRO=1 bench/run.sh               # also the criterion micro-benchmarks
#
# The report is also written to bench/results/<date>.md (not committed).
set -euo pipefail
cd "$(dirname "$0")"

cargo build --release --quiet --workspace --bins
out="results/$(date +%Y%m%d-%H%M%S).md"
./target/release/driver all --out "$out" "$@"

if [ "${MICRO:-0}" != 0 ]; then
  cargo bench --quiet -p bench-micro --bench dispatch -- --noplot
fi
