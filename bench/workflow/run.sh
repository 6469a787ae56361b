#!/usr/bin/env bash
# The workflow engine's overhead (bench/README.md, "Workflow engine"): starts
# bin/sovereign serve on a fresh SQLite data directory (no models needed:
# transform steps call nothing), runs bench/workflow against it and prints
# the table. Needs bin/sovereign (make build).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${SOVEREIGN_BIN:-$PWD/bin/sovereign}"
[[ -x "$BIN" ]] || { echo "workflow bench: $BIN is missing; run make build" >&2; exit 1; }
PORT="${BENCH_WORKFLOW_PORT:-18300}"
DIR="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-wfbench-XXXXXXXX")"
KEY="sk-sov-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$DIR/models"
SOVEREIGN_ADDR="127.0.0.1:$PORT" SOVEREIGN_DATA_DIR="$DIR" SOVEREIGN_MODELS_DIR="$DIR/models" SOVEREIGN_BOOTSTRAP_KEY="$KEY" \
	"$BIN" serve >"$DIR/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "workflow bench: the server did not start:" >&2; tail -20 "$DIR/server.log" >&2; exit 1; }
go run ./bench/workflow -url "http://127.0.0.1:$PORT" -key "$KEY" "$@"
