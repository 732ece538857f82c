// Package e2e holds the end-to-end acceptance tests of "parks across Lambdas" (DESIGN.md
// §5; spec 02 §3–§4). It has no code of its own: its tests build the turn, decide,
// deliver and wake Lambdas exactly as their mains do (assembly.FromEnv, then
// httpapi/deliveries/wakes) over real-protocol peers — DynamoDB Local, gofakes3 over HTTP,
// the Converse fake serving a scripted model, and the EventBridge Scheduler wire fake —
// and drive parks, decisions, replies, deliveries and timer wakes through them.
//
// The tests skip without DynamoDB Local; run them with
//
//	export "$(local/scripts/dynamodb-local.sh start)" && go test ./functions/handlers/e2e/...
package e2e
