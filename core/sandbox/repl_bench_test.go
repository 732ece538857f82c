package sandbox

import (
	"context"
	"testing"
)

// benchEval is a small archmax_eval: a declaration, a host call and a completion value.
var benchEval = &ScriptCall{
	Source: []byte(`const doc = await tools.fetchDoc({ id: 1 });
const rows = [1, 2, 3].map((n) => n * 2);
console.log("rows", rows.length);
({ ok: JSON.parse(doc).ok, sum: rows.reduce((a, b) => a + b, 0) })`),
	Tools: benchTools,
}

func benchCheck(b *testing.B, res ScriptResult, err error) {
	if err != nil || res.Error || res.Text != "rows 3\n{\"ok\":true,\"sum\":12}" {
		b.Fatalf("got %+v, %v", res, err)
	}
}

// BenchmarkREPLEval: the eval on a warm REPL (its runtime already made; the program cached).
func BenchmarkREPLEval(b *testing.B) {
	repl := NewREPL()
	defer repl.Close()
	host := &benchHost{}
	res, err := repl.Run(context.Background(), benchEval, host)
	benchCheck(b, res, err)
	b.ReportAllocs()
	for b.Loop() {
		res, err := repl.Run(context.Background(), benchEval, host)
		benchCheck(b, res, err)
	}
}

// BenchmarkREPLFresh: the same eval as the first call of a new REPL (runtime and prelude
// included; the program cached).
func BenchmarkREPLFresh(b *testing.B) {
	host := &benchHost{}
	b.ReportAllocs()
	for b.Loop() {
		repl := NewREPL()
		res, err := repl.Run(context.Background(), benchEval, host)
		benchCheck(b, res, err)
		repl.Close()
	}
}
