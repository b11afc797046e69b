# agentrl build and test entry points. `make test` is what CI runs.

GO          ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOFILES      = $(shell find . -name '*.go' -not -path './.git/*' -not -path '*/node_modules/*')
BENCHCOUNT  ?= 5
NVCC        ?= nvcc

.PHONY: test fmt-check vet staticcheck gotest cuda-check bench

test: fmt-check vet staticcheck gotest cuda-check

fmt-check:
	@out="$$(gofmt -l $(GOFILES))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# The `cuda cudaemu` tags build the GPU path against a plain-C emulation of
# the CUDA kernels (cuda/gpu/emulate.c): no nvcc or GPU needed, so the host
# side of the GPU path is vetted and tested on every machine.
vet:
	$(GO) vet ./...
	$(GO) vet -tags cuda,cudaemu ./cuda/... ./cmd/agentrl/

staticcheck:
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags cuda,cudaemu ./cuda/... ./cmd/agentrl/

# The second line is a pass without -race for the tests the race detector
# makes too slow or whose CPU-time ratios it blurs (they skip under -race):
# all 12 HF tokenizer variants and the linear-time checks.
gotest:
	$(GO) test -race -timeout 25m ./...
	$(GO) test -count=1 -timeout 10m -run '^(TestVariantsGolden|TestEncodeLinear.*|TestAdversarialInputsStayLinear.*)$$' ./tokenizer/ ./parser/
	$(GO) test -race -timeout 25m -tags cuda,cudaemu ./cuda/... ./cmd/agentrl/

# The CUDA path (build tag `cuda`) is compiled and linked for sm_80 and sm_90;
# its tests run only where a GPU is present (they skip elsewhere). Without
# nvcc the check is skipped, except in CI, which must have it.
cuda-check:
	@if command -v $(NVCC) >/dev/null 2>&1; then \
		$(MAKE) -C cuda/gpu NVCC=$(NVCC) && \
		$(GO) vet -tags cuda ./cuda/... ./cmd/agentrl/ && \
		$(GO) test -tags cuda -count=1 ./cuda/gpu/ ./cuda/model/ ./cuda/; \
	elif [ -n "$$CI" ]; then \
		echo "cuda-check: nvcc not found (CI must install nvidia-cuda-toolkit)"; exit 1; \
	else \
		echo "cuda-check: nvcc not found, skipping the CUDA compile check"; \
	fi

# Benchmarks: medians over BENCHCOUNT runs; compare runs with benchstat.
# See BENCHMARKS.md for the method and the recorded numbers.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./...
