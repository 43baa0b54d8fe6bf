#!/usr/bin/env bash
# OpenTelemetry end to end: the `everything` example built with `--features otel` exports
# over OTLP/HTTP (protobuf) to a test receiver while the official MCP conformance suite runs
# through it for both revisions, then the received spans and metrics are checked.
#
#  1. builds the receiver (`otlp-sink`, tests/src/bin/otlp_sink.rs: no OpenTelemetry
#     Collector is installable here; a debug build, which the test suite has made already)
#     and `everything --features otel`, copied to
#     target/otel/everything (conformance.sh and scaleout.sh build target/release/everything
#     without the feature);
#  2. starts the receiver on a free loopback port, and everything with OTEL_* pointing at it
#     and its Prometheus endpoint on another (`--metrics-bind`; its `--print-config` rows
#     about OpenTelemetry are printed);
#  3. runs the conformance suite, `server --requirements 2025-11-25` and `2026-07-28`: a
#     failing required scenario fails the script;
#  4. scrapes `/metrics` (the duration histogram must be there, by tool), stops everything
#     with SIGTERM (it flushes its exporters before it exits), then the receiver;
#  5. `otlp-sink check`: spans of service `everything`; `tools/call <tool>` spans with
#     mcp.method.name, gen_ai.tool.name, mcp.protocol.version and jsonrpc.request.id; both
#     protocol versions; an `mcp.authorize` child of a tools/call span; a span with
#     error.type; the mcp.server.operation.duration metric.
#
# Everything it starts is stopped on exit. Results and logs: target/otel/ (the received
# spans and metrics as JSON lines in target/otel/sink/).
#
# Usage: .ci/otel.sh
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }
# shellcheck source=.ci/lib.sh
source .ci/lib.sh

TARGET=${CARGO_TARGET_DIR:-target}
OUT=$TARGET/otel
SINK=$TARGET/debug/otlp-sink
SERVER=$OUT/everything
SERVICE=everything
REVISIONS=(2025-11-25 2026-07-28)

SINK_PID=""
stop_sink() {
  if [ -n "$SINK_PID" ] && kill -0 "$SINK_PID" 2>/dev/null; then
    kill "$SINK_PID" 2>/dev/null || true
    wait "$SINK_PID" 2>/dev/null || true
  fi
  SINK_PID=""
}
cleanup() {
  stop_everything
  stop_sink
}
trap cleanup EXIT

# span_count: the lines the receiver has written to spans.jsonl so far.
span_count() { wc -l <"$OUT/sink/spans.jsonl" | tr -d ' '; }

section "otel: install the pinned suite and Node.js 22"
install_conformance_suite

section "otel: build otlp-sink (debug) and everything --features otel (release)"
cargo build --quiet -p mcp-tests --bin otlp-sink
cargo build --release --quiet -p mcp-examples --features otel --bin everything
rm -rf "$OUT"
mkdir -p "$OUT/conformance"
# The next release build without the feature overwrites target/release/everything: run a
# copy.
cp "$TARGET/release/everything" "$SERVER"

section "otel: start the OTLP receiver"
SINK_PORT=$(free_port)
"$SINK" serve --bind "127.0.0.1:$SINK_PORT" --out "$OUT/sink" 2>"$OUT/sink.log" &
SINK_PID=$!
# Listening before anything else picks a free port (free_port would hand out the same).
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$SINK_PORT") 2>/dev/null; then
    break
  fi
  if ! kill -0 "$SINK_PID" 2>/dev/null; then
    echo "otlp-sink exited before listening:" >&2
    cat "$OUT/sink.log" >&2
    exit 1
  fi
  sleep 0.1
done
head -1 "$OUT/sink.log"

export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT"
export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf
export OTEL_SERVICE_NAME=$SERVICE

section "otel: the server's export setting (--print-config)"
# free_port hands out the first free port from the bottom of its range, and the server
# binds the metrics port only once it starts: take this one from the top of the range.
METRICS_PORT=""
for p in $(seq 21369 -1 21300); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    METRICS_PORT=$p
    break
  fi
done
[ -n "$METRICS_PORT" ] || {
  echo "no free loopback port in 21300-21369 for /metrics" >&2
  exit 1
}
config=$("$SERVER" --transport http --metrics-bind "127.0.0.1:$METRICS_PORT" --print-config)
grep -E '^(opentelemetry|metrics_bind) ' <<<"$config"
config_row=$(grep '^opentelemetry ' <<<"$config" || true)
case "$config_row" in
"" | *'"off"'*)
  echo "export is not on (no opentelemetry row, or off): was $SERVER built with --features otel, and OTEL_EXPORTER_OTLP_ENDPOINT set?" >&2
  exit 1
  ;;
esac

section "otel: start everything over Streamable HTTP, exporting to the receiver"
start_everything_http "$SERVER" "$OUT/server" --metrics-bind "127.0.0.1:$METRICS_PORT"
URL=$EVERYTHING_URL

status=0
for rev in "${REVISIONS[@]}"; do
  section "otel: conformance server --requirements $rev"
  conformance_revision "$URL" "$rev" "$OUT/conformance" required || status=1
done

section "otel: scrape http://127.0.0.1:$METRICS_PORT/metrics"
node -e '
  const url = process.argv[1];
  (async () => {
    const r = await fetch(url);
    const text = await r.text();
    const counts = text.split("\n").filter((l) => l.startsWith("mcp_server_operation_duration_seconds_count{") && l.includes("gen_ai_tool_name="));
    if (r.status !== 200 || counts.length === 0) {
      console.error(`no per-tool duration counts at ${url} (status ${r.status}):\n${text.slice(0, 2000)}`);
      process.exit(1);
    }
    console.log(`ok  /metrics: ${counts.length} per-tool duration series, ${text.split("\n").filter((l) => l && !l.startsWith("#")).length} samples`);
  })().catch((e) => { console.error(e); process.exit(1); });
' "http://127.0.0.1:$METRICS_PORT/metrics" || status=1

section "otel: stop everything (SIGTERM: it flushes its exporters), then the receiver"
before=$(span_count)
stop_everything
# The server exports before it exits; a moment for the receiver to write the last request.
sleep 1
stop_sink
echo "spans received: $before before SIGTERM, $(span_count) after; metric points: $(wc -l <"$OUT/sink/metrics.jsonl" | tr -d ' ')"
if grep -q "panicked" "$OUT/server.stderr.log"; then
  echo "the server panicked during the run:" >&2
  grep -A3 "panicked" "$OUT/server.stderr.log" >&2
  status=1
fi

section "otel: check the received spans and metrics"
"$SINK" check --out "$OUT/sink" --service "$SERVICE" || status=1

section "otel: summary"
cat "$OUT"/conformance/*.summary | grep '^conformance '
if [ "$status" -ne 0 ]; then
  echo "otel FAILED: see above, $OUT/ and $OUT/sink/" >&2
fi
exit "$status"
