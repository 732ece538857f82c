package session

import (
	"context"
	"os"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/archmax-ai/archmax/core/store/memory"
)

// BenchmarkAgentStep20Traced is BenchmarkAgentStep20 with tracing on (every span recorded,
// exported to a discarding exporter): what the spans cost per step (docs/DECISIONS.md TR22-1).
func BenchmarkAgentStep20Traced(b *testing.B) {
	const steps = 20
	payload, err := os.ReadFile("testdata/tool-result-2048.txt")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	authored := memory.NewFiles()
	if err := authored.Write(ctx, "workflows/wf/workflow.yaml", []byte(benchFlow)); err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		files := memory.NewFiles()
		if err := files.Write(ctx, "s/scratchpad/result.txt", payload); err != nil {
			b.Fatal(err)
		}
		e, err := New(Config{Workflow: "wf", Authored: authored, Log: memory.New(), Files: files,
			Model: &loopModel{steps: steps}, ModelID: "m", StepLimit: steps + 10, TracerProvider: tp})
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
