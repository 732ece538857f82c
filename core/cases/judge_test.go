package cases

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// fakeJudge answers Ask with scripted replies in order and records every call.
type fakeJudge struct {
	replies []string
	err     error
	calls   [][]JudgeMessage
	systems []string
	onAsk   func()
}

func (f *fakeJudge) Ask(ctx context.Context, system string, msgs []JudgeMessage) (string, error) {
	f.calls = append(f.calls, append([]JudgeMessage(nil), msgs...))
	f.systems = append(f.systems, system)
	if f.onAsk != nil {
		f.onAsk()
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if f.err != nil {
		return "", f.err
	}
	r := f.replies[0]
	f.replies = f.replies[1:]
	return r, nil
}

// JG-05, JG-07
func TestParseJudgeReply(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		ok     bool
		score  float64
		reason string
	}{
		{"plain", `{"score": 0.8, "pass": true, "reason": "It apologised."}`, true, 0.8, "It apologised."},
		{"fenced", "```json\n{\"score\": 1, \"pass\": true, \"reason\": \"ok\"}\n```", true, 1, "ok"},
		{"prose around", `Here is my verdict: {"score": 0.25, "reason": "weak"} — hope it helps`, true, 0.25, "weak"},
		{"braces in prose first", `The reply {mentions} the order. {"score": 0.4, "reason": "partial"}`, true, 0.4, "partial"},
		{"brace inside a string", `{"score": 0.5, "reason": "uses a } brace and \"quotes\""}`, true, 0.5, `uses a } brace and "quotes"`},
		{"above 1 clamped", `{"score": 1.7, "reason": "x"}`, true, 1, "x"},
		{"below 0 clamped", `{"score": -0.2}`, true, 0, ""},
		{"huge clamped", `{"score": 1e400}`, true, 1, ""},
		{"absent score", `{"pass": true, "reason": "no score"}`, true, 0, "no score"},
		{"null score", `{"score": null}`, true, 0, ""},
		{"numeric string (JS Number)", `{"score": " 0.6 "}`, true, 0.6, ""},
		{"non-numeric string (decision: 0)", `{"score": "high"}`, true, 0, ""},
		{"boolean score", `{"score": true}`, true, 1, ""},
		{"non-string reason", `{"score": 0.9, "reason": 5}`, true, 0.9, ""},
		{"outer object wins", `{"verdict": {"score": 0.9}}`, true, 0, ""},
		{"first parsable block", `{not json} {"score": 0.3}`, true, 0.3, ""},
		{"garbage", `I think it passes.`, false, 0, ""},
		{"array only", `[{"score" 1}]`, false, 0, ""},
		{"unbalanced", `{"score": 0.5`, false, 0, ""},
		{"empty", ``, false, 0, ""},
	}
	for _, c := range cases {
		v, ok := ParseJudgeReply(c.text)
		if ok != c.ok || v.Score != c.score || v.Reason != c.reason {
			t.Errorf("JG-05 %s: ParseJudgeReply = %+v, %v; want {%v %q}, %v", c.name, v, ok, c.score, c.reason, c.ok)
		}
	}
}

func gradeView() *View {
	turn := []transcript.Message{
		{Role: "user", Text: "refund order A-1"},
		{Role: "assistant", Text: "Checking.", ToolCalls: []transcript.ToolCall{{ID: "c1", Name: "lookup_order", Args: map[string]any{"id": "A-1"}}}},
		{Role: "tool", ToolCallID: "c1", Tool: "lookup_order", Text: "{\n  \"status\": \"shipped\", \"total\": 20\n}"},
		{Role: "assistant", Text: "Your refund of 20 EUR is approved."},
	}
	return &View{Outcome: Outcome{Kind: "completed", Reply: "Your refund of 20 EUR is approved."}, TurnMessages: turn, SessionMessages: turn}
}

// JG-04, JG-06, JG-08, JG-10 through Evaluate with a fake Judge.
func TestEvaluateGrade(t *testing.T) {
	ctx := context.Background()
	a := GradeAssertion{ClosedQA: "tells the customer the refund is approved", AtLeast: 0.7}
	crit := a.ClosedQA

	check := func(name string, got []AssertionRecord, status AssertionStatus, score float64, detail string) {
		t.Helper()
		if len(got) != 1 {
			t.Fatalf("%s: %d records", name, len(got))
		}
		r := got[0]
		if r.Kind != "grade.closedQA" || r.Status != status || r.Score == nil || *r.Score != score ||
			r.Threshold == nil || *r.Threshold != 0.7 || r.Detail != detail || r.Step != 6 {
			t.Errorf("%s: record = %+v (score %v); want status %s score %v detail %q", name, r, deref(r.Score), status, score, detail)
		}
	}

	// Valid at the first attempt: one call, system + user message (JG-04).
	j := &fakeJudge{replies: []string{`{"score": 0.9, "pass": true, "reason": "It says so."}`}}
	check("JG-10 pass", Evaluate(ctx, 6, a, gradeView(), j), AssertionPassed, 0.9, crit+": It says so.")
	if len(j.calls) != 1 || j.systems[0] != JudgeSystemPrompt || len(j.calls[0]) != 1 || j.calls[0][0].Role != JudgeUser {
		t.Fatalf("JG-04 calls = %+v", j.calls)
	}
	if want := "Criterion: " + crit + "\n\n" + RenderJudgeEvidence(BuildJudgeEvidence(gradeView())); j.calls[0][0].Text != want {
		t.Errorf("JG-04 user message =\n%s\nwant\n%s", j.calls[0][0].Text, want)
	}

	// Garbage, then a valid retry (JG-06): same two messages, its own first reply, the retry message.
	j = &fakeJudge{replies: []string{"Sure! It passes.", `{"score": 0.75}`}}
	check("JG-06 retry", Evaluate(ctx, 6, a, gradeView(), j), AssertionPassed, 0.75, crit)
	if len(j.calls) != 2 {
		t.Fatalf("JG-06 calls = %d", len(j.calls))
	}
	retry := j.calls[1]
	if len(retry) != 3 || retry[0] != j.calls[0][0] || retry[1] != (JudgeMessage{JudgeAssistant, "Sure! It passes."}) ||
		retry[2] != (JudgeMessage{JudgeUser, `Your previous reply could not be read as JSON. Reply with the JSON object only — no prose, no code fences: {"score": number, "pass": boolean, "reason": string}`}) {
		t.Errorf("JG-06 retry messages = %+v", retry)
	}

	// Garbage twice: score 0 and the spec's reason.
	j = &fakeJudge{replies: []string{"nope", "still nope"}}
	check("JG-06 unreadable", Evaluate(ctx, 6, a, gradeView(), j), AssertionFailed, 0, crit+": grader returned no readable JSON verdict")

	// The judge's own pass is advisory (JG-08); equal to the bar passes.
	j = &fakeJudge{replies: []string{`{"score": 0.6, "pass": true, "reason": "close"}`}}
	got := Evaluate(ctx, 6, a, gradeView(), j)
	check("JG-08 pass ignored", got, AssertionFailed, 0.6, crit+": close")
	if f := ReduceVerdict(got).Failures; len(f) != 1 || f[0] != "grade.closedQA: "+crit+": close (score 0.6 < 0.7)" {
		t.Errorf("RV-12 grade failure = %q", f)
	}
	j = &fakeJudge{replies: []string{`{"score": 0.7, "pass": false}`}}
	check("JG-08 at the bar", Evaluate(ctx, 6, a, gradeView(), j), AssertionPassed, 0.7, crit)
	j = &fakeJudge{replies: []string{`{"score": 3}`}}
	check("JG-07 clamped", Evaluate(ctx, 6, a, gradeView(), j), AssertionPassed, 1, crit)

	// A model/provider error (JG-09).
	j = &fakeJudge{err: errors.New("model call failed: ThrottlingException (HTTP 429): slow down")}
	check("JG-09", Evaluate(ctx, 6, a, gradeView(), j), AssertionFailed, 0, crit+": model call failed: ThrottlingException (HTTP 429): slow down")

	// No tests.judge (JG-01).
	check("JG-01", Evaluate(ctx, 6, a, gradeView(), nil), AssertionFailed, 0,
		crit+" (grading model unavailable: declare 'tests: { judge: ... }' in workflow.yaml)")

	// ST-41: a context that ends before or during the judge call yields no record.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got := Evaluate(cctx, 6, a, gradeView(), &fakeJudge{replies: []string{`{"score":1}`}}); got != nil {
		t.Errorf("ST-41 cancelled before = %+v", got)
	}
	cctx, cancel = context.WithCancel(ctx)
	j = &fakeJudge{onAsk: cancel}
	if got := Evaluate(cctx, 6, a, gradeView(), j); got != nil {
		t.Errorf("ST-41 cancelled during = %+v", got)
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// JG-03: evidence built from the view.
func TestBuildJudgeEvidence(t *testing.T) {
	earlier := []transcript.Message{
		{Role: "user", Text: "hi"},
		{Role: "assistant", Text: "Hello! What order?"},
	}
	turn := []transcript.Message{
		{Role: "user", Text: "A-1, refund it"},
		{Role: "runtime", Note: transcript.NoteDecision, Text: "A person chose 'approve': fine"},
		{Role: "runtime", Note: transcript.NoteEvent, Text: ""},
		{Role: "assistant", Text: "Looking it up.", ToolCalls: []transcript.ToolCall{
			{ID: "c1", Name: "lookup_order", Args: map[string]any{"id": "A-1"}},
			{ID: "c2", Name: "read_file", Args: map[string]any{"path": "secret"}},
			{ID: "c3", Name: "send_email"},
			{ID: "c4", Name: "notify", Args: map[string]any{"to": "ops"}},
			{ID: "c5", Name: "archmax_note", Args: map[string]any{"note": "event"}},
		}},
		{Role: "tool", ToolCallID: "c1", Tool: "lookup_order", Text: "{ \"status\" : \"shipped\" }"},
		{Role: "tool", ToolCallID: "c2", Tool: "read_file", Text: "refused", Error: true, Blocked: true},
		{Role: "tool", ToolCallID: "c3", Tool: "send_email", Text: "SMTP down", Error: true},
		{Role: "tool", ToolCallID: "c5", Tool: "archmax_note", Text: "note"},
		{Role: "assistant", Text: "   "},
		{Role: "assistant", Text: "Refund approved."},
	}
	v := &View{TurnMessages: turn, SessionMessages: append(append([]transcript.Message{}, earlier...), turn...)}
	ev := BuildJudgeEvidence(v)
	if ev.Reply != "Looking it up.\n\nRefund approved." {
		t.Errorf("JG-03 reply = %q", ev.Reply)
	}
	b, _ := json.Marshal(ev)
	want := `{"reply":"Looking it up.\n\nRefund approved.","record":[` +
		`{"kind":"message","text":"Hello! What order?"},` +
		`{"kind":"runtime","note":"decision","text":"A person chose 'approve': fine"},` +
		`{"kind":"message","text":"Looking it up."},` +
		`{"kind":"tool","name":"lookup_order","input":{"id":"A-1"},"output":{"status":"shipped"},"status":"completed"},` +
		`{"kind":"tool","name":"read_file","input":{"path":"secret"},"output":"refused","status":"rejected"},` +
		`{"kind":"tool","name":"send_email","input":{},"output":"SMTP down","status":"failed"},` +
		`{"kind":"tool","name":"notify","input":{"to":"ops"},"status":"pending"},` +
		`{"kind":"message","text":"Refund approved."}]}`
	if string(b) != want {
		t.Errorf("JG-03 evidence =\n%s\nwant\n%s", b, want)
	}

	// The last entry equal to the reply is dropped; a reply followed by calls stays.
	one := []transcript.Message{{Role: "assistant", Text: "Done."}}
	ev = BuildJudgeEvidence(&View{TurnMessages: one, SessionMessages: one})
	if ev.Reply != "Done." || len(ev.Record) != 0 {
		t.Errorf("JG-03 drop = %+v", ev)
	}
	then := []transcript.Message{{Role: "assistant", Text: "Done.", ToolCalls: []transcript.ToolCall{{ID: "x", Name: "log"}}}}
	ev = BuildJudgeEvidence(&View{TurnMessages: then, SessionMessages: then})
	if len(ev.Record) != 2 || ev.Record[0].Text != "Done." {
		t.Errorf("JG-03 reply followed by a call = %+v", ev)
	}
	// A call blocked per BlockedCallIDs is rejected in the evidence too; an empty turn says "".
	ev = BuildJudgeEvidence(&View{SessionMessages: then, BlockedCallIDs: []string{"x"}})
	if ev.Reply != "" || ev.Record[1].Status != "rejected" {
		t.Errorf("JG-03 blocked id = %+v", ev)
	}
}

// JG-03 rendering, exact labels.
func TestRenderJudgeEvidence(t *testing.T) {
	ev := JudgeEvidence{
		Reply: "Refund approved.",
		Record: []JudgeEvidenceEntry{
			{Kind: EvidenceMessage, Text: "Looking it up."},
			{Kind: EvidenceRuntime, Note: "decision", Text: "approved"},
			{Kind: EvidenceTool, Name: "lookup_order", Input: map[string]any{"id": "A-1", "n": 2.0}, Output: json.RawMessage(`{"status":"shipped"}`), Status: "completed"},
			{Kind: EvidenceTool, Name: "read_file", Input: map[string]any{}, Output: "refused", Status: "rejected"},
			{Kind: EvidenceTool, Name: "notify", Input: map[string]any{"to": "ops"}, Status: "pending"},
		},
	}
	want := "What the assistant did, in order:\n" +
		"1. [message] Looking it up.\n" +
		"2. [runtime:decision] approved\n" +
		`3. [tool] lookup_order input={"id":"A-1","n":2} → completed output={"status":"shipped"}` + "\n" +
		"4. [tool] read_file input={} → rejected output=refused\n" +
		`5. [tool] notify input={"to":"ops"} → pending (no output recorded)` + "\n\n" +
		"Final reply to the user:\nRefund approved."
	if got := RenderJudgeEvidence(ev); got != want {
		t.Errorf("JG-03 render =\n%s\nwant\n%s", got, want)
	}
	if got, want := RenderJudgeEvidence(JudgeEvidence{}), "What the assistant did, in order:\n(no tool calls or intermediate messages recorded)\n\nFinal reply to the user:\n(empty)"; got != want {
		t.Errorf("JG-03 empty render = %q", got)
	}

	// Value cap: 800 UTF-16 units with the marker; the reply is never capped.
	long := strings.Repeat("x", 1000)
	ev = JudgeEvidence{Reply: long, Record: []JudgeEvidenceEntry{{Kind: EvidenceMessage, Text: long}}}
	got := RenderJudgeEvidence(ev)
	if want := "1. [message] " + strings.Repeat("x", 800) + " …(+200 chars)\n"; !strings.Contains(got, want) || !strings.HasSuffix(got, "\n"+long) {
		t.Errorf("JG-03 cap = %q", got[:120])
	}
	astral := strings.Repeat("😀", 401) // 802 UTF-16 units
	if got := capValue(astral); got != strings.Repeat("😀", 400)+" …(+2 chars)" {
		t.Errorf("JG-03 UTF-16 cap = …%q", got[len(got)-20:])
	}

	// Record budget: newest entries kept whole, oldest dropped behind one line.
	var rec []JudgeEvidenceEntry
	for i := 0; i < 20; i++ {
		rec = append(rec, JudgeEvidenceEntry{Kind: EvidenceMessage, Text: strings.Repeat("m", 700)})
	}
	got = renderRecord(rec)
	lines := strings.Split(got, "\n")
	// Each line is "N. [message] " + 700 chars: 713 or 714 units + 1 per line.
	kept := len(lines) - 1
	if lines[0] != "… "+itoa(20-kept)+" earlier entries omitted (evidence budget)" || !strings.HasPrefix(lines[len(lines)-1], "20. [message] ") ||
		!strings.HasPrefix(lines[1], itoa(20-kept+1)+". ") {
		t.Errorf("JG-03 budget head %q, tail %q", lines[0], lines[len(lines)-1][:20])
	}
	total := 0
	for _, l := range lines[1:] {
		total += spec.UTF16Len(l) + 1
	}
	if total > MaxRecordChars || total+715 <= MaxRecordChars {
		t.Errorf("JG-03 budget kept %d units in %d lines", total, kept)
	}
	// One dropped entry reads "entry"; the newest entry is always kept.
	huge := []JudgeEvidenceEntry{{Kind: EvidenceMessage, Text: "old"}, {Kind: EvidenceTool, Name: "t", Input: map[string]any{"a": strings.Repeat("y", 799)}, Output: strings.Repeat("z", 20000), Status: "completed"}}
	for i := 0; i < 15; i++ {
		huge = append(huge, huge[1])
	}
	got = renderRecord(huge)
	if !strings.HasPrefix(got, "… ") || !strings.Contains(got, "\n17. [tool] t") {
		t.Errorf("JG-03 budget with capped tools = %q", got[:80])
	}
	if got := renderRecord([]JudgeEvidenceEntry{{Kind: EvidenceMessage, Text: "a"}, {Kind: EvidenceMessage, Text: strings.Repeat("b", 799)}}); !strings.HasPrefix(got, "1. [message] a\n") {
		t.Errorf("JG-03 within budget = %q", got[:20])
	}
	// Boundary: 15 lines totalling exactly MaxRecordChars are all kept; one unit more
	// drops the oldest (9×(13+786+1) + 6×(14+786+1) = 12006, less 6 for a 780-char first).
	edge := func(first int) []JudgeEvidenceEntry {
		out := []JudgeEvidenceEntry{{Kind: EvidenceMessage, Text: strings.Repeat("a", first)}}
		for i := 0; i < 14; i++ {
			out = append(out, JudgeEvidenceEntry{Kind: EvidenceMessage, Text: strings.Repeat("b", 786)})
		}
		return out
	}
	if got := renderRecord(edge(780)); !strings.HasPrefix(got, "1. [message] a") {
		t.Errorf("JG-03 exactly at the budget = %q", got[:40])
	}
	if got := renderRecord(edge(781)); !strings.HasPrefix(got, "… 1 earlier entry omitted (evidence budget)\n2. [message] b") {
		t.Errorf("JG-03 one over the budget = %q", got[:60])
	}
	// 8 lines of 13+730+1 and 8 of 14+730+1 units = 11912; the oldest (13+100+1) no longer fits.
	msgs := []JudgeEvidenceEntry{{Kind: EvidenceMessage, Text: strings.Repeat("a", 100)}}
	for i := 0; i < 16; i++ {
		msgs = append(msgs, JudgeEvidenceEntry{Kind: EvidenceMessage, Text: strings.Repeat("b", 730)})
	}
	if got := renderRecord(msgs); !strings.HasPrefix(got, "… 1 earlier entry omitted (evidence budget)\n2. ") {
		t.Errorf("JG-03 one omitted = %q", got[:60])
	}
}

// JG-04: the system prompt (a snapshot: wording is a decision, content normative).
func TestJudgeSystemPrompt(t *testing.T) {
	want := "You are grading whether an assistant's turn satisfies a yes/no criterion, and how well.\n" +
		"After the criterion you receive a numbered, chronological record of the session: the assistant's messages ([message]), " +
		"every tool call it made with its input, its output and its status ([tool]), and the notes the runtime itself wrote, " +
		"marked [runtime:<kind>] — for example a person's decision that routed the run, an event delivered to it, or an error route. " +
		"The record is followed by the assistant's final reply to the user.\n" +
		"Weigh the two differently: a criterion about what the user was told is met only by the final reply; " +
		"a criterion about what the assistant did, or about what happened to the run, may be met by the record.\n" +
		`Reply with JSON only, in exactly this shape: {"score": number between 0 and 1, "pass": boolean, "reason": string}` + "\n" +
		"A score of 1 means the criterion is fully met; 0 means it is not met at all.\n" +
		"Keep the reason to 1-3 sentences that state your judgment and the evidence it rests on."
	if JudgeSystemPrompt != want {
		t.Errorf("JG-04 system prompt changed:\n%s", JudgeSystemPrompt)
	}
	if got := JudgeUserMessage("is polite", JudgeEvidence{Reply: "hi"}); got != "Criterion: is polite\n\nWhat the assistant did, in order:\n(no tool calls or intermediate messages recorded)\n\nFinal reply to the user:\nhi" {
		t.Errorf("JG-04 user message = %q", got)
	}
}

// fakeClient captures one Converse request.
type fakeClient struct {
	req  *model.Request
	resp *model.Response
	err  error
}

func (c *fakeClient) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	c.req = req
	return c.resp, c.err
}

// ModelJudge over the engine's model client (JG-02, JG-05).
func TestModelJudge(t *testing.T) {
	temp := 0.0
	c := &fakeClient{resp: &model.Response{Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{
		{Kind: model.BlockText, Text: `{"score": `}, {Kind: model.BlockToolUse, ToolUse: &model.ToolUse{Name: "x"}}, {Kind: model.BlockText, Text: `0.5}`},
	}}}}
	var seen *model.Response
	j := ModelJudge{Client: c, ModelID: "judge-model", MaxTokens: 512, Temperature: &temp, OnResponse: func(r *model.Response) { seen = r }}
	text, err := j.Ask(context.Background(), "SYS", []JudgeMessage{{JudgeUser, "q"}, {JudgeAssistant, " "}, {JudgeUser, "again"}})
	if err != nil || text != `{"score": 0.5}` || seen != c.resp {
		t.Fatalf("ModelJudge.Ask = %q, %v", text, err)
	}
	r := c.req
	if r.ModelID != "judge-model" || r.MaxTokens != 512 || r.Temperature != &temp || len(r.Tools) != 0 ||
		!reflect.DeepEqual(r.System, []model.Block{{Kind: model.BlockText, Text: "SYS"}}) {
		t.Errorf("request = %+v", r)
	}
	wantMsgs := []model.Message{
		{Role: model.RoleUser, Content: []model.Block{{Kind: model.BlockText, Text: "q"}}},
		{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "(empty reply)"}}},
		{Role: model.RoleUser, Content: []model.Block{{Kind: model.BlockText, Text: "again"}}},
	}
	if !reflect.DeepEqual(r.Messages, wantMsgs) {
		t.Errorf("messages = %+v", r.Messages)
	}
	c.err = errors.New("boom")
	if _, err := j.Ask(context.Background(), "SYS", nil); err == nil || err.Error() != "boom" {
		t.Errorf("error = %v", err)
	}
	// JudgeFunc adapts a function.
	var f Judge = JudgeFunc(func(context.Context, string, []JudgeMessage) (string, error) { return "x", nil })
	if s, _ := f.Ask(context.Background(), "", nil); s != "x" {
		t.Error("JudgeFunc")
	}
}
