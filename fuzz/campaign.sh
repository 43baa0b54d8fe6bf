#!/usr/bin/env bash
# A fuzzing campaign, outside CI: runs each target for a number of executions (not seconds)
# from its committed corpus (fuzz/corpus/<target>) and its hand-written seeds, then
# minimizes the corpus back into fuzz/corpus/<target> (libFuzzer's merge keeps the
# smallest set of inputs covering every feature seen). CI's bounded runs (.ci/fuzz.sh) start
# from that corpus, so each campaign's coverage is where the next 30 s begin.
#
# For each target it appends a row to fuzz/campaign.md: executions, time, and the coverage
# (libFuzzer's `cov`, covered edges, and `ft`, features) of the seeds alone, of the corpus
# before this run, and of the minimized corpus after it.
#
# Usage: fuzz/campaign.sh [target...]   (all targets when none is named)
# env:   FUZZ_RUNS (default 10000000; the targets that go through the HTTP stack,
#        http_request and stored_records, get FUZZ_RUNS_IO, default 1000000), or
#        FUZZ_CAMPAIGN_SECONDS to bound each target's run in time instead (executions
#        add up over campaigns: see fuzz/campaign.md); FUZZ_SANITIZER, FUZZ_TARGET_DIR as
#        in .ci/fuzz.sh; FUZZ_BUILD_FLAGS, more `cargo fuzz build` flags (`-a`: debug
#        assertions, so an arithmetic overflow is a finding too); FUZZ_TIMEOUT, seconds one
#        input may run before it counts as a hang (default 10; a campaign niced beside
#        builds can be starved that long by the scheduler: use 60 there).
#
# Long campaigns run best with FUZZ_SANITIZER=none FUZZ_BUILD_FLAGS=-a: AddressSanitizer
# checks memory accesses, which only unsafe code can get wrong, and our code is safe Rust
# but for two libc calls no target reaches; without it the targets run 6 to 8 times as fast
# (side by side, same corpus, same load: layers 99 -> 845 exec/s, jsonrpc_frame 1,180 ->
# 7,286; ASan's allocator bookkeeping dominates these allocation-heavy targets). CI's
# bounded runs keep AddressSanitizer.
# Each row records the build it ran. Run one campaign per core (two targets at once here).
set -euo pipefail
cd "$(dirname "$0")"

RUNS="${FUZZ_RUNS:-10000000}"
RUNS_IO="${FUZZ_RUNS_IO:-1000000}"
SANITIZER="${FUZZ_SANITIZER:-address}"
export RUSTC_BOOTSTRAP=1
TARGET_DIR="${FUZZ_TARGET_DIR:-${HOME}/.cache/mcp-fuzz-target}"
read -r -a build_flags <<<"${FUZZ_BUILD_FLAGS:-}"
fuzz=(--sanitizer "$SANITIZER" "${build_flags[@]}" --target-dir "$TARGET_DIR")
build="$SANITIZER${FUZZ_BUILD_FLAGS:+ $FUZZ_BUILD_FLAGS}"
limits=(-timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -malloc_limit_mb=1024)

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi
for t in "${targets[@]}"; do cargo fuzz build "${fuzz[@]}" "$t"; done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# coverage <log>: "cov/ft" from libFuzzer's INITED line (the corpus as loaded).
coverage() {
  sed -n 's/.*INITED cov: \([0-9]*\) ft: \([0-9]*\).*/\1 edges, \2 features/p' "$1" | tail -1
}

# measure <target> <dir...>: the coverage of these corpora, without fuzzing.
measure() {
  local t=$1
  shift
  cargo fuzz run "${fuzz[@]}" "$t" "$@" -- -runs=0 "${limits[@]}" >"$work/measure.log" 2>&1
  coverage "$work/measure.log"
}

[ -f campaign.md ] || cat >campaign.md <<'EOF'
# Fuzzing campaigns

Written by `fuzz/campaign.sh` (one row per target per campaign). Coverage is libFuzzer's:
`edges` are covered control-flow edges, `features` also count edge hit-count buckets and
comparisons. "seeds" is the hand-written seeds alone, "before" the committed corpus with
them at the start of the run, "after" the minimized corpus the run committed. "build" is
the sanitizer and any other `cargo fuzz build` flags (`-a`: debug assertions).

| date | target | build | executions | time | exec/s | seeds | before | after | corpus files | findings |
|---|---|---|---|---|---|---|---|---|---|---|
EOF

# A finding stops that target's run (libFuzzer exits on the first): what it found until
# then is still merged into the corpus, and the campaign goes on with the next target.
failed=0
for t in "${targets[@]}"; do
  runs=$RUNS
  case "$t" in http_request | stored_records) runs=$RUNS_IO ;; esac
  # A campaign bounded in time instead (a session's share of a longer one).
  bound=(-runs="$runs")
  [ -n "${FUZZ_CAMPAIGN_SECONDS:-}" ] && bound=(-max_total_time="$FUZZ_CAMPAIGN_SECONDS")
  mkdir -p "corpus/$t"
  seeds=$(measure "$t" "seeds/$t")
  before=$(measure "$t" "corpus/$t" "seeds/$t")
  echo "==> $t: ${bound[*]} (seeds: $seeds; corpus before: $before)"
  new="$work/new-$t"
  mkdir -p "$new"
  cp "corpus/$t"/* "$new"/ 2>/dev/null || true
  started=$SECONDS
  findings=none
  if ! cargo fuzz run "${fuzz[@]}" "$t" "$new" "seeds/$t" -- \
      "${bound[@]}" "${limits[@]}" -print_final_stats=1 >"$work/$t.log" 2>&1; then
    findings="see fuzz/artifacts/$t"
    grep -vE '^"|# Uses' "$work/$t.log" | tail -40 >&2
  fi
  elapsed=$((SECONDS - started))
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t.log" | tail -1)
  # Minimize: the smallest set of inputs keeping every feature of the old corpus, the seeds
  # and what this run found.
  merged="$work/merged-$t"
  mkdir -p "$merged"
  if cargo fuzz run "${fuzz[@]}" "$t" "$merged" "$new" "corpus/$t" "seeds/$t" -- \
      -merge=1 "${limits[@]}" >"$work/merge-$t.log" 2>&1; then
    rm -rf "corpus/$t"
    mv "$merged" "corpus/$t"
  else
    # An input that fails the target stops the merge: keep everything, unminimized.
    echo "    merge failed (see the finding); the corpus is kept unminimized" >&2
    cp -n "$new"/* "corpus/$t"/ 2>/dev/null || true
  fi
  after=$(measure "$t" "corpus/$t" "seeds/$t")
  files=$(find "corpus/$t" -type f | wc -l)
  echo "    $t: ${executed:-?} executions in ${elapsed} s (${rate:-?}/s), after: $after, $files files"
  printf '| %s | %s | %s | %s | %s s | %s | %s | %s | %s | %s | %s |\n' "$(date -u +%F)" "$t" \
    "$build" "${executed:-?}" "$elapsed" "${rate:-?}" "$seeds" "$before" "$after" "$files" "$findings" \
    >>campaign.md
  [ "$findings" = none ] || failed=1
done
exit "$failed"
