package host

import (
	"context"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/pricing"
	"github.com/archmax-ai/archmax/core/session"
)

// The host file's pricing section replaces the assembly's (ARCHMAX_PRICE_*) table; without
// one the assembly's stays.
func TestTheHostFilePricesTheModel(t *testing.T) {
	seven := 7.0
	for _, c := range []struct {
		name, file string
		want       *float64
	}{
		{"the file's section", "pricing:\n  m: { input: 2, output: 10 }\n", ptr(0.003)},
		{"the file's section, which prices nothing here", "pricing:\n  other: { input: 2 }\n", nil},
		{"no section: the assembly's table", "version: 1\n", ptr(0.0007)},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.write(t, c.file)
			w.base.Pricing = pricing.Table{pricing.DefaultKey: {Input: &seven}}
			w.model.replies = append(w.model.replies, func(r *model.Request) *model.Response {
				resp := text("done")(r)
				resp.Usage = &model.Usage{InputTokens: 100, OutputTokens: 280}
				return resp
			})
			eng, err := NewEngines(w.base, w.env).Engine(context.Background(), "wf")
			if err != nil {
				t.Fatal(err)
			}
			out, err := eng.Send(context.Background(), "s1", session.SendInput{Message: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			got := out.Usage.CostUSD
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Errorf("costUsd %v, want %v", show(got), show(c.want))
			}
		})
	}
}

func ptr(v float64) *float64 { return &v }

func show(p *float64) any {
	if p == nil {
		return "absent"
	}
	return *p
}
