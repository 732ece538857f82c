package artifacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/transcript"
)

// indentedEverywhere is the rendering before AR20-14: every level indented.
func indentedEverywhere(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// nested is n arrays, one inside the other, around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func decodeAny(t *testing.T, s string) any {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Up to IndentDepth levels the rendering is JSON.stringify(v, null, 2)'s, byte for byte —
// strings holding brackets, quotes, escapes and HTML characters included.
func TestShallowArtifactsAreIndentedAsBefore(t *testing.T) {
	src := source(t)
	src.Variables = map[string]spec.VariableEntry{
		"ticket": {Value: decodeAny(t, `{"id":7,"tags":["a","b"],"empty":{},"none":[],"s":"x[\"{,:}]\\\\ <&> \u2028 é","deep":`+nested(4, `{"k":[1,{}]}`)+`}`), Locked: true},
		"note":   {Value: "x"},
	}
	for _, name := range []string{GraphJSON, Trajectory, Trail, Variables, Metadata} {
		got, err := RenderOne(src, name, MaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		var compact, want bytes.Buffer
		if err := json.Compact(&compact, got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if want.WriteByte('\n'); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s =\n%s\nwant\n%s", name, got, want.Bytes())
		}
	}
	// one level deeper, the innermost array is the eleventh level: compact
	src.Variables["ticket"] = spec.VariableEntry{Value: decodeAny(t, `{"deep":`+nested(5, `{"k":[1,{"a":2}]}`)+`}`)}
	if got, _ := RenderOne(src, Variables, MaxBytes); !strings.Contains(string(got), "\n"+strings.Repeat("  ", 10)+`"k": [1,{"a":2}]`+"\n") {
		t.Errorf("the eleventh level is not compact:\n%s", got)
	}
	// a struct's own field order survives: compare against the struct itself
	doc := TrajectoryOf(src.SessionID, src.Workflow, src.Messages)
	if got, _ := RenderOne(src, Trajectory, MaxBytes); !bytes.Equal(got, indentedEverywhere(t, doc)) {
		t.Errorf("trajectory.json differs from the indented rendering:\n%s", got)
	}
}

// The tester's body — {"message":"x","variables":{"v": <9,990 nested []>}}, 20 KB — was a
// 199,720,367-byte variables.json. Now its size is linear in the value: the ten indented
// levels plus the compact rest.
func TestADeepValueRendersInLinearSize(t *testing.T) {
	for _, depth := range []int{100, 1000, 9990} {
		value := nested(depth, "")
		src := source(t)
		src.Variables = map[string]spec.VariableEntry{"v": {Value: decodeAny(t, value)}}
		got, err := RenderOne(src, Variables, MaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > len(value)+1024 {
			t.Errorf("depth %d: variables.json is %d bytes for a %d-byte value", depth, len(got), len(value))
		}
		var back struct {
			Variables map[string]spec.VariableEntry `json:"variables"`
		}
		if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back.Variables["v"].Value, src.Variables["v"].Value) {
			t.Fatalf("depth %d: the value does not read back: %v", depth, err)
		}
	}
	// the same for a tool call's arguments in trajectory.json
	src := source(t)
	args := decodeAny(t, `{"a":`+nested(9900, "1")+`}`).(map[string]any)
	src.Messages = append(src.Messages, transcript.Message{Role: transcript.RoleAssistant, State: "done",
		ToolCalls: []transcript.ToolCall{{ID: "c9", Name: "write_file", Args: args}}})
	got, err := RenderOne(src, Trajectory, MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if small, _ := RenderOne(source(t), Trajectory, MaxBytes); len(got) > len(small)+2*9900+1024 {
		t.Errorf("trajectory.json with 9,900-deep arguments is %d bytes", len(got))
	}
	// the worst case of the bound: a wide array just at the indented depth
	wide := nested(IndentDepth-3, "["+strings.Repeat("0,", 100000)+"0]")
	src = source(t)
	src.Variables = map[string]spec.VariableEntry{"w": {Value: decodeAny(t, wide)}}
	got, err = RenderOne(src, Variables, MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if bound := (2 + 2*IndentDepth) * (len(wide) + 200); len(got) > bound {
		t.Errorf("a wide array renders to %d bytes, over the bound %d", len(got), bound)
	}
}

// Over its limit an artifact is refused with a typed error naming it, the rendering
// abandoned there; Render and One leave it out.
func TestAnArtifactOverTheLimitIsRefused(t *testing.T) {
	src := source(t)
	src.Variables = map[string]spec.VariableEntry{"v": {Value: decodeAny(t, nested(9990, ""))}}
	for _, limit := range []int64{100, 10000, 19000} {
		_, err := RenderOne(src, Variables, limit)
		var big *TooLargeError
		if !errors.As(err, &big) || big.Artifact != Variables || big.Limit != limit {
			t.Errorf("limit %d: %v, want a *TooLargeError naming variables.json", limit, err)
		}
	}
	for _, name := range Names {
		full, err := RenderOne(src, name, MaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := RenderOne(src, name, int64(len(full))); err != nil || !bytes.Equal(again, full) {
			t.Errorf("%s at exactly its size: %v", name, err)
		}
		var big *TooLargeError
		if _, err := RenderOne(src, name, int64(len(full))-1); !errors.As(err, &big) || big.Artifact != name {
			t.Errorf("%s one byte under its size: %v", name, err)
		}
	}
	if _, err := RenderOne(src, "checkpoint.json", MaxBytes); !errors.Is(err, ErrNotRendered) {
		t.Errorf("an unknown name: %v", err)
	}
	src.Checkpoint = false
	if _, err := RenderOne(src, Variables, MaxBytes); !errors.Is(err, ErrNotRendered) {
		t.Errorf("variables without a checkpoint: %v", err)
	}
	if got := strings.Join(Available(src), ","); got != "graph.json,graph.mmd,trajectory.json,metadata.json" {
		t.Errorf("available without a checkpoint = %s", got)
	}
}
