package scripted

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

const sample = `
strictToolTurns: true
agent:
  - when: {state: intake, turn: 1, lastUserText: "/badge/i"}
    expect:
      toolsOffered: [read_file]
      toolsNotOffered: [write_file]
      systemIncludes: "2026-03-20"
    text: "Let me check."
    toolCalls:
      - name: read_file
        input: {file_path: grants.json, n: 1.50}
      - name: read_file
        id: tu-fixed
    usage: {inputTokens: 1200, outputTokens: 40, cacheReadInputTokens: 7, cacheWriteInputTokens: 3}
  - when: {turn: 2}
    text: "Approved."
  - text: "Anything else."
    stopReason: max_tokens
judge:
  - text: '{"pass": true}'
errors:
  - {role: agent, call: 1, error: ThrottlingException, times: 2}
`

func mustParse(t *testing.T, src string) *Script {
	t.Helper()
	s, err := Parse("model.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func TestNextSelectsByWhenAndGeneratesIDs(t *testing.T) {
	s := mustParse(t, sample)
	if !s.StrictToolTurns {
		t.Error("StrictToolTurns not read")
	}
	first := Call{Role: "agent", State: "intake", Turn: 1, LastUserText: "My BADGE broke", System: "today is 2026-03-20", ToolsOffered: []string{"read_file"}}

	// A turn-2 call skips the turn-1 entry.
	e, err := s.Next(Call{Role: "agent", State: "intake", Turn: 2})
	if err != nil || e.Text != "Approved." || e.StopReason != "end_turn" {
		t.Fatalf("turn 2: got %+v, %v", e, err)
	}
	e, err = s.Next(first)
	if err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	if e.StopReason != "tool_use" || len(e.ToolCalls) != 2 {
		t.Fatalf("turn 1: got %+v", e)
	}
	if got := e.ToolCalls[0]; got.ID != "tu_agent_1_0" || got.Name != "read_file" || string(got.Input) != `{"file_path":"grants.json","n":1.5}` {
		t.Errorf("first call = %+v (input %s)", got, got.Input)
	}
	if got := e.ToolCalls[1]; got.ID != "tu-fixed" || string(got.Input) != "{}" {
		t.Errorf("second call = %+v (input %s)", got, got.Input)
	}
	if e.Usage != (Usage{1200, 40, 7, 3}) {
		t.Errorf("usage = %+v", e.Usage)
	}
	if e, _ = s.Next(first); e == nil || e.StopReason != "max_tokens" {
		t.Errorf("third entry = %+v", e)
	}
	_, err = s.Next(Call{Role: "agent", State: "review", Turn: 4, LastUserText: "thanks"})
	if want := `scripted model: model.yaml: agent call 3: no entry left (state review, turn 4, last user text "thanks")`; err == nil || err.Error() != want {
		t.Errorf("exhausted script: err = %v\nwant %s", err, want)
	}
	if got := s.Unused(); len(got) != 1 || got[0] != "model.yaml:21: judge entry {}" {
		t.Errorf("Unused = %q", got)
	}
}

// A call no remaining entry matches names the call and lists what is left of its role, each
// entry's `when` in the script's own flow notation with its line; "no entry left" is kept for
// a role with nothing left. One line, whatever the texts hold.
func TestNextMismatchListsRemainingEntries(t *testing.T) {
	s := mustParse(t, `agent:
  - when: {state: intake, turn: 1}
    text: one
  - when: {state: check-grants, turn: 2}
    text: two
  - when: {turn: 3}
    text: three
judge:
  - when: {lastUserText: "/badge/i"}
    text: '{"pass": true}'
  - when: {state: "odd state, really"}
    text: '{"pass": false}'
`)
	if _, err := s.Next(Call{Role: "agent", State: "intake", Turn: 1}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		call Call
		want string
	}{
		{Call{Role: "agent", State: "check-grants", Turn: 4, LastUserText: "irrelevant"},
			"scripted model: model.yaml: agent call 1: no remaining entry matches state check-grants, turn 4 " +
				"(remaining: {state: check-grants, turn: 2} at line 4; {turn: 3} at line 6)"},
		// the last user text is named only when a remaining entry tests it; a call without a
		// state or turn (the judge's) says so; a state that is not a plain slug is quoted
		{Call{Role: "judge", LastUserText: "line one\nline two"},
			`scripted model: model.yaml: judge call 0: no remaining entry matches state (none), turn (none), last user text "line one\nline two" ` +
				`(remaining: {lastUserText: "/badge/i"} at line 9; {state: "odd state, really"} at line 11)`},
		{Call{Role: "grader", State: "review", Turn: 2},
			`scripted model: model.yaml: grader call 0: no entry left (state review, turn 2)`},
	}
	for _, tt := range tests {
		_, err := s.Next(tt.call)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Next(%+v)\n got %v\nwant %s", tt.call, err, tt.want)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\n\r") {
			t.Errorf("the message spans lines: %q", err)
		}
	}
	if got := strings.Join(s.Unused(), " | "); got != "model.yaml:4: agent entry {state: check-grants, turn: 2} | model.yaml:6: agent entry {turn: 3} | "+
		`model.yaml:9: judge entry {lastUserText: "/badge/i"} | model.yaml:11: judge entry {state: "odd state, really"}` {
		t.Errorf("Unused = %s", got)
	}
}

// A long remainder is cut after eight entries, so the message stays a readable line.
func TestNextMismatchCapsTheRemainingList(t *testing.T) {
	var b strings.Builder
	b.WriteString("agent:\n")
	for n := range 11 {
		fmt.Fprintf(&b, "  - when: {turn: %d}\n    text: t%d\n", n+2, n)
	}
	_, err := mustParse(t, b.String()).Next(Call{Role: "agent", State: "s", Turn: 1})
	want := "scripted model: model.yaml: agent call 0: no remaining entry matches state s, turn 1 (remaining: " +
		"{turn: 2} at line 2; {turn: 3} at line 4; {turn: 4} at line 6; {turn: 5} at line 8; {turn: 6} at line 10; " +
		"{turn: 7} at line 12; {turn: 8} at line 14; {turn: 9} at line 16; and 3 more)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestNextWhenSelectsAcrossProcesses(t *testing.T) {
	src := "agent:\n  - when: {turn: 1}\n    text: one\n  - when: {turn: 2}\n    text: two\n"
	// A second process (fresh Script) resuming the session at turn 2.
	e, err := mustParse(t, src).Next(Call{Role: "agent", Turn: 2})
	if err != nil || e.Text != "two" {
		t.Fatalf("fresh script turn 2 = %+v, %v", e, err)
	}
}

func TestNextExpectMisses(t *testing.T) {
	tests := []struct {
		name string
		call Call
		want string
	}{
		{"tool not offered", Call{Role: "agent", System: "2026-03-20"}, `expect.toolsOffered: tool "read_file" is not offered`},
		{"tool offered", Call{Role: "agent", System: "2026-03-20", ToolsOffered: []string{"read_file", "write_file"}}, `expect.toolsNotOffered: tool "write_file" is offered`},
		{"system", Call{Role: "agent", System: "x", ToolsOffered: []string{"read_file"}}, "expect.systemIncludes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustParse(t, "agent:\n  - expect: {toolsOffered: [read_file], toolsNotOffered: [write_file], systemIncludes: '/2026-\\d\\d-20/'}\n    text: ok\n")
			_, err := s.Next(tt.call)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "model.yaml:2") {
				t.Errorf("err = %v, want %q at model.yaml:2", err, tt.want)
			}
		})
	}
}

func TestMatcherRegexFlags(t *testing.T) {
	tests := []struct {
		pattern, text string
		want          bool
	}{
		{"badge", "my badge", true},
		{"badge", "my BADGE", false},
		{"/badge/i", "my BADGE", true},
		{"/^b.c$/", "a\nb\nc", false},
		{"/^b$/m", "a\nb\nc", true},
		{"/a.b/s", "a\nb", true},
		{"/a.b/", "a\nb", false},
		{"/(?<y>\\d{4})-03/gu", "2026-03-20", true},
		{"/path/to", "see /path/to/file", true}, // "to" is not a flag set: refused
	}
	for _, tt := range tests {
		s, err := Parse("m.yaml", []byte("agent:\n  - when: {lastUserText: '"+tt.pattern+"'}\n    text: ok\n"))
		if tt.pattern == "/path/to" {
			if err == nil {
				t.Errorf("%q: want a flag error", tt.pattern)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		_, err = s.Next(Call{Role: "agent", LastUserText: tt.text})
		if got := err == nil; got != tt.want {
			t.Errorf("%q against %q: matched %v, want %v", tt.pattern, tt.text, got, tt.want)
		}
	}
}

func TestFaultCountsAttemptsPerCall(t *testing.T) {
	s := mustParse(t, sample)
	if _, _, ok := s.Fault("agent", 0); ok {
		t.Error("call 0 faulted")
	}
	for i := range 2 {
		if name, _, ok := s.Fault("agent", 1); !ok || name != "ThrottlingException" {
			t.Errorf("attempt %d = %q, %v", i, name, ok)
		}
	}
	if _, _, ok := s.Fault("agent", 1); ok {
		t.Error("third attempt faulted, times is 2")
	}
	if _, _, ok := s.Fault("judge", 1); ok {
		t.Error("judge faulted")
	}
	if s.CallIndex("agent") != 0 {
		t.Error("faults advanced the call index")
	}
	if _, err := s.Next(Call{Role: "agent", Turn: 2}); err != nil || s.CallIndex("agent") != 1 {
		t.Errorf("Next: %v, CallIndex = %d", err, s.CallIndex("agent"))
	}
}

// A mid-stream fault says how far the answer goes; Peek shows the answer without consuming it.
func TestFaultAfterChunksAndPeek(t *testing.T) {
	s := mustParse(t, "agent:\n  - text: x\n    toolCalls: [{name: read_file, input: {}}]\nerrors:\n  - {role: agent, call: 0, error: ModelStreamErrorException, afterChunks: 3}\n  - {role: agent, call: 1, error: ThrottlingException}\n")
	if f, ok := s.FaultOf("agent", 0); !ok || f.Error != "ModelStreamErrorException" || f.AfterChunks != 3 {
		t.Errorf("call 0: %+v %v", f, ok)
	}
	if f, ok := s.FaultOf("agent", 1); !ok || f.AfterChunks != -1 {
		t.Errorf("call 1 fails before it answers: %+v %v", f, ok)
	}
	peeked, err := s.Peek(Call{Role: "agent"})
	if err != nil || peeked.ToolCalls[0].ID != "tu_agent_0_0" || s.CallIndex("agent") != 0 {
		t.Fatalf("Peek: %+v %v, call index %d", peeked, err, s.CallIndex("agent"))
	}
	next, err := s.Next(Call{Role: "agent"})
	if err != nil || next.ToolCalls[0].ID != peeked.ToolCalls[0].ID || s.CallIndex("agent") != 1 {
		t.Errorf("Next after Peek: %+v %v", next, err)
	}
	if status, ok := HTTPStatus("ModelStreamErrorException"); !ok || status != 424 {
		t.Errorf("ModelStreamErrorException: %d %v", status, ok)
	}
}

func TestNextConcurrentConsumesEachEntryOnce(t *testing.T) {
	s := mustParse(t, "agent:\n"+strings.Repeat("  - text: x\n", 50))
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for range 60 {
		wg.Go(func() {
			if _, err := s.Next(Call{Role: "agent"}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if n := len(errs); n != 10 {
		t.Errorf("%d calls failed, want 10", n)
	}
	if u := s.Unused(); len(u) != 0 {
		t.Errorf("Unused = %v", u)
	}
}

func TestParseErrorsCarryFileLine(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		contains  string
	}{
		{"syntax", "agent:\n  - text: [\n", 2, "did not find expected node content"},
		{"unknown top key", "agent: []\nmodel: []\n", 2, `unknown top-level key "model"`},
		{"no content", "agent:\n  - stopReason: end_turn\n", 2, "no content"},
		{"blank text", "agent:\n  - text: '  '\n", 2, "blank"},
		{"bad tool name", "agent:\n  - toolCalls:\n      - name: read file\n", 3, "must match"},
		{"bad tool id", "agent:\n  - toolCalls:\n      - {name: a, id: 'x.y'}\n", 3, "must match"},
		{"duplicate tool id", "agent:\n  - toolCalls:\n      - {name: a, id: x}\n      - {name: b, id: x}\n", 4, "duplicate tool call id"},
		{"input not object", "agent:\n  - toolCalls:\n      - name: a\n        input: [1]\n", 4, "JSON object"},
		{"tool without name", "agent:\n  - toolCalls:\n      - input: {}\n", 3, "no name"},
		{"bad stop reason", "agent:\n  - text: x\n    stopReason: done\n", 3, "stopReason"},
		{"unknown entry key", "agent:\n  - text: x\n    txet: y\n", 3, `unknown entry key "txet"`},
		{"unknown when key", "agent:\n  - when: {role: x}\n    text: x\n", 2, `unknown when key "role"`},
		{"unknown expect key", "agent:\n  - expect:\n      tools: []\n    text: x\n", 3, `unknown expect key "tools"`},
		{"turn zero", "agent:\n  - when: {turn: 0}\n    text: x\n", 2, "1-based"},
		{"turn not int", "agent:\n  - when: {turn: two}\n    text: x\n", 2, ""},
		{"bad regex", "agent:\n  - when: {lastUserText: '/(/'}\n    text: x\n", 2, "bad regex"},
		{"negative usage", "agent:\n  - text: x\n    usage: {outputTokens: -1}\n", 3, "negative"},
		{"unknown usage key", "agent:\n  - text: x\n    usage: {totalTokens: 1}\n", 3, "unknown usage key"},
		{"unknown error", "errors:\n  - {role: agent, call: 0, error: Oops}\n", 2, "not a Bedrock runtime error"},
		{"unknown error role", "errors:\n  - {role: boss, call: 0, error: ThrottlingException}\n", 2, "role"},
		{"error without call", "errors:\n  - {role: agent, error: ThrottlingException}\n", 2, "needs role, call and error"},
		{"zero times", "errors:\n  - {role: agent, call: 0, error: ThrottlingException, times: 0}\n", 2, "times"},
		{"negative afterChunks", "errors:\n  - {role: agent, call: 0, error: ThrottlingException, afterChunks: -1}\n", 2, "afterChunks"},
		{"duplicate fault", "errors:\n  - {role: agent, call: 0, error: ThrottlingException}\n  - {role: agent, call: 0, error: ValidationException}\n", 3, "second errors entry"},
		{"duplicate key", "agent: []\nagent: []\n", 2, "duplicate key"},
		{"role not a list", "agent: {text: x}\n", 1, "expected a list"},
		{"unknown usage mode", "usage: exact\nagent: []\n", 1, `usage "exact" is not one of estimate, scripted`},
		{"usage mode not a string", "usage: {inputTokens: 1}\n", 1, "expected a string"},
		{"entry usage under estimate", "agent:\n  - text: x\n  - text: y\n    usage: {inputTokens: 1}\nusage: estimate\n", 4, "the file's usage is estimate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("wf/tests/a.model.yaml", []byte(tt.src))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse = %v, want *ParseError", err)
			}
			if pe.File != "wf/tests/a.model.yaml" || pe.Line != tt.line || !strings.Contains(pe.Msg, tt.contains) {
				t.Errorf("got %v; want line %d containing %q", err, tt.line, tt.contains)
			}
			if !strings.HasPrefix(err.Error(), "wf/tests/a.model.yaml:") {
				t.Errorf("Error() = %q, want a file:line prefix", err)
			}
		})
	}
}

func TestUsageMode(t *testing.T) {
	for src, want := range map[string]bool{
		"agent: []\n":                  false,
		"usage: scripted\nagent: []\n": false,
		"usage: estimate\nagent: []\n": true,
		"agent:\n  - text: x\n    usage: {inputTokens: 1}\nusage: scripted\n": false,
	} {
		if s := mustParse(t, src); s.UsageEstimate != want {
			t.Errorf("%q: UsageEstimate = %v, want %v", src, s.UsageEstimate, want)
		}
	}
}

func TestHTTPStatus(t *testing.T) {
	for name, want := range map[string]int{"ThrottlingException": 429, "ModelNotReadyException": 429, "ValidationException": 400, "ServiceUnavailableException": 503, "ModelTimeoutException": 408} {
		if got, ok := HTTPStatus(name); !ok || got != want {
			t.Errorf("HTTPStatus(%s) = %d, %v; want %d", name, got, ok, want)
		}
	}
	if _, ok := HTTPStatus("Nope"); ok {
		t.Error("HTTPStatus(Nope) ok")
	}
}
