#!/usr/bin/env bash
# bench/engine/run.sh: Sovereign against llama.cpp's own llama-server (and,
# when asked, llama-cpp-python's server) on the same GGUF, the same threads,
# the same slots and the same load, one server at a time, in rounds that
# alternate which server goes first. Then Sovereign once more in
# deterministic mode, to show what that costs.
#
#   bench/engine/run.sh            # or: make bench
#
# Environment (all optional):
#   BENCH_THREADS        threads for every server (default: nproc)
#   BENCH_MODEL          model id (default: gemma3-270m; qwen2.5-coder-0.5b-instruct is the default chat model)
#   BENCH_BAN_TOKENS     token ids banned so generations run to max_tokens (default: the model's end tokens,
#                        known for gemma3-270m and qwen2.5-coder-0.5b-instruct)
#   SOVEREIGN_MODELS_DIR Sovereign's model store (default: ./data/models)
#   BENCH_GGUF           GGUF for the peers (default: <models dir>/<model>/model.gguf)
#   SOVEREIGN_BIN        Sovereign binary (default: bin/sovereign)
#   BENCH_SLOTS          parallel sequences of every server (default: 8)
#   BENCH_CTX            context tokens per slot (default: 4096)
#   BENCH_ROUNDS         rounds; each measures every server once (default: 2)
#   BENCH_PEERS          comma-separated: llama-server, llama-cpp-python, native (default: llama-server);
#                        native is Sovereign itself built with MARCH=native (all kernels for this CPU
#                        linked in), to compare the portable build against: make bench-portable
#   BENCH_COMPARE_ARGS   extra flags for the compare step (other targets: make bench-portable sets 0.97x)
#   BENCH_DETERMINISTIC  1: also measure Sovereign with SOVEREIGN_DETERMINISTIC=true (default: 1)
#   BENCH_PORT           first of the loopback ports used (default: 18090)
#   BENCH_OUT            results and logs (default: bench/out)
#   BENCH_PEER_VERSION   llama-cpp-python version to build (default: 0.3.36)
#   BENCH_READY_TIMEOUT  seconds to wait for a server to answer (default: 180)
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
CTX="${BENCH_CTX:-4096}"
ROUNDS="${BENCH_ROUNDS:-2}"
PEERS="${BENCH_PEERS:-llama-server}"
DETERMINISTIC="${BENCH_DETERMINISTIC:-1}"
PORT="${BENCH_PORT:-18090}"
OUT="${BENCH_OUT:-bench/out}"
PEER_VERSION="${BENCH_PEER_VERSION:-0.3.36}"
READY_TIMEOUT="${BENCH_READY_TIMEOUT:-180}"
read -r -a EXTRA_ARGS <<<"${BENCH_ARGS:-}"
if [[ -z "${BENCH_BAN_TOKENS+x}" ]]; then
	case "$MODEL_ID" in
	gemma3-270m) BENCH_BAN_TOKENS=1,106 ;;                                # <eos>, <end_of_turn>
	qwen2.5-coder-0.5b-instruct) BENCH_BAN_TOKENS=151643,151645 ;;        # <|endoftext|>, <|im_end|>
	*) echo "bench: set BENCH_BAN_TOKENS to $MODEL_ID's end-token ids (or empty)" >&2 && exit 1 ;;
	esac
fi
VENV="bench/.venv"
API_KEY="sk-sov-bench-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"

die() {
	echo "bench: $*" >&2
	exit 1
}
log() { echo "bench: $*" >&2; }

[[ "$THREADS" =~ ^[1-9][0-9]*$ ]] || die "BENCH_THREADS must be a positive integer"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "BENCH_ROUNDS must be a positive integer"
IFS=, read -r -a PEER_LIST <<<"$PEERS"
for p in "${PEER_LIST[@]}"; do
	case "$p" in llama-server | llama-cpp-python | native) ;; *) die "BENCH_PEERS: unknown peer $p (llama-server, llama-cpp-python, native)" ;; esac
done
command -v go >/dev/null || die "go is not on PATH"
command -v curl >/dev/null || die "curl is not on PATH"
[[ -f "$GGUF" ]] || die "model file $GGUF not found: fetch it first (make models), or set SOVEREIGN_MODELS_DIR / BENCH_GGUF"
GGUF="$(cd "$(dirname "$GGUF")" && pwd)/$(basename "$GGUF")"
[[ -x "$SOVEREIGN_BIN" ]] || die "$SOVEREIGN_BIN not found: build it first (make build)"
mkdir -p "$OUT"

# --- the peers, built from source with native flags, once

# llama-server: from the same llama.cpp source the runner links
# (scripts/llama-cpp.sh), with llama.cpp's default CMake build (OpenMP on)
# and the flags its README gives for a CPU build.
LLAMA_SERVER=""
build_llama_server() {
	local src dir
	src=$(bash scripts/llama-cpp.sh source)
	dir="bench/.peers/llama-server-$(basename "$(dirname "$src")")"
	LLAMA_SERVER="$dir/bin/llama-server"
	[[ -x "$LLAMA_SERVER" ]] && return 0
	command -v cmake >/dev/null || die "cmake is not installed"
	log "building llama-server from $src with -DGGML_NATIVE=ON (about 6 minutes on 2 cores, once); log: $OUT/llama-server-build.log"
	if ! { cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
		-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF && cmake --build "$dir" --target llama-server; } >"$OUT/llama-server-build.log" 2>&1; then
		tail -n 30 "$OUT/llama-server-build.log" >&2
		die "building llama-server failed (log: $OUT/llama-server-build.log)"
	fi
	[[ -x "$LLAMA_SERVER" ]] || die "the build produced no $LLAMA_SERVER"
}

# llama-cpp-python's server: serves one request at a time; slow to build.
build_llama_cpp_python() {
	if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import llama_cpp.server.app, uvicorn, sse_starlette' >/dev/null 2>&1; then
		return 0
	fi
	[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
	log "building llama-cpp-python $PEER_VERSION from source with -DGGML_NATIVE=ON (10+ minutes on 2 cores, once); log: $OUT/llama-cpp-python-install.log"
	if ! CMAKE_ARGS="-DGGML_NATIVE=ON -DCMAKE_BUILD_TYPE=Release" \
		"$VENV/bin/pip" install --no-binary llama-cpp-python "llama-cpp-python[server]==$PEER_VERSION" \
		>"$OUT/llama-cpp-python-install.log" 2>&1; then
		tail -n 30 "$OUT/llama-cpp-python-install.log" >&2
		die "installing llama-cpp-python failed (log: $OUT/llama-cpp-python-install.log)"
	fi
}

# Sovereign built for this CPU only (MARCH=native: llama.cpp static, every
# kernel compiled for this machine), the build the portable one must keep
# up with (issue 28: within 3%).
NATIVE_BIN="bench/.peers/sovereign-native"
build_native() {
	log "building Sovereign with MARCH=native into $NATIVE_BIN"
	make -s build MARCH=native BIN="$NATIVE_BIN" >"$OUT/native-build.log" 2>&1 ||
		{ tail -n 30 "$OUT/native-build.log" >&2; die "building the native Sovereign failed (log: $OUT/native-build.log)"; }
}

for p in "${PEER_LIST[@]}"; do
	case "$p" in
	llama-server) build_llama_server ;;
	llama-cpp-python) build_llama_cpp_python ;;
	native) build_native ;;
	esac
done
read -r -a COMPARE_ARGS <<<"${BENCH_COMPARE_ARGS:-}"
log "Sovereign under test: $SOVEREIGN_BIN ($("$SOVEREIGN_BIN" version | tr '\n' ' '))"

# --- the load generator
GEN="$OUT/engine-bench"
go build -o "$GEN" ./bench/engine

# --- servers: one at a time, each stopped before the next starts
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
DATA=""
cleanup() {
	stop_server
	[[ -z "$DATA" ]] || rm -rf "$DATA"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_ready() { # url logfile [key]
	local url="$1" logfile="$2" key="${3:-}" deadline=$((SECONDS + READY_TIMEOUT))
	local auth=()
	[[ -z "$key" ]] || auth=(-H "Authorization: Bearer $key")
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

# measure LABEL JSON KEY -- server command...: start the server on $PORT,
# run the load generator against it, stop it.
measure() {
	local label="$1" json="$2" key="$3" logfile="$OUT/$1.log"
	shift 4
	port_free "$PORT" || die "port $PORT on 127.0.0.1 is already in use"
	check_load
	log "starting $label on 127.0.0.1:$PORT (threads $THREADS, slots $SLOTS)"
	"$@" >"$logfile" 2>&1 &
	SERVER_PID=$!
	wait_ready "http://127.0.0.1:$PORT" "$logfile" "$key"
	log "$label is ready; measuring"
	"$GEN" -base-url "http://127.0.0.1:$PORT" -model "$MODEL_ID" -api-key "$key" \
		-label "$label" -threads "$THREADS" -json-out "$json" -ban-tokens "$BENCH_BAN_TOKENS" "${EXTRA_ARGS[@]}"
	stop_server
}

run_sovereign() { # label json [deterministic [binary]]
	rm -rf "$DATA"
	DATA=$(mktemp -d "${TMPDIR:-/tmp}/sovereign-bench-XXXXXX")
	measure "$1" "$2" "$API_KEY" -- \
		env SOVEREIGN_ADDR="127.0.0.1:$PORT" SOVEREIGN_DATA_DIR="$DATA" SOVEREIGN_MODELS_DIR="$MODELS_DIR" \
		SOVEREIGN_BOOTSTRAP_KEY="$API_KEY" SOVEREIGN_THREADS="$THREADS" SOVEREIGN_SLOTS="$SLOTS" SOVEREIGN_CTX="$CTX" \
		SOVEREIGN_DETERMINISTIC="${3:-false}" SOVEREIGN_LOG_LEVEL=warn "${4:-$SOVEREIGN_BIN}" serve
}

run_peer() { # name label json
	case "$1" in
	llama-server)
		# -np slots, -c slots x ctx: the same 4,096 tokens per slot as ours.
		measure "$2" "$3" "" -- "$LLAMA_SERVER" -m "$GGUF" -t "$THREADS" -tb "$THREADS" -np "$SLOTS" \
			-c $((SLOTS * CTX)) --host 127.0.0.1 --port "$PORT" -a "$MODEL_ID"
		;;
	llama-cpp-python)
		# --interrupt_requests False: by default llama-cpp-python's server ends
		# the stream in progress whenever another request arrives.
		measure "$2" "$3" "" -- "$VENV/bin/python" -m llama_cpp.server --model "$GGUF" \
			--n_threads "$THREADS" --n_threads_batch "$THREADS" --n_ctx "$CTX" \
			--host 127.0.0.1 --port "$PORT" --model_alias "$MODEL_ID" --interrupt_requests False
		;;
	native) run_sovereign "$2" "$3" false "$NATIVE_BIN" ;;
	esac
}

ours_files=()
declare -A peer_files
for r in $(seq 1 "$ROUNDS"); do
	# Odd rounds start with Sovereign, even rounds with the peers.
	if ((r % 2 == 1)); then
		run_sovereign "sovereign-r$r" "$OUT/sovereign-r$r.json"
	fi
	for p in "${PEER_LIST[@]}"; do
		run_peer "$p" "$p-r$r" "$OUT/$p-r$r.json"
		peer_files[$p]="${peer_files[$p]:+${peer_files[$p]},}$OUT/$p-r$r.json"
	done
	if ((r % 2 == 0)); then
		run_sovereign "sovereign-r$r" "$OUT/sovereign-r$r.json"
	fi
	ours_files+=("$OUT/sovereign-r$r.json")
done
extra=()
if [[ "$DETERMINISTIC" == 1 ]]; then
	run_sovereign "sovereign-deterministic" "$OUT/sovereign-deterministic.json" true
	extra=(-extra "deterministic=$OUT/sovereign-deterministic.json")
fi

# --- the table with ratios and PASS/FAIL (exit 1 on FAIL)
peer_args=()
for p in "${PEER_LIST[@]}"; do peer_args+=(-peer "$p=${peer_files[$p]}"); done
"$GEN" -compare -ours "$(
	IFS=,
	echo "${ours_files[*]}"
)" "${peer_args[@]}" "${extra[@]}" "${COMPARE_ARGS[@]}" | tee "$OUT/engine-compare.txt"
