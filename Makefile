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

# make test runs the crash test with this many kills; test-crash-long with 60.
CRASH_KILLS ?= 5

.PHONY: all help build test vet test-unit test-conformance test-conformance-etcd \
	test-crash test-crash-long bench-store run clean

all: build

help:
	@echo "make build                  go build ./... and bin/heaven-server"
	@echo "make run                    heaven-server store --data-dir $(DATA_DIR) (etcd v3 API on 127.0.0.1:2379)"
	@echo "make test                   vet, unit tests (-race), storage conformance (-race), short crash test"
	@echo "make test-conformance-etcd  the conformance suite against a real embedded etcd, for comparison"
	@echo "make test-crash-long        the crash test with 60 kill -9s"
	@echo "make bench-store            git store vs embedded etcd under the same client load"
	@echo "make clean                  remove bin/ and .cache/ (not the data in $(DATA_DIR))"

build:
	$(GO) build ./...
	$(GO) build -o $(BIN)/heaven-server ./cmd/heaven-server

test: vet test-unit test-conformance test-crash

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

test-crash-long:
	CRASH_KILLS=60 $(GO) test -count=1 -v -timeout 30m ./test/crash/

bench-store:
	$(GO) build -o $(BIN)/bench-store ./hack/bench-store
	$(BIN)/bench-store $(BENCH_FLAGS)

run: build
	$(BIN)/heaven-server store --data-dir $(DATA_DIR) $(RUN_FLAGS)

clean:
	rm -rf $(BIN) $(CURDIR)/.cache
