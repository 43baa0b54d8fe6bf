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
# One target directory for every CI step: what the clone builds is reused afterwards.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cd "$tmp/mcp"
if [ -e ../shared ]; then
  echo "fresh clone: unexpected ../shared beside the clone" >&2
  exit 1
fi
env -u MCP_REQUIRE_REDIS -u MCP_REQUIRE_NODE -u MCP_SCHEMA_DIR $TEST_CMD
