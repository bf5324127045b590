# mirrorctl build, test and release tasks. `make help` lists them.
GO        ?= go
PKG       := github.com/mirrorctl/mirrorctl
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS   := -X $(PKG)/internal/buildinfo.Version=$(VERSION) -X $(PKG)/internal/buildinfo.Commit=$(COMMIT)
BIN       := bin/mirrorctl
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME  ?= 5s

.PHONY: help build demo test test-race race-ci tidy-check cross lint fuzz bench bench-scale completions completions-check docs docs-check install golden bench-kafka perf-table perf-table-check test-kafka kafka-up kafka-down clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/mirrorctl
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/mirrorctl

demo: build ## replicate between two embedded clusters and check every record
	./$(BIN) demo

test: ## unit and embedded-cluster (kfake) tests; no Java needed
	$(GO) test -count=1 -timeout 10m ./...

test-race: ## the same with the race detector
	$(GO) test -race -count=1 -timeout 20m ./...

# The packages that start goroutines or share state between them; CI runs the
# race detector on these only (the whole tree takes too long on 2 cores).
# -short leaves out the multi-process scenarios of internal/cli/replicate
# (SIGKILL crash loops, scale-out, zombies; `make test` runs them). Under
# -race their child processes are race-built, but a race found in one can
# fail nothing: the children end by SIGKILL or with exit 130, and Go turns
# the exit code into 66 only on an exit 0. The engine code they drive runs
# under -race in-process in replicate's tests (members sharing partitions,
# handovers, resumes, --once runs sharing a flow).
RACE_PKGS := ./audit ./failover ./internal/cli ./internal/cli/replicate ./internal/kafka ./internal/metrics ./replicate/...
race-ci: ## the race detector on the packages with concurrency (CI; -short: no multi-process scenarios)
	$(GO) test -race -short -count=1 -timeout 15m $(RACE_PKGS)

tidy-check: ## fail when go.mod or go.sum is not what `go mod tidy` writes
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy and commit the result"; exit 1; }

# Operators run mirrorctl on Linux, macOS and Windows laptops. The code has
# per-OS files (unix or windows) but no per-architecture ones, so windows gets
# every package built and macOS (unix, like the native linux build of
# `make test`) the binary linked. Tests are not built for them: CI time.
cross: ## build every package for windows/amd64 and the binary for darwin/arm64
	GOOS=windows GOARCH=amd64 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/mirrorctl

lint: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags kafka ./...
	$(GO) run $(STATICCHECK) -tags kafka ./...

fuzz: ## run every fuzz target briefly (FUZZTIME per target; scripts/fuzz.sh)
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

bench: build ## replicate 1M x 100 B and 200k x 1 KB on embedded clusters beside a bare franz-go pipe
	$(GO) run ./bench/embedded -mirrorctl $(BIN) -runs 3

BENCH_SCALE_FLAGS ?=
bench-scale: build ## cost against size on embedded clusters: partitions 100-10,000, groups 10-5,000, offset-sync history 10k-1M; writes bench/results/<date>-scale.md and .svg
	$(GO) run ./bench/scale -mirrorctl $(BIN) $(BENCH_SCALE_FLAGS)

BENCH_KAFKA_FLAGS ?=
# flock -o: the brokers started under the lock do not inherit it, so a run that dies before
# `kafka.sh down` cannot leave them holding it.
bench-kafka: build ## mirrorctl vs MirrorMaker 2 vs a bare franz-go pipe on the real brokers; writes bench/results/<date>.md
	flock -o /tmp/mirrorctl-kafka.lock bash -c 'eval "$$(scripts/kafka.sh up)" && $(GO) run ./bench/kafka -mirrorctl $(BIN) $(BENCH_KAFKA_FLAGS); rc=$$?; scripts/kafka.sh down; exit $$rc'

# The README's performance table is written from the newest results file's
# machine-readable summary block (bench/readme refuses a newest file without
# one), so the README cannot quote figures no results file holds.
perf-table: ## rewrite README.md's performance table from the newest bench/results file (go run ./bench/readme)
	$(GO) run ./bench/readme

perf-table-check: ## fail when README.md's performance table is not what make perf-table writes
	$(GO) run ./bench/readme -check

completions: build ## generate shell completion scripts into completions/ (committed; CI fails when they are stale)
	mkdir -p completions
	for sh in bash zsh fish powershell; do ./$(BIN) completion $$sh > completions/mirrorctl.$$sh; done

completions-check: completions ## fail when the committed completions/ differ from the command tree
	@git diff --exit-code -- completions/ && test -z "$$(git ls-files --others --exclude-standard completions/)" \
	  || { echo "completions/ is stale: run make completions and commit it"; exit 1; }

docs: ## generate the command reference (docs/commands/*.md), man pages (man/man1/*.1), docs/config-reference.md and docs/json-fields.md from the code (committed; CI fails when they are stale)
	$(GO) run ./cmd/gen-docs docs/commands man/man1

docs-check: docs ## fail when the committed docs/commands/, man/man1/ or docs/config-reference.md differ from the code
	@git diff --exit-code -- docs/commands/ man/ docs/config-reference.md docs/json-fields.md && test -z "$$(git ls-files --others --exclude-standard docs/commands/ man/ docs/config-reference.md docs/json-fields.md)" \
	  || { echo "docs/commands/, man/, docs/config-reference.md or docs/json-fields.md is stale: run make docs and commit them"; exit 1; }

# PREFIX and DESTDIR as in the GNU conventions: `make install PREFIX=$$HOME/.local`
# for one user, `make install DESTDIR=pkg/ PREFIX=/usr` for a package.
PREFIX  ?= /usr/local
DESTDIR ?=
install: build ## install the binary, man pages and shell completions under $(DESTDIR)$(PREFIX) (default /usr/local)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/mirrorctl
	install -m 0644 man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 completions/mirrorctl.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/mirrorctl
	install -m 0644 completions/mirrorctl.zsh $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_mirrorctl
	install -m 0644 completions/mirrorctl.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/mirrorctl.fish

# Only the packages whose tests use internal/cli/clitest know -update (any
# other test binary rejects the flag).
GOLDEN_PKGS = $(shell grep -rl 'clitest\.' --include='*_test.go' . | xargs -n1 dirname | sort -u)
golden: ## rewrite golden files from current output (then review git diff)
	$(GO) test -count=1 $(GOLDEN_PKGS) -update

test-kafka: ## real Apache Kafka (KRaft) brokers and MirrorMaker 2, installed into a cache outside the repo
	bash scripts/test-kafka.sh

kafka-up: ## start the two real brokers (prints export lines)
	bash scripts/kafka.sh install && bash scripts/kafka.sh up

kafka-down: ## stop the real brokers
	bash scripts/kafka.sh down

clean:
	rm -rf bin
