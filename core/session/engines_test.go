package session

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/archmax-ai/archmax/core/model"
	"github.com/archmax-ai/archmax/core/spec"
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

// spec 01 §2.4, V-32: a workflow declaring a runtime contract this build does not implement
// is refused at assembly, before any model work; a supported one ("2", written as a number)
// gets as far as the model (noModel's error).
func TestUnsupportedRuntimeContractRefused(t *testing.T) {
	for _, tc := range []struct {
		runtime, want string
	}{
		{"runtime: { version: \"3\" }\n", "Unsupported runtime contract 'archmax-harness@3'. Supported: archmax-harness@1, archmax-harness@2."},
		{"runtime: { engine: other, version: 1 }\n", "Unsupported runtime contract 'other@1'. Supported: archmax-harness@1, archmax-harness@2."},
		{"runtime: { version: 2 }\n", ""},
	} {
		authored := memory.NewFiles()
		src := "title: Desk\n" + tc.runtime + "states:\n  a:\n    triggers: { manual: }\n"
		if err := authored.Write(context.Background(), "workflows/desk/workflow.yaml", []byte(src)); err != nil {
			t.Fatal(err)
		}
		eng, err := NewEngines(Config{Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: noModel{}}).Engine(context.Background(), "desk")
		if err != nil {
			t.Fatal(err)
		}
		_, err = eng.Send(context.Background(), "s1", SendInput{Message: "hi"})
		var contract *spec.UnsupportedRuntimeContractError
		switch {
		case tc.want == "" && errors.As(err, &contract):
			t.Errorf("%s: %v", tc.runtime, err)
		case tc.want != "" && (!errors.As(err, &contract) || err.Error() != tc.want):
			t.Errorf("%s: %v, want %q", tc.runtime, err, tc.want)
		}
	}
}

// spec 01 §1.2, V-31: frontmatter in WORKFLOW.md beside a workflow.yaml is a second machine —
// the workflow does not load; a directory with only such a WORKFLOW.md is the removed
// single-file layout, a load error that says how to migrate.
func TestWorkflowProseWithFrontmatterDoesNotLoad(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		code  string
	}{
		"competing machines": {map[string]string{"workflows/desk/workflow.yaml": "title: Desk\nstates:\n  a:\n    triggers: { manual: }\n",
			"workflows/desk/WORKFLOW.md": "---\ntitle: Desk\n---\nProse.\n"}, "layout.competing-machines"},
		"single-file layout": {map[string]string{"workflows/desk/WORKFLOW.md": "---\nstates: {}\n---\nProse.\n"}, "layout.single-file-removed"},
	} {
		t.Run(name, func(t *testing.T) {
			authored := memory.NewFiles()
			for k, v := range tc.files {
				if err := authored.Write(context.Background(), k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			eng, err := New(Config{Workflow: "desk", Authored: authored, Log: memory.New(), Files: memory.NewFiles(), Model: noModel{}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = eng.Send(context.Background(), "s1", SendInput{Message: "hi"})
			var load *spec.WorkflowLoadError
			if !errors.As(err, &load) || len(load.Diagnostics) != 1 || load.Diagnostics[0].Code != tc.code {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
