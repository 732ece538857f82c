package kernel

import (
	"slices"
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/machine"
	"github.com/archmax-ai/archmax/core/spec"
)

// gov61 is the complete rule-id list of spec 03 GOV-61, written out independently of the
// package's constants.
var gov61 = []string{
	"zone.governance-plane", "script.skill-only", "tool.reply-only", "tool.eval", "tool.ungrantable",
	"zone.read-only", "zone.runtime-internal", "zone.runtime-managed", "skill.forbidden",
	"skill.not-allowed", "mount.read-only", "mount.forbidden", "mount.not-allowed", "tool.path-argument",
	"tool.forbidden", "tool.forbidden-here",
	"tool.scratchpad", "tool.offload-read", "tool.allowed", "allow",
	"tool.not-allowed", "tool.unresolved-variable",
	"transition.requires", "transition.no-edge",
}

const govWF = `
tools:
  forbid_always:
    - { tool: "*", paths: ["secrets/**"] }
skills:
  allow_always: [ledger]
mounts:
  allow_always: [contracts]
  forbid_always: [legacy]
states:
  work:
    triggers:
      manual:
    requires: [ticket, owner, ticket]
    skills:
      allow: [payroll]
    mounts:
      allow:
        - { mount: catalogs/eu, access: read_write }
        - { mount: contracts, access: read }
        - vault
        - reference
      forbid: [archive]
    tools:
      allow:
        - grep
        - { tool: lookup, args: { region: ["${{region}}"] } }
      forbid: [grep]
    transitions:
      - to: review
        description: ready for review
      - to: done
        description: nothing to review
  review:
    mounts:
      allow:
        - { mount: contracts, access: read_write }
    transitions:
      - to: done
        description: reviewed
  done: {}
`

// govMounts is a host table beside the defaults: governed writable, nested, host
// read-only, ungoverned writable and ungoverned forbidden mounts.
var govMounts = append(slices.Clone(machine.DefaultMounts),
	Mount{Name: "contracts", Governed: true},
	Mount{Name: "catalogs/eu", Governed: true},
	Mount{Name: "reference", Governed: true, ReadOnly: true},
	Mount{Name: "vault", Governed: true},
	Mount{Name: "shared"},
	Mount{Name: "archive"},
	Mount{Name: "legacy"},
)

func govPolicy(t *testing.T) *Policy {
	t.Helper()
	sp, err := spec.Load("child", "workflow.yaml", []byte(govWF))
	if err != nil {
		t.Fatal(err)
	}
	return &Policy{Spec: sp, Skills: []string{"ledger", "payroll", "banned"}, Mounts: govMounts,
		Variables: map[string]any{"ticket": "T-1"},
		Surface:   func(string) []string { return []string{"read_file"} }}
}

type call struct {
	state, tool string
	args        map[string]any
	origin      Origin
	replyOnly   bool
}

func (c call) decide(p *Policy) Verdict {
	uses, escaped := PathUses(c.tool, c.args)
	if escaped != "" {
		panic("test path escapes: " + escaped)
	}
	origin := c.origin
	if origin == "" {
		origin = OriginAgent
	}
	return Decide(p, Action{Tool: c.tool, Args: c.args, State: c.state, Origin: origin, ReplyOnly: c.replyOnly, Paths: uses})
}

func fp(path string) map[string]any { return map[string]any{"file_path": path} }

// GOV-10, GOV-61: every rule id, produced by the pipeline in its safety order.
func TestGov61EveryRuleID(t *testing.T) {
	p := govPolicy(t)
	set := func(name string) bool { _, ok := p.Variables[name]; return ok }
	rows := []struct {
		name  string
		rule  string
		allow bool
		run   func() Verdict
	}{
		{"GOV-25 path argument must be a path string", RulePathArgument, false,
			call{state: "work", tool: "ls", args: map[string]any{"path": []any{"a", 3.0}}}.callOn(p)},
		{"GOV-21 a code script never reaches the authoring plane", RuleGovernancePlane, false,
			call{state: "work", tool: "read_file", args: fp("workflows/child/workflow.yaml"), origin: OriginCode}.callOn(p)},
		{"GOV-21 nor does a grader", RuleGovernancePlane, false,
			call{state: "work", tool: "ls", args: map[string]any{"path": "workflows"}, origin: OriginGrader}.callOn(p)},
		{"GOV-21 nor an agent script", RuleGovernancePlane, false,
			call{state: "work", tool: "read_file", args: fp("./workflows/x"), origin: OriginScript}.callOn(p)},
		{"GOV-22 archmax_run outside every bundle", RuleSkillOnly, false,
			call{state: "work", tool: "archmax_run", args: fp("scratchpad/run.js")}.callOn(p)},
		{"GOV-22 a sibling of a bundle is not in it", RuleSkillOnly, false,
			call{state: "work", tool: "archmax_run", args: fp("skills/ledger-evil/scripts/x.js")}.callOn(p)},
		{"GOV-22 before reply-only", RuleSkillOnly, false,
			call{state: "work", tool: "archmax_run", args: fp("x.js"), replyOnly: true}.callOn(p)},
		{"GOV-20b reply-only turn", RuleReplyOnly, false,
			call{state: "work", tool: "write_todos", args: map[string]any{}, replyOnly: true}.callOn(p)},
		{"GOV-20 bare eval", RuleEval, false, call{state: "work", tool: "eval", args: map[string]any{}}.callOn(p)},
		{"GOV-20a task", RuleUngrantable, false, call{state: "work", tool: "task", args: map[string]any{}}.callOn(p)},
		{"GOV-23 write into a bundle, enabled or not", RuleReadOnly, false,
			call{state: "work", tool: "write_file", args: fp("skills/banned/x.md")}.callOn(p)},
		{"GOV-47 write into a host read-only governed mount", RuleReadOnly, false,
			call{state: "work", tool: "edit_file", args: fp("reference/a.md")}.callOn(p)},
		{"GOV-47 ... even where the state does not have it", RuleReadOnly, false,
			call{state: "review", tool: "remove_file", args: fp("reference/a.md")}.callOn(p)},
		{"GOV-24 runtime-internal", RuleRuntimeInternal, false,
			call{state: "work", tool: "ls", args: map[string]any{"path": "_specs"}}.callOn(p)},
		{"GOV-23a offload writes", RuleRuntimeManaged, false,
			call{state: "work", tool: "copy_file", args: map[string]any{"source": "scratchpad/a", "destination": "conversation_history/a"}}.callOn(p)},
		{"GOV-41 skill denied by forbid_always of an ancestor", RuleSkillForbidden, false,
			call{state: "work", tool: "read_file", args: fp("skills/payroll/SKILL.md")}.withInherited(p)},
		{"GOV-41 skill not enabled", RuleSkillNotAllowed, false,
			call{state: "review", tool: "read_file", args: fp("skills/payroll/SKILL.md")}.callOn(p)},
		{"GOV-40 an enabled skill", RuleAllowed, true,
			call{state: "review", tool: "read_file", args: fp("skills/ledger/SKILL.md")}.callOn(p)},
		{"GOV-22 archmax_run in an enabled bundle", RuleAllowed, true,
			call{state: "review", tool: "archmax_run", args: fp("skills/ledger/scripts/sum.js")}.callOn(p)},
		{"GOV-46 grant narrowed to read refuses a write", RuleMountReadOnly, false,
			call{state: "work", tool: "write_file", args: fp("contracts/a.md")}.callOn(p)},
		{"GOV-46 a bare grant reads only", RuleMountReadOnly, false,
			call{state: "done", tool: "move_file", args: map[string]any{"source": "contracts/a", "destination": "scratchpad/a"}}.callOn(p)},
		{"GOV-46 read_write on a writable host mount writes", RuleAllowed, true,
			call{state: "review", tool: "write_file", args: fp("contracts/a.md")}.callOn(p)},
		{"GOV-47 forbid_always takes an ungoverned mount away", RuleMountForbidden, false,
			call{state: "review", tool: "read_file", args: fp("legacy/a")}.callOn(p)},
		{"GOV-47 the state's forbid", RuleMountForbidden, false,
			call{state: "work", tool: "grep", args: map[string]any{"path": "archive"}}.callOn(p)},
		{"GOV-45 a governed mount the state does not enable", RuleMountNotAllowed, false,
			call{state: "review", tool: "ls", args: map[string]any{"path": "catalogs/eu/2024"}}.callOn(p)},
		{"GOV-49 nested mount classifies by its full name", RuleAllowed, true,
			call{state: "work", tool: "write_file", args: fp("catalogs/eu/a.json")}.callOn(p)},
		{"GOV-49 a sibling of a nested mount is session space", RuleAllowed, true,
			call{state: "review", tool: "read_file", args: fp("catalogs/uk/a.json")}.callOn(p)},
		{"GOV-45 an ungoverned mount is open", RuleAllowed, true,
			call{state: "done", tool: "write_file", args: fp("shared/a")}.callOn(p)},
		{"GOV-31 guarded forbid_always '*' on a dotfile", RuleForbidden, false,
			call{state: "work", tool: "read_file", args: fp("secrets/.env")}.callOn(p)},
		{"GOV-31 state forbid beats the state's own allow", RuleForbiddenHere, false,
			call{state: "work", tool: "grep", args: map[string]any{"pattern": "x"}}.callOn(p)},
		{"GOV-55 scratchpad", RuleScratchpad, true,
			call{state: "done", tool: "edit_file", args: fp("scratchpad/notes.md")}.callOn(p)},
		{"GOV-55 offload read", RuleOffloadRead, true,
			call{state: "done", tool: "read_file", args: fp("large_tool_results/r1")}.callOn(p)},
		{"GOV-13 essential tool", RuleAllowed, true,
			call{state: "done", tool: "read_file", args: fp("trigger.json")}.callOn(p)},
		{"GOV-12 a tool nothing grants", RuleNotAllowed, false,
			call{state: "review", tool: "lookup", args: map[string]any{"region": "eu"}}.callOn(p)},
		{"GOV-33 guard reference unresolved", RuleUnresolvedVariable, false,
			call{state: "work", tool: "lookup", args: map[string]any{"region": "eu"}}.callOn(p)},
		{"CS-35 requires gate", RuleTransitionRequires, false,
			func() Verdict { return DecideTransition(p, "work", "review", set) }},
		{"CS-35 no edge", RuleTransitionNoEdge, false,
			func() Verdict { return DecideTransition(p, "review", "work", set) }},
		{"CS-35 declared edge", RuleAllow, true,
			func() Verdict { return DecideTransition(p, "review", "done", set) }},
	}
	produced := map[string]bool{}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			v := r.run()
			produced[v.RuleID] = true
			if v.Allow != r.allow || v.RuleID != r.rule {
				t.Fatalf("verdict = %+v, want allow=%v rule=%s", v, r.allow, r.rule)
			}
			if !v.Allow && v.Reason == "" {
				t.Errorf("a block carries a reason: %+v", v)
			}
		})
	}
	for _, id := range gov61 {
		if !produced[id] {
			t.Errorf("GOV-61 rule id %q is never produced by the table", id)
		}
	}
}

func (c call) callOn(p *Policy) func() Verdict { return func() Verdict { return c.decide(p) } }

// withInherited decides c against p with root and mid's denials inherited (GOV-36).
func (c call) withInherited(p *Policy) func() Verdict {
	q := *p
	q.Inherited = inherited
	return c.callOn(&q)
}

var inherited = []Inherited{
	{Workflow: "root", Tools: []spec.ToolEntry{{Tool: "lookup"}}, Skills: []string{"payroll"}, Mounts: []string{"vault", "legacy"}},
	{Workflow: "mid", Tools: []spec.ToolEntry{{Tool: "*", Guarded: true, Paths: []string{"private/**"}}}, Mounts: []string{"legacy"}},
}

// Exact reason texts of GOV-22, GOV-36, GOV-47 and zone.read-only on a host mount.
func TestReasons(t *testing.T) {
	p := govPolicy(t)
	cases := []struct {
		name string
		run  func() Verdict
		want string
	}{
		{"GOV-22", call{state: "work", tool: "archmax_run", args: fp("/scratchpad/run.js")}.callOn(p),
			"[workflow] BLOCKED: 'archmax_run' may only execute scripts that live in a skill bundle, and 'scratchpad/run.js' is not in one. Scripts the agent runs belong in 'skills/<capability>/scripts/'; code-state scripts live on the authoring plane and are run by the harness, never by the agent."},
		{"GOV-36 tool", call{state: "review", tool: "lookup", args: map[string]any{}}.withInherited(p),
			"[workflow] BLOCKED: 'lookup' is forbidden by the workflow inherited from workflow 'root' (tools.forbid_always). A denial beats every grant, so no allow entry here permits it."},
		{"GOV-36 guarded tool from an intermediate caller", call{state: "review", tool: "read_file", args: fp("private/a.md")}.withInherited(p),
			"[workflow] BLOCKED: 'read_file' on 'private/a.md' is forbidden by the workflow inherited from workflow 'mid' (tools.forbid_always: paths=private/**). A denial beats every grant, so no allow entry here permits it."},
		{"GOV-36 skill", call{state: "work", tool: "read_file", args: fp("skills/payroll/SKILL.md")}.withInherited(p),
			"[workflow] BLOCKED: 'read_file' on 'skills/payroll/SKILL.md' belongs to the skill 'payroll', which workflow 'root' denies in every state it delegates to (skills.forbid_always). A denial beats every grant."},
		{"GOV-36 mount enabled by the child", call{state: "work", tool: "read_file", args: fp("vault/k")}.withInherited(p),
			"[workflow] BLOCKED: 'read_file' on 'vault/k' is under the mount 'vault', which workflow 'root' denies in every state it delegates to (mounts.forbid_always). A denial beats every grant."},
		{"GOV-36 root first, ahead of the child's own forbid_always", call{state: "work", tool: "read_file", args: fp("legacy/k")}.withInherited(p),
			"[workflow] BLOCKED: 'read_file' on 'legacy/k' is under the mount 'legacy', which workflow 'root' denies in every state it delegates to (mounts.forbid_always). A denial beats every grant."},
		{"GOV-47 mount.forbidden workflow-wide", call{state: "work", tool: "read_file", args: fp("legacy/k")}.callOn(p),
			"[workflow] BLOCKED: 'read_file' on 'legacy/k' is under the mount 'legacy', which 'mounts.forbid_always' denies in every state. A denial beats every grant. Mounts available here: catalogs/eu, contracts, vault, reference."},
		{"GOV-47 mount.forbidden by the state", call{state: "work", tool: "ls", args: map[string]any{"path": "archive/2023"}}.callOn(p),
			"[workflow] BLOCKED: 'ls' on 'archive/2023' is under the mount 'archive', which state 'work' forbids. A denial beats every grant. Mounts available here: catalogs/eu, contracts, vault, reference."},
		{"GOV-47 mount.not-allowed", call{state: "review", tool: "read_file", args: fp("vault/k")}.callOn(p),
			"[workflow] BLOCKED: 'read_file' on 'vault/k' is under the mount 'vault', which state 'review' does not have. The path exists; this state was not given it. Mounts available here: contracts."},
		{"GOV-47 mount.read-only", call{state: "work", tool: "write_file", args: fp("contracts/c.md")}.callOn(p),
			"[workflow] BLOCKED: 'write_file' on 'contracts/c.md' targets the mount 'contracts', which state 'work' may read but not write ('access: read'). Write your files under 'scratchpad/…' instead."},
		{"GOV-23 zone.read-only names the host mount", call{state: "work", tool: "write_file", args: fp("reference/a.md")}.callOn(p),
			"[workflow] BLOCKED: 'write_file' on 'reference/a.md' targets a read-only mount ('reference'). Authored content is mounted read-only — write your files under 'scratchpad/…' (persisted per-session in the session store)."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v := c.run(); v.Reason != c.want || !v.Warn || v.Terminal {
				t.Errorf("verdict = %+v\nwant reason %q", v, c.want)
			}
		})
	}
	q := govPolicy(t)
	q.Spec.Mounts.Allow = nil
	if v := (call{state: "done", tool: "read_file", args: fp("vault/k")}).decide(q); !strings.HasSuffix(v.Reason, " This state has no governed mount.") {
		t.Errorf("no governed mount: %q", v.Reason)
	}
}

// CS-35: the transition texts the engine's archmax_advance uses, unchanged.
func TestDecideTransition(t *testing.T) {
	p := govPolicy(t)
	vars := map[string]bool{}
	set := func(n string) bool { return vars[n] }
	cases := []struct {
		name, from, to string
		set            []string
		rule, want     string
	}{
		{"two unset, each once", "work", "review", nil, RuleTransitionRequires,
			"cannot leave 'work' yet: 'ticket', 'owner' are not set. Record them with archmax_set_variables, then advance."},
		{"requires before the edge", "work", "nowhere", []string{"owner"}, RuleTransitionRequires,
			"cannot leave 'work' yet: 'ticket' is not set. Record it with archmax_set_variables, then advance."},
		{"undeclared edge", "work", "nowhere", []string{"owner", "ticket"}, RuleTransitionNoEdge,
			"cannot advance from 'work' to 'nowhere'. Valid target slugs: review, done."},
		{"terminal state", "done", "work", nil, RuleTransitionNoEdge,
			"cannot advance from 'done' to 'work'. No transitions from this state."},
		{"unknown state", "ghost", "done", nil, RuleTransitionNoEdge,
			"cannot advance from 'ghost' to 'done'. No transitions from this state."},
		{"edge taken", "work", "done", []string{"owner", "ticket"}, RuleAllow, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clear(vars)
			for _, n := range c.set {
				vars[n] = true
			}
			v := DecideTransition(p, c.from, c.to, set)
			if v.RuleID != c.rule || v.Reason != c.want || v.Allow != (c.want == "") || v.Warn || v.Terminal {
				t.Errorf("verdict = %+v\nwant %s %q", v, c.rule, c.want)
			}
		})
	}
}

// GOV-04, GOV-11: consumer rules block and admit, in order, between the declared denials
// and the always-open areas; they never loosen a safety rule or a declared denial.
func TestConsumerRules(t *testing.T) {
	var seen []API
	var origins []Origin
	noFetch := func(a Action, api API) *Verdict {
		seen, origins = append(seen, api), append(origins, a.Origin)
		if a.Tool == "fetch" || (a.Tool == "write_file" && a.Origin == OriginScript) {
			return &Verdict{RuleID: "custom.no-fetch", Reason: "no fetching", Warn: true}
		}
		return nil
	}
	allowAll := func(Action, API) *Verdict { return &Verdict{Allow: true, RuleID: "custom.allow"} }
	p := govPolicy(t)
	p.Inherited = inherited
	p.Rules = []Rule{noFetch, allowAll}
	cases := []struct {
		name  string
		c     call
		allow bool
		rule  string
	}{
		{"a consumer block", call{state: "done", tool: "fetch", args: map[string]any{}}, false, "custom.no-fetch"},
		{"it runs ahead of the scratchpad and sees the origin", call{state: "done", tool: "write_file", args: fp("scratchpad/a"), origin: OriginScript}, false, "custom.no-fetch"},
		{"a consumer allow admits what no grant covers", call{state: "review", tool: "unlisted_tool", args: map[string]any{}}, true, "custom.allow"},
		{"it cannot loosen a safety rule", call{state: "review", tool: "eval", args: map[string]any{}}, false, RuleEval},
		{"nor the mount rule", call{state: "review", tool: "read_file", args: fp("catalogs/eu/a")}, false, RuleMountNotAllowed},
		{"nor an inherited denial", call{state: "review", tool: "lookup", args: map[string]any{}}, false, RuleForbidden},
		{"nor the workflow's denial", call{state: "done", tool: "ls", args: map[string]any{"path": "secrets"}}, false, RuleForbidden},
		{"nor the state's denial", call{state: "work", tool: "grep", args: map[string]any{}}, false, RuleForbiddenHere},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v := c.c.decide(p); v.Allow != c.allow || v.RuleID != c.rule {
				t.Errorf("verdict = %+v, want allow=%v rule=%s", v, c.allow, c.rule)
			}
		})
	}
	if len(seen) == 0 || seen[0].Spec != p.Spec || len(seen[0].MountPrefixes) != len(govMounts) || !slices.Equal(seen[0].Skills, p.Skills) || seen[0].Variables["ticket"] != "T-1" {
		t.Errorf("consumer API = %+v", seen)
	}
	if !slices.Contains(origins, OriginScript) || !slices.Contains(origins, OriginAgent) {
		t.Errorf("origins seen = %v", origins)
	}
	// first verdict wins: the allowing rule ahead of the blocking one admits fetch
	p.Rules = []Rule{allowAll, noFetch}
	if v := (call{state: "done", tool: "fetch", args: map[string]any{}}).decide(p); !v.Allow || v.RuleID != "custom.allow" {
		t.Errorf("first verdict must win: %+v", v)
	}
}

// GOV-36, GOV-48: listing redaction covers the workflow's own lists and the ancestors'.
func TestPolicyHiddenByGovernance(t *testing.T) {
	p := govPolicy(t)
	p.Inherited = inherited
	cases := map[string]bool{
		"vault/k":                 true,  // enabled in work, denied by root
		"skills/payroll/SKILL.md": true,  // enabled in work, denied by root
		"skills/ledger":           false, // enabled
		"catalogs/eu/a":           false, // enabled in work
		"archive":                 true,  // the state forbids it
		"scratchpad/a":            false,
	}
	for path, want := range cases {
		if got := p.HiddenByGovernance("work", path); got != want {
			t.Errorf("HiddenByGovernance(work, %q) = %v, want %v", path, got, want)
		}
	}
}

// GOV-23: without a host table the defaults apply (skills/, .platform/, AGENTS.md).
func TestDefaultMountTable(t *testing.T) {
	p := govPolicy(t)
	p.Mounts = nil
	for _, path := range []string{".platform/x", "AGENTS.md", "skills/ledger/a"} {
		if v := (call{state: "done", tool: "write_file", args: fp(path)}).decide(p); v.RuleID != RuleReadOnly {
			t.Errorf("write %s = %+v", path, v)
		}
	}
	if v := (call{state: "done", tool: "write_file", args: fp("AGENTS.md.bak")}).decide(p); !v.Allow {
		t.Errorf("a file mount matches only its own path: %+v", v)
	}
	if v := (call{state: "done", tool: "read_file", args: fp("contracts/a")}).decide(p); !v.Allow {
		t.Errorf("a name the table does not mount is session space: %+v", v)
	}
}

func BenchmarkDecideMountedRead(b *testing.B) {
	sp, err := spec.Load("child", "workflow.yaml", []byte(govWF))
	if err != nil {
		b.Fatal(err)
	}
	p := &Policy{Spec: sp, Skills: []string{"ledger", "payroll"}, Mounts: govMounts, Inherited: inherited}
	args := fp("catalogs/eu/2024/q1.json")
	uses, _ := PathUses("read_file", args)
	a := Action{Tool: "read_file", Args: args, State: "work", Origin: OriginAgent, Paths: uses}
	for b.Loop() {
		if v := Decide(p, a); !v.Allow {
			b.Fatal(v)
		}
	}
}
