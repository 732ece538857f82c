package events

import (
	"encoding/json"
	"testing"
	"time"
)

// 02 §12.1: the payload is flattened beside the envelope; seq strictly increases; levels.
func TestEmitterAndWireForm(t *testing.T) {
	var got []Event
	em := NewEmitter(func(e Event) { got = append(got, e) }, func() time.Time { return time.UnixMilli(1700) })
	em.Stamp(Event{Type: ToolResult, SessionID: "s1", SessionSeq: 3, Data: map[string]any{"status": "error", "tool": "ls"}})
	em.Stamp(Event{Type: StateEnter, Data: map[string]any{"state": "a"}})
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || got[0].TS != 1700 {
		t.Fatalf("events = %+v", got)
	}
	if got[0].Level != "warn" || got[1].Level != "info" {
		t.Errorf("levels = %s, %s", got[0].Level, got[1].Level)
	}
	raw, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"level":"warn","seq":1,"sessionId":"s1","sessionSeq":3,"status":"error","tool":"ls","ts":1700,"type":"tool-result"}`
	if string(raw) != want {
		t.Errorf("wire = %s", raw)
	}
	var back Event
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Type != ToolResult || back.SessionSeq != 3 || back.Str("tool") != "ls" || back.Seq != 1 {
		t.Errorf("round trip = %+v", back)
	}
}

func TestDefaultLevel(t *testing.T) {
	for typ, want := range map[string]string{Warning: "warn", ToolBlocked: "warn", Raised: "warn", AgentText: "info", ToolResult: "info"} {
		if got := DefaultLevel(typ, map[string]any{"status": "ok"}); got != want {
			t.Errorf("%s: %s", typ, got)
		}
	}
}
