#!/usr/bin/env bash
# Scale-out: three replicas of `everything` sharing state on Redis, behind a stock nginx
# doing plain round-robin (no sticky sessions), all on loopback.
#
#  1. installs redis-server and nginx from Debian's packages if they are missing (no
#     Docker), starts Redis on a free loopback port;
#  2. runs the Redis-backed scale-out tests, the Redis fault tests and the load-balancer
#     fault tests with MCP_REQUIRE_REDIS=1 (they fail rather than skip without Redis;
#     skipped with SCALEOUT_TESTS_RAN=1, which .ci/run sets: its workspace tests ran them);
#  3. starts three replicas with --redis-url and one shared --state-key-file, and nginx in
#     front of them (round-robin, HTTP/1.1 keep-alive to the upstreams, proxy_buffering off
#     for SSE, the client's Host passed through for the DNS-rebinding guard);
#  4. runs the official conformance suite through nginx for both revisions (required
#     scenarios must pass);
#  5. kills a replica mid-session (SIGKILL) while it holds a parked approval question, and
#     checks that the session goes on on the others and that the parked call is closed
#     with the deny, which the client reads by resuming its stream through nginx
#     (tests/tests/scaleout.rs, live_replica_killed_mid_session);
#  6. soaks three fresh replicas (short session idle, task ttl, approval and requestState
#     timeouts, so that everything expires within seconds; their own Redis prefix) behind
#     their own nginx: 64 HTTP clients in both eras and four stdio clients, approvals
#     approved, declined and left silent, tasks polled, updated and cancelled, sessions
#     abandoned (tests/tests/soak_cluster.rs); 25 s of load here, then the expiry wait.
#
# Everything it starts is stopped on exit. Results and logs: target/scaleout/ (the soak's
# RSS samples in soak-rss.csv, its figures in soak-summary.md).
#
# Usage: .ci/scaleout.sh           the whole run
#        .ci/scaleout.sh install   only install redis-server and nginx (.ci/run calls it
#                                  before the test suite, so the Redis tests run there too)
#        .ci/scaleout.sh soak      only the soak (step 6), SOAK_SECONDS of load (default
#                                  60): SOAK_SECONDS=1800 .ci/scaleout.sh soak is the
#                                  30-minute run; SOAK_PLOT=1 also draws soak-rss.png with
#                                  bench/plot (a separate workspace: builds plotters once)
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n==> %s (at %d s)\n' "$*" "$SECONDS"; }
# shellcheck source=.ci/lib.sh
source .ci/lib.sh

NGINX=$(command -v nginx || echo /usr/sbin/nginx)

install_packages() {
  if command -v redis-server >/dev/null && [ -x "$NGINX" ]; then
    echo "redis-server and nginx are installed"
    return 0
  fi
  if ! command -v apt-get >/dev/null; then
    echo "redis-server or nginx is missing and there is no apt-get to install them" >&2
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server nginx >/dev/null
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
  echo "installed: $(redis-server --version | cut -d' ' -f1-3), $("$NGINX" -v 2>&1)"
}

MODE=${1:-all}
case "$MODE" in
  all | install | soak) ;;
  *)
    echo "usage: $0 [install|soak]" >&2
    exit 2
    ;;
esac
section "scale-out: redis-server and nginx (Debian packages)"
install_packages
if [ "$MODE" = install ]; then
  exit 0
fi

# SCALEOUT_OUT: another directory, for a run beside another (a long soak, say).
OUT=${SCALEOUT_OUT:-target/scaleout}
rm -rf "$OUT"
mkdir -p "$OUT"
OUT_ABS=$(cd "$OUT" && pwd)
started_all=$SECONDS

REDIS_PID=""
# Every replica and nginx started: stopped on exit, then Redis.
STARTED_PIDS=()
cleanup() {
  local pid
  for pid in "${STARTED_PIDS[@]}" "$REDIS_PID"; do
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
}
trap cleanup EXIT

# wait_for <what> <seconds> <command...>: polls until the command succeeds.
wait_for() {
  local what=$1 seconds=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$what did not come up within $seconds s" >&2
      return 1
    fi
    sleep 0.1
  done
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# start_replicas <log name> <redis prefix> [extra options...]: three replicas of everything
# sharing Redis (keys under the prefix) and the state key; sets REPLICA_PIDS and
# REPLICA_URLS.
start_replicas() {
  local name=$1 prefix=$2 i
  shift 2
  REPLICA_PIDS=()
  REPLICA_URLS=()
  for i in 1 2 3; do
    start_everything_http target/release/everything "$OUT/$name$i" \
      --redis-url "$REDIS_URL" --redis-prefix "$prefix" --state-key-file "$OUT/state.key" "$@"
    STARTED_PIDS+=("$EVERYTHING_PID")
    REPLICA_PIDS+=("$EVERYTHING_PID")
    REPLICA_URLS+=("$EVERYTHING_URL")
  done
}

# start_nginx <name>: nginx doing round-robin over REPLICA_URLS on a free port (its
# configuration and logs are $OUT/<name>.*); sets NGINX_PID and LB_URL.
start_nginx() {
  local name=$1 url hostport upstreams="" port
  port=$(free_port)
  mkdir -p "$OUT/$name-tmp"
  chmod 777 "$OUT/$name-tmp"
  for url in "${REPLICA_URLS[@]}"; do
    hostport=${url#http://}
    upstreams+="    server ${hostport%/mcp} max_fails=1 fail_timeout=10s;"$'\n'
  done
  cat >"$OUT/$name.conf" <<EOF
# The load balancer of the README's "Deploying" section, on loopback.
worker_processes 1;
daemon off;
pid $OUT_ABS/$name.pid;
error_log $OUT_ABS/$name.error.log warn;
events { worker_connections 1024; }
http {
  log_format upstream '\$request \$status upstream=\$upstream_addr';
  access_log $OUT_ABS/$name.access.log upstream;
  client_body_temp_path $OUT_ABS/$name-tmp/body;
  proxy_temp_path $OUT_ABS/$name-tmp/proxy;
  fastcgi_temp_path $OUT_ABS/$name-tmp/fastcgi;
  uwsgi_temp_path $OUT_ABS/$name-tmp/uwsgi;
  scgi_temp_path $OUT_ABS/$name-tmp/scgi;

  upstream mcp_replicas {
    # Plain round-robin: any replica serves any request.
$upstreams    keepalive 32;
  }

  server {
    listen 127.0.0.1:$port;

    location / {
      proxy_pass http://mcp_replicas;
      # HTTP/1.1 with keep-alive connections to the replicas.
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # The replicas check Host against their allow-list (DNS-rebinding defence): pass
      # the client's on.
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      # SSE: no buffering, and long reads (idle streams get keep-alive comments).
      proxy_buffering off;
      proxy_cache off;
      proxy_read_timeout 1h;
      # Retry another replica only when one cannot be reached (never a request it got).
      proxy_next_upstream error timeout;
    }
  }
}
EOF
  "$NGINX" -t -c "$OUT_ABS/$name.conf" -p "$OUT_ABS" >"$OUT/$name-check.log" 2>&1 || {
    cat "$OUT/$name-check.log" >&2
    return 1
  }
  "$NGINX" -c "$OUT_ABS/$name.conf" -p "$OUT_ABS" >"$OUT/$name.stdout.log" 2>&1 &
  NGINX_PID=$!
  STARTED_PIDS+=("$NGINX_PID")
  LB_URL="http://127.0.0.1:$port/mcp"
  wait_for "nginx" 10 port_open "$port"
  echo "nginx on $LB_URL (pid $NGINX_PID) -> ${REPLICA_URLS[*]}"
}

# no_panics <log name>: fails (saying where) when a replica of that name logged a panic.
no_panics() {
  local i clean=0
  for i in 1 2 3; do
    if grep -q "panicked" "$OUT/$1$i.stderr.log"; then
      echo "$1 $i panicked:" >&2
      grep -A3 "panicked" "$OUT/$1$i.stderr.log" >&2
      clean=1
    fi
  done
  return "$clean"
}

# The soak's replicas: sessions, tasks and sealed states expire within seconds, an
# unanswered approval is denied after 2 s, and the anonymous 2026-07-28 clients (who are
# one task owner) are not capped at the default 100 tasks kept.
SOAK_FLAGS=(--session-idle-timeout 5s --task-ttl 6s --request-state-ttl 6s
  --elicitation-timeout 2s --max-tasks-per-owner 100000 --max-tasks 100000)
# How long after the load everything of it must be gone: the longest of those, and a
# margin.
SOAK_EXPIRY_SECONDS=8

# run_soak <seconds>: three fresh replicas with SOAK_FLAGS (a Redis prefix of their own)
# behind their own nginx, and the soak test against them.
run_soak() {
  local seconds=$1 replicas="" i prefix="soak-$$" soak_status=0
  section "soak: three replicas with short timeouts, nginx in front"
  start_replicas soak-replica "$prefix" "${SOAK_FLAGS[@]}"
  start_nginx soak-nginx
  for i in 0 1 2; do
    replicas+="${REPLICA_PIDS[$i]}=${REPLICA_URLS[$i]},"
  done
  section "soak: $seconds s of load with humans in the loop, then expiry"
  SCALEOUT_URL=$LB_URL SCALEOUT_REPLICAS=${replicas%,} SOAK_SECONDS=$seconds \
    SOAK_REDIS_URL=$REDIS_URL SOAK_REDIS_PREFIX=$prefix \
    SOAK_EXPIRY_SECONDS=$SOAK_EXPIRY_SECONDS SOAK_OUT=$OUT_ABS \
    SOAK_EVERYTHING=$PWD/target/release/everything SOAK_STDIO_ARGS="${SOAK_FLAGS[*]}" \
    cargo test --quiet -p mcp-tests --test soak_cluster -- --ignored --nocapture ||
    soak_status=1
  for i in 0 1 2; do
    kill -0 "${REPLICA_PIDS[$i]}" 2>/dev/null || {
      echo "soak replica $((i + 1)) died" >&2
      soak_status=1
    }
  done
  no_panics soak-replica || soak_status=1
  if [ "${SOAK_PLOT:-0}" = 1 ]; then
    (cd bench && cargo run --quiet --release -p bench-plot --bin growth-plot -- \
      --rss "$OUT_ABS/soak-rss.csv" "$OUT_ABS/soak-rss.png") || soak_status=1
  fi
  return "$soak_status"
}

section "scale-out: start Redis on loopback"
REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
  --daemonize no --loglevel warning >"$OUT/redis.log" 2>&1 &
REDIS_PID=$!
wait_for "redis-server" 10 redis-cli -p "$REDIS_PORT" ping
REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
echo "redis on $REDIS_URL (pid $REDIS_PID)"

section "scale-out: build everything (release)"
cargo build --release --quiet -p mcp-examples --bin everything
# The key every replica seals requestState with: random for this run, given to all.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$OUT/state.key"
chmod 600 "$OUT/state.key"

if [ "$MODE" = soak ]; then
  status=0
  run_soak "${SOAK_SECONDS:-60}" || status=1
  cleanup
  trap - EXIT
  echo "the soak took $((SECONDS - started_all)) s; its figures: $OUT/soak-summary.md"
  [ "$status" -eq 0 ] || echo "soak FAILED: see above and $OUT/" >&2
  exit "$status"
fi

section "scale-out: the Redis-backed tests (MCP_REQUIRE_REDIS=1)"
if [ "${SCALEOUT_TESTS_RAN:-0}" = 1 ]; then
  # .ci/run's `cargo test --workspace` ran them with MCP_REQUIRE_REDIS=1 already.
  echo "already run by the workspace's tests"
else
  # lb_faults runs replicas of the (debug) everything binary behind an nginx of its own.
  cargo build --quiet -p mcp-examples --bin everything
  MCP_REQUIRE_REDIS=1 cargo test --quiet -p mcp-tests --test scaleout --test redis_faults \
    --test lb_faults
fi

section "scale-out: install the conformance suite"
install_conformance_suite

section "scale-out: three replicas of everything sharing Redis and one state key"
start_replicas replica "scaleout-$$"
# Without a shared key, --redis-url is refused (and says why).
if target/release/everything --transport http --bind 127.0.0.1:0 \
  --redis-url "$REDIS_URL" >"$OUT/nokey.log" 2>&1; then
  echo "a replica without a state key started" >&2
  exit 1
fi
grep -q "same key" "$OUT/nokey.log" || {
  echo "the refusal does not say why:" >&2
  cat "$OUT/nokey.log" >&2
  exit 1
}
echo "without a shared key a replica refuses to start: $(head -c 160 "$OUT/nokey.log")..."

section "scale-out: nginx in front (round-robin, no sticky sessions)"
start_nginx nginx

status=0
for rev in 2025-11-25 2026-07-28; do
  section "scale-out: conformance through nginx, server --requirements $rev"
  conformance_revision "$LB_URL" "$rev" "$OUT" required || status=1
done
# Every replica served part of the run.
echo "requests through nginx: $(wc -l <"$OUT/nginx.access.log")"
for i in 1 2 3; do
  hostport=${REPLICA_URLS[$((i - 1))]#http://}
  hostport=${hostport%/mcp}
  served=$(grep -c "upstream=$hostport" "$OUT/nginx.access.log" || true)
  echo "  replica $i ($hostport) served $served"
  if [ "$served" -eq 0 ]; then
    echo "replica $i served nothing: nginx is not balancing" >&2
    status=1
  fi
done

section "scale-out: kill a replica mid-session"
replicas=""
for i in 0 1 2; do
  replicas+="${REPLICA_PIDS[$i]}=${REPLICA_URLS[$i]},"
done
SCALEOUT_URL=$LB_URL SCALEOUT_REPLICAS=${replicas%,} \
  cargo test --quiet -p mcp-tests --test scaleout live_replica_killed_mid_session -- \
  --ignored --nocapture || status=1
if kill -0 "${REPLICA_PIDS[0]}" 2>/dev/null; then
  echo "the first replica should have been killed" >&2
  status=1
fi
for i in 1 2; do
  kill -0 "${REPLICA_PIDS[$i]}" 2>/dev/null || {
    echo "replica $((i + 1)) died" >&2
    status=1
  }
done
# Stop them (and their nginx) before the soak: it measures its own replicas.
for pid in "${REPLICA_PIDS[@]:1}" "$NGINX_PID"; do
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done
no_panics replica || status=1

run_soak "${SOAK_SECONDS:-25}" || status=1

cleanup
trap - EXIT

section "scale-out: summary"
cat "$OUT"/*.summary | grep '^conformance ' | sed 's/^/through nginx, 3 replicas: /'
[ -f "$OUT/soak-summary.md" ] && sed -n '1p' "$OUT/soak-summary.md"
echo "scale-out took $((SECONDS - started_all)) s"
if [ "$status" -ne 0 ]; then
  echo "scale-out FAILED: see above and $OUT/" >&2
fi
exit "$status"
