package conversefake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/model/scripted"
)

const tools = `"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"Reads.","inputSchema":{"json":{"type":"object"}}}}]}`

func body(messages string, extra ...string) string {
	return `{"messages":[` + messages + `]` + strings.Join(extra, "") + `}`
}

const (
	u1      = `{"role":"user","content":[{"text":"hi"}]}`
	aUse    = `{"role":"assistant","content":[{"toolUse":{"toolUseId":"tu-1","name":"read_file","input":{}}}]}`
	uResult = `{"role":"user","content":[{"toolResult":{"toolUseId":"tu-1","content":[{"text":"ok"}],"status":"success"}}]}`
	cp      = `{"cachePoint":{"type":"default"}}`
)

func newServer(t *testing.T, script string) (*Server, *httptest.Server) {
	t.Helper()
	s, err := scripted.Parse("t.model.yaml", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	fake := New(s, WithLatencyMs(42))
	hs := httptest.NewServer(fake)
	t.Cleanup(hs.Close)
	return fake, hs
}

func post(t *testing.T, url, b string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url+"/model/us.anthropic.claude-x-v1%3A0/converse", "application/json", strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

// TestRefusesMalformedHistories sends raw wire bodies, so the fake's own rules are tested
// independently of model.ValidateRequest (D.2.1–D.2.8, D.3, D.4, D.5, D.8).
func TestRefusesMalformedHistories(t *testing.T) {
	tests := []struct {
		name, body, message string
		strict              bool
	}{
		{"D.2.1 first not user", body(`{"role":"assistant","content":[{"text":"x"}]}`), "A conversation must start with a user message. Try again with a conversation that starts with a user message.", false},
		{"D.2.2 not alternating", body(u1 + "," + u1), "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.", false},
		{"D.2.3 empty content", body(u1 + `,{"role":"assistant","content":[]}`), "The content field in the Message object at messages.1 is empty. Add a ContentBlock object to the content field and try again.", false},
		{"D.2.4 blank text", body(`{"role":"user","content":[{"text":"x"},{"text":"  "}]}`), "The text field in the ContentBlock object at messages.0.content.1 is blank. Add text to the text field, and try again.", false},
		{"D.2.5 orphan toolResult", body(u1+`,{"role":"assistant","content":[{"text":"x"}]},`+uResult, ","+tools), "messages.2.content: the toolResult with toolUseId tu-1 matches no toolUse block of the previous turn", false},
		{"D.2.5 missing toolResult", body(u1+","+aUse+`,{"role":"user","content":[{"text":"x"}]}`, ","+tools), "Expected toolResult blocks at messages.2.content for the following Ids: tu-1", false},
		{"D.2.5 extra toolResult", body(u1+","+aUse+`,{"role":"user","content":[{"toolResult":{"toolUseId":"tu-1","content":[{"text":"a"}]}},{"toolResult":{"toolUseId":"tu-1","content":[{"text":"b"}]}}]}`, ","+tools), "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn.", false},
		{"D.2.7 toolUse without toolConfig", body(u1 + "," + aUse + "," + uResult), "The toolConfig field must be defined when using toolUse and toolResult content blocks.", false},
		{"D.2.8 error result empty", body(u1+","+aUse+`,{"role":"user","content":[{"toolResult":{"toolUseId":"tu-1","content":[],"status":"error"}}]}`, ","+tools), "The content field at messages.2.content.0.toolResult cannot be empty when status value is error.", false},
		{"D.4 bad tool name in history", body(u1+`,{"role":"assistant","content":[{"toolUse":{"toolUseId":"tu-1","name":"read file","input":{}}}]},`+uResult, ","+tools), "Value at 'messages.1.content.0.toolUse.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", false},
		{"D.4 bad tool spec name", body(u1, `,"toolConfig":{"tools":[{"toolSpec":{"name":"a.b","inputSchema":{"json":{"type":"object"}}}}]}`), "Value at 'toolConfig.tools.0.toolSpec.name' failed to satisfy constraint", false},
		{"D.4 schema not object", body(u1, `,"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"array"}}}}]}`), "toolConfig.tools.0.toolSpec.inputSchema.json: The top level schema type must be object", false},
		{"D.4 empty description", body(u1, `,"toolConfig":{"tools":[{"toolSpec":{"name":"a","description":"","inputSchema":{"json":{"type":"object"}}}}]}`), "'toolConfig.tools.0.toolSpec.description'", false},
		{"D.5 five cache points", body(`{"role":"user","content":[{"text":"x"},`+cp+`,`+cp+`]}`, `,"system":[{"text":"s"},`+cp+`],"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object"}}}},`+cp+`,`+cp+`]}`), "toolConfig.tools.2: a request may contain at most 4 cachePoint blocks", false},
		{"D.8 bad metadata char", body(u1, `,"requestMetadata":{"archmax.session":"s1~1"}`), `Map key "archmax.session" and value "s1~1"`, false},
		{"D.2.6 strict text beside toolResult", body(u1+","+aUse+`,{"role":"user","content":[{"toolResult":{"toolUseId":"tu-1","content":[{"text":"ok"}]}},{"text":"note"}]}`, ","+tools), "messages.2: Conversation blocks and tool result blocks cannot be provided in the same turn.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := "agent:\n  - text: never\n"
			if tt.strict {
				script = "strictToolTurns: true\n" + script
			}
			fake, hs := newServer(t, script)
			status, hdr, resp := post(t, hs.URL, tt.body)
			var got struct{ Message string }
			_ = json.Unmarshal([]byte(resp), &got)
			if status != 400 || hdr.Get("X-Amzn-Errortype") != "ValidationException" || !strings.Contains(got.Message, tt.message) {
				t.Errorf("got %d %q %s; want 400 ValidationException with %q", status, hdr.Get("X-Amzn-Errortype"), resp, tt.message)
			}
			if recs := fake.Requests(); len(recs) != 1 || recs[0].ErrorType != "ValidationException" || recs[0].ModelID != "us.anthropic.claude-x-v1:0" {
				t.Errorf("recorded %+v", recs)
			}
		})
	}
}

func TestTextBesideToolResultAllowedWhenNotStrict(t *testing.T) {
	_, hs := newServer(t, "agent:\n  - text: fine\n")
	b := body(u1+","+aUse+`,{"role":"user","content":[{"toolResult":{"toolUseId":"tu-1","content":[{"text":"ok"}]}},{"text":"note"}]}`, ","+tools)
	if status, _, resp := post(t, hs.URL, b); status != 200 {
		t.Fatalf("status %d: %s", status, resp)
	}
}

func TestAnswersFromScript(t *testing.T) {
	fake, hs := newServer(t, `
grader:
  - when: {state: review, turn: 3, lastUserText: "newest"}
    expect: {toolsOffered: [read_file], systemIncludes: "rules"}
    text: checking
    toolCalls: [{name: read_file, input: {n: 12345678901234567890}}]
    usage: {inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 100, cacheWriteInputTokens: 20}
`)
	b := body(`{"role":"user","content":[{"text":"older"}]},{"role":"assistant","content":[{"text":"a"}]},{"role":"user","content":[{"text":"newest"},`+cp+`]}`,
		`,"system":[{"text":"the"},{"text":"rules"}],`+tools+`,"requestMetadata":{"archmax.role":"grader","archmax.state":"review","archmax.turn":"3"}`)
	status, _, resp := post(t, hs.URL, b)
	if status != 200 {
		t.Fatalf("status %d: %s", status, resp)
	}
	want := `{"output":{"message":{"role":"assistant","content":[{"text":"checking"},{"toolUse":{"toolUseId":"tu_grader_0_0","name":"read_file","input":{"n":12345678901234567890}}}]}},"stopReason":"tool_use","usage":{"inputTokens":10,"outputTokens":5,"totalTokens":135,"cacheReadInputTokens":100,"cacheWriteInputTokens":20},"metrics":{"latencyMs":42}}`
	if resp != want {
		t.Errorf("response\n got %s\nwant %s", resp, want)
	}
	if recs := fake.Requests(); len(recs) != 1 || recs[0].Status != 200 || recs[0].Metadata["archmax.turn"] != "3" {
		t.Errorf("recorded %+v", recs)
	}
}

func TestScriptMismatchAndFaults(t *testing.T) {
	_, hs := newServer(t, "agent:\n  - text: one\nerrors:\n  - {role: agent, call: 0, error: ServiceUnavailableException, times: 1}\n")
	b := body(u1)
	if status, hdr, _ := post(t, hs.URL, b); status != 503 || hdr.Get("X-Amzn-Errortype") != "ServiceUnavailableException" {
		t.Errorf("fault: %d %q", status, hdr.Get("X-Amzn-Errortype"))
	}
	if status, _, resp := post(t, hs.URL, b); status != 200 || !strings.Contains(resp, `"text":"one"`) {
		t.Errorf("after the fault: %d %s", status, resp)
	}
	status, hdr, resp := post(t, hs.URL, b)
	if want := `{"message":"scripted model: t.model.yaml: agent call 1: no entry left (state (none), turn (none), last user text \"hi\")"}`; status != 400 || hdr.Get("X-Amzn-Errortype") != ErrScriptMismatch || resp != want {
		t.Errorf("exhausted: %d %q %s\nwant %s", status, hdr.Get("X-Amzn-Errortype"), resp, want)
	}
}

// A call the script's remaining entries do not match is refused with the script's one-line
// message naming the state and turn the request's metadata carried and what is left.
func TestScriptMismatchListsRemainingEntries(t *testing.T) {
	fake, hs := newServer(t, "agent:\n  - when: {state: check-grants, turn: 2}\n    text: later\n")
	b := body(u1, `,"requestMetadata":{"archmax.role":"agent","archmax.state":"screen","archmax.turn":"1"}`)
	status, hdr, resp := post(t, hs.URL, b)
	want := `{"message":"scripted model: t.model.yaml: agent call 0: no remaining entry matches state screen, turn 1 (remaining: {state: check-grants, turn: 2} at line 2)"}`
	if status != 400 || hdr.Get("X-Amzn-Errortype") != ErrScriptMismatch || resp != want {
		t.Errorf("got %d %q %s\nwant %s", status, hdr.Get("X-Amzn-Errortype"), resp, want)
	}
	if recs := fake.Requests(); len(recs) != 1 || recs[0].ErrorType != ErrScriptMismatch {
		t.Errorf("recorded %+v", recs)
	}
}

func TestUnknownRoute(t *testing.T) {
	_, hs := newServer(t, "agent: []\n")
	resp, err := http.Post(hs.URL+"/model/m/invoke", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("status %d", resp.StatusCode)
	}
}
