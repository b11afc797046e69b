# agentrl build and test entry points. `make test` is what CI runs.

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOFILES      = $(shell find . -name '*.go' -not -path './.git/*' -not -path '*/node_modules/*')
BENCHCOUNT  ?= 5

.PHONY: test fmt-check vet staticcheck gotest bench

test: fmt-check vet staticcheck gotest

fmt-check:
	@out="$$(gofmt -l $(GOFILES))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

gotest:
	$(GO) test -race -timeout 25m ./...

# Benchmarks: medians over BENCHCOUNT runs; compare runs with benchstat.
# See BENCHMARKS.md for the method and the recorded numbers.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./...
