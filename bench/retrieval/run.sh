#!/usr/bin/env bash
# bench/retrieval/run.sh: ingestion speed, search latency at 10k and 100k
# chunks, recall@10 of the HNSW index against exact search, and retrieval
# quality (recall@5, MRR) for vector, keyword, hybrid and hybrid+rerank, run
# in-process over sources.Service, the SQLite store (in a temp dir) and the
# engine's runners for the real models.
#
#   bench/retrieval/run.sh            # or: make bench-retrieval
#
# Environment (all optional):
#   SOVEREIGN_MODELS_DIR  model store (default: ./data/models; read only)
#   SOVEREIGN_BIN         Sovereign binary the engine starts runners from (default: bin/sovereign)
#   BENCH_OUT             where the tables are also written, as retrieval.md (default: bench/out)
#   BENCH_ARGS            extra flags, e.g. "-sizes 10000 -phases quality"; go run ./bench/retrieval -h lists them
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

MODELS_DIR="${SOVEREIGN_MODELS_DIR:-./data/models}"
SOVEREIGN_BIN="${SOVEREIGN_BIN:-bin/sovereign}"
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

go build -o "$OUT/retrieval-bench" ./bench/retrieval
check_load
log "retrieval benchmark: about 12 minutes on 2 cores (more with a reranker)"
"$OUT/retrieval-bench" -models-dir "$MODELS_DIR" -bin "$SOVEREIGN_BIN" -md-out "$OUT/retrieval.md" "${EXTRA_ARGS[@]}"
