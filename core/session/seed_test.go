package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// 04 CD-40/CD-42: seeding writes run-zone files and refuses every other path before any write.
func TestSeedWritesTheRunZoneOnly(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	e := h.engine()
	ctx := context.Background()
	must(t, e.Seed(ctx, "sd", []SeedFile{{Path: "trigger.json", Content: []byte("{}")}, {Path: "scratchpad/in/a.txt", Content: []byte("a")}}))
	if b, err := h.files.Read(ctx, "sd/scratchpad/in/a.txt"); err != nil || string(b) != "a" {
		t.Errorf("seeded %q %v", b, err)
	}
	for path, zone := range map[string]string{"": "invalid", "/abs": "invalid", "scratchpad/../x": "invalid", `a\b`: "invalid",
		"skills/x/SKILL.md": "authored", "AGENTS.md": "authored", ".platform/x": "authored", "workflows/wf/workflow.yaml": "authoring",
		"checkpoints/x": "run-internal", "artifacts/v.json": "run-internal", "_specs/x": "run-internal",
		"large_tool_results/x": "offload", "conversation_history/x": "offload", "other/x.txt": "invalid"} {
		err := e.Seed(ctx, "sd2", []SeedFile{{Path: "scratchpad/ok.txt", Content: []byte("ok")}, {Path: path, Content: []byte("x")}})
		var se *SeedPathError
		if !errors.As(err, &se) || se.Zone != zone {
			t.Errorf("%q: %v, want zone %s", path, err, zone)
		}
	}
	if _, err := h.files.Read(ctx, "sd2/scratchpad/ok.txt"); err == nil {
		t.Error("a refused seed wrote its other files")
	}
}

// 04 CD-61: a pinned prompt clock reaches the prompt and outranks the assembly's.
func TestPromptClockPinnedPerCall(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	assembly := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	h.cfg.PromptClock = &assembly
	h.script(says("ok"))
	pinned := time.Date(2026, 3, 20, 14, 37, 0, 0, time.UTC)
	_, err := h.engine().Send(WithPromptClock(context.Background(), pinned), "pc", SendInput{Message: "hi", Variables: map[string]any{"topic": "x"}})
	must(t, err)
	if text := perCallOf(h.model.requests[0]); !strings.Contains(text, "2026-03-20 14:30") {
		t.Errorf("prompt clock line not pinned: %q", text[max(0, len(text)-300):])
	}
}
