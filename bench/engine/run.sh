#!/usr/bin/env bash
# bench/engine/run.sh: Sovereign vs llama-cpp-python's OpenAI server on the
# same GGUF, the same thread count and the same load, one server at a time.
#
#   bench/engine/run.sh            # or: make bench
#
# Environment (all optional):
#   BENCH_THREADS        threads for both servers (default: nproc)
#   BENCH_MODEL          model id (default: gemma3-270m)
#   SOVEREIGN_MODELS_DIR Sovereign's model store (default: ./data/models)
#   BENCH_GGUF           GGUF for the peer (default: <models dir>/<model>/model.gguf)
#   SOVEREIGN_BIN        Sovereign binary (default: bin/sovereign)
#   BENCH_SLOTS          SOVEREIGN_SLOTS (default: 8)
#   BENCH_OURS_PORT      Sovereign's port on 127.0.0.1 (default: 18090)
#   BENCH_PEER_PORT      the peer's port on 127.0.0.1 (default: 18091)
#   BENCH_OUT            results and logs (default: bench/out)
#   BENCH_PEER_VERSION   llama-cpp-python version to build (default: 0.3.36)
#   BENCH_READY_TIMEOUT  seconds to wait for a server to answer (default: 180)
#   BENCH_API_KEY        bearer token to send (default: none)
#   BENCH_ONLY           both | ours | peer (default: both; one side prints no ratios)
#   BENCH_ARGS           extra flags for the load generator, e.g. "-rounds 3"
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

THREADS="${BENCH_THREADS:-$(nproc)}"
MODEL_ID="${BENCH_MODEL:-gemma3-270m}"
MODELS_DIR="${SOVEREIGN_MODELS_DIR:-./data/models}"
GGUF="${BENCH_GGUF:-$MODELS_DIR/$MODEL_ID/model.gguf}"
SOVEREIGN_BIN="${SOVEREIGN_BIN:-bin/sovereign}"
SLOTS="${BENCH_SLOTS:-8}"
OURS_PORT="${BENCH_OURS_PORT:-18090}"
PEER_PORT="${BENCH_PEER_PORT:-18091}"
OUT="${BENCH_OUT:-bench/out}"
PEER_VERSION="${BENCH_PEER_VERSION:-0.3.36}"
READY_TIMEOUT="${BENCH_READY_TIMEOUT:-180}"
API_KEY="${BENCH_API_KEY:-}"
ONLY="${BENCH_ONLY:-both}"
read -r -a EXTRA_ARGS <<<"${BENCH_ARGS:-}"
VENV="bench/.venv"

OURS_LABEL="sovereign"
PEER_LABEL="llama-cpp-python"

die() {
	echo "bench: $*" >&2
	exit 1
}
log() { echo "bench: $*" >&2; }

case "$ONLY" in both | ours | peer) ;; *) die "BENCH_ONLY must be both, ours or peer" ;; esac
[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || die "BENCH_THREADS must be a positive integer"
command -v go >/dev/null || die "go is not on PATH"
command -v curl >/dev/null || die "curl is not on PATH"
[[ -f "$GGUF" ]] || die "model file $GGUF not found: fetch it first (make models, or bin/sovereign models pull --defaults), or set SOVEREIGN_MODELS_DIR / BENCH_GGUF"
GGUF="$(cd "$(dirname "$GGUF")" && pwd)/$(basename "$GGUF")"
if [[ "$ONLY" != peer && ! -x "$SOVEREIGN_BIN" ]]; then
	die "$SOVEREIGN_BIN not found: build it first (make build)"
fi
mkdir -p "$OUT"

# --- (a) the peer: llama-cpp-python[server], built from source with native flags
peer_installed() {
	[[ -x "$VENV/bin/python" ]] &&
		"$VENV/bin/python" -c 'import llama_cpp.server.app, uvicorn, sse_starlette' >/dev/null 2>&1
}
if [[ "$ONLY" != ours ]] && ! peer_installed; then
	[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
	log "building llama-cpp-python $PEER_VERSION from source with -DGGML_NATIVE=ON (compiles llama.cpp: 10+ minutes on 2 cores); log: $OUT/peer-install.log"
	if ! CMAKE_ARGS="-DGGML_NATIVE=ON -DCMAKE_BUILD_TYPE=Release" \
		"$VENV/bin/pip" install --no-binary llama-cpp-python "llama-cpp-python[server]==$PEER_VERSION" \
		>"$OUT/peer-install.log" 2>&1; then
		tail -n 30 "$OUT/peer-install.log" >&2
		die "installing llama-cpp-python failed (full log: $OUT/peer-install.log)"
	fi
	peer_installed || die "llama-cpp-python installed but llama_cpp.server does not import"
fi

# --- the load generator
GEN="$OUT/engine-bench"
go build -o "$GEN" ./bench/engine

# --- servers: started one at a time, each stopped before the next starts
SERVER_PID=""
stop_server() {
	[[ -n "$SERVER_PID" ]] || return 0
	local pid="$SERVER_PID"
	SERVER_PID=""
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

auth=()
[[ -z "$API_KEY" ]] || auth=(-H "Authorization: Bearer $API_KEY")

wait_ready() { # url logfile
	local url="$1" logfile="$2" deadline=$((SECONDS + READY_TIMEOUT))
	until curl -fsS -o /dev/null --max-time 5 "${auth[@]}" "$url/v1/models" 2>/dev/null; do
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			tail -n 30 "$logfile" >&2
			die "server exited before it was ready (log: $logfile)"
		fi
		if ((SECONDS > deadline)); then
			tail -n 30 "$logfile" >&2
			die "server not ready after ${READY_TIMEOUT}s (log: $logfile)"
		fi
		sleep 0.5
	done
}

# check_load warns when other processes keep the CPUs busy (measured over one
# second from /proc/stat, since the load average lags by minutes).
check_load() {
	local a b busy
	read -r -a a < <(grep '^cpu ' /proc/stat)
	sleep 1
	read -r -a b < <(grep '^cpu ' /proc/stat)
	busy=$(awk -v u1="$((a[1] + a[2] + a[3] + a[6] + a[7]))" -v t1="$((a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7]))" \
		-v u2="$((b[1] + b[2] + b[3] + b[6] + b[7]))" -v t2="$((b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + b[7]))" \
		'BEGIN { d = t2 - t1; printf "%d", (d > 0 ? 100 * (u2 - u1) / d : 0) }')
	if ((busy > 20)); then
		log "WARNING: the CPUs were ${busy}% busy before the run: other work will skew the numbers"
	fi
}

bench_one() { # label port logfile -- server command...
	local label="$1" port="$2" logfile="$3"
	shift 4
	port_free "$port" || die "port $port on 127.0.0.1 is already in use"
	check_load
	log "starting $label on 127.0.0.1:$port (threads $THREADS)"
	"$@" >"$logfile" 2>&1 &
	SERVER_PID=$!
	wait_ready "http://127.0.0.1:$port" "$logfile"
	log "$label is ready; measuring"
	"$GEN" -base-url "http://127.0.0.1:$port" -model "$MODEL_ID" -api-key "$API_KEY" \
		-label "$label" -threads "$THREADS" -json-out "$OUT/$label.json" "${EXTRA_ARGS[@]}"
	stop_server
}

if [[ "$ONLY" != peer ]]; then
	bench_one "$OURS_LABEL" "$OURS_PORT" "$OUT/$OURS_LABEL.log" -- \
		env SOVEREIGN_ADDR="127.0.0.1:$OURS_PORT" SOVEREIGN_MODELS_DIR="$MODELS_DIR" \
		SOVEREIGN_THREADS="$THREADS" SOVEREIGN_SLOTS="$SLOTS" \
		"$SOVEREIGN_BIN" serve
fi
# --interrupt_requests False: by default llama-cpp-python's server ends the
# stream in progress whenever another request arrives, which would cut the
# concurrent streams short; with it off, requests queue and each runs to the end.
if [[ "$ONLY" != ours ]]; then
	bench_one "$PEER_LABEL" "$PEER_PORT" "$OUT/$PEER_LABEL.log" -- \
		"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" \
		--n_threads "$THREADS" --n_threads_batch "$THREADS" --n_ctx 4096 \
		--host 127.0.0.1 --port "$PEER_PORT" --model_alias "$MODEL_ID" \
		--interrupt_requests False
fi

# --- (d) the table with ratios and PASS/FAIL
if [[ "$ONLY" == both ]]; then
	"$GEN" -compare "$OUT/$OURS_LABEL.json,$OUT/$PEER_LABEL.json"
fi
