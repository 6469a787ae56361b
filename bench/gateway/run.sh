#!/usr/bin/env bash
# bench/gateway/run.sh: the latency that Sovereign, LiteLLM's proxy and
# Portkey's gateway each add in front of the same fast mock OpenAI upstream,
# measured in one run of one load generator against all the paths; and what
# Sovereign's governance (limits in Redis, policies) adds, as a second
# Sovereign server with both set up, against the plain one.
#
#   bench/gateway/run.sh            # or: make bench-gateway
#
# Environment (all optional):
#   SOVEREIGN_BIN           Sovereign binary (default: bin/sovereign; build it with make build)
#   BENCH_TARGETS           comma-separated subset of
#                           direct,sovereign,sovereign-governed,litellm,portkey
#                           (default: all five; direct is always measured, it is the baseline)
#   BENCH_GOV               what the governed Sovereign sets up: all (default: limit rules
#                           on the team, the key and the model in Redis, and three
#                           policies), team (one rule, on the team, with every
#                           dimension, and the three policies), limits, policies or none
#   BENCH_MOCK_PORT         the mock upstream's port on 127.0.0.1 (default: 18190)
#   BENCH_SOVEREIGN_PORT    Sovereign's port (default: 18191)
#   BENCH_LITELLM_PORT      LiteLLM's port (default: 18192)
#   BENCH_PORTKEY_PORT      Portkey's port (default: 18193)
#   BENCH_SOVEREIGN_GOV_PORT  the governed Sovereign's port (default: 18194)
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
TARGETS="${BENCH_TARGETS:-direct,sovereign,sovereign-governed,litellm,portkey}"
GOV="${BENCH_GOV:-all}"
MOCK_PORT="${BENCH_MOCK_PORT:-18190}"
SOV_PORT="${BENCH_SOVEREIGN_PORT:-18191}"
LITE_PORT="${BENCH_LITELLM_PORT:-18192}"
PK_PORT="${BENCH_PORTKEY_PORT:-18193}"
GOV_PORT="${BENCH_SOVEREIGN_GOV_PORT:-18194}"
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
	sovereign | sovereign-governed | litellm | portkey) want+=("$t") ;;
	*) die "BENCH_TARGETS: unknown target '$t' (want direct, sovereign, sovereign-governed, litellm, portkey)" ;;
	esac
done
wants() { [[ " ${want[*]} " == *" $1 "* ]]; }
TARGET_LIST="direct"
for t in "${want[@]}"; do TARGET_LIST+=",$t"; done

case "$GOV" in
all | team | limits | policies | none) ;;
*) die "BENCH_GOV: unknown value '$GOV' (want all, team, limits, policies or none)" ;;
esac
for v in MOCK_PORT SOV_PORT GOV_PORT LITE_PORT PK_PORT LITE_WORKERS MOCK_PROCS LOADGEN_PROCS READY_TIMEOUT; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done
command -v go >/dev/null || die "go is not on PATH"
command -v curl >/dev/null || die "curl is not on PATH"
if { wants sovereign || wants sovereign-governed; } && [[ ! -x "$SOVEREIGN_BIN" ]]; then
	die "$SOVEREIGN_BIN not found: build it first (make build), or set SOVEREIGN_BIN, or leave sovereign and sovereign-governed out of BENCH_TARGETS"
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
TMP_GOV=""
REDIS_DIR=""
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
	# Redis after the servers that use it.
	[[ -z "$REDIS_DIR" ]] || bash scripts/redis-test.sh stop "$REDIS_DIR" >/dev/null 2>&1 || true
	[[ -z "$TMP_DATA" ]] || rm -rf "$TMP_DATA"
	[[ -z "$TMP_GOV" ]] || rm -rf "$TMP_GOV"
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
# per request on stderr, here into a file, the request log in its database),
# a fresh data dir, one upstream model; no limit rules, no policies, no Redis.
if wants sovereign || wants sovereign-governed; then
	cat >"$OUT/gateway-sovereign.yaml" <<-EOF
		models:
		  - id: mock
		    backend: upstream
		    base_url: $MOCK_URL/v1
		    upstream_model: mock
		    capabilities: [chat, tools, vision]
	EOF
fi
if wants sovereign; then
	TMP_DATA="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-gwbench-XXXXXXXX")"
	SOV_KEY="sk-sov-bench-$(randstr 32)"
	start "Sovereign" "$SOV_PORT" "$OUT/gateway-sovereign.log" -- \
		env -u SOVEREIGN_REDIS_URL SOVEREIGN_ADDR="127.0.0.1:$SOV_PORT" SOVEREIGN_DATA_DIR="$TMP_DATA" \
		SOVEREIGN_BOOTSTRAP_KEY="$SOV_KEY" \
		"$SOVEREIGN_BIN" serve --config "$OUT/gateway-sovereign.yaml"
	wait_ready "Sovereign" "http://127.0.0.1:$SOV_PORT/readyz" "$OUT/gateway-sovereign.log"
	gen_args+=(-sovereign-url "http://127.0.0.1:$SOV_PORT" -sovereign-key "$SOV_KEY" -sovereign-pid "${PIDS[-1]}")
	NOTE+="Sovereign: $("$SOVEREIGN_BIN" version 2>/dev/null || echo "$SOVEREIGN_BIN"), defaults (auth, metrics, request log to a file; GOMAXPROCS and GOGC unset, so the server takes half the CPUs, at least two, and GOGC=400). "
fi

# gov_api METHOD PATH [JSON]: one admin call to the governed Sovereign; the
# response body on stdout, or the body and a stop on a non-2xx answer.
gov_api() {
	local method="$1" path="$2" body="${3:-}" resp code
	local args=(-sS --max-time 10 -X "$method" -H "Authorization: Bearer $GOV_KEY" -w '\n%{http_code}')
	[[ -z "$body" ]] || args+=(-H 'Content-Type: application/json' --data "$body")
	resp="$(curl "${args[@]}" "$GOV_URL$path")" || die "$method $path on the governed Sovereign: curl failed"
	code="${resp##*$'\n'}"
	resp="${resp%$'\n'*}"
	[[ "$code" == 2?? ]] || die "$method $path on the governed Sovereign: HTTP $code: $resp"
	printf '%s' "$resp"
}

# gov_chat MAX_TOKENS CONTENT [curl args...]: one chat completion through the
# governed Sovereign; prints the HTTP status and writes the body to
# $TMP_GOV/probe.json.
gov_chat() {
	local max="$1" content="$2"
	shift 2
	curl -sS --max-time 10 -o "$TMP_GOV/probe.json" -w '%{http_code}' "$@" \
		-H "Authorization: Bearer $GOV_KEY" -H 'Content-Type: application/json' \
		--data '{"model":"mock","messages":[{"role":"user","content":"'"$content"'"}],"max_tokens":'"$max"'}' \
		"$GOV_URL/v1/chat/completions" || true
}

# Sovereign (governed): the same binary and model config on its own port and
# data dir, with SOVEREIGN_REDIS_URL pointing at a Redis server of its own
# (scripts/redis-test.sh: 127.0.0.1, no persistence), then, through its
# admin API (BENCH_GOV):
#   limits   - rules on the bench key's team (requests and tokens per minute,
#              concurrent requests, tokens per day), on the key and on the
#              model "mock" (requests and tokens per minute, concurrent
#              requests), all far above what the bench sends, so that every
#              request takes the real Redis round trips (six GCRA checks, three
#              leases and a budget to admit it; refunds, the budget and the
#              leases to settle it) and none is refused;
#   policies - three input policies, all evaluated on every request, none of
#              which ever denies a bench request: deployment, flag when
#              "card" in pii || "iban" in pii (PII detection on every prompt);
#              team, deny when !(model in ["mock"]) (a model allow-list); key,
#              deny when max_tokens > 100000.
# Both run after the server is ready and are probed before the run.
if wants sovereign-governed; then
	TMP_GOV="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-gwbench-gov-XXXXXXXX")"
	REDIS_DIR="$TMP_GOV/redis"
	log "starting Redis for the governed Sovereign (scripts/redis-test.sh, in $REDIS_DIR)"
	redis_env="$(bash scripts/redis-test.sh start "$REDIS_DIR")" || die "could not start Redis (scripts/redis-test.sh)"
	eval "$redis_env"
	REDIS_URL="$SOVEREIGN_TEST_REDIS_URL"
	unset SOVEREIGN_TEST_REDIS_URL
	REDIS_PID="$(cat "$REDIS_DIR/pid")"
	GOV_KEY="sk-sov-bench-$(randstr 32)"
	GOV_URL="http://127.0.0.1:$GOV_PORT"
	mkdir -p "$TMP_GOV/data"
	start "Sovereign (governed)" "$GOV_PORT" "$OUT/gateway-sovereign-governed.log" -- \
		env SOVEREIGN_ADDR="127.0.0.1:$GOV_PORT" SOVEREIGN_DATA_DIR="$TMP_GOV/data" \
		SOVEREIGN_BOOTSTRAP_KEY="$GOV_KEY" SOVEREIGN_REDIS_URL="$REDIS_URL" \
		"$SOVEREIGN_BIN" serve --config "$OUT/gateway-sovereign.yaml"
	wait_ready "Sovereign (governed)" "$GOV_URL/readyz" "$OUT/gateway-sovereign-governed.log"
	GOV_SERVER_PID="${PIDS[-1]}"

	# The bench key is the bootstrap key, the only key of a fresh store; its
	# team is the bootstrap team.
	keys="$(gov_api GET /v1/keys)"
	GOV_KEY_ID="$(grep -o '"id":"key_[A-Za-z0-9]*"' <<<"$keys" | cut -d'"' -f4)"
	GOV_TEAM_ID="$(grep -o '"team_id":"team_[A-Za-z0-9]*"' <<<"$keys" | cut -d'"' -f4)"
	[[ "$GOV_KEY_ID" =~ ^key_[A-Za-z0-9]+$ && "$GOV_TEAM_ID" =~ ^team_[A-Za-z0-9]+$ ]] ||
		die "GET /v1/keys on the governed Sovereign: expected one key and its team, got: $keys"
	gov_what=""
	if [[ "$GOV" == all || "$GOV" == limits ]]; then
		big='"requests_per_minute":100000000,"tokens_per_minute":100000000,"concurrent_requests":100000'
		gov_api PUT "/v1/limits/rules/team/$GOV_TEAM_ID" "{$big,\"tokens_per_day\":1000000000000}" >/dev/null
		gov_api PUT "/v1/limits/rules/key/$GOV_KEY_ID" "{$big}" >/dev/null
		gov_api PUT "/v1/limits/rules/model/mock" "{$big}" >/dev/null
		gov_what+="limit rules in Redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-) on its team (1e8 requests and tokens per minute, 1e5 concurrent, 1e12 tokens per day), its key and the model (1e8 requests and tokens per minute, 1e5 concurrent); "
	fi
	if [[ "$GOV" == team ]]; then
		big='"requests_per_minute":100000000,"tokens_per_minute":100000000,"concurrent_requests":100000'
		gov_api PUT "/v1/limits/rules/team/$GOV_TEAM_ID" "{$big,\"tokens_per_day\":1000000000000,\"tokens_per_month\":1000000000000}" >/dev/null
		gov_what+="one limit rule in Redis $(redis-server --version | grep -o 'v=[0-9.]*' | cut -c3-), on its team, with every dimension (1e8 requests and tokens per minute, 1e5 concurrent, 1e12 tokens per day and per month); "
	fi
	if [[ "$GOV" == all || "$GOV" == team || "$GOV" == policies ]]; then
		gov_api POST /v1/policies '{"name":"bench-pii","description":"bench: PII detection on every prompt","scope":"deployment",
			"rules":[{"name":"payment-data","stage":"input","when":"\"card\" in pii || \"iban\" in pii","action":"flag","reason":"payment data in a prompt"}]}' >/dev/null
		gov_api POST /v1/policies '{"name":"bench-model-allowlist","description":"bench: the models this team may use","scope":"team","scope_id":"'"$GOV_TEAM_ID"'",
			"rules":[{"name":"allowed-models","stage":"input","when":"!(model in [\"mock\"])","action":"deny","reason":"this team may only use the models on its list"}]}' >/dev/null
		gov_api POST /v1/policies '{"name":"bench-max-tokens","description":"bench: a bound on the answer length","scope":"key","scope_id":"'"$GOV_KEY_ID"'",
			"rules":[{"name":"output-bound","stage":"input","when":"max_tokens > 100000","action":"deny","reason":"max_tokens may not exceed 100000"}]}' >/dev/null
		gov_what+="three input policies: deployment, flag on \"card\" in pii || \"iban\" in pii; team, deny on !(model in [\"mock\"]); key, deny on max_tokens > 100000; "
	fi

	# Probes: what was set up is in force (policies apply within 2 s).
	if [[ "$GOV" == all || "$GOV" == team || "$GOV" == policies ]]; then
		deadline=$((SECONDS + 10))
		until [[ "$(gov_chat 100001 hi)" == 403 ]] && grep -q policy_violation "$TMP_GOV/probe.json"; do
			((SECONDS < deadline)) || die "the governed Sovereign does not apply the key's max_tokens policy after 10 s: $(cat "$TMP_GOV/probe.json")"
			sleep 0.2
		done
		[[ "$(gov_chat 8 'my card is 4111 1111 1111 1111')" == 200 ]] || die "a prompt with a card number was not answered 200: $(cat "$TMP_GOV/probe.json")"
		deadline=$((SECONDS + 10))
		until gov_api GET "/v1/policy_decisions?rule=payment-data" | grep -q '"action":"flag"'; do
			((SECONDS < deadline)) || die "the governed Sovereign recorded no flag for a card number after 10 s"
			sleep 0.2
		done
		log "Sovereign (governed): policies in force (max_tokens bound denies, a card number is flagged)"
	fi
	if [[ "$GOV" == all || "$GOV" == team || "$GOV" == limits ]]; then
		[[ "$(gov_chat 8 hi -D "$TMP_GOV/probe.headers")" == 200 ]] || die "a plain request to the governed Sovereign failed: $(cat "$TMP_GOV/probe.json")"
		grep -qi '^x-ratelimit-limit-requests: 100000000' "$TMP_GOV/probe.headers" ||
			die "the governed Sovereign's answer carries no x-ratelimit headers of the bench's rules: $(cat "$TMP_GOV/probe.headers")"
		if command -v redis-cli >/dev/null; then
			n="$(redis-cli -u "$REDIS_URL" dbsize)"
			((n > 0)) || die "the governed Sovereign's limits left nothing in Redis"
		fi
		log "Sovereign (governed): limits in force, in Redis (x-ratelimit headers on the answer)"
	fi
	# The probes' records fall before the window the load generator's
	# record count reads (from a second before it starts).
	sleep 3
	gen_args+=(-sovereign-gov-url "$GOV_URL" -sovereign-gov-key "$GOV_KEY" -sovereign-gov-pid "$GOV_SERVER_PID"
		-redis-pid "$REDIS_PID" -sovereign-gov-config "$GOV")
	NOTE+="Sovereign (governed): the same binary, model config and defaults on its own port and data dir, SOVEREIGN_REDIS_URL set; BENCH_GOV=$GOV: ${gov_what:-nothing set up; }no rule or policy refuses a bench request. "
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
log "measuring $TARGET_LIST (about 5-6 minutes for all five)"
rc=0
"$GEN" "${gen_args[@]}" -note "$NOTE" -md-out "$OUT/gateway.md" -json-out "$OUT/gateway.json" "${EXTRA_ARGS[@]}" || rc=$?
# What the governed requests asked of Redis (calls per command, µs per call).
if [[ -n "$REDIS_DIR" ]] && command -v redis-cli >/dev/null; then
	redis-cli -u "$REDIS_URL" info commandstats >"$OUT/gateway-redis-commandstats.txt" 2>&1 || true
fi
exit "$rc"
