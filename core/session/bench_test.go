package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// loopModel reads a file on every call until steps calls were made, then answers.
// It has zero latency, so the benchmark measures the engine's own CPU per step.
type loopModel struct {
	steps int
	n     atomic.Int64
}

func (m *loopModel) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	i := m.n.Add(1)
	if int(i) > m.steps {
		return &model.Response{StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5},
			Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: "done"}}}}, nil
	}
	input, _ := json.Marshal(map[string]any{"file_path": "scratchpad/result.txt"})
	return &model.Response{StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5},
		Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{
			{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: fmt.Sprintf("tu_%d", i), Name: "read_file", Input: input}},
		}}}, nil
}

const benchFlow = `
title: Bench
states:
  work:
    triggers:
      manual:
`

// benchSession runs one session of `steps` agent steps, each reading the 2 KB tool result
// of ../shared/bench/code-state/tool-result-2048.txt, on the memory store.
func benchSession(b *testing.B, steps int) {
	payload, err := os.ReadFile("testdata/tool-result-2048.txt")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	authored := memory.NewFiles()
	if err := authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(benchFlow)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		files := memory.NewFiles()
		if err := files.Write(ctx, "s/scratchpad/result.txt", payload); err != nil {
			b.Fatal(err)
		}
		e, err := New(Config{Workflow: "wf", Authored: authored, Log: memory.New(), Files: files,
			Model: &loopModel{steps: steps}, ModelID: "m", StepLimit: steps + 10})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out, err := e.Send(ctx, "s", SendInput{Message: "go"})
		if err != nil || out.Kind != KindCompleted {
			b.Fatalf("send: %v %+v", err, out)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps)/1e6, "ms/step")
}

// BenchmarkAgentStep20 and BenchmarkAgentStep200: engine CPU per agent step for a 20-step and
// a 200-step session (goal: ≤ 1.1 ms per step, and the 200-step per-step cost ≤ 1.2× the 20-step).
func BenchmarkAgentStep20(b *testing.B)  { benchSession(b, 20) }
func BenchmarkAgentStep200(b *testing.B) { benchSession(b, 200) }
