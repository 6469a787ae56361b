#!/usr/bin/env bash
# bench/batch/run.sh: the Batch API benchmark (issue 14). Starts `sovereign
# serve` with the default chat model and measures, in one run: interactive
# TTFT on the idle server, the engine's aggregate decode rate at full slots
# (direct requests), then a 200-line batch of the same requests with
# interactive requests sent during it. Prints a table and a RESULT line;
# exits 1 when a target is missed (batch ≥ 90 % of the full-slot rate; TTFT
# p50 during the batch ≤ 1.5× idle). Not part of `make test`.
#
#   bash bench/batch/run.sh
#
# Environment (all optional):
#   BENCH_THREADS        runner threads (default: nproc)
#   BENCH_SLOTS          slots per model (default: 4)
#   BENCH_CTX            context tokens per slot (default: 2048)
#   BENCH_MODEL          chat model (default: gemma3-270m)
#   SOVEREIGN_MODELS_DIR models (default: ./data/models)
#   SOVEREIGN_BIN        server binary (default: bin/sovereign)
#   BENCH_PORT           loopback port (default: 18095)
#   BENCH_OUT            logs (default: bench/out)
#   BENCH_ARGS           extra flags for the load generator, e.g. "-lines 400 -max-tokens 128"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

THREADS="${BENCH_THREADS:-$(nproc)}"
SLOTS="${BENCH_SLOTS:-4}"
CTX="${BENCH_CTX:-2048}"
MODEL_ID="${BENCH_MODEL:-gemma3-270m}"
MODELS_DIR="${SOVEREIGN_MODELS_DIR:-./data/models}"
SOVEREIGN_BIN="${SOVEREIGN_BIN:-bin/sovereign}"
PORT="${BENCH_PORT:-18095}"
OUT="${BENCH_OUT:-bench/out}"
read -r -a EXTRA_ARGS <<<"${BENCH_ARGS:-}"
API_KEY="sk-sov-bench-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"

die() {
	echo "bench: $*" >&2
	exit 1
}
log() { echo "bench: $*" >&2; }

[[ -x "$SOVEREIGN_BIN" ]] || die "no server binary at $SOVEREIGN_BIN (make build)"
[[ -d "$MODELS_DIR/$MODEL_ID" ]] || die "model $MODEL_ID not found in $MODELS_DIR (make models)"
(! (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null) || die "port $PORT on 127.0.0.1 is already in use"
mkdir -p "$OUT"

GEN="$OUT/batch-bench"
go build -o "$GEN" ./bench/batch

DATA=$(mktemp -d "${TMPDIR:-/tmp}/sovereign-batch-bench-XXXXXX")
SERVER_PID=""
cleanup() {
	if [[ -n "$SERVER_PID" ]]; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$DATA"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LOGFILE="$OUT/batch-server.log"
log "starting sovereign on 127.0.0.1:$PORT (threads $THREADS, slots $SLOTS, ctx $CTX, model $MODEL_ID)"
env -u SOVEREIGN_DATABASE_URL -u SOVEREIGN_CONFIG SOVEREIGN_ADDR="127.0.0.1:$PORT" SOVEREIGN_DATA_DIR="$DATA" \
	SOVEREIGN_MODELS_DIR="$MODELS_DIR" SOVEREIGN_BOOTSTRAP_KEY="$API_KEY" SOVEREIGN_THREADS="$THREADS" \
	SOVEREIGN_SLOTS="$SLOTS" SOVEREIGN_CTX="$CTX" SOVEREIGN_LOG_LEVEL=warn "$SOVEREIGN_BIN" serve >"$LOGFILE" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 600); do
	curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/readyz" 2>/dev/null && break
	kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 30 "$LOGFILE" >&2; die "the server exited (log: $LOGFILE)"; }
	sleep 0.2
done
log "server ready; measuring"
"$GEN" -base-url "http://127.0.0.1:$PORT" -api-key "$API_KEY" -model "$MODEL_ID" -slots "$SLOTS" -server-pid "$SERVER_PID" "${EXTRA_ARGS[@]}"
