# Build, lint, test, bench and fuzz entry points for github.com/dsh-go/harness.
#
# golangci-lint is pinned as a Go tool in its own module (tools/go.mod), so it
# never enters the main module's dependency graph. `go tool` caches the built
# binary in GOCACHE: the first run builds it (about a minute), later runs start
# at once.

GO       ?= go
LINT     := $(GO) tool -modfile=tools/go.mod golangci-lint
FUZZTIME ?= 30s
# Extra flags of the exec round trip (make bench, make bench-exec), e.g.
# -exec-big=false to leave out its million-entry workspace.
BENCH_EXEC_FLAGS ?=
BIN      := bin/harness

# Recipes run in bash with pipefail, so `go test ... | tee` fails when go test does.
SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c

.DEFAULT_GOAL := build

.PHONY: build lint fmt check test bench fuzz clean demo e2e need-bwrap test-unprivileged docs darwin

## build: compile every package, then bin/harness with its small command
## helper embedded (scripts/build-harness.sh: each command starts a 4 MB
## helper, not a copy of the whole binary).
build:
	@echo "build: compiling every package, then $(BIN) (20-40 s on 2 cores the first time, silently)" >&2
	$(GO) build ./...
	GO='$(GO)' ./scripts/build-harness.sh $(BIN)

## need-bwrap: install bubblewrap (bwrap, which confines commands) when it is
## missing and make runs as root with apt-get; otherwise say in one line what
## runs without it. Never fails.
need-bwrap:
	@./scripts/need-bwrap.sh

## demo: build bin/harness and run a short, real MCP session against `harness serve`.
demo: need-bwrap
	@echo "demo: compiling $(BIN) (20-40 s on 2 cores, silently; the first build also downloads modules), then the session" >&2
	GO='$(GO)' ./scripts/build-harness.sh $(BIN)
	$(BIN) demo

## lint: golangci-lint (linters and formatters from .golangci.yml). The
## first run builds golangci-lint into the Go cache and prints nothing while
## it does, so say so first.
lint:
	@echo "lint: golangci-lint over the module (about 2 minutes on 2 cores, silent unless it finds something; the first run also builds golangci-lint, a few minutes more)" >&2
	$(LINT) run ./...

## fmt: rewrite files with the configured formatters (gofumpt, goimports).
fmt:
	$(LINT) fmt ./...

## WITH_HELPER starts a recipe line whose go test compiles the test binaries
## as make build compiles harness: with the command helper embedded
## (scripts/helper-flags.sh, the flags in the array helper), so the runner's
## tests start the small helper a release starts, not a copy of the
## race-enabled test binary (half the CPU of each command). go test alone
## works too: its binaries start themselves as the helper.
WITH_HELPER = hdir="$$(mktemp -d)"; trap 'rm -rf "$$hdir"' EXIT; \
	hflags="$$(GO='$(GO)' ./scripts/helper-flags.sh "$$hdir")"; mapfile -t helper <<<"$$hflags";

## check: the fast tier, for every change: go vet, then every package's tests
## without the race detector and with -short (the long race loops a tenth as
## long), but the command runner's integration suites, which start hundreds
## of sandboxed commands (services/execsandbox, services/toolexec,
## cmd/harness/internal/compose): make test runs those with the rest.
CHECK_SKIP := /services/execsandbox$$|/services/toolexec$$|/cmd/harness/internal/compose$$
check:
	@echo "check: go vet, then the tests without -race and with -short, but the runner's integration suites (about 2 minutes on 2 cores)" >&2
	$(GO) vet ./...
	$(WITH_HELPER) $(GO) test -short -count=1 "$${helper[@]}" $$($(GO) list ./... | grep -Ev '$(CHECK_SKIP)')

## darwin: build and vet every package for macOS (the platform seam of
## docs/architecture.md: there the runner and the file fence refuse).
darwin:
	@echo "darwin: GOOS=darwin go build and go vet of every package (about a minute)" >&2
	GOOS=darwin $(GO) build ./...
	GOOS=darwin $(GO) vet ./...

## test: lint, vet (and for darwin), then the race-enabled test suite, uncached
## (without go test's own vet pass: go vet has just checked every package),
## and beside it compose's TestProtectedParity without the race detector (a
## table of what the disk holds, which skips under it: its 420 servers were
## a third of the suite's CPU).
## go test starts packages in the order named (one named twice runs once):
## TEST_FIRST are the longest-running, so none of them starts last and runs
## alone while the other core idles. TEST_JOBS packages run at once, one
## more than the 2 cores here: the runner's suites spend much of their
## time waiting for commands and sleeps (the runner's own as an ordinary
## user: 263 s, 141 s of CPU). Every test binary but the longest
## (services/execsandbox) runs at nice 10 (scripts/test-exec.sh), the
## parity run too: the rest take the CPU it leaves, and the suite ends when
## it does.
TEST_FIRST := ./services/execsandbox ./cmd/harness/internal/compose ./services/toolexec ./cmd/harness ./cmd/harness/internal/cli ./services/fssandbox ./services/internal/fsbackend
TEST_JOBS  ?= 3
test: need-bwrap lint darwin
	@echo "test: go vet (under a minute)" >&2
	$(GO) vet ./...
	@echo "test: the race-enabled test suite (builds with cgo: needs gcc; about a minute to compile on 2 cores before the first package reports, several minutes in all)" >&2
	$(WITH_HELPER) \
	$(GO) test -vet=off -count=1 -timeout 30m -exec "$$PWD/scripts/test-exec.sh" "$${helper[@]}" -run '^TestProtectedParity$$' ./cmd/harness/internal/compose >"$$hdir/parity.log" 2>&1 & parity=$$!; \
	rc=0; $(GO) test -race -vet=off -count=1 -timeout 30m -p $(TEST_JOBS) -exec "$$PWD/scripts/test-exec.sh" "$${helper[@]}" $(TEST_FIRST) ./... || rc=$$?; \
	prc=0; wait $$parity || prc=$$?; \
	echo "test: TestProtectedParity, without the race detector:" >&2; cat "$$hdir/parity.log"; \
	[ "$$rc" -eq 0 ] && [ "$$prc" -eq 0 ]

## test-unprivileged: (root only) the runner's, the fence's and the file tools'
## tests again, uncached and without the race detector, as an ordinary user (created when
## missing, default harness-ci) on a copy of the working tree in its home, with
## its own Go caches; see scripts/test-unprivileged.sh.
test-unprivileged:
	@echo "test-unprivileged: the runner's, the fence's, the tools', the journal's and the audit log's tests as the unprivileged user $${HARNESS_TEST_USER:-harness-ci}, on a copy of this tree in its home (root only)" >&2
	GO='$(GO)' ./scripts/test-unprivileged.sh

## bench: build bin/harness; compare `harness serve` at both durability levels
## (--durability full and atomic, two series taking turns) with the reference
## MCP filesystem server over stdio (bench/, its own module; needs node >= 20
## and npm): cold start (spawn to tools/list answered, median of 10 spawns),
## idle and peak memory, then calls/s of read, overwrite, edit and creation,
## checked against issue 15's targets, and the exec round trip of issues 22
## and 34 (see bench-exec; BENCH_EXEC_FLAGS=-exec-big=false leaves out its
## million-entry workspace); it rewrites the generated section of
## docs/benchmarks.md and docs/bench-calls.svg (about 10 minutes alone on
## 2 cores); then run the in-process benchmarks documented in
## docs/benchmarks.md into bench.out. Progress goes to stderr.
bench:
	@echo "bench: building $(BIN)" >&2
	GO='$(GO)' ./scripts/build-harness.sh $(BIN)
	cd bench && $(GO) run . -harness ../$(BIN) -out ../docs/benchmarks.md -chart ../docs/bench-calls.svg $(BENCH_EXEC_FLAGS)
	@echo "bench: in-process benchmarks of docs/benchmarks.md (1/3: fslocal) into bench.out" >&2
	$(GO) test -run '^$$' -bench 'OverFloor|EditText|ReadText' -benchtime 500x -count 5 ./services/internal/fsbackend/ | tee bench.out
	@echo "bench: in-process benchmarks (2/3: fssandbox fence overhead)" >&2
	$(GO) test -run '^$$' -bench FenceOverhead -benchtime 1500x -count 3 ./services/fssandbox/ | tee -a bench.out
	@echo "bench: in-process benchmarks (3/3: 1 GiB read window)" >&2
	$(GO) test -run '^$$' -bench ReadLastWindow1GiB -benchtime 1x -count 3 ./services/toolfs/ | tee -a bench.out
	@echo "bench: in-process benchmarks (journal on vs off, 1 KiB overwrite)" >&2
	$(GO) test -run '^$$' -bench JournalOverwrite -benchtime 500x -count 5 ./services/internal/fsbackend/ | tee -a bench.out
	@echo "bench: in-process benchmarks (Landlock hand-off)" >&2
	$(GO) test -run '^$$' -bench RunOverhead -benchtime 20000x -count 5 ./internal/landlock/ | tee -a bench.out
	@echo "bench: in-process benchmarks (releasing 50 placeholders another command holds)" >&2
	$(GO) test -run '^$$' -bench ReleaseBesideAHolder -benchtime 5x -count 3 ./internal/subproc/ | tee -a bench.out
	@echo "bench: in-process benchmarks (--journal-commands on a 10,000-file workspace)" >&2
	$(GO) test -run '^$$' -bench CommandJournal -benchtime 100x -count 3 ./services/cmdjournal/ | tee -a bench.out
	@echo "bench: in-process benchmarks (reading a 100,000-record audit log)" >&2
	$(GO) test -run '^$$' -bench 'BenchmarkRead$$' -benchtime 5x -count 3 ./services/audit/ | tee -a bench.out
	@echo "bench: in-process benchmarks (harness audit over 100,000 records)" >&2
	$(GO) test -run '^$$' -bench AuditCommand -benchtime 5x -count 3 ./cmd/harness/internal/cli/ | tee -a bench.out
	@echo "bench: read over Streamable HTTP against stdio (see bench-http)" >&2
	cd bench && $(GO) run . -harness ../$(BIN) -only http -out ../docs/benchmarks.md
	@echo "bench: done; figures in docs/benchmarks.md, docs/bench-calls.svg and bench.out" >&2

## bench-exec: build bin/harness and measure only the exec round trip of
## issues 22 and 34 (bench/execrt.go): A, the MCP call of exec with
## {"command":"true"} against `harness serve --mode workspace-write`
## (bubblewrap isolation); B, a bare bwrap replaying the arguments harness's
## own bwrap got, running /bin/true; C, /bin/sh -c true; taking turns, 60
## rounds after 5 warm-up rounds, in five scenarios under /var/tmp, each
## with a fresh server whose first exec is timed: an empty workspace, 100,000
## files, a million entries (made once, a minute or so; left out with
## BENCH_EXEC_FLAGS=-exec-big=false), and an empty workspace whose
## --temp-root of 50,000 entries a goroutine churns, with private temp areas
## and with --shared-temp (two to three minutes in all). It prints wall times,
## CPU per call and the targets (issue 34: empty workspace at most 1.5x B's
## wall and 2x its CPU, other scenarios at most 1.2x the empty workspace's,
## first call at most 2x the median; issue 22: A's median <= 12 ms, A <= 2.5x
## B) to stderr and rewrites only the exec round trip's part of
## docs/benchmarks.md's generated section. Needs bwrap (make need-bwrap
## installs it).
.PHONY: bench-exec
bench-exec:
	@echo "bench-exec: building $(BIN)" >&2
	GO='$(GO)' ./scripts/build-harness.sh $(BIN)
	cd bench && $(GO) run . -harness ../$(BIN) -only exec -out ../docs/benchmarks.md $(BENCH_EXEC_FLAGS)

## bench-http: build bin/harness and measure only read over Streamable HTTP
## against stdio (issue 26, bench/httpvs.go): the same binary serving the
## same 1 KiB file over `serve --listen 127.0.0.1:0` (bearer token, one
## principal) and over stdio, at concurrency 1 and 8, taking turns slice by
## slice, 5 runs with fresh servers (about a minute); it prints the figures
## and the target (HTTP at least 0.7x stdio) to stderr and rewrites only its
## section of docs/benchmarks.md.
.PHONY: bench-http
bench-http:
	@echo "bench-http: building $(BIN)" >&2
	GO='$(GO)' ./scripts/build-harness.sh $(BIN)
	cd bench && $(GO) run . -harness ../$(BIN) -only http -out ../docs/benchmarks.md

## bench-search: build the search fixture outside the repository (copies of
## GOROOT and the module cache, >= 50,000 files; HARNESS_SEARCH_FIXTURE, default
## /var/tmp/harness-search-fixture), then compare harness's grep with
## `rg` and `grep -rn` on it, warm cache (HARNESS_SEARCH_COLD=1: cold, root
## only), and time glob `**/*.go`. Needs ripgrep (apt-get install ripgrep).
.PHONY: bench-search
bench-search:
	HARNESS_SEARCH_FIXTURE="$$(./scripts/search-fixture.sh | cut -d' ' -f1)" \
		$(GO) test -run '^$$' -bench 'CompareFixture|GlobFixture' -benchtime 3x -timeout 60m ./internal/search/ | tee bench-search.out

## fuzz: run each fuzz target in the module for FUZZTIME (one target at a time).
fuzz:
	GO='$(GO)' FUZZTIME='$(FUZZTIME)' ./scripts/fuzz.sh

## soak: the long variants: load (8 MCP clients x 10,000 calls; over
## Streamable HTTP, 100 sessions x 200 calls of two principals, and a team's
## 100 sessions x 200 reads on the default caps, of one principal and of ten), crash safety
## (1,000 SIGKILLs), the cross-process guarded edits and the move race (30 s
## per variant of a directory moved out and back every 0.5 ms) and the
## command runner's protected-path search of 200,000 directories, its
## 1,000 commands beside a host that changes the tree and a minute of
## commands racing for the reserved `.git`, race-enabled.
.PHONY: soak
soak:
	HARNESS_SOAK=1 HARNESS_KILLS=1000 $(GO) test -race -count=1 -run 'TestLoad|TestHTTPSoak|TestHTTPTeamLoad|TestCrashSafety|TestCrossProcess|TestMoveOutRace|TestAttack2Search|TestHost|TestAttackReservedGit' -timeout 60m ./cmd/harness/ ./cmd/harness/internal/mcpserver/ ./services/internal/fsbackend/ ./services/fssandbox/ ./services/execsandbox/

## e2e: end-to-end test of `harness serve` with the official MCP TypeScript SDK
## as an independent client, over stdio and over Streamable HTTP (needs node >= 20
## and npm; see e2e/README.md).
e2e:
	@echo "e2e: compiling $(BIN), then installing the client's npm packages" >&2
	GO='$(GO)' ./scripts/build-harness.sh $(BIN)
	cd e2e && npm ci --no-audit --no-fund
	node e2e/client.mjs
	node e2e/http.mjs

## docs: regenerate what the docs' tests check is current: docs/reference.md
## (harness help --markdown) and the package table of docs/architecture.md
## (from go list).
docs:
	$(GO) test ./cmd/harness/internal/cli -run TestReferenceCurrent -count=1 -update
	$(GO) test ./docs -run TestArchitecturePackageTable -count=1 -update

## clean: remove build and benchmark outputs.
clean:
	rm -rf bin bench.out bench-search.out
	$(GO) clean -testcache
