# Build, lint, test, bench and fuzz entry points for github.com/dsh-go/harness.
#
# golangci-lint is pinned as a Go tool in its own module (tools/go.mod), so it
# never enters the main module's dependency graph. `go tool` caches the built
# binary in GOCACHE: the first run builds it (about a minute), later runs start
# at once.

GO       ?= go
LINT     := $(GO) tool -modfile=tools/go.mod golangci-lint
FUZZTIME ?= 30s
BIN      := bin/harness

# Recipes run in bash with pipefail, so `go test ... | tee` fails when go test does.
SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c

.DEFAULT_GOAL := build

.PHONY: build lint fmt test bench fuzz clean demo e2e

## build: compile every package; also bin/harness once cmd/harness exists.
build:
	$(GO) build ./...
	if [ -d cmd/harness ]; then $(GO) build -o $(BIN) ./cmd/harness; fi

## demo: build bin/harness and run a short, real MCP session against `harness serve`.
demo:
	$(GO) build -o $(BIN) ./cmd/harness
	$(BIN) demo

## lint: golangci-lint (linters and formatters from .golangci.yml).
lint:
	$(LINT) run ./...

## fmt: rewrite files with the configured formatters (gofumpt, goimports).
fmt:
	$(LINT) fmt ./...

## test: lint, vet, then the race-enabled test suite, uncached.
test: lint
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

## bench: run every benchmark 6 times (benchstat-ready) into bench.out.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=6 ./... | tee bench.out

## fuzz: run each fuzz target in the module for FUZZTIME (one target at a time).
fuzz:
	GO='$(GO)' FUZZTIME='$(FUZZTIME)' ./scripts/fuzz.sh

## e2e: end-to-end test of `harness serve` with the official MCP TypeScript SDK
## as an independent client (needs node >= 20 and npm; see e2e/README.md).
e2e:
	$(GO) build -o $(BIN) ./cmd/harness
	cd e2e && npm ci --no-audit --no-fund
	node e2e/client.mjs

## clean: remove build and benchmark outputs.
clean:
	rm -rf bin bench.out
	$(GO) clean -testcache
