package cases

// The judge behind `grade:` (04-cases.md §10): the Judge seam the runner implements with
// the engine's model client on the `judge` role (JG-02), the evidence built from a View
// (JG-03), the two prompt messages (JG-04), reading the reply with one JSON-only retry
// (JG-05, JG-06), clamping (JG-07) and the grade record decided by `atLeast` (JG-08…JG-10).
// Pure apart from the Judge call itself.

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// JudgeRole is the role of one judge conversation message: JudgeUser or JudgeAssistant
// (the system prompt travels separately).
type JudgeRole string

// Judge conversation roles.
const (
	JudgeUser      JudgeRole = "user"
	JudgeAssistant JudgeRole = "assistant"
)

// JudgeMessage is one message of a judge conversation.
type JudgeMessage struct {
	Role JudgeRole
	Text string
}

// Judge scores `grade:` assertions: one model call on the `judge` role (JG-02) per Ask.
// Ask sends system as the system prompt and messages (alternating, starting and ending
// with JudgeUser) and returns the reply's text — string content, or the concatenation of
// its text parts (JG-05). An error is a model or provider failure (JG-09: the record fails
// with score 0 and detail `<criterion>: <err.Error()>`). Ask must honour ctx: the case
// timeout abandons an in-flight call (ST-41). Judge calls never enter the session
// (JG-11). GradeClosedQA makes one Ask, and a second only when the first reply is
// unreadable (JG-06). ModelJudge implements Judge over a model.Client; JudgeFunc adapts a
// function.
type Judge interface {
	Ask(ctx context.Context, system string, messages []JudgeMessage) (string, error)
}

// JudgeFunc adapts a function to Judge.
type JudgeFunc func(ctx context.Context, system string, messages []JudgeMessage) (string, error)

// Ask calls f.
func (f JudgeFunc) Ask(ctx context.Context, system string, messages []JudgeMessage) (string, error) {
	return f(ctx, system, messages)
}

// ModelJudge is a Judge over the engine's model client (JG-02): each Ask is one Converse
// call with System as one text block, the messages as text-only user/assistant messages
// and no tools. ModelID, MaxTokens and Temperature carry `tests.judge.model` and
// `tests.judge.modelOptions` as resolved for the `judge` role; OnResponse, when set, sees
// each response (e.g. to emit `model-usage` events, OQ-C9). An assistant message whose
// text is blank (an empty first reply before the JG-06 retry) is sent as `(empty reply)`,
// since Converse refuses empty content blocks.
type ModelJudge struct {
	Client      model.Client
	ModelID     string
	MaxTokens   int
	Temperature *float64
	Metadata    map[string]string
	OnResponse  func(*model.Response)
}

// Ask performs one Converse call and returns the concatenated text blocks of the reply.
func (j ModelJudge) Ask(ctx context.Context, system string, messages []JudgeMessage) (string, error) {
	req := &model.Request{
		ModelID:     j.ModelID,
		System:      []model.Block{{Kind: model.BlockText, Text: system}},
		MaxTokens:   j.MaxTokens,
		Temperature: j.Temperature,
		Metadata:    j.Metadata,
	}
	for _, m := range messages {
		role, text := model.RoleUser, m.Text
		if m.Role == JudgeAssistant {
			role = model.RoleAssistant
		}
		if strings.TrimSpace(text) == "" {
			text = "(empty reply)"
		}
		req.Messages = append(req.Messages, model.Message{Role: role, Content: []model.Block{{Kind: model.BlockText, Text: text}}})
	}
	resp, err := j.Client.Converse(ctx, req)
	if err != nil {
		return "", err
	}
	if j.OnResponse != nil {
		j.OnResponse(resp)
	}
	var b strings.Builder
	for _, blk := range resp.Message.Content {
		if blk.Kind == model.BlockText {
			b.WriteString(blk.Text)
		}
	}
	return b.String(), nil
}

// Evidence bounds (JG-03, REF grade.ts): each rendered text, input and output is capped at
// MaxValueChars characters, the rendered record at MaxRecordChars (line lengths plus one
// per line). Characters are UTF-16 code units, as the reference counts them.
const (
	MaxValueChars  = 800
	MaxRecordChars = 12000
)

// Evidence entry kinds (JG-03).
const (
	EvidenceMessage = "message"
	EvidenceRuntime = "runtime"
	EvidenceTool    = "tool"
)

// JudgeEvidence is what a grade shows the judge (JG-03, JudgeEvidence): Reply is what the
// action's turn said — its assistant texts, in order, joined with a blank line ("" when it
// said nothing) — and Record the chronological record of the whole session so far. JSON:
//
//	{"reply": "…", "record": [
//	  {"kind": "message", "text": "…"},
//	  {"kind": "runtime", "note": "decision", "text": "…"},
//	  {"kind": "tool", "name": "lookup", "input": {"id": 7}, "output": {"ok": true}, "status": "completed"}]}
type JudgeEvidence struct {
	Reply  string               `json:"reply"`
	Record []JudgeEvidenceEntry `json:"record"`
}

// JudgeEvidenceEntry is one record entry (JG-03): Kind EvidenceMessage (Text: a non-blank
// assistant text), EvidenceRuntime (Note: the note kind, Text: the note's text) or
// EvidenceTool (Name, Input: the call's arguments as recorded, `{}` when absent; Output:
// the result — the JSON value when the result text parses as JSON, else the text — nil
// when no result was recorded; Status: CallCompleted, CallFailed, CallRejected or
// CallPending). A JSON-valued Output is a json.RawMessage (compacted, key order kept).
type JudgeEvidenceEntry struct {
	Kind   string `json:"kind"`
	Note   string `json:"note,omitempty"`
	Text   string `json:"text,omitempty"`
	Name   string `json:"name,omitempty"`
	Input  any    `json:"input,omitempty"`
	Output any    `json:"output,omitempty"`
	Status string `json:"status,omitempty"`
}

// BuildJudgeEvidence builds the evidence of a grade from the view of the action above it
// (JG-03). Record walks v.SessionMessages in order: each runtime note with non-empty text
// (the human-role opening note included) as a runtime entry; each assistant message that
// is not a note as a message entry when its text is not blank, then one tool entry per
// call it made (archmax_note calls never appear), paired with its result as the
// transcript records it (a call whose id is in v.BlockedCallIDs is rejected). Person
// messages are not evidence. Reply joins the non-blank assistant texts of v.TurnMessages
// with "\n\n". When the record's last entry is a message equal to a non-empty Reply, it is
// dropped (the reply has its own section). Mocked calls look like real ones.
func BuildJudgeEvidence(v *View) JudgeEvidence {
	ev := JudgeEvidence{Record: []JudgeEvidenceEntry{}}
	if v == nil {
		return ev
	}
	var said []string
	for _, m := range v.TurnMessages {
		if isAgentText(m) {
			said = append(said, m.Text)
		}
	}
	ev.Reply = strings.Join(said, "\n\n")

	facts := toolCalls(v.SessionMessages, v.BlockedCallIDs)
	next := 0
	for _, m := range v.SessionMessages {
		switch {
		case m.Note != "":
			if m.Role != transcript.RoleAssistant && m.Text != "" {
				ev.Record = append(ev.Record, JudgeEvidenceEntry{Kind: EvidenceRuntime, Note: string(m.Note), Text: m.Text})
			}
		case m.Role == transcript.RoleAssistant:
			if strings.TrimSpace(m.Text) != "" {
				ev.Record = append(ev.Record, JudgeEvidenceEntry{Kind: EvidenceMessage, Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				if tc.Name == spec.NoteTool {
					continue
				}
				f := facts[next]
				next++
				e := JudgeEvidenceEntry{Kind: EvidenceTool, Name: f.name, Status: f.status, Input: map[string]any{}}
				if f.args != nil {
					e.Input = f.args
				}
				if f.output != nil {
					e.Output = unwrapToolOutput(*f.output)
				}
				ev.Record = append(ev.Record, e)
			}
		}
	}
	if n := len(ev.Record); ev.Reply != "" && n > 0 && ev.Record[n-1].Kind == EvidenceMessage && ev.Record[n-1].Text == ev.Reply {
		ev.Record = ev.Record[:n-1]
	}
	return ev
}

// unwrapToolOutput reads a tool result as the reference does (JSON.parse, falling back to
// the text): a JSON string becomes that string, any other JSON value a compacted
// json.RawMessage, anything else stays the text.
func unwrapToolOutput(text string) any {
	raw := []byte(text)
	if !json.Valid(raw) {
		return text
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return text
	}
	if buf.Len() > 0 && buf.Bytes()[0] == '"' {
		var s string
		if err := json.Unmarshal(buf.Bytes(), &s); err == nil {
			return s
		}
	}
	return json.RawMessage(buf.Bytes())
}

// RenderJudgeEvidence renders evidence as the judge reads it (JG-03, exact labels):
//
//	What the assistant did, in order:
//	<record>
//
//	Final reply to the user:
//	<reply, or "(empty)">
//
// Record lines are numbered by original position (`1. `, `2. `, …): `[message] <text>`,
// `[runtime:<kind>] <text>`, `[tool] <name> input=<value> → <status> output=<value>` or
// `[tool] <name> input=<value> → <status> (no output recorded)`, a value being the string
// itself or its compact JSON; each text, input and output capped at MaxValueChars with
// ` …(+<n> chars)`. The record keeps its newest lines whole within MaxRecordChars (at
// least the newest), dropping the oldest behind `… <n> earlier entries omitted (evidence
// budget)` (`entry` when one); an empty record is
// `(no tool calls or intermediate messages recorded)`. The reply is never capped.
func RenderJudgeEvidence(ev JudgeEvidence) string {
	reply := ev.Reply
	if reply == "" {
		reply = "(empty)"
	}
	return "What the assistant did, in order:\n" + renderRecord(ev.Record) + "\n\nFinal reply to the user:\n" + reply
}

func renderRecord(record []JudgeEvidenceEntry) string {
	if len(record) == 0 {
		return "(no tool calls or intermediate messages recorded)"
	}
	lines := make([]string, len(record))
	for i, e := range record {
		lines[i] = itoa(i+1) + ". " + renderEntry(e)
	}
	kept, total := 0, 0
	for i := len(lines) - 1; i >= 0; i-- {
		next := total + spec.UTF16Len(lines[i]) + 1
		if kept > 0 && next > MaxRecordChars {
			break
		}
		total, kept = next, kept+1
	}
	dropped := len(lines) - kept
	body := strings.Join(lines[dropped:], "\n")
	if dropped == 0 {
		return body
	}
	noun := "entries"
	if dropped == 1 {
		noun = "entry"
	}
	return "… " + itoa(dropped) + " earlier " + noun + " omitted (evidence budget)\n" + body
}

func renderEntry(e JudgeEvidenceEntry) string {
	switch e.Kind {
	case EvidenceMessage:
		return "[message] " + capValue(e.Text)
	case EvidenceRuntime:
		return "[runtime:" + e.Note + "] " + capValue(e.Text)
	}
	out := "(no output recorded)"
	if e.Output != nil {
		out = "output=" + capValue(evidenceValue(e.Output))
	}
	return "[tool] " + e.Name + " input=" + capValue(evidenceValue(e.Input)) + " → " + e.Status + " " + out
}

// evidenceValue is a rendered value: a string itself, json.RawMessage as written, anything
// else its compact JSON.
func evidenceValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.RawMessage:
		return string(x)
	}
	return jsJSON(v)
}

// capValue caps s at MaxValueChars UTF-16 code units with ` …(+<n> chars)`, n being the
// units dropped (a character straddling the cap is dropped whole).
func capValue(s string) string {
	total := spec.UTF16Len(s)
	if total <= MaxValueChars {
		return s
	}
	units, cut := 0, 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if w < 0 {
			w = 1
		}
		if units+w > MaxValueChars {
			cut = i
			break
		}
		units += w
		cut = i + utf8.RuneLen(r)
	}
	return s[:cut] + " …(+" + itoa(total-units) + " chars)"
}

// JudgeSystemPrompt is the judge's system message (JG-04; its wording is this
// implementation's decision, OQ-C10, its content normative): it grades whether an
// assistant's turn satisfies a yes/no criterion, describes the record and the final
// reply, weighs them differently, requires the JSON protocol string verbatim, defines the
// score scale and asks for a 1–3 sentence reason.
const JudgeSystemPrompt = "You are grading whether an assistant's turn satisfies a yes/no criterion, and how well.\n" +
	"After the criterion you receive a numbered, chronological record of the session: the assistant's messages ([message]), " +
	"every tool call it made with its input, its output and its status ([tool]), and the notes the runtime itself wrote, " +
	"marked [runtime:<kind>] — for example a person's decision that routed the run, an event delivered to it, or an error route. " +
	"The record is followed by the assistant's final reply to the user.\n" +
	"Weigh the two differently: a criterion about what the user was told is met only by the final reply; " +
	"a criterion about what the assistant did, or about what happened to the run, may be met by the record.\n" +
	"Reply with JSON only, in exactly this shape: " + JudgeProtocol + "\n" +
	"A score of 1 means the criterion is fully met; 0 means it is not met at all.\n" +
	"Keep the reason to 1-3 sentences that state your judgment and the evidence it rests on."

// JudgeProtocol is the reply shape the system prompt requires (JG-04, verbatim).
const JudgeProtocol = `{"score": number between 0 and 1, "pass": boolean, "reason": string}`

// JudgeRetryMessage is the user message of the one retry after an unreadable reply
// (JG-06, exact).
const JudgeRetryMessage = `Your previous reply could not be read as JSON. Reply with the JSON object only — no prose, no code fences: {"score": number, "pass": boolean, "reason": string}`

// JudgeUnreadableReason is the reason given when the retry's reply is unreadable too
// (JG-06, exact); the record's detail is then `<criterion>: grader returned no readable
// JSON verdict` with score 0.
const JudgeUnreadableReason = "grader returned no readable JSON verdict"

// JudgeUserMessage is the judge's user message (JG-04): `Criterion: <criterion>` LF LF
// `<RenderJudgeEvidence(ev)>`.
func JudgeUserMessage(criterion string, ev JudgeEvidence) string {
	return "Criterion: " + criterion + "\n\n" + RenderJudgeEvidence(ev)
}

// JudgeVerdict is what the judge said (JG-05): Score clamped to [0, 1] and Reason ("" when
// it gave none). Its own `pass` is never read (JG-08).
type JudgeVerdict struct {
	Score  float64
	Reason string
}

// GradeClosedQA asks judge to score criterion against ev (JG-04…JG-07): the system prompt
// and the user message; when the reply is unreadable (ParseJudgeReply), once more with the
// same two messages, the judge's own first reply and JudgeRetryMessage; when that reply
// is unreadable too, Score 0 and Reason JudgeUnreadableReason. The error is the judge's
// own (a model/provider failure or ctx ending), returned as is.
func GradeClosedQA(ctx context.Context, judge Judge, criterion string, ev JudgeEvidence) (JudgeVerdict, error) {
	msgs := []JudgeMessage{{Role: JudgeUser, Text: JudgeUserMessage(criterion, ev)}}
	first, err := judge.Ask(ctx, JudgeSystemPrompt, msgs)
	if err != nil {
		return JudgeVerdict{}, err
	}
	if v, ok := ParseJudgeReply(first); ok {
		return v, nil
	}
	msgs = append(msgs, JudgeMessage{Role: JudgeAssistant, Text: first}, JudgeMessage{Role: JudgeUser, Text: JudgeRetryMessage})
	second, err := judge.Ask(ctx, JudgeSystemPrompt, msgs)
	if err != nil {
		return JudgeVerdict{}, err
	}
	if v, ok := ParseJudgeReply(second); ok {
		return v, nil
	}
	return JudgeVerdict{Score: 0, Reason: JudgeUnreadableReason}, nil
}

// ParseJudgeReply reads a judge reply (JG-05, REF grade.ts parseVerdict): the text is
// scanned for balanced `{…}` blocks in order of their opening brace (string literals and
// escapes inside a block respected), and the first block that parses as a JSON object
// wins, so prose, a Markdown fence or stray braces around it are tolerated. Score is the
// numeric value of `score` clamped to [0, 1] (JG-07): a JSON number; absent or null → 0;
// true/false → 1/0 and a decimal or Infinity string → its value, as JavaScript's Number
// reads them; anything else (NaN in the reference) → 0 (decision). Reason is `reason`
// when it is a string. `pass` is ignored. ok is false when no block parses as an object.
func ParseJudgeReply(text string) (v JudgeVerdict, ok bool) {
	for start := strings.IndexByte(text, '{'); start >= 0; {
		if end := balancedEnd(text, start); end > 0 {
			var obj map[string]json.RawMessage
			if json.Unmarshal([]byte(text[start:end+1]), &obj) == nil && obj != nil {
				v.Score = clampScore(readScore(obj["score"]))
				var reason string
				if r, has := obj["reason"]; has && json.Unmarshal(r, &reason) == nil {
					v.Reason = reason
				}
				return v, true
			}
		}
		next := strings.IndexByte(text[start+1:], '{')
		if next < 0 {
			break
		}
		start += 1 + next
	}
	return JudgeVerdict{}, false
}

// balancedEnd returns the index of the `}` closing the block opened at text[start], or
// -1 when the block never closes. Quotes are tracked from the opening brace on.
func balancedEnd(text string, start int) int {
	depth, inString, escaped := 0, false, false
	for i := start; i < len(text); i++ {
		c := text[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

var jsDecimal = regexp.MustCompile(`^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$`)

// readScore is JavaScript's Number(score ?? 0) for the JSON forms a judge plausibly
// writes; NaN stands for anything Number would not read.
func readScore(raw json.RawMessage) float64 {
	if raw == nil {
		return 0
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&x) != nil {
		return math.NaN()
	}
	switch s := x.(type) {
	case nil:
		return 0
	case bool:
		if s {
			return 1
		}
		return 0
	case json.Number:
		f, err := strconv.ParseFloat(string(s), 64)
		if err != nil && f == 0 {
			return math.NaN()
		}
		return f // ±Inf on overflow, as JSON.parse
	case string:
		t := spec.JSTrim(s)
		switch t {
		case "":
			return 0
		case "Infinity", "+Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
		if jsDecimal.MatchString(t) {
			f, _ := strconv.ParseFloat(t, 64)
			return f
		}
	}
	return math.NaN()
}

// clampScore clamps to [0, 1] (JG-07); NaN reads as 0 (JG-05 decision).
func clampScore(f float64) float64 {
	switch {
	case math.IsNaN(f), f < 0:
		return 0
	case f > 1:
		return 1
	}
	return f
}

// GradeRecord builds a grade step's record (JG-01, JG-08…JG-10; REF assertions.ts): kind
// RecordGrade, Threshold = a.AtLeast, Score = verdict.Score, Status passed iff
// score >= atLeast (the judge's own pass ignored; RV-13). Detail: without a judge
// (available false) `<criterion> (grading model unavailable: declare 'tests: { judge: ... }' in workflow.yaml)`
// with score 0; on a judge error `<criterion>: <err>` with score 0 (JG-09); otherwise
// `<criterion>: <reason>` when the reason is non-empty, else `<criterion>`.
func GradeRecord(step int, a GradeAssertion, available bool, verdict JudgeVerdict, err error) AssertionRecord {
	rec := AssertionRecord{Kind: RecordGrade, Threshold: floatPtr(a.AtLeast), Step: step, Detail: a.ClosedQA}
	score := 0.0
	switch {
	case !available:
		rec.Detail = a.ClosedQA + " (grading model unavailable: declare 'tests: { judge: ... }' in workflow.yaml)"
	case err != nil:
		rec.Detail = a.ClosedQA + ": " + err.Error()
	default:
		score = clampScore(verdict.Score)
		if verdict.Reason != "" {
			rec.Detail = a.ClosedQA + ": " + verdict.Reason
		}
	}
	rec.Score = floatPtr(score)
	rec.Status = AssertionFailed
	if score >= a.AtLeast {
		rec.Status = AssertionPassed
	}
	return rec
}

// evalGrade scores a grade step (AX-15, §10). It reports false — no record — when ctx
// ended before or during the judge call (ST-41).
func evalGrade(ctx context.Context, step int, a GradeAssertion, v *View, judge Judge) (AssertionRecord, bool) {
	if judge == nil {
		return GradeRecord(step, a, false, JudgeVerdict{}, nil), true
	}
	if ctx.Err() != nil {
		return AssertionRecord{}, false
	}
	verdict, err := GradeClosedQA(ctx, judge, a.ClosedQA, BuildJudgeEvidence(v))
	if ctx.Err() != nil {
		return AssertionRecord{}, false
	}
	return GradeRecord(step, a, true, verdict, err), true
}
