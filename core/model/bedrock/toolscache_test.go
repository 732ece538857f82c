package bedrock

import (
	"encoding/json"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
)

// A tools cachePoint after the first ToolsCachePointAt specs is sent there, once.
func TestToolsCachePointAtOnTheWire(t *testing.T) {
	c, fake := fakeClient(t, "agent:\n  - text: Hello there.\n", 1)
	req := ask("hi", nil)
	other := readTool
	other.Name = "write_file"
	req.Tools, req.ToolsCachePointAt = []model.ToolSpec{readTool, other}, 1
	if _, err := c.Converse(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	var wire struct {
		ToolConfig struct{ Tools []map[string]any } `json:"toolConfig"`
	}
	if err := json.Unmarshal(fake.Requests()[0].Body, &wire); err != nil {
		t.Fatal(err)
	}
	if tl := wire.ToolConfig.Tools; len(tl) != 3 || tl[0]["toolSpec"] == nil || tl[1]["cachePoint"] == nil || tl[2]["toolSpec"] == nil {
		t.Errorf("tools on the wire %v", tl)
	}
}
