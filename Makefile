# vrrp-operator: the operator, the vrrpd VRRP daemon, and their tests.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
ENVTEST_ASSETS := $(BIN)/envtest
# The oldest Kubernetes the install supports (README, "Install on Kubernetes"): its
# kube-apiserver, built like envtest's, for test/install's TestFloorAcceptsEveryInstall.
K8S_FLOOR_VERSION ?= 1.31.14
ENVTEST_FLOOR_ASSETS := $(BIN)/envtest-floor
FUZZTIME ?= 30s
BENCHTIME ?= 1s
BENCH_FILTER ?= .
BENCH_COUNT ?= 1
BENCH_NOTE ?=
export BENCH_NOTE
BENCH_DIR := docs/bench
# The benchmarks whose one round is a whole measurement in a lab (network namespaces,
# keepalived, an envtest API server): run with -benchtime 1x.
BENCH_LAB_PKGS ?= ./test/vrrpd ./test/e2e ./controller ./internal/groupsource
CONTROLLER_GEN_VERSION ?= v0.22.0
CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
PLATFORMS ?= linux/amd64 linux/arm64 linux/ppc64le linux/s390x
# VERSION is what --version, the first log line and the *_build_info metrics show.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/vrrp-operator/vrrp-operator/internal/version.Version=$(VERSION)
# vrrpd's build tags, the same in the Dockerfile and internal/testing/testbin (the test in
# cmd/ holds them together): net/http (vrrpd's metrics, probes, status and HTTP checks)
# without its bundled HTTP/2, which vrrpd never speaks (its servers are plain HTTP/1.1, its
# checks ask HTTP/1.1 as keepalived's do; client-go brings its own HTTP/2): 0.8 MB less
# binary for the host build.
VRRPD_TAGS := nethttpomithttp2
# The host build of vrrpd (bin/vrrpd-host, vrrpd-host-OS-ARCH): what a bare-metal host runs in
# place of keepalived. Standalone only: without Kubernetes mode (client-go) and the profiling
# endpoint (runtime/pprof), which the image's vrrpd keeps (docs/capacity.md has its memory).
HOST_TAGS := $(VRRPD_TAGS),vrrpd_nokube,vrrpd_nopprof
# Helm, pinned; exported so that the install tests (test/install) render the chart with it.
HELM_VERSION ?= v3.22.0
# The Kubernetes version `helm template` and `helm lint` assume: Helm's release builds stamp
# the minor of the client-go they link (v0.37 for v3.22.0); a plain go run would assume 1.20,
# below the chart's kubeVersion. (One -X, no spaces: the tests split HELM into words.)
HELM_KUBE_MINOR ?= 37
HELM ?= $(GO) run -ldflags=-X=helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(HELM_KUBE_MINOR) helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
export HELM
CHART := deploy/helm/vrrp-operator

export KUBEBUILDER_ASSETS := $(ENVTEST_ASSETS)
export VRRP_FLOOR_ASSETS := $(ENVTEST_FLOOR_ASSETS)

.PHONY: all build test unit lint fuzz bench bench-merge bench-report scale-labs cross cross-check manifests check-manifests envtest envtest-floor demo clean helm render release

all: build

## build: compile vrrpd (the image's, both modes), vrrpd-host (the host build) and the operator
## into bin/, static (CGO_ENABLED=0) as make cross, the image and the benchmarks build them: a
## cgo build links libc, whose pages add 2 MiB to vrrpd's resident set
build:
	CGO_ENABLED=0 $(GO) build -tags '$(VRRPD_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/vrrpd ./cmd/vrrpd
	CGO_ENABLED=0 $(GO) build -tags '$(HOST_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/vrrpd-host ./cmd/vrrpd
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/operator ./cmd/operator

## test: everything CI runs: lint, stale-CRD check, vrrpd's host build for the four
## architectures (cross-check), and every test (namespaces and envtest included)
## The labs that measure time on the wire (failovers, Skew_Time races, samples of who holds
## a VIP every 10 ms) run after the other packages and one at a time: beside each other on a
## 2-core machine, one lab's 10 ms adverts and busy loops delay the other's daemons by
## milliseconds, which a preemption's overlap or a 3.9 ms Skew_Time gap cannot absorb.
TIMING_TEST_PKGS := ./test/vrrpd ./test/e2e

test: lint check-manifests envtest envtest-floor cross-check
	$(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -v -x -F $(foreach p,$(TIMING_TEST_PKGS),-e github.com/vrrp-operator/vrrp-operator/$(patsubst ./%,%,$(p))))
	$(GO) test -count=1 -timeout 30m -p 1 $(TIMING_TEST_PKGS)

## scale-labs: issue 31's scale labs alone (all part of `make test`): the failover of a
## host holding 700 of 2,000 addresses, a node's join and leave, and the switch to shared
## routers
scale-labs: envtest
	$(GO) test -count=1 -v -timeout 30m ./test/e2e/ -run 'TestFailoverAtScale|TestMovementAtScale|TestSwitchToSharedAtScale'

## unit: the fast tests only (no root, no API server)
unit:
	$(GO) test -short ./...

## lint: gofmt, go vet, and no production function over 100 lines (hack/funclen)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./hack/funclen

## fuzz: run every Fuzz* target of the module, each for FUZZTIME. The targets live next to
## the code they exercise (and in ./fuzz for the VRRP codec and state machine), so the
## packages are found by grepping the test files, then go test -list names the targets.
fuzz:
	@set -e; pkgs=$$(grep -rl --include='*_test.go' --exclude-dir=bin --exclude-dir=.git '^func Fuzz' . | xargs -n1 dirname | sort -u); \
	if [ -z "$$pkgs" ]; then echo "no fuzz targets found"; exit 1; fi; \
	for pkg in $$pkgs; do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: every benchmark, then docs/bench/README.md (issue 12's table, vrrpd beside
## keepalived, and plots) and, from the same raw output, README.md's measured table (between
## <!-- bench:begin --> and <!-- bench:end -->). One package at a time (-p 1), so that no two measure at once. The
## lab benchmarks (BENCH_LAB_PKGS: namespaces, keepalived, an API server) make one whole
## measurement per round and run one round; the others run for BENCHTIME. BENCH_FILTER
## narrows (-bench's regexp; only the packages with a matching benchmark run), BENCH_NOTE
## says what else ran on the machine. The raw output goes to docs/bench/raw.txt, the
## samples to docs/bench/samples/.
##
## bench-merge: make bench of the benchmarks BENCH_FILTER names, merged into docs/bench
## instead of replacing it (benchreport merge): the new run's output, its own machine lines
## at its head (date, load, BENCH_NOTE, tree), is appended to raw.txt, and the earlier runs'
## lines and samples of the same benchmarks go; every other benchmark's figures stay, and
## the reports name which were measured when, under what load. For a few benchmarks added or
## changed since the last full run, which takes most of an hour on two cores.
bench-merge:
	@case '$(BENCH_FILTER)' in .|'') echo "bench-merge: set BENCH_FILTER to the benchmarks to run again (make bench runs them all)"; exit 1;; esac; \
	$(MAKE) --no-print-directory bench BENCH_MERGE=1

bench: envtest
	@set -o pipefail; tmp=$$(mktemp -d); status=0; \
	$(GO) build -o $(BIN)/benchreport ./hack/benchreport || exit 1; \
	$(BIN)/benchreport machine -note "$$BENCH_NOTE" -version '$(VERSION)' > $$tmp/raw.txt; \
	lab=; other=; top=$$(printf '%s' '$(BENCH_FILTER)' | cut -d/ -f1); \
	for p in $$(grep -rl --include='*_test.go' --exclude-dir=bin --exclude-dir=.git '^func Benchmark' . | xargs -n1 dirname | sort -u); do \
	  grep -hoE '^func Benchmark[A-Za-z0-9_]*' $$p/*_test.go | cut -c6- | grep -qE "$$top" || continue; \
	  case " $(BENCH_LAB_PKGS) " in *" $$p "*) lab="$$lab $$p";; *) other="$$other $$p";; esac; \
	done; \
	if [ -n "$$lab" ]; then \
	  VRRPD_BENCH_SAMPLES=$$tmp/samples $(GO) test -p 1 -run '^$$' -bench '$(BENCH_FILTER)' -benchtime 1x -count $(BENCH_COUNT) \
	    -timeout 60m $$lab 2>&1 | tee -a $$tmp/raw.txt || status=1; \
	fi; \
	if [ -n "$$other" ]; then \
	  VRRPD_BENCH_SAMPLES=$$tmp/samples $(GO) test -p 1 -run '^$$' -bench '$(BENCH_FILTER)' -benchmem -benchtime $(BENCHTIME) \
	    -count $(BENCH_COUNT) -timeout 30m $$other 2>&1 | tee -a $$tmp/raw.txt || status=1; \
	fi; \
	mkdir -p $(BENCH_DIR) $$tmp/samples && \
	if [ -n '$(BENCH_MERGE)' ]; then \
	  $(BIN)/benchreport merge -raw $(BENCH_DIR)/raw.txt -samples $(BENCH_DIR)/samples -new $$tmp/raw.txt -new-samples $$tmp/samples; \
	else \
	  rm -rf $(BENCH_DIR)/samples && mv $$tmp/samples $(BENCH_DIR)/samples && mv $$tmp/raw.txt $(BENCH_DIR)/raw.txt; \
	fi && rm -rf $$tmp && \
	$(BIN)/benchreport report -raw $(BENCH_DIR)/raw.txt -samples $(BENCH_DIR)/samples -out $(BENCH_DIR) -readme README.md || status=1; \
	echo "wrote $(BENCH_DIR)/README.md and README.md's measured table"; exit $$status

## bench-report: docs/bench/README.md, its plots and README.md's measured table again from
## docs/bench/raw.txt and samples/ (hack/benchreport's TestREADMEMeasured, in make test,
## fails while the README's table is not what raw.txt makes)
bench-report:
	$(GO) run ./hack/benchreport report -raw $(BENCH_DIR)/raw.txt -samples $(BENCH_DIR)/samples -out $(BENCH_DIR) -readme README.md

## cross: vrrpd, vrrpd-host and operator for every platform in PLATFORMS (the original's four), static
cross:
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -tags '$(VRRPD_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/vrrpd-$$os-$$arch ./cmd/vrrpd; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -tags '$(HOST_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/vrrpd-host-$$os-$$arch ./cmd/vrrpd; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/operator-$$os-$$arch ./cmd/operator; \
	done

## cross-check: what make test checks of the other architectures, cheaply: vrrpd's host build
## (the code with per-architecture system calls: sockets, timerfd, netlink) for every platform
## in PLATFORMS. The full make cross compiles client-go and controller-runtime once per
## architecture, more than half an hour on two cores, so it stays out of make test.
cross-check:
	@set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; \
	  echo "cross-check $$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -tags '$(HOST_TAGS)' -o /dev/null ./cmd/vrrpd; \
	done

## release: a release, make release VERSION=vX.Y.Z: writes the version into every file of the
## install that names it (hack/setversion: the chart's version and appVersion, the
## kustomization's operator tag, the operator's --vrrpd-image and the policy's vrrpdImage;
## commit them and tag the commit VERSION), then builds into bin/release/VERSION/ every
## binary for PLATFORMS (make cross, stamped with VERSION), the two images for all of them as
## OCI archives (hack/ociimage: no registry or Docker engine needed), the chart's package
## and the rendered manifests (kustomize's default and OpenShift installs), and SHA256SUMS.
## Not part of make test: make cross alone takes more than half an hour on two cores.
## KUBECTL: a kubectl for kustomize (default: make envtest's).
RELEASE_DIR = $(BIN)/release/$(VERSION)
KUBECTL ?= $(ENVTEST_ASSETS)/kubectl
IMAGE_SOURCE := https://github.com/vrrp-operator/vrrp-operator
release:
	@test -x '$(KUBECTL)' || { echo "no kubectl at $(KUBECTL): make envtest, or KUBECTL=..."; exit 1; }
	$(GO) run ./hack/setversion '$(VERSION)'
	$(MAKE) cross VERSION='$(VERSION)'
	rm -rf '$(RELEASE_DIR)' && mkdir -p '$(RELEASE_DIR)'
	$(GO) build -o $(BIN)/ociimage ./hack/ociimage
	@set -e; created=$$(git log -1 --format=%cI); revision=$$(git rev-parse HEAD); \
	for img in operator vrrpd; do \
	  case $$img in operator) opts="-user 65532:65532 -port 8080 -port 8081";; vrrpd) opts="-port 9650";; esac; \
	  bins=; for p in $(PLATFORMS); do bins="$$bins $$p=$(BIN)/$$img-$${p%/*}-$${p#*/}"; done; \
	  layout=$$(mktemp -d); \
	  $(BIN)/ociimage -out $$layout/oci -name ghcr.io/vrrp-operator/$$img:$(VERSION) -path /$$img $$opts \
	    -created $$created -label org.opencontainers.image.version=$(VERSION) -label org.opencontainers.image.revision=$$revision \
	    -label org.opencontainers.image.source=$(IMAGE_SOURCE) -label org.opencontainers.image.title=$$img $$bins; \
	  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode=u+rw,go+r,go-w -C $$layout/oci -cf '$(RELEASE_DIR)'/$$img-$(VERSION).oci.tar oci-layout index.json blobs; \
	  rm -rf $$layout; echo "image $$img: $(RELEASE_DIR)/$$img-$(VERSION).oci.tar"; \
	done
	@set -e; for p in $(PLATFORMS); do for b in vrrpd vrrpd-host operator; do \
	  cp $(BIN)/$$b-$${p%/*}-$${p#*/} '$(RELEASE_DIR)'/; done; done
	$(HELM) package $(CHART) -d '$(RELEASE_DIR)'
	'$(KUBECTL)' kustomize deploy/cluster > '$(RELEASE_DIR)'/vrrp-operator-cluster.yaml
	'$(KUBECTL)' kustomize deploy/operator > '$(RELEASE_DIR)'/vrrp-operator.yaml
	'$(KUBECTL)' kustomize deploy/openshift > '$(RELEASE_DIR)'/vrrp-operator-openshift.yaml
	cd '$(RELEASE_DIR)' && sha256sum $$(ls | grep -v '^SHA256SUMS$$') > SHA256SUMS
	@echo "release $(VERSION) in $(RELEASE_DIR)"

## helm: lint the chart (--strict: warnings and undefined values fail; make test runs the same
## in test/install's TestChartLintStrict, with more value sets) and package it into bin/
helm:
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) --set openshift.enabled=true --set metrics.serviceMonitor.enabled=true
	$(HELM) lint --strict $(CHART) --set monitoring.prometheusRule.enabled=true --set monitoring.dashboard.enabled=true
	$(HELM) package $(CHART) -d $(BIN)

## render: the install's manifests into bin/render/: kustomize's two steps (deploy/cluster, then
## the default or OpenShift operator) and the chart with its default values (what test/install
## checks against an API server)
render: envtest
	@mkdir -p $(BIN)/render
	$(ENVTEST_ASSETS)/kubectl kustomize deploy/cluster > $(BIN)/render/kustomize-cluster.yaml
	$(ENVTEST_ASSETS)/kubectl kustomize deploy/operator > $(BIN)/render/kustomize-default.yaml
	$(ENVTEST_ASSETS)/kubectl kustomize deploy/openshift > $(BIN)/render/kustomize-openshift.yaml
	$(HELM) template vrrp-operator $(CHART) --namespace vrrp-operator --include-crds > $(BIN)/render/helm-default.yaml
	$(HELM) template vrrp-operator $(CHART) --namespace vrrp-operator --include-crds --set openshift.enabled=true > $(BIN)/render/helm-openshift.yaml

## manifests: regenerate the CRDs under deploy/crds, the deepcopy code in api/ and the operator's ClusterRole,
## and copy them and deploy/monitoring's alerts and dashboard into the chart (its CRDs into files/crds/, which
## templates/crds.yaml renders: a CRD under the chart's crds/ would never be upgraded)
manifests:
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=deploy/crds
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) rbac:roleName=vrrp-operator paths=./controller/... output:rbac:artifacts:config=deploy/operator/rbac
	mkdir -p $(CHART)/files/crds && cp deploy/crds/*_*.yaml $(CHART)/files/crds/
	cp deploy/operator/rbac/role.yaml $(CHART)/files/role.yaml
	cp deploy/operator/policy/admission_policy.yaml $(CHART)/files/admission_policy.yaml
	cp deploy/monitoring/prometheusrule.yaml deploy/monitoring/dashboard.json $(CHART)/files/

## check-manifests: fail if the generated CRDs or deepcopy code are stale
check-manifests: manifests
	@git diff --exit-code -- deploy/crds deploy/operator/rbac $(CHART)/files api || { echo "generated files are stale: run make manifests and commit"; exit 1; }
	@new=$$(git ls-files --others --exclude-standard -- deploy/crds deploy/operator/rbac $(CHART)/files api); if [ -n "$$new" ]; then echo "generated files not committed:"; echo "$$new"; exit 1; fi

## demo: a bridge and three hosts in network namespaces; two vrrpd elect a master, the master's link
## is cut and the VIP moves, then a graceful stop (needs root; DEMO_FLAGS=--keep leaves the lab up)
demo:
	@if [ "$$(id -u)" != 0 ]; then echo "make demo needs root for its network namespaces: sudo make demo"; exit 1; fi
	CGO_ENABLED=0 $(GO) build -tags '$(VRRPD_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/vrrpd ./cmd/vrrpd
	$(GO) run ./cmd/demo --vrrpd $(BIN)/vrrpd $(DEMO_FLAGS)

## envtest: kube-apiserver, kubectl and etcd for envtest into bin/envtest
envtest:
	hack/envtest-assets.sh $(ENVTEST_ASSETS)

## envtest-floor: the floor's kube-apiserver (K8S_FLOOR_VERSION) and etcd into bin/envtest-floor
envtest-floor:
	K8S_VERSION=$(K8S_FLOOR_VERSION) K8S_BINARIES=kube-apiserver hack/envtest-assets.sh $(ENVTEST_FLOOR_ASSETS)

clean:
	rm -rf $(BIN)
