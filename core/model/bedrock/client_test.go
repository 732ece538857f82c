package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/model/scripted"
	"github.com/archmax-ai/archmax/local/conversefake"
)

const modelID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

var readTool = model.ToolSpec{Name: "read_file", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}

// fakeClient serves script over the Converse fake and returns a real Client pointed at it.
func fakeClient(t *testing.T, script string, maxAttempts int) (*Client, *conversefake.Server) {
	t.Helper()
	s, err := scripted.Parse("t.model.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	fake := conversefake.New(s, conversefake.WithLatencyMs(321))
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	c, err := New(context.Background(), Config{
		Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "AKIDTEST", SecretAccessKey: "secret",
		MaxAttempts: maxAttempts, MaxBackoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, fake
}

func ask(text string, meta map[string]string) *model.Request {
	return &model.Request{
		ModelID:         modelID,
		System:          []model.Block{{Kind: model.BlockText, Text: "Rules of 2026-03-20."}, {Kind: model.BlockCachePoint}},
		Messages:        []model.Message{{Role: model.RoleUser, Content: []model.Block{{Kind: model.BlockText, Text: text}}}},
		Tools:           []model.ToolSpec{readTool},
		ToolsCachePoint: true,
		MaxTokens:       1000,
		Metadata:        meta,
	}
}

func TestConverseTextAnswer(t *testing.T) {
	c, fake := fakeClient(t, "agent:\n  - text: Hello there.\n", 1)
	resp, err := c.Converse(context.Background(), ask("hi", nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != model.StopEndTurn || resp.ModelID != modelID || resp.LatencyMs != 321 ||
		len(resp.Message.Content) != 1 || resp.Message.Content[0].Text != "Hello there." || resp.Message.Role != model.RoleAssistant {
		t.Errorf("resp = %+v", resp)
	}
	if got := fake.Requests()[0].ModelID; got != modelID {
		t.Errorf("model id on the wire = %q", got)
	}
}

func TestConverseToolUseUsageAndMetadata(t *testing.T) {
	c, fake := fakeClient(t, `
agent:
  - when: {state: intake, turn: 1}
    expect: {toolsOffered: [read_file], systemIncludes: "/2026-\\d\\d-20/"}
    text: Let me check.
    toolCalls:
      - {name: read_file, input: {file_path: a.json, limit: 10, ratio: 0.25, big: 9007199254740993}}
      - {name: read_file, id: tu-b, input: {file_path: b.json}}
    usage: {inputTokens: 50, outputTokens: 40, cacheReadInputTokens: 1000, cacheWriteInputTokens: 200}
`, 1)
	resp, err := c.Converse(context.Background(), ask("check", map[string]string{"archmax.session": "s1~1", "archmax.state": "intake", "archmax.turn": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != model.StopToolUse || len(resp.Message.Content) != 3 {
		t.Fatalf("resp = %+v", resp)
	}
	first, second := resp.Message.Content[1].ToolUse, resp.Message.Content[2].ToolUse
	if first.ID != "tu_agent_0_0" || first.Name != "read_file" {
		t.Errorf("first call = %+v", first)
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(first.Input, &in); err != nil {
		t.Fatalf("input %s: %v", first.Input, err)
	}
	if string(in["limit"]) != "10" || string(in["ratio"]) != "0.25" || string(in["big"]) != "9007199254740993" || string(in["file_path"]) != `"a.json"` {
		t.Errorf("input decoded as %s", first.Input)
	}
	if second.ID != "tu-b" || string(second.Input) != `{"file_path":"b.json"}` {
		t.Errorf("second call = %+v %s", second, second.Input)
	}
	want := model.Usage{InputTokens: 1250, OutputTokens: 40, CacheReadTokens: 1000, CacheWriteTokens: 200}
	if resp.Usage == nil || *resp.Usage != want {
		t.Errorf("usage = %+v, want %+v (inclusive input)", resp.Usage, want)
	}
	rec := fake.Requests()[0]
	if rec.Metadata["archmax.session"] != "s1_1" {
		t.Errorf("metadata on the wire = %v, want the sanitised s1_1", rec.Metadata)
	}
	var wire struct {
		System          []map[string]any                 `json:"system"`
		InferenceConfig struct{ MaxTokens int }          `json:"inferenceConfig"`
		ToolConfig      struct{ Tools []map[string]any } `json:"toolConfig"`
	}
	if err := json.Unmarshal(rec.Body, &wire); err != nil {
		t.Fatal(err)
	}
	if len(wire.System) != 2 || wire.System[1]["cachePoint"] == nil || wire.InferenceConfig.MaxTokens != 1000 || len(wire.ToolConfig.Tools) != 2 || wire.ToolConfig.Tools[1]["cachePoint"] == nil {
		t.Errorf("wire body = %s", rec.Body)
	}

	// The answer goes back as history with its results; the fake accepts the round trip.
	next := ask("check", map[string]string{"archmax.state": "intake", "archmax.turn": "2"})
	next.Messages = append(next.Messages, resp.Message, model.Message{Role: model.RoleUser, Content: []model.Block{
		{Kind: model.BlockToolResult, ToolResult: &model.ToolResult{ToolUseID: first.ID, Content: "{}", Status: "success"}},
		{Kind: model.BlockToolResult, ToolResult: &model.ToolResult{ToolUseID: second.ID, Content: "missing", Status: "error"}},
	}})
	_, err = c.Converse(context.Background(), next)
	var ce *model.CallError
	if !errors.As(err, &ce) || ce.Code != conversefake.ErrScriptMismatch || ce.Status != 400 || ce.Attempts != 1 || ce.Retryable || !strings.Contains(ce.Message, "turn 2") {
		t.Errorf("exhausted script: err = %#v", err)
	}
	if recs := fake.Requests(); len(recs) != 2 || recs[1].ErrorType != conversefake.ErrScriptMismatch {
		t.Errorf("second request was refused by the fake's rules: %+v", recs[1])
	}
}

func TestConverseWhenTurnAcrossProcesses(t *testing.T) {
	script := "agent:\n  - when: {turn: 1}\n    text: first\n  - when: {turn: 2}\n    text: second\n"
	for _, turn := range []string{"2", "1"} {
		// A fresh Script and fake per process.
		c, _ := fakeClient(t, script, 1)
		resp, err := c.Converse(context.Background(), ask("go", map[string]string{"archmax.turn": turn}))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"1": "first", "2": "second"}[turn]
		if resp.Message.Content[0].Text != want {
			t.Errorf("turn %s answered %q, want %q", turn, resp.Message.Content[0].Text, want)
		}
	}
}

func TestConverseExpectMiss(t *testing.T) {
	c, _ := fakeClient(t, "agent:\n  - expect: {toolsNotOffered: [read_file]}\n    text: x\n", 4)
	_, err := c.Converse(context.Background(), ask("go", nil))
	var ce *model.CallError
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, `expect.toolsNotOffered: tool "read_file" is offered`) || ce.Attempts != 1 {
		t.Errorf("err = %v", err)
	}
}

func TestConverseMaxTokensWithToolUse(t *testing.T) {
	c, _ := fakeClient(t, "agent:\n  - text: partial\n    toolCalls: [{name: read_file, input: {file_pa: x}}]\n    stopReason: max_tokens\n", 1)
	resp, err := c.Converse(context.Background(), ask("go", nil))
	if err != nil {
		t.Fatal(err)
	}
	last := resp.Message.Content[len(resp.Message.Content)-1]
	if resp.StopReason != model.StopMaxTokens || last.Kind != model.BlockToolUse || last.ToolUse.Name != "read_file" {
		t.Errorf("resp = %+v", resp)
	}
}

func TestConverseRetries(t *testing.T) {
	tests := []struct {
		name, errName        string
		times, wantAttempts  int
		wantCode             string
		wantStatus           int
		wantRetryable, allOK bool
	}{
		{"throttled twice then answered", "ThrottlingException", 2, 3, "", 0, false, true},
		{"throttling gives up", "ThrottlingException", 10, 4, "ThrottlingException", 429, true, false},
		{"model not ready gives up", "ModelNotReadyException", 10, 4, "ModelNotReadyException", 429, true, false},
		{"5xx retried", "ServiceUnavailableException", 3, 4, "", 0, false, true},
		{"validation not retried", "ValidationException", 10, 1, "ValidationException", 400, false, false},
		{"access denied not retried", "AccessDeniedException", 10, 1, "AccessDeniedException", 403, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fake := fakeClient(t, "agent:\n  - text: ok\nerrors:\n  - {role: agent, call: 0, error: "+tt.errName+", times: "+strconv.Itoa(tt.times)+"}\n", 4)
			resp, err := c.Converse(context.Background(), ask("go", nil))
			if got := len(fake.Requests()); got != tt.wantAttempts {
				t.Errorf("fake saw %d attempts, want %d", got, tt.wantAttempts)
			}
			if tt.allOK {
				if err != nil || resp.Message.Content[0].Text != "ok" {
					t.Fatalf("resp %+v, err %v", resp, err)
				}
				return
			}
			var ce *model.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *model.CallError", err)
			}
			if ce.Code != tt.wantCode || ce.Status != tt.wantStatus || ce.Attempts != tt.wantAttempts || ce.Retryable != tt.wantRetryable || ce.Name() != "ModelCallError" {
				t.Errorf("CallError = %+v", ce)
			}
		})
	}
}

// R18-5: a quota used up for the day answers like a burst (429 ThrottlingException) but is
// never retried — one attempt, Quota set, not retryable — while a burst still is.
func TestConverseDoesNotRetryAnExhaustedQuota(t *testing.T) {
	for _, tc := range []struct {
		fault                  string
		wantAttempts           int
		wantQuota, wantRetries bool
	}{
		{"{role: agent, call: 0, error: ThrottlingException, times: 9, message: 'Too many tokens per day, please wait before trying again.'}", 1, true, false},
		{"{role: agent, call: 0, error: ServiceQuotaExceededException, times: 9}", 1, true, false},
		{"{role: agent, call: 0, error: ThrottlingException, times: 9, message: 'Too many tokens, please wait before trying again.'}", 4, false, true},
	} {
		c, fake := fakeClient(t, "agent:\n  - text: ok\nerrors:\n  - "+tc.fault+"\n", 4)
		_, err := c.Converse(context.Background(), ask("go", nil))
		var ce *model.CallError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: err = %v", tc.fault, err)
		}
		if got := len(fake.Requests()); got != tc.wantAttempts || ce.Quota != tc.wantQuota || ce.Retryable != tc.wantRetries {
			t.Errorf("%s: %d attempts, quota %v, retryable %v", tc.fault, got, ce.Quota, ce.Retryable)
		}
	}
}

// TestConverseNeverSendsInvalidHistory: the client validates first, so the fake records nothing.
func TestConverseNeverSendsInvalidHistory(t *testing.T) {
	user := func(b ...model.Block) model.Message { return model.Message{Role: model.RoleUser, Content: b} }
	asst := func(b ...model.Block) model.Message { return model.Message{Role: model.RoleAssistant, Content: b} }
	txt := func(s string) model.Block { return model.Block{Kind: model.BlockText, Text: s} }
	use := model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: "tu-1", Name: "read_file", Input: json.RawMessage(`{}`)}}
	tests := []struct {
		name     string
		messages []model.Message
		tools    bool
		path     string
	}{
		{"first not user", []model.Message{asst(txt("x"))}, true, "messages.0"},
		{"not alternating", []model.Message{user(txt("x")), user(txt("y"))}, true, "messages.1"},
		{"blank text", []model.Message{user(txt(" "))}, true, "messages.0.content.0"},
		{"missing toolResult", []model.Message{user(txt("x")), asst(use), user(txt("y"))}, true, "messages.2.content"},
		{"toolUse without toolConfig", []model.Message{user(txt("x")), asst(use)}, false, "toolConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, fake := fakeClient(t, "agent:\n  - text: never\n", 4)
			req := ask("x", nil)
			req.Messages = tt.messages
			if !tt.tools {
				req.Tools, req.ToolsCachePoint = nil, false
			}
			_, err := c.Converse(context.Background(), req)
			var ire *model.InvalidRequestError
			if !errors.As(err, &ire) || ire.Path != tt.path {
				t.Errorf("err = %v, want *model.InvalidRequestError at %s", err, tt.path)
			}
			if n := len(fake.Requests()); n != 0 {
				t.Errorf("the fake recorded %d requests, want 0", n)
			}
		})
	}
}

func TestNewNeedsRegion(t *testing.T) {
	if _, err := New(context.Background(), Config{AccessKeyID: "AKID", SecretAccessKey: "s", Endpoint: "http://127.0.0.1:1"}); err == nil {
		t.Error("New without a region succeeded")
	}
	if _, err := New(context.Background(), Config{Region: "us-east-1", AccessKeyID: "AKID", MaxAttempts: -1}); err == nil {
		t.Error("New with MaxAttempts -1 succeeded")
	}
}

// DESIGN.md §4: Config.Timeout bounds one call; running out is a retryable CallError that
// names the bound, and the caller's own cancellation is not reported as a timeout.
func TestConverseTimeout(t *testing.T) {
	s, err := scripted.Parse("t.model.yaml", []byte("agent:\n  - text: late\n"))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(conversefake.New(s, conversefake.WithDelay(300*time.Millisecond)))
	t.Cleanup(hs.Close)
	c, err := New(context.Background(), Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "AKIDTEST", SecretAccessKey: "secret",
		MaxAttempts: 1, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Converse(context.Background(), ask("go", nil))
	var ce *model.CallError
	if !errors.As(err, &ce) || ce.Code != "ModelCallTimeout" || !ce.Retryable || !strings.Contains(ce.Message, "50ms") {
		t.Fatalf("err = %v (%+v), want a retryable ModelCallTimeout", err, ce)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	c2, _ := New(context.Background(), Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "AKIDTEST", SecretAccessKey: "secret",
		MaxAttempts: 1, Timeout: time.Minute})
	_, err = c2.Converse(ctx, ask("go", nil))
	if !errors.As(err, &ce) || ce.Code == "ModelCallTimeout" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller's deadline: err = %v, want the context's error, not ModelCallTimeout", err)
	}
}

// MT22-3: OnThrottle sees every attempt answered ThrottlingException (429), the retried
// ones included, and OnCall each call once, with its error — through Converse and through
// ConverseStream.
func TestHooksSeeEveryThrottledAttempt(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "Converse", true: "ConverseStream"}[stream], func(t *testing.T) {
			s, err := scripted.Parse("t.model.yaml", []byte("agent:\n  - text: ok\n  - text: again\nerrors:\n"+
				"  - {role: agent, call: 0, error: ThrottlingException, times: 2}\n  - {role: agent, call: 1, error: ValidationException, times: 1}\n"))
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(conversefake.New(s))
			t.Cleanup(hs.Close)
			type key struct{}
			var throttles, calls []string
			var errs []error
			c, err := New(context.Background(), Config{Region: "us-east-1", Endpoint: hs.URL, AccessKeyID: "AKIDTEST", SecretAccessKey: "secret",
				MaxAttempts: 4, MaxBackoff: time.Millisecond,
				OnThrottle: func(ctx context.Context) { throttles = append(throttles, ctx.Value(key{}).(string)) },
				OnCall: func(ctx context.Context, took time.Duration, err error) {
					calls = append(calls, ctx.Value(key{}).(string))
					errs = append(errs, err)
					if took <= 0 {
						t.Errorf("took %s", took)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			call := func(ctx context.Context) error {
				if stream {
					_, err := c.ConverseStream(ctx, ask("go", nil), nil)
					return err
				}
				_, err := c.Converse(ctx, ask("go", nil))
				return err
			}
			if err := call(context.WithValue(context.Background(), key{}, "first")); err != nil {
				t.Fatal(err)
			}
			if err := call(context.WithValue(context.Background(), key{}, "second")); err == nil {
				t.Fatal("the scripted ValidationException did not fail the call")
			}
			if strings.Join(throttles, " ") != "first first" || strings.Join(calls, " ") != "first second" || errs[0] != nil || errs[1] == nil {
				t.Errorf("throttles %v, calls %v, errors %v", throttles, calls, errs)
			}
		})
	}
}
