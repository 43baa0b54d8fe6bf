#!/usr/bin/env bash
# Fuzzing, bounded in time: builds every target in fuzz/ with cargo fuzz (libFuzzer, ASan)
# and runs each for FUZZ_SECONDS (default 30) from its committed corpus (fuzz/corpus, the
# campaigns' minimized findings) and seeds (fuzz/seeds, hand-written). Fails on any
# crash, panic, timeout (-timeout) or memory blow-up (-rss_limit_mb, -malloc_limit_mb).
#
# cargo fuzz passes nightly-only flags (-Zsanitizer=address, ...). The stable toolchain
# accepts them with RUSTC_BOOTSTRAP=1, and ships the ASan runtime on x86_64 Linux. Where
# it does not, run with FUZZ_SANITIZER=none (coverage-guided fuzzing still works; only
# ASan's checks, which matter for unsafe code, are lost).
#
# Targets run side by side, one per core (FUZZ_JOBS to change that).
#
# Usage: .ci/fuzz.sh [target...]   (env: FUZZ_SECONDS, FUZZ_JOBS, FUZZ_SANITIZER,
#                                         FUZZ_TARGET_DIR)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

SECONDS_PER_TARGET="${FUZZ_SECONDS:-30}"
SANITIZER="${FUZZ_SANITIZER:-address}"
export RUSTC_BOOTSTRAP=1
# A target directory outside the checkout lets a machine that fuzzed before skip the
# rebuild of the sanitized dependencies; a fresh machine builds them once.
TARGET_DIR="${FUZZ_TARGET_DIR:-${HOME}/.cache/mcp-fuzz-target}"
fuzz=(--sanitizer "$SANITIZER" --target-dir "$TARGET_DIR")

# The fuzz crate is a workspace of its own: the root's `cargo fmt --all` does not see it.
cargo fmt -- --check

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz"
  cargo install cargo-fuzz --locked --version 0.13.2
fi

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

build_start=$SECONDS
if [ "$#" -gt 0 ]; then
  for t in "${targets[@]}"; do cargo fuzz build "${fuzz[@]}" "$t"; done
else
  cargo fuzz build "${fuzz[@]}"
fi
echo "fuzz targets built in $((SECONDS - build_start)) s"

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# fuzz_one <target>: one bounded run; its one-line summary goes to $logs/<target>.summary,
# and a failure leaves $logs/<target>.failed.
fuzz_one() {
  local t=$1 corpus="$logs/corpus-$t" committed=() result runs rate rss
  mkdir -p "$corpus"
  # New inputs go to a scratch corpus; the committed corpus (minimized by the campaigns of
  # fuzz/campaign.sh) and the hand-written seeds are only read.
  [ -d "corpus/$t" ] && committed=("corpus/$t")
  if cargo fuzz run "${fuzz[@]}" "$t" "$corpus" "${committed[@]}" "seeds/$t" -- \
      -max_total_time="$SECONDS_PER_TARGET" \
      -timeout=10 \
      -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 \
      -print_final_stats=1 >"$logs/$t.log" 2>&1; then
    result=ok
  else
    result=FAILED
    touch "$logs/$t.failed"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$logs/$t.log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$logs/$t.log" | tail -1)
  printf '%-20s %-7s %10s runs %7s exec/s %6s MB\n' "$t" "$result" "${runs:-?}" "${rate:-?}" \
    "${rss:-?}" >"$logs/$t.summary"
}

# One target per core at a time: each run is single-threaded.
jobs_max="${FUZZ_JOBS:-$(nproc)}"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
    wait -n || true
  done
  echo "==> fuzzing $t for ${SECONDS_PER_TARGET} s"
  fuzz_one "$t" &
done
wait

summary=()
failed=0
for t in "${targets[@]}"; do
  summary+=("$(cat "$logs/$t.summary")")
  if [ -e "$logs/$t.failed" ]; then
    failed=1
    echo "==> $t failed:" >&2
    grep -vE '^"|# Uses' "$logs/$t.log" | tail -60 >&2
  fi
done

echo
echo "fuzzing summary (${SECONDS_PER_TARGET} s per target):"
printf '  %s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  echo "a fuzz target failed; its input is in fuzz/artifacts/<target>/ (reproduce with: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run <target> <file>)" >&2
  exit 1
fi
