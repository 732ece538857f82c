package model

import (
	"strings"
	"testing"
)

// The tools cachePoint after the first ToolsCachePointAt specs: counted once, and the specs
// after it are reported at their wire index.
func TestToolsCachePointAt(t *testing.T) {
	obj := []byte(`{"type":"object"}`)
	r := &Request{ModelID: "m", Messages: []Message{{Role: RoleUser, Content: []Block{{Kind: BlockText, Text: "hi"}}}},
		Tools: []ToolSpec{{Name: "a", InputSchema: obj}, {Name: "b", InputSchema: obj}, {Name: "a", InputSchema: obj}}, ToolsCachePoint: true, ToolsCachePointAt: 1}
	if got := r.ToolsCachePointIndex(); got != 1 {
		t.Fatalf("index %d", got)
	}
	err := ValidateRequest(r)
	if err == nil || !strings.Contains(err.Error(), "toolConfig.tools.3.toolSpec.name") || !strings.Contains(err.Error(), "duplicates toolConfig.tools.0") {
		t.Errorf("err %v", err)
	}
	r.Tools[2].Name = "c"
	if err := ValidateRequest(r); err != nil {
		t.Error(err)
	}
	for _, at := range []int{0, 3, 7} {
		if r.ToolsCachePointAt = at; r.ToolsCachePointIndex() != 3 {
			t.Errorf("at %d: index %d, want the end", at, r.ToolsCachePointIndex())
		}
	}
}
