# shellcheck shell=bash
# Helpers shared by .ci/conformance.sh and .ci/interop.sh: run the `everything` example on a
# free loopback port over Streamable HTTP, wait until it answers, stop it.

# Prints the first port in 39170-39369 that nobody answers on.
free_port() {
  local p
  for p in $(seq 39170 39369); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "no free loopback port in 39170-39369" >&2
  return 1
}

# start_everything_http <binary> <log prefix>: starts the server, sets EVERYTHING_PID and
# EVERYTHING_URL, and returns once it answers HTTP (any status), or fails after 30 s.
start_everything_http() {
  local binary=$1 log=$2 port
  port=$(free_port)
  EVERYTHING_URL="http://127.0.0.1:$port/mcp"
  "$binary" --transport http --bind "127.0.0.1:$port" --log-level warn \
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
