package lambdatool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/hosttool"
	"github.com/archmax-ai/archmax/core/hosttool/internal/enginetest"
	"github.com/archmax-ai/archmax/core/session"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/local/lambdafake"
)

const orderSchema = `{"type":"object","properties":{"id":{"type":"string"},"file":{"type":"string"},"blob":{"type":"string"}},"required":["id"],"additionalProperties":false}`

// sdkClient is the real AWS SDK Lambda client pointed at a local peer.
func sdkClient(t *testing.T, url string) *lambda.Client {
	return lambda.New(lambda.Options{Region: lambdafake.Region, BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
}

// fake is lambdafake with the function get-order served behind the real SDK client.
func fake(t *testing.T, opts ...lambdafake.Option) (*lambdafake.Fake, hosttool.Deps) {
	t.Helper()
	f := lambdafake.New(opts...)
	srv := httptest.NewServer(f)
	t.Cleanup(func() { srv.Close(); f.Close() })
	return f, hosttool.Deps{Lambda: SDKInvoker(sdkClient(t, srv.URL))}
}

func decl(name string) hostconfig.ToolDecl {
	return hostconfig.ToolDecl{Kind: hostconfig.KindLambda, Name: name, Description: "Gets an order.", Input: json.RawMessage(orderSchema),
		Lambda: &hostconfig.LambdaTool{Function: lambdafake.FunctionARN("get-order"), Qualifier: "live"}, Line: 4}
}

// build builds the declarations as the assembly does (the shared wrapper included).
func build(t *testing.T, deps hosttool.Deps, decls ...hostconfig.ToolDecl) []session.HostTool {
	t.Helper()
	tools, err := hosttool.Build(context.Background(), &hostconfig.Config{Tools: decls},
		map[string]hosttool.Builder{hostconfig.KindLambda: New}, deps)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func call(args map[string]any) session.HostCall {
	return session.HostCall{SessionID: "s-1", State: "work", CallID: "tooluse_7", Args: args, IdempotencyKey: "s-1/t-1/tooluse_7"}
}

// The function receives {tool, input, session, state, callId, idempotencyKey} through the SDK
// (qualifier included) and its {text} is the result; every other answer is an error result
// with a clear message, and nothing crashes.
func TestInvokeThroughTheSDK(t *testing.T) {
	f, deps := fake(t, lambdafake.WithTimeout(300*time.Millisecond))
	var mu sync.Mutex
	var got Payload
	f.Register("get-order", func(ctx context.Context, p []byte) ([]byte, error) {
		var in Payload
		if err := json.Unmarshal(p, &in); err != nil {
			return nil, err
		}
		mu.Lock()
		got = in
		mu.Unlock()
		switch in.Input["id"] {
		case "ORD-1":
			return []byte(`{"text":"order ORD-1: shipped"}`), nil
		case "refuse":
			return []byte(`{"error":"Error: ORD-9 belongs to another customer."}`), nil
		case "raise":
			return nil, errors.New("database unreachable")
		case "panic":
			panic("nil map")
		case "garbage":
			return []byte(`<html>oops</html>`), nil
		case "number":
			return []byte(`{"text":42}`), nil
		case "both":
			return []byte(`{"text":"a","error":"b"}`), nil
		case "neither":
			return []byte(`{"result":"a"}`), nil
		case "array":
			return []byte(`["a"]`), nil
		case "null":
			return nil, nil
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		case "huge":
			return []byte(`{"text":"` + strings.Repeat("x", lambdafake.MaxSyncPayload) + `"}`), nil
		}
		return []byte(`{"text":""}`), nil
	})
	tools := build(t, deps, decl("get_order"))
	h := tools[0].Handler
	text, err := h(context.Background(), call(map[string]any{"id": "ORD-1"}))
	if err != nil || text != "order ORD-1: shipped" {
		t.Fatalf("result = %q, %v", text, err)
	}
	mu.Lock()
	seen := got
	mu.Unlock()
	want := Payload{Tool: "get_order", Input: map[string]any{"id": "ORD-1"}, Session: "s-1", State: "work", CallID: "tooluse_7", IdempotencyKey: "s-1/t-1/tooluse_7"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("payload = %+v, want %+v", seen, want)
	}
	if inv := f.Invocations(); len(inv) != 1 || inv[0].Qualifier != "live" || inv[0].Function != "get-order" || inv[0].Type != lambdafake.RequestResponse {
		t.Errorf("invocations = %+v", inv)
	}
	for id, want := range map[string]string{
		"refuse":  "Error: ORD-9 belongs to another customer.",
		"raise":   "Error: the function behind 'get_order' failed (Unhandled): errorString: database unreachable. It may have acted before failing.",
		"panic":   "Error: the function behind 'get_order' failed (Unhandled): string: nil map. It may have acted before failing.",
		"garbage": `Error: the function behind 'get_order' answered something that is not JSON (<html>oops</html>), not {"text": "…"} or {"error": "…"}; it may have acted, but its answer cannot be used.`,
		"number":  `Error: the function behind 'get_order' answered a "text" that is not a string, not {"text": "…"} or {"error": "…"}; it may have acted, but its answer cannot be used.`,
		"both":    `Error: the function behind 'get_order' answered an object with both "text" and "error", not`,
		"neither": `Error: the function behind 'get_order' answered an object with neither "text" nor "error", not`,
		"array":   `Error: the function behind 'get_order' answered JSON that is not an object (["a"]), not`,
		"null":    `Error: the function behind 'get_order' answered JSON that is not an object (null), not`,
		"hang":    "Error: the function behind 'get_order' failed (Unhandled): Sandbox.Timedout: RequestId: ",
		"huge":    "Error: the function behind 'get_order' failed (Unhandled): Function.ResponseSizeTooLarge: Response payload size (6291467 bytes) exceeded maximum allowed payload size (6291456 bytes).",
	} {
		text, err := h(context.Background(), call(map[string]any{"id": id}))
		if err == nil || !strings.HasPrefix(err.Error(), want) || text != "" {
			t.Errorf("%s: %q, %v\nwant prefix %s", id, text, err, want)
		}
	}
	if text, err := h(context.Background(), call(map[string]any{"id": "empty"})); err != nil || text != "" {
		t.Errorf("an empty text is a result: %q %v", text, err)
	}
}

// The shared timeout cuts a slow function; a missing function and a payload over Lambda's
// limit are error results (the latter refused before anything is sent).
func TestSlowMissingAndOversized(t *testing.T) {
	f, deps := fake(t)
	release := make(chan struct{})
	f.Register("slow", func(ctx context.Context, p []byte) ([]byte, error) {
		<-release
		return []byte(`{"text":"late"}`), nil
	})
	defer close(release)
	slow, missing := decl("slow_tool"), decl("missing_tool")
	slow.Lambda = &hostconfig.LambdaTool{Function: "slow"}
	slow.Timeout = 100 * time.Millisecond
	missing.Lambda = &hostconfig.LambdaTool{Function: "nope"}
	tools := build(t, deps, slow, missing, decl("get_order"))
	start := time.Now()
	_, err := tools[0].Handler(context.Background(), call(map[string]any{"id": "x"}))
	var te *hosttool.TimeoutError
	if !errors.As(err, &te) || time.Since(start) > 5*time.Second {
		t.Errorf("slow: %v after %s", err, time.Since(start))
	}
	_, err = tools[1].Handler(context.Background(), call(map[string]any{"id": "x"}))
	if err == nil || !strings.HasPrefix(err.Error(), "Error: could not invoke the function behind 'missing_tool': ") || !strings.Contains(err.Error(), "ResourceNotFoundException") {
		t.Errorf("missing: %v", err)
	}
	before := len(f.Invocations())
	_, err = tools[2].Handler(context.Background(), call(map[string]any{"id": "x", "blob": strings.Repeat("y", MaxPayloadBytes)}))
	if err == nil || !strings.Contains(err.Error(), "over Lambda's 6291456-byte payload limit; nothing was sent") || len(f.Invocations()) != before {
		t.Errorf("oversized: %v (%d invocations)", err, len(f.Invocations())-before)
	}
}

// A declaration without a function, or a host without a Lambda client, does not build.
func TestBuildErrors(t *testing.T) {
	d := decl("get_order")
	if _, err := New(context.Background(), d, hosttool.Deps{}); err == nil || !strings.Contains(err.Error(), "Deps.Lambda") {
		t.Errorf("no client: %v", err)
	}
	d.Lambda = nil
	if _, err := New(context.Background(), d, hosttool.Deps{Lambda: SDKInvoker(nil)}); err == nil || !strings.Contains(err.Error(), "lambda.function") {
		t.Errorf("no function: %v", err)
	}
}

const workflow = `
states:
  work:
    triggers:
      manual:
    tools:
      allow:
        - get_order
        - { tool: read_order_file, paths: ["orders/**"] }
    transitions:
      - to: review
        description: hand to a person
      - to: elsewhere
        description: somewhere without the tool
  review:
    type: human
    title: Check the order
    transitions:
      - to: work
        description: back
  elsewhere:
    instructions: nothing granted here
`

// Through the engine: the result is the function's text (a long one offloaded at the
// declaration's MaxResultChars), the payload carries the reliability key
// <session>/<turn>/<toolUseId>; a path guard, a state that does not grant the tool and a
// reply-only turn are refused before anything is invoked.
func TestThroughTheEngine(t *testing.T) {
	f, deps := fake(t)
	var mu sync.Mutex
	var payloads []Payload
	f.Register("get-order", func(ctx context.Context, p []byte) ([]byte, error) {
		var in Payload
		_ = json.Unmarshal(p, &in)
		mu.Lock()
		payloads = append(payloads, in)
		mu.Unlock()
		if in.Input["id"] == "long" {
			return json.Marshal(map[string]string{"text": strings.Repeat("line of the order\n", 100)})
		}
		return []byte(`{"text":"ORD-1 shipped"}`), nil
	})
	get := decl("get_order")
	get.MaxResultChars = 500
	file := decl("read_order_file")
	file.Paths = []spec.PathArg{{Arg: "file", Access: "read"}}
	h := enginetest.New(t, workflow, build(t, deps, get, file))
	h.Script(
		enginetest.Calls(enginetest.Call{Name: "get_order", Args: map[string]any{"id": "ORD-1"}},
			enginetest.Call{Name: "get_order", Args: map[string]any{"id": "long"}}),
		enginetest.Calls(enginetest.Call{Name: "read_order_file", Args: map[string]any{"id": "ORD-1", "file": "orders/ORD-1.json"}},
			enginetest.Call{Name: "read_order_file", Args: map[string]any{"id": "ORD-1", "file": "orders/../secrets/keys.txt"}},
			enginetest.Call{Name: "read_order_file", Args: map[string]any{"id": "ORD-1", "file": "secrets/keys.txt"}}),
		enginetest.Calls(enginetest.Call{Name: "archmax_advance", Args: map[string]any{"to": "review", "reason": "ready"}}),
		enginetest.Says("Handed to a person."),
	)
	out := h.Send("s-1", "where is my order?")
	rs := enginetest.ToolResults(out, "get_order")
	if len(rs) != 2 || rs[0].Text != "ORD-1 shipped" || rs[0].Error {
		t.Fatalf("results = %+v", rs)
	}
	if !strings.Contains(rs[1].Text, "/large_tool_results/") || rs[1].Error {
		t.Errorf("a long result is offloaded: %q", rs[1].Text)
	}
	if entries, err := h.Files.List(context.Background(), "s-1/large_tool_results"); err != nil || len(entries) != 1 {
		t.Errorf("offloaded files: %+v %v", entries, err)
	} else if data, _ := h.Files.Read(context.Background(), "s-1/large_tool_results/"+entries[0].Name); string(data) != strings.Repeat("line of the order\n", 100) {
		t.Errorf("the offloaded text differs: %d bytes", len(data))
	}
	mu.Lock()
	ps := slices.Clone(payloads)
	mu.Unlock()
	if len(ps) != 3 || ps[2].Tool != "read_order_file" || ps[2].Input["file"] != "orders/ORD-1.json" || ps[0].IdempotencyKey != "s-1/"+out.TurnID+"/"+ps[0].CallID || ps[0].Session != "s-1" || ps[0].State != "work" || ps[0].CallID == "" {
		t.Errorf("ps = %+v (turn %s)", ps, out.TurnID)
	}
	files := enginetest.ToolResults(out, "read_order_file")
	if len(files) != 3 || files[0].Blocked || files[0].Text != "ORD-1 shipped" {
		t.Fatalf("guarded calls: %+v", files)
	}
	for i, m := range files[1:] { // outside the guard's orders/** (the first canonically)
		if !m.Blocked || !strings.Contains(m.Text, "BLOCKED: 'read_order_file' is not allowed in state 'work'") {
			t.Errorf("guarded call %d ran: %+v", i+1, m)
		}
	}
	n := len(f.Invocations())

	// a reply-only turn (the session is parked at a person): the model's call is refused
	h.Script(enginetest.Calls(enginetest.Call{Name: "get_order", Args: map[string]any{"id": "ORD-1"}}))
	out = h.Send("s-1", "any news?")
	if rs := enginetest.ToolResults(out, "get_order"); len(rs) == 0 || !rs[len(rs)-1].Blocked || !strings.Contains(rs[len(rs)-1].Text, "cannot run — this run is parked") {
		t.Errorf("a reply-only call was not refused: %+v", rs)
	}

	// a state that does not grant the tool
	h.Script(
		enginetest.Calls(enginetest.Call{Name: "archmax_advance", Args: map[string]any{"to": "elsewhere", "reason": "go"}}),
		enginetest.Calls(enginetest.Call{Name: "get_order", Args: map[string]any{"id": "ORD-1"}}),
		enginetest.Says("done"),
	)
	out = h.Send("s-2", "hi")
	if rs := enginetest.ToolResults(out, "get_order"); len(rs) != 1 || !rs[0].Blocked || !strings.Contains(rs[0].Text, "is not allowed in state 'elsewhere'") {
		t.Errorf("an ungranted call: %+v", rs)
	}
	if got := len(f.Invocations()); got != n {
		t.Errorf("refused calls reached the function: %d invocations, want %d", got, n)
	}
}
