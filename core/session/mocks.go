package session

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/archmax-ai/archmax/core/spec"
)

// ToolMock stands in for tool calls in a test case (spec 04 §5.6 `mocks`; 03 MK-01…MK-05):
// the first mock in declaration order whose Tool equals the call's name and whose WhenInput
// (if any) matches the call's arguments answers it instead of the tool. Result is the
// answer: a string verbatim, a json.RawMessage as given (a host keeping a document's key
// order), any other value as compact JSON (`null` for nil). Control tools are never mocked.
// A mock of a delegation tool replaces only the child run: the dispatch still refuses what it
// would refuse (a disabled target first) and records its events and sub-workflow trail step.
type ToolMock struct {
	Tool      string
	WhenInput map[string]any
	Result    any
}

// MatchFunc decides whether a mock's whenInput matches a call's arguments (spec 04 MT-10,
// partial matching); nil uses a plain partial match (objects partially, numbers by value,
// anything else by deep equality).
type MatchFunc func(whenInput, args map[string]any) bool

type toolMocksKey struct{}

type toolMocks struct {
	mocks []ToolMock
	match MatchFunc
}

// WithToolMocks returns a context under which every call of the call — the agent's own, an
// agent script's or code state's `tools.*`, a grader's, and a child session's — consults
// mocks after governance allowed it (03 MK-02): a refused call stays refused.
func WithToolMocks(ctx context.Context, mocks []ToolMock, match MatchFunc) context.Context {
	if match == nil {
		match = func(w, a map[string]any) bool { return partialMatch(w, a) }
	}
	return context.WithValue(ctx, toolMocksKey{}, toolMocks{mocks: mocks, match: match})
}

// neverMocked are the controls no mock answers (03 MK-03, 04 CD-51).
var neverMocked = []string{spec.AdvanceTool, spec.RaiseTool, spec.WaitTool, spec.ResetTool,
	spec.GetVariablesTool, spec.SetVariablesTool, spec.GetHistoryTool}

// matchMock returns the first mock answering tool with args, or nil.
func matchMock(ctx context.Context, tool string, args map[string]any) *ToolMock {
	tm, _ := ctx.Value(toolMocksKey{}).(toolMocks)
	if len(tm.mocks) == 0 || slices.Contains(neverMocked, tool) {
		return nil
	}
	for i := range tm.mocks {
		if tm.mocks[i].Tool == tool && (tm.mocks[i].WhenInput == nil || tm.match(tm.mocks[i].WhenInput, args)) {
			return &tm.mocks[i]
		}
	}
	return nil
}

// mockedResult answers a non-delegation tool call from a matching mock: its text and true,
// or false when no mock matches (the real tool runs). Delegation tools are answered by the
// dispatcher instead (03 MK-02).
func (r *run) mockedResult(tool string, args map[string]any) (string, bool) {
	if spec.IsWorkflowToolName(tool) {
		return "", false
	}
	m := matchMock(r.ctx, tool, args)
	if m == nil {
		return "", false
	}
	return mockText(m.Result), true
}

// mockText renders a mock's result: a string verbatim, raw JSON as given, else compact JSON
// (JSON.stringify(result ?? null)).
func mockText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.RawMessage:
		return string(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// partialMatch reports whether every key of want is in got with a matching value: objects
// match partially, recursively; numbers by value; anything else by deep equality.
func partialMatch(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !partialMatch(wv, gv) {
				return false
			}
		}
		return true
	}
	if wf, ok := toFloat(want); ok {
		gf, ok := toFloat(got)
		return ok && wf == gf
	}
	return reflect.DeepEqual(want, got)
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}
