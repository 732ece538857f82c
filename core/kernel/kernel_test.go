package kernel

import (
	"strings"
	"testing"

	"github.com/archmax-ai/archmax/core/spec"
)

const wf = `
tools:
  forbid_always:
    - { tool: "*", paths: ["secrets/**"] }
  allow_always:
    - lookup_customer
skills:
  allow_always: [policy]
  forbid_always: [banned]
states:
  work:
    triggers:
      manual:
    skills:
      allow: [extra]
      forbid: [policy]
    tools:
      allow:
        - { tool: read_file, paths: ["scratchpad/**", "docs/${{ticket}}/**", "skills/**"] }
        - { tool: lookup_customer, args: { region: ["eu-*"] } }
      forbid: [grep]
    transitions:
      - to: done
        description: finished
  done:
    tools:
      forbid: ["*"]
`

func policy(t *testing.T, vars map[string]any) *Policy {
	t.Helper()
	sp, err := spec.Load("wf", "workflow.yaml", []byte(wf))
	if err != nil {
		t.Fatal(err)
	}
	return &Policy{Spec: sp, Skills: []string{"policy", "extra", "banned", "other"}, Variables: vars,
		Surface: func(string) []string { return []string{"read_file", "archmax_advance"} }}
}

func decide(p *Policy, state, tool string, args map[string]any, origin Origin) Verdict {
	uses, _ := PathUses(tool, args)
	return Decide(p, Action{Tool: tool, Args: args, State: state, Origin: origin, Paths: uses})
}

// GOV-10/GOV-61: each rule id in pipeline order, first verdict wins.
func TestPipeline(t *testing.T) {
	p := policy(t, map[string]any{"ticket": "T-1"})
	cases := []struct {
		name, state, tool string
		args              map[string]any
		origin            Origin
		allow             bool
		rule              string
	}{
		{"path argument must be a string", "work", "read_file", map[string]any{"file_path": 7}, OriginAgent, false, RulePathArgument},
		{"scripts never reach the authoring plane", "work", "read_file", map[string]any{"file_path": "workflows/wf/workflow.yaml"}, OriginCode, false, RuleGovernancePlane},
		{"the agent's own call is left to the workspace (no route)", "work", "read_file", map[string]any{"file_path": "workflows/wf/workflow.yaml"}, OriginAgent, false, RuleNotAllowed},
		{"bare eval is never governed", "work", "eval", map[string]any{}, OriginAgent, false, RuleEval},
		{"task is ungrantable", "work", "task", map[string]any{}, OriginAgent, false, RuleUngrantable},
		{"authored mounts are read-only", "work", "write_file", map[string]any{"file_path": "skills/extra/x.md"}, OriginAgent, false, RuleReadOnly},
		{"AGENTS.md is read-only", "work", "write_file", map[string]any{"file_path": "/AGENTS.md"}, OriginAgent, false, RuleReadOnly},
		{"runtime-internal areas", "work", "read_file", map[string]any{"file_path": "scratchpad/../checkpoints/x"}, OriginAgent, false, RuleRuntimeInternal},
		{"offload writes", "work", "write_file", map[string]any{"file_path": "large_tool_results/x"}, OriginAgent, false, RuleRuntimeManaged},
		{"forbid_always skill", "work", "read_file", map[string]any{"file_path": "skills/banned/SKILL.md"}, OriginAgent, false, RuleSkillForbidden},
		{"state-forbidden skill beats allow_always", "work", "read_file", map[string]any{"file_path": "skills/policy/SKILL.md"}, OriginAgent, false, RuleSkillForbidden},
		{"skill not enabled", "work", "read_file", map[string]any{"file_path": "skills/other/SKILL.md"}, OriginAgent, false, RuleSkillNotAllowed},
		{"enabled skill within the guard", "work", "read_file", map[string]any{"file_path": "skills/extra/SKILL.md"}, OriginAgent, true, RuleAllowed},
		{"workflow-wide guarded * denial, dotfile", "work", "read_file", map[string]any{"file_path": "secrets/.env"}, OriginAgent, false, RuleForbidden},
		{"state bare forbid", "work", "grep", map[string]any{"pattern": "x"}, OriginAgent, false, RuleForbiddenHere},
		{"forbid * binds the controls too", "done", "archmax_raise", map[string]any{}, OriginAgent, false, RuleForbiddenHere},
		{"scratchpad is always open to essential tools", "work", "write_file", map[string]any{"file_path": "scratchpad/.cache/a"}, OriginAgent, true, RuleScratchpad},
		{"offload areas are readable", "work", "read_file", map[string]any{"file_path": "large_tool_results/r1"}, OriginAgent, true, RuleOffloadRead},
		{"guard with a reference resolves and matches", "work", "read_file", map[string]any{"file_path": "docs/T-1/a.md"}, OriginAgent, true, RuleAllowed},
		{"guard narrows an essential tool", "work", "read_file", map[string]any{"file_path": "trigger.json"}, OriginAgent, false, RuleNotAllowed},
		{"args guard matches", "work", "lookup_customer", map[string]any{"region": "eu-west"}, OriginAgent, true, RuleAllowed},
		{"args guard refuses", "work", "lookup_customer", map[string]any{"region": "us-east"}, OriginAgent, false, RuleNotAllowed},
		{"forbid * withholds the essential tools", "done", "ls", map[string]any{}, OriginAgent, false, RuleForbiddenHere},
		{"essential tool unconstrained", "work", "ls", map[string]any{"path": "scratchpad"}, OriginAgent, true, RuleScratchpad},
		{"control of the state kind", "work", "archmax_advance", map[string]any{"to": "done"}, OriginAgent, true, RuleAllowed},
		{"history is not an agent control", "work", "archmax_get_history", map[string]any{}, OriginAgent, false, RuleNotAllowed},
		// zones are refused ignoring case (a case-insensitive store would alias them)
		{"internal area in another case", "work", "read_file", map[string]any{"file_path": "Checkpoints/x"}, OriginAgent, false, RuleRuntimeInternal},
		{"_specs in upper case", "work", "write_file", map[string]any{"file_path": "_SPECS/x.json"}, OriginAgent, false, RuleRuntimeInternal},
		{"internal area, KELVIN SIGN", "work", "ls", map[string]any{"path": "chec\u212apoints"}, OriginAgent, false, RuleRuntimeInternal},
		{"offload write in another case", "work", "write_file", map[string]any{"file_path": "Large_Tool_Results/x"}, OriginAgent, false, RuleRuntimeManaged},
		{"scripts never reach the authoring plane in any case", "work", "read_file", map[string]any{"file_path": "WORKFLOWS/wf/workflow.yaml"}, OriginCode, false, RuleGovernancePlane},
		{"the scratchpad's allowance is exact", "work", "write_file", map[string]any{"file_path": "Scratchpad/a"}, OriginAgent, true, RuleAllowed},
		{"the offload read allowance is exact", "work", "read_file", map[string]any{"file_path": "LARGE_TOOL_RESULTS/r1"}, OriginAgent, false, RuleNotAllowed},
		{"a skill named in another case is that skill", "work", "read_file", map[string]any{"file_path": "skills/OTHER/SKILL.md"}, OriginAgent, false, RuleSkillNotAllowed},
		{"a skill in another case is still forbidden", "work", "read_file", map[string]any{"file_path": "skills/Banned/SKILL.md"}, OriginAgent, false, RuleSkillForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := decide(p, c.state, c.tool, c.args, c.origin)
			if v.Allow != c.allow || v.RuleID != c.rule {
				t.Errorf("verdict = %+v, want allow=%v rule=%s", v, c.allow, c.rule)
			}
			if !v.Allow && !strings.HasPrefix(v.Reason, "[workflow] ") {
				t.Errorf("reason %q", v.Reason)
			}
		})
	}
}

// GOV-33: an unresolvable reference in an allow guard is a terminal block when nothing else
// permits the call.
func TestUnresolvedGuardIsTerminal(t *testing.T) {
	p := policy(t, map[string]any{})
	v := decide(p, "work", "read_file", map[string]any{"file_path": "docs/T-1/a.md"}, OriginAgent)
	if v.Allow || v.RuleID != RuleUnresolvedVariable || !v.Terminal {
		t.Fatalf("verdict = %+v", v)
	}
	want := "[workflow] FAILED: 'read_file' in state 'work' is guarded by 'docs/${{ticket}}/**', which could not be resolved — variable 'ticket' is not set. The run cannot continue against a guard the harness cannot evaluate."
	if v.Reason != want {
		t.Errorf("reason = %q\nwant     %q", v.Reason, want)
	}
	// another entry that permits the call wins: the unresolved entry just matches nothing
	if v := decide(p, "work", "read_file", map[string]any{"file_path": "scratchpad/a"}, OriginAgent); !v.Allow {
		t.Errorf("scratchpad read = %+v", v)
	}
}

// GOV-33: a value is glob-escaped, so '*' in a variable matches only a literal '*'.
func TestGuardValuesAreGlobEscaped(t *testing.T) {
	p := policy(t, map[string]any{"ticket": "*"})
	if v := decide(p, "work", "read_file", map[string]any{"file_path": "docs/T-9/a.md"}, OriginAgent); v.Allow {
		t.Errorf("a '*' value must not act as a wildcard: %+v", v)
	}
	if v := decide(p, "work", "read_file", map[string]any{"file_path": "docs/*/a.md"}, OriginAgent); !v.Allow {
		t.Errorf("the literal '*' path must match: %+v", v)
	}
}

func TestNotAllowedReason(t *testing.T) {
	p := policy(t, map[string]any{"ticket": "T-1"})
	v := decide(p, "work", "read_file", map[string]any{"file_path": "/trigger.json"}, OriginAgent)
	want := "[workflow] BLOCKED: 'read_file' on 'trigger.json' is not allowed in state 'work'.\nAllowed in 'work': read_file, archmax_advance.\nComplete the current state's work and call archmax_advance when ready to move on."
	if v.Reason != want {
		t.Errorf("reason = %q", v.Reason)
	}
}

func TestCanonicalPath(t *testing.T) {
	cases := map[string]string{"./x": "x", "a/../x": "x", "/scratchpad/a": "scratchpad/a", "a//b/.": "a/b", "": "", "/": "", `a\b`: "a/b"}
	for in, want := range cases {
		if got, err := CanonicalPath(in); err != nil || got != want {
			t.Errorf("CanonicalPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"../x", "a/../../x", "/.."} {
		if _, err := CanonicalPath(bad); err != ErrPathEscape {
			t.Errorf("CanonicalPath(%q) err = %v", bad, err)
		}
	}
}

func TestEnabledSkills(t *testing.T) {
	p := policy(t, nil)
	got := EnabledSkills(p.Spec, p.Spec.State("work"), []string{"policy", "extra"})
	if strings.Join(got, ",") != "extra" {
		t.Errorf("enabled = %v (state allow first, registry filter, state forbid subtracts allow_always)", got)
	}
	if got := EnabledSkills(p.Spec, p.Spec.State("done"), []string{"policy", "extra", "banned"}); strings.Join(got, ",") != "policy" {
		t.Errorf("enabled in done = %v", got)
	}
}

// GOV-30: an args guard must see a value to match; null, an object or an empty list covers
// nothing in a grant, and fails closed in a denial.
func TestArgGuardsNeedMatchableValues(t *testing.T) {
	p := policy(t, map[string]any{"ticket": "T-1"})
	for _, v := range []any{nil, []any{}, map[string]any{"a": 1.0}, []any{map[string]any{}}, []any{"eu-x", nil}} {
		if got := decide(p, "work", "lookup_customer", map[string]any{"region": v}, OriginAgent); got.Allow {
			t.Errorf("region %#v allowed: %+v", v, got)
		}
	}
	if got := decide(p, "work", "lookup_customer", map[string]any{"region": []any{"eu-a", "eu-b"}}, OriginAgent); !got.Allow {
		t.Errorf("every element matching must allow: %+v", got)
	}
	sp, err := spec.Load("wf", "w.yaml", []byte("states:\n  s:\n    triggers:\n      manual:\n    tools:\n      allow: [lookup]\n      forbid:\n        - { tool: lookup, args: { region: [\"us-*\"] } }\n"))
	if err != nil {
		t.Fatal(err)
	}
	q := &Policy{Spec: sp}
	if got := Decide(q, Action{Tool: "lookup", State: "s", Args: map[string]any{"region": map[string]any{"x": "us-1"}}}); got.Allow || got.RuleID != RuleForbiddenHere {
		t.Errorf("an unreadable guarded argument must fire the denial: %+v", got)
	}
	if got := Decide(q, Action{Tool: "lookup", State: "s", Args: map[string]any{"region": "eu-1"}}); !got.Allow {
		t.Errorf("a non-matching value passes the denial: %+v", got)
	}
}
