#!/usr/bin/env bash
# bench/gateway/run.sh: the latency that Sovereign, LiteLLM's proxy and
# Portkey's gateway each add in front of the same fast mock OpenAI upstream,
# measured in one run of one load generator against all four paths.
#
#   bench/gateway/run.sh            # or: make bench-gateway
#
# Environment (all optional):
#   SOVEREIGN_BIN           Sovereign binary (default: bin/sovereign; build it with make build)
#   BENCH_TARGETS           comma-separated subset of direct,sovereign,litellm,portkey
#                           (default: all four; direct is always measured, it is the baseline)
#   BENCH_MOCK_PORT         the mock upstream's port on 127.0.0.1 (default: 18190)
#   BENCH_SOVEREIGN_PORT    Sovereign's port (default: 18191)
#   BENCH_LITELLM_PORT      LiteLLM's port (default: 18192)
#   BENCH_PORTKEY_PORT      Portkey's port (default: 18193)
#   BENCH_OUT               results, configs and logs (default: bench/out)
#   BENCH_LITELLM_VERSION   litellm[proxy] version for bench/.venv (default: 1.100.5)
#   BENCH_LITELLM_WORKERS   LiteLLM's --num_workers (default: 1, its own default)
#   BENCH_MOCK_PROCS        GOMAXPROCS of the mock upstream (default: 1)
#   BENCH_LOADGEN_PROCS     GOMAXPROCS of the load generator (default: 2)
#   BENCH_READY_TIMEOUT     seconds to wait for a server to answer (default: 90)
#   BENCH_ARGS              extra load-generator flags, e.g. "-rate-duration 2s -ladder ''"
#
# Portkey's version is pinned in bench/gateway/package.json.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

SOVEREIGN_BIN="${SOVEREIGN_BIN:-bin/sovereign}"
TARGETS="${BENCH_TARGETS:-direct,sovereign,litellm,portkey}"
MOCK_PORT="${BENCH_MOCK_PORT:-18190}"
SOV_PORT="${BENCH_SOVEREIGN_PORT:-18191}"
LITE_PORT="${BENCH_LITELLM_PORT:-18192}"
PK_PORT="${BENCH_PORTKEY_PORT:-18193}"
OUT="${BENCH_OUT:-bench/out}"
LITE_VERSION="${BENCH_LITELLM_VERSION:-1.100.5}"
LITE_WORKERS="${BENCH_LITELLM_WORKERS:-1}"
MOCK_PROCS="${BENCH_MOCK_PROCS:-1}"
LOADGEN_PROCS="${BENCH_LOADGEN_PROCS:-2}"
READY_TIMEOUT="${BENCH_READY_TIMEOUT:-90}"
read -r -a EXTRA_ARGS <<<"${BENCH_ARGS:-}"
VENV="bench/.venv"
PKDIR="bench/gateway"

die() {
	echo "bench: $*" >&2
	exit 1
}
log() { echo "bench: $*" >&2; }

# The target list, normalised: direct first and always there.
want=()
IFS=, read -r -a requested <<<"$TARGETS"
for t in "${requested[@]}"; do
	t="${t// /}"
	case "$t" in
	"" | direct) ;;
	sovereign | litellm | portkey) want+=("$t") ;;
	*) die "BENCH_TARGETS: unknown target '$t' (want direct, sovereign, litellm, portkey)" ;;
	esac
done
wants() { [[ " ${want[*]} " == *" $1 "* ]]; }
TARGET_LIST="direct"
for t in "${want[@]}"; do TARGET_LIST+=",$t"; done

for v in MOCK_PORT SOV_PORT LITE_PORT PK_PORT LITE_WORKERS MOCK_PROCS LOADGEN_PROCS READY_TIMEOUT; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done
command -v go >/dev/null || die "go is not on PATH"
command -v curl >/dev/null || die "curl is not on PATH"
if wants sovereign && [[ ! -x "$SOVEREIGN_BIN" ]]; then
	die "$SOVEREIGN_BIN not found: build it first (make build), or set SOVEREIGN_BIN, or leave sovereign out of BENCH_TARGETS"
fi
if wants portkey; then
	command -v node >/dev/null || die "node is not on PATH (needed for Portkey's gateway; or leave portkey out of BENCH_TARGETS)"
	command -v npm >/dev/null || die "npm is not on PATH (needed to install Portkey's gateway)"
fi
if wants litellm; then
	command -v python3 >/dev/null || die "python3 is not on PATH (needed for LiteLLM; or leave litellm out of BENCH_TARGETS)"
fi
mkdir -p "$OUT"

# --- the peers: installed on first use, reused after
litellm_installed() {
	[[ -x "$VENV/bin/litellm" ]] &&
		"$VENV/bin/python" - "$LITE_VERSION" >/dev/null 2>&1 <<-'EOF'
			import sys, importlib.metadata as md
			assert md.version("litellm") == sys.argv[1]
			import uvicorn, fastapi, orjson, backoff, apscheduler
		EOF
}
if wants litellm && ! litellm_installed; then
	[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
	log "installing litellm[proxy]==$LITE_VERSION into $VENV (log: $OUT/litellm-install.log)"
	if ! "$VENV/bin/pip" install "litellm[proxy]==$LITE_VERSION" >"$OUT/litellm-install.log" 2>&1; then
		tail -n 20 "$OUT/litellm-install.log" >&2
		die "installing LiteLLM failed (full log: $OUT/litellm-install.log)"
	fi
	litellm_installed || die "litellm[proxy] installed but the proxy's modules do not import"
fi

# portkey_installed: node_modules matches the pins in package.json (the
# gateway's version, and the @hono/node-server override: Portkey 1.15.2 fails
# every streamed request with "TypeError: immutable" on newer versions of it,
# see README).
portkey_installed() {
	(cd "$PKDIR" && node -e '
		const fs = require("fs");
		const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
		const have = (n) => JSON.parse(fs.readFileSync("node_modules/" + n + "/package.json", "utf8")).version;
		const pins = { ...pkg.overrides, ...pkg.dependencies };
		for (const [n, v] of Object.entries(pins)) if (have(n) !== v) process.exit(1);
	') >/dev/null 2>&1
}
if wants portkey && ! portkey_installed; then
	log "installing Portkey's gateway (pinned in $PKDIR/package.json) into $PKDIR/node_modules (log: $OUT/portkey-install.log)"
	if ! (cd "$PKDIR" && npm install --no-package-lock --no-audit --no-fund) >"$OUT/portkey-install.log" 2>&1; then
		tail -n 20 "$OUT/portkey-install.log" >&2
		die "installing Portkey's gateway failed (full log: $OUT/portkey-install.log)"
	fi
	portkey_installed || die "npm install finished but $PKDIR/node_modules does not match package.json's pins"
fi

# --- the load generator and the mock
GEN="$OUT/gateway-bench"
MOCK="$OUT/gateway-mock"
go build -o "$GEN" ./bench/gateway
go build -o "$MOCK" ./bench/gateway/mockupstream

# --- servers: all up together for the one run, all stopped on exit
PIDS=()
TMP_DATA=""
stop_all() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	PIDS=()
	[[ -z "$TMP_DATA" ]] || rm -rf "$TMP_DATA"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# randstr N: N random characters from [A-Za-z0-9].
randstr() {
	local s=""
	while ((${#s} < $1)); do
		s+="$(head -c 512 /dev/urandom | LC_ALL=C tr -dc 'A-Za-z0-9')"
	done
	echo "${s:0:$1}"
}

start() { # label port logfile -- command...
	local label="$1" port="$2" logfile="$3"
	shift 4
	port_free "$port" || die "port $port on 127.0.0.1 is already in use ($label)"
	log "starting $label on 127.0.0.1:$port (log: $logfile)"
	"$@" >"$logfile" 2>&1 &
	PIDS+=($!)
}

wait_ready() { # label url logfile [curl args...]
	local label="$1" url="$2" logfile="$3" pid="${PIDS[-1]}" deadline=$((SECONDS + READY_TIMEOUT))
	shift 3
	until curl -fsS -o /dev/null --max-time 5 "$@" "$url" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 30 "$logfile" >&2
			die "$label exited before it was ready (log: $logfile)"
		fi
		if ((SECONDS > deadline)); then
			tail -n 30 "$logfile" >&2
			die "$label not ready after ${READY_TIMEOUT}s (log: $logfile)"
		fi
		sleep 0.3
	done
	log "$label is ready"
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
	if ((busy > 10)); then
		log "WARNING: the CPUs were ${busy}% busy with every server idle: other work will skew the numbers"
	fi
}

MOCK_URL="http://127.0.0.1:$MOCK_PORT"
NOTE=""

# The mock upstream. GOMAXPROCS=1: it serves every path the same way, and on
# a 2-core machine one core's worth keeps it from crowding the gateway under
# test (two made its tail noisier, not faster).
start "mock upstream" "$MOCK_PORT" "$OUT/gateway-mock.log" -- \
	env GOMAXPROCS="$MOCK_PROCS" "$MOCK" -addr "127.0.0.1:$MOCK_PORT"
wait_ready "mock upstream" "$MOCK_URL/v1/models" "$OUT/gateway-mock.log"
NOTE+="Mock upstream: Go, GOMAXPROCS=$MOCK_PROCS. "

# The PIDs let the load generator report each server's CPU time per request.
gen_args=(-targets "$TARGET_LIST" -mock-url "$MOCK_URL" -mock-pid "${PIDS[-1]}" -procs "$LOADGEN_PROCS")

# Sovereign: its defaults (auth, routing, metrics, one JSON request-log line
# per request on stderr, here into a file), a fresh data dir, one upstream
# model.
if wants sovereign; then
	TMP_DATA="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-gwbench-XXXXXXXX")"
	SOV_KEY="sk-sov-bench-$(randstr 32)"
	cat >"$OUT/gateway-sovereign.yaml" <<-EOF
		models:
		  - id: mock
		    backend: upstream
		    base_url: $MOCK_URL/v1
		    upstream_model: mock
		    capabilities: [chat, tools, vision]
	EOF
	start "Sovereign" "$SOV_PORT" "$OUT/gateway-sovereign.log" -- \
		env SOVEREIGN_ADDR="127.0.0.1:$SOV_PORT" SOVEREIGN_DATA_DIR="$TMP_DATA" \
		SOVEREIGN_BOOTSTRAP_KEY="$SOV_KEY" \
		"$SOVEREIGN_BIN" serve --config "$OUT/gateway-sovereign.yaml"
	wait_ready "Sovereign" "http://127.0.0.1:$SOV_PORT/readyz" "$OUT/gateway-sovereign.log"
	gen_args+=(-sovereign-url "http://127.0.0.1:$SOV_PORT" -sovereign-key "$SOV_KEY" -sovereign-pid "${PIDS[-1]}")
	NOTE+="Sovereign: $("$SOVEREIGN_BIN" version 2>/dev/null || echo "$SOVEREIGN_BIN"), defaults (auth, metrics, request log to a file; GOMAXPROCS and GOGC unset, so the server takes half the CPUs and GOGC=400). "
fi

# LiteLLM: the proxy as its docs start it (litellm --config), with a master
# key so that it authenticates like Sovereign does, telemetry off, message
# logging off, no database (so no spend logs), and its own default of one
# uvicorn worker (BENCH_LITELLM_WORKERS). LITELLM_LOCAL_MODEL_COST_MAP keeps it
# from fetching the cost map from the internet at start-up.
if wants litellm; then
	LITE_KEY="sk-litellm-bench-$(randstr 32)"
	cat >"$OUT/gateway-litellm.yaml" <<-EOF
		model_list:
		  - model_name: mock
		    litellm_params:
		      model: openai/mock
		      api_base: $MOCK_URL/v1
		      api_key: dummy
		litellm_settings:
		  telemetry: false
		  turn_off_message_logging: true
		general_settings:
		  master_key: $LITE_KEY
		  disable_spend_logs: true
	EOF
	start "LiteLLM" "$LITE_PORT" "$OUT/gateway-litellm.log" -- \
		env LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOG=ERROR \
		"$VENV/bin/litellm" --config "$OUT/gateway-litellm.yaml" \
		--host 127.0.0.1 --port "$LITE_PORT" --num_workers "$LITE_WORKERS" --telemetry False
	wait_ready "LiteLLM" "http://127.0.0.1:$LITE_PORT/health/readiness" "$OUT/gateway-litellm.log"
	gen_args+=(-litellm-url "http://127.0.0.1:$LITE_PORT" -litellm-key "$LITE_KEY" -litellm-pid "${PIDS[-1]}")
	NOTE+="LiteLLM: $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))') proxy on $("$VENV/bin/python" --version), $LITE_WORKERS uvicorn worker(s), master key auth, telemetry and message logging off, no database. "
fi

# Portkey: its package's bin (build/start-server.js) under node, headless,
# NODE_ENV=production; loopback.cjs makes it listen on 127.0.0.1 only (it has
# no flag for the address). Requests carry x-portkey-provider: openai and
# x-portkey-custom-host: <mock>/v1.
if wants portkey; then
	start "Portkey" "$PK_PORT" "$OUT/gateway-portkey.log" -- \
		env NODE_ENV=production node --require "./$PKDIR/loopback.cjs" \
		"$PKDIR/node_modules/@portkey-ai/gateway/build/start-server.js" --port="$PK_PORT" --headless
	wait_ready "Portkey" "http://127.0.0.1:$PK_PORT/" "$OUT/gateway-portkey.log"
	gen_args+=(-portkey-url "http://127.0.0.1:$PK_PORT" -portkey-pid "${PIDS[-1]}")
	NOTE+="Portkey: gateway $(node -p 'require("./'"$PKDIR"'/node_modules/@portkey-ai/gateway/package.json").version') on Node $(node --version) (@hono/node-server $(node -p 'require("./'"$PKDIR"'/node_modules/@hono/node-server/package.json").version')), one process, headless. "
fi

check_load
log "measuring $TARGET_LIST (about 4-5 minutes for all four)"
"$GEN" "${gen_args[@]}" -note "$NOTE" -md-out "$OUT/gateway.md" -json-out "$OUT/gateway.json" "${EXTRA_ARGS[@]}"
