#!/usr/bin/env bash
# The cargo features of mcp-guarded, one combination at a time: each compiles and is
# clippy-clean on its own (library and unit tests), so a feature that quietly needs another
# one, or code left unused without one, fails here rather than in a user's build. Then a
# stdio-only server (`default-features = false, features = ["macros", "cli"]`, the bench
# server built with --no-default-features) is run as a user would: it serves stdio, and
# asked for HTTP it says which feature that needs.
set -euo pipefail
cd "$(dirname "$0")/.."

combos=(
  ""                  # the core alone: the builder API and stdio
  "macros"
  "cli"
  "macros,cli"        # the stdio-only server
  "http"
  "cli,http"
  "oauth"
  "redis"
  "otel"              # telemetry without the command line or HTTP
  "macros,cli,otel"   # a stdio server that exports
  "macros,cli,http,oauth,redis,otel"
)
for features in "${combos[@]}"; do
  echo "--- mcp-guarded --no-default-features --features \"$features\""
  cargo clippy --quiet -p mcp-guarded --no-default-features --features "$features" \
    --all-targets -- -D warnings
done

# serde_json's `preserve_order` is turned on for a whole build by any crate that asks for
# it, and then JSON objects keep insertion order: what the library makes canonical (the
# audit digest of the arguments) or lists (mirrored headers) must not depend on it.
echo "--- mcp-guarded's unit tests with serde_json/preserve_order"
cargo test --quiet -p mcp-guarded --lib --features serde_json/preserve_order

echo "--- a stdio-only server, as built by a user"
# The bench workspace has its own lock file; its own target directory keeps the shared
# one's artifacts from being invalidated by different dependency versions.
cargo build --quiet --manifest-path bench/Cargo.toml -p bench-ours --no-default-features \
  --target-dir target/stdio-only
bin=target/stdio-only/debug/ours

help=$("$bin" --help)
for flag in --transport --list --print-config --max-message-size; do
  grep -qF -- "$flag" <<<"$help" || { echo "--help lacks $flag:"; echo "$help"; exit 1; }
done
for flag in --bind --legacy-sse --redis-url; do
  if grep -qF -- "$flag" <<<"$help"; then
    echo "a stdio-only binary offers $flag, which it cannot honour"; exit 1
  fi
done

if out=$("$bin" --transport http 2>&1); then
  echo "a stdio-only binary accepted --transport http"; exit 1
fi
grep -qF 'needs a build with the `http` feature' <<<"$out" \
  || { echo "--transport http did not name the feature:"; echo "$out"; exit 1; }

reply=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ci","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"over stdio"}}}' \
  | "$bin" 2>/dev/null)
grep -qF '"serverInfo"' <<<"$reply" || { echo "no initialize result: $reply"; exit 1; }
grep -qF 'over stdio' <<<"$reply" || { echo "no echo: $reply"; exit 1; }
echo "stdio-only server: serves stdio, refuses HTTP with the feature's name"
