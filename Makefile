# Heaven: build, test, run and benchmark. `make help` lists the targets.

GO ?= go
BIN := $(CURDIR)/bin

# Go's build and test cache lives in the (git-ignored) .cache directory, so a
# checkout builds the same way everywhere and CI can keep it between runs.
# Set GOCACHE in the environment to share one with other checkouts.
GOCACHE ?= $(CURDIR)/.cache/go-build
export GOCACHE

# Packages tested on every `make test`: everything but the conformance suite
# and the crash test, which have targets of their own.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v -e /conformance -e /test/ -e /hack/)

# make run: where the data lives and any extra flags for heaven-server store.
DATA_DIR ?= ./.heaven
RUN_FLAGS ?=

# make bench-store: flags for hack/bench-store (see its -help).
BENCH_FLAGS ?=

# make bench-server: flags for hack/bench-server (see its -help).
BENCH_SERVER_FLAGS ?=

# make test runs the crash test with this many kills; test-crash-long with 60.
CRASH_KILLS ?= 5

# Tools built from the separate module in hack/tools (its go.mod pins their
# versions): the real kubectl, stamped with the version of the pinned
# k8s.io/kubectl.
TOOLS_BIN := $(CURDIR)/.cache/bin
KUBECTL := $(TOOLS_BIN)/kubectl
TOOLS_MOD := hack/tools/go.mod hack/tools/go.sum
# kubectl's version is the kube binaries' (KUBE_VERSION, below): one release.
KUBECTL_VERSION = $(KUBE_VERSION)
KUBECTL_LDFLAGS = -X k8s.io/component-base/version.gitVersion=$(KUBECTL_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37

# The real kube-apiserver, kube-controller-manager and kube-scheduler for
# `make test-e2e`,
# built from the separate module in hack/kube (its go.mod pins
# k8s.io/kubernetes and says why at this version) and stamped with it, so
# `--version` and /version report it.
KUBE_VERSION := v1.37.1
KUBE_MOD := hack/kube/go.mod hack/kube/go.sum
KUBE_APISERVER := $(TOOLS_BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(TOOLS_BIN)/kube-controller-manager
KUBE_SCHEDULER := $(TOOLS_BIN)/kube-scheduler
# kwok, the node agent of the headless cluster test, from hack/kwok.
KWOK := $(TOOLS_BIN)/kwok
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
	-X k8s.io/component-base/version.gitTreeState=clean

.PHONY: all help build test vet test-unit test-conformance test-conformance-etcd \
	test-crash test-crash-long test-chaos test-chaos-short test-integration bench-store bench-server run clean
.PHONY: tools
.PHONY: kube-binaries kwok test-e2e test-helm generate krew
.PHONY: bench-syncer bench-headless
.PHONY: bench-merge
.PHONY: image align-modules

all: build

help:
	@echo "make build                  go build ./..., bin/heaven-server and bin/kubectl-heaven (the kubectl plugin)"
	@echo "make run                    heaven-server --data-dir $(DATA_DIR): heavens at https://127.0.0.1:6443/clusters/<name>"
	@echo "make test                   vet, unit tests (-race), storage conformance (-race), short crash test, integration (kubectl), e2e (real clusters)"
	@echo "make test-integration       heaven-server driven by client-go and the real kubectl"
	@echo "make test-e2e               end-to-end tests against real clusters (local kube-apiserver, or E2E_PROVIDER=kind)"
	@echo "make test-conformance-etcd  the conformance suite against a real embedded etcd, for comparison"
	@echo "make test-crash-long        the crash test with 60 kill -9s"
	@echo "make test-chaos             20 minutes of writes, git pushes good and bad, force-pushes, kill -9 and git gc (make test runs 2)"
	@echo "make bench-store            git store vs embedded etcd under the same client load"
	@echo "make bench-server           heaven-server end to end: git vs etcd storage, memory per heaven, cold starts"
	@echo "make bench-syncer           the syncer against a real cluster: initial sync of 1,000 objects, latency of single updates"
	@echo "make bench-headless         Deployment to pods Running: the headless cluster vs one kube-apiserver, same controllers and kwok"
	@echo "make bench-merge            our merge of two branches (10,000 objects, 1,000 changes a side) vs git merge (merge-ort)"
	@echo "make tools                  build kubectl from hack/tools into .cache/bin"
	@echo "make test-helm              the Helm SDK installs, upgrades and uninstalls test/helm/shop in a heaven (hack/helm)"
	@echo "make kwok                   build kwok (the headless cluster test's node agent) from hack/kwok into .cache/bin"
	@echo "make krew                   the kubectl-heaven archive and krew manifest in dist/"
	@echo "make generate               regenerate the APIs' deep copies, history.heaven.dev's OpenAPI, heaven.dev's clientset, listers and informers (pkg/generated)"
	@echo "make align-modules          raise the dependencies hack/*'s modules share with the main module to its versions (one compile of each)"
	@echo "make kube-binaries          build kube-apiserver, kube-controller-manager and kube-scheduler $(KUBE_VERSION) from hack/kube into .cache/bin"
	@echo "make image                  build the syncer's container image $(SYNCER_IMAGE) (needs docker)"
	@echo "make clean                  remove bin/ and .cache/ (not the data in $(DATA_DIR))"

build:
	$(GO) build ./...
	$(GO) build -o $(BIN)/heaven-server ./cmd/heaven-server
	$(GO) build -o $(BIN)/kubectl-heaven ./cmd/kubectl-heaven

# make test runs two jobs at once (-j2), since the tests alone keep less
# than one of two CPUs busy. One lane: the tests built with -race (unit,
# then conformance, then integration and e2e side by side, then Helm).
# The other: vet, the tools the integration and e2e tests run (whose
# packages are mostly those vet compiled, see align-modules), the crash
# test and the chaos test; once it is done, integration and e2e share the
# two slots. Each target's output is printed whole when it ends.
TEST_LANES := test-unit test-conformance test-integration test-e2e test-helm \
	vet tools kube-binaries kwok test-crash test-chaos-short
test:
	$(MAKE) -j2 --output-sync=target TEST_LANES_ORDERED=1 $(TEST_LANES)

# The order within each lane, for `make test` only (order-only: asked
# alone, each target still runs just itself).
ifdef TEST_LANES_ORDERED
test-conformance: | test-unit
test-integration: | test-conformance
test-e2e: | test-conformance
test-helm: | test-integration test-e2e
$(KUBECTL): | vet
$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER): | $(KUBECTL)
$(KWOK): | $(KUBE_APISERVER)
test-crash: | $(KWOK)
test-chaos-short: | test-crash
endif

vet:
	$(GO) vet ./...

test-unit:
	$(GO) test -race -timeout 10m $(UNIT_PKGS)

# Upstream's Kubernetes storage suite through an etcd3 store whose client
# talks to the facade (single-branch mode); see its README.md.
test-conformance:
	$(GO) test -race -timeout 15m ./pkg/gitstore/etcdv3/conformance/

test-conformance-etcd:
	CONFORMANCE_BACKEND=etcd $(GO) test -count=1 -timeout 15m ./pkg/gitstore/etcdv3/conformance/

# The crash test runs heaven-server as a subprocess, so its result must never
# come from the test cache (-count=1): the server is not an input of the test
# binary.
test-crash:
	CRASH_KILLS=$(CRASH_KILLS) $(GO) test -count=1 -timeout 10m ./test/crash/

# heaven-server in the test process, driven by client-go and the real kubectl.
test-integration: $(KUBECTL)
	KUBECTL=$(KUBECTL) $(GO) test -race -count=1 -timeout 20m ./test/integration/

# Real clusters (kube-apiserver and kube-controller-manager subprocesses on an
# embedded etcd, or kind with E2E_PROVIDER=kind) driven by client-go and the
# real kubectl; see test/e2e/framework.
test-e2e: kube-binaries $(KUBECTL) $(KWOK)
	KUBE_APISERVER=$(KUBE_APISERVER) KUBE_CONTROLLER_MANAGER=$(KUBE_CONTROLLER_MANAGER) KUBE_SCHEDULER=$(KUBE_SCHEDULER) KUBECTL=$(KUBECTL) KWOK=$(KWOK) \
		$(GO) test -race -count=1 -timeout 20m ./test/e2e/...

# A Helm chart of our own (test/helm) installed into a heaven with the Helm
# SDK, from its own module (hack/helm).
test-helm:
	cd hack/helm && $(GO) test -race -count=1 -timeout 10m ./...

test-crash-long:
	CRASH_KILLS=60 $(GO) test -count=1 -v -timeout 30m ./test/crash/

# The chaos test runs heaven-server as a subprocess under writes through
# client-go and kubectl, git pushes good and bad, force-pushes, kill -9 and
# git gc (see test/chaos); make test runs it for CHAOS_DURATION (2m).
CHAOS_DURATION ?= 2m
test-chaos-short: $(KUBECTL)
	CHAOS_DURATION=$(CHAOS_DURATION) KUBECTL=$(KUBECTL) $(GO) test -count=1 -v -timeout 15m ./test/chaos/

test-chaos: $(KUBECTL)
	CHAOS_DURATION=20m KUBECTL=$(KUBECTL) $(GO) test -count=1 -v -timeout 40m ./test/chaos/

bench-store:
	$(GO) build -o $(BIN)/bench-store ./hack/bench-store
	$(BIN)/bench-store $(BENCH_FLAGS)

bench-server:
	$(GO) build -o $(BIN)/bench-server ./hack/bench-server
	$(BIN)/bench-server $(BENCH_SERVER_FLAGS)

# make bench-headless: time from a Deployment of 10 and 100 replicas to its
# pods Running in the headless cluster vs a plain kube-apiserver with the
# same kube-controller-manager, kube-scheduler and kwok (test/e2e,
# TestBenchHeadless); BENCH_HEADLESS_RUNS measurements of each (median).
BENCH_HEADLESS_RUNS ?= 3
bench-headless: kube-binaries $(KUBECTL) $(KWOK)
	HEAVEN_BENCH_HEADLESS=1 HEAVEN_BENCH_RUNS=$(BENCH_HEADLESS_RUNS) \
	KUBE_APISERVER=$(KUBE_APISERVER) KUBE_CONTROLLER_MANAGER=$(KUBE_CONTROLLER_MANAGER) KUBE_SCHEDULER=$(KUBE_SCHEDULER) KUBECTL=$(KUBECTL) KWOK=$(KWOK) \
		$(GO) test -count=1 -timeout 90m -run '^TestBenchHeadless$$' -v ./test/e2e/ | grep -E '^RESULT|headless_bench_test'

# make bench-merge: flags for hack/bench-merge (-objects, -changes, -runs, -cpuprofile).
BENCH_MERGE_FLAGS ?=
bench-merge:
	$(GO) build -o $(BIN)/bench-merge ./hack/bench-merge
	$(BIN)/bench-merge $(BENCH_MERGE_FLAGS)

# make bench-syncer: flags for hack/bench-syncer (-objects, -deployments, -updates, -workers, -qps, -cpuprofile; see -help).
BENCH_SYNCER_FLAGS ?=
bench-syncer: kube-binaries
	$(GO) build -o $(BIN)/bench-syncer ./hack/bench-syncer
	KUBE_APISERVER=$(KUBE_APISERVER) KUBE_CONTROLLER_MANAGER=$(KUBE_CONTROLLER_MANAGER) $(BIN)/bench-syncer $(BENCH_SYNCER_FLAGS)

run: build
	$(BIN)/heaven-server --data-dir $(DATA_DIR) $(RUN_FLAGS)

tools: $(KUBECTL)

$(KUBECTL): $(TOOLS_MOD) hack/tools/kubectl/main.go
	cd hack/tools && $(GO) build -ldflags "$(KUBECTL_LDFLAGS)" -o $@ ./kubectl

# Generated code of the history.heaven.dev API (deep copies, OpenAPI
# definitions and model names) and of the heaven.dev API (deep copies, and
# its typed clientset, listers and informers in pkg/generated), from
# k8s.io/code-generator and k8s.io/kube-openapi at the versions go.mod pins.
KUBE_OPENAPI_VERSION = $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kube-openapi)
CODE_GENERATOR_VERSION = $(shell $(GO) list -m -f '{{.Version}}' k8s.io/apimachinery)
MODULE := github.com/heaven-dev/heaven
HISTORY_API := ./pkg/apis/history/v1alpha1
HEAVEN_API := ./pkg/apis/heaven/v1alpha1
GENERATED := pkg/generated
CODE_GENERATOR := k8s.io/code-generator/cmd
generate:
	$(GO) run k8s.io/code-generator/cmd/deepcopy-gen@$(CODE_GENERATOR_VERSION) \
		--output-file zz_generated.deepcopy.go --go-header-file hack/boilerplate.go.txt $(HISTORY_API)
	$(GO) run k8s.io/kube-openapi/cmd/openapi-gen@$(KUBE_OPENAPI_VERSION) \
		--output-dir $(HISTORY_API) --output-pkg github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1 \
		--output-file zz_generated.openapi.go --output-model-name-file zz_generated.model_name.go \
		--go-header-file hack/boilerplate.go.txt --report-filename /dev/null \
		--readonly-pkg k8s.io/apimachinery/pkg/apis/meta/v1 --readonly-pkg k8s.io/apimachinery/pkg/runtime \
		--readonly-pkg k8s.io/apimachinery/pkg/version \
		k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version $(HISTORY_API)
	$(GO) run $(CODE_GENERATOR)/deepcopy-gen@$(CODE_GENERATOR_VERSION) \
		--output-file zz_generated.deepcopy.go --go-header-file hack/boilerplate.go.txt $(HEAVEN_API)
	rm -rf $(GENERATED)
	$(GO) run $(CODE_GENERATOR)/client-gen@$(CODE_GENERATOR_VERSION) \
		--clientset-name versioned --input-base $(MODULE)/pkg/apis --input heaven/v1alpha1 \
		--output-dir $(GENERATED)/clientset --output-pkg $(MODULE)/$(GENERATED)/clientset \
		--go-header-file hack/boilerplate.go.txt
	$(GO) run $(CODE_GENERATOR)/lister-gen@$(CODE_GENERATOR_VERSION) \
		--output-dir $(GENERATED)/listers --output-pkg $(MODULE)/$(GENERATED)/listers \
		--go-header-file hack/boilerplate.go.txt $(HEAVEN_API)
	$(GO) run $(CODE_GENERATOR)/informer-gen@$(CODE_GENERATOR_VERSION) \
		--versioned-clientset-package $(MODULE)/$(GENERATED)/clientset/versioned \
		--listers-package $(MODULE)/$(GENERATED)/listers \
		--output-dir $(GENERATED)/informers --output-pkg $(MODULE)/$(GENERATED)/informers \
		--go-header-file hack/boilerplate.go.txt $(HEAVEN_API)

# The plugin's archive and krew manifest for this machine's platform, in
# dist/: kubectl krew install --manifest=dist/heaven.yaml --archive=dist/kubectl-heaven.tar.gz
KREW_VERSION ?= v0.0.0-dev
KREW_URI ?= https://github.com/heaven-dev/heaven/releases/download/$(KREW_VERSION)/kubectl-heaven_$(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH).tar.gz
krew:
	mkdir -p dist/krew
	$(GO) build -o dist/krew/kubectl-heaven ./cmd/kubectl-heaven
	cp LICENSE dist/krew/ 2>/dev/null || true
	tar -C dist/krew -czf dist/kubectl-heaven.tar.gz .
	sed -e 's|@VERSION@|$(KREW_VERSION)|' -e 's|@OS@|$(shell $(GO) env GOOS)|' -e 's|@ARCH@|$(shell $(GO) env GOARCH)|' \
		-e 's|@URI@|$(KREW_URI)|' -e "s|@SHA256@|$$(sha256sum dist/kubectl-heaven.tar.gz | cut -d' ' -f1)|" \
		hack/krew/heaven.yaml.in > dist/heaven.yaml

# The tool modules under hack/ take the main module's version of every
# dependency they share with it, so a cold build compiles k8s.io/kubernetes
# and client-go once, not once per module (see hack/align-modules.sh).
align-modules:
	GO=$(GO) hack/align-modules.sh

kube-binaries: $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER)

kwok: $(KWOK)

# kwok reads its stages (node and pod lifecycles) from a file next to it,
# written from kwok's module by hack/kwok/stages.
$(KWOK): hack/kwok/go.mod hack/kwok/go.sum hack/kwok/stages/main.go
	cd hack/kwok && $(GO) build -o $@ sigs.k8s.io/kwok/cmd/kwok && $(GO) run ./stages $@-stages.yaml

# One go build for all three: they share most of their packages, and the
# build compiles them once.
$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) &: $(KUBE_MOD)
	cd hack/kube && $(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $(TOOLS_BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler

# The syncer's container image, which the cluster controller installs
# (heaven-server --syncer-image); with kind: kind load docker-image $(SYNCER_IMAGE).
SYNCER_IMAGE ?= heaven-syncer:latest
image:
	docker build -f cmd/syncer/Dockerfile -t $(SYNCER_IMAGE) .

clean:
	rm -rf $(BIN) $(CURDIR)/.cache
