# shellcheck shell=bash
# Sourced by the suites that run against a live `sovereign serve`
# (scripts/sdk-test.sh, tests/console/test.sh):
#
#   . scripts/test-server.sh
#   start_server NAME [VAR=value ...]
#
# start_server builds $BIN when it is missing, then starts it on a free
# loopback port with a fresh temporary data dir, the models of $MODELS_DIR,
# a freshly generated bootstrap admin key and deterministic decoding (a
# greedy request answers the same whatever runs beside it), plus the extra
# VAR=value settings; it retries on another port if one was taken in
# between, and stops the server and removes the dir on exit. It sets
# TS_PORT, TS_KEY (the admin key), TS_WORK (the temp dir) and TS_LOG (the
# server's log). The caller defines REPO, BIN, MODELS_DIR, log and die.

TS_WORK="" TS_PORT="" TS_KEY="" TS_LOG="" TS_PID=""

ts_cleanup() {
  if [ -n "$TS_PID" ] && kill -0 "$TS_PID" 2>/dev/null; then
    kill -TERM "$TS_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$TS_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$TS_PID" 2>/dev/null || true
    wait "$TS_PID" 2>/dev/null || true
  fi
  [ -z "$TS_WORK" ] || rm -rf "$TS_WORK"
}

# ts_show prints the end of the server's log (on failures).
ts_show() { [ -f "$TS_LOG" ] && tail -n 40 "$TS_LOG" >&2 || true; }

start_server() {
  local name=$1 port attempt
  shift
  if [ ! -x "$BIN" ]; then
    log "building $BIN (make build)"
    make -C "$REPO" build
  fi
  [ -x "$BIN" ] || die "server binary $BIN not found"
  TS_WORK="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-$name.XXXXXX")"
  TS_LOG="$TS_WORK/server.log"
  trap ts_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  TS_KEY="$(python3 -c 'import secrets, string; a = string.ascii_letters + string.digits; print("sk-sov-" + "".join(secrets.choice(a) for _ in range(40)))')"
  for attempt in 1 2 3; do
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
    rm -rf "$TS_WORK/data"
    mkdir -p "$TS_WORK/data"
    log "starting $BIN serve on 127.0.0.1:$port (models: $MODELS_DIR, data: $TS_WORK/data)"
    env -u SOVEREIGN_DATABASE_URL -u SOVEREIGN_TLS_CERT -u SOVEREIGN_TLS_KEY -u SOVEREIGN_CONFIG -u SOVEREIGN_REDIS_URL \
      SOVEREIGN_ADDR="127.0.0.1:$port" \
      SOVEREIGN_DATA_DIR="$TS_WORK/data" \
      SOVEREIGN_MODELS_DIR="$MODELS_DIR" \
      SOVEREIGN_BOOTSTRAP_KEY="$TS_KEY" \
      SOVEREIGN_DETERMINISTIC=true \
      "$@" \
      "$BIN" serve >"$TS_LOG" 2>&1 </dev/null &
    TS_PID=$!
    for _ in $(seq 1 600); do
      kill -0 "$TS_PID" 2>/dev/null || break
      if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz" 2>/dev/null; then
        TS_PORT="$port"
        break
      fi
      sleep 0.2
    done
    [ -n "$TS_PORT" ] && break
    log "server did not become healthy (attempt $attempt); its log:"
    ts_show
    kill -KILL "$TS_PID" 2>/dev/null || true
    wait "$TS_PID" 2>/dev/null || true
    TS_PID=""
  done
  [ -n "$TS_PORT" ] || die "could not start the server"
  log "server ready on 127.0.0.1:$TS_PORT"
}
