#!/usr/bin/env bash
# Tests the Python client library (package `sovereign`) in this directory.
#
# Usage: SOVEREIGN_BASE_URL=http://127.0.0.1:PORT/v1 SOVEREIGN_API_KEY=sk-sov-… sdk/python/test.sh
#
# The server must run the test models (gemma3-270m, all-minilm-l6-v2: `make test-models`) in
# deterministic mode with SOVEREIGN_OUTBOUND_ALLOW_PRIVATE=true (the webhook
# test's receiver listens on 127.0.0.1), and the key must be its bootstrap
# admin key. Steps, each fatal:
#   1. sdk/python/.venv from requirements-dev.txt (exact pins; skipped while
#      they are unchanged, as scripts/python-venv.sh does)
#   2. build the package's wheel and install it (not editable: the tests see
#      what `pip install ./sdk/python` installs; the wheel must ship py.typed)
#   3. mypy --strict on the package
#   4. pytest: the live server, local test servers (retries, idempotency
#      proxy), the README's examples as written
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
REQ="$HERE/requirements-dev.txt"
TIMEOUT="${SDK_PYTHON_TEST_TIMEOUT:-900}"

log() { printf 'sdk/python: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ -n "${SOVEREIGN_BASE_URL:-}" ] || die "SOVEREIGN_BASE_URL is not set"
[ -n "${SOVEREIGN_API_KEY:-}" ] || die "SOVEREIGN_API_KEY is not set"
command -v python3 >/dev/null || die "python3 is required"

export PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# The client talks to loopback servers directly, never through a proxy.
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"
# Nothing of OpenAI's configuration may leak into the tests.
unset OPENAI_API_KEY OPENAI_BASE_URL OPENAI_ORG_ID OPENAI_PROJECT_ID OPENAI_ADMIN_KEY OPENAI_WEBHOOK_SECRET OPENAI_CUSTOM_HEADERS || true

# ---------------------------------------------------------------- 1. venv
stamp="$VENV/.sovereign-requirements.sha256"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  log "$VENV up to date"
else
  log "installing $REQ into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  printf '*\n' >"$VENV/.gitignore" # the venv ignores itself, whatever the repo's .gitignore says
  "$VENV/bin/python" -m pip install --quiet --no-input -r "$REQ"
  printf '%s\n' "$want" >"$stamp"
fi

# ---------------------------------------------------------------- 2. build and install
WORK="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-sdk-python.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
log "building the wheel"
"$VENV/bin/python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$WORK" "$HERE"
wheel="$(ls "$WORK"/sovereign-*.whl)"
"$VENV/bin/python" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
assert "sovereign/py.typed" in names, "the wheel does not ship py.typed"
assert "sovereign/resources/_async.py" in names, names
PY
"$VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall "$wheel"
log "installed $(basename "$wheel")"

# ---------------------------------------------------------------- 3. mypy --strict
log "mypy --strict"
(cd "$HERE" && "$VENV/bin/python" -m mypy --strict --cache-dir "$VENV/.mypy_cache" src/sovereign)

# ---------------------------------------------------------------- 4. pytest
log "pytest against $SOVEREIGN_BASE_URL"
cd "$HERE"
timeout "$TIMEOUT" "$VENV/bin/python" -m pytest -v -p no:cacheprovider -rfE tests
