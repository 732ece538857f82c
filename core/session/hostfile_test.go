package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/events"
	"github.com/archmax-ai/archmax/core/hostconfig"
	"github.com/archmax-ai/archmax/core/store/memory"
	"github.com/archmax-ai/archmax/core/workspace"
)

// The host file sits in the authored tree beside AGENTS.md; no route serves it and the
// kernel refuses its name to every caller: the model reads nothing there, writes nothing
// there, and a root listing never shows it; a code state's script is refused the same way.
func TestHostFileUnreachableFromTheSession(t *testing.T) {
	const flow = `
states:
  peek:
    type: code
    script: scripts/peek.js
    triggers: { manual: }
    transitions: [{ to: ask, description: peeked }]
  ask:
    instructions: Answer.
`
	h := newHarness(t, flow, map[string]string{
		hostconfig.File: "tools: []\n# secret-sentinel\n",
		"workflows/wf/scripts/peek.js": `export default async ({ tools }) => {
  for (const p of ["archmax.host.yaml", "ARCHMAX.HOST.YAML", "scratchpad/../archmax.host.yaml"]) {
    try { await tools.read_file({ file_path: p }); console.log("read " + p); } catch (e) { console.log((String(e.message).includes("host configuration") ? "refused " : "other ") + p); }
  }
  try { await tools.write_file({ file_path: "archmax.host.yaml", content: "x" }); console.log("wrote"); } catch (e) { console.log((String(e.message).includes("host configuration") ? "refused " : "other ") + "write"); }
  await tools.archmax_advance({ to: "ask", reason: "peeked" });
};`,
	})
	h.script(
		calls("", call{"read_file", map[string]any{"file_path": "archmax.host.yaml"}},
			call{"write_file", map[string]any{"file_path": "/Archmax.Host.Yaml", "content": "tools: []"}},
			call{"ls", map[string]any{"path": "/"}}),
		says("Nothing there."),
	)
	out := h.send("s1", "hi", nil)
	if out.Kind != KindCompleted {
		t.Fatalf("outcome %s: %q", out.Kind, out.Rejected)
	}
	for i, tool := range []string{"read_file", "write_file"} {
		m := toolMessage(t, out, tool, 0)
		if !strings.Contains(m.Text, "addresses the host configuration ('archmax.host.yaml')") {
			t.Errorf("%d %s: %q", i, tool, m.Text)
		}
	}
	if ls := toolMessage(t, out, "ls", 0); strings.Contains(strings.ToLower(ls.Text), "archmax.host") {
		t.Errorf("the root listing shows the host file: %q", ls.Text)
	}
	var logged []string
	for _, e := range h.eventsOf(events.CodeOutput) {
		logged = append(logged, e.Str("line"))
	}
	got := strings.Join(logged, "\n")
	for _, want := range []string{"refused archmax.host.yaml", "refused ARCHMAX.HOST.YAML",
		"refused scratchpad/../archmax.host.yaml", "refused write"} {
		if !strings.Contains(got, want) {
			t.Errorf("script log %q lacks %q", got, want)
		}
	}
	for _, m := range out.Messages {
		if strings.Contains(m.Text, "secret-sentinel") {
			t.Errorf("the host file's content reached the transcript: %q", m.Text)
		}
	}
	if _, err := h.files.Read(t.Context(), "s1/archmax.host.yaml"); err == nil {
		t.Error("a session file took the host file's name")
	}
}

// A mount named like the host file is refused at assembly, in any case.
func TestHostFileIsNoMount(t *testing.T) {
	h := newHarness(t, twoAgents, nil)
	for _, name := range []string{"archmax.host.yaml", "ARCHMAX.host.yaml"} {
		cfg := h.cfg
		cfg.Mounts = []workspace.Mount{{Name: name, File: true, Files: memory.NewFiles(), ReadOnly: true}}
		var mc *MountCollisionError
		if _, err := New(cfg); !errors.As(err, &mc) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A host file's policy rules run in the engine's kernel for the model and scripts alike.
func TestHostPolicyRulesInTheEngine(t *testing.T) {
	cfg, err := hostconfig.Load([]byte(`policyRules:
  - id: host.no-notes-here
    effect: block
    tools: [write_file]
    workflows: [wf]
    states: [answer]
    paths: ["scratchpad/notes/**"]
    reason: Notes are kept by the intake state only.
  - id: host.other-workflow
    effect: block
    tools: ["*"]
    workflows: [billing]
    reason: never here
`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, twoAgents, nil)
	h.cfg.PolicyRules = cfg.Rules()
	h.script(
		calls("", call{"archmax_set_variables", map[string]any{"variables": map[string]any{"topic": "x"}}}, advance("answer", "known")),
		calls("", call{"write_file", map[string]any{"file_path": "scratchpad/notes/a.md", "content": "a"}},
			call{"write_file", map[string]any{"file_path": "scratchpad/b.md", "content": "b"}}),
		says("Done."),
	)
	out := h.send("s1", "hi", nil)
	if m := toolMessage(t, out, "write_file", 0); m.Text != "[workflow] BLOCKED: 'write_file' on 'scratchpad/notes/a.md' is refused by the host's rule 'host.no-notes-here': Notes are kept by the intake state only." {
		t.Errorf("refusal: %q", m.Text)
	}
	if m := toolMessage(t, out, "write_file", 1); strings.Contains(m.Text, "BLOCKED") {
		t.Errorf("another path: %q", m.Text)
	}
	blocked := h.eventsOf(events.ToolBlocked)
	if len(blocked) != 1 || blocked[0].Str("ruleId") != "host.no-notes-here" {
		t.Errorf("tool-blocked events: %+v", blocked)
	}
}
