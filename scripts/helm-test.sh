#!/usr/bin/env bash
# scripts/helm-test.sh: the Helm chart's pods run for real with podman (the
# end of make test-deploy; docs/helm.md, "Testing").
#
#   scripts/helm-test.sh [IMAGE_ARCHIVE]
#
# Starts a throwaway PostgreSQL and Redis on the host (scripts/postgres-test.sh,
# scripts/redis-test.sh), renders deploy/helm/sovereign for them with two
# replicas (`go run -C deploy/helm ./cmd/chart render -podman`: Helm's own
# library, every object decoded strictly), and plays what Helm would apply,
# in Helm's order, with `podman kube play`:
#
#   1. a replica started before the migration refuses the unmigrated schema
#      (the pods run with SOVEREIGN_MIGRATE_ON_START=false);
#   2. the pre-install hook Job's pod migrates and exits 0;
#   3. both replicas answer /livez, /readyz and an authenticated
#      GET /v1/models; a key created on one works on the other (one database);
#   4. the hook run again, as on `helm upgrade`, finds the schema up to date
#      while the replicas serve;
#   5. SIGTERM stops a replica with status 0, having written nothing outside
#      its volumes, while the other keeps serving.
#
# podman 4.3 has no Job and plays a Deployment's replicas with one shared
# volume and one host port: deploy/helm/podman.go (WritePodman) turns the
# rendered objects into pods it can run and says why for each change. Each
# pod has a network namespace of its own (slirp4netns) and reaches the host's
# loopback, where PostgreSQL and Redis listen, as 10.0.2.2; the checks run
# the host's curl inside each pod's namespace (nsenter), as a kubelet's
# probe would, so no port is published.
#
# As root. Uses dist/sovereign-image.tar (make image), the image already
# loaded when it is; the models in SOVEREIGN_MODELS_DIR (default data/models)
# are mounted read-only at /models when present (models.source=volume).
# HELM_TEST_KEEP=1 keeps the image loaded.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE_TAR=${1:-dist/sovereign-image.tar}
MODELS_DIR=${SOVEREIGN_MODELS_DIR:-data/models}
KEY=sk-sov-helmtest0123456789abcdefghijklmnopqrstu
RELEASE=helmtest
NAME=$RELEASE-sovereign # the chart's full name for this release
NET=slirp4netns:allow_host_loopback=true
T0=$(date +%s.%N)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }
log() { echo ">> $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (podman with runc, nsenter into the pods' network namespaces)"
[ -f "$IMAGE_TAR" ] || fail "$IMAGE_TAR missing: run make image"

# podman, runc and slirp4netns, as in ../shared/notes/containers.md; apt may be busy.
if ! command -v podman >/dev/null || ! [ -x /usr/sbin/runc ] || ! command -v slirp4netns >/dev/null; then
	log "installing podman, runc and slirp4netns"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || true
	for i in $(seq 1 30); do
		if DEBIAN_FRONTEND=noninteractive CI=true apt-get install -y -q podman runc slirp4netns >/dev/null; then break; fi
		[ "$i" = 30 ] && fail "apt-get install podman runc slirp4netns"
		sleep 10
	done
fi
for tool in curl nsenter go; do command -v $tool >/dev/null || fail "$tool missing"; done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sovereign-helmtest-XXXXXXXX")
# Not under $WORK: the postgres user must reach its directory.
PGDIR=$(mktemp -u "${TMPDIR:-/tmp}/sovereign-helmtest-pg-XXXXXXXX")
REDISDIR=$(mktemp -u "${TMPDIR:-/tmp}/sovereign-helmtest-redis-XXXXXXXX")
printf '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n' >"$WORK/containers.conf"
export CONTAINERS_CONF="$WORK/containers.conf"
LOADED=""
PODS=("$NAME-0" "$NAME-1" "$NAME-migrate")

remove_pods() { # the pods, their volumes and the secrets, also a previous run's
	for p in "${PODS[@]}"; do podman pod rm -f -t 0 "$p" >/dev/null 2>&1 || true; done
	for v in $(podman volume ls -q 2>/dev/null | grep -E "^$NAME-(0|1|migrate)-|^$NAME\$" || true); do
		podman volume rm -f "$v" >/dev/null 2>&1 || true
	done
	for s in "$NAME" "$NAME-migrate"; do podman secret rm "$s" >/dev/null 2>&1 || true; done
}
cleanup() {
	local rc=$?
	if [ $rc != 0 ]; then
		for p in "${PODS[@]}"; do
			if podman container exists "$p-sovereign" 2>/dev/null; then
				echo "--- $p-sovereign's log:" >&2; podman logs "$p-sovereign" 2>&1 | tail -15 >&2
			fi
		done
	fi
	remove_pods
	[ -n "$LOADED" ] && [ -z "${HELM_TEST_KEEP:-}" ] && podman rmi -f "$LOADED" >/dev/null 2>&1 || true
	bash scripts/postgres-test.sh stop "$PGDIR" >/dev/null 2>&1 || true
	bash scripts/redis-test.sh stop "$REDISDIR" >/dev/null 2>&1 || true
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
remove_pods

# The image: the archive's, loaded unless the same digest already is.
TAG=$(tar -xOf "$IMAGE_TAR" index.json | sed -n 's/.*"org.opencontainers.image.ref.name":"\([^"]*\)".*/\1/p')
DIGEST=$(tar -xOf "$IMAGE_TAR" index.json | sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*/\1/p')
[ -n "$TAG" ] && [ -n "$DIGEST" ] || fail "no tag or digest in $IMAGE_TAR's index.json"
if [ "$(podman image inspect "$TAG" --format '{{.Digest}}' 2>/dev/null)" != "$DIGEST" ]; then
	t=$(now)
	podman load -q -i "$IMAGE_TAR" >/dev/null
	LOADED=$TAG
	log "podman load $IMAGE_TAR: $TAG ($(since "$t"))"
fi

t=$(now)
eval "$(bash scripts/postgres-test.sh start "$PGDIR")"
eval "$(bash scripts/redis-test.sh start "$REDISDIR")"
# The pods reach the host's loopback through slirp4netns as 10.0.2.2.
PG_URL=${SOVEREIGN_TEST_POSTGRES_URL/127.0.0.1/10.0.2.2}
REDIS_URL=${SOVEREIGN_TEST_REDIS_URL/127.0.0.1/10.0.2.2}
log "PostgreSQL and Redis on the host ($(since "$t")): the pods use $PG_URL and $REDIS_URL"

if [ -d "$MODELS_DIR" ] && [ -n "$(ls -A "$MODELS_DIR")" ]; then
	MODELS="{source: volume, volume: {hostPath: {path: $(realpath "$MODELS_DIR"), type: Directory}}}"
else
	MODELS="{source: none}"
fi
cat >"$WORK/values.yaml" <<EOF
image: {repository: "${TAG%%:*}", tag: "${TAG#*:}", pullPolicy: Never}
replicaCount: 2
database: {url: "$PG_URL"}
redis: {url: "$REDIS_URL"}
auth: {bootstrapKey: $KEY}
models: $MODELS
# The server refuses a settings file it cannot read or with an unknown key.
config: {log_level: info, max_queue: 8}
networkPolicy:
  egress:
    upstreams: [{to: [{ipBlock: {cidr: 10.20.0.0/16}}], ports: [{port: 8000, protocol: TCP}]}]
EOF

t=$(now)
plan=$(go run -C deploy/helm ./cmd/chart render -f "$WORK/values.yaml" -name "$RELEASE" -podman "$WORK/podman")
eval "$plan" # SECRETS, MIGRATE, SERVERS
[ ${#SERVERS[@]} = 2 ] && [ -n "$MIGRATE" ] || fail "rendered ${#SERVERS[@]} replicas and migrate=$MIGRATE"
log "rendered the chart (2 replicas, the hook Job; every object decoded strictly) ($(since "$t"))"

for f in "${SECRETS[@]}"; do podman secret create "$(basename "$f" .json)" "$f" >/dev/null; done

play() { podman kube play --network "$NET" "$1" >/dev/null; }
state() { podman inspect "$1" --format '{{.State.Status}} {{.State.ExitCode}}' 2>/dev/null; }
wait_exit() { # CONTAINER SECONDS: wait until it exits; prints its exit status
	local c=$1 n=$(($2 * 10)) s
	for _ in $(seq 1 $n); do
		s=$(state "$c")
		case "$s" in exited* | stopped*) echo "${s#* }"; return 0 ;; esac
		sleep 0.1
	done
	fail "$c still running after $2s"
}
c() { # POD CURL-ARGS…: curl inside the pod's network namespace
	local pid
	pid=$(podman inspect "$1-sovereign" --format '{{.State.Pid}}')
	shift
	nsenter -t "$pid" -n curl -sS -m 30 "$@"
}
wait_ready() { # POD
	local code
	for _ in $(seq 1 1200); do
		[ "$(state "$1-sovereign")" = "running 0" ] || fail "$1 is not running: $(state "$1-sovereign")"
		code=$(c "$1" -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/readyz 2>/dev/null || true)
		[ "$code" = 200 ] && return 0
		sleep 0.1
	done
	fail "$1: /readyz never answered 200"
}

# 1. Before the migration: a replica refuses the empty schema.
t=$(now)
play "${SERVERS[0]}"
code=$(wait_exit "$NAME-0-sovereign" 60)
[ "$code" != 0 ] || fail "a replica started on an unmigrated database"
podman logs "$NAME-0-sovereign" 2>&1 | grep -q 'run `sovereign migrate` first' ||
	fail "the replica did not refuse the unmigrated schema: $(podman logs "$NAME-0-sovereign" 2>&1 | tail -3)"
log "before the migration a replica refuses the empty schema (status $code: \"…run \`sovereign migrate\` first\") ($(since "$t"))"
remove_pods
for f in "${SECRETS[@]}"; do podman secret create "$(basename "$f" .json)" "$f" >/dev/null; done

# 2. The pre-install hook: the Job's pod migrates.
t=$(now)
play "$MIGRATE"
code=$(wait_exit "$NAME-migrate-migrate" 180)
out=$(podman logs "$NAME-migrate-migrate" 2>&1)
[ "$code" = 0 ] || { echo "$out" >&2; fail "the migration Job's pod exited $code"; }
echo "$out" | grep -q '^Migrated in' || { echo "$out" >&2; fail "the migration Job did not migrate"; }
log "the hook Job migrated ($(since "$t")):"
echo "$out" | grep -E '^(Application|Durable)' | tail -2 | sed 's/^/     /'

# 3. Two replicas, one database.
t=$(now)
play "${SERVERS[0]}"
play "${SERVERS[1]}"
wait_ready "$NAME-0"
wait_ready "$NAME-1"
log "both replicas ready ($(since "$t"))"
for p in "$NAME-0" "$NAME-1"; do
	[ "$(c "$p" -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/livez)" = 200 ] || fail "$p: /livez"
	ready=$(c "$p" http://127.0.0.1:8080/readyz)
	echo "$ready" | grep -q '"database":"ok"' && echo "$ready" | grep -q '"redis":"ok"' || fail "$p: /readyz $ready"
	[ "$(c "$p" -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/v1/models)" = 401 ] || fail "$p: /v1/models without a key"
	models=$(c "$p" -H "Authorization: Bearer $KEY" http://127.0.0.1:8080/v1/models)
	echo "$models" | grep -q '"object":"list"' || fail "$p: GET /v1/models: ${models:0:300}"
	log "$p: /livez 200, /readyz $ready, GET /v1/models with the bootstrap key: $(echo "$models" | grep -o '"id":"[^"]*"' | cut -d'"' -f4 | tr '\n' ' ')"
done
made=$(c "$NAME-0" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
	-d '{"name":"helm-test","scopes":["models:read"]}' http://127.0.0.1:8080/v1/keys)
key2=$(echo "$made" | sed -n 's/.*"key":"\(sk-sov-[^"]*\)".*/\1/p')
[ -n "$key2" ] || fail "POST /v1/keys on $NAME-0: $made"
[ "$(c "$NAME-1" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key2" http://127.0.0.1:8080/v1/models)" = 200 ] ||
	fail "a key made on $NAME-0 does not work on $NAME-1"
log "a key created on $NAME-0 works on $NAME-1: one database"

# 4. The pre-upgrade hook again, while the replicas serve.
t=$(now)
podman pod rm -f "$NAME-migrate" >/dev/null
podman volume rm -f "$NAME-migrate-data" >/dev/null
play "$MIGRATE"
code=$(wait_exit "$NAME-migrate-migrate" 180)
out=$(podman logs "$NAME-migrate-migrate" 2>&1)
[ "$code" = 0 ] && echo "$out" | grep -q '^Up to date' || { echo "$out" >&2; fail "the hook run again exited $code"; }
log "the hook run again (helm upgrade) finds the schema up to date ($(since "$t"))"

# 5. SIGTERM: a replica stops cleanly, the other serves on. The container
# first, as a kubelet does: the pod's network (its infra container) stays
# while the server hands its work over through the database.
t=$(now)
podman stop -t 80 "$NAME-0-sovereign" >/dev/null
code=$(podman inspect "$NAME-0-sovereign" --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || fail "$NAME-0 exited $code after SIGTERM"
# Nothing written outside the volumes (read-only root): the runtime's own
# mount points (/models, /etc/sovereign/config and their parents) aside.
mounts=$(podman inspect "$NAME-0-sovereign" --format '{{range .Mounts}}{{.Destination}} {{end}}')
diff=$(podman diff "$NAME-0-sovereign" | awk -v m="$mounts" '
	BEGIN { n = split(m, d, " ") }
	{ p = $2; ok = 0; for (i = 1; i <= n; i++) if (d[i] == p || index(d[i], p "/") == 1) ok = 1; if (!ok) print }')
[ -z "$diff" ] || fail "$NAME-0 wrote outside its volumes: $diff"
[ "$(c "$NAME-1" -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/readyz)" = 200 ] || fail "$NAME-1 stopped serving"
log "$NAME-0 stopped by SIGTERM with status 0, nothing written outside its volumes; $NAME-1 still ready ($(since "$t"))"

log "helm test passed in $(since "$T0") (then cleaning up)"
