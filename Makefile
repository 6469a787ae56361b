# Sovereign — build, run, test, bench.
#
#   make run     build, fetch the default models if missing, start the server
#   make test    install what tests need and run every test suite
#   make bench   engine benchmark against llama.cpp's llama-server, gateway overhead
#                against LiteLLM and Portkey, then retrieval (ingestion, search
#                latency, ANN recall, quality); each prints tables
#   make test-faults       the fault suite alone (part of make test)
#   make test-upgrade      the previous release and this one side by side on one PostgreSQL (part of make test)
#   make bench-portable    the portable build against a MARCH=native one on the engine benchmark
#   make bench-gateway     the gateway benchmark alone
#   make bench-retrieval   the retrieval benchmark alone
#   make bench-answers     answers with sources against llama-server with the classic prompt
#
# MARCH picks the CPU the llama.cpp kernels are compiled for. "portable" (the
# default) runs on any x86-64 from x86-64-v2 up: llama.cpp and ggml are
# shared libraries in lib/sovereign beside bin/, with ggml's CPU backend
# built once per CPU family (AVX2, AVX-512, VNNI, ...) and the best one for
# the CPU loaded at start (`sovereign version` names it; docs/engine.md).
# "native" (this machine only, all linked in) or a -march level such as
# x86-64-v3 builds one static binary: `make build MARCH=native`.

SHELL      := /bin/bash
GO         ?= go
MARCH      ?= portable
BIN        := bin/sovereign
DATA_DIR   ?= $(CURDIR)/data
MODELS_DIR ?= $(DATA_DIR)/models

# The runner links a pinned llama.cpp release, built once per version and
# MARCH with CMake into ~/.cache/sovereign (scripts/llama-cpp.sh; about 4
# minutes on 2 cores the first time, then reused by every checkout).
LLAMA_PREFIX = $(shell bash scripts/llama-cpp.sh prefix $(MARCH))
ifeq ($(MARCH),portable)
# The binary finds its libraries through its run path, $ORIGIN/../lib/sovereign
# (copied there by build); go test's binaries find them in the cache through
# LD_LIBRARY_PATH. The build tag ggml_dl links the shared libraries.
LIB_DIR     = $(patsubst %/,%,$(dir $(BIN)))/../lib/sovereign
CGO_ENV    = CGO_ENABLED=1 GOFLAGS=-tags=ggml_dl \
	CGO_CPPFLAGS="-I$(LLAMA_PREFIX)/include" CGO_LDFLAGS="-L$(LLAMA_PREFIX)/lib -Wl,-rpath,\$$ORIGIN/../lib/sovereign" \
	CGO_CFLAGS="-O3 -march=x86-64-v2" CGO_CXXFLAGS="-O3 -march=x86-64-v2" LD_LIBRARY_PATH="$(LLAMA_PREFIX)/lib"
MARCH_LDFLAGS :=
else
CGO_ENV    = CGO_ENABLED=1 GOFLAGS= \
	CGO_CPPFLAGS="-I$(LLAMA_PREFIX)/include" CGO_LDFLAGS="-L$(LLAMA_PREFIX)/lib" \
	CGO_CFLAGS="-O3 -march=$(MARCH)" CGO_CXXFLAGS="-O3 -march=$(MARCH)"
MARCH_LDFLAGS := -X github.com/sovereign-ai/sovereign/internal/llamacpp.march=$(MARCH)
endif
# Compiler chatter from cgo that is not an error.
CGO_NOISE  := 'warning:|note:|In function|inlined from|^ +\||~~~|^\s*[0-9]+ \|'
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: all build llama cgo-env run models test-models test test-go test-faults test-upgrade test-sdk test-console bench bench-portable bench-gateway bench-retrieval bench-workflow bench-answers fmt vet clean deps

all: build

deps:
	@$(GO) mod download

# llama.cpp's static libraries for this MARCH (built once, then cached).
llama:
	@bash scripts/llama-cpp.sh build $(MARCH) >/dev/null

# The cgo settings as shell exports, for running go build/test/vet by hand:
#   eval "$(make -s cgo-env)" && go test ./internal/runner
cgo-env: llama
	@echo 'export $(CGO_ENV)'

build: deps llama
	@echo ">> building $(BIN) (MARCH=$(MARCH))"
	@$(CGO_ENV) $(GO) build -ldflags "-X main.version=$(VERSION) $(MARCH_LDFLAGS)" -o $(BIN) ./cmd/sovereign 2> >(grep -v -E $(CGO_NOISE) >&2)
ifeq ($(MARCH),portable)
	@rm -rf $(LIB_DIR) && mkdir -p $(LIB_DIR) && cp -a $(LLAMA_PREFIX)/lib/lib*.so* $(LIB_DIR)/
	@echo ">> built $(BIN) and $(abspath $(LIB_DIR)) (CPU kernels here: $$($(BIN) version | sed -n 's/^CPU kernels: //p'))"
else
	@echo ">> built $(BIN)"
endif

# The default models (`sovereign models pull --list` shows every known one):
# Qwen2.5-Coder 0.5B Instruct for chat (alias "default") and
# all-MiniLM-L6-v2 for embeddings.
models: build
	@$(BIN) models pull --defaults --models-dir "$(MODELS_DIR)"

# What the test suites and benchmarks use: the defaults, and gemma3-270m, a
# small base model that keeps them fast where the model's skill does not
# matter (internal/testutil.TestModels is the same list).
test-models: build
	@$(BIN) models pull --defaults gemma3-270m --models-dir "$(MODELS_DIR)"

run: models
	@SOVEREIGN_DATA_DIR="$(DATA_DIR)" SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" $(BIN) serve

# make test: Go suites (SQLite, and a throwaway PostgreSQL and Redis started
# from Debian's packages on loopback ports), then the official openai SDKs for
# Python and Node and Sovereign's own SDKs (sdk/python, sdk/typescript)
# against a live server, then the web console in a browser (Debian's
# chromium, driven by playwright-core).
test: test-models
	@$(MAKE) --no-print-directory test-go
	@$(MAKE) --no-print-directory test-package
	@$(MAKE) --no-print-directory test-helm
	@$(MAKE) --no-print-directory test-faults
	@$(MAKE) --no-print-directory test-upgrade
	@$(MAKE) --no-print-directory test-sdk
	@$(MAKE) --no-print-directory test-console

test-go:
	@echo ">> go vet"
	@$(CGO_ENV) $(GO) vet ./... 2> >(grep -v -E $(CGO_NOISE) >&2)
	@set -e; \
	if [ -z "$$SOVEREIGN_TEST_POSTGRES_URL" ]; then \
		echo ">> starting PostgreSQL for the store suite"; \
		pgdir=$$(mktemp -u "$${TMPDIR:-/tmp}/sovereign-pgtest-XXXXXXXX"); \
		pgenv=$$(bash scripts/postgres-test.sh start "$$pgdir"); eval "$$pgenv"; \
		trap 'bash scripts/postgres-test.sh stop "$$pgdir" >/dev/null 2>&1; [ -z "$$rdir" ] || bash scripts/redis-test.sh stop "$$rdir" >/dev/null 2>&1' EXIT; \
	fi; \
	if [ -z "$$SOVEREIGN_TEST_REDIS_URL" ]; then \
		echo ">> starting Redis for the limits suite"; \
		rdir=$$(mktemp -u "$${TMPDIR:-/tmp}/sovereign-redistest-XXXXXXXX"); \
		renv=$$(bash scripts/redis-test.sh start "$$rdir"); eval "$$renv"; \
		trap 'bash scripts/redis-test.sh stop "$$rdir" >/dev/null 2>&1; [ -z "$$pgdir" ] || bash scripts/postgres-test.sh stop "$$pgdir" >/dev/null 2>&1' EXIT; \
	fi; \
	echo ">> Python packages the tests run (the webhook receiver's standardwebhooks)"; \
	bash scripts/python-venv.sh tests/webhooks >/dev/null; \
	echo ">> go test -race (every package's own tests)"; \
	SOVEREIGN_BIN="$(CURDIR)/$(BIN)" SOVEREIGN_TEST_MODELS_DIR="$(MODELS_DIR)" \
		$(CGO_ENV) $(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/internal/e2e$$') 2> >(grep -v -E $(CGO_NOISE) >&2) && \
	echo ">> the end-to-end suites (without -race: they run real models for minutes)" && \
	SOVEREIGN_BIN="$(CURDIR)/$(BIN)" SOVEREIGN_TEST_MODELS_DIR="$(MODELS_DIR)" \
		$(CGO_ENV) $(GO) test -count=1 -timeout 20m ./internal/e2e/ 2> >(grep -v -E $(CGO_NOISE) >&2) && \
	echo ">> the API suite again on PostgreSQL" && \
	SOVEREIGN_TEST_DB=postgres SOVEREIGN_BIN="$(CURDIR)/$(BIN)" SOVEREIGN_TEST_MODELS_DIR="$(MODELS_DIR)" \
		$(CGO_ENV) $(GO) test -count=1 -timeout 20m ./internal/e2e/ 2> >(grep -v -E $(CGO_NOISE) >&2)

# The fault suite: two replicas on a PostgreSQL and a Redis of its own, a
# mixed workload, and Redis down, PostgreSQL down, a SIGKILL and a SIGTERM
# in turn (internal/e2e/faults_test.go; a few minutes).
test-faults: test-models
	@echo ">> the fault suite (two replicas; Redis down, PostgreSQL down, SIGKILL, SIGTERM)"
	@SOVEREIGN_BIN="$(CURDIR)/$(BIN)" SOVEREIGN_TEST_MODELS_DIR="$(MODELS_DIR)" \
		$(CGO_ENV) $(GO) test -tags faults -count=1 -timeout 15m -run '^TestFaults$$' -v ./internal/e2e/ 2> >(grep -v -E $(CGO_NOISE) >&2) | \
		grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|faults_test.go' ; exit $${PIPESTATUS[0]}

# The rolling upgrade: the previous release (internal/schema/
# previous_release.txt; built once from `git archive` into ~/.cache) and this
# build serve from one PostgreSQL around `sovereign migrate` through a mixed
# workload (internal/e2e/upgrade_test.go; ~40 s the first time, ~10 s after).
test-upgrade: test-models
	@echo ">> the rolling upgrade (previous release and this one side by side on one PostgreSQL)"
	@set -e; \
	if [ -z "$$SOVEREIGN_TEST_POSTGRES_URL" ]; then \
		pgdir=$$(mktemp -u "$${TMPDIR:-/tmp}/sovereign-pgtest-XXXXXXXX"); \
		pgenv=$$(bash scripts/postgres-test.sh start "$$pgdir"); eval "$$pgenv"; \
		trap 'bash scripts/postgres-test.sh stop "$$pgdir" >/dev/null 2>&1' EXIT; \
	fi; \
	SOVEREIGN_BIN="$(CURDIR)/$(BIN)" SOVEREIGN_TEST_MODELS_DIR="$(MODELS_DIR)" \
		$(CGO_ENV) $(GO) test -tags upgrade -count=1 -timeout 10m -run '^TestUpgradeSideBySide$$' -v ./internal/e2e/ 2> >(grep -v -E $(CGO_NOISE) >&2) | \
		grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|upgrade_test.go' ; exit $${PIPESTATUS[0]}

test-sdk:
	@echo ">> SDKs against a live server: openai (Python, Node), cohere, sdk/python, sdk/typescript"
	@SOVEREIGN_BIN="$(CURDIR)/$(BIN)" SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash scripts/sdk-test.sh

test-console:
	@echo ">> the web console in a browser (tests/console)"
	@SOVEREIGN_BIN="$(CURDIR)/$(BIN)" SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash tests/console/test.sh

# Every benchmark runs even when an earlier one misses a target; the exit
# status says whether all met theirs.
bench: test-models
	@rc=0; \
	SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash bench/engine/run.sh || rc=1; \
	bash bench/gateway/run.sh || rc=1; \
	SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash bench/retrieval/run.sh || rc=1; \
	bash bench/workflow/run.sh || rc=1; \
	SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash bench/answers/run.sh || rc=1; \
	exit $$rc

# The portable build (MARCH=portable, the default) against the same tree
# built with MARCH=native, alternating, on the engine benchmark: within 3%
# single-stream and at 8 streams (bench/README.md).
bench-portable: test-models
	@SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" BENCH_PEERS=native BENCH_DETERMINISTIC=0 BENCH_ROUNDS=$${BENCH_ROUNDS:-3} \
		BENCH_COMPARE_ARGS="-target-single 0.97 -target-agg-peer 0.97 -target-prompt 0.97 -target-ttft 1.03 -target-agg-self 0" \
		bash bench/engine/run.sh

bench-gateway: build
	@bash bench/gateway/run.sh

bench-workflow: build
	@bash bench/workflow/run.sh

bench-retrieval: test-models
	@SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash bench/retrieval/run.sh

# The default chat model (alias default) and all-minilm-l6-v2.
bench-answers: models
	@SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash bench/answers/run.sh

# The Debian package (deploy/debian, a Go module of its own that uses nfpm as
# a library; docs/debian.md): dist/sovereign_<DEB_VERSION>_amd64.deb of $(BIN).
# DEB_VERSION: the latest vX.Y.Z tag (plus commits since), else
# 0.0.0~git<commit time>.<hash>; file times are the commit's (reproducible).
DEB_VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' 2>/dev/null); \
	if [ -n "$$v" ]; then echo "$${v#v}" | sed -E 's/-([0-9]+)-g([0-9a-f]+)$$/+git\1.\2/'; \
	else echo "0.0.0~git$$(git log -1 --format=%cd --date=format:%Y%m%d%H%M%S 2>/dev/null || echo 0).$$(git rev-parse --short HEAD 2>/dev/null || echo none)"; fi)
.PHONY: package test-package test-helm test-deploy
package: build
	@SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) \
		$(GO) run -C deploy/debian . -bin "$(CURDIR)/$(BIN)" -version "$(DEB_VERSION)" \
		-doc "$(CURDIR)/docs/debian.md" -out "$(CURDIR)/dist"

# The package's own tests (contents, conffiles, Depends, the unit's
# `systemd-analyze security` rating); part of make test.
test-package:
	@echo ">> the Debian package (deploy/debian)"
	@cd deploy/debian && $(GO) vet . && $(GO) test -count=1 .

# The Helm chart's tests (deploy/helm, a Go module of its own with Helm as a
# library; docs/helm.md): helm lint and a render of a matrix of values, every
# object decoded strictly into its Kubernetes type; part of make test (a few
# seconds once the module is built).
test-helm:
	@echo ">> the Helm chart (deploy/helm)"
	@cd deploy/helm && $(GO) vet ./... && $(GO) test -count=1 ./...

# The deployment tests .ci/run runs after make test (as root, with podman:
# a few minutes the first time): install, upgrade and purge of the package
# in a bookworm container with systemd (scripts/deb-test.sh, about 10 s
# after the first run), then the OCI image run with podman (test-image),
# then the Helm chart's pods played with podman kube play against a
# PostgreSQL and a Redis on the host: the hook Job migrating first, two
# replicas serving (scripts/helm-test.sh, about 20 s).
test-deploy: build
	@bash scripts/deb-test.sh
	@$(MAKE) --no-print-directory test-image
	@SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash scripts/helm-test.sh

# The OCI image (cmd/imagebuild, internal/imagebuild; docs/image.md), built
# with no daemon and no base image from $(BIN) and Debian's packages:
# dist/sovereign-image.tar (sovereign:$(VERSION)), dist/sovereign-image-models.tar
# (sovereign:$(VERSION)-models: the default models in /models) and the
# CycloneDX SBOM dist/sovereign-image.cdx.json. Reproducible: file times and
# "created" are SOURCE_DATE_EPOCH, else the last commit's time.
IMAGE_ARGS = -bin "$(BIN)" -version "$(VERSION)" -models-dir "$(MODELS_DIR)"
.PHONY: image test-image
image: models
	@$(GO) run ./cmd/imagebuild $(IMAGE_ARGS)

# The image run with podman: a rebuild gives the same bytes; no network,
# read-only root, a chat and an embedding, SIGTERM, nothing written outside
# /data (scripts/image-test.sh; as root, about a minute).
test-image: image
	@IMAGE_BUILD_ARGS='$(IMAGE_ARGS)' SOVEREIGN_MODELS_DIR="$(MODELS_DIR)" bash scripts/image-test.sh

# Every artefact of this version, with a SHA256SUMS file, in
# dist/release/$(VERSION)/: the portable binary with its libraries
# (tar.gz), the two OCI images and their SBOM, the Debian package, the
# signed offline bundle (RELEASE_KEY, default dist/release-signing.key, made
# once when missing) and the Helm chart (scripts/release.sh; docs/deploy.md).
.PHONY: release
release: build image package
	@VERSION="$(VERSION)" BIN="$(BIN)" MODELS_DIR="$(MODELS_DIR)" bash scripts/release.sh

fmt:
	@gofmt -l -w $$(git ls-files '*.go')

clean:
	rm -rf bin
