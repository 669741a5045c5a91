# numascope build. `make build` produces a static bin/numascope (it also runs inside the NUMA VM).
GO ?= go
BIN := bin/numascope

.PHONY: build test run bench clean
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./cmd/numascope

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
