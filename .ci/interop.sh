#!/usr/bin/env bash
# Interop with clients we did not write: the official TypeScript SDK client
# (@modelcontextprotocol/sdk, interop/js, on the machine's Node.js) and the official Python
# SDK client (mcp 2.x, interop/python, in both its `auto` mode, which speaks 2026-07-28, and
# its `legacy` mode, which performs the 2025-11-25 handshake), each against the `everything`
# example over stdio and over Streamable HTTP.
#
# Installs the pinned clients into interop/js/node_modules and interop/python/.venv
# (git-ignored, reused by later runs). Fails if any check of any client fails.
#
# HTTP_AUTO_NEGOTIATES (default 2026-07-28) is the revision the Python client's `auto` mode
# must reach over Streamable HTTP: 2025-11-25 while the HTTP transport serves only the
# handshake era (the client then falls back to initialize, which is checked instead).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=.ci/lib.sh
source .ci/lib.sh

section() { printf '\n==> %s\n' "$*"; }
OUT=target/interop
BIN=target/release/everything

section "interop: install the pinned clients"
if [ ! -f interop/js/node_modules/@modelcontextprotocol/sdk/package.json ] ||
  ! cmp -s interop/js/package-lock.json interop/js/node_modules/.package-lock.json.ci 2>/dev/null; then
  (cd interop/js && npm ci --no-audit --no-fund --loglevel=error)
  cp interop/js/package-lock.json interop/js/node_modules/.package-lock.json.ci
fi
VENV=interop/python/.venv
if [ ! -x "$VENV/bin/python" ] || ! cmp -s interop/python/requirements.txt "$VENV/requirements.installed"; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --disable-pip-version-check --quiet -r interop/python/requirements.txt
  cp interop/python/requirements.txt "$VENV/requirements.installed"
fi
echo "typescript sdk $(node -p 'require("./interop/js/node_modules/@modelcontextprotocol/sdk/package.json").version') on node $(node --version)"
echo "python sdk $("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("mcp"))') on $("$VENV/bin/python" --version)"

section "interop: build the everything example (release)"
cargo build --release --quiet -p mcp-examples --bin everything
rm -rf "$OUT"
mkdir -p "$OUT"

status=0
run() {
  local name=$1
  shift
  section "interop: $name"
  if ! "$@"; then
    status=1
    echo "interop FAILED: $name" >&2
  fi
}

run "typescript sdk over stdio" node interop/js/client.mjs stdio "$BIN"
run "python sdk over stdio" "$VENV/bin/python" interop/python/check.py stdio "$BIN"

section "interop: start everything over Streamable HTTP"
trap stop_everything EXIT
start_everything_http "$BIN" "$OUT/server"
run "typescript sdk over streamable http" node interop/js/client.mjs http "$EVERYTHING_URL"
run "python sdk over streamable http" "$VENV/bin/python" interop/python/check.py http "$EVERYTHING_URL" \
  --auto-negotiates "${HTTP_AUTO_NEGOTIATES:-2026-07-28}"
stop_everything
trap - EXIT
if grep -q "panicked" "$OUT/server.stderr.log"; then
  echo "the server panicked during the run:" >&2
  grep -A3 "panicked" "$OUT/server.stderr.log" >&2
  status=1
fi

exit "$status"
