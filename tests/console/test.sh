#!/usr/bin/env bash
# Browser tests of Sovereign's web console (/console): playwright-core drives
# Debian's chromium headless against a live server; axe-core checks every page
# for accessibility (no serious or critical violation); a screenshot of every
# page is saved under tests/console/out/.
#
# Usage: tests/console/test.sh
#
# Environment:
#   SOVEREIGN_BIN         server binary (default: $REPO/bin/sovereign, built with
#                         `make build` when missing)
#   SOVEREIGN_MODELS_DIR  models to serve (default: $REPO/data/models); must hold
#                         gemma3-270m (`make test-models`)
#   CHROMIUM              the browser (default: Debian's `chromium`, installed
#                         with apt-get when missing and running as root)
#   CONSOLE_TEST_TIMEOUT  seconds the suite may run (default: 300)
#
# Installs (once; skipped while the lockfile is unchanged):
#   tests/console/node_modules   from tests/console/package-lock.json (npm ci)
#
# The server gets a free loopback port, a fresh temporary data dir and a freshly
# generated bootstrap admin key; it is stopped on exit. Exits non-zero when a
# test fails.
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$DIR/../.." && pwd)"
MODELS_DIR="${SOVEREIGN_MODELS_DIR:-$REPO/data/models}"
BIN="${SOVEREIGN_BIN:-$REPO/bin/sovereign}"
SUITE_TIMEOUT="${CONSOLE_TEST_TIMEOUT:-300}"
OUT="$DIR/out"

export npm_config_fund=false npm_config_audit=false
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"

log() { printf 'console-test: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
show() { [ -f "$1" ] && tail -n 40 "$1" >&2 || true; }

command -v node >/dev/null || die "node is required"
command -v npm >/dev/null || die "npm is required"
command -v python3 >/dev/null || die "python3 is required"
[ -d "$MODELS_DIR/gemma3-270m" ] || die "model gemma3-270m not found in $MODELS_DIR (set SOVEREIGN_MODELS_DIR)"

# ---------------------------------------------------------------- chromium
CHROME="${CHROMIUM:-}"
if [ -z "$CHROME" ]; then
  CHROME="$(command -v chromium || command -v chromium-browser || true)"
fi
if [ -z "$CHROME" ]; then
  [ "$(id -u)" = 0 ] || die "chromium not found; install it (apt-get install chromium) or set CHROMIUM"
  command -v apt-get >/dev/null 2>&1 || die "chromium not found and apt-get is not available; install it or set CHROMIUM"
  apt_log="${TMPDIR:-/tmp}/sovereign-console-apt.log"
  log "installing chromium from Debian packages (log: $apt_log)"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >"$apt_log" 2>&1; then
    show "$apt_log"; die "apt-get install chromium failed"
  fi
  CHROME="$(command -v chromium || true)"
  [ -n "$CHROME" ] || die "chromium was installed but is not on PATH"
fi
log "browser: $("$CHROME" --version 2>/dev/null || echo "$CHROME")"

# ---------------------------------------------------------------- npm deps
sha() { sha256sum "$1" | cut -d' ' -f1; }
stamp="$DIR/node_modules/.sovereign-lock.sha256"
want="$(sha "$DIR/package-lock.json")"
if [ -f "$DIR/node_modules/playwright-core/package.json" ] && [ -f "$DIR/node_modules/axe-core/axe.min.js" ] &&
  [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  log "node_modules up to date"
else
  log "npm ci in $DIR"
  (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
  printf '%s\n' "$want" >"$stamp"
fi
log "node $(node --version), playwright-core $(node -p "require('$DIR/node_modules/playwright-core/package.json').version"), axe-core $(node -p "require('$DIR/node_modules/axe-core/package.json').version")"

# ---------------------------------------------------------------- identity provider
# A real OpenID Provider (Ory Hydra, scripts/hydra.sh) and its login app
# (internal/testutil/testidp), for the single sign-on test: started before
# the server, whose configuration names it.
HYDRA="$(bash "$REPO/scripts/hydra.sh")"
IDP_DIR="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-testidp.XXXXXX")"
(cd "$REPO" && eval "$(make -s cgo-env)" && GOFLAGS= go build -o "$IDP_DIR/testidp" ./internal/testutil/testidp)
"$IDP_DIR/testidp" -hydra "$HYDRA" >"$IDP_DIR/out" 2>"$IDP_DIR/log" &
IDP_PID=$!
for _ in $(seq 1 300); do grep -q '^CONTROL=' "$IDP_DIR/out" 2>/dev/null && break; kill -0 "$IDP_PID" 2>/dev/null || break; sleep 0.1; done
grep -q '^CONTROL=' "$IDP_DIR/out" || { tail -n 40 "$IDP_DIR/log" >&2; die "the test identity provider did not start"; }
ISSUER="$(sed -n 's/^ISSUER=//p' "$IDP_DIR/out")" IDP_CONTROL="$(sed -n 's/^CONTROL=//p' "$IDP_DIR/out")"
log "identity provider: Ory Hydra at $ISSUER (login app $IDP_CONTROL)"
cat >"$IDP_DIR/sovereign.yaml" <<EOF2
oidc:
  - name: testidp
    display_name: Test IdP
    issuer: $ISSUER
    client_id: sovereign-console
    client_secret: a-client-secret-for-tests-0123456789
group_rules:
  - group: console-testers
    team: sso testers
    role: developer
EOF2

# ---------------------------------------------------------------- server
. "$REPO/scripts/test-server.sh"
# Password sign-in stays on beside single sign-on (the suite's operator
# account signs in with one).
start_server console-test SOVEREIGN_CONFIG="$IDP_DIR/sovereign.yaml" SOVEREIGN_CONSOLE_PASSWORD_SIGNIN=true
trap 'ts_cleanup; kill "$IDP_PID" 2>/dev/null; wait "$IDP_PID" 2>/dev/null; rm -rf "$IDP_DIR"' EXIT
PORT=$TS_PORT API_KEY=$TS_KEY

# ---------------------------------------------------------------- suite
rm -rf "$OUT"
mkdir -p "$OUT"
rc=0
(cd "$DIR" && CONSOLE_URL="http://127.0.0.1:$PORT" CONSOLE_ADMIN_KEY="$API_KEY" CHROMIUM="$CHROME" CONSOLE_OUT="$OUT" IDP_CONTROL="$IDP_CONTROL" \
  timeout "$SUITE_TIMEOUT" node --test --test-concurrency=1 --test-reporter=spec console.test.mjs) 2>&1 | tee "$OUT/node-test.out" || rc=$?
if [ "$rc" -ne 0 ]; then
  log "FAILED (node --test exit $rc); screenshots in $OUT; last lines of the server log:"
  ts_show
  # The failures last, where a reader of the end of the output looks first.
  log "the end of what node --test printed:"
  tail -n 80 "$OUT/node-test.out" >&2
  exit 1
fi
log "all console browser tests passed; screenshots in $OUT"
