# archmax — the two commands a new user needs are `make run` and `make test`.
GO       ?= go
WORKSPACE := fixtures/access-desk
MESSAGE  := Hi, I'm Dana from the platform team. I need badge access to the east lab, please.

.PHONY: run test vet unit race bench build clean

## run: a governed turn of the fixture workflow on the embedded default (no AWS, no network)
run:
	$(GO) run ./local/cmd/archmax run --workspace $(WORKSPACE) --store .archmax \
		--model-script $(WORKSPACE)/model-scripts/happy.model.yaml \
		access-request "$(MESSAGE)"

## test: everything — vet, the unit and integration tests, and -race on core/...
test: vet unit race

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

race:
	$(GO) test -count=1 -race ./core/...

## bench: the engine and sandbox benchmarks (results in docs/PERFORMANCE.md)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./core/session/ ./core/sandbox/

## build: the local CLI into bin/
build:
	$(GO) build -o bin/archmax ./local/cmd/archmax

clean:
	rm -rf .archmax bin build
