#!/usr/bin/env bash
# Runs the official OpenAI SDKs, unmodified, against a live Sovereign server:
# the `openai` Python package (pytest) and the `openai` npm package (node --test);
# Cohere's `cohere` Python package against POST /v1/rerank (pytest); LangChain's
# `langchain-openai` and `instructor` on tool calls (pytest); then
# Sovereign's own client libraries, sdk/python and sdk/typescript (each
# through its test.sh: install, type-check, tests, README examples).
#
# Usage: scripts/sdk-test.sh
#
# Environment:
#   SOVEREIGN_MODELS_DIR  models to serve (default: $REPO/data/models); must hold
#                         gemma3-270m and all-minilm-l6-v2 (`make test-models`)
#   SOVEREIGN_BIN         server binary (default: $REPO/bin/sovereign, built with
#                         `make build` when missing)
#   SDK_TEST_TIMEOUT      seconds each suite may run (default: 900)
#
# Installs (once; skipped while the pins are unchanged):
#   tests/sdk/python/.venv         from tests/sdk/python/requirements.txt
#   tests/sdk/python/.venv-instructor  from tests/sdk/python/requirements-instructor.txt
#                                  (instructor holds openai below the version .venv runs)
#   tests/sdk/node/node_modules    from tests/sdk/node/package-lock.json (npm ci)
#
# The server gets a free loopback port, a fresh temporary data dir and a freshly
# generated bootstrap admin key; it runs in deterministic mode, so that a
# greedy request answers the same whatever runs beside it (test_openai_batch.py
# compares a batch's answers, run several at a time, with the same requests made
# one by one), and may deliver webhooks to loopback receivers (the SDKs'
# webhook tests); it is stopped on exit. Exits non-zero if any suite fails.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SDK="$REPO/tests/sdk"
PY_DIR="$SDK/python"
NODE_DIR="$SDK/node"
VENV="$PY_DIR/.venv"
MODELS_DIR="${SOVEREIGN_MODELS_DIR:-$REPO/data/models}"
BIN="${SOVEREIGN_BIN:-$REPO/bin/sovereign}"
SUITE_TIMEOUT="${SDK_TEST_TIMEOUT:-900}"

export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 npm_config_fund=false npm_config_audit=false
# The SDKs must talk to the loopback server directly, never through a proxy.
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"

log() { printf 'sdk-test: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v python3 >/dev/null || die "python3 is required"
command -v node >/dev/null || die "node is required"
command -v npm >/dev/null || die "npm is required"
[ -d "$MODELS_DIR/gemma3-270m" ] || die "model gemma3-270m not found in $MODELS_DIR (set SOVEREIGN_MODELS_DIR)"
[ -d "$MODELS_DIR/all-minilm-l6-v2" ] || die "model all-minilm-l6-v2 not found in $MODELS_DIR (set SOVEREIGN_MODELS_DIR)"

sha() { sha256sum "$1" | cut -d' ' -f1; }

# ---------------------------------------------------------------- Python SDK
py_stamp="$VENV/.sovereign-requirements.sha256"
py_want="$(sha "$PY_DIR/requirements.txt")"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$py_stamp" 2>/dev/null)" = "$py_want" ] \
  && "$VENV/bin/python" -c 'import openai, cohere, langchain_openai, pytest' 2>/dev/null; then
  log "python: $VENV up to date"
else
  log "python: installing $PY_DIR/requirements.txt into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  printf '*\n' >"$VENV/.gitignore" # the venv ignores itself, whatever the repo's .gitignore says
  "$VENV/bin/python" -m pip install --quiet --no-input -r "$PY_DIR/requirements.txt"
  printf '%s\n' "$py_want" >"$py_stamp"
fi
log "python: $("$VENV/bin/python" --version), openai $("$VENV/bin/python" -c 'import openai; print(openai.__version__)'), cohere $("$VENV/bin/python" -c 'import cohere; print(cohere.__version__)'), pytest $("$VENV/bin/python" -c 'import pytest; print(pytest.__version__)')"

# instructor pins an older openai (and jiter) than the suite above runs, so it
# gets a venv of its own.
INS_VENV="$PY_DIR/.venv-instructor"
ins_stamp="$INS_VENV/.sovereign-requirements.sha256"
ins_want="$(sha "$PY_DIR/requirements-instructor.txt")"
if [ -x "$INS_VENV/bin/python" ] && [ "$(cat "$ins_stamp" 2>/dev/null)" = "$ins_want" ] \
  && "$INS_VENV/bin/python" -c 'import instructor, openai, pytest' 2>/dev/null; then
  log "python: $INS_VENV up to date"
else
  log "python: installing $PY_DIR/requirements-instructor.txt into $INS_VENV"
  rm -rf "$INS_VENV"
  python3 -m venv "$INS_VENV"
  printf '*\n' >"$INS_VENV/.gitignore"
  "$INS_VENV/bin/python" -m pip install --quiet --no-input -r "$PY_DIR/requirements-instructor.txt"
  printf '%s\n' "$ins_want" >"$ins_stamp"
fi

# ---------------------------------------------------------------- Node SDK
node_stamp="$NODE_DIR/node_modules/.sovereign-lock.sha256"
node_want="$(sha "$NODE_DIR/package-lock.json")"
if [ -f "$NODE_DIR/node_modules/openai/package.json" ] && [ "$(cat "$node_stamp" 2>/dev/null)" = "$node_want" ]; then
  log "node: $NODE_DIR/node_modules up to date"
else
  log "node: npm ci in $NODE_DIR"
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
  printf '%s\n' "$node_want" >"$node_stamp"
fi
log "node: $(node --version), openai $(node -p "require('$NODE_DIR/node_modules/openai/package.json').version")"

# ---------------------------------------------------------------- server
# Webhook tests deliver to loopback receivers: outbound private allowed.
. "$REPO/scripts/test-server.sh"
start_server sdk-test SOVEREIGN_OUTBOUND_ALLOW_PRIVATE=true
PORT=$TS_PORT API_KEY=$TS_KEY

export SOVEREIGN_BASE_URL="http://127.0.0.1:$PORT/v1" SOVEREIGN_API_KEY="$API_KEY"
# The suites set OPENAI_* themselves where they test it; nothing from outside leaks in.
unset OPENAI_API_KEY OPENAI_BASE_URL OPENAI_ORG_ID OPENAI_PROJECT_ID OPENAI_ADMIN_KEY || true

# ---------------------------------------------------------------- suites
py_rc=0
log "running the Python SDK suite (pytest)"
(cd "$PY_DIR" && PYTHONDONTWRITEBYTECODE=1 timeout "$SUITE_TIMEOUT" "$VENV/bin/python" -m pytest \
  -v -p no:cacheprovider -rfE test_openai_sdk.py test_cohere_rerank.py test_openai_batch.py test_langchain.py) 2>&1 | tee "$TS_WORK/openai-pytest.out" || py_rc=$?

ins_rc=0
log "running the instructor suite (pytest, its own venv)"
(cd "$PY_DIR" && PYTHONDONTWRITEBYTECODE=1 timeout "$SUITE_TIMEOUT" "$INS_VENV/bin/python" -m pytest \
  -v -p no:cacheprovider -rfE test_instructor.py) 2>&1 | tee "$TS_WORK/instructor-pytest.out" || ins_rc=$?

node_rc=0
log "running the Node SDK suite (node --test)"
(cd "$NODE_DIR" && timeout "$SUITE_TIMEOUT" node --test --test-reporter=spec openai.test.mjs) 2>&1 | tee "$TS_WORK/openai-node.out" || node_rc=$?

# Sovereign's own client libraries (sdk/python, sdk/typescript), each
# installing what it needs and running all its checks against this server.
sovpy_rc=0
log "running Sovereign's Python SDK checks (sdk/python/test.sh)"
timeout "$SUITE_TIMEOUT" bash "$REPO/sdk/python/test.sh" 2>&1 | tee "$TS_WORK/sdk-python.out" || sovpy_rc=$?

sovts_rc=0
log "running Sovereign's TypeScript SDK checks (sdk/typescript/test.sh)"
timeout "$SUITE_TIMEOUT" bash "$REPO/sdk/typescript/test.sh" 2>&1 | tee "$TS_WORK/sdk-typescript.out" || sovts_rc=$?

if [ "$py_rc" -ne 0 ] || [ "$ins_rc" -ne 0 ] || [ "$node_rc" -ne 0 ] || [ "$sovpy_rc" -ne 0 ] || [ "$sovts_rc" -ne 0 ]; then
  log "FAILED (openai pytest exit $py_rc, instructor pytest exit $ins_rc, openai node --test exit $node_rc, sdk/python exit $sovpy_rc, sdk/typescript exit $sovts_rc); last lines of the server log:"
  ts_show
  # The failures last, where a reader of the end of the output looks first.
  for suite in openai-pytest:$py_rc instructor-pytest:$ins_rc openai-node:$node_rc sdk-python:$sovpy_rc sdk-typescript:$sovts_rc; do
    [ "${suite#*:}" -eq 0 ] && continue
    log "the end of what ${suite%%:*} printed (exit ${suite#*:}):"
    tail -n 80 "$TS_WORK/${suite%%:*}.out" >&2
  done
  exit 1
fi
log "all SDK suites passed"
