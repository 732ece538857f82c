package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// fanModel: the root's first call delegates to `fan` children at once, every child answers
// with text at once, and the root then ends its turn. Zero latency: the engine's own cost.
type fanModel struct {
	fan  int
	root atomic.Int64
}

func (m *fanModel) Converse(_ context.Context, req *model.Request) (*model.Response, error) {
	text := func(s string) *model.Response {
		return &model.Response{StopReason: model.StopEndTurn, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5},
			Message: model.Message{Role: model.RoleAssistant, Content: []model.Block{{Kind: model.BlockText, Text: s}}}}
	}
	if strings.Contains(req.Metadata["archmax.session"], "/") {
		return text("checked"), nil
	}
	if m.root.Add(1) > 1 {
		return text("all checked"), nil
	}
	var blocks []model.Block
	for i := 0; i < m.fan; i++ {
		in, _ := json.Marshal(map[string]any{"item": fmt.Sprintf("item-%d", i), "qty": i})
		blocks = append(blocks, model.Block{Kind: model.BlockToolUse, ToolUse: &model.ToolUse{ID: fmt.Sprintf("tu_%d", i), Name: "archmax_workflow_check-item", Input: in}})
	}
	return &model.Response{StopReason: model.StopToolUse, Usage: &model.Usage{InputTokens: 10, OutputTokens: 5},
		Message: model.Message{Role: model.RoleAssistant, Content: blocks}}, nil
}

func benchDelegation(b *testing.B, fan int) {
	ctx := context.Background()
	authored := memory.NewFiles()
	for k, v := range map[string]string{"workflows/wf/workflow.yaml": delegateFlow, "workflows/check-item/workflow.yaml": checkItemFlow} {
		if err := authored.Write(ctx, k, []byte(v)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e, err := New(Config{Workflow: "wf", Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: &fanModel{fan: fan}, ModelID: "m"})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		out, err := e.Send(ctx, "s", SendInput{Message: "go"})
		if err != nil || out.Kind != KindCompleted {
			b.Fatalf("send: %v %+v", err, out)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fan)/1e6, "ms/child")
}

// BenchmarkDelegation1 and BenchmarkDelegation8: a root turn delegating to 1 and to 8
// children in one message (each child: opening, one model call, completion), memory stores —
// the engine's cost of a dispatch: target load, the parent's record commit, the child's
// session, the result, the roll-up.
func BenchmarkDelegation1(b *testing.B) { benchDelegation(b, 1) }
func BenchmarkDelegation8(b *testing.B) { benchDelegation(b, 8) }
