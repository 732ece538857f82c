package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/workspace"
)

// GOV-45…GOV-48: a governed host mount is reachable only where granted, writable only with
// read_write, hidden from listings elsewhere, and disclosed in the state's prompt.
func TestGovernedHostMount(t *testing.T) {
	wf := `
states:
  legal:
    triggers:
      manual:
    mounts:
      allow: [{ mount: contracts, access: read_write }]
    transitions:
      - to: sales
        description: hand over
  sales:
    instructions: no contracts here
`
	h := newHarness(t, wf, nil)
	contracts := memory.NewFiles()
	must(t, contracts.Write(context.Background(), "contracts/acme.md", []byte("ACME terms")))
	h.cfg.Mounts = []workspace.Mount{{Name: "contracts", Files: contracts, Governed: true}}
	h.script(
		calls("",
			call{"read_file", map[string]any{"file_path": "contracts/acme.md"}},
			call{"write_file", map[string]any{"file_path": "contracts/globex.md", "content": "Globex terms"}},
		),
		calls("", advance("sales", "done")),
		calls("",
			call{"read_file", map[string]any{"file_path": "contracts/acme.md"}},
			call{"ls", map[string]any{"path": "/"}},
		),
		says("ok"),
	)
	out := h.send("s1", "hi", nil)
	if m := toolMessage(t, out, "read_file", 0); m.Error || !strings.Contains(m.Text, "ACME terms") {
		t.Errorf("granted read = %+v", m)
	}
	if m := toolMessage(t, out, "write_file", 0); m.Error {
		t.Errorf("read_write grant: %+v", m)
	}
	if b, err := contracts.Read(context.Background(), "contracts/globex.md"); err != nil || string(b) != "Globex terms" {
		t.Errorf("the write did not reach the mount: %q %v", b, err)
	}
	if m := toolMessage(t, out, "read_file", 1); !m.Blocked || !strings.Contains(m.Text, "under the mount 'contracts', which state 'sales' does not have") {
		t.Errorf("ungranted read = %q", m.Text)
	}
	if m := toolMessage(t, out, "ls", 0); strings.Contains(m.Text, "contracts") {
		t.Errorf("the root listing shows an ungranted governed mount: %q", m.Text)
	}
	if sys := perCallOf(h.model.requests[0]); !strings.Contains(sys, "Governed mounts reachable in this state: contracts/ (read/write).") {
		t.Errorf("prompt disclosure missing: %q", sys)
	}
}

// GOV-59: mount keys colliding with session areas or the authoring plane, repeats, and a
// writable mount over the authoring backend fail assembly.
func TestMountAssemblyGuards(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	other := memory.NewFiles()
	cases := map[string]struct {
		m    workspace.Mount
		want any
	}{
		"session area":     {workspace.Mount{Name: "scratchpad", Files: other}, new(*MountCollisionError)},
		"nested area":      {workspace.Mount{Name: "checkpoints/x", Files: other}, new(*MountCollisionError)},
		"authoring plane":  {workspace.Mount{Name: "workflows", Files: other, ReadOnly: true}, new(*MountCollisionError)},
		"area, other case": {workspace.Mount{Name: "Checkpoints/x", Files: other}, new(*MountCollisionError)},
		"plane, upper":     {workspace.Mount{Name: "WORKFLOWS", Files: other, ReadOnly: true}, new(*MountCollisionError)},
		"repeat a default": {workspace.Mount{Name: "skills", Files: other}, new(*MountCollisionError)},
		"bad name":         {workspace.Mount{Name: "/x/", Files: other}, new(*MountCollisionError)},
		"exposed":          {workspace.Mount{Name: "notes", Files: h.authored}, new(*AuthoringBackendExposedError)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := h.cfg
			cfg.Mounts = []workspace.Mount{c.m}
			_, err := New(cfg)
			var ok bool
			switch target := c.want.(type) {
			case **MountCollisionError:
				ok = errors.As(err, target)
			case **AuthoringBackendExposedError:
				ok = errors.As(err, target)
			}
			if !ok {
				t.Errorf("New: %v", err)
			}
		})
	}
	cfg := h.cfg
	cfg.Mounts = []workspace.Mount{{Name: "notes", Files: h.authored, ReadOnly: true}}
	if _, err := New(cfg); err != nil {
		t.Errorf("a read-only mount may share the authoring backend: %v", err)
	}
}
