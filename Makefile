# numascope build. `make build` produces a static bin/numascope (it also runs inside the NUMA VM).
# Go on PATH, else where scripts/setup installs it (often not yet on PATH).
GO ?= $(shell command -v go 2>/dev/null || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; } || echo go)
BIN := bin/numascope
# What `numascope --version` reports besides what the go command stamps
# itself: the release tag (or git describe), when it was built, and the
# commit, which the go command leaves out in a git worktree.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X github.com/numascope/numascope/internal/cli.version=$(VERSION) \
	-X github.com/numascope/numascope/internal/cli.commit=$(COMMIT) \
	-X github.com/numascope/numascope/internal/cli.buildDate=$(BUILD_DATE)

.PHONY: build test run bench clean check-go
build: check-go
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/numascope

# Without Go, or with one older than go.mod asks for, say what to do rather
# than "go: not found" or a go.mod parse error.
check-go:
	@want=$$(awk '/^go /{print $$2; exit}' go.mod); \
	if ! command -v $(GO) >/dev/null 2>&1; then \
	  echo "make build: Go is not installed: install Go $$want or newer (https://go.dev/dl/), or run scripts/setup, which does" >&2; exit 1; \
	fi; \
	have=$$($(GO) env GOVERSION 2>/dev/null | sed 's/^go//'); \
	if [ "$$(printf '%s\n%s\n' "$$want" "$${have:-0}" | sort -V | head -1)" != "$$want" ]; then \
	  echo "make build: $(GO) is Go $${have:-of an unknown version}, numascope needs Go $$want or newer: install it (https://go.dev/dl/), or run scripts/setup, which does" >&2; exit 1; \
	fi

# Everything the README's test command runs.
test:
	scripts/test

run:
	scripts/run

# The performance figures of docs/performance.md.
bench: build
	scripts/bench

clean:
	rm -rf bin
