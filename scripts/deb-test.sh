#!/usr/bin/env bash
# Install, upgrade and purge test of the Debian package (make test-deploy;
# docs/debian.md). It builds two packages of bin/sovereign (versions A < B)
# with deploy/debian, then in a Debian bookworm container with systemd as
# PID 1 (podman, runc, no network) runs tests/deb/in-container.sh:
#   install A: user, directories, conffiles, unit enabled and running,
#              `systemd-analyze security` OK or better, /readyz 200, a chat
#              answered by a tiny model in the data directory;
#   upgrade to B: conffile edits kept, service restarted, data and key kept;
#   remove, then purge: data deleted only by purge.
# For the portable build (make build's default) it checks too that the
# package ships the binary's libraries in /usr/lib/sovereign (regular
# files, 0644), that `sovereign version` and the service's start-up banner
# name the CPU variant chosen for this CPU, and that purge removes them.
# The bookworm root filesystem is made with debootstrap from Debian's mirror
# once and cached in ~/.cache/sovereign/deb-test (with the packages the
# .deb depends on and minbase lacks in its apt cache, so the container needs
# no network); later runs take a few seconds to start.
#
# Settings: SOVEREIGN_BIN (default bin/sovereign), DEBIAN_MIRROR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=${SOVEREIGN_BIN:-$root/bin/sovereign}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sovereign/deb-test
start=$(date +%s.%N)
last=$start
step() { # step MESSAGE: prints the time since the previous step and since the start
	local now; now=$(date +%s.%N)
	printf '>> %-62s %6.1fs  (total %6.1fs)\n' "$1" "$(echo "$now - $last" | bc)" "$(echo "$now - $start" | bc)"
	last=$now
}
sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
[ -x "$bin" ] || { echo "deb-test: $bin missing: run make build first" >&2; exit 1; }

# Tools: podman with runc (crun fails here; ../shared/notes/containers.md), debootstrap, bc.
missing=()
for t in podman:podman runc:runc debootstrap:debootstrap bc:bc; do
	command -v "${t%%:*}" >/dev/null || [ -x "/usr/sbin/${t%%:*}" ] || missing+=("${t#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo ">> installing ${missing[*]} from Debian's packages"
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi
mkdir -p "$cache"
printf '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\n' >"$cache/containers.conf"
export CONTAINERS_CONF=$cache/containers.conf
runc=$(command -v runc || echo /usr/sbin/runc)
step "tools ready"

# The root filesystem image, keyed by its recipe.
include=systemd,systemd-sysv,curl
recipe="bookworm minbase $include; apt cache: ca-certificates adduser; v1"
tag=$(printf '%s' "$recipe" | sha256sum | cut -c1-12)
image=localhost/sovereign-deb-test:$tag
if ! podman image exists "$image"; then
	tarball=$cache/rootfs-$tag.tar
	if [ ! -s "$tarball" ]; then
		echo ">> debootstrap bookworm ($include) from $mirror (once; cached in $cache)"
		rootfs=$cache/rootfs-$tag
		$sudo rm -rf "$rootfs"
		$sudo debootstrap --variant=minbase --include="$include" bookworm "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
			{ tail -20 "$cache/debootstrap.log"; exit 1; }
		# Keep in apt's cache just what the package needs beyond minbase, so
		# the container resolves its Depends with no network.
		$sudo find "$rootfs/var/cache/apt/archives" -name '*.deb' -delete
		$sudo chroot "$rootfs" apt-get install -y -q --download-only ca-certificates adduser >/dev/null
		$sudo tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
		$sudo rm -rf "$rootfs"
	fi
	podman import -q "$tarball" "$image" >/dev/null
	step "bookworm image $image built"
else
	step "bookworm image $image cached"
fi

# Two packages of the same binary, A < B, and a tiny chat model.
work=$(mktemp -d "${TMPDIR:-/tmp}/sovereign-deb-test-XXXXXX")
ctr=sovereign-deb-test-$$
cleanup() { podman rm -f -t 0 "$ctr" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
va=1.0.0~test1; vb=1.0.0~test2
for v in $va $vb; do
	go run -C deploy/debian . -bin "$bin" -version "$v" -doc "$root/docs/debian.md" -out "$work" >/dev/null
done
go run ./tests/deb/mkmodel "$work/tiny.gguf"
cp tests/deb/in-container.sh "$work/"
chmod -R a+rX "$work"
step "packages $va and $vb built ($(du -h "$work/sovereign_${va}_amd64.deb" | cut -f1) each)"

podman run -d --name "$ctr" --systemd=always --runtime "$runc" --network none \
	-v "$work:/work:ro" "$image" /sbin/init >/dev/null
for _ in $(seq 1 50); do
	state=$(podman exec "$ctr" systemctl is-system-running 2>/dev/null || true)
	case $state in running|degraded) break ;; esac
	sleep 0.2
done
step "container up, systemd $state"

podman exec "$ctr" bash /work/in-container.sh install "/work/sovereign_${va}_amd64.deb"
step "install $va"

# The CPU kernels of the installed binary (a portable build loads
# llama.cpp's libraries and its CPU variant from /usr/lib/sovereign; the
# chat above ran on them under the hardened unit).
libs=$(dpkg-deb -c "$work/sovereign_${va}_amd64.deb" | grep -c '\./usr/lib/sovereign/lib' || true)
out=$(podman exec "$ctr" sovereign version) || { echo "FAIL: sovereign version: $out" >&2; exit 1; }
kernels=$(sed -n 's/^CPU kernels: //p' <<<"$out")
if [ "$libs" -gt 0 ]; then
	[[ "$kernels" =~ ^[a-z0-9_]+\ \(best\ of\ [0-9]+\ for\ this\ CPU\)$ ]] ||
		{ echo "FAIL: the installed portable binary chose no CPU variant: $out" >&2; exit 1; }
	# shellcheck disable=SC2016
	podman exec "$ctr" sh -c 'n=0; for f in /usr/lib/sovereign/*; do
		[ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %a:%U "$f")" = 644:root ] || { echo "FAIL: $f: $(stat -c "%F %a %U" "$f")" >&2; exit 1; }
		dpkg -S "$f" >/dev/null || { echo "FAIL: $f belongs to no package" >&2; exit 1; }
		n=$((n+1)); done; [ "$n" = "$1" ] || { echo "FAIL: $n files in /usr/lib/sovereign, the package has $1" >&2; exit 1; }' sh "$libs"
	podman exec "$ctr" journalctl -u sovereign --no-pager | grep -qF "CPU kernels: $kernels" ||
		{ echo "FAIL: the service's journal does not say \"CPU kernels: $kernels\"" >&2; exit 1; }
	step "CPU kernels: ${kernels%% (*}, $libs libraries in /usr/lib/sovereign"
else
	[[ "$kernels" == built-in* ]] || { echo "FAIL: sovereign version: $out" >&2; exit 1; }
	step "CPU kernels: $kernels (llama.cpp linked in)"
fi
podman exec "$ctr" bash /work/in-container.sh upgrade "/work/sovereign_${vb}_amd64.deb" "$vb"
step "upgrade to $vb"
podman exec "$ctr" bash /work/in-container.sh purge
if podman exec "$ctr" test -e /usr/lib/sovereign; then
	echo "FAIL: /usr/lib/sovereign is left after purge" >&2
	exit 1
fi
step "remove and purge"
echo "PASS: Debian package install, upgrade and purge"
