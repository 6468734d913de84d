# partnerd — run `make help` for the targets.
SHELL := bash
.DEFAULT_GOAL := help

GO          ?= go
OAPI        := $(GO) tool oapi-codegen
REDOCLY     := npx --yes @redocly/cli@2.11.1
SPEC        := openapi/partner.yaml
OP_SPEC     := openapi/operator.yaml
# Every generated file: config → the spec it is generated from.
GEN_CONFIGS := openapi/server.cfg.yaml:$(SPEC) openapi/client.cfg.yaml:$(SPEC) \
               openapi/operator.server.cfg.yaml:$(OP_SPEC) openapi/operator.client.cfg.yaml:$(OP_SPEC)
TEST_FLAGS  ?= -race -count=1 -timeout 20m

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

.PHONY: run
run: build ## Run the service on the embedded SQLite database (prints a demo key on first start)
	@# Private webhook URLs are allowed so `partnerd listen` on this machine receives
	@# events. The binary runs directly (not under go run), so Ctrl-C stops it cleanly.
	WEBHOOK_ALLOW_PRIVATE_URLS=true bin/partnerd serve

.PHONY: build
build: ## Build bin/partnerd
	$(GO) build -o bin/partnerd ./cmd/partnerd

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

.PHONY: chromium
chromium: ## Make sure Debian's chromium is installed (the console's browser tests); installs it as root with apt-get
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "chromium is missing: installing Debian's chromium package with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
		echo "the console tests need the Debian package 'chromium' (apt-get install chromium, as root)" >&2; exit 1; \
	fi

.PHONY: test
test: chromium ## Run every test against PostgreSQL and SQLite (starts a throwaway PostgreSQL when none answers)
	@set -euo pipefail; \
	env_out=$$(scripts/test-postgres.sh); \
	eval "export $$(echo "$$env_out" | tr '\n' ' ')"; \
	trap 'scripts/test-postgres.sh stop "$${TEST_PG_DIR:-}"' EXIT; \
	echo "PostgreSQL for tests: $${TEST_DATABASE_URL%%\?*}"; \
	$(GO) test $(TEST_FLAGS) ./...

.PHONY: lint
lint: ## gofmt, go vet and the Redocly lint of both contracts
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/') cmd internal 2>/dev/null | sort -u); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(REDOCLY) lint --config openapi/redocly.yaml $(SPEC) $(OP_SPEC)

.PHONY: tidy
tidy: ## go mod tidy
	$(GO) mod tidy
