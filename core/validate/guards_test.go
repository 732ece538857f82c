package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
	"github.com/archmax-ai/archmax/core/store"
	fsstore "github.com/archmax-ai/archmax/core/store/fs"
	"github.com/archmax-ai/archmax/core/store/memory"
)

// guardFindings validates workflow "g" (its workflow.yaml and scripts) and returns its
// guard.unlocked-reference findings.
func guardFindings(t *testing.T, yaml string, scripts map[string]string) []spec.Diagnostic {
	t.Helper()
	files := memory.NewFiles()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(files.Write(ctx, "workflows/g/workflow.yaml", []byte(yaml)))
	for name, src := range scripts {
		must(files.Write(ctx, "workflows/g/scripts/"+name, []byte(src)))
	}
	res, err := Workflow(ctx, files, "g", Options{})
	must(err)
	var out []spec.Diagnostic
	for _, d := range res.Diagnostics {
		if d.Code == "guard.unlocked-reference" {
			out = append(out, d)
		}
	}
	return out
}

// screenScript is a code state that records `area` — locked or not — and advances.
func screenScript(lock bool) string {
	l := ""
	if lock {
		l = ", lock: true"
	}
	return `export default async ({ tools }) => {
  await tools.archmax_set_variables({ variables: { area: "east-lab" }` + l + ` });
  return tools.archmax_advance({ to: "check", reason: "screened" });
};
`
}

const screenedWorkflow = `
instructions: Grant badges.
skills: {}
states:
  screen:
    type: code
    script: scripts/screen.js
    on_error: ask
    triggers:
      manual:
    transitions:
      - to: check
        description: An area was named.
  check:
    instructions: Check the team, then advance.
    transitions:
      - to: approve
        description: Granted.
  approve:
    instructions: Write the grant note.
    requires: [area]
    tools:
      allow:
        - { tool: write_file, paths: ["grants/${{area}}.md"] }
  ask:
    instructions: Ask which area, then reset.
`

// guard.unlocked-reference: a guard reading a variable an agent state may rewrite first
// warns, naming those states and the code state that writes it unlocked; locking it where
// it is set silences it.
func TestGuardUnlockedReference(t *testing.T) {
	got := guardFindings(t, screenedWorkflow, map[string]string{"screen.js": screenScript(false)})
	if len(got) != 1 {
		t.Fatalf("findings = %+v, want one", got)
	}
	d := got[0]
	want := "the guard 'grants/${{area}}.md' on write_file in state 'approve' reads ${{area}}, which the model in states 'check', 'approve', 'ask' may set without a lock before the call, pointing the guard at a value of its choosing (code state 'screen' writes it without lock: true)"
	if d.Severity != "warning" || d.Field != "states.approve.tools.allow.0.paths.0" || d.Message != want || d.Line == 0 || d.Hint == "" {
		t.Errorf("finding = %+v\nwant message %s", d, want)
	}
	if got := guardFindings(t, screenedWorkflow, map[string]string{"screen.js": screenScript(true)}); len(got) != 0 {
		t.Errorf("a locked area still warns: %+v", got)
	}
}

// The analysis's rules, one near miss each.
func TestGuardUnlockedReferenceRules(t *testing.T) {
	locked := map[string]string{"screen.js": screenScript(true)}
	tests := []struct {
		name    string
		yaml    string
		scripts map[string]string
		want    []string // the states named as writers, in the message; nil = no finding
	}{
		{name: "a trigger's requires arrive locked",
			yaml: `
instructions: x
skills: {}
states:
  work:
    triggers:
      manual:
        requires: [{ name: ticket, type: string }]
    instructions: Work.
    tools:
      allow:
        - { tool: write_file, paths: ["docs/${{ticket}}/**"] }
`},
		{name: "an entry trigger that does not require it leaves it open",
			yaml: `
instructions: x
skills: {}
states:
  work:
    triggers:
      manual:
        requires: [{ name: ticket, type: string }]
      webhook:
    instructions: Work.
    tools:
      allow:
        - { tool: write_file, paths: ["docs/${{ticket}}/**"] }
`, want: []string{"'work'"}},
		{name: "the guarded state's own model writes first",
			yaml: `
instructions: x
skills: {}
states:
  work:
    triggers:
      manual:
    instructions: Work.
    tools:
      allow:
        - { tool: lookup, args: { region: ["${{region}}-*"] } }
`, want: []string{"'work'"}},
		{name: "a state that may not call archmax_set_variables writes nothing",
			yaml: `
instructions: x
skills: {}
states:
  work:
    triggers:
      manual:
    instructions: Work.
    tools:
      allow:
        - { tool: lookup, args: { region: ["${{region}}-*"] } }
      forbid: [archmax_set_variables]
`},
		{name: "an on_error route carries no lock: the script may fail before it",
			yaml: strings.Replace(screenedWorkflow, "    on_error: ask\n", "    on_error: check\n", 1), scripts: locked, want: []string{"'check'", "'approve'"}},
		{name: "a reset back through the locking screen does not reach the guard unlocked",
			yaml: screenedWorkflow, scripts: locked},
		{name: "title is never locked",
			yaml: strings.Replace(screenedWorkflow, "grants/${{area}}.md", "grants/${{title}}.md", 1), scripts: locked, want: []string{"'check'", "'approve'", "'ask'"}},
		{name: "trigger is always locked",
			yaml: strings.Replace(screenedWorkflow, "grants/${{area}}.md", "grants/${{trigger}}.md", 1), scripts: locked},
		{name: "a workflow-wide denial reads the variable in every state",
			yaml: strings.Replace(screenedWorkflow, "skills: {}\n", "skills: {}\ntools:\n  forbid_always:\n    - { tool: write_file, paths: [\"owners/${{owner}}/**\"] }\n", 1), scripts: locked,
			want: []string{"'check'", "'approve'", "'ask'"}},
		{name: "a code state locking it runs its own calls",
			yaml: `
instructions: x
skills: {}
states:
  work:
    triggers:
      manual:
    instructions: Work.
    transitions:
      - to: file
        description: Filed.
  file:
    type: code
    script: scripts/file.js
    tools:
      allow:
        - { tool: write_file, paths: ["files/${{name}}.md"] }
`, scripts: map[string]string{"file.js": `export default async ({ tools }) => {
  await tools.archmax_set_variables({ variables: { name: "n" }, lock: true });
  await tools.write_file({ file_path: "files/n.md", content: "x" });
};
`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := guardFindings(t, tc.yaml, tc.scripts)
			if tc.want == nil {
				if len(got) != 0 {
					t.Errorf("findings = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("findings = %+v, want one", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0].Message, w) {
					t.Errorf("message %q does not name %s", got[0].Message, w)
				}
			}
		})
	}
}

// The access desk's own workflow: its screen locks `area` (no finding); with the screen as it
// was — writing area unlocked — approve's grant guard warns.
func TestGuardUnlockedReferenceAccessDesk(t *testing.T) {
	ws := filepath.Join("..", "..", "fixtures", "access-desk")
	authored, err := fsstore.OpenFilesReadOnly(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer authored.Close()
	res, err := Workflow(context.Background(), authored, "access-request", Options{})
	if err != nil || len(res.Diagnostics) != 0 {
		t.Fatalf("access-request: %v %s", err, codes(res.Diagnostics))
	}
	src, err := os.ReadFile(filepath.Join(ws, "workflows", "access-request", "scripts", "screen.js"))
	if err != nil {
		t.Fatal(err)
	}
	unlocked := strings.Replace(string(src), "{ variables: { area: slug }, lock: true }", "{ variables: { area: slug } }", 1)
	if unlocked == string(src) {
		t.Fatal("the screen no longer locks area the way this test expects")
	}
	res, err = Workflow(context.Background(), overlay{authored, map[string]string{"workflows/access-request/scripts/screen.js": unlocked}}, "access-request", Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := find(res.Diagnostics, "guard.unlocked-reference")
	if !ok || d.Field != "states.approve.tools.allow.0.paths.0" || !strings.Contains(d.Message, "'check-grants'") || !strings.Contains(d.Message, "code state 'screen' writes it without lock: true") {
		t.Fatalf("with an unlocked area: %s", codes(res.Diagnostics))
	}
}

// overlay serves some keys from memory over a tree.
type overlay struct {
	store.Files
	over map[string]string
}

func (o overlay) Read(ctx context.Context, key string) ([]byte, error) {
	if s, ok := o.over[key]; ok {
		return []byte(s), nil
	}
	return o.Files.Read(ctx, key)
}
