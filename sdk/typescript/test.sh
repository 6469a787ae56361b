#!/usr/bin/env bash
# Tests the TypeScript client library (package `@sovereign/sdk`) in this directory.
#
# Usage: SOVEREIGN_BASE_URL=http://127.0.0.1:PORT/v1 SOVEREIGN_API_KEY=sk-sov-… sdk/typescript/test.sh
#
# The server must run the test models (gemma3-270m, all-minilm-l6-v2: `make test-models`) in
# deterministic mode with SOVEREIGN_OUTBOUND_ALLOW_PRIVATE=true (the webhook
# test's receiver listens on 127.0.0.1), and the key must be its bootstrap
# admin key. Steps, each fatal:
#   1. node_modules from package-lock.json (npm ci; skipped while the lockfile
#      is unchanged, as scripts/sdk-test.sh does, by a stamp file)
#   2. tsc --strict --noEmit on src/ and on a consumer file (test/typecheck)
#      that uses the built package's .d.ts
#   3. build dist/ (checked against the committed one by test/bundle.test.mjs)
#   4. esbuild --bundle --platform=neutral of the entry: no Node built-ins
#   5. node --test: the live server, local test servers (retries, the
#      idempotency proxy), webhooks against the standardwebhooks package, the
#      README's examples as written, installs as the README says
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TIMEOUT="${SDK_TYPESCRIPT_TEST_TIMEOUT:-900}"

log() { printf 'sdk/typescript: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ -n "${SOVEREIGN_BASE_URL:-}" ] || die "SOVEREIGN_BASE_URL is not set"
[ -n "${SOVEREIGN_API_KEY:-}" ] || die "SOVEREIGN_API_KEY is not set"
command -v node >/dev/null || die "node is required"
command -v npm >/dev/null || die "npm is required"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || die "node 20 or later is required to run the tests (found $(node --version))"

export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
# The client talks to loopback servers directly, never through a proxy.
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"
# Nothing of OpenAI's configuration may leak into the tests.
unset OPENAI_API_KEY OPENAI_BASE_URL OPENAI_ORG_ID OPENAI_PROJECT_ID OPENAI_ADMIN_KEY OPENAI_WEBHOOK_SECRET OPENAI_CUSTOM_HEADERS OPENAI_LOG || true

cd "$HERE"

# ---------------------------------------------------------------- 1. npm ci
stamp="node_modules/.sovereign-lock.sha256"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f node_modules/openai/package.json ] && [ -f node_modules/typescript/package.json ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  log "node_modules up to date"
else
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  printf '%s\n' "$want" >"$stamp"
fi
log "node $(node --version), openai $(node -p "require('./node_modules/openai/package.json').version"), typescript $(node -p "require('./node_modules/typescript/package.json').version"), esbuild $(node -p "require('./node_modules/esbuild/package.json').version")"

# ---------------------------------------------------------------- 2. tsc --strict
log "tsc --strict --noEmit (src)"
node node_modules/typescript/bin/tsc -p tsconfig.json --noEmit --strict

# ---------------------------------------------------------------- 3. build
# Into a scratch directory first: test/bundle.test.mjs compares the committed
# dist/ with a fresh build, so a stale dist/ fails the tests instead of being
# silently replaced here.
log "build (tsc) -> scratch dir"
SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-sdk-ts.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
node scripts/build.mjs --out "$SCRATCH/dist"

log "tsc --strict --noEmit (a consumer of the built package)"
node node_modules/typescript/bin/tsc -p test/typecheck/tsconfig.json --strict

# ---------------------------------------------------------------- 4. edge bundle
log "esbuild --bundle --platform=neutral dist/index.js"
node_modules/.bin/esbuild dist/index.js --bundle --platform=neutral --format=esm --log-level=error --outfile="$SCRATCH/edge.mjs" --metafile="$SCRATCH/meta.json"
node -e '
const { builtinModules } = require("node:module");
const meta = require(process.argv[1]);
const b = new Set(builtinModules.flatMap((m) => [m, "node:" + m]));
const bad = Object.values(meta.inputs).flatMap((i) => i.imports).filter((x) => x.external || b.has(x.path) || x.path.startsWith("node:"));
if (bad.length) { console.error("Node built-ins / externals in the edge bundle:", bad); process.exit(1); }
console.error("edge bundle: " + Object.keys(meta.inputs).length + " modules, no Node built-ins");
' "$SCRATCH/meta.json"

# ---------------------------------------------------------------- 5. node --test
log "node --test"
timeout "$TIMEOUT" node --test --test-reporter=spec --test-concurrency=1 test/*.test.mjs
