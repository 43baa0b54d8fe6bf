#!/usr/bin/env bash
# The README's test command in a fresh clone of this checkout's HEAD, with nothing beside
# it (no ../shared) and no service required: what a contributor who clones the repository
# alone sees. Tests that need a service CI provides later (Redis, Node.js) say "skipped"
# here when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST_CMD="cargo test --workspace"
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone --quiet --no-local . "$tmp/mcp"
# A target directory of its own, kept between runs: cargo names the artifacts of
# workspace members by their path inside the workspace, not on disk, so sharing the main
# one would let the checkout's run reuse test binaries that point into this clone (gone
# after this script) instead of building its own.
export CARGO_TARGET_DIR="${FRESH_CLONE_TARGET_DIR:-$root/target/fresh-clone}"
cd "$tmp/mcp"
if [ -e ../shared ]; then
  echo "fresh clone: unexpected ../shared beside the clone" >&2
  exit 1
fi
env -u MCP_REQUIRE_REDIS -u MCP_REQUIRE_NODE -u MCP_SCHEMA_DIR $TEST_CMD
