// Package scripted implements the scripted-model transcript of spec 05: a YAML file that
// answers model calls by role, state and turn so workflows and cases run offline and
// deterministically. local/conversefake serves a Script over Bedrock's Converse protocol.
package scripted

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MismatchErrorType is the Bedrock error name (X-Amzn-Errortype) under which a server
// answers a call Next refused — no entry left, no remaining entry matching, an `expect`
// miss — so a host can tell a script that could not serve a call from a scripted fault.
const MismatchErrorType = "ScriptedModelException"

// Roles a script may answer (spec 05 "Shape").
var Roles = []string{"agent", "grader", "judge"}

// StopReasons is the Converse stopReason enum an entry may name (D.5).
var StopReasons = []string{
	"end_turn", "tool_use", "max_tokens", "stop_sequence", "guardrail_intervened",
	"content_filtered", "malformed_model_output", "malformed_tool_use",
	"model_context_window_exceeded",
}

// errorStatus is the HTTP status of each Bedrock error a script's `errors:` may name (D.6).
var errorStatus = map[string]int{
	"ValidationException":           400,
	"ServiceQuotaExceededException": 400,
	"AccessDeniedException":         403,
	"ResourceNotFoundException":     404,
	"ModelTimeoutException":         408,
	"ModelErrorException":           424,
	"ThrottlingException":           429,
	"ModelNotReadyException":        429,
	"InternalServerException":       500,
	"ServiceUnavailableException":   503,
	// sent only inside a ConverseStream answer; a Converse call faulted with it gets 424
	"ModelStreamErrorException": 424,
}

// HTTPStatus returns the HTTP status Bedrock answers errName with (research D.6); ok is
// false for a name that is not a Bedrock runtime error.
func HTTPStatus(errName string) (status int, ok bool) {
	status, ok = errorStatus[errName]
	return status, ok
}

// Script is a parsed spec-05 transcript. It is safe for concurrent use; consumption and
// fault attempts are counted per Script, i.e. per process.
type Script struct {
	// StrictToolTurns makes the fake also refuse text beside toolResult blocks (D.2.6).
	StrictToolTurns bool
	// UsageEstimate (the file's `usage: estimate`) makes the fake report each call's usage
	// from its own token estimate and prompt-cache accounting instead of the entries' usage
	// (local/conversefake, "Prompt-cache accounting"); false, usage is exactly as scripted.
	UsageEstimate bool

	file    string
	entries map[string][]*scriptEntry // by role, in file order
	faults  []fault

	mu       sync.Mutex
	calls    map[string]int   // per role: calls answered (the next call's index)
	attempts map[faultKey]int // per (role, call index): faulted attempts so far
}

// Call describes one model call as the fake sees it (spec 05 "How the fake knows who is
// calling"). Turn is the session's 1-based call number (0 when unknown).
type Call struct {
	Role         string
	State        string
	Turn         int
	LastUserText string
	System       string
	ToolsOffered []string
}

// Entry is one scripted assistant answer. Every ToolCall has an ID when returned by Next.
type Entry struct {
	Text       string
	ToolCalls  []ToolCall
	StopReason string // "tool_use" with ToolCalls, else "end_turn", unless scripted
	Usage      Usage
}

// ToolCall is one scripted toolUse block; Input is a JSON object.
type ToolCall struct {
	Name  string
	ID    string
	Input json.RawMessage
}

// Usage is the token accounting the fake reports, in Bedrock's wire terms: InputTokens
// excludes the cache counts, exactly as Converse reports it.
type Usage struct {
	InputTokens           int64
	OutputTokens          int64
	CacheReadInputTokens  int64
	CacheWriteInputTokens int64
}

type scriptEntry struct {
	Entry
	line      int
	usageLine int // the line of the entry's own `usage`, 0 when it has none
	when      when
	expect    expect
	consumed  bool
}

type when struct {
	state        *string
	turn         *int
	lastUserText *matcher
}

type expect struct {
	toolsOffered    []string
	toolsNotOffered []string
	systemIncludes  *matcher
}

type fault struct {
	role    string
	call    int
	name    string
	times   int
	message string // the error's message ("" = a generated one)
	// afterChunks: on ConverseStream, the error is an exception frame after this many
	// content chunks of the answer (-1: the call fails before it answers)
	afterChunks int
}

// Fault is one faulted attempt (spec 05 `errors:`): the Bedrock error name, its message
// ("" when the script gives none) and, for a streamed answer, how many content chunks of
// the answer go out before the error (-1: the call fails before it answers).
type Fault struct {
	Error       string
	Message     string
	AfterChunks int
}

type faultKey struct {
	role string
	call int
}

// CallIndex returns the 0-based index the next call of role will get: the number of calls
// of that role Next has answered in this process. Faulted attempts do not advance it.
func (s *Script) CallIndex(role string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[role]
}

// Fault reports whether this attempt of call callIndex of role must fail, and with which
// Bedrock error name and message ("" when the script gives none; spec 05 `errors:`): the
// first `times` attempts of that call fail.
// Each call of Fault counts one attempt.
func (s *Script) Fault(role string, callIndex int) (errName, message string, ok bool) {
	f, ok := s.FaultOf(role, callIndex)
	return f.Error, f.Message, ok
}

// FaultOf is Fault with the whole fault: for a streamed answer, AfterChunks says how far
// the answer goes before the error. Each call counts one attempt.
func (s *Script) FaultOf(role string, callIndex int) (Fault, bool) {
	for _, f := range s.faults {
		if f.role != role || f.call != callIndex {
			continue
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		k := faultKey{role, callIndex}
		if s.attempts[k] >= f.times {
			return Fault{}, false
		}
		s.attempts[k]++
		return Fault{Error: f.name, Message: f.message, AfterChunks: f.afterChunks}, true
	}
	return Fault{}, false
}

// Next answers call c: the first unconsumed entry of c.Role whose `when` matches, checked
// against its `expect`, with tool-use ids generated as "tu_<role>_<call index>_<n>" where
// the script omits them. The entry is consumed and the role's call index advances even when
// an expect check fails. No matching entry is a one-line error naming the file, role, call
// index, state and turn: "no entry left" when the role has none, else "no remaining entry
// matches …" listing the remaining entries' `when`; an expect miss is an error naming the
// entry's line and the failed check.
func (s *Script) Next(c Call) (*Entry, error) { return s.answer(c, true) }

// Peek is the answer Next would give c, without consuming it: the call index does not
// advance (the answer a faulted stream begins before its error).
func (s *Script) Peek(c Call) (*Entry, error) { return s.answer(c, false) }

func (s *Script) answer(c Call, consume bool) (*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.calls[c.Role]
	for _, e := range s.entries[c.Role] {
		if e.consumed || !e.when.matches(c) {
			continue
		}
		if consume {
			e.consumed = true
			s.calls[c.Role]++
		}
		if err := e.expect.check(c); err != nil {
			return nil, fmt.Errorf("scripted model: %s call %d (state %q, turn %d) answered by %s:%d: %w",
				c.Role, idx, c.State, c.Turn, s.file, e.line, err)
		}
		out := e.Entry
		out.ToolCalls = slices.Clone(e.ToolCalls)
		for n := range out.ToolCalls {
			if out.ToolCalls[n].ID == "" {
				out.ToolCalls[n].ID = fmt.Sprintf("tu_%s_%d_%d", c.Role, idx, n)
			}
		}
		return &out, nil
	}
	return nil, s.mismatch(c, idx)
}

// maxListed is how many remaining entries a mismatch lists before "and N more".
const maxListed = 8

// mismatch is the one-line error of a call no entry answers: "no entry left" when the role
// has none left, else "no remaining entry matches state S, turn N" listing the remaining
// entries' `when` (no remaining entry lacks one: an entry without `when` matches any call).
// The call's last user text is named when the role has none left, or when a remaining entry
// tests it.
func (s *Script) mismatch(c Call, idx int) error {
	where := "state " + orNone(c.State != "", scalar(c.State)) + ", turn " + orNone(c.Turn > 0, strconv.Itoa(c.Turn))
	text := fmt.Sprintf(", last user text %q", abbreviate(c.LastUserText))
	var remaining []string
	more, testsText := 0, false
	for _, e := range s.entries[c.Role] {
		if e.consumed {
			continue
		}
		testsText = testsText || e.when.lastUserText != nil
		if len(remaining) == maxListed {
			more++
			continue
		}
		remaining = append(remaining, fmt.Sprintf("%s at line %d", e.when, e.line))
	}
	prefix := fmt.Sprintf("scripted model: %s: %s call %d: ", s.file, c.Role, idx)
	if len(remaining) == 0 {
		if c.LastUserText == "" {
			text = ""
		}
		return errors.New(prefix + "no entry left (" + where + text + ")")
	}
	if !testsText {
		text = ""
	}
	list := strings.Join(remaining, "; ")
	if more > 0 {
		list += fmt.Sprintf("; and %d more", more)
	}
	return errors.New(prefix + "no remaining entry matches " + where + text + " (remaining: " + list + ")")
}

func orNone(ok bool, s string) string {
	if !ok {
		return "(none)"
	}
	return s
}

var plainScalar = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// scalar writes a string as a slug when it is one, else double-quoted (one line).
func scalar(s string) string {
	if plainScalar.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// Unused describes the entries no call consumed, in file order, e.g.
// "model.yaml:12: agent entry {state: intake, turn: 2}" ("{}" for an entry without `when`);
// empty when all were used.
func (s *Script) Unused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, role := range Roles {
		for _, e := range s.entries[role] {
			if !e.consumed {
				out = append(out, fmt.Sprintf("%s:%d: %s entry %s", s.file, e.line, role, e.when))
			}
		}
	}
	return out
}

func (w when) matches(c Call) bool {
	return (w.state == nil || *w.state == c.State) &&
		(w.turn == nil || *w.turn == c.Turn) &&
		(w.lastUserText == nil || w.lastUserText.match(c.LastUserText))
}

// String renders the condition in the script's flow notation, keys in spec order:
// {state: check-grants, turn: 2, lastUserText: "/badge/i"}; {} without conditions.
func (w when) String() string {
	var parts []string
	if w.state != nil {
		parts = append(parts, "state: "+scalar(*w.state))
	}
	if w.turn != nil {
		parts = append(parts, "turn: "+strconv.Itoa(*w.turn))
	}
	if w.lastUserText != nil {
		parts = append(parts, "lastUserText: "+strconv.Quote(w.lastUserText.src))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (x expect) check(c Call) error {
	for _, name := range x.toolsOffered {
		if !slices.Contains(c.ToolsOffered, name) {
			return fmt.Errorf("expect.toolsOffered: tool %q is not offered (offered: %v)", name, c.ToolsOffered)
		}
	}
	for _, name := range x.toolsNotOffered {
		if slices.Contains(c.ToolsOffered, name) {
			return fmt.Errorf("expect.toolsNotOffered: tool %q is offered", name)
		}
	}
	if x.systemIncludes != nil && !x.systemIncludes.match(c.System) {
		return fmt.Errorf("expect.systemIncludes: the system prompt does not match %s", x.systemIncludes.src)
	}
	return nil
}

func abbreviate(s string) string {
	const max = 80
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
