package session

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/store/memory"
)

type noModel struct{}

func (noModel) Converse(context.Context, *model.Request) (*model.Response, error) {
	return nil, errors.New("not called in these tests")
}

func newEngines(t *testing.T) *Engines {
	t.Helper()
	authored := memory.NewFiles()
	if err := authored.Write(context.Background(), "workflows/desk/workflow.yaml", []byte("title: Desk\nstates:\n  a:\n    triggers: { manual: }\n")); err != nil {
		t.Fatal(err)
	}
	return NewEngines(Config{Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: noModel{}})
}

func TestEnginesCachesOnePerWorkflow(t *testing.T) {
	e := newEngines(t)
	var wg sync.WaitGroup
	got := make([]*Engine, 8)
	for i := range got {
		wg.Go(func() {
			eng, err := e.Engine(context.Background(), "desk")
			if err != nil {
				t.Error(err)
			}
			got[i] = eng
		})
	}
	wg.Wait()
	for _, eng := range got {
		if eng == nil || eng != got[0] {
			t.Fatalf("engines differ: %p vs %p", eng, got[0])
		}
	}
}

func TestEnginesRefusesUnknownWorkflows(t *testing.T) {
	e := newEngines(t)
	for _, name := range []string{"missing", "Not-A-Slug", "../desk", ""} {
		_, err := e.Engine(context.Background(), name)
		var unknown *UnknownWorkflowError
		if !errors.As(err, &unknown) || unknown.Workflow != name {
			t.Errorf("Engine(%q) = %v, want UnknownWorkflowError", name, err)
		}
	}
	if n := len(e.byWf); n != 0 {
		t.Errorf("%d engines cached for unknown workflows", n)
	}
}
