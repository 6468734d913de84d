# partnerd — run `make help` for the targets.
SHELL := bash
.DEFAULT_GOAL := help

GO          ?= go
OAPI        := $(GO) tool oapi-codegen
REDOCLY     := npx --yes @redocly/cli@2.11.1
SPEC        := openapi/partner.yaml
GEN_OUT     := gen/api/api.gen.go gen/client/client.gen.go
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
generate: ## Regenerate gen/ from openapi/partner.yaml
	$(OAPI) -config openapi/server.cfg.yaml $(SPEC)
	$(OAPI) -config openapi/client.cfg.yaml $(SPEC)

.PHONY: check-generated
check-generated: ## Fail when gen/ differs from what openapi/partner.yaml produces
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	sed "s#^output: .*#output: $$tmp/api.gen.go#" openapi/server.cfg.yaml > $$tmp/server.cfg.yaml; \
	sed "s#^output: .*#output: $$tmp/client.gen.go#" openapi/client.cfg.yaml > $$tmp/client.cfg.yaml; \
	$(OAPI) -config $$tmp/server.cfg.yaml $(SPEC) && $(OAPI) -config $$tmp/client.cfg.yaml $(SPEC) && \
	diff -u gen/api/api.gen.go $$tmp/api.gen.go && diff -u gen/client/client.gen.go $$tmp/client.gen.go && \
	echo "generated code is up to date"

.PHONY: test
test: ## Run every test against PostgreSQL and SQLite (starts a throwaway PostgreSQL when none answers)
	@set -euo pipefail; \
	env_out=$$(scripts/test-postgres.sh); \
	eval "export $$(echo "$$env_out" | tr '\n' ' ')"; \
	trap 'scripts/test-postgres.sh stop "$${TEST_PG_DIR:-}"' EXIT; \
	echo "PostgreSQL for tests: $${TEST_DATABASE_URL%%\?*}"; \
	$(GO) test $(TEST_FLAGS) ./...

.PHONY: lint
lint: ## gofmt, go vet and the Redocly lint of the contract
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/') cmd internal 2>/dev/null | sort -u); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(REDOCLY) lint --config openapi/redocly.yaml $(SPEC)

.PHONY: tidy
tidy: ## go mod tidy
	$(GO) mod tidy
