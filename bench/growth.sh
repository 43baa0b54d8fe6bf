#!/usr/bin/env bash
# The growth curves of issue 20, in one command: builds the three servers, the driver, the
# plotter and a cluster-mode (Redis) build of ours in release, measures CPU and memory per
# request as the work grows (registered tools, payload size, idle sessions and SSE streams,
# a cluster replica against a single process) in interleaved rounds, and writes
#
#   results/growth-<date>.md      the report (medians, ratios, slopes, issue 20's targets)
#   results/growth-<date>.json    the curves
#   results/growth.md             the same report under a fixed name (committed)
#   results/growth-<curve>.png    one plot per growth curve (committed)
#
# Extra arguments go to `driver growth`, e.g.:
#
#   bench/growth.sh                                   # 3 rounds, the issue's points
#   bench/growth.sh --rounds 5
#   bench/growth.sh --only tools,payload --tools 10,100,1000,10000
#   bench/growth.sh --sessions 1,100,1000 --streams 200 --calls 5000
#
# Cluster mode needs redis-server (`bash .ci/scaleout.sh install`); without it that part is
# skipped. See bench/README.md, "Growth".
set -euo pipefail
cd "$(dirname "$0")"

# ours with the `cluster` feature (mcp's `redis`), kept as its own binary; then the default
# build of everything (which puts the ordinary `ours` back).
cargo build --release --quiet -p bench-ours --features cluster
cp target/release/ours target/release/ours-cluster
cargo build --release --quiet --workspace --bins

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p results
./target/release/driver growth --out "results/growth-$stamp.md" \
  --json "results/growth-$stamp.json" "$@"
cp "results/growth-$stamp.md" results/growth.md
./target/release/growth-plot "results/growth-$stamp.json" results
