#!/usr/bin/env bash
# scripts/release.sh: every artefact of one release in dist/release/VERSION/,
# with a SHA256SUMS file (make release; docs/deploy.md).
#
#   scripts/release.sh          # after make build image package (make release does both)
#
# What it writes (VERSION is `git describe`, the version the binary prints):
#   sovereign-VERSION-linux-amd64.tar.gz  the portable binary, bin/ and lib/sovereign/, with README and docs
#   sovereign-image.tar, sovereign-image-models.tar, sovereign-image.cdx.json
#                                         the OCI images (podman load -i) and their SBOM (make image)
#   sovereign_DEB_amd64.deb               the Debian package (make package)
#   sovereign-VERSION-bundle.tar (+ .pub) the signed offline bundle with the default models
#   sovereign-CHART.tgz                   the Helm chart (helm install sovereign ./sovereign-CHART.tgz)
#   SHA256SUMS                            sha256sum -c SHA256SUMS checks them all
#
# The bundle is signed with RELEASE_KEY (default dist/release-signing.key,
# made once with `sovereign bundle keygen` when missing). Its public half is
# copied beside the bundle for convenience only: an air-gapped site must get
# it by a separate trusted channel (docs/bundle.md).
#
# Environment: VERSION, BIN (default bin/sovereign), MODELS_DIR (default
# data/models), RELEASE_KEY, SOURCE_DATE_EPOCH (default: the last commit's
# time; file times in the tarball).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}
BIN=${BIN:-bin/sovereign}
LIB=$(dirname "$BIN")/../lib/sovereign
MODELS_DIR=${MODELS_DIR:-data/models}
RELEASE_KEY=${RELEASE_KEY:-dist/release-signing.key}
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
OUT=dist/release/$VERSION
T0=$(date +%s)

log() { echo ">> release: $*"; }
die() {
	echo "release: $*" >&2
	exit 1
}

[[ -x "$BIN" ]] || die "$BIN missing: make build"
[[ -d "$LIB" ]] || die "$LIB missing: make release ships the portable build (make build, MARCH=portable)"
for f in dist/sovereign-image.tar dist/sovereign-image-models.tar dist/sovereign-image.cdx.json; do
	[[ -f "$f" ]] || die "$f missing: make image"
done
shopt -s nullglob
debs=(dist/sovereign_*_amd64.deb)
shopt -u nullglob
((${#debs[@]} > 0)) || die "no dist/sovereign_*_amd64.deb: make package"
# The newest .deb is this build's (make package writes one per version).
deb=$(ls -t "${debs[@]}" | head -n1)

rm -rf "$OUT"
mkdir -p "$OUT"

# 1. The portable binary with its libraries: bin/ and lib/sovereign/ keep
# their relative place (the binary's run path is $ORIGIN/../lib/sovereign).
# A reproducible tarball: sorted names, one time, root-owned, gzip without
# a name or time.
name="sovereign-$VERSION-linux-amd64"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/bin" "$stage/$name/lib" "$stage/$name/docs"
cp "$BIN" "$stage/$name/bin/sovereign"
# Each library once, under the name the loader opens (its SONAME, or its own
# name for the CPU modules), as the image, the package and the bundle lay
# it out (internal/bundle/libdir); no development links.
mkdir -p "$stage/$name/lib/sovereign"
for f in "$LIB"/*.so*; do
	[[ -L "$f" ]] && continue
	soname=$(readelf -d "$f" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	install -m 0644 "$f" "$stage/$name/lib/sovereign/${soname:-$(basename "$f")}"
done
cp README.md "$stage/$name/"
cp docs/*.md docs/openapi.yaml "$stage/$name/docs/"
tar --sort=name --mtime="@$EPOCH" --owner=0 --group=0 --numeric-owner -C "$stage" -cf - "$name" |
	gzip -n -9 >"$OUT/$name.tar.gz"
log "$name.tar.gz ($("$BIN" version | tr '\n' ' '))"

# 2. The images and their SBOM, 3. the Debian package: as make built them.
cp dist/sovereign-image.tar dist/sovereign-image-models.tar dist/sovereign-image.cdx.json "$OUT/"
cp "$deb" "$OUT/"
log "images, SBOM and $(basename "$deb")"

# 4. The signed offline bundle.
if [[ ! -f "$RELEASE_KEY" ]]; then
	log "no signing key at $RELEASE_KEY: making one (keep it; publish $RELEASE_KEY.pub by a separate channel)"
	"$BIN" bundle keygen --out "$RELEASE_KEY"
fi
"$BIN" bundle create --out "$OUT/sovereign-$VERSION-bundle.tar" --key "$RELEASE_KEY" --models-dir "$MODELS_DIR" --binary "$BIN"
cp "$RELEASE_KEY.pub" "$OUT/sovereign-$VERSION-bundle.pub"
"$BIN" bundle verify "$OUT/sovereign-$VERSION-bundle.tar" --pub "$OUT/sovereign-$VERSION-bundle.pub" >/dev/null ||
	die "the bundle just written does not verify"
log "sovereign-$VERSION-bundle.tar (signed; verified)"

# 5. The Helm chart, packaged as helm package does.
go run -C deploy/helm ./cmd/chart package -out "$PWD/$OUT" -app-version "$VERSION" >/dev/null ||
	die "packaging the Helm chart failed"
log "$(cd "$OUT" && ls sovereign-*.tgz)"

# 6. The checksums.
(cd "$OUT" && sha256sum -- * >SHA256SUMS && sha256sum -c --quiet SHA256SUMS)
log "dist/release/$VERSION: $(($(ls "$OUT" | wc -l) - 1)) files and SHA256SUMS in $(($(date +%s) - T0))s"
ls -l "$OUT"
