#!/usr/bin/env bash
# bench/answers/run.sh: is an answer with sources worth having? Sovereign's
# POST /v1/completions with citations against a baseline, llama.cpp's own
# llama-server (built as bench/engine builds it) with the same GGUF, the
# same retrieved chunks and the classic "cite [n] after each sentence"
# prompt, on the labelled set in bench/answers/testdata. Both servers run
# side by side on loopback; the questions are asked one at a time.
#
#   bash bench/answers/run.sh            # or: make bench-answers
#
# Environment (all optional):
#   SOVEREIGN_MODELS_DIR  model store (default: ./data/models; read only): the chat model
#                         and all-minilm-l6-v2
#   SOVEREIGN_BIN         Sovereign binary (default: bin/sovereign)
#   BENCH_MODEL           chat model id or alias on Sovereign (default: default)
#   BENCH_GGUF            GGUF for llama-server (default: <models dir>/<model>/model.gguf, or
#                         the model whose manifest lists BENCH_MODEL as an alias)
#   BENCH_THREADS         threads of each server (default: nproc)
#   BENCH_SLOTS           parallel sequences of each server (default: 4, Sovereign's default)
#   BENCH_CTX             context tokens per sequence (default: 4096, Sovereign's default)
#   BENCH_BASELINE        0: Sovereign alone, no llama-server (default: 1)
#   BENCH_OUT             tables, detail and logs (default: bench/out)
#   BENCH_ARGS            extra flags, e.g. "-limit 10"; go run ./bench/answers -h lists them
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

MODELS_DIR="${SOVEREIGN_MODELS_DIR:-./data/models}"
SOVEREIGN_BIN="${SOVEREIGN_BIN:-bin/sovereign}"
MODEL_ID="${BENCH_MODEL:-default}"
GGUF="${BENCH_GGUF:-}"
THREADS="${BENCH_THREADS:-$(nproc)}"
SLOTS="${BENCH_SLOTS:-4}"
CTX="${BENCH_CTX:-4096}"
BASELINE="${BENCH_BASELINE:-1}"
OUT="${BENCH_OUT:-bench/out}"
read -r -a EXTRA_ARGS <<<"${BENCH_ARGS:-}"

die() {
	echo "bench: $*" >&2
	exit 1
}
log() { echo "bench: $*" >&2; }

command -v go >/dev/null || die "go is not on PATH"
[[ -x "$SOVEREIGN_BIN" ]] || die "$SOVEREIGN_BIN not found: build it first (make build), or set SOVEREIGN_BIN"
[[ -f "$MODELS_DIR/all-minilm-l6-v2/model.gguf" ]] || die "all-minilm-l6-v2 not found in $MODELS_DIR: fetch it first (make models), or set SOVEREIGN_MODELS_DIR"
mkdir -p "$OUT"

# llama-server: bench/engine/run.sh's own build function (the same source,
# flags and cache under bench/.peers), read out of that script so that
# there is one recipe.
LLAMA_SERVER=""
if [[ "$BASELINE" == 1 ]]; then
	fn=$(sed -n '/^build_llama_server() {$/,/^}$/p' bench/engine/run.sh)
	[[ -n "$fn" ]] || die "bench/engine/run.sh has no build_llama_server function to build the baseline with"
	eval "$fn"
	build_llama_server
	LLAMA_SERVER="$(cd "$(dirname "$LLAMA_SERVER")" && pwd)/$(basename "$LLAMA_SERVER")"
fi

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
		log "WARNING: the CPUs were ${busy}% busy before the run: other work will skew the times"
	fi
}

go build -o "$OUT/answers-bench" ./bench/answers
check_load
args=(-bin "$SOVEREIGN_BIN" -models-dir "$MODELS_DIR" -model "$MODEL_ID" -threads "$THREADS" -slots "$SLOTS" -ctx "$CTX"
	-out "$OUT" -llama-server "$LLAMA_SERVER")
[[ -z "$GGUF" ]] || args+=(-gguf "$GGUF")
log "answers benchmark: 103 questions of each pipeline, one at a time: about 20 minutes on a quiet 2-core machine, over an hour on a busy one"
"$OUT/answers-bench" "${args[@]}" "${EXTRA_ARGS[@]}"
