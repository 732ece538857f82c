package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// parkModel advances from draft to review and writes the handoff in review, at zero
// latency, so the benchmark measures the engine's own work per park cycle.
type parkModel struct{}

func (parkModel) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	u := &model.Usage{InputTokens: 10, OutputTokens: 5}
	if req.Metadata["archmax.state"] == "draft" {
		in, _ := json.Marshal(map[string]any{"to": "review", "reason": "ready"})
		return &model.Response{StopReason: model.StopToolUse, Usage: u, Message: model.Message{Role: model.RoleAssistant,
			Content: []model.Block{{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: "tu", Name: "archmax_advance", Input: in}}}}}, nil
	}
	return &model.Response{StopReason: model.StopEndTurn, Usage: u, Message: model.Message{Role: model.RoleAssistant,
		Content: []model.Block{{Kind: model.BlockText, Text: "Handed over."}}}}, nil
}

// BenchmarkParkCycle: one refine decision on a human park — the [decision] note, the move
// back to the agent, its advance, the committed re-park and the reply-only handoff — on the
// memory store (engine CPU per resume; the model answers at once).
func BenchmarkParkCycle(b *testing.B) {
	ctx := context.Background()
	authored := memory.NewFiles()
	if err := authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(reviewFlow)); err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Workflow: "wf", Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: parkModel{}, ModelID: "m"})
	if err != nil {
		b.Fatal(err)
	}
	out, err := e.Send(ctx, "s", SendInput{Message: "draft it"})
	if err != nil || out.Kind != KindParked {
		b.Fatalf("park: %v %+v", err, out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err = e.Decide(ctx, "s", Decision{To: "draft", Comment: "again", ParkID: out.Pending.ParkID})
		if err != nil || out.Kind != KindParked {
			b.Fatalf("decide: %v %+v", err, out)
		}
	}
}

// stepModel always answers one archmax_set_variables call: a turn that never ends by itself.
type stepModel struct{}

func (stepModel) Converse(_ context.Context, _ *model.Request) (*model.Response, error) {
	in, _ := json.Marshal(map[string]any{"variables": map[string]any{"n": 1}})
	return &model.Response{StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5}, Message: model.Message{Role: model.RoleAssistant,
		Content: []model.Block{{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: "tu", Name: "archmax_set_variables", Input: in}}}}}, nil
}

// BenchmarkContinuation: one continuation of an interrupted turn (DESIGN.md §4) — the
// session's checkpoint and transcript loaded as a fresh invocation must, one agent step
// committed, and the stop at the step deadline — on the memory store, the model answering at
// once. Each iteration adds two messages, like BenchmarkParkCycle's growth.
func BenchmarkContinuation(b *testing.B) {
	ctx := context.Background()
	authored := memory.NewFiles()
	if err := authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(twoAgents)); err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Workflow: "wf", Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: stepModel{}, ModelID: "m",
		StepLimit: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	stop := WithStepDeadline(ctx, time.Now().Add(-time.Second))
	out, err := e.Send(stop, "s", SendInput{Message: "count"})
	if err != nil || out.Kind != KindRunning {
		b.Fatalf("opening: %v %+v", err, out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, skipped, err := e.Continue(stop, "s", out.TurnID)
		if err != nil || skipped != nil || got.Kind != KindRunning {
			b.Fatalf("continue: %v %+v %+v", err, skipped, got)
		}
	}
}
