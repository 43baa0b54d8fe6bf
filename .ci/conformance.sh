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
# target/conformance/ (or $CONFORMANCE_OUT). The server inherits the environment, so
# MCP_* variables (MCP_PER_CORE_THREADS=2, say) configure it.
#
# The suite and the Node.js 22 it needs are installed by install_conformance_suite
# (.ci/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${CONFORMANCE_OUT:-target/conformance}
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
install_conformance_suite

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
  if required "$rev"; then
    conformance_revision "$URL" "$rev" "$OUT" required || status=1
  else
    conformance_revision "$URL" "$rev" "$OUT" informational
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
