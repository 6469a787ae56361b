#!/usr/bin/env bash
# scripts/hydra.sh: a real OpenID Provider for the single sign-on tests —
# Ory Hydra v2.3.0, built from the Go module proxy into the cache (about a
# minute and a half the first time), and its path printed on stdout.
#
# `go install github.com/ory/hydra/v2@v2.3.0` is refused (its go.mod
# replaces a module with a directory the module's zip does not hold), so
# the module is copied out of the cache, that replace is dropped (the
# published github.com/ory/hydra-client-go/v2 of the version it requires
# takes its place), and it is built with SQLite (DSN=memory) in.
set -euo pipefail
VERSION="${HYDRA_VERSION:-v2.3.0}"
CACHE="${SOVEREIGN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sovereign}/hydra-$VERSION"
BIN="$CACHE/hydra"
if [ -x "$BIN" ]; then
	echo "$BIN"
	exit 0
fi
log() { echo "hydra: $*" >&2; }
export GOFLAGS=-mod=mod
unset CGO_CFLAGS CGO_CXXFLAGS CGO_LDFLAGS
mkdir -p "$CACHE"
work="$(mktemp -d "${TMPDIR:-/tmp}/sovereign-hydra-XXXXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
log "downloading github.com/ory/hydra/v2@$VERSION"
dir="$(GOFLAGS= go mod download -json "github.com/ory/hydra/v2@$VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
GOFLAGS= go mod edit -dropreplace github.com/ory/hydra-client-go/v2
log "building (a minute or two; the first time also downloads its modules)"
start=$SECONDS
CGO_ENABLED=1 go build -tags sqlite -o "$BIN.tmp" . >&2
mv "$BIN.tmp" "$BIN"
log "built $BIN in $((SECONDS - start)) s"
echo "$BIN"
