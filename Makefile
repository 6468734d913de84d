# partnerd — run `make help` for the targets.
SHELL := bash
.DEFAULT_GOAL := help

GO          ?= go
OAPI        := $(GO) tool oapi-codegen
REDOCLY     := npx --yes @redocly/cli@2.11.1
SPEC        := openapi/partner.yaml
OP_SPEC     := openapi/operator.yaml
# The npm tools run against the contracts (Postman's converter, openapi-typescript,
# tsc), pinned by scripts/contract-tools/package-lock.json and installed with npm ci.
CONTRACT_TOOLS := scripts/contract-tools
# Every generated file: config → the spec it is generated from.
GEN_CONFIGS := openapi/server.cfg.yaml:$(SPEC) openapi/client.cfg.yaml:$(SPEC) \
               openapi/operator.server.cfg.yaml:$(OP_SPEC) openapi/operator.client.cfg.yaml:$(OP_SPEC)
# make test runs the suite as it is; make test-race runs the same suite under the
# race detector (about 2.5 times as long on 2 cores). CI runs both. Three packages
# run at once: the browser, chain and restart tests spend much of their time
# waiting, and with two at once the cores idled through those waits.
TEST_FLAGS  ?= -p 3 -count=1 -timeout 30m
# The test binaries are linked without DWARF (debugger data; stack traces and
# failures read the symbol table, which stays): linking some 55 binaries of about
# 100 MB is a large share of the suite's CPU, and -w more than halves each link.
TEST_BUILD_FLAGS ?= -ldflags=-w

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

.PHONY: run
run: build ## Run the service on the embedded SQLite database (prints a demo key on first start)
	@# Private webhook URLs are allowed so `partnerd listen` on this machine receives
	@# events. The binary runs directly (not under go run), so Ctrl-C stops it cleanly.
	WEBHOOK_ALLOW_PRIVATE_URLS=true bin/partnerd serve

NETWORK ?= bep20
.PHONY: devchain
devchain: build ## Run a development chain and the service watching it, on a fresh SQLite database (NETWORK=bep20|trc20; Ctrl-C stops both)
	@[ -x bin/devchain ] || echo "Building bin/devchain (go-ethereum's simulated chain): the first build takes a few minutes on a fresh machine; later ones are quick."
	$(GO) build -o bin/devchain ./cmd/devchain
	@scripts/devchain.sh $(NETWORK)

# What partnerd version prints: the checkout's tag or commit (and -dirty with
# uncommitted changes), also when Go does not stamp the build with it
# (GOFLAGS=-buildvcs=false, a copy without .git).
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null)

.PHONY: build
build: ## Build bin/partnerd
	@# The first build compiles every dependency (minutes on a fresh machine): say so
	@# rather than sit silent. Later builds take seconds.
	@[ -x bin/partnerd ] || echo "building… (the first build of bin/partnerd compiles every dependency: a few minutes on a fresh machine; later builds take seconds)"
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/partnerd ./cmd/partnerd

.PHONY: generate
generate: ## Regenerate gen/ from openapi/partner.yaml and openapi/operator.yaml
	@set -e; for pair in $(GEN_CONFIGS); do \
		echo "$(OAPI) -config $${pair%%:*} $${pair##*:}"; $(OAPI) -config $${pair%%:*} $${pair##*:}; \
	done

.PHONY: check-generated
check-generated: ## Fail when any file in gen/ differs from what the specs produce
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	for pair in $(GEN_CONFIGS); do \
		cfg=$${pair%%:*}; spec=$${pair##*:}; \
		out=$$(sed -n 's#^output: ##p' $$cfg); \
		sed "s#^output: .*#output: $$tmp/$$out#" $$cfg > $$tmp/cfg.yaml; mkdir -p $$tmp/$$(dirname $$out); \
		$(OAPI) -config $$tmp/cfg.yaml $$spec; \
		diff -u $$out $$tmp/$$out; \
	done; \
	extra=$$(cd $$tmp && find gen -type f | sort); have=$$(find gen -type f | sort); \
	if [ "$$extra" != "$$have" ]; then echo "gen/ holds files no config generates:"; diff <(echo "$$extra") <(echo "$$have"); exit 1; fi; \
	echo "generated code is up to date"

.PHONY: check-contract
check-contract: ## Fail when a contract changed without a version bump, or broke compatibility without a new major version (oasdiff against the last release)
	@scripts/check-contract.sh

.PHONY: release-contract
release-contract: ## Keep each contract's current version in openapi/released/ (after bumping info.version and adding its CHANGELOG entry)
	@scripts/check-contract.sh release

# npm ci rewrites node_modules/.package-lock.json: it stamps the install.
$(CONTRACT_TOOLS)/node_modules/.package-lock.json: $(CONTRACT_TOOLS)/package.json $(CONTRACT_TOOLS)/package-lock.json
	cd $(CONTRACT_TOOLS) && npm ci --no-audit --no-fund --loglevel=error

.PHONY: contract-tools
contract-tools: $(CONTRACT_TOOLS)/node_modules/.package-lock.json ## Install the pinned npm tools run against the contracts (npm ci)

.PHONY: postman
postman: contract-tools ## Regenerate the Postman collections and sandbox environment in openapi/postman/ from both contracts
	node $(CONTRACT_TOOLS)/postman.js openapi/postman

.PHONY: check-postman
check-postman: contract-tools ## Fail when openapi/postman/ differs from what the contracts produce
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	node $(CONTRACT_TOOLS)/postman.js $$tmp; \
	for f in $$tmp/*.json; do diff -q openapi/postman/$$(basename $$f) $$f >/dev/null \
		|| { echo "openapi/postman/$$(basename $$f) is stale: run make postman"; exit 1; }; done; \
	echo "Postman collections are up to date"

.PHONY: check-clients
check-clients: contract-tools ## Generate TypeScript types from both contracts and type-check them with tsc; check gen/ has no untyped Go values
	@$(CONTRACT_TOOLS)/check-clients.sh

.PHONY: chromium
chromium: ## Make sure Debian's chromium is installed (the console's browser tests); installs it as root with apt-get
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "chromium is missing: installing Debian's chromium package with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
		echo "the console tests need the Debian package 'chromium' (apt-get install chromium, as root)" >&2; exit 1; \
	fi

.PHONY: prometheus
prometheus: ## Make sure promtool (Debian's prometheus package) is installed: the alert rules' checks and tests; installs it as root with apt-get
	@if command -v promtool >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "promtool is missing: installing Debian's prometheus package with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus; \
	else \
		echo "the alert rules' tests need promtool from the Debian package 'prometheus' (apt-get install prometheus, as root)" >&2; exit 1; \
	fi

.PHONY: check-ops
check-ops: prometheus ## promtool check and test of internal/contract/docs/ops/alerts.yml, the dashboard linter, and every metric the rules and dashboard read is exported (part of make test)
	$(GO) test $(TEST_FLAGS) ./internal/contract/docs/ops/

.PHONY: test
test: chromium prometheus ## Run every test against PostgreSQL and SQLite (starts a throwaway PostgreSQL and Redis when none answers)
	@set -euo pipefail; \
	trap 'scripts/test-postgres.sh stop "$${TEST_PG_DIR:-}"; scripts/test-redis.sh stop "$${TEST_REDIS_DIR:-}"' EXIT; \
	env_out=$$(scripts/test-postgres.sh); \
	eval "export $$(echo "$$env_out" | tr '\n' ' ')"; \
	env_out=$$(scripts/test-redis.sh); \
	eval "export $$(echo "$$env_out" | tr '\n' ' ')"; \
	echo "PostgreSQL for tests: $${TEST_DATABASE_URL%%\?*}"; \
	echo "Redis for tests: $${TEST_REDIS_URL}"; \
	$(GO) test $(TEST_BUILD_FLAGS) $(TEST_FLAGS) ./...

.PHONY: test-race
test-race: ## The same tests under the race detector (CI runs it beside make test)
	@# Three packages at once: the end-to-end packages wait for blocks, jobs and
	@# restarts, and with two at once the cores idled through those waits (internal/contract/docs/guide/performance.md).
	@$(MAKE) --no-print-directory test TEST_FLAGS="-race $(TEST_FLAGS)"

.PHONY: lint
lint: ## gofmt, go vet and the Redocly lint of both contracts
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/') cmd internal 2>/dev/null | sort -u); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(REDOCLY) lint --config openapi/redocly.yaml $(SPEC) $(OP_SPEC)

.PHONY: benchscale
benchscale: ## Time every read, page and export on 10,000 and BENCH_SCALE_ROWS (2,000,000) transactions side by side; plans of those over 1.5×
	@scripts/benchscale.sh

# Smoke runs of the benchmarks: each script as its comment says, tiny sizes, a few
# seconds each, in parallel (PostgreSQL at BENCH_DATABASE_URL, the default
# 127.0.0.1:5432), so a script that no longer runs fails the build. The numbers
# mean nothing at these sizes; a failed request, a lost webhook or a broken script
# does. SMOKE_LOGS keeps each run's output.
SMOKE_LOGS ?= bin/smoke
SMOKE_TARGETS := smoke-bench smoke-bench-list smoke-bench-webhooks smoke-benchchain

.PHONY: smoke $(SMOKE_TARGETS)
smoke: ## Run every benchmark script briefly with tiny sizes (CI runs it; under a minute)
	@$(GO) build -o bin/partnerd ./cmd/partnerd
	@mkdir -p $(SMOKE_LOGS)
	@$(MAKE) --no-print-directory -j4 --output-sync=target SMOKE_LOGS=$(SMOKE_LOGS) $(SMOKE_TARGETS)
	@echo "smoke runs passed (logs in $(SMOKE_LOGS))"

smoke-bench:
	@echo "== scripts/bench.sh (1 s per measurement)"
	@BENCH_DURATION=1s BENCH_PGBENCH_SCALE=1 scripts/bench.sh >$(SMOKE_LOGS)/bench.log 2>&1 || { tail -n 30 $(SMOKE_LOGS)/bench.log; exit 1; }
	@# Every row of the table answered without errors.
	@awk -F'|' '/^\| (postgres|sqlite) / { rows++; if ($$7 + 0 != 0) bad++ } END { exit !(rows == 12 && !bad) }' $(SMOKE_LOGS)/bench.log \
		|| { echo "bench.sh: requests failed"; cat $(SMOKE_LOGS)/bench.log; exit 1; }

smoke-bench-list:
	@echo "== scripts/bench-list.sh 3000"
	@BENCH_REPS=2 scripts/bench-list.sh 3000 >$(SMOKE_LOGS)/bench-list.log 2>&1 || { tail -n 30 $(SMOKE_LOGS)/bench-list.log; exit 1; }
	@grep -Eq '^3000 .* ok +PASS ' $(SMOKE_LOGS)/bench-list.log || { echo "bench-list.sh: walk or plan check failed"; tail -n 5 $(SMOKE_LOGS)/bench-list.log; exit 1; }

smoke-bench-webhooks:
	@echo "== scripts/bench-webhooks.sh (20 events/s for 2 s)"
	@BENCH_PARTNERD=bin/partnerd BENCH_DURATION=2s BENCH_RATE=20 BENCH_CONCURRENCY=4 BENCH_WAIT=30s \
		scripts/bench-webhooks.sh >$(SMOKE_LOGS)/bench-webhooks.log 2>&1 || { tail -n 30 $(SMOKE_LOGS)/bench-webhooks.log; exit 1; }
	@grep -q 'missing 0;' $(SMOKE_LOGS)/bench-webhooks.log || { echo "bench-webhooks.sh: events were not delivered"; grep 'events delivered' $(SMOKE_LOGS)/bench-webhooks.log; exit 1; }

smoke-benchchain:
	@echo "== scripts/benchchain -smoke (both networks behind their nodes' dialects, 20 blocks)"
	@$(GO) run ./scripts/benchchain -smoke >$(SMOKE_LOGS)/benchchain.log 2>&1 \
		|| { tail -n 30 $(SMOKE_LOGS)/benchchain.log; exit 1; }

.PHONY: conformance
conformance: build ## Start bin/partnerd on a fresh SQLite database and run `partnerd conformance` against it (CI runs it; seconds)
	@scripts/conformance.sh

.PHONY: tidy
tidy: ## go mod tidy
	$(GO) mod tidy
