#!/usr/bin/env bash
# scripts/image-test.sh: the OCI image run for real with podman (make test-image).
#
#   scripts/image-test.sh [BASE_ARCHIVE [MODELS_ARCHIVE]]
#
# Loads dist/sovereign-image.tar and dist/sovereign-image-models.tar (make
# image), rebuilds them into a temporary directory to check that the
# digests are the same, then runs each image with no network
# (--network none), a read-only root (--read-only, without podman's tmpfs
# on /tmp and /run) and a fresh directory as /data: the base image with the
# models directory mounted read-only, the -models image with nothing but
# /data. In each it waits for /readyz, checks /livez, a chat
# completion and an embedding, stops the server with SIGTERM, and checks
# that the container wrote nothing outside /data (`podman diff` is empty)
# and nothing under /data as another user than 65532.
#
# The CPU kernels: `sovereign version` run in the image (entrypoint
# overridden; there is no shell) must name them, and each server's log
# too. For the portable build (make build's default: llama.cpp and ggml's
# CPU variants in /usr/lib/sovereign) that is the variant chosen for this
# CPU, "best of N"; the baseline variant (sse42) must load when asked for.
#
# With --network none the server's port cannot be reached from the host:
# the checks run curl from the host inside the container's network
# namespace (nsenter -t PID -n; root needed), which is what a probe sees,
# without giving the container a network.
#
# Installs podman and runc when missing (CI=true, non-interactive apt-get).
# Environment: SOVEREIGN_MODELS_DIR (default data/models: what make models
# fetches), IMAGE_TEST_KEEP=1 keeps the images loaded.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE_TAR=${1:-dist/sovereign-image.tar}
MODELS_TAR=${2:-dist/sovereign-image-models.tar}
MODELS_DIR=$(realpath "${SOVEREIGN_MODELS_DIR:-data/models}")
KEY=sk-sov-imagetest0123456789abcdefghijklmnop
T0=$(date +%s.%N)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
log() { echo ">> $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (podman with runc, nsenter into the container's network namespace)"
for f in "$BASE_TAR" "$MODELS_TAR"; do [ -f "$f" ] || fail "$f missing: run make image"; done

# podman and runc, as in ../shared/notes/containers.md; apt may be busy.
if ! command -v podman >/dev/null || ! [ -x /usr/sbin/runc ]; then
	log "installing podman and runc"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || true
	for i in $(seq 1 30); do
		if DEBIAN_FRONTEND=noninteractive CI=true apt-get install -y -q podman runc >/dev/null; then break; fi
		[ "$i" = 30 ] && fail "apt-get install podman runc"
		sleep 10
	done
fi
for tool in curl nsenter; do command -v $tool >/dev/null || fail "$tool missing"; done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sovereign-imagetest-XXXXXXXX")
printf '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n' >"$WORK/containers.conf"
export CONTAINERS_CONF="$WORK/containers.conf"
CONTAINERS=()
IMAGES=()
cleanup() {
	for c in "${CONTAINERS[@]}"; do podman rm -f "$c" >/dev/null 2>&1 || true; done
	if [ -z "${IMAGE_TEST_KEEP:-}" ]; then
		for i in "${IMAGES[@]}"; do podman rmi -f "$i" >/dev/null 2>&1 || true; done
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

tag_of() { # ARCHIVE: the tag in its index.json
	tar -xOf "$1" index.json | sed -n 's/.*"org.opencontainers.image.ref.name":"\([^"]*\)".*/\1/p'
}
digest_of() { # ARCHIVE: the image's manifest digest
	tar -xOf "$1" index.json | sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p'
}
BASE_TAG=$(tag_of "$BASE_TAR")
MODELS_TAG=$(tag_of "$MODELS_TAR")
log "images: $BASE_TAG $(digest_of "$BASE_TAR"), $MODELS_TAG $(digest_of "$MODELS_TAR")"

# Reproducible: the same inputs again give the same archives byte for byte.
if [ -z "${IMAGE_TEST_NO_REBUILD:-}" ] && [ -n "${IMAGE_BUILD_ARGS+x}" ]; then
	t=$(now)
	log "rebuilding into $WORK/rebuild"
	# IMAGE_BUILD_ARGS: make image's arguments, shell-quoted.
	eval "go run ./cmd/imagebuild $IMAGE_BUILD_ARGS" -out "$WORK/rebuild/base.tar" -models-out "$WORK/rebuild/models.tar" \
		-sbom "$WORK/rebuild/sbom.json" >/dev/null
	cmp -s "$BASE_TAR" "$WORK/rebuild/base.tar" || fail "a rebuild of $BASE_TAR differs"
	cmp -s "$MODELS_TAR" "$WORK/rebuild/models.tar" || fail "a rebuild of $MODELS_TAR differs"
	log "rebuilt: the same bytes and digests ($(since "$t"))"
	rm -rf "$WORK/rebuild"
fi

t=$(now)
podman load -q -i "$BASE_TAR" >/dev/null
IMAGES+=("$BASE_TAG")
log "podman load $BASE_TAR ($(since "$t"))"
t=$(now)
podman load -q -i "$MODELS_TAR" >/dev/null
IMAGES+=("$MODELS_TAG")
log "podman load $MODELS_TAR ($(since "$t"))"
for tag in "$BASE_TAG" "$MODELS_TAG"; do
	got=$(podman image inspect "$tag" --format '{{.Digest}}')
	[ "$got" = "$(digest_of "$([ "$tag" = "$BASE_TAG" ] && echo "$BASE_TAR" || echo "$MODELS_TAR")")" ] ||
		fail "$tag: podman reports digest $got"
	[ "$(podman image inspect "$tag" --format '{{.Config.User}}')" = 65532:65532 ] || fail "$tag: not user 65532"
done

# No shell to run.
if podman run --rm --network none --entrypoint /bin/sh "$BASE_TAG" -c true >/dev/null 2>&1; then
	fail "$BASE_TAG runs /bin/sh"
fi
log "no /bin/sh in the image"

# The CPU kernels the binary picks in the image. The portable build's layer
# says how many libraries it put in /usr/lib/sovereign (internal/imagebuild).
t=$(now)
LIBS=$(podman history --no-trunc --format '{{.CreatedBy}}' "$BASE_TAG" | sed -n 's|.*/usr/lib/sovereign (\([0-9]*\) libraries).*|\1|p' | head -1)
version() { podman run --rm --network none --read-only --entrypoint /usr/bin/sovereign "$@" version; }
out=$(version "$BASE_TAG") || fail "sovereign version in $BASE_TAG: $out"
KERNELS=$(sed -n 's/^CPU kernels: //p' <<<"$out")
if [ -n "$LIBS" ]; then
	[[ "$KERNELS" =~ ^[a-z0-9_]+\ \(best\ of\ [0-9]+\ for\ this\ CPU\)$ ]] ||
		fail "$BASE_TAG (portable, $LIBS libraries in /usr/lib/sovereign): sovereign version chose no CPU variant: $out"
	out=$(version -e SOVEREIGN_CPU_VARIANT=sse42 "$BASE_TAG") || fail "the sse42 variant in $BASE_TAG: $out"
	grep -q '^CPU kernels: sse42 (set by SOVEREIGN_CPU_VARIANT)$' <<<"$out" || fail "the sse42 variant in $BASE_TAG: $out"
	log "CPU kernels in the image: $KERNELS; sse42 loads too ($LIBS libraries in /usr/lib/sovereign; $(since "$t"))"
else
	[[ "$KERNELS" == built-in* ]] || fail "$BASE_TAG (llama.cpp linked in): sovereign version: $out"
	log "CPU kernels in the image: $KERNELS (no /usr/lib/sovereign; $(since "$t"))"
fi

# run NAME TAG [podman args...]: start, check, stop, inspect.
run() {
	local name=$1 tag=$2
	shift 2
	local data="$WORK/$name-data"
	mkdir -p "$data"
	chown 65532:65532 "$data"
	local t
	t=$(now)
	podman run -d --name "$name" --network none --read-only --read-only-tmpfs=false \
		-v "$data:/data" -e SOVEREIGN_BOOTSTRAP_KEY="$KEY" "$@" "$tag" >/dev/null
	CONTAINERS+=("$name")
	local pid
	pid=$(podman inspect "$name" --format '{{.State.Pid}}')
	[ -n "$pid" ] && [ "$pid" != 0 ] || { podman logs "$name" >&2; fail "$name did not start"; }
	c() { nsenter -t "$pid" -n curl -sS -m 120 "$@"; }
	local ready=""
	for _ in $(seq 1 600); do
		if [ "$(c -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/readyz 2>/dev/null)" = 200 ]; then
			ready=1
			break
		fi
		if [ "$(podman inspect "$name" --format '{{.State.Running}}')" != true ]; then break; fi
		sleep 0.1
	done
	[ -n "$ready" ] || { podman logs "$name" >&2; fail "$name: /readyz never answered 200"; }
	log "$name: ready in $(since "$t") (--network none, --read-only)"
	local live
	live=$(c -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/livez)
	[ "$live" = 200 ] || fail "$name: liveness answered $live"

	t=$(now)
	local out
	out=$(c http://127.0.0.1:8080/v1/chat/completions -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		-d '{"model":"default","messages":[{"role":"user","content":"Name the capital of France in one word."}],"max_tokens":16,"temperature":0}')
	echo "$out" | grep -q '"finish_reason"' || fail "$name: chat: $out"
	log "$name: chat answered in $(since "$t"): $(echo "$out" | sed -n 's/.*"content":"\([^"]*\)".*/\1/p' | head -c 80)"
	t=$(now)
	out=$(c http://127.0.0.1:8080/v1/embeddings -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		-d '{"model":"all-minilm-l6-v2","input":"a read-only container"}')
	echo "$out" | grep -q '"embedding":\[' || fail "$name: embeddings: ${out:0:300}"
	log "$name: embedding answered in $(since "$t")"
	# The server says which kernels it computes with, the same as above.
	podman logs "$name" 2>&1 | grep -qF "CPU kernels: $KERNELS" ||
		{ podman logs "$name" 2>&1 | tail -20 >&2; fail "$name: no \"CPU kernels: $KERNELS\" in the server's log"; }
	log "$name: the server's CPU kernels: $KERNELS"

	t=$(now)
	podman stop -t 60 "$name" >/dev/null
	local code
	code=$(podman inspect "$name" --format '{{.State.ExitCode}}')
	[ "$code" = 0 ] || { podman logs "$name" 2>&1 | tail -20 >&2; fail "$name: exit status $code after SIGTERM"; }
	log "$name: stopped by SIGTERM in $(since "$t"), exit status 0"
	local diff
	diff=$(podman diff "$name")
	[ -z "$diff" ] || fail "$name wrote outside /data: $diff"
	local upper
	upper=$(podman inspect "$name" --format '{{.GraphDriver.Data.UpperDir}}')
	if [ -n "$upper" ] && [ -d "$upper" ] && [ -n "$(find "$upper" -mindepth 1 -print -quit)" ]; then
		fail "$name: the container's layer holds $(find "$upper" -mindepth 1 | head)"
	fi
	local foreign
	foreign=$(find "$data" -path "$data/models" -prune -o \( ! -uid 65532 -o ! -gid 65532 \) -print | head)
	[ -z "$foreign" ] || fail "$name: files under /data not owned by 65532: $foreign"
	[ -d "$data/tmp" ] || fail "$name: no /data/tmp (TMPDIR) made"
	[ -f "$data/sovereign.db" ] || fail "$name: no database in /data"
	log "$name: podman diff empty; /data holds $(cd "$data" && ls | tr '\n' ' ')(all 65532's)"
	podman rm "$name" >/dev/null
}

# The base image finds the models in the volume (/data/models, the default
# models_dir), here a read-only mount of the host's models.
run sovereign-imagetest-base "$BASE_TAG" -v "$MODELS_DIR:/data/models:ro"
run sovereign-imagetest-models "$MODELS_TAG"

log "image test passed in $(since "$T0")"
